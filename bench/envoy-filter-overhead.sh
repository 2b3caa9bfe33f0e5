#!/usr/bin/env bash
# What the mcp-triage Envoy filter costs (issue 43): the same load through plain Envoy (the same
# configuration without the filter, an access log line per request from Envoy's own fields:
# run.sh --plain) and Envoy with the filter (run.sh: the module, one JSON line per exchange,
# the metrics in Envoy's stats), for a small JSON result, a 3-event SSE stream and a 64 KiB JSON
# result (bench/envoy_bench.py's fixed upstream); and, for the choice of mechanism, the Lua floor
# (run.sh --lua-floor: plain Envoy plus Envoy's Lua filter with empty envoy_on_request and
# envoy_on_response, the least any Lua filter costs before it does anything).
#
#   bench/envoy-filter-overhead.sh                 both parts (about 15 minutes on 2 shared cores)
#   bench/envoy-filter-overhead.sh --instructions  the callgrind instruction counts only
#   bench/envoy-filter-overhead.sh --cpu           the CPU-per-exchange rounds only
#   (env: INSTR_EXCHANGES=400 WARMUP=50 CPU_EXCHANGES=3000 ROUNDS=3 JOBS=2 for cargo -j)
#
# Instructions per exchange: each configuration runs as one Envoy (--concurrency 1) under
# `valgrind --tool=callgrind`; per mode, WARMUP exchanges, then `callgrind_control --zero`,
# INSTR_EXCHANGES exchanges one at a time over one keep-alive connection, `callgrind_control
# --dump`: the dump's total over INSTR_EXCHANGES (Envoy's startup is left out; its main thread's
# timers during the run are in both configurations). User-space instructions only.
# Target: filter <= 1.3x plain Envoy for JSON and SSE (figures for the 64 KiB result too).
# CPU per exchange: the three configurations run natively (--concurrency 1); per round and mode,
# CPU_EXCHANGES exchanges one at a time through each, Envoy's utime + stime from /proc over the
# exchanges; medians over ROUNDS rounds, ratios within each round. The client is Python: it sets
# the pace, not what is counted (Envoy's own CPU time).
# The filter's log is checked afterwards: one TOOL_SUCCESS line per exchange.
# 127.0.0.1 only; every process started here is stopped on exit.
set -euo pipefail
what=all
case "${1:-}" in
  "") ;;
  --instructions) what=instructions ;;
  --cpu) what=cpu ;;
  *) echo "usage: bench/envoy-filter-overhead.sh [--instructions | --cpu]" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
N="${INSTR_EXCHANGES:-400}"
WARMUP="${WARMUP:-50}"
JOBS="${JOBS:-2}"
CPU_EXCHANGES="${CPU_EXCHANGES:-3000}"
ROUNDS="${ROUNDS:-3}"
[ "$what" = cpu ] || command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
cargo build -j "$JOBS" -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-envoy
module="$root/target/release/libmcp_triage_envoy.so"
envoy="$("$root/integrations/envoy/install-envoy.sh" --print)"
# shellcheck source=interop/procs.sh
. "$root/interop/procs.sh"

up="$(free_port)"
python3 "$here/envoy_bench.py" upstream "$up" >"$out/upstream.log" 2>&1 &
pids+=("$!")
wait_port "$up" upstream "$out/upstream.log"

results="$out/instructions.jsonl"
: >"$results"
# measure NAME [run.sh options]: one Envoy under callgrind, every mode, one JSON line each.
measure() {
  local name="$1" port admin pid mode sent dump total
  shift
  port="$(free_port)" admin="$(free_port)"
  "$root/integrations/envoy/run.sh" --config-only --envoy "$envoy" --module "$module" \
    --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" --upstream "http://127.0.0.1:$up" \
    --log "$out/$name.log" --prefix "$out/$name" --log-level error "$@" >/dev/null
  ENVOY_DYNAMIC_MODULES_SEARCH_PATH="$(dirname "$module")" valgrind --tool=callgrind \
    --callgrind-out-file="$out/cg.$name" --log-file="$out/cg.$name.valgrind" \
    "$envoy" -c "$out/$name/envoy.yaml" --concurrency 1 -l error --disable-hot-restart \
    --file-flush-interval-msec 200 >"$out/$name.stdout" 2>"$out/$name.stderr" &
  pid=$!; pids+=("$pid")
  for _ in $(seq 1 600); do
    curl -sf -m 2 "http://127.0.0.1:$admin/ready" >/dev/null 2>&1 && break
    sleep 0.5
  done
  curl -sf -m 2 "http://127.0.0.1:$admin/ready" >/dev/null || { echo "$name: Envoy did not start under callgrind" >&2; cat "$out/cg.$name.valgrind" >&2; exit 1; }
  for mode in json sse big; do
    python3 "$here/envoy_bench.py" client "http://127.0.0.1:$port/$mode" "$WARMUP" >/dev/null
    callgrind_control --zero "$pid" >/dev/null 2>&1
    sent="$(python3 "$here/envoy_bench.py" client "http://127.0.0.1:$port/$mode" "$N")"
    case "$sent" in *'"errors": 0}'*) ;; *) echo "$name $mode: exchanges failed under callgrind: $sent" >&2; exit 1 ;; esac
    rm -f "$out/cg.$name".[0-9]*
    callgrind_control --dump="$mode" "$pid" >/dev/null 2>&1
    dump="$(ls "$out/cg.$name".[0-9]* | head -n1)"
    total="$(awk '/^(totals|summary):/ {print $2; exit}' "$dump")"
    echo "{\"name\":\"$name\",\"mode\":\"$mode\",\"n\":$N,\"total\":$total}" >>"$results"
    echo "instructions: $name $mode done" >&2
  done
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
}
if [ "$what" != cpu ]; then
  measure plain --plain
  measure luafloor --lua-floor
  measure filter
  sleep 0.5
  # the filter classified every exchange (warm-up included): one TOOL_SUCCESS line each
  lines="$(grep -c '"outcome":"TOOL_SUCCESS"' "$out/filter.log" || true)"
  [ "$lines" = $((3 * (N + WARMUP))) ] || { echo "filter: $lines TOOL_SUCCESS lines for $((3 * (N + WARMUP))) exchanges" >&2; exit 1; }
