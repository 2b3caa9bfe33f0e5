#!/usr/bin/env bash
# The ClickHouse functions of this directory inside a real ClickHouse engine (chdb, ClickHouse
# in-process, pinned in requirements.lock) against `mcp-triage classify --batch`: every function
# (basic and full form, executable and executable_pool, TabSeparated and JSONEachRow) must give
# the CLI's outcome counts over the same generated exchanges, and bad rows an error in place.
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
tmp="$(mktemp -d "${TMPDIR:-/tmp}/clickhouse-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" "$here/test_udf.py" "$(pwd)/target/debug/mcp-triage" "$gen" "$tmp" --count "$COUNT"
