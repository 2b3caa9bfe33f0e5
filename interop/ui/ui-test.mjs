// The live page of `mcp-triage proxy --ui`, in Debian's headless Chromium driven by
// playwright-core (pinned in interop/package-lock.json; it never downloads a browser here).
//
// Usage: node ui-test.mjs UI_URL PROXY_URL SCREENSHOT.png
//
// Opens the page once, then makes calls through the proxy (a tool success, a tool error, an
// HTTP 503 and the client's unsafe resend of a tool that is not idempotent) and waits, after
// each, for the DOM to show it: counts per layer, the failure row with its verdict detail, the
// unsafe-retry counter. The page is never reloaded (a marker set on window at the start must
// survive). Then a screenshot, which ui-test.sh checks is not blank.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [uiUrl, proxyUrl, shot] = process.argv.slice(2);
const STEP_MS = 10_000;

function fail(msg) {
  console.error("FAIL: " + msg);
  process.exitCode = 1;
  throw new Error(msg);
}

// One legacy (2025-06-18) session on `path` through the proxy; returns a function that
// POSTs a JSON-RPC message in it and resolves to [status, body text].
async function session(path) {
  const url = proxyUrl + path;
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
  const post = async (msg, sid) => {
    const h = sid ? { ...headers, "mcp-session-id": sid } : headers;
    const r = await fetch(url, { method: "POST", headers: h, body: JSON.stringify(msg), signal: AbortSignal.timeout(STEP_MS) });
    return [r.status, await r.text(), r.headers.get("mcp-session-id")];
  };
  const [status, , sid] = await post({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "ui-test", version: "1" } } });
  if (status !== 200 || !sid) fail(`initialize on ${path}: status ${status}, session ${sid}`);
  await post({ jsonrpc: "2.0", method: "notifications/initialized" }, sid);
  return (msg) => post(msg, sid);
}

const call = (id, name) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {} } });

const profile = mkdtempSync(join(tmpdir(), "mcp-triage-ui-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1280, height: 1000 },
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  const outside = [];
  // Nothing but the UI listener may be asked for (no CDN, no fonts).
  page.on("request", (req) => { if (!req.url().startsWith(uiUrl)) outside.push(req.url()); });
  page.on("pageerror", (e) => fail("page error: " + e.message));
  await page.goto(uiUrl, { timeout: STEP_MS });
  await page.waitForSelector("#conn.live", { timeout: STEP_MS });
  await page.evaluate(() => { window.__notReloaded = true; });

  const text = (sel) => page.$eval(sel, (n) => n.textContent.trim()).catch(() => null);
  async function until(what, pred) {
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      if (await pred()) return;
      if (Date.now() > deadline) {
        await page.screenshot({ path: shot, fullPage: true });
        fail(`the page did not show ${what}; screenshot at ${shot}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  // 1. A tool success: application layer, one call for the tool.
  const ok = await session("/s/baseline/mcp?instance=ui-ok");
  const [s1] = await ok(call(2, "run_configured_test_scenario"));
  if (s1 !== 200) fail(`success call: status ${s1}`);
  await until("the success (application 1, one call)", async () =>
    (await text("#layer-application")) === "1" &&
    (await text('#tools tr[data-tool="run_configured_test_scenario"] td[data-col="calls"]')) === "1");

  // 2. A tool error: application 2, a failure row with the verdict's detail.
  const te = await session("/s/errors.tool_error/mcp?instance=ui-te");
  const [s2] = await te(call(2, "run_configured_test_scenario"));
  if (s2 !== 200) fail(`tool error call: status ${s2}`);
  await until("the tool error as a failure row", async () =>
    (await text("#layer-application")) === "2" &&
    (await text("#total-failures")) === "1" &&
    ((await text('#failures tr[data-outcome="TOOL_ERROR"] td.detail')) || "").length > 0);

  // 3. HTTP 503 on the 4th POST of this session (transport), then the client resends the
  // call to increment_counter, which tools/list marks neither read-only nor idempotent.
  const params = encodeURIComponent(JSON.stringify({ statusCodes: [200, 200, 200, 503, 200] }));
  const seq = await session(`/s/errors.http_status_sequence/mcp?instance=ui-503&params=${params}`);
  const [s3] = await seq({ jsonrpc: "2.0", id: 2, method: "tools/list" });
  if (s3 !== 200) fail(`tools/list: status ${s3}`);
  const [s4] = await seq(call(3, "increment_counter"));
  if (s4 !== 503) fail(`expected the scenario's 503, got ${s4}`);
  await until("the 503 on the transport layer with its failure row", async () =>
    (await text("#layer-transport")) === "1" &&
    ((await text('#failures tr[data-outcome="HTTP_ERROR"] td.detail')) || "").includes("503"));
  const [s5] = await seq(call(4, "increment_counter"));
  if (s5 !== 200) fail(`the resend: status ${s5}`);
  await until("the unsafe retry", async () =>
    (await text("#total-unsafe")) === "1" &&
    (await text("#total-retries")) === "1" &&
    ((await text('#retries tr[data-unsafe="true"] td.detail')) || "").includes("increment_counter") &&
    (await text('#tools tr[data-tool="increment_counter"] td[data-layer="transport"]')) === "1");

  if (!(await page.evaluate(() => window.__notReloaded === true))) fail("the page was reloaded");
  if (outside.length) fail("the page asked for URLs elsewhere: " + outside.join(", "));
  const summary = {
    layers: Object.fromEntries(await Promise.all(["transport", "protocol", "application", "interaction"]
      .map(async (l) => [l, await text("#layer-" + l)]))),
    calls: await text("#total-calls"),
    failures: await text("#total-failures"),
    unsafe: await text("#total-unsafe"),
    failureDetails: await page.$$eval("#failures tr td.detail", (ns) => ns.map((n) => n.textContent)),
  };
  console.log(JSON.stringify(summary));
  await page.screenshot({ path: shot, fullPage: true });
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
