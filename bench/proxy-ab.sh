#!/usr/bin/env bash
# Compare proxy builds in one run: the same kitchen, one proxy per build, and in each round the
# same load direct and then through each proxy, so every build sees the same machine state.
# (Separate runs of bench/proxy-overhead.sh on a small shared machine differ by more than the
# changes being measured.)
#
#   bench/proxy-ab.sh OLD/mcp-triage NEW/mcp-triage [...]    (env: ROUNDS=5 BENCH_SECONDS=2 CONCURRENCY=32)
#
# Prints, per response mode and concurrency (1 and CONCURRENCY, all processes on all cores), the
# median over rounds of: the direct p50 and req/s, and for each build the added p50, the
# throughput as a share of direct, and its CPU per exchange (utime + stime from /proc).
# 127.0.0.1 only; every process started here is stopped on exit.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 PROXY_BINARY [PROXY_BINARY ...]" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
ROUNDS="${ROUNDS:-5}"
SECONDS_RUN="${BENCH_SECONDS:-2}"
CONCURRENCY="${CONCURRENCY:-32}"
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-kitchen --example serve --example load
bin="$root/target/release"
# shellcheck source=interop/procs.sh
. "$root/interop/procs.sh"

"$bin/examples/serve" --listen 127.0.0.1:0 >"$out/kitchen.url" 2>"$out/kitchen.log" &
pids+=("$!")
wait_for "$out/kitchen.url" "http://"
origin="$(head -n1 "$out/kitchen.url")"; origin="${origin%/mcp}"
proxy_pid=(); proxy_url=()
for i in $(seq 1 $#); do
  "${!i}" proxy --listen 127.0.0.1:0 --upstream "$origin" --log "$out/records-$i.jsonl" 2>"$out/proxy-$i.log" &
  pids+=("$!"); proxy_pid+=("$!")
  wait_for "$out/proxy-$i.log" "http://"
  proxy_url+=("$(grep -o 'http://[0-9.:]*' "$out/proxy-$i.log" | head -n1)")
done

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
load() { timeout $((SECONDS_RUN + 60)) "$bin/examples/load" --url "$1" --concurrency "$2" --seconds "$SECONDS_RUN" --tool test_simple_text; }
results="$out/results.txt"
for round in $(seq 1 "$ROUNDS"); do
  for mode in json sse; do
    path="/s/baseline/mcp?responseMode=$mode"
    for c in 1 "$CONCURRENCY"; do
      echo "$round $mode $c 0 0 $(load "$origin$path" "$c")" >>"$results"
      for i in $(seq 1 $#); do
        t0="$(ticks "${proxy_pid[$((i - 1))]}")"
        line="$(load "${proxy_url[$((i - 1))]}$path" "$c")"
        echo "$round $mode $c $i $(($(ticks "${proxy_pid[$((i - 1))]}") - t0)) $line" >>"$results"
      done
    done
  done
  echo "round $round of $ROUNDS done" >&2
done

python3 - "$results" "$(getconf CLK_TCK)" "$@" <<'PY'
import collections, json, statistics, sys
tck, names = int(sys.argv[2]), sys.argv[3:]
runs = collections.defaultdict(dict)
for l in open(sys.argv[1]):
    rnd, mode, c, who, ticks, js = l.split(" ", 5)
    runs[(mode, int(c), int(who))][int(rnd)] = (int(ticks), json.loads(js))
med = statistics.median
for (mode, c, who) in sorted(k for k in runs if k[2] == 0):
    direct = runs[(mode, c, 0)]
    if any(j.get("errors") for _, j in direct.values()):
        print(f"  errors in direct runs of {mode} c={c}")
    print(f"{mode} c={c}: direct p50 {med(j['p50_ms'] for _, j in direct.values()) * 1000:.0f} µs, "
          f"{med(j['rps'] for _, j in direct.values()):.0f} req/s")
    for i, name in enumerate(names, 1):
        v = runs[(mode, c, i)]
        added = med((j["p50_ms"] - direct[r][1]["p50_ms"]) * 1000 for r, (_, j) in v.items())
        share = med(j["rps"] / direct[r][1]["rps"] for r, (_, j) in v.items())
        cpu = med(t / tck / max(j["requests"], 1) * 1e6 for t, j in v.values())
        errs = sum(j.get("errors", 0) for _, j in v.values())
        print(f"  {name}: added p50 {added:.0f} µs, throughput {share:.1%} of direct, proxy CPU {cpu:.0f} µs/exchange"
              + (f", {errs} errors" if errs else ""))
PY
