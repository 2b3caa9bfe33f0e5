#!/usr/bin/env bash
# Proxy overhead: the same load, direct to the kitchen and through `mcp-triage proxy`, in one
# run, for JSON and SSE responses, beside a bare TCP relay and nginx as reverse proxies in the same
# rounds; instructions per exchange under callgrind; then a 1 GiB SSE response through the proxy
# and its peak RSS.
#
#   bench/proxy-overhead.sh                 everything (about 8 minutes on 2 cores)
#   bench/proxy-overhead.sh --quick         the throughput rounds only (shared and dedicated,
#                                           3 rounds: about 2 minutes once built)
#   bench/proxy-overhead.sh --instructions  the callgrind instruction counts only (about 1½ minutes)
#   (env: ROUNDS=5 (3 with --quick) BENCH_SECONDS=2 CONCURRENCY=32 SSE_BYTES=1073741824 WORK_MS=5
#    INSTR_EXCHANGES=2000 PROXY_BIN=path/to/another/mcp-triage NGINX=path/to/nginx)
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
# nginx (the Debian package; installed with apt-get if missing and this runs as root, else its
# rows are left out with a message saying why) runs as a reverse proxy to the same kitchen with a
# configuration generated into the scratch directory: 127.0.0.1 only, HTTP/1.1 keep-alive to the
# upstream (`keepalive 64`), `proxy_buffering off` (SSE passes as it comes), keep-alive limits
# raised so no connection is closed during a run, an access log buffered 64 KiB / 100 ms (the
# proxy also writes its records in batches). `nginx` has `worker_processes 1`, one forwarding
# thread like the proxy's default; `nginx auto` (shared placement only) one worker per CPU.
#
# - Latency: 1 connection (no queueing: the difference is the proxy's own cost per exchange);
#   generator, kitchen and proxy placed by the scheduler on all cores; through the proxy as
#   started by default (it polls instead of sleeping for an adaptive window of at most 200 µs
#   after traffic; see `mcp-triage proxy --help`), and through a second one started with
#   `--spin-us 0` (it sleeps at once, as it did by default before 2026-12-03); and nginx.
# - Throughput: CONCURRENCY connections, in two placements:
#   * shared: all processes on all cores. With the cores saturated this measures CPU: the
#     proxy's CPU per exchange against the generator's and kitchen's together.
#   * dedicated: generator and kitchen pinned to CPU 0, the proxies, the relay and nginx to CPU 1
#     (taskset), as a gateway or sidecar with a core of its own; the direct runs use the same
#     CPU 0 (CPU 1 idle). This measures whether the proxy keeps up with the server. Here the
#     `--spin-us 0` proxy is measured too.
#     Needs 2 or more CPUs.
#   The CPU per exchange (utime + stime from /proc, nginx's workers included) of each process in
#   the path is printed for each row.
# - Context (not a target): shared placement, the same connections, a tool that takes WORK_MS
#   ms (the kitchen's `run_configured_test_scenario` with `slowReportDelayMs`), as real tools do,
#   through both proxies: their CPU per exchange is what the polling costs when answers are slow.
# - Instructions per exchange (deterministic, so valid on a busy machine): the relay, the proxy
#   (`--spin-us 0`: polling would add instructions that depend on timing, not on the work) and
#   nginx (one process) each run under `valgrind --tool=callgrind` while bench/mcp_exchanges.py
#   sends INSTR_EXCHANGES and then, to a fresh process, twice as many exchanges one at a time; the
#   difference of the two totals over INSTR_EXCHANGES leaves out startup and shutdown. Callgrind
#   counts user-space instructions only: the kernel's share (loopback TCP, wakeups), which is
#   most of the relay's CPU, is in the CPU-per-exchange figures of the throughput rows.
# The proxies write their records to files, as in production. 127.0.0.1 only; every process
# started here is stopped on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
what_to_run=all
case "${1:-}" in
  "") ;;
  --quick) what_to_run=quick ;;
  --instructions) what_to_run=instructions ;;
  *) echo "usage: bench/proxy-overhead.sh [--quick | --instructions]" >&2; exit 2 ;;
esac
SECONDS_RUN="${BENCH_SECONDS:-2}"
if [ "$what_to_run" = quick ]; then ROUNDS="${ROUNDS:-3}"; else ROUNDS="${ROUNDS:-5}"; fi
CONCURRENCY="${CONCURRENCY:-32}"
SSE_BYTES="${SSE_BYTES:-1073741824}"
WORK_MS="${WORK_MS:-5}"
INSTR_EXCHANGES="${INSTR_EXCHANGES:-2000}"

cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-kitchen --example serve --example load
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-proxy --example big_sse --example tcp_relay --example h1_relay
bin="$root/target/release"
proxy_bin="${PROXY_BIN:-$bin/mcp-triage}"
# shellcheck source=interop/procs.sh
. "$root/interop/procs.sh"
cpus="$(nproc)"

