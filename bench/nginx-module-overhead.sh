#!/usr/bin/env bash
# What the mcp-triage nginx modules cost (issue 20): the same load through plain nginx (the same
# configuration without the module, its usual access log), nginx with the native C module
# (integrations/nginx/native, the ffi staticlib linked in, one JSON line per exchange, metrics in
# a shared zone), nginx with the Lua module (LuaJIT FFI over libmcp_triage_ffi.so, the same line,
# metrics in a shared dict) and `mcp-triage proxy`, for JSON and SSE responses, all in one run so
# the ratios compare like with like.
#
#   bench/nginx-module-overhead.sh                  both parts (about 4 minutes on 2 cores, built)
#   bench/nginx-module-overhead.sh --instructions   the callgrind instruction counts only
#   bench/nginx-module-overhead.sh --cpu            the CPU-per-exchange rounds only
#   (env: ROUNDS=3 BENCH_SECONDS=2 CONCURRENCY=16 INSTR_EXCHANGES=1000 JOBS=2 for cargo -j)
#
# - Instructions per exchange (deterministic, valid on a busy machine; the target of the issue):
#   each configuration runs as ONE nginx process (`master_process off`, so the worker is the
#   process valgrind starts) or one proxy (`--spin-us 0`: polling would add instructions that
#   depend on timing) under `valgrind --tool=callgrind --trace-children=yes`, while
#   bench/mcp_exchanges.py sends INSTR_EXCHANGES and then, to a fresh process, twice as many
#   exchanges one at a time (a legacy session, `tools/call test_simple_text`: a tool that does no
#   work, so the gateway's share is as large as it gets); (total(2N) - total(N)) / N leaves out
#   startup and shutdown. User-space instructions only (loopback TCP in the kernel is not
#   counted). Target: module <= 1.5x plain nginx (aim 1.3x), JSON and SSE: the native module
#   is the one measured against it (the Lua module's floor alone is above it, see below).
#   Two more figures say what is reachable at all: "floor" (run.sh --floor: lua-nginx-module
#   loaded, the four *_by_lua_block phases present but empty, plain nginx's access log: what any
#   Lua module in these phases costs before it does anything) and "classifier" (the C ABI alone,
#   `mcpt_classify` + outcome + free on the bench's own response, captured from the kitchen,
#   counted by callgrind's --toggle-collect on crates/mcp-triage-ffi/examples/ffi_bench.rs as
#   bench/ffi-classify.sh does). floor + classifier is the least the module can cost.
# - CPU per exchange: ROUNDS rounds, each running the kitchen's load generator
#   (crates/mcp-triage-kitchen/examples/load.rs) for BENCH_SECONDS with CONCURRENCY connections
#   through each path back to back; utime + stime of the gateway (nginx master and worker, or the
#   proxy) from /proc over the requests served; medians over rounds, ratios within each round.
# The module's log is checked afterwards: one TOOL_SUCCESS line per exchange it served.
# 127.0.0.1 only; every process started here is stopped on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
what=all
case "${1:-}" in
  "") ;;
  --instructions) what=instructions ;;
  --cpu) what=cpu ;;
  *) echo "usage: bench/nginx-module-overhead.sh [--instructions | --cpu]" >&2; exit 2 ;;
esac
ROUNDS="${ROUNDS:-3}"
SECONDS_RUN="${BENCH_SECONDS:-2}"
CONCURRENCY="${CONCURRENCY:-16}"
INSTR_EXCHANGES="${INSTR_EXCHANGES:-1000}"
JOBS="${JOBS:-2}"
command -v nginx >/dev/null || { echo "nginx not found (apt-get install nginx-light libnginx-mod-http-lua lua-resty-core)" >&2; exit 1; }
[ -f /usr/share/nginx/src/conf_flags ] || { echo "nginx-dev not found (apt-get install nginx-dev): the native module needs it" >&2; exit 1; }
if [ "$what" != cpu ] && ! command -v valgrind >/dev/null; then
  echo "valgrind not found (apt-get install valgrind), or run with --cpu" >&2; exit 1
fi

# one package per build: building two at once unifies their features and rebuilds shared deps
cargo build -j "$JOBS" -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-ffi --lib --example ffi_bench
cargo build -j "$JOBS" -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage
cargo build -j "$JOBS" -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-kitchen --example serve --example load
bin="$root/target/release"
so="$bin/libmcp_triage_ffi.so"
# the native module, rebuilt every run so that it links the staticlib just built
native="$("$root/integrations/nginx/native/build.sh" --profile release --out "$bin/nginx")"
# shellcheck source=interop/procs.sh
. "$root/interop/procs.sh"

"$bin/examples/serve" --listen 127.0.0.1:0 >"$out/kitchen.url" 2>"$out/kitchen.log" &
pids+=("$!")
wait_for "$out/kitchen.url" "http://"
origin="$(head -n1 "$out/kitchen.url")"; origin="${origin%/mcp}"

