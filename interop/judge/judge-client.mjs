// What every Node client script of `mcp-triage judge` shares: the call the judge asks for (URL
// from argv or MCP_TRIAGE_URL, MCP_TRIAGE_TOOL, MCP_TRIAGE_ARGS), how a result is printed and how
// a failure is stated (exit 1), so that each script holds only its library's own calls.

/** The call the judge asks for: { url, tool, args }. Exits 64 without a URL. */
export function judgeCall(script) {
  const url = process.argv[2] ?? process.env.MCP_TRIAGE_URL;
  if (!url) {
    console.error(`usage: node ${script} URL`);
    process.exit(64);
  }
  const tool = process.env.MCP_TRIAGE_TOOL ?? 'run_configured_test_scenario';
  const args = JSON.parse(process.env.MCP_TRIAGE_ARGS ?? '{}');
  return { url, tool, args };
}

/** What elicitation handlers answer. */
export const ACCEPT = { action: 'accept', content: { reason: 'approved by the judge run' } };

/**
 * Run `call()` (resolving to a CallToolResult), print it, run `close()`, exit 0; a rejection is
 * printed as a stated failure, exit 1.
 */
export async function runCall(call, close) {
  let code = 0;
  try {
    const r = await call();
    console.log(`${r?.isError ? 'tool error' : 'result'}: ${JSON.stringify(r?.content ?? r)}`);
  } catch (e) {
    console.log(`error: ${e?.constructor?.name} code=${e?.code ?? '-'} ${e?.message}`);
    code = 1;
  } finally {
    await close().catch(() => {});
  }
  process.exit(code);
}
