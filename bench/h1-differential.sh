#!/usr/bin/env bash
# Issue 41's differential harness, long: generated HTTP/1.1 traffic (valid MCP exchanges and
# the smuggling/desync families) through the proxy to a raw upstream, in a release build,
# with the figures the issue asks for: messages, desyncs, extra upstream requests,
# disagreements (bodies, statuses, records), RFC violations, seconds.
#
#   bash bench/h1-differential.sh                 # >= 1,000,000 messages
#   H1DIFF_CASES=20000 bash bench/h1-differential.sh
#
# Environment: H1DIFF_CASES (default 170000 cases, about 6 messages each: over a million
# messages), H1DIFF_SEED (default: the test's seed; any failure prints the line that replays
# it alone, `H1DIFF_SEED=… H1DIFF_CASE=… cargo test -p mcp-triage-proxy --test h1_differential`),
# H1DIFF_WORKERS (connections at once, default 12), NGINX_CASES (default 5000: the nginx
# comparison; 0 skips it), JOBS (cargo -j, default 1), PROFILE (default release; `debug`
# reuses the test command's build, for a quick look at the script on a busy machine).
# Only 127.0.0.1 is used. Exit status: 0 when the run has no failure, 1 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export H1DIFF_CASES="${H1DIFF_CASES:-170000}"
NGINX_CASES="${NGINX_CASES:-5000}"
JOBS="${JOBS:-1}"
PROFILE="${PROFILE:-release}"
case "$PROFILE" in
  release) cargo_profile=(--release) ;;
  debug) cargo_profile=() ;;
  *) echo "h1-differential: PROFILE must be release or debug, not $PROFILE" >&2; exit 2 ;;
esac
export RUST_BACKTRACE=0
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo "== building the harness ($PROFILE)"
cargo test ${cargo_profile[@]+"${cargo_profile[@]}"} -j "$JOBS" -p mcp-triage-proxy --test h1_differential --no-run

echo "== ${H1DIFF_CASES} cases through the proxy"
status=0
cargo test ${cargo_profile[@]+"${cargo_profile[@]}"} -j "$JOBS" -p mcp-triage-proxy --test h1_differential -- \
  --exact generated_traffic_through_the_proxy_keeps_its_meaning --nocapture >"$out/proxy.txt" 2>&1 || status=1
line="$(grep -m1 '^h1diff proxy:' "$out/proxy.txt" || true)"
if [ -z "$line" ]; then
  echo "h1-differential: the run printed no figures:" >&2
  tail -40 "$out/proxy.txt" >&2
  exit 1
fi
# The figures, one per line, then the failing families with a replay line each.
echo "$line" | tr ' ' '\n' | grep '=' | sed 's/^/  /'
# (awk stops itself: a `head` here would end the script by SIGPIPE under pipefail)
awk '/^h1diff proxy:/{p=1; next} p && /^  / && n++ < 200 {print} p && !/^  /{exit}' "$out/proxy.txt"

if [ "$NGINX_CASES" != 0 ]; then
  echo "== nginx beside the proxy on ${NGINX_CASES} cases"
  H1DIFF_NGINX_CASES="$NGINX_CASES" cargo test ${cargo_profile[@]+"${cargo_profile[@]}"} -j "$JOBS" -p mcp-triage-proxy \
    --test h1_differential -- --exact nginx_agrees_where_the_rfc_leaves_no_choice --nocapture \
    >"$out/nginx.txt" 2>&1 || status=1
  grep -E '^(h1diff nginx|  where|  \||  H1DIFF)' "$out/nginx.txt" | awk '!seen[$0]++ && n++ < 80'
fi

if [ "$status" = 0 ]; then echo "RESULT: no failure"; else echo "RESULT: failures (above)"; fi
exit "$status"
