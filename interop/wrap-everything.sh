#!/usr/bin/env bash
# `mcp-triage wrap` around @modelcontextprotocol/server-everything over stdio (pinned in
# interop/package-lock.json): the same scripted client session is run against the server
# directly and through the wrapper; every response line must be byte-identical both ways, and
# the wrapper's log must have one record per request.
#
#   interop/wrap-everything.sh        (needs a built target/debug/mcp-triage, or MCP_TRIAGE=path)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
# shellcheck source=interop/npm-deps.sh
. "$here/npm-deps.sh"
bin="${MCP_TRIAGE:-$root/target/debug/mcp-triage}"
[ -x "$bin" ] || cargo build -j 2 -q -p mcp-triage --manifest-path "$root/Cargo.toml"
server="$here/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# The session: initialize, initialized, tools/list, three tools/call, ping. Each line is sent
# after the previous answer arrived (as a host does), by a small Node driver.
cat >"$out/session.jsonl" <<'JSONL'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"wrap-interop","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"h\u00e9llo"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":2,"b":3}}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no-such-tool","arguments":{}}}
{"jsonrpc":"2.0","id":6,"method":"ping"}
JSONL
cat >"$out/drive.mjs" <<'JS'
// Usage: node drive.mjs SESSION OUT -- CMD ARGS...  Writes each response line (with an id) to OUT.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
const [session, outFile, , cmd, ...args] = process.argv.slice(2);
const lines = readFileSync(session, "utf8").split("\n").filter(Boolean);
const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });
let buf = "", got = [], waiting = null;
child.stdout.on("data", (d) => {
  buf += d;
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, i + 1); buf = buf.slice(i + 1);
    const m = JSON.parse(line);
    if (m.id !== undefined && m.method === undefined) { got.push(line); if (waiting && m.id === waiting.id) { const w = waiting; waiting = null; w.done(); } }
  }
});
const timer = setTimeout(() => { console.error("timed out"); process.exit(1); }, 20000);
for (const l of lines) {
  const m = JSON.parse(l);
  child.stdin.write(l + "\n");
  if (m.id !== undefined) await new Promise((done) => { waiting = { id: m.id, done }; });
}
child.stdin.end();
child.on("exit", () => { clearTimeout(timer); writeFileSync(outFile, got.join("")); });
JS
"$node22" "$out/drive.mjs" "$out/session.jsonl" "$out/direct.txt" -- "$node22" "$server" stdio 2>"$out/direct.err"
"$node22" "$out/drive.mjs" "$out/session.jsonl" "$out/wrapped.txt" -- "$bin" wrap --log "$out/records.jsonl" -- "$node22" "$server" stdio 2>"$out/wrapped.err"
if ! cmp -s "$out/direct.txt" "$out/wrapped.txt"; then
  echo "FAIL: responses differ through the wrapper" >&2
  diff <(cat "$out/direct.txt") <(cat "$out/wrapped.txt") >&2 || true
  exit 1
fi
python3 - "$out/records.jsonl" "$out/direct.txt" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
responses = [json.loads(l) for l in open(sys.argv[2])]
requests = [r for r in recs if r["kind"] == "request"]
assert len(requests) == 6, f"one record per request, got {len(requests)}: {recs}"
assert len(recs) == 7, f"6 requests + 1 notification, got {len(recs)}"
by = {r["id"]: r for r in requests}
assert by[3]["outcome"] == "TOOL_SUCCESS" and by[4]["outcome"] == "TOOL_SUCCESS", by
assert by[5]["outcome"] in ("JSONRPC_ERROR", "TOOL_ERROR"), by[5]
assert all(r["transport"] == "stdio" for r in recs)
summary = ", ".join(f"{i}:{by[i]['outcome']}" for i in sorted(by))
print(f"wrap-everything: {len(responses)} responses byte-identical through the wrapper; "
      f"{len(requests)} request records ({summary})")
PY
echo "1 passed, 0 failed"
