// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in package-lock.json)
// against the kitchen: does the reference client see what each scenario is meant to show it?
//
//   node ts-sdk-client.mjs http://127.0.0.1:PORT
//
// Every case uses its own per-URL instance (/s/{scenario}/mcp?instance=ts-sdk), so counters
// start at zero. Each request has a short SDK timeout, and the whole run a watchdog, so the
// script always ends; it exits 1 when an expectation fails (2 on the watchdog).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

const base = process.argv[2];
if (!base) {
  console.error('usage: node ts-sdk-client.mjs http://127.0.0.1:PORT');
  process.exit(64);
}
const REQUEST_TIMEOUT_MS = 3000;
const watchdog = setTimeout(() => {
  console.error('FAIL watchdog: the run took longer than 60 s');
  process.exit(2);
}, 60_000);

async function connect(scenario, query = '') {
  const url = new URL(`${base}/s/${scenario}/mcp?instance=ts-sdk${query}`);
  const client = new Client(
    { name: 'mcp-triage-ts-sdk-interop', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } }
  );
  const elicitations = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicitations.push(req.params);
    return { action: 'accept', content: { reason: 'approved by the TS SDK interop run' } };
  });
  const transport = new StreamableHTTPClientTransport(url, {
    // The SDK would retry a cut stream by reconnecting; one quick attempt keeps the run short.
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 200, reconnectionDelayGrowFactor: 1, maxRetries: 1 }
  });
  await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
  return { client, elicitations, close: () => client.close().catch(() => {}) };
}

const call = (client) =>
  client.callTool({ name: 'run_configured_test_scenario', arguments: { message: 'from ts-sdk' } }, undefined, {
    timeout: REQUEST_TIMEOUT_MS
  });

const results = [];
async function check(name, fn) {
  const t0 = Date.now();
  try {
    const observed = await fn();
    results.push({ name, ok: true, observed, ms: Date.now() - t0 });
  } catch (e) {
    results.push({ name, ok: false, observed: String(e?.stack ?? e), ms: Date.now() - t0 });
  }
}
function expect(cond, msg) {
  if (!cond) throw new Error(`expectation failed: ${msg}`);
}
const text = (r) => r?.content?.[0]?.text ?? '';

await check('baseline -> success', async () => {
  const { client, close } = await connect('baseline');
  try {
    const tools = await client.listTools(undefined, { timeout: REQUEST_TIMEOUT_MS });
    expect(tools.tools.some((t) => t.name === 'run_configured_test_scenario'), 'run tool listed');
    const r = await call(client);
    expect(r.isError !== true, `no isError (got ${JSON.stringify(r)})`);
    expect(JSON.parse(text(r)).scenarioId === 'baseline', 'scenarioId baseline');
    return `result ${text(r)}`;
  } finally {
    await close();
  }
});

await check('errors.jsonrpc_error -> McpError -32602', async () => {
  const { client, close } = await connect('errors.jsonrpc_error');
  try {
    try {
      const r = await call(client);
      throw new Error(`expected a rejection, got result ${JSON.stringify(r)}`);
    } catch (e) {
      expect(e instanceof McpError, `McpError (got ${e?.constructor?.name}: ${e?.message})`);
      expect(e.code === -32602, `code -32602 (got ${e.code})`);
      return `McpError code=${e.code} message=${JSON.stringify(e.message)}`;
    }
  } finally {
    await close();
  }
});

await check('errors.tool_error -> isError result', async () => {
  const { client, close } = await connect('errors.tool_error');
  try {
    const r = await call(client);
    expect(r.isError === true, `isError true (got ${JSON.stringify(r)})`);
    return `isError result ${text(r)}`;
  } finally {
    await close();
  }
});

await check('elicitation.approval -> elicitation round answered', async () => {
  const { client, elicitations, close } = await connect('elicitation.approval');
  try {
    const r = await call(client);
    expect(elicitations.length === 1, `one elicitation/create (got ${elicitations.length})`);
    expect(r.isError !== true, `success after accept (got ${JSON.stringify(r)})`);
    const body = JSON.parse(text(r));
    expect(body.elicitationOutcome === 'accepted', `elicitationOutcome accepted (got ${body.elicitationOutcome})`);
    return `elicitation message ${JSON.stringify(elicitations[0].message)}; result ${text(r)}`;
  } finally {
    await close();
  }
});

// A stream cut mid-event is resumable in a 2025-11-25 session (it opened with a priming event
// id): the SDK resumes with GET + Last-Event-ID and the kitchen delivers the whole response.
await check('sse.cut_mid_event -> resumed, success', async () => {
  const { client, close } = await connect('sse.cut_mid_event');
  try {
    const r = await call(client);
    expect(r.isError !== true, `success after resumption (got ${JSON.stringify(r)})`);
    const body = JSON.parse(text(r));
    expect(body.scenarioId === 'sse.cut_mid_event', `the scenario's result (got ${text(r)})`);
    return `result ${text(r)}`;
  } finally {
    await close();
  }
});

for (const scenario of ['sse.cut_before_response']) {
  await check(`${scenario} -> failure`, async () => {
    const { client, close } = await connect(scenario);
    const t0 = Date.now();
    try {
      try {
        const r = await call(client);
        throw new Error(`expected a failure, got result ${JSON.stringify(r)}`);
      } catch (e) {
        if (String(e.message).startsWith('expected a failure')) throw e;
        const ms = Date.now() - t0;
        return `rejected after ${ms} ms: ${e?.constructor?.name} code=${e?.code ?? '-'} ${JSON.stringify(e?.message)}`;
      }
    } finally {
      await close();
    }
  });
}

clearTimeout(watchdog);
let failed = 0;
for (const r of results) {
  if (!r.ok) failed++;
  console.log(`${r.ok ? 'PASS' : 'FAIL'} ${r.name} (${r.ms} ms): ${r.observed}`);
}
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
