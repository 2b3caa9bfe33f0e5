#!/usr/bin/env bash
# Proxy overhead: the same load, direct to the kitchen and through `mcp-triage proxy`, in one
# run, for JSON and SSE responses; then a 1 GiB SSE response through the proxy and its peak RSS.
#
#   bench/proxy-overhead.sh     (env: ROUNDS=5 BENCH_SECONDS=2 CONCURRENCY=32 SSE_BYTES=1073741824
#                                     WORK_MS=5 PROXY_BIN=path/to/another/mcp-triage)
#
# Load generator: crates/mcp-triage-kitchen/examples/load.rs (one legacy session over keep-alive
# HTTP/1.1 connections, tools/call test_simple_text back to back: a tool that does no work, so
# the server's cost per call is as small as it gets and the proxy's share is as large as it gets).
# Every figure is the median of ROUNDS rounds, and each round runs direct and proxied back to
# back, so both see the same machine state (single runs on a small shared machine vary by ±30%).
#
# Besides the proxy, both throughput placements also measure a bare TCP relay
# (examples/tcp_relay.rs: copy_bidirectional on one thread, no HTTP, no records) in the same
# round. In the shared placement its ratio is the ceiling for any user-space proxy on this
# machine: the CPU of two more loopback TCP hops and their wakeups, which no proxy avoids. In the
# dedicated placement it is only a reference (it writes each piece as it comes, so it wakes the
# server's core more often than the proxy, which writes a response in one piece).
#
# - Latency: 1 connection (no queueing: the difference is the proxy's own cost per exchange);
#   generator, kitchen and proxy placed by the scheduler on all cores; through the proxy as
#   started by default (it polls instead of sleeping for an adaptive window of at most 200 µs
#   after traffic; see `mcp-triage proxy --help`), and through a second one started with
#   `--spin-us 0` (it sleeps at once, as it did by default before 2026-12-03).
# - Throughput: CONCURRENCY connections, in two placements:
#   * shared: all processes on all cores. With the cores saturated this measures CPU: the
#     proxy's CPU per exchange against the generator's and kitchen's together.
#   * dedicated: generator and kitchen pinned to CPU 0, the proxies and the relay to CPU 1
#     (taskset), as a gateway or sidecar with a core of its own; the direct runs use the same
#     CPU 0 (CPU 1 idle). This measures whether the proxy keeps up with the server. Here the
#     `--spin-us 0` proxy is measured too.
#     Needs 2 or more CPUs.
#   The proxies' CPU per exchange (utime + stime from /proc) is printed for each row.
# - Context (not a target): shared placement, the same connections, a tool that takes WORK_MS
#   ms (the kitchen's `run_configured_test_scenario` with `slowReportDelayMs`), as real tools do,
#   through both proxies: their CPU per exchange is what the polling costs when answers are slow.
# The proxies write their records to files, as in production. 127.0.0.1 only; every process
# started here is stopped on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
SECONDS_RUN="${BENCH_SECONDS:-2}"
ROUNDS="${ROUNDS:-5}"
CONCURRENCY="${CONCURRENCY:-32}"
SSE_BYTES="${SSE_BYTES:-1073741824}"
WORK_MS="${WORK_MS:-5}"

cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-kitchen --example serve --example load
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-proxy --example big_sse --example tcp_relay
bin="$root/target/release"
proxy_bin="${PROXY_BIN:-$bin/mcp-triage}"
# shellcheck source=interop/procs.sh
. "$root/interop/procs.sh"
cpus="$(nproc)"

"$bin/examples/serve" --listen 127.0.0.1:0 >"$out/kitchen.url" 2>"$out/kitchen.log" &
kitchen=$!
pids+=("$kitchen")
wait_for "$out/kitchen.url" "http://"
kitchen_url="$(head -n1 "$out/kitchen.url")"
origin="${kitchen_url%/mcp}"
"$proxy_bin" proxy --listen 127.0.0.1:0 --upstream "$origin" --log "$out/records.jsonl" 2>"$out/proxy.log" &
proxy=$!
pids+=("$proxy")
wait_for "$out/proxy.log" "http://"
proxy_origin="$(grep -o 'http://[0-9.:]*' "$out/proxy.log" | head -n1)"
"$proxy_bin" proxy --listen 127.0.0.1:0 --upstream "$origin" --log "$out/records-nospin.jsonl" --spin-us 0 2>"$out/proxy-nospin.log" &
sleeper=$!
pids+=("$sleeper")
wait_for "$out/proxy-nospin.log" "http://"
nospin_origin="$(grep -o 'http://[0-9.:]*' "$out/proxy-nospin.log" | head -n1)"
"$bin/examples/tcp_relay" --listen 127.0.0.1:0 --upstream "${origin#http://}" >"$out/relay.url" 2>"$out/relay.log" &
relay=$!
pids+=("$relay")
wait_for "$out/relay.url" "http://"
relay_origin="$(head -n1 "$out/relay.url")"

