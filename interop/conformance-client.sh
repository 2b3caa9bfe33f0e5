#!/usr/bin/env bash
# Run the official MCP conformance suite's client scenarios against our client
# (`mcp-triage conformance-client`, which reads MCP_CONFORMANCE_SCENARIO as the suite's
# reference client does). Pinned CLIs: @modelcontextprotocol/conformance 0.1.16 and the
# 0.2.0-alpha (conformance-alpha).
#   interop/conformance-client.sh          0.1.16: initialize, tools_call,
#                                          elicitation-sep1034-client-defaults, sse-retry and
#                                          the auth scenarios ($auth_stable);
#                                          alpha: every scenario its `list --client` names
#                                          except $skip_alpha, each at the newest revision it
#                                          lists, the extension ones (no revision) --force'd at
#                                          the newest revision there is;
#                                          then per scenario the checks passed and failed, the
#                                          totals, and the totals held to README.md's
#                                          conformance table (interop/conformance-table.mjs)
#   interop/conformance-client.sh --write  the same, rewriting the table's client rows
#   interop/conformance-client.sh SCENARIO…           only these (0.1.16 CLI), no table
#   interop/conformance-client.sh --alpha SCENARIO…   only these (alpha CLI), no table
# Exits non-zero when any check fails, any run fails, or the table does not match.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$here"
# shellcheck source=interop/npm-deps.sh
. "$here/npm-deps.sh"
cli_stable="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"
cli_alpha="$here/node_modules/conformance-alpha/dist/index.js"
# Client auth scenarios on 0.1.16 (mcp-triage as the OAuth client): the tier-1 auth suite, the
# 2025-03-26 back-compat pair, the draft ones, client-credentials-{basic,jwt} and the SEP-990
# cross-app-access flow (the alpha's enterprise-managed-authorization under its old name). The alpha
# runs these too, as part of everything its list names.
auth_stable=(auth/metadata-default auth/metadata-var1 auth/metadata-var2 auth/metadata-var3
  auth/basic-cimd auth/scope-from-www-authenticate auth/scope-from-scopes-supported
  auth/scope-omitted-when-undefined auth/scope-step-up auth/scope-retry-limit
  auth/token-endpoint-auth-basic auth/token-endpoint-auth-post auth/token-endpoint-auth-none
  auth/pre-registration auth/2025-03-26-oauth-metadata-backcompat
  auth/2025-03-26-oauth-endpoint-fallback auth/resource-mismatch auth/offline-access-scope
  auth/offline-access-not-supported auth/client-credentials-basic auth/client-credentials-jwt
  auth/cross-app-access-complete-flow)
# Alpha client scenarios not run, each with why. This list should end empty: a scenario the
# client cannot pass yet belongs here with its reason, never silently out of the list.
skip_alpha=()

cargo build -j 2 -q -p mcp-triage --manifest-path "$root/Cargo.toml"
bin="$root/target/debug/mcp-triage"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
rc=0
lo_only=()
if bash "$here/lo-only.sh" true 2>/dev/null; then
  lo_only=(bash "$here/lo-only.sh")
else
  echo "conformance-client: no network namespace here (unshare -n failed); mock servers bind the wildcard address" >&2
fi

