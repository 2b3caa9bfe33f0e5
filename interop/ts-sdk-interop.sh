#!/usr/bin/env bash
# Run the official TypeScript SDK client (pinned @modelcontextprotocol/sdk) against the kitchen:
# baseline, errors.jsonrpc_error, errors.tool_error, elicitation.approval and two cut streams
# (interop/ts-sdk-client.mjs). Exits non-zero when an expectation fails. 127.0.0.1 only; the
# kitchen is stopped on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"
# shellcheck source=interop/npm-deps.sh
. "$here/npm-deps.sh"
cargo build -j 2 -q -p mcp-triage-kitchen --example serve --manifest-path "$root/Cargo.toml"
out="$(mktemp -d)"
"$root/target/debug/examples/serve" --listen 127.0.0.1:0 >"$out/url" 2>"$out/kitchen.log" &
kitchen_pid=$!
trap 'kill "$kitchen_pid" 2>/dev/null || true; wait "$kitchen_pid" 2>/dev/null || true; rm -rf "$out"' EXIT
for _ in $(seq 1 100); do
  [ -s "$out/url" ] && break
  sleep 0.1
done
url="$(head -n1 "$out/url")"
[ -n "$url" ] || { echo "kitchen did not start; log:" >&2; cat "$out/kitchen.log" >&2; exit 1; }
base="${url%/mcp}"
echo "kitchen at $base" >&2
timeout 120 "$node22" "$here/ts-sdk-client.mjs" "$base"
