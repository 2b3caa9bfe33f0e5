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

const url = process.argv[2] ?? process.env.MCP_TRIAGE_URL;
if (!url) {
  console.error('usage: node ts-sdk-client.mjs URL');
  process.exit(64);
}
const tool = process.env.MCP_TRIAGE_TOOL ?? 'run_configured_test_scenario';
const args = JSON.parse(process.env.MCP_TRIAGE_ARGS ?? '{}');

const client = new Client(
  { name: 'mcp-triage-judge-ts-sdk', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } } }
);
client.setRequestHandler(ElicitRequestSchema, async () => ({
  action: 'accept',
  content: { reason: 'approved by the judge run' }
}));
let code = 0;
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const r = await client.callTool({ name: tool, arguments: args });
  console.log(`${r.isError ? 'tool error' : 'result'}: ${JSON.stringify(r.content)}`);
} catch (e) {
  console.log(`error: ${e?.constructor?.name} code=${e?.code ?? '-'} ${e?.message}`);
  code = 1;
} finally {
  await client.close().catch(() => {});
}
process.exit(code);
