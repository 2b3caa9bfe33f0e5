#!/usr/bin/env bash
# run.sh: nginx with the mcp-triage module in front of one MCP server, in the foreground.
#   integrations/nginx/run.sh --listen 127.0.0.1:8080 --upstream http://127.0.0.1:8765 --log calls.jsonl
#   options: --so PATH (libmcp_triage_ffi.so), --metrics ADDR (default 127.0.0.1:9145),
#            --workers N (default 1), --prefix DIR (scratch dir; default mktemp -d),
#            --plain (the same config without the module: the benchmark's baseline),
#            --floor (lua-nginx-module loaded, the four phases present but empty, the plain
#                     access log: what any Lua module in these phases costs at least),
#            --native (the native C module instead of the Lua one: native/build.sh builds
#                      target/release/nginx/ngx_http_mcp_triage_module.so when missing),
#            --module PATH (the native module's .so; implies --native),
#            --config-only (write the config, print the nginx command, do not start it),
#            --error-level LEVEL (nginx's error_log level, default warn),
#            --max-body-bytes N (largest request body classified, default 1048576)
# Writes nginx.conf + mcp_triage.conf into the scratch dir and execs
#   nginx -p DIR -c DIR/nginx.conf -g 'daemon off;'
# Addresses are loopback unless you pass another one explicitly.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
listen=127.0.0.1:8080 upstream="" log="" so="" metrics=127.0.0.1:9145 workers=1 prefix="" plain=0 floor=0
error_level=warn config_only=0 max_body=1048576 native=0 module=
die() { echo "run.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --listen) listen="${2:?--listen needs ADDR}"; shift 2 ;;
    --upstream) upstream="${2:?--upstream needs URL}"; shift 2 ;;
    --log) log="${2:?--log needs FILE}"; shift 2 ;;
    --so) so="${2:?--so needs PATH}"; shift 2 ;;
    --metrics) metrics="${2:?--metrics needs ADDR}"; shift 2 ;;
    --workers) workers="${2:?--workers needs N}"; shift 2 ;;
    --prefix) prefix="${2:?--prefix needs DIR}"; shift 2 ;;
    --error-level) error_level="${2:?}"; shift 2 ;;
    --plain) plain=1; shift ;;
    --floor) floor=1; shift ;;
    --config-only) config_only=1; shift ;;
    --native) native=1; shift ;;
    --module) module="${2:?--module needs PATH}"; native=1; shift 2 ;;
    --max-body-bytes) max_body="${2:?--max-body-bytes needs N}"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ "$plain$floor" != 11 ] || die "--plain and --floor exclude each other"
[ "$native" = 0 ] || [ "$plain$floor" = 00 ] || die "--native excludes --plain and --floor"
[ -n "$upstream" ] || die "--upstream URL is required (http://host:port of the MCP server)"
[ -n "$log" ] || die "--log FILE is required (the JSON lines, one per tools/call)"
case "$upstream" in
  http://*) authority="${upstream#http://}"; authority="${authority%/}" ;;
  *) die "--upstream $upstream: expected http://host:port" ;;
esac
case "$authority" in */*|"") die "--upstream $upstream: expected http://host:port, no path" ;; esac
case "$max_body" in ""|*[!0-9]*) die "--max-body-bytes $max_body: expected a number of bytes" ;; esac
case "$listen" in *:*) ;; *) listen="127.0.0.1:$listen" ;; esac
case "$metrics" in *:*) ;; *) metrics="127.0.0.1:$metrics" ;; esac
command -v nginx >/dev/null || die "nginx not found (Debian: apt-get install nginx-light libnginx-mod-http-lua lua-resty-core)"
[ "$native" = 1 ] || [ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ] || die "the lua module is missing (apt-get install libnginx-mod-http-lua lua-resty-core)"
if [ "$native" = 1 ]; then
  if [ -z "$module" ]; then
    module="$root/target/release/nginx/ngx_http_mcp_triage_module.so"
    [ -f "$module" ] || "$here/native/build.sh" >&2
  fi
  [ -f "$module" ] || die "--module $module: no such file"
  module="$(cd "$(dirname "$module")" && pwd)/$(basename "$module")"
else
  # the Lua module loads the library; the native one links it statically (--so is ignored)
  if [ -z "$so" ]; then
    so="$root/target/release/libmcp_triage_ffi.so"
    if [ ! -f "$so" ]; then
      echo "run.sh: building $so" >&2
      (cd "$root" && cargo build --release -p mcp-triage-ffi -j 2 >&2)
    fi
  fi
  [ -f "$so" ] || die "--so $so: no such file"
  so="$(cd "$(dirname "$so")" && pwd)/$(basename "$so")"
fi
case "$log" in /*) ;; *) log="$PWD/$log" ;; esac
[ -n "$prefix" ] || prefix="$(mktemp -d "${TMPDIR:-/tmp}/mcp-triage-nginx.XXXXXX")"
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
subst() {
  sed -e "s#@PREFIX@#$prefix#g" -e "s#@LISTEN@#$listen#g" -e "s#@METRICS_LISTEN@#$metrics#g" \
      -e "s#@UPSTREAM_AUTHORITY@#$authority#g" -e "s#@SERVER@#$authority#g" -e "s#@LOG@#$log#g" \
      -e "s#@SO@#$so#g" -e "s#@LUA_DIR@#$here#g" -e "s#@WORKERS@#$workers#g" \
      -e "s#@ERROR_LEVEL@#$error_level#g" -e "s#@MAX_BODY@#$max_body#g" -e "s#@MODULE@#$module#g" "$1"
}
if [ "$native" = 1 ]; then
  subst "$here/nginx.native.conf.template" > "$prefix/nginx.conf"
else
  subst "$here/mcp_triage.conf" > "$prefix/mcp_triage.conf"
  subst "$here/nginx.conf.template" > "$prefix/nginx.conf"
fi
if [ "$plain" = 1 ]; then
  # the baseline: the same nginx and proxy settings, no Lua at all, nginx's usual access log
  sed -i -e '/load_module.*\(ndk\|lua\)/d' -e '/mcp_triage.conf/d' -e '/_by_lua_block/d' \
      -e '/set \$mcp_/d' -e "s#access_log .*#access_log $log combined;#" "$prefix/nginx.conf"
fi
if [ "$floor" = 1 ]; then
  # the design's floor: the module's configuration with empty phase handlers (lua-nginx-module
  # still enters each phase and runs an empty chunk) and the baseline's access log
  sed -i -e 's#\(\(access\|header_filter\|body_filter\|log\)_by_lua_block\) {.*}#\1 { }#' \
      -e "s#access_log .*#access_log $log combined;#" "$prefix/nginx.conf"
  sed -i -e '/init_worker_by_lua_block/d' "$prefix/mcp_triage.conf"
fi
if [ "$config_only" = 1 ]; then
  echo "nginx -p $prefix -c $prefix/nginx.conf -g 'daemon off;'"
  exit 0
fi
echo "run.sh: nginx on http://$listen -> $upstream, log $log, metrics http://$metrics/metrics, conf $prefix/nginx.conf" >&2
exec nginx -p "$prefix" -c "$prefix/nginx.conf" -g 'daemon off;'
