// The Vercel AI SDK MCP client (@ai-sdk/mcp, pinned in interop/package-lock.json) as
// `mcp-triage judge` sees it, used the way an AI SDK agent uses it, without a model: the
// client's `tools()` (tools/list, turned into AI SDK tools), then the asked-for tool's
// `execute` (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS), which is what `generateText` calls when a
// model picks the tool. Elicitations are accepted; everything else keeps its defaults
// (maxRetries 0, protocol discovery on).
//
//   mcp-triage judge --client 'node interop/judge/ai-sdk-client.mjs {url}'
import { createMCPClient, ElicitationRequestSchema } from '@ai-sdk/mcp';
import { ACCEPT, judgeCall, runCall } from './judge-client.mjs';

const { url, tool, args } = judgeCall('ai-sdk-client.mjs');
let client;
await runCall(
  async () => {
    client = await createMCPClient({
      transport: { type: 'http', url },
      clientName: 'mcp-triage-judge-ai-sdk',
      capabilities: { elicitation: {} }
    });
    client.onElicitationRequest(ElicitationRequestSchema, async () => ACCEPT);
    const tools = await client.tools();
    if (!tools[tool]) throw new Error(`tool ${tool} not listed (${Object.keys(tools).join(', ')})`);
    return tools[tool].execute(args, { toolCallId: 'judge-1', messages: [] });
  },
  async () => client?.close()
);
