# Sourced by bindings/test.sh and bench/bindings-throughput.sh: a virtualenv at
# bindings/python/.venv with the pinned packages of bindings/python/requirements.lock (maturin,
# pytest, hypothesis and what they need, exact versions), made or refreshed when the lock file
# changed. Sets $bindings_venv.
_bindings_py="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bindings_venv="$_bindings_py/.venv"
if [ ! -x "$bindings_venv/bin/python" ] ||
  ! cmp -s "$_bindings_py/requirements.lock" "$bindings_venv/requirements.lock"; then
  rm -rf "$bindings_venv"
  python3 -m venv "$bindings_venv" >&2
  "$bindings_venv/bin/pip" install --quiet --disable-pip-version-check --no-input \
    -r "$_bindings_py/requirements.lock" >&2
  cp "$_bindings_py/requirements.lock" "$bindings_venv/requirements.lock"
fi
