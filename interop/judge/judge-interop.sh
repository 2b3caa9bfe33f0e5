#!/usr/bin/env bash
# `mcp-triage judge` and its reports checked with software nobody here wrote (127.0.0.1 only):
#   1. the deliberately bad client (bad-client.py) must fail; its JUnit report must be read by
#      junitparser (PyPI, pinned) with the right counts, and its HTML report must render in
#      headless Chromium (Debian's `chromium`): screenshot not blank, key numbers in the DOM;
#   2. `mcp-triage report` over the record fixture: HTML rendered and checked the same way;
#   3. the pinned third-party clients are judged (TypeScript SDK v1 and v2, Python SDK,
#      inspector-cli, the Vercel AI SDK MCP client, FastMCP, the OpenAI Agents SDK): each must
#      produce the full matrix; their checks may fail (those are their gaps, see docs/judge/).
#      With --record, their matrices are written to docs/judge/;
#   4. when the binary has `mcp-triage call`, it is judged too and must pass every check
#      (JUDGE_CALL=strict|report|skip, default strict).
#
#   bash interop/judge/judge-interop.sh [--record]
# Needs: python3 (venv), node/npm (interop/npm-deps.sh), chromium. JUDGE_TIMEOUT (s, default
# 10; --record uses 20) bounds each client run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
record=0
[ "${1:-}" = "--record" ] && record=1
# shellcheck source=interop/npm-deps.sh
. "$here/../npm-deps.sh"
# shellcheck source=interop/python-deps.sh
. "$here/../python-deps.sh"
judge_python="$venv_python"
command -v chromium >/dev/null || { echo "chromium is missing (apt-get install chromium)" >&2; exit 1; }
cargo build -j 2 -q -p mcp-triage --manifest-path "$root/Cargo.toml"
bin="$root/target/debug/mcp-triage"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cd "$root"

chrome() { # chrome OUT_PREFIX FILE.html: screenshot + DOM dump, no network, throwaway profile
  local profile
  profile="$(mktemp -d)"
  local flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --user-data-dir="$profile")
  timeout 60 chromium "${flags[@]}" --window-size=1280,1600 --screenshot="$1.png" "file://$2" >/dev/null 2>&1
  timeout 60 chromium "${flags[@]}" --dump-dom "file://$2" >"$1.dom.html" 2>/dev/null
  rm -rf "$profile"
}
check() { "$judge_python" "$here/check_reports.py" "$@"; }

echo "== judge: the deliberately bad client" >&2
set +e
"$bin" judge --client "python3 interop/judge/bad-client.py {url}" --name bad-client \
  --report "junit:$out/bad.xml" --report "html:$out/bad.html" --report "json:$out/bad.json" \
  --report "tap:$out/bad.tap" >"$out/bad.txt"
