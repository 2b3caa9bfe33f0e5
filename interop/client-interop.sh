#!/usr/bin/env bash
# `mcp-triage call` against MCP servers nobody here wrote, pinned:
#   - @modelcontextprotocol/server-everything (interop/package-lock.json), stdio and Streamable HTTP;
#   - the official TypeScript SDK's example server (examples/server/simpleStreamableHttp.js of the
#     pinned @modelcontextprotocol/sdk), plain and behind OAuth (`--oauth`, and `--oauth-strict`,
#     which accepts only tokens issued for its resource: RFC 8707): its demo authorization server
#     approves at once, so `call --authorize follow` discovers, registers, authorizes with PKCE
#     and calls;
#   - a Python SDK server (PyPI `mcp`, interop/python/requirements.lock; MCPServer is FastMCP's v2
#     name), Streamable HTTP, in both eras (2026-07-28 stateless and the 2025-11-25 session), and
#     one behind the SDK's OAuth routes (interop/python/oauth_server.py, an auto-approving
#     provider): two calls share a --token-store, so the second must not authorize again;
#   (the rmcp server is a Rust dev-dependency: crates/mcp-triage/tests/interop_rmcp.rs).
# For each: a succeeding tool, a tool error and an unknown tool, each with the outcome that server's
# answer deserves (what each one sends for an unknown tool differs; the table below says which).
# 127.0.0.1 only: the Node servers bind all interfaces, so they run with the loopback-only preload
# (interop/loopback-only.cjs). Every process started here is stopped on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"
# shellcheck source=interop/npm-deps.sh
. "$here/npm-deps.sh"
# shellcheck source=interop/python-deps.sh
. "$here/python-deps.sh"

cargo build -j 2 -q -p mcp-triage --manifest-path "$root/Cargo.toml"
triage="${CARGO_TARGET_DIR:-$root/target}/debug/mcp-triage"
preload="$here/loopback-only.cjs"
# shellcheck source=interop/procs.sh
. "$here/procs.sh"


failures=0
runs=0
# check NAME EXPECTED_OUTCOME EXPECTED_EXIT [ERA] -- mcp-triage call ARGS...
# ERA, when given, is the protocolVersion the record must name (the era actually spoken).
check() {
  local name="$1" want="$2" want_exit="$3" era=""; shift 3
  if [ "$1" != "--" ]; then era="$1"; shift; fi
  shift
  local rc=0
  timeout 60 "$triage" call "$@" --format json >"$out/rec.json" 2>"$out/err.txt" || rc=$?
  runs=$((runs + 1))
  local got
  got="$(python3 -c 'import json,sys
try:
    r = json.load(open(sys.argv[1]))
    print(r.get("layer","?") + "/" + r.get("outcome","?"))
    print(r.get("protocolVersion") or "-")
except Exception as e:
    print("unreadable record: %s" % e); print("-")' "$out/rec.json")"
  local spoke="${got#*$'\n'}"
  got="${got%%$'\n'*}"
  if [ -n "$era" ] && [ "$spoke" != "$era" ]; then got="$got, spoke $spoke not $era"; fi
  if [ "$got" = "$want" ] && [ "$rc" = "$want_exit" ]; then
    printf '  ok    %-46s %s (exit %s, %s)\n' "$name" "$got" "$rc" "$spoke"
  else
    printf '  FAIL  %-46s got %s (exit %s), want %s (exit %s)\n' "$name" "$got" "$rc" "$want" "$want_exit"
    sed 's/^/        /' "$out/err.txt" | tail -n 20
    head -c 2000 "$out/rec.json" | sed 's/^/        /'; echo
    failures=$((failures + 1))
  fi
}

# refused NAME -- mcp-triage call ARGS...: arguments that break the tool's inputSchema (read from
# the server's tools/list) are refused before anything is sent: exit 7, the reason on stderr.
refused() {
  local name="$1"; shift 2
  local rc=0
  timeout 60 "$triage" call "$@" >"$out/rec.txt" 2>"$out/err.txt" || rc=$?
  runs=$((runs + 1))
  if [ "$rc" = 7 ] && grep -q "do not match the inputSchema" "$out/err.txt"; then
    printf '  ok    %-46s refused before sending (exit 7)\n' "$name"
  else
    printf '  FAIL  %-46s exit %s, want 7 and the inputSchema named\n' "$name" "$rc"
    sed 's/^/        /' "$out/err.txt" | tail -n 5
    failures=$((failures + 1))
  fi
}

everything="$here/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
ts_example="$here/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"
se_version="$(python3 -c 'import json;print(json.load(open("node_modules/@modelcontextprotocol/server-everything/package.json"))["version"])')"
sdk_version="$(python3 -c 'import json;print(json.load(open("node_modules/@modelcontextprotocol/sdk/package.json"))["version"])')"
py_version="$("$venv_python" -c 'import importlib.metadata as m; print(m.version("mcp"))')"

