#!/usr/bin/env bash
# The ClickHouse functions of this directory inside a real ClickHouse engine (chdb, ClickHouse
# in-process, pinned in requirements.lock) against `mcp-triage classify --batch`: every function
# (basic and full form, executable and executable_pool, TabSeparated and JSONEachRow) must give
# the CLI's outcome counts over the same generated exchanges, and bad rows an error in place;
# the capture function, over a capture of the demo plan through the proxy, classify --batch's
# per-kind counts and the proxy records' tool-call outcomes (test_capture.py).
#
#   bash integrations/clickhouse/test.sh        (COUNT=20000 exchanges by default)
#
# Environment: SHARED (default ../shared beside the checkout: the exchange generator), COUNT,
# JOBS (cargo -j, default 2). Makes integrations/clickhouse/.venv when the lock file changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.."
SHARED="${SHARED:-${MCP_TRIAGE_SHARED:-../shared}}"
COUNT="${COUNT:-20000}"
JOBS="${JOBS:-2}"
gen="$SHARED/bench/make-exchanges.py"
[ -f "$gen" ] || { echo "clickhouse test: $gen not found (set SHARED=...)" >&2; exit 2; }

source integrations/clickhouse/venv.sh
venv="$clickhouse_venv"

cargo build -p mcp-triage -j "$JOBS"
# procs.sh: a scratch directory $out removed on exit, the processes of $pids stopped on exit.
source interop/procs.sh
tmp="$out"
"$venv/bin/python" "$here/test_udf.py" "$(pwd)/target/debug/mcp-triage" "$gen" "$tmp" --count "$COUNT"

# A real capture: the demo plan through `mcp-triage proxy --capture` in front of the kitchen, then
# the capture function over it (kinds and tool calls against classify --batch and the records).
bin="$(pwd)/target/debug/mcp-triage"
kport=$(free_port)
"$bin" kitchen --listen "127.0.0.1:$kport" >"$tmp/kitchen.log" 2>&1 &
pids+=($!)
wait_port "$kport" kitchen "$tmp/kitchen.log"
pport=$(free_port)
"$bin" proxy --listen "127.0.0.1:$pport" --upstream "http://127.0.0.1:$kport" \
  --log "$tmp/records.jsonl" --capture "$tmp/capture.jsonl" >"$tmp/proxy.log" 2>&1 &
proxy=$!
pids+=($proxy)
wait_port "$pport" proxy "$tmp/proxy.log"
# The demo's own verdicts are not this test's subject (some rows expect a direct connection).
"$bin" demo --kitchen "http://127.0.0.1:$pport" >"$tmp/demo.txt" 2>&1 || true
kill -TERM "$proxy"; wait "$proxy" || true  # drained: capture and records complete
"$venv/bin/python" "$here/test_capture.py" "$bin" "$tmp/capture.jsonl" "$tmp/records.jsonl" "$tmp"