rc=$?
set -e
[ "$rc" = 1 ] || { cat "$out/bad.txt"; echo "bad client: exit $rc, expected 1" >&2; exit 1; }
read -r pass fail skip total < <("$judge_python" -c '
import json,sys; c=json.load(open(sys.argv[1]))["counts"]; print(c["pass"], c["fail"], c["n/a"], c["pass"]+c["fail"]+c["n/a"])' "$out/bad.json")
[ "$fail" -ge 9 ] || { cat "$out/bad.txt"; echo "bad client failed only $fail checks" >&2; exit 1; }
check junit "$out/bad.xml" "$total" "$fail" "$skip"
grep -q "^not ok " "$out/bad.tap"
chrome "$out/bad" "$out/bad.html"
check png "$out/bad.png"
check dom "$out/bad.dom.html" "count-pass=$pass" "count-fail=$fail" "count-skip=$skip" "count-total=$total"

echo "== report: call records" >&2
set +e
"$bin" report crates/mcp-triage/tests/fixtures/calls.jsonl --html "$out/calls.html" >"$out/calls.txt"
rc=$?
set -e
[ "$rc" = 1 ] || { echo "report: exit $rc, expected 1 (the fixture has an unsafe retry)" >&2; exit 1; }
chrome "$out/calls" "$out/calls.html"
check png "$out/calls.png"
check dom "$out/calls.dom.html" count-fail=1 count-pass=2 count-total=3

timeout_s="${JUDGE_TIMEOUT:-10}"
[ "$record" = 1 ] && timeout_s=20
node22v="$("$node22" --version)"
ts_v="$("$node22" -p 'require("./interop/node_modules/@modelcontextprotocol/sdk/package.json").version')"
insp_v="$("$node22" -p 'require("./interop/node_modules/@modelcontextprotocol/inspector-cli/package.json").version')"
ts2_v="$("$node22" -p 'require("./interop/node_modules/@modelcontextprotocol/client/package.json").version')"
aisdk_v="$("$node22" -p 'require("./interop/node_modules/@ai-sdk/mcp/package.json").version')"
pyver() { "$judge_python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "$1"; }
py_v="$(pyver mcp)"
fastmcp_v="$(pyver fastmcp)"
agents_v="$(pyver openai-agents)"
judge_one() { # judge_one SLUG NAME CMD
  set +e
  "$bin" judge --client "$3" --name "$2" --timeout "$timeout_s" \
    --report "json:$out/$1.json" --report "html:$out/$1.html" >"$out/$1.txt"
  local rc=$?
  set -e
  cat "$out/$1.txt"
  [ "$rc" -le 1 ] || { echo "$2: judge exit $rc" >&2; exit 1; }
  # Every case must have graded something, and the baseline call must succeed: a client that
  # never reached the kitchen (a broken script, a missing package) is a broken setup, not a
  # matrix of its gaps.
  "$judge_python" -c '
import json,sys; r=json.load(open(sys.argv[1]))
cases=r["suites"][0]["cases"]
silent=[c["name"] for c in cases if not c.get("journal")]
assert not silent, f"no request reached the kitchen in {silent}"
# A baseline call that does not end with exit 0 is a broken script (e.g. a library attribute
# misnamed), not a gap of the library.
base=next(c for c in cases if c["name"] == "baseline")
assert base["output"].startswith("exit: 0\n"), "baseline did not succeed:\n" + base["output"]' "$out/$1.json"
  "$judge_python" -c '
import json,sys; r=json.load(open(sys.argv[1])); n=len(r["suites"][0]["cases"])
want=int(sys.argv[2])
assert n == want, f"{n} cases, judge --list has {want}"' "$out/$1.json" "$("$bin" judge --list | wc -l)"
  if [ "$record" = 1 ]; then
    mkdir -p docs/judge
    {
      echo "# mcp-triage judge: $2"
      echo
      echo "Recorded $(date -u +%F) with \`bash interop/judge/judge-interop.sh --record\` (timeout ${timeout_s} s per case)."
      echo "Client: $2; Node $node22v; Python $(python3 --version | cut -d' ' -f2); mcp-triage $("$bin" --version | cut -d' ' -f2)."
      echo "Command: \`${3//$root\//}\`"
      echo
      echo '```text'
      cat "$out/$1.txt"
      echo '```'
    } >"docs/judge/$1.md"
  fi
}
# The third-party clients are judged side by side, JUDGE_JOBS (default 3) at a time: each judge
# runs its own kitchens on port 0, and most of a case's time is a client waiting for its own
# timeout on a cut stream (10 s), not CPU; one after another they took over 5 minutes of CI.
# Each one's account goes to its own log, printed in order once all are done.
judged=()
judge_bg() { # judge_bg SLUG NAME CMD: judge_one in the background, its account in $out/SLUG.log
  while [ "$(jobs -rp | wc -l)" -ge "${JUDGE_JOBS:-3}" ]; do sleep 0.2; done
  (echo "== judge: $2"; judge_one "$@") >"$out/$1.log" 2>&1 &
  judged+=("$1:$!")
}
judge_bg ts-sdk "TypeScript SDK $ts_v" "interop/node_modules/.bin/node interop/judge/ts-sdk-client.mjs {url}"
judge_bg python-sdk "Python SDK mcp $py_v" "$judge_python interop/judge/python-sdk-client.py {url}"
judge_bg inspector-cli "inspector-cli $insp_v" "bash interop/judge/inspector-cli.sh {url}"
judge_bg ts-sdk-v2 "TypeScript SDK v2 @modelcontextprotocol/client $ts2_v" "interop/node_modules/.bin/node interop/judge/ts-sdk-v2-client.mjs {url}"
judge_bg ai-sdk "Vercel AI SDK @ai-sdk/mcp $aisdk_v" "interop/node_modules/.bin/node interop/judge/ai-sdk-client.mjs {url}"
judge_bg fastmcp "FastMCP fastmcp $fastmcp_v" "$judge_python interop/judge/fastmcp-client.py {url}"
judge_bg openai-agents "OpenAI Agents SDK openai-agents $agents_v" "$judge_python interop/judge/openai-agents-client.py {url}"
failed=()
for j in "${judged[@]}"; do
  slug="${j%%:*}"
  if ! wait "${j##*:}"; then failed+=("$slug"); fi
  cat "$out/$slug.log"
done
[ ${#failed[@]} = 0 ] || { echo "judge interop failed for: ${failed[*]}" >&2; exit 1; }
# Our own client must pass every check (issue 6 acceptance). JUDGE_CALL=strict (default) fails
# the run when it does not, report only prints its matrix, skip leaves it out. Skipped by itself
# while this binary has no `call` command.
if [ "${JUDGE_CALL:-strict}" != skip ] && "$bin" call --help >/dev/null 2>&1; then
  echo "== judge: mcp-triage call" >&2
  answer='elicitation/create={"action":"accept","content":{"reason":"approved by the judge run","confirm":true}}'
  # OAuth on: the auth.* cases need it (the kitchen's authorization server approves by
  # redirect, which --authorize follow follows); the other cases never see a 401. No token
  # cache, so each case authorizes afresh.
  # --task: the tasks.* cases are followed as tasks (a tool without task support runs as
  # before); the answer also confirms confirm_delete's input inside its task.
  call_cmd="$bin call {url} \"\$MCP_TRIAGE_TOOL\" --args \"\$MCP_TRIAGE_ARGS\" --oauth --authorize follow --no-token-store --task --answer '$answer'"
  set +e
  "$bin" judge --name "mcp-triage call" --timeout "$timeout_s" --report "junit:$out/call.xml" \
    --client "$call_cmd" >"$out/call.txt"
  rc=$?
  cat "$out/call.txt"
  # The same client held to the legacy era: resumption and re-initialisation are graded too.
  echo "== judge: mcp-triage call --protocol-version 2025-11-25" >&2
  "$bin" judge --name "mcp-triage call --protocol-version 2025-11-25" --timeout "$timeout_s" \
    --client "${call_cmd/--answer/--protocol-version 2025-11-25 --answer}" >"$out/call-legacy.txt"
  rc_legacy=$?
  cat "$out/call-legacy.txt"
  [ "$rc" != 0 ] || rc=$rc_legacy
  set -e
  if [ "$record" = 1 ]; then
    {
      echo "# mcp-triage judge: mcp-triage call (this repository)"
      echo
      echo "Recorded $(date -u +%F) with \`bash interop/judge/judge-interop.sh --record\` (timeout ${timeout_s} s per case)."
      echo "mcp-triage $("$bin" --version | cut -d' ' -f2). Command (the second run adds \`--protocol-version 2025-11-25\`):"
      echo
      echo "\`${call_cmd//$root\//}\`"
      echo
      echo '```text'
      cat "$out/call.txt"
      echo
      cat "$out/call-legacy.txt"
      echo '```'
    } >docs/judge/mcp-triage-call.md
  fi
  if [ "$rc" != 0 ] && [ "${JUDGE_CALL:-strict}" = strict ]; then
    echo "mcp-triage call did not pass every judge check (exit $rc)" >&2
    exit 1
  fi
fi
echo "judge interop: all reports checked" >&2
