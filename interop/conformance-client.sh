#!/usr/bin/env bash
# Run the official MCP conformance suite's client scenarios against our client
# (`mcp-triage conformance-client`, which reads MCP_CONFORMANCE_SCENARIO as the suite's
# reference client does). Pinned CLI: @modelcontextprotocol/conformance 0.1.16.
#   interop/conformance-client.sh                 initialize, tools_call,
#                                                 elicitation-sep1034-client-defaults, sse-retry
#   interop/conformance-client.sh SCENARIO…       only these
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"
# shellcheck source=interop/npm-deps.sh
. "$here/npm-deps.sh"
cli="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"

cargo build -j 2 -q -p mcp-triage --manifest-path "$root/Cargo.toml"
bin="$root/target/debug/mcp-triage"
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  scenarios=(initialize tools_call elicitation-sep1034-client-defaults sse-retry)
fi
out="$(mktemp -d)"
rc=0
for s in "${scenarios[@]}"; do
  echo "== conformance client scenario $s" >&2
  if ! timeout 120 "$node22" "$cli" client --command "$bin conformance-client" --scenario "$s" \
    --timeout 30000 -o "$out" >"$out/$s.log" 2>&1; then
    rc=1
    cat "$out/$s.log" >&2
  else
    grep -E "Passed:|OVERALL" "$out/$s.log" >&2 || true
  fi
done
exit "$rc"