# config NAME PORT [--plain | --floor | --native]: nginx.conf for NAME in $out/NAME, by run.sh.
config() {
  "$root/integrations/nginx/run.sh" --config-only --listen "127.0.0.1:$2" --upstream "$origin" \
    --so "$so" --log "$out/$1.log" --metrics "127.0.0.1:$(free_port)" --prefix "$out/$1" "${@:3}" >/dev/null
}
# cpu_ticks PID: utime + stime of PID and its child processes (nginx's worker), in clock ticks.
cpu_ticks() {
  local p sum=0
  for p in "$1" $(pgrep -P "$1" || true); do sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$sum"
}
# run URL PID: one load run, its JSON line with the gateway's CPU ticks meanwhile as "ticks".
run() {
  local t0 line
  t0="$(cpu_ticks "$2")"
  line="$(timeout $((SECONDS_RUN + 60)) "$bin/examples/load" --url "$1" --concurrency "$CONCURRENCY" \
    --seconds "$SECONDS_RUN" --tool test_simple_text)"
  echo "${line%\}},\"ticks\":$(($(cpu_ticks "$2") - t0))}"
}

results="$out/cpu.jsonl" instructions="$out/instructions.jsonl"
: >"$results"; : >"$instructions"
if [ "$what" != instructions ]; then
  declare -A gw_pid gw_url
  for name in plain native module; do
    port="$(free_port)"
    case "$name" in
      plain) config plain "$port" --plain ;;
      native) config native "$port" --module "$native" ;;
      module) config module "$port" ;;
    esac
    nginx -p "$out/$name" -c "$out/$name/nginx.conf" -g 'daemon off;' 2>>"$out/$name.stderr" &
    gw_pid[$name]=$!; pids+=("$!"); gw_url[$name]="http://127.0.0.1:$port"
    wait_port "$port" "nginx $name" "$out/$name.stderr"
  done
  port="$(free_port)"
  "$bin/mcp-triage" proxy --listen "127.0.0.1:$port" --upstream "$origin" --log "$out/proxy.log.jsonl" 2>"$out/proxy.stderr" &
  gw_pid[proxy]=$!; pids+=("$!"); gw_url[proxy]="http://127.0.0.1:$port"
  wait_port "$port" proxy "$out/proxy.stderr"
  for round in $(seq 1 "$ROUNDS"); do
    for mode in json sse; do
      line="{\"round\":$round,\"mode\":\"$mode\""
      for name in plain native module proxy; do
        line+=",\"$name\":$(run "${gw_url[$name]}/s/baseline/mcp?responseMode=$mode" "${gw_pid[$name]}")"
      done
      echo "$line}" >>"$results"
    done
    echo "round $round of $ROUNDS done" >&2
  done
fi

# callgrind_total NAME MODE N: NAME under callgrind on a fresh port, N exchanges, its total.
callgrind_total() {
  local file="$out/callgrind.$1.$2.$3" port pid sent cmd
  port="$(free_port)"
  case "$1" in
    plain) config "cg-plain-$2-$3" "$port" --plain
           cmd=(nginx -p "$out/cg-plain-$2-$3" -c "$out/cg-plain-$2-$3/nginx.conf" -g 'daemon off; master_process off;') ;;
    floor) config "cg-floor-$2-$3" "$port" --floor
           cmd=(nginx -p "$out/cg-floor-$2-$3" -c "$out/cg-floor-$2-$3/nginx.conf" -g 'daemon off; master_process off;') ;;
    module) config "cg-module-$2-$3" "$port"
            cmd=(nginx -p "$out/cg-module-$2-$3" -c "$out/cg-module-$2-$3/nginx.conf" -g 'daemon off; master_process off;') ;;
    native) config "cg-native-$2-$3" "$port" --module "$native"
            cmd=(nginx -p "$out/cg-native-$2-$3" -c "$out/cg-native-$2-$3/nginx.conf" -g 'daemon off; master_process off;') ;;
    proxy) cmd=("$bin/mcp-triage" proxy --listen "127.0.0.1:$port" --upstream "$origin" --log "$out/cg-proxy.jsonl" --spin-us 0) ;;
  esac
  valgrind --tool=callgrind --trace-children=yes --log-file="$file.valgrind" --callgrind-out-file="$file" \
    "${cmd[@]}" >"$file.stdout" 2>"$file.stderr" &
  pid=$!; pids+=("$pid")
  wait_port "$port" "$1 under callgrind" "$file.stderr"
  sent="$(python3 "$here/mcp_exchanges.py" "http://127.0.0.1:$port/s/baseline/mcp?responseMode=$2" "$3")"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  case "$sent" in *'"errors": 0}'*) ;; *) echo "$1 $2: exchanges failed under callgrind: $sent" >&2; exit 1 ;; esac
  if [ "$1" = module ] || [ "$1" = native ]; then
    # the module classified every exchange (and nothing else): N lines, all TOOL_SUCCESS
    local lines
    lines="$(grep -c '"outcome":"TOOL_SUCCESS"' "$out/cg-$1-$2-$3.log" || true)"
    [ "$lines" = "$3" ] || { echo "$1 $2: $lines TOOL_SUCCESS lines for $3 exchanges" >&2; exit 1; }
  fi
  awk '/^totals:/ {print $2}' "$file"
}
if [ "$what" != cpu ]; then
  for mode in json sse; do
    for name in plain native floor module proxy; do
      a="$(callgrind_total "$name" "$mode" "$INSTR_EXCHANGES")"
      b="$(callgrind_total "$name" "$mode" $((2 * INSTR_EXCHANGES)))"
      echo "{\"mode\":\"$mode\",\"name\":\"$name\",\"n\":$INSTR_EXCHANGES,\"total_n\":$a,\"total_2n\":$b}" >>"$instructions"
      echo "instructions: $mode $name done" >&2
    done
  done
