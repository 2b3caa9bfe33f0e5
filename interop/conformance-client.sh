#!/usr/bin/env bash
# Run the official MCP conformance suite's client scenarios against our client
# (`mcp-triage conformance-client`, which reads MCP_CONFORMANCE_SCENARIO as the suite's
# reference client does). Pinned CLIs: @modelcontextprotocol/conformance 0.1.16 and, for the
# 2026-07-28 client scenarios, the 0.2.0-alpha (conformance-alpha).
#   interop/conformance-client.sh                 0.1.16: initialize, tools_call,
#                                                 elicitation-sep1034-client-defaults, sse-retry,
#                                                 and the auth scenarios ($auth_stable, 21);
#                                                 alpha: request-metadata, sep-2322-client-request-state,
#                                                 http-standard-headers, http-custom-headers,
#                                                 http-invalid-tool-headers, and the auth scenarios
#                                                 ($auth_stable and $auth_alpha, 29)
#   interop/conformance-client.sh SCENARIO…       only these (0.1.16 CLI)
#   interop/conformance-client.sh --alpha SCENARIO…   only these (alpha CLI)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"
# shellcheck source=interop/npm-deps.sh
. "$here/npm-deps.sh"
cli_stable="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
cli_alpha="$here/node_modules/conformance-alpha/dist/index.js"
# Client auth scenarios (mcp-triage as the OAuth client): the tier-1 auth suite, the
# 2025-03-26 back-compat pair, the draft ones and client-credentials-{basic,jwt}, in both CLIs...
auth_stable=(auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3
  auth/basic-cimd auth/scope-from-www-authenticate auth/scope-from-scopes-supported
  auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit
  auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
  auth/pre-registration auth/2025-03-26-oauth-metadata-backcompat
  auth/2025-03-26-oauth-endpoint-fallback auth/resource-mismatch auth/offline-access-scope
  auth/offline-access-not-supported auth/client-credentials-basic auth/client-credentials-jwt)
# ... and the alpha's 2026-07-28 ones (SEP-2352 migration, RFC 9207 iss, RFC 8414 issuer).
auth_alpha=(auth/authorization-server-migration auth/iss-supported auth/iss-not-advertised
  auth/iss-supported-missing auth/iss-wrong-issuer auth/iss-unexpected auth/iss-normalized
  auth/metadata-issuer-mismatch)
# ... and the alpha's authorization extensions (DPoP SEP-1932, SEP-990, SEP-1933): "[extension]"
# scenarios, which run without --force as long as run() passes no --spec-version.
auth_extension=(auth/dpop auth/dpop-nonce auth/enterprise-managed-authorization auth/wif-jwt-bearer)

cargo build -j 2 -q -p mcp-triage --manifest-path "$root/Cargo.toml"
bin="$root/target/debug/mcp-triage"
out="$(mktemp -d)"
rc=0
lo_only=()
if bash "$here/lo-only.sh" true 2>/dev/null; then
  lo_only=(bash "$here/lo-only.sh")
else
  echo "conformance-client: no network namespace here (unshare -n failed); mock servers bind the wildcard address" >&2
fi
# run CLI SCENARIO: one client scenario; its log is shown in full when it fails.
run() {
  local cli="$1" s="$2" log
  log="$out/${s//\//_}.log"
  echo "== conformance client scenario $s ($(basename "$(dirname "$(dirname "$cli")")"))" >&2
  # The suite's mock servers listen on the wildcard address (and read their port right after
  # listen(0), which the loopback preload breaks), so the run goes in a network namespace whose
  # only interface is loopback (interop/lo-only.sh) where the machine allows it.
  if ! timeout 120 "${lo_only[@]}" "$node22" "$cli" client --command "$bin conformance-client" --scenario "$s" \
    --timeout 30000 -o "$out" >"$log" 2>&1; then
    rc=1
    cat "$log" >&2
  else
    grep -E "Passed:|OVERALL" "$log" >&2 || true
  fi
}
if [ "${1:-}" = "--alpha" ]; then
  shift
  for s in "$@"; do run "$cli_alpha" "$s"; done
elif [ $# -gt 0 ]; then
  for s in "$@"; do run "$cli_stable" "$s"; done
else
  for s in initialize tools_call elicitation-sep1034-client-defaults sse-retry "${auth_stable[@]}"; do
    run "$cli_stable" "$s"
  done
  for s in request-metadata sep-2322-client-request-state http-standard-headers \
    http-custom-headers http-invalid-tool-headers "${auth_stable[@]}" "${auth_alpha[@]}" \
    "${auth_extension[@]}"; do
    run "$cli_alpha" "$s"
  done
fi
exit "$rc"
