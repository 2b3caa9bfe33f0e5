#!/usr/bin/env bash
# Run the official MCP conformance suite (server side) against the kitchen.
#
#   interop/conformance-server.sh [extra conformance args…]     (default: --suite active)
#
# Installs the pinned npm packages (package-lock.json) on first use: the suite needs Node >= 22,
# which the npm package `node@22` provides. The kitchen binds 127.0.0.1 only, so no network
# namespace is needed for it; third-party servers that bind all interfaces belong inside
# ../shared/tools/lo-only.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"
if [ ! -x node_modules/.bin/node ] || [ ! -f node_modules/@modelcontextprotocol/conformance/dist/index.js ]; then
  npm ci --no-audit --no-fund >&2
fi
node22="$here/node_modules/.bin/node"
suite_cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"

cargo build -j 2 -q -p mcp-triage-kitchen --example serve --manifest-path "$root/Cargo.toml"
out="$(mktemp -d)"
"$root/target/debug/examples/serve" --listen 127.0.0.1:0 >"$out/url" 2>"$out/kitchen.log" &
kitchen_pid=$!
trap 'kill "$kitchen_pid" 2>/dev/null || true; wait "$kitchen_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  [ -s "$out/url" ] && break
  sleep 0.1
done
url="$(head -n1 "$out/url")"
[ -n "$url" ] || { echo "kitchen did not start; log:" >&2; cat "$out/kitchen.log" >&2; exit 1; }
echo "kitchen at $url" >&2
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(--suite active)
timeout 600 "$node22" "$suite_cli" server --url "$url" -o "$out/results" "${args[@]}"
