// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
// interop/package-lock.json) as `mcp-triage judge` sees it: connect, make the one tool call
// the judge asks for (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS), answer an elicitation with
// "accept", print what came back. SDK defaults everywhere (reconnection, request timeout),
// because the point is to grade the SDK's own behaviour, not ours.
//
//   mcp-triage judge --client 'node interop/judge/ts-sdk-client.mjs {url}'
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ACCEPT, judgeCall, runCall } from './judge-client.mjs';

const { url, tool, args } = judgeCall('ts-sdk-client.mjs');
const client = new Client(
  { name: 'mcp-triage-judge-ts-sdk', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } } }
);
client.setRequestHandler(ElicitRequestSchema, async () => ACCEPT);
await runCall(
  async () => {
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    return client.callTool({ name: tool, arguments: args });
  },
  () => client.close()
);
