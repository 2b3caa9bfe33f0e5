#!/usr/bin/env bash
# Load benchmark: the kitchen vs @modelcontextprotocol/server-everything (pinned in
# interop/package-lock.json), same load generator (crates/mcp-triage-kitchen/examples/load.rs)
# and same concurrency for both, one legacy session reused over keep-alive connections,
# tools/call back to back. Then RSS of the kitchen holding 10,000 idle keep-alive connections.
#
#   bench/kitchen-load.sh            (env: CONCURRENCY=64 BENCH_SECONDS=10 IDLE=10000)
#
# 127.0.0.1 only: server-everything binds all interfaces, so it runs with the loopback-only
# preload (../shared/tools/loopback-only.cjs, see conformance-and-peers.md §C). Every process
# started here is stopped on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
interop="$root/interop"
preload="${LOOPBACK_PRELOAD:-$root/../shared/tools/loopback-only.cjs}"
[ -f "$preload" ] || { echo "loopback preload not found: $preload" >&2; exit 1; }
CONCURRENCY="${CONCURRENCY:-64}"
SECONDS_RUN="${BENCH_SECONDS:-10}"
IDLE="${IDLE:-10000}"
# shellcheck source=interop/npm-deps.sh
. "$interop/npm-deps.sh"

cargo build -j 2 -q --release -p mcp-triage-kitchen --example serve --example load --manifest-path "$root/Cargo.toml"
serve="$root/target/release/examples/serve"
load="$root/target/release/examples/load"
# shellcheck source=interop/procs.sh
. "$interop/procs.sh"


"$serve" --listen 127.0.0.1:0 >"$out/kitchen.url" 2>"$out/kitchen.log" &
kitchen_pid=$!
pids+=("$kitchen_pid")
port="$(free_port)"
PORT="$port" "$node22" --require "$preload" \
  "$interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp \
  >"$out/everything.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 100); do
  [ -s "$out/kitchen.url" ] && grep -q "listening" "$out/everything.log" && break
  sleep 0.1
done
kitchen_url="$(head -n1 "$out/kitchen.url")"
everything_url="http://127.0.0.1:$port/mcp"
grep -q "listening" "$out/everything.log" || { echo "server-everything did not start:" >&2; cat "$out/everything.log" >&2; exit 1; }

echo "load: concurrency $CONCURRENCY, ${SECONDS_RUN} s each, tools/call over one reused session" >&2
k="$(timeout $((SECONDS_RUN + 60)) "$load" --url "$kitchen_url" --concurrency "$CONCURRENCY" --seconds "$SECONDS_RUN" --tool test_simple_text)"
e="$(timeout $((SECONDS_RUN + 60)) "$load" --url "$everything_url" --concurrency "$CONCURRENCY" --seconds "$SECONDS_RUN" --tool echo --args '{"message":"hi"}')"
echo "kitchen           $k"
echo "server-everything $e"
python3 - "$k" "$e" <<'PY'
import json, sys
k, e = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name, r in (("kitchen", k), ("server-everything", e)):
    print(f"{name:18} {r['rps']:>9.0f} req/s   p50 {r['p50_ms']:.2f} ms   p99 {r['p99_ms']:.2f} ms   errors {r['errors']}")
print(f"ratio (kitchen / server-everything): {k['rps'] / max(e['rps'], 1):.1f}x")
PY

# Idle connections: RSS of the kitchen before and while it holds $IDLE kept-alive connections.
# hyper's header read timeout (10 s) also closes keep-alive connections idle that long, so the
# measurement is taken right after the connections are up.
ulimit -n "$((IDLE + 1024))" 2>/dev/null || ulimit -n hard 2>/dev/null || true
echo "ulimit -n: $(ulimit -n)" >&2
rss() { awk '/^VmRSS/ {print $2}' "/proc/$kitchen_pid/status"; }
before="$(rss)"
"$load" --url "$kitchen_url" --idle "$IDLE" --hold 8 >"$out/idle.out" 2>&1 &
idle_pid=$!
pids+=("$idle_pid")
for _ in $(seq 1 300); do
  grep -q "idle-ready" "$out/idle.out" 2>/dev/null && break
  sleep 0.05
done
grep -q "idle-ready" "$out/idle.out" || { echo "idle connections not established:" >&2; cat "$out/idle.out" >&2; exit 1; }
during="$(rss)"
kport="$(echo "$kitchen_url" | sed -E 's#.*:([0-9]+)/.*#\1#')"
conns="$(ss -Htn state established "( sport = :$kport )" 2>/dev/null | wc -l || echo '?')"
echo "idle: kitchen RSS ${before} kB before, ${during} kB with ${IDLE} idle connections (established on the kitchen port: ${conns}); $(( (during - before) * 1024 / IDLE )) bytes per connection"
