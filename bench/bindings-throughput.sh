#!/usr/bin/env bash
# Throughput of the Python and Node bindings beside `mcp-triage classify --batch --jobs 1` (the
# CLI on one thread), on the same generated exchange file, in one run, with ratios. Target
# (issue 12): each binding within 2x of the single-threaded CLI.
#
#   bash bench/bindings-throughput.sh
#
# The CLI figure is the whole process (read, parse each line, classify, count). Each binding gets
# two, each judged against the target:
#   - "classify() only": the classify() calls over arguments prepared beforehand — the binding's
#     whole cost (argument conversion, the core, the verdict dict/object). The CLI's figure
#     also includes reading and parsing the file, so this ratio flatters the bindings slightly.
#   - "end to end": the same work as the CLI in the host language: read the file, parse each
#     line with the language's JSON parser (json.loads, JSON.parse) into classify()'s arguments,
#     classify. On the mixed file most of this is the host parsing 395 MB of JSON-in-JSON lines,
#     which is not the binding's work, so it is reported but does not decide RESULT.
# Environment: SHARED (default ../shared beside the checkout), COUNT (default 20000 exchanges),
# MIX (default mixed), RUNS (default 3; medians are reported), JOBS (cargo -j, default 2).
# Needs cargo, python3 with venv, node and npm. Builds everything in release mode first.
# Exit status: 0 when both bindings' classify() meet the target and agree with the CLI's outcome
# counts, 1 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

SHARED="${SHARED:-../shared}"
COUNT="${COUNT:-20000}"
MIX="${MIX:-mixed}"
RUNS="${RUNS:-3}"
JOBS="${JOBS:-2}"
MAX_RATIO=2

for tool in cargo python3 node npm; do
  command -v "$tool" >/dev/null || { echo "bindings-throughput: $tool is missing" >&2; exit 2; }
done
[ -f "$SHARED/bench/make-exchanges.py" ] ||
  { echo "bindings-throughput: $SHARED/bench/make-exchanges.py not found (set SHARED=...)" >&2; exit 2; }

echo "== building (release): the CLI, the Python wheel, the Node addon"
cargo build --release -p mcp-triage -j "$JOBS"
source bindings/python/venv.sh
tmp="$(mktemp -d "${TMPDIR:-/tmp}/bindings-throughput.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
(cd bindings/python && "$bindings_venv/bin/maturin" build --quiet --release -j "$JOBS" -o "$tmp/wheels")
"$bindings_venv/bin/pip" install --quiet --disable-pip-version-check --no-input --force-reinstall --no-deps "$tmp"/wheels/mcp_triage-*.whl
if [ ! -x bindings/node/node_modules/.bin/napi ]; then
  (cd bindings/node && npm ci --no-audit --no-fund)
fi
(cd bindings/node && CARGO_BUILD_JOBS="$JOBS" npx napi build --release --dts native.d.ts)

FILE="$tmp/exchanges.jsonl"
echo "== generating: make-exchanges.py --mix $MIX --count $COUNT"
python3 "$SHARED/bench/make-exchanges.py" "$FILE" --mix "$MIX" --count "$COUNT"
echo "   $FILE: $(awk -v b="$(stat -c %s "$FILE")" 'BEGIN { printf "%.1f", b / 1e6 }') MB"

echo "== timing the CLI: classify --batch --jobs 1, $RUNS runs"
cli_times=()
for _ in $(seq "$RUNS"); do
  start=$(date +%s.%N)
  target/release/mcp-triage classify --batch "$FILE" --jobs 1 --now 0 >"$tmp/cli.out"
  cli_times+=("$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.3f", e - s }')")
done
cli_s=$(printf '%s\n' "${cli_times[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')

echo "== timing the Python binding, $RUNS runs each"
(cd "$tmp" && "$bindings_venv/bin/python" "$root/bench/bindings/throughput.py" "$FILE" "$RUNS") >"$tmp/python.out"
echo "== timing the Node binding ($(node --version)), $RUNS runs each"
node bench/bindings/throughput.cjs "$FILE" "$RUNS" >"$tmp/node.out"

python3 - "$tmp/cli.out" "$tmp/python.out" "$tmp/node.out" "$cli_s" "$MAX_RATIO" "$COUNT" "$MIX" <<'EOF'
import json, sys

cli_out, py_out, node_out, cli_s, max_ratio, count, mix = sys.argv[1:]
cli = json.loads(open(cli_out).readline())
cli_s, max_ratio = float(cli_s), float(max_ratio)
n, size = cli["verdicts"], cli["bytes"]

def row(name, seconds):
    return f"{name:<34} {seconds:8.3f} s  {n / seconds:10.0f} exchanges/s  {size / seconds / 1e6:8.1f} MB/s"

print()
print(f"== bindings vs classify --batch --jobs 1: {n} exchanges (--mix {mix}), {size / 1e6:.1f} MB of bodies, medians")
print(row("CLI classify --batch --jobs 1", cli_s))
ok = True
verdict = lambda ratio: "PASS" if ratio <= max_ratio else "FAIL"
for name, path in (("Python", py_out), ("Node", node_out)):
    r = json.loads(open(path).read())
    same = r["exchanges"] == n and r["bytes"] == size and r["outcomes"] == cli["outcomes"]
    only, e2e = r["classifyOnly"] / cli_s, r["endToEnd"] / cli_s
    ok = ok and same and only <= max_ratio
    print(row(f"{name} classify() only", r["classifyOnly"]) + f"  ratio {only:.2f}x  [target <= {max_ratio:g}x: {verdict(only)}]")
    print(row(f"{name} end to end (host JSON)", r["endToEnd"]) + f"  ratio {e2e:.2f}x  [within {max_ratio:g}x: {'yes' if e2e <= max_ratio else 'no'}; not judged]")
    print(f"{'':<34} same outcome counts as the CLI: {'yes' if same else 'NO: ' + json.dumps(r['outcomes'])}")
print("RESULT: " + ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
EOF