fi

# classifier MODE: instructions per exchange of the C ABI classifier alone, on the bench's
# response (the same session and tool as mcp_exchanges.py), INSTR_EXCHANGES copies.
classifier() {
  local file="$out/exchange.$1.jsonl" err="$out/ffi_bench.$1.err" total
  python3 "$here/mcp_exchanges.py" --exchange "$file" "$origin/s/baseline/mcp?responseMode=$1" \
    "$INSTR_EXCHANGES" >/dev/null
  valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*run_ffi*' \
    "$bin/examples/ffi_bench" ffi "$file" >"$out/ffi_bench.$1.out" 2>"$err" ||
    { cat "$err" >&2; echo "ffi_bench $1 failed" >&2; exit 1; }
  grep -q "TOOL_SUCCESS=$INSTR_EXCHANGES" "$out/ffi_bench.$1.out" ||
    { echo "ffi_bench $1: $(cat "$out/ffi_bench.$1.out")" >&2; exit 1; }
  total="$(awk '/Collected :/ { print $NF }' "$err")"
  echo "{\"mode\":\"$1\",\"name\":\"classifier\",\"n\":$INSTR_EXCHANGES,\"total_n\":0,\"total_2n\":$total}" >>"$instructions"
}
if [ "$what" != cpu ]; then
  for mode in json sse; do classifier "$mode"; done
fi

python3 - "$results" "$instructions" "$(getconf CLK_TCK)" "$CONCURRENCY" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
instr = [json.loads(l) for l in open(sys.argv[2])]
tck, conc = int(sys.argv[3]), sys.argv[4]
med = statistics.median
LABEL = {"plain": "plain nginx", "native": "nginx + C module", "module": "nginx + Lua module",
         "proxy": "mcp-triage proxy"}
ILABEL = dict(LABEL, floor="floor (empty Lua)", classifier="C ABI classifier")
targets = []
if instr:
    per = {(i["mode"], i["name"]): (i["total_2n"] - i["total_n"]) / i["n"] for i in instr}
    print(f"instructions per exchange under callgrind (one process, one exchange at a time, "
          f"(total of {2 * instr[0]['n']} - total of {instr[0]['n']}) / {instr[0]['n']}):")
    for mode in ("json", "sse"):
        p = per[(mode, "plain")]
        for name in ("plain", "native", "floor", "module", "proxy", "classifier"):
            v = per[(mode, name)]
            print(f"  {mode:4} {ILABEL[name]:18} {v:10,.0f}  {v / p:5.2f}x plain nginx")
        r = per[(mode, "native")] / p
        least = per[(mode, "floor")] + per[(mode, "classifier")]
        print(f"  {mode:4} the C module adds {per[(mode, 'native')] - p:,.0f} instructions per exchange"
              f" (the classifier alone {per[(mode, 'classifier')]:,.0f}), the Lua module"
              f" {per[(mode, 'module')] - p:,.0f}; Lua floor + classifier = {least:,.0f}"
              f" ({least / p:.2f}x plain nginx), the Lua glue = Lua module - that ="
              f" {per[(mode, 'module')] - least:,.0f}")
        targets.append(f"{mode} C module <= 1.5x plain: {'met' if r <= 1.5 else 'NOT met'} ({r:.2f}x; aim 1.3x;"
                       f" Lua module {per[(mode, 'module')] / p:.2f}x)")
if rows:
    errs = [(r["round"], r["mode"], n) for r in rows for n in LABEL if r[n].get("errors")]
    if errs:
        print(f"errors in load runs: {errs}")
    cpu = lambda run: run["ticks"] / tck / max(run["requests"], 1) * 1e6
    print(f"CPU per exchange of the gateway (median of {len({r['round'] for r in rows})} rounds, "
          f"{conc} connections, all processes on all cores):")
    for mode in ("json", "sse"):
        rs = [r for r in rows if r["mode"] == mode]
        for name in ("plain", "native", "module", "proxy"):
            print(f"  {mode:4} {LABEL[name]:18} {med(cpu(r[name]) for r in rs):7.1f} µs"
                  f"  {med(r[name]['rps'] for r in rs):8.0f} req/s"
                  f"  {med(cpu(r[name]) / cpu(r['plain']) for r in rs):5.2f}x plain nginx")
if targets:
    print("targets (this run): " + "; ".join(targets))
PY