# pin CPULIST PID: every thread of PID to CPULIST.
pin() { taskset -a -p -c "$1" "$2" >/dev/null; }
# cpu_ticks PID: utime + stime of PID (all threads), in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# run URL CONCURRENCY PID [CPULIST] [TOOL]: one load run, one JSON line, plus the CPU ticks PID
# (the proxy or relay in the path; the kitchen for direct runs) spent meanwhile as "ticks".
run() {
  local t0 t1 line cmd
  cmd=("$bin/examples/load" --url "$1" --concurrency "$2" --seconds "$SECONDS_RUN" --tool "${5:-test_simple_text}")
  [ -n "${4:-}" ] && cmd=(taskset -c "$4" "${cmd[@]}")
  t0="$(cpu_ticks "$3")"
  line="$(timeout $((SECONDS_RUN + 60)) "${cmd[@]}")"
  t1="$(cpu_ticks "$3")"
  echo "${line%\}},\"ticks\":$((t1 - t0))}"
}
everywhere() { for p in "$kitchen" "$proxy" "$sleeper" "$relay"; do pin "0-$((cpus - 1))" "$p"; done; }

results="$out/results.jsonl"
for round in $(seq 1 "$ROUNDS"); do
  for mode in json sse; do
    path="/s/baseline/mcp?responseMode=$mode"
    everywhere
    echo "{\"round\":$round,\"mode\":\"$mode\",\"what\":\"latency\",\"direct\":$(run "$origin$path" 1 "$kitchen"),\"proxy\":$(run "$proxy_origin$path" 1 "$proxy"),\"nospin\":$(run "$nospin_origin$path" 1 "$sleeper")}" >>"$results"
    echo "{\"round\":$round,\"mode\":\"$mode\",\"what\":\"shared\",\"direct\":$(run "$origin$path" "$CONCURRENCY" "$kitchen"),\"proxy\":$(run "$proxy_origin$path" "$CONCURRENCY" "$proxy"),\"relay\":$(run "$relay_origin$path" "$CONCURRENCY" "$relay")}" >>"$results"
    work="$path&slowReportDelayMs=$WORK_MS"
    echo "{\"round\":$round,\"mode\":\"$mode\",\"what\":\"work\",\"direct\":$(run "$origin$work" "$CONCURRENCY" "$kitchen" "" run_configured_test_scenario),\"proxy\":$(run "$proxy_origin$work" "$CONCURRENCY" "$proxy" "" run_configured_test_scenario),\"nospin\":$(run "$nospin_origin$work" "$CONCURRENCY" "$sleeper" "" run_configured_test_scenario)}" >>"$results"
    if [ "$cpus" -ge 2 ]; then
      pin 0 "$kitchen"; pin 1 "$proxy"; pin 1 "$sleeper"; pin 1 "$relay"
      echo "{\"round\":$round,\"mode\":\"$mode\",\"what\":\"dedicated\",\"direct\":$(run "$origin$path" "$CONCURRENCY" "$kitchen" 0),\"proxy\":$(run "$proxy_origin$path" "$CONCURRENCY" "$proxy" 0),\"nospin\":$(run "$nospin_origin$path" "$CONCURRENCY" "$sleeper" 0),\"relay\":$(run "$relay_origin$path" "$CONCURRENCY" "$relay" 0)}" >>"$results"
    fi
  done
  echo "round $round of $ROUNDS done" >&2
done
everywhere

# 1 GiB of SSE through a fresh proxy; its peak RSS (VmHWM) afterwards.
"$bin/examples/big_sse" serve --listen 127.0.0.1:0 --bytes "$SSE_BYTES" >"$out/big.url" &
pids+=("$!")
wait_for "$out/big.url" "http://"
big_origin="$(head -n1 "$out/big.url")"; big_origin="${big_origin%/mcp}"
"$proxy_bin" proxy --listen 127.0.0.1:0 --upstream "$big_origin" --log "$out/big-records.jsonl" 2>"$out/proxy2.log" &
proxy2=$!
pids+=("$proxy2")
wait_for "$out/proxy2.log" "http://"
proxy2_origin="$(grep -o 'http://[0-9.:]*' "$out/proxy2.log" | head -n1)"
big="$(timeout 300 "$bin/examples/big_sse" fetch --url "$proxy2_origin/mcp")"
hwm_kb="$(awk '/VmHWM/ {print $2}' "/proc/$proxy2/status")"
kill -TERM "$proxy2"; wait "$proxy2" 2>/dev/null || true
big_outcome="$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(len(r), r[0]["outcome"], r[0]["responseBytes"])' "$out/big-records.jsonl")"

