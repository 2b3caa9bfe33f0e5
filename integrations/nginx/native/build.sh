#!/usr/bin/env bash
# build.sh: the native nginx module, ngx_http_mcp_triage_module.so, for the nginx installed here
# (Debian's nginx-dev: the headers and configure flags of the packaged nginx, so the module is
# binary-compatible with it), linked with the staticlib of crates/mcp-triage-ffi.
#   integrations/nginx/native/build.sh [--profile release|debug] [--out DIR]
#   (default: release, DIR = target/<profile>/nginx; prints the module's path)
# Builds the staticlib with cargo when it is missing (JOBS=1 for cargo -j).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
profile=release out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
src=/usr/share/nginx/src
[ -f "$src/conf_flags" ] || { echo "build.sh: $src missing (apt-get install nginx-dev)" >&2; exit 1; }
lib="$root/target/$profile"
if [ ! -f "$lib/libmcp_triage_ffi.a" ]; then
  flag=(); [ "$profile" = release ] && flag=(--release)
  echo "build.sh: building the mcp-triage-ffi staticlib first (cargo; a few minutes from scratch)" >&2
  cargo build -j "${JOBS:-1}" -q "${flag[@]}" -p mcp-triage-ffi --lib --manifest-path "$root/Cargo.toml" >&2
fi
out="${out:-$lib/nginx}"
mkdir -p "$out"
work="$(mktemp -d "${TMPDIR:-/tmp}/mcpt-ngx-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -r "$src/." "$work/"
# shellcheck disable=SC1091
. "$work/conf_flags"
(
  cd "$work"
  MCPT_FFI_LIB_DIR="$lib" MCPT_FFI_INCLUDE_DIR="$root/crates/mcp-triage-ffi/include" \
    ./configure "${NGX_CONF_FLAGS[@]}" --with-cc-opt="-O2 -Wall -Werror" \
    --add-dynamic-module="$here" >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log" >&2; exit 1; }
  make -f objs/Makefile modules >"$work/make.log" 2>&1 || { cat "$work/make.log" >&2; exit 1; }
)
cp "$work/objs/ngx_http_mcp_triage_module.so" "$out/"
echo "$out/ngx_http_mcp_triage_module.so"
