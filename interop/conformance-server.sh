#!/usr/bin/env bash
# Run the official MCP conformance suite (server side) against the kitchen.
#
#   interop/conformance-server.sh                              0.1.16 --suite active, twice:
#                                                              --response-mode sse (every POST answer is
#                                                              an SSE stream, as the reference server
#                                                              does: 40 checks) and auto (JSON: 39, the
#                                                              SSE-streams check is skipped as INFO)
#   interop/conformance-server.sh --requirements 2026-07-28    the pinned 0.2.0-alpha CLI; the
#                                                              tasks-* extension scenarios it runs
#                                                              unscored count too (unscored-checks.mjs)
#   interop/conformance-server.sh --alpha [args…]              the 0.2.0-alpha CLI with these args
#   interop/conformance-server.sh [args…]                      the 0.1.16 CLI with these args
#   interop/conformance-server.sh --write [args…]              any of the above, rewriting the
#                                                              README table's rows it checks
#
# The first two forms end with a summary (checks passed and failed per scenario, and totals)
# held to their rows of README.md's conformance table (interop/conformance-table.mjs): the
# table states no count a run does not check.
#
# KITCHEN_RESPONSE_MODE=auto|json|sse picks the kitchen's response mode for the single-run forms
# (default sse). Exits non-zero when any check fails. Installs the pinned npm packages
# (package-lock.json) with `npm ci` on first use: the suite needs Node >= 22, which the npm
# package `node@22` provides. The kitchen binds 127.0.0.1 only, so no network namespace is needed
# for it; third-party servers that bind all interfaces belong inside ../shared/tools/lo-only.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"
# shellcheck source=interop/npm-deps.sh
. "$here/npm-deps.sh"
cli_stable="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
cli_alpha="$here/node_modules/conformance-alpha/dist/index.js"

cargo build -j 2 -q -p mcp-triage-kitchen --example serve --manifest-path "$root/Cargo.toml"
out="$(mktemp -d)"
kitchen_pid=""
stop_kitchen() {
  if [ -n "$kitchen_pid" ]; then
    kill "$kitchen_pid" 2>/dev/null || true
    wait "$kitchen_pid" 2>/dev/null || true
    kitchen_pid=""
  fi
}
trap 'stop_kitchen; rm -rf "$out"' EXIT

# run_suite MODE CLI ARGS… : start a kitchen in response mode MODE, run CLI against it.
run_suite() {
  local mode="$1" cli="$2"
  shift 2
  rm -f "$out/url"
  "$root/target/debug/examples/serve" --listen 127.0.0.1:0 --response-mode "$mode" \
    >"$out/url" 2>"$out/kitchen.log" &
  kitchen_pid=$!
  for _ in $(seq 1 100); do
    [ -s "$out/url" ] && break
    sleep 0.1
  done
  local url
  url="$(head -n1 "$out/url")"
  [ -n "$url" ] || { echo "kitchen did not start; log:" >&2; cat "$out/kitchen.log" >&2; return 1; }
  echo "kitchen at $url (response mode $mode)" >&2
  local rc=0
  timeout 900 "$node22" "$cli" server --url "$url" -o "$out/results-$mode" "$@" || rc=$?
  stop_kitchen
  return "$rc"
}

# table DIR KEY CLI: the summary of DIR's checks, held to (with --write: written into) the
# README row KEY; the CLI's package version is the row's Suite.
table() {
  local version
  version="$("$node22" -p "require('$(dirname "$(dirname "$3")")/package.json').version")"
  "$node22" "$here/conformance-table.mjs" ${write:+--write} "$root/README.md" "$2" "$version" 0 "$1"
}

write=""
if [ "${1:-}" = "--write" ]; then
  write=1
  shift
fi
mode="${KITCHEN_RESPONSE_MODE:-sse}"
if [ $# -eq 0 ]; then
  rc=0
  run_suite sse "$cli_stable" --suite active || rc=1
  run_suite auto "$cli_stable" --suite active || rc=1
  table "$out/results-sse" server-sse "$cli_stable" || rc=1
  table "$out/results-auto" server-json "$cli_stable" || rc=1
  exit "$rc"
elif [ "$1" = "--alpha" ]; then
  shift
  run_suite "$mode" "$cli_alpha" "$@"
elif printf '%s\n' "$@" | grep -qx -- '--requirements'; then
  rc=0
  run_suite "$mode" "$cli_alpha" "$@" || rc=$?
  # The CLI runs the tasks extension scenarios "not scored" (outside its exit status); the
  # kitchen serves the extension, so they count here: every check passes, all ten ran.
  "$node22" "$here/unscored-checks.mjs" "$out/results-$mode" tasks- 10 || rc=1
  if [ "$*" = "--requirements 2026-07-28" ] && [ "$mode" = sse ]; then
    table "$out/results-$mode" server-2026-07-28 "$cli_alpha" || rc=1
  fi
  exit "$rc"
else
  run_suite "$mode" "$cli_stable" "$@"
fi
