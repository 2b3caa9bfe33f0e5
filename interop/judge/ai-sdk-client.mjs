// The Vercel AI SDK MCP client (@ai-sdk/mcp, pinned in interop/package-lock.json) as
// `mcp-triage judge` sees it, used the way an AI SDK agent uses it, without a model: the
// client's `tools()` (tools/list, turned into AI SDK tools), then the asked-for tool's
// `execute` (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS), which is what `generateText` calls when a
// model picks the tool. Elicitations are accepted; everything else keeps its defaults
// (maxRetries 0, protocol discovery on).
//
//   mcp-triage judge --client 'node interop/judge/ai-sdk-client.mjs {url}'
import { createMCPClient, ElicitationRequestSchema } from '@ai-sdk/mcp';

const url = process.argv[2] ?? process.env.MCP_TRIAGE_URL;
if (!url) {
  console.error('usage: node ai-sdk-client.mjs URL');
  process.exit(64);
}
const tool = process.env.MCP_TRIAGE_TOOL ?? 'run_configured_test_scenario';
const args = JSON.parse(process.env.MCP_TRIAGE_ARGS ?? '{}');

let client;
let code = 0;
try {
  client = await createMCPClient({
    transport: { type: 'http', url },
    clientName: 'mcp-triage-judge-ai-sdk',
    capabilities: { elicitation: {} }
  });
  client.onElicitationRequest(ElicitationRequestSchema, async () => ({
    action: 'accept',
    content: { reason: 'approved by the judge run' }
  }));
  const tools = await client.tools();
  if (!tools[tool]) throw new Error(`tool ${tool} not listed (${Object.keys(tools).join(', ')})`);
  const r = await tools[tool].execute(args, { toolCallId: 'judge-1', messages: [] });
  console.log(`${r?.isError ? 'tool error' : 'result'}: ${JSON.stringify(r?.content ?? r)}`);
} catch (e) {
  console.log(`error: ${e?.constructor?.name} code=${e?.code ?? '-'} ${e?.message}`);
  code = 1;
} finally {
  await client?.close().catch(() => {});
}
process.exit(code);
