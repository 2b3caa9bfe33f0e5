# Sourced by integrations/clickhouse/test.sh and bench/clickhouse-udf.sh: a virtualenv at
# integrations/clickhouse/.venv with chdb (ClickHouse in-process) and what it needs, the exact
# versions of requirements.lock. Sets $clickhouse_venv.
_clickhouse_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$_clickhouse_dir/../../scripts/pinned-venv.sh"
clickhouse_venv="$_clickhouse_dir/.venv"
pinned_venv "$clickhouse_venv" "$_clickhouse_dir/requirements.lock"