python3 - "$results" "$big" "$hwm_kb" "$big_outcome" "$CONCURRENCY" "$(getconf CLK_TCK)" "$WORK_MS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
tck = int(sys.argv[6])
med = statistics.median
ok = True
def errors(r):
    global ok
    for side in ("direct", "proxy", "nospin", "relay"):
        if side in r and r[side].get("errors"):
            print(f"  errors in round {r['round']} {r['mode']} {r['what']} {side}: {r[side]}"); ok = False

print(f"median of {len({r['round'] for r in rows})} alternating rounds; latency with 1 connection, throughput with {sys.argv[5]}")
print(f"{'proxy':16} {'mode':5} {'direct p50':>11} {'proxy p50':>10} {'added p50':>10} {'direct p99':>11} {'proxy p99':>10}")
lat_ok = {}
for side, label in (("proxy", "default"), ("nospin", "--spin-us 0")):
    for mode in ("json", "sse"):
        rs = [r for r in rows if r["mode"] == mode and r["what"] == "latency"]
        for r in rs: errors(r)
        if side == "nospin" and any(r["nospin"].get("errors") for r in rs):
            print(f"  errors in --spin-us 0 runs"); ok = False
        d50 = med(r["direct"]["p50_ms"] for r in rs) * 1000
        p50 = med(r[side]["p50_ms"] for r in rs) * 1000
        added = med((r[side]["p50_ms"] - r["direct"]["p50_ms"]) * 1000 for r in rs)
        d99 = med(r["direct"]["p99_ms"] for r in rs) * 1000
        p99 = med(r[side]["p99_ms"] for r in rs) * 1000
        lat_ok[label] = lat_ok.get(label, True) and added <= 100
        print(f"{label:16} {mode:5} {d50:9.0f}µs {p50:8.0f}µs {added:8.0f}µs {d99:9.0f}µs {p99:8.0f}µs")
thr_ok = {}
print(f"{'placement':10} {'mode':5} {'through':22} {'direct rps':>11} {'rps':>8} {'ratio':>6} {'CPU/exchange':>13}")
rows_of = (("shared", "proxy", "proxy (default)"), ("shared", "relay", "bare TCP relay"),
           ("dedicated", "proxy", "proxy (default)"), ("dedicated", "nospin", "proxy --spin-us 0"),
           ("dedicated", "relay", "bare TCP relay"), ("work", "proxy", "proxy (default)"),
           ("work", "nospin", "proxy --spin-us 0"))
for what, side, label in rows_of:
    for mode in ("json", "sse"):
        rs = [r for r in rows if r["mode"] == mode and r["what"] == what and side in r]
        if not rs:
            continue
        for r in rs: errors(r)
        d = med(r["direct"]["rps"] for r in rs)
        p = med(r[side]["rps"] for r in rs)
        ratio = med(r[side]["rps"] / r["direct"]["rps"] for r in rs)
        cpu_us = med(r[side]["ticks"] / tck / max(r[side]["requests"], 1) * 1e6 for r in rs)
        if side != "relay" and what != "work":
            key = f"{what} {label}"
            thr_ok[key] = thr_ok.get(key, True) and ratio >= 0.9
        place = what if what != "work" else f"{sys.argv[7]} ms tool"
        print(f"{place:10} {mode:5} {label:22} {d:11.0f} {p:8.0f} {ratio:6.1%} {cpu_us:10.0f} µs")
print("(bare TCP relay: no HTTP, no records; shared: the ceiling for any user-space proxy on this machine;"
      f" dedicated: a reference only. The {sys.argv[7]} ms tool rows are context, not a target)")
big = json.loads(sys.argv[2]); hwm_mb = int(sys.argv[3]) / 1024
n, outcome, rbytes = sys.argv[4].split()
print(f"1 GiB SSE through the proxy: {big['bytes']} bytes in {big['seconds']} s ({big['mib_per_s']} MiB/s), proxy peak RSS {hwm_mb:.1f} MB, record: {outcome}, responseBytes {rbytes}")
say = lambda b: "met" if b else "NOT met"
print(f"targets: added p50 <= 100 µs: " + ", ".join(f"{w} {say(v)}" for w, v in lat_ok.items())
      + "; throughput >= 90% of direct: "
      + ", ".join(f"{w} {say(v)}" for w, v in thr_ok.items())
      + f"; RSS < 64 MB: {say(hwm_mb < 64)}" + ("" if ok else "; ERRORS in some runs"))
PY