# --- servers -------------------------------------------------------------------------------
se_port="$(free_port)"
PORT="$se_port" "$node22" --require "$preload" "$everything" streamableHttp >"$out/se.log" 2>&1 &
pids+=($!)
ts_port="$(free_port)"
MCP_PORT="$ts_port" "$node22" --require "$preload" "$ts_example" >"$out/ts.log" 2>&1 &
pids+=($!)
ts_oauth_port="$(free_port)"
ts_oauth_as="$(free_port)"
MCP_PORT="$ts_oauth_port" MCP_AUTH_PORT="$ts_oauth_as" "$node22" --require "$preload" "$ts_example" --oauth --oauth-strict >"$out/ts-oauth.log" 2>&1 &
pids+=($!)
py_port="$(free_port)"
"$venv_python" "$here/python/server.py" "$py_port" >"$out/py.log" 2>&1 &
pids+=($!)
py_json_port="$(free_port)"
"$venv_python" "$here/python/server.py" "$py_json_port" --json >"$out/py-json.log" 2>&1 &
pids+=($!)
wait_port "$se_port" server-everything "$out/se.log"
wait_port "$ts_port" "TypeScript SDK example server" "$out/ts.log"
py_oauth_port="$(free_port)"
"$venv_python" "$here/python/oauth_server.py" "$py_oauth_port" >"$out/py-oauth.log" 2>&1 &
pids+=($!)
wait_port "$ts_oauth_port" "TypeScript SDK example server (OAuth)" "$out/ts-oauth.log"
wait_port "$ts_oauth_as" "TypeScript SDK example authorization server" "$out/ts-oauth.log"
wait_port "$py_port" "Python SDK server" "$out/py.log"
wait_port "$py_oauth_port" "Python SDK server (OAuth)" "$out/py-oauth.log"
wait_port "$py_json_port" "Python SDK server (JSON)" "$out/py-json.log"

echo "server-everything $se_version, stdio"
se_stdio="$node22 $everything stdio"
check "echo" application/TOOL_SUCCESS 0 -- --stdio "$se_stdio" echo --args '{"message":"hi"}'
refused "get-sum with a string (checked by call)" -- --stdio "$se_stdio" get-sum --args '{"a":"x","b":1}'
check "get-sum with a string (server's validation)" application/TOOL_ERROR 6 -- --stdio "$se_stdio" get-sum --args '{"a":"x","b":1}' --send-invalid-args
check "unknown tool (answered as an isError result)" application/TOOL_ERROR 6 -- --stdio "$se_stdio" no-such-tool

echo "server-everything $se_version, Streamable HTTP (2025-11-25 session after the modern probe)"
se_url="http://127.0.0.1:$se_port/mcp"
check "echo" application/TOOL_SUCCESS 0 2025-11-25 -- "$se_url" echo --args '{"message":"hi"}'
refused "get-sum with a string (checked by call)" -- "$se_url" get-sum --args '{"a":"x","b":1}'
check "get-sum with a string (server's validation)" application/TOOL_ERROR 6 -- "$se_url" get-sum --args '{"a":"x","b":1}' --send-invalid-args
check "unknown tool (answered as an isError result)" application/TOOL_ERROR 6 -- "$se_url" no-such-tool

echo "TypeScript SDK $sdk_version example server (simpleStreamableHttp)"
ts_url="http://127.0.0.1:$ts_port/mcp"
check "greet" application/TOOL_SUCCESS 0 -- "$ts_url" greet --args '{"name":"interop"}'
refused "greet without its argument (checked by call)" -- "$ts_url" greet
check "greet without its argument (server's validation)" application/TOOL_ERROR 6 -- "$ts_url" greet --send-invalid-args
check "unknown tool (answered as an isError result)" application/TOOL_ERROR 6 -- "$ts_url" no-such-tool

echo "TypeScript SDK $sdk_version example server behind OAuth (simpleStreamableHttp --oauth-strict)"
# The server names its resource http://localhost:PORT/mcp; the URL must be that one.
ts_oauth_url="http://localhost:$ts_oauth_port/mcp"
check "greet, after authorizing" application/TOOL_SUCCESS 0 -- "$ts_oauth_url" greet --args '{"name":"oauth"}' \
  --authorize follow --no-token-store
check "without OAuth: the 401 is reported" transport/HTTP_ERROR 3 -- "$ts_oauth_url" greet --args '{"name":"oauth"}' --no-oauth

