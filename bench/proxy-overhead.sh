#!/usr/bin/env bash
# Proxy overhead: the same load, direct to the kitchen and through `mcp-triage proxy`, in one
# run, for JSON and SSE responses; then a 1 GiB SSE response through the proxy and its peak RSS.
#
#   bench/proxy-overhead.sh     (env: BENCH_SECONDS=5 CONCURRENCY=32 SSE_BYTES=1073741824)
#
# Load generator: crates/mcp-triage-kitchen/examples/load.rs (one legacy session over
# keep-alive HTTP/1.1 connections, tools/call test_simple_text back to back). Latency is measured
# with one connection (no queueing, so the difference is the proxy's own cost per exchange);
# throughput with CONCURRENCY connections. Generator, proxy and kitchen share the machine's cores.
# The proxy writes its records to a file, as in production. 127.0.0.1 only; every process started
# here is stopped on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
SECONDS_RUN="${BENCH_SECONDS:-5}"
CONCURRENCY="${CONCURRENCY:-32}"
SSE_BYTES="${SSE_BYTES:-1073741824}"

cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-kitchen --example serve --example load
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-proxy --example big_sse
bin="$root/target/release"
# shellcheck source=interop/procs.sh
. "$root/interop/procs.sh"


"$bin/examples/serve" --listen 127.0.0.1:0 >"$out/kitchen.url" 2>"$out/kitchen.log" &
pids+=("$!")
wait_for "$out/kitchen.url" "http://"
kitchen_url="$(head -n1 "$out/kitchen.url")"
origin="${kitchen_url%/mcp}"
"$bin/mcp-triage" proxy --listen 127.0.0.1:0 --upstream "$origin" --log "$out/records.jsonl" 2>"$out/proxy.log" &
pids+=("$!")
wait_for "$out/proxy.log" "http://"
proxy_origin="$(grep -o 'http://[0-9.:]*' "$out/proxy.log" | head -n1)"

run() { # url concurrency
  timeout $((SECONDS_RUN + 60)) "$bin/examples/load" --url "$1" --concurrency "$2" --seconds "$SECONDS_RUN" --tool test_simple_text
}

results="$out/results.txt"
for mode in json sse; do
  path="/s/baseline/mcp?responseMode=$mode"
  # Alternate direct and proxied runs so both see the same machine state.
  lat_d="$(run "$origin$path" 1)"
  lat_p="$(run "$proxy_origin$path" 1)"
  thr_d="$(run "$origin$path" "$CONCURRENCY")"
  thr_p="$(run "$proxy_origin$path" "$CONCURRENCY")"
  echo "$mode $lat_d $lat_p $thr_d $thr_p" >>"$results"
done

# 1 GiB of SSE through a fresh proxy; its peak RSS (VmHWM) afterwards.
"$bin/examples/big_sse" serve --listen 127.0.0.1:0 --bytes "$SSE_BYTES" >"$out/big.url" &
pids+=("$!")
wait_for "$out/big.url" "http://"
big_origin="$(head -n1 "$out/big.url")"; big_origin="${big_origin%/mcp}"
"$bin/mcp-triage" proxy --listen 127.0.0.1:0 --upstream "$big_origin" --log "$out/big-records.jsonl" 2>"$out/proxy2.log" &
proxy2=$!
pids+=("$proxy2")
wait_for "$out/proxy2.log" "http://"
proxy2_origin="$(grep -o 'http://[0-9.:]*' "$out/proxy2.log" | head -n1)"
big="$(timeout 300 "$bin/examples/big_sse" fetch --url "$proxy2_origin/mcp")"
hwm_kb="$(awk '/VmHWM/ {print $2}' "/proc/$proxy2/status")"
kill -TERM "$proxy2"; wait "$proxy2" 2>/dev/null || true
big_outcome="$(python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print(len(r), r[0]["outcome"], r[0]["responseBytes"])' "$out/big-records.jsonl")"

python3 - "$results" "$big" "$hwm_kb" "$big_outcome" "$CONCURRENCY" <<'PY'
import json, sys
rows = [l.split(" ", 1) for l in open(sys.argv[1]).read().splitlines()]
print(f"{'mode':5} {'direct p50':>11} {'proxy p50':>10} {'added p50':>10} {'direct p99':>11} {'proxy p99':>10} {'direct rps':>11} {'proxy rps':>10} {'ratio':>6}")
ok = True
for mode, rest in rows:
    dec = json.JSONDecoder(); objs = []; s = rest.strip()
    while s:
        o, i = dec.raw_decode(s); objs.append(o); s = s[i:].strip()
    ld, lp, td, tp = objs
    added_us = (lp["p50_ms"] - ld["p50_ms"]) * 1000
    ratio = tp["rps"] / td["rps"]
    print(f"{mode:5} {ld['p50_ms']*1000:9.0f}µs {lp['p50_ms']*1000:8.0f}µs {added_us:8.0f}µs {ld['p99_ms']*1000:9.0f}µs {lp['p99_ms']*1000:8.0f}µs {td['rps']:11.0f} {tp['rps']:10.0f} {ratio:6.1%}")
    for o in objs:
        if o.get("errors"):
            print(f"  errors in a run: {o}"); ok = False
    ok &= ratio >= 0.9 and added_us <= 100
big = json.loads(sys.argv[2]); hwm_mb = int(sys.argv[3]) / 1024
n, outcome, rbytes = sys.argv[4].split()
print(f"1 GiB SSE through the proxy: {big['bytes']} bytes in {big['seconds']} s ({big['mib_per_s']} MiB/s), proxy peak RSS {hwm_mb:.1f} MB, record: {outcome}, responseBytes {rbytes}")
print(f"targets (throughput >= 90%, added p50 <= 100 µs, RSS < 64 MB): {'met' if ok and hwm_mb < 64 else 'NOT met'}")
PY
