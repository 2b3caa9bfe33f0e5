// The official TypeScript SDK v2 client (@modelcontextprotocol/client, pinned in
// interop/package-lock.json) as `mcp-triage judge` sees it: connect, make the one tool call
// the judge asks for (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS), answer an elicitation with
// "accept", print what came back. SDK defaults everywhere (protocol negotiation, reconnection,
// request timeout), because the point is to grade the SDK's own behaviour, not ours.
//
//   mcp-triage judge --client 'node interop/judge/ts-sdk-v2-client.mjs {url}'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = process.argv[2] ?? process.env.MCP_TRIAGE_URL;
if (!url) {
  console.error('usage: node ts-sdk-v2-client.mjs URL');
  process.exit(64);
}
const tool = process.env.MCP_TRIAGE_TOOL ?? 'run_configured_test_scenario';
const args = JSON.parse(process.env.MCP_TRIAGE_ARGS ?? '{}');

const client = new Client(
  { name: 'mcp-triage-judge-ts-sdk-v2', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } } }
);
client.setRequestHandler('elicitation/create', async () => ({
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