# The alpha's client scenarios and the revisions each lists, from `list --client` at run
# time (lines `  - NAME [2025-11-25,2026-07-28]` or `  - NAME [extension]`), so a new alpha's
# scenarios run without an edit here.
declare -A revisions=()
alpha_all=()
newest=""
while read -r name revs; do
  revisions[$name]="$revs"
  alpha_all+=("$name")
  for r in ${revs//,/ }; do
    if [ "$r" != extension ] && [[ "$r" > "$newest" ]]; then newest="$r"; fi
  done
done < <("$node22" "$cli_alpha" list --client | sed -n 's/^  - \([^ ]*\) \[\(.*\)\]$/\1 \2/p')
if [ "${#revisions[@]}" -eq 0 ] || [ -z "$newest" ]; then
  echo "conformance-client: could not read the alpha's client scenarios from 'list --client'" >&2
  exit 1
fi

# alpha_flags SCENARIO: the spec-version flags it runs with: the newest revision it lists, or
# for an extension scenario (on no revision's timeline) the newest revision there is, forced.
alpha_flags() {
  local revs="${revisions[$1]:-}"
  if [ -z "$revs" ]; then
    echo "conformance-client: the alpha lists no client scenario $1" >&2
    return 1
  elif [ "$revs" = extension ]; then
    echo "--spec-version $newest --force"
  else
    echo "--spec-version ${revs##*,}"
  fi
}

# run CLI DIR SCENARIO [FLAGS…]: one client scenario, its results in DIR/<n>/ (the scenario's
# name, the CLI's exit status and the suite's checks.json); its log is shown when it fails.
run() {
  local cli="$1" dir="$2" s="$3" n log code=0
  shift 3
  n="$dir/$(printf '%03d' "$(find "$dir" -mindepth 1 -maxdepth 1 | wc -l)")"
  mkdir -p "$n"
  printf '%s\n' "$s" >"$n/scenario"
  log="$n/log"
  echo "== conformance client scenario $s ($(basename "$(dirname "$(dirname "$cli")")") $*)" >&2
  # The suite's mock servers listen on the wildcard address (and read their port right after
  # listen(0), which the loopback preload breaks), so the run goes in a network namespace whose
  # only interface is loopback (interop/lo-only.sh) where the machine allows it.
  timeout 120 "${lo_only[@]}" "$node22" "$cli" client --command "$bin conformance-client" \
    --scenario "$s" "$@" --timeout 30000 -o "$n/results" >"$log" 2>&1 || code=$?
  echo "$code" >"$n/exit"
  if [ "$code" -ne 0 ]; then
    rc=1
    cat "$log" >&2
  else
    grep -E "Passed:|OVERALL" "$log" >&2 || true
  fi
}

# table DIR KEY CLI NOT_RUN: the summary of DIR, held to (or with --write, written into) the
# README row KEY (- for none); the CLI's package version is the row's Suite.
table() {
  local version
  version="$("$node22" -p "require('$(dirname "$(dirname "$3")")/package.json').version")"
  "$node22" "$here/conformance-table.mjs" ${write:+--write} "$root/README.md" "$2" "$version" \
    "$4" "$1" || rc=1
}

write=""
if [ "${1:-}" = "--write" ]; then
  write=1
  shift
fi
if [ "${1:-}" = "--alpha" ]; then
  shift
  mkdir -p "$out/alpha"
  # shellcheck disable=SC2046 # the flags are words
  for s in "$@"; do run "$cli_alpha" "$out/alpha" "$s" $(alpha_flags "$s"); done
  table "$out/alpha" - "$cli_alpha" 0
elif [ $# -gt 0 ]; then
  mkdir -p "$out/stable"
  for s in "$@"; do run "$cli_stable" "$out/stable" "$s"; done
  table "$out/stable" - "$cli_stable" 0
else
  start=$(date +%s)
  mkdir -p "$out/stable" "$out/alpha"
  for s in initialize tools_call elicitation-sep1034-client-defaults sse-retry "${auth_stable[@]}"; do
    run "$cli_stable" "$out/stable" "$s"
  done
  not_run=0
  for s in "${alpha_all[@]}"; do
    if printf '%s\n' "${skip_alpha[@]}" | grep -qxF -- "$s"; then
      not_run=$((not_run + 1))
      echo "== conformance client scenario $s (alpha): not run, see skip_alpha" >&2
      continue
    fi
    # shellcheck disable=SC2046 # the flags are words
    run "$cli_alpha" "$out/alpha" "$s" $(alpha_flags "$s")
  done
  for s in "${skip_alpha[@]}"; do
    [ -n "${revisions[$s]:-}" ] || echo "conformance-client: skip_alpha names $s, which the alpha no longer lists" >&2
  done
  table "$out/stable" client-stable "$cli_stable" 0
  table "$out/alpha" client-alpha "$cli_alpha" "$not_run"
  echo "conformance-client: $(($(date +%s) - start)) s" >&2
fi
exit "$rc"