fi

cpu="$out/cpu.jsonl"
: >"$cpu"
# cpu_ticks PID: utime + stime of PID (Envoy, all its threads), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
if [ "$what" != instructions ]; then
  declare -A cpid cport
  for name in plain luafloor filter; do
    port="$(free_port)" admin="$(free_port)"
    case "$name" in plain) opt=(--plain) ;; luafloor) opt=(--lua-floor) ;; filter) opt=() ;; esac
    "$root/integrations/envoy/run.sh" --envoy "$envoy" --module "$module" --listen "127.0.0.1:$port" \
      --admin "127.0.0.1:$admin" --upstream "http://127.0.0.1:$up" --log "$out/cpu-$name.log" \
      --prefix "$out/cpu-$name" --log-level error "${opt[@]}" >"$out/cpu-$name.out" 2>&1 &
    cpid[$name]=$!; pids+=("$!"); cport[$name]=$port
    wait_port "$port" "envoy $name" "$out/cpu-$name.out"
  done
  for round in $(seq 1 "$ROUNDS"); do
    for mode in json sse big; do
      for name in plain luafloor filter; do
        t0="$(cpu_ticks "${cpid[$name]}")"
        sent="$(python3 "$here/envoy_bench.py" client "http://127.0.0.1:${cport[$name]}/$mode" "$CPU_EXCHANGES")"
        case "$sent" in *'"errors": 0}'*) ;; *) echo "cpu $name $mode: $sent" >&2; exit 1 ;; esac
        echo "{\"round\":$round,\"mode\":\"$mode\",\"name\":\"$name\",\"n\":$CPU_EXCHANGES,\"ticks\":$(($(cpu_ticks "${cpid[$name]}") - t0))}" >>"$cpu"
      done
    done
    echo "cpu: round $round of $ROUNDS done" >&2
  done
fi

python3 - "$results" "$cpu" "$(getconf CLK_TCK)" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cpu = [json.loads(l) for l in open(sys.argv[2])]
tck = int(sys.argv[3])
label = {"json": "small JSON", "sse": "3-event SSE", "big": "64 KiB JSON"}
if cpu:
    us = {(c["round"], c["mode"], c["name"]): c["ticks"] / tck / c["n"] * 1e6 for c in cpu}
    rounds = sorted({c["round"] for c in cpu})
    print(f"CPU per exchange of Envoy (median of {len(rounds)} rounds, {cpu[0]['n']} exchanges one at a time):")
    for mode in ("json", "sse", "big"):
        med = lambda name: statistics.median(us[(r, mode, name)] for r in rounds)
        ratio = lambda name: statistics.median(us[(r, mode, name)] / us[(r, mode, "plain")] for r in rounds)
        print(f"  {label[mode]:12} plain {med('plain'):6.1f} µs   Lua floor {med('luafloor'):6.1f} µs ({ratio('luafloor'):.2f}x)"
              f"   filter {med('filter'):6.1f} µs ({ratio('filter'):.2f}x)")
if not rows:
    sys.exit(0)
per = {(r["name"], r["mode"]): r["total"] / r["n"] for r in rows}
n = rows[0]["n"]
print(f"instructions per exchange under callgrind (one Envoy, --concurrency 1, {n} exchanges one at a time,"
      " counters zeroed after a warm-up):")
targets = []
for mode in ("json", "sse", "big"):
    p, f, lf = per[("plain", mode)], per[("filter", mode)], per[("luafloor", mode)]
    print(f"  {label[mode]:12} plain Envoy {p:10,.0f}   Envoy + filter {f:10,.0f}   {f / p:5.2f}x  (+{f - p:,.0f})"
          f"   Lua floor {lf:10,.0f}  {lf / p:5.2f}x")
    if mode != "big":
        targets.append(f"{label[mode]} <= 1.3x: {'met' if f / p <= 1.3 else 'NOT met'} ({f / p:.2f}x)")
print("targets (this run): " + "; ".join(targets))
PY
