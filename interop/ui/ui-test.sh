#!/usr/bin/env bash
# The live page of `mcp-triage proxy --ui` in headless Chromium (Debian's /usr/bin/chromium,
# driven by playwright-core pinned in interop/package-lock.json; no browser is downloaded):
# kitchen and proxy on 127.0.0.1, calls with known verdicts, DOM assertions after each call
# without reloading the page, then a screenshot that must not be blank (check_reports.py png).
#
#   interop/ui/ui-test.sh [SCREENSHOT.png]   (MCP_TRIAGE=path to use a built binary)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=interop/npm-deps.sh
. "$here/../npm-deps.sh"
# shellcheck source=interop/procs.sh
. "$here/../procs.sh"
[ -x /usr/bin/chromium ] || { echo "chromium is missing (apt-get install chromium)" >&2; exit 1; }
bin="${MCP_TRIAGE:-$root/target/debug/mcp-triage}"
[ -n "${MCP_TRIAGE:-}" ] || cargo build -j 2 -q -p mcp-triage --manifest-path "$root/Cargo.toml"
shot="${1:-$out/ui.png}"

kport="$(free_port)"
"$bin" kitchen --listen "127.0.0.1:$kport" >"$out/kitchen.log" 2>&1 &
pids+=($!)
wait_port "$kport" kitchen "$out/kitchen.log"
pport="$(free_port)"
uport="$(free_port)"
"$bin" proxy --listen "127.0.0.1:$pport" --upstream "http://127.0.0.1:$kport" \
  --ui "127.0.0.1:$uport" --log "$out/records.jsonl" >"$out/proxy.log" 2>&1 &
pids+=($!)
wait_port "$uport" "proxy --ui" "$out/proxy.log"
wait_port "$pport" proxy "$out/proxy.log"

timeout 120 "$node22" "$here/ui-test.mjs" "http://127.0.0.1:$uport/" "http://127.0.0.1:$pport" "$shot" || {
  echo "proxy log:" >&2; cat "$out/proxy.log" >&2; exit 1; }
python3 "$here/../judge/check_reports.py" png "$shot"
# The same numbers on /metrics as the page showed.
metrics="$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "http://127.0.0.1:$uport/metrics")"
grep -q '^mcp_triage_unsafe_retries_total{server="127.0.0.1:'"$kport"'",tool="increment_counter"} 1$' <<<"$metrics" ||
  { echo "FAIL: /metrics lacks the unsafe retry:" >&2; echo "$metrics" >&2; exit 1; }
echo "ui-test: ok"
