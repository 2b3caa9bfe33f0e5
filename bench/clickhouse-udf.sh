#!/usr/bin/env bash
# Throughput of the ClickHouse functions (integrations/clickhouse, run by chdb, ClickHouse
# in-process) beside `mcp-triage classify --batch --jobs 1` on the same rows, in one run, with
# ratios. Target (issue 20): each function at least 0.7x the single-threaded CLI's rows/s.
#
#   bash bench/clickhouse-udf.sh
#
# Environment: SHARED (default ../shared: the exchange generator), COUNT (default 50000), RUNS
# (default 5: the CLI and each function run alternately; the median of the pairs' ratios), JOBS
# (cargo -j, default 2). Builds the CLI in release mode first and uses
# integrations/clickhouse/.venv (made from requirements.lock when missing or stale).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SHARED="${SHARED:-${MCP_TRIAGE_SHARED:-../shared}}"
COUNT="${COUNT:-50000}"
RUNS="${RUNS:-5}"
JOBS="${JOBS:-2}"
source integrations/clickhouse/venv.sh
venv="$clickhouse_venv"
cargo build --release -p mcp-triage -j "$JOBS"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/clickhouse-bench.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" integrations/clickhouse/bench_udf.py "$(pwd)/target/release/mcp-triage" \
  "$SHARED/bench/make-exchanges.py" "$tmp" --count "$COUNT" --runs "$RUNS"