for era in auto 2025-11-25; do
  for mode in sse json; do
    if [ "$mode" = sse ]; then port="$py_port"; else port="$py_json_port"; fi
    echo "Python SDK mcp $py_version MCPServer, $mode responses, --protocol-version $era"
    py_url="http://127.0.0.1:$port/mcp"
    if [ "$era" = auto ]; then spoken=2026-07-28; else spoken="$era"; fi
    check "echo" application/TOOL_SUCCESS 0 "$spoken" -- "$py_url" echo --args '{"message":"hi"}' --protocol-version "$era"
    check "fail (ToolError)" application/TOOL_ERROR 6 -- "$py_url" fail --protocol-version "$era"
    check "unknown tool (answered as an isError result)" application/TOOL_ERROR 6 -- "$py_url" no-such-tool --protocol-version "$era"
  done
done

echo "Python SDK mcp $py_version MCPServer behind the SDK's OAuth routes (oauth_server.py)"
py_oauth_url="http://127.0.0.1:$py_oauth_port/mcp"
for n in 1 2; do
  check "echo, call $n with one token store" application/TOOL_SUCCESS 0 -- "$py_oauth_url" echo \
    --args '{"message":"hi"}' --authorize follow --token-store "$out/py-tokens.json"
done
authorized="$(grep -c 'GET /authorize' "$out/py-oauth.log" || true)"
runs=$((runs + 1))
if [ "$authorized" = 1 ]; then
  echo "  ok    the second call used the cached token        (1 authorization)"
else
  echo "  FAIL  the second call authorized again              ($authorized authorizations)"
  failures=$((failures + 1))
fi

# agree NAME RECORDS -- mcp-triage call ARGS...: a call whose tool asks for input that nobody
# gives (issue 24, item 1). The client declines as the spec defines, the server finishes, and the
# observer in between (proxy or wrap, writing RECORDS) must record the same outcome for the
# tools/call as the client: not INPUT_REQUIRED on one side and STREAM_INCOMPLETE or TOOL_ERROR
# on the other.
agree() {
  local name="$1" records="$2"; shift 3
  local rc=0
  timeout 90 "$triage" call "$@" --format json >"$out/rec.json" 2>"$out/err.txt" || rc=$?
  runs=$((runs + 1))
  local verdicts
  verdicts="$(python3 - "$out/rec.json" "$records" <<'PY'
import json, sys
try:
    rec = json.load(open(sys.argv[1]))
    client = rec["layer"] + "/" + rec["outcome"]
    declined = any(w.get("code") == "INPUT_UNANSWERED" and "declined" in w.get("detail", "")
                   for w in rec.get("warnings", []))
except Exception as e:
    print(f"unreadable record: {e}"); sys.exit()
import os, time
calls = []
for _ in range(50):  # the observer writes its record when the exchange ends: wait up to 5 s
    if os.path.exists(sys.argv[2]):
        seen = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
        calls = [r for r in seen if r.get("method") == "tools/call"]
    if calls:
        break
    time.sleep(0.1)
observer = ",".join(f"{r.get('layer')}/{r.get('outcome')}" for r in calls) or "none"
ok = len(calls) == 1 and observer == client and declined and rec["outcome"] != "INPUT_REQUIRED"
print(("ok " if ok else "bad ") + f"client {client}, observer {observer}, declined: {declined}")
PY
)"
  if [ "${verdicts%% *}" = ok ]; then
    printf '  ok    %-46s %s (exit %s)\n' "$name" "${verdicts#ok }" "$rc"
  else
    printf '  FAIL  %-46s %s (exit %s)\n' "$name" "${verdicts#bad }" "$rc"
    sed 's/^/        /' "$out/err.txt" | tail -n 20
    failures=$((failures + 1))
  fi
}

echo "an input request nobody answers: the client's verdict and the observer's agree"
obs_port="$(free_port)"
"$triage" proxy --listen "127.0.0.1:$obs_port" --upstream "http://127.0.0.1:$ts_port" \
  --log "$out/proxy-elicit.jsonl" 2>"$out/proxy-elicit.err" &
pids+=($!)
wait_port "$obs_port" "mcp-triage proxy" "$out/proxy-elicit.err"
agree "TS example collect-user-info, HTTP via proxy" "$out/proxy-elicit.jsonl" -- \
  "http://127.0.0.1:$obs_port/mcp" collect-user-info --args '{"infoType":"contact"}'
agree "server-everything elicitation, stdio via wrap" "$out/wrap-elicit.jsonl" -- \
  --stdio "$triage wrap --log $out/wrap-elicit.jsonl -- $se_stdio" trigger-elicitation-request

echo
if [ "$failures" -ne 0 ]; then
  echo "client interop: $failures of $runs calls gave the wrong outcome" >&2
  exit 1
fi
echo "client interop: $runs calls, all with the expected outcome"
# The README states the count: held to this run, so the two cannot drift apart.
if ! grep -q "(\`interop/client-interop.sh\`, $runs checks)" "$root/README.md"; then
  echo "client interop: README.md does not say \"(\`interop/client-interop.sh\`, $runs checks)\"" >&2
  exit 1
fi
