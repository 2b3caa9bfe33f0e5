# Sourced by bindings/test.sh, bench/bindings-throughput.sh and integrations/spark/test.sh: a
# virtualenv at bindings/python/.venv with the pinned packages of bindings/python/requirements.lock
# (maturin, pytest, hypothesis and what they need, exact versions), made or refreshed when the
# lock file changed. Sets $bindings_venv.
_bindings_py="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$_bindings_py/../../scripts/pinned-venv.sh"
bindings_venv="$_bindings_py/.venv"
pinned_venv "$bindings_venv" "$_bindings_py/requirements.lock"
