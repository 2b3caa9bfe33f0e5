# Sourced by integrations/clickhouse/test.sh and bench/clickhouse-udf.sh: a virtualenv at
# integrations/clickhouse/.venv with chdb (ClickHouse in-process) and what it needs, the exact
# versions of requirements.lock, made or refreshed when the lock file changed. Sets $clickhouse_venv.
_clickhouse_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
clickhouse_venv="$_clickhouse_dir/.venv"
if [ ! -x "$clickhouse_venv/bin/python" ] ||
  ! cmp -s "$_clickhouse_dir/requirements.lock" "$clickhouse_venv/requirements.lock"; then
  rm -rf "$clickhouse_venv"
  python3 -m venv "$clickhouse_venv" >&2
  "$clickhouse_venv/bin/pip" install --quiet --disable-pip-version-check --no-input \
    -r "$_clickhouse_dir/requirements.lock" >&2
  cp "$_clickhouse_dir/requirements.lock" "$clickhouse_venv/requirements.lock"
fi
