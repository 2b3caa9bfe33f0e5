# Sourced by the interop scripts: a virtualenv at interop/.venv with the pinned Python packages of
# interop/python/requirements.lock (the Python MCP SDK, fastmcp and openai-agents, the MCP clients
# interop/judge/ grades, and what they need, plus junitparser, the JUnit XML consumer
# interop/judge/ checks mcp-triage's reports with: exact versions, `pip freeze` of a venv made
# from the previous lock plus the new pins, `pip check` clean), made or
# refreshed when the lock file changed. Sets $venv_python.
_py_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_venv="$_py_dir/.venv"
_lock="$_py_dir/python/requirements.lock"
if [ ! -x "$_venv/bin/python" ] || ! cmp -s "$_lock" "$_venv/requirements.lock"; then
  rm -rf "$_venv"
  python3 -m venv "$_venv" >&2
  "$_venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$_lock" >&2
  cp "$_lock" "$_venv/requirements.lock"
fi
venv_python="$_venv/bin/python"