# nginx: the Debian package, installed if missing (root with apt-get only); else its rows are skipped.
nginx_bin="${NGINX:-$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)}"
if [ -z "$nginx_bin" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "nginx is not installed: installing the Debian package nginx-light" >&2
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light >/dev/null 2>&1; }; } \
    || echo "apt-get install nginx-light failed" >&2
  nginx_bin="$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)"
fi
[ -z "$nginx_bin" ] && echo "nginx not found and not installable here (not root, or no apt-get): the nginx rows are left out; set NGINX=path/to/nginx to include them" >&2

"$bin/examples/serve" --listen 127.0.0.1:0 >"$out/kitchen.url" 2>"$out/kitchen.log" &
kitchen=$!
pids+=("$kitchen")
wait_for "$out/kitchen.url" "http://"
kitchen_url="$(head -n1 "$out/kitchen.url")"
origin="${kitchen_url%/mcp}"

# nginx_conf DIR PORT WORKERS MASTER(on|off): a reverse-proxy configuration to the kitchen in DIR.
nginx_conf() {
  mkdir -p "$1"
  local user=""
  [ "$(id -u)" = 0 ] && user="user root;"
  cat >"$1/nginx.conf" <<CONF
$user
worker_processes $3;
master_process $4;
daemon off;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 4096; }
http {
  access_log $1/access.log combined buffer=64k flush=100ms;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  fastcgi_temp_path $1/fastcgi;
  uwsgi_temp_path $1/uwsgi;
  scgi_temp_path $1/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  upstream kitchen {
    server ${origin#http://};
    keepalive 64;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
  }
  server {
    listen 127.0.0.1:$2;
    location / {
      proxy_pass http://kitchen;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
CONF
}
# start_nginx NAME WORKERS: an nginx (master + WORKERS) on a free port; sets nginx_pid, nginx_origin.
start_nginx() {
  local port
  port="$(free_port)"
  nginx_conf "$out/$1" "$port" "$2" on
  "$nginx_bin" -p "$out/$1" -c "$out/$1/nginx.conf" -e "$out/$1/error.log" 2>>"$out/$1/error.log" &
  nginx_pid=$!
  pids+=("$nginx_pid")
  wait_port "$port" "$1" "$out/$1/error.log"
  nginx_origin="http://127.0.0.1:$port"
}

# The processes of the throughput and latency rounds (not needed for --instructions alone).
if [ "$what_to_run" != instructions ]; then
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
  nginx1="" nginxauto=""
  if [ -n "$nginx_bin" ]; then
    start_nginx nginx1 1; nginx1=$nginx_pid; nginx1_origin=$nginx_origin
    start_nginx nginxauto auto; nginxauto=$nginx_pid; nginxauto_origin=$nginx_origin
  fi
fi

# pin CPULIST PID: every thread of PID and of its child processes (nginx's workers) to CPULIST.
pin() {
  local p
  for p in "$2" $(pgrep -P "$2" || true); do taskset -a -p -c "$1" "$p" >/dev/null; done
}
# cpu_ticks PID: utime + stime of PID (all threads) and its child processes, in clock ticks.
cpu_ticks() {
  local p sum=0
  for p in "$1" $(pgrep -P "$1" || true); do
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$sum"
}
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
# field NAME URL CONCURRENCY PID [CPULIST] [TOOL]: `"NAME":{run}`, or nothing when PID is empty
# (nginx missing).
field() {
  [ -z "$4" ] && return 0
  echo ",\"$1\":$(run "$2" "$3" "$4" "${5:-}" "${6:-}")"
}
everywhere() { for p in "$kitchen" "$proxy" "$sleeper" "$relay" $nginx1 $nginxauto; do pin "0-$((cpus - 1))" "$p"; done; }

results="$out/results.jsonl"
: >"$results"
if [ "$what_to_run" != instructions ]; then
  for round in $(seq 1 "$ROUNDS"); do
    for mode in json sse; do
      path="/s/baseline/mcp?responseMode=$mode"
      everywhere
      if [ "$what_to_run" = all ]; then
        echo "{\"round\":$round,\"mode\":\"$mode\",\"what\":\"latency\",\"direct\":$(run "$origin$path" 1 "$kitchen"),\"proxy\":$(run "$proxy_origin$path" 1 "$proxy"),\"nospin\":$(run "$nospin_origin$path" 1 "$sleeper")$(field nginx "${nginx1_origin:-}$path" 1 "$nginx1")}" >>"$results"
      fi
      echo "{\"round\":$round,\"mode\":\"$mode\",\"what\":\"shared\",\"direct\":$(run "$origin$path" "$CONCURRENCY" "$kitchen"),\"proxy\":$(run "$proxy_origin$path" "$CONCURRENCY" "$proxy"),\"relay\":$(run "$relay_origin$path" "$CONCURRENCY" "$relay")$(field nginx "${nginx1_origin:-}$path" "$CONCURRENCY" "$nginx1")$(field nginxauto "${nginxauto_origin:-}$path" "$CONCURRENCY" "$nginxauto")}" >>"$results"
      if [ "$what_to_run" = all ]; then
        work="$path&slowReportDelayMs=$WORK_MS"
        echo "{\"round\":$round,\"mode\":\"$mode\",\"what\":\"work\",\"direct\":$(run "$origin$work" "$CONCURRENCY" "$kitchen" "" run_configured_test_scenario),\"proxy\":$(run "$proxy_origin$work" "$CONCURRENCY" "$proxy" "" run_configured_test_scenario),\"nospin\":$(run "$nospin_origin$work" "$CONCURRENCY" "$sleeper" "" run_configured_test_scenario)}" >>"$results"
      fi
      if [ "$cpus" -ge 2 ]; then
        pin 0 "$kitchen"; pin 1 "$proxy"; pin 1 "$sleeper"; pin 1 "$relay"
        [ -n "$nginx1" ] && pin 1 "$nginx1"
        echo "{\"round\":$round,\"mode\":\"$mode\",\"what\":\"dedicated\",\"direct\":$(run "$origin$path" "$CONCURRENCY" "$kitchen" 0),\"proxy\":$(run "$proxy_origin$path" "$CONCURRENCY" "$proxy" 0),\"nospin\":$(run "$nospin_origin$path" "$CONCURRENCY" "$sleeper" 0),\"relay\":$(run "$relay_origin$path" "$CONCURRENCY" "$relay" 0)$(field nginx "${nginx1_origin:-}$path" "$CONCURRENCY" "$nginx1" 0)}" >>"$results"
      fi
    done
    echo "round $round of $ROUNDS done" >&2
  done
  everywhere
fi

# Instructions per exchange under callgrind: INSTR_EXCHANGES and 2 × INSTR_EXCHANGES exchanges, each
# through a fresh process; (total(2N) - total(N)) / N.
instructions="$out/instructions.jsonl"
: >"$instructions"
# callgrind_total NAME MODE N PORT: starts "${under_test[@]}" (listening on 127.0.0.1:PORT) under
# callgrind, sends N exchanges of MODE one at a time, stops it, prints its instruction total.
callgrind_total() {
  local file="$out/callgrind.$1.$2.$3" pid sent
  valgrind --tool=callgrind --log-file="$file.valgrind" --callgrind-out-file="$file" "${under_test[@]}" >"$file.stdout" 2>"$file.stderr" &
  pid=$!
  pids+=("$pid")
  wait_port "$4" "$1 under callgrind" "$file.stderr"
  sent="$(python3 "$here/mcp_exchanges.py" "http://127.0.0.1:$4/s/baseline/mcp?responseMode=$2" "$3")"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  case "$sent" in *'"errors": 0}'*) ;; *) echo "$1 $2: exchanges failed under callgrind: $sent" >&2; exit 1 ;; esac
  awk '/^totals:/ {print $2}' "$file"
}
if [ "$what_to_run" != quick ]; then
  if ! command -v valgrind >/dev/null; then
    echo "valgrind not found: no instruction counts (apt-get install valgrind)" >&2
  else
    for mode in json sse; do
      for name in relay h1relay nospin nginx; do
        [ "$name" = nginx ] && [ -z "$nginx_bin" ] && continue
        totals=()
        for n in "$INSTR_EXCHANGES" $((2 * INSTR_EXCHANGES)); do
          port="$(free_port)"
          case "$name" in
            relay) under_test=("$bin/examples/tcp_relay" --listen "127.0.0.1:$port" --upstream "${origin#http://}") ;;
            h1relay) under_test=("$bin/examples/h1_relay" --listen "127.0.0.1:$port" --upstream "${origin#http://}") ;;
            nospin) under_test=("$proxy_bin" proxy --listen "127.0.0.1:$port" --upstream "$origin" --log "$out/cg-records.jsonl" --spin-us 0) ;;
            nginx) nginx_conf "$out/nginx-cg" "$port" 1 off
                   under_test=("$nginx_bin" -p "$out/nginx-cg" -c "$out/nginx-cg/nginx.conf" -e "$out/nginx-cg/error.log") ;;
          esac
          totals+=("$(callgrind_total "$name" "$mode" "$n" "$port")")
        done
        echo "{\"mode\":\"$mode\",\"name\":\"$name\",\"n\":$INSTR_EXCHANGES,\"total_n\":${totals[0]},\"total_2n\":${totals[1]}}" >>"$instructions"
      done
    done
  fi
fi

big=null hwm_kb=0 big_outcome=""
if [ "$what_to_run" = all ]; then
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
fi

python3 "$here/proxy_overhead_report.py" "$results" "$instructions" "$big" "$hwm_kb" "$big_outcome" "$CONCURRENCY" "$(getconf CLK_TCK)" "$WORK_MS"
