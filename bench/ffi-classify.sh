#!/usr/bin/env bash
# The cost of the C ABI (crates/mcp-triage-ffi, `mcpt_classify`) over the core's own `classify`,
# on the same generated exchanges, in one run, as a ratio. Target (issue 20): at most 1.1x.
#
#   bash bench/ffi-classify.sh
#
# The figure that decides is the instruction count under callgrind (wall time on a shared
# machine is noisy): `crates/mcp-triage-ffi/examples/ffi_bench.rs` classifies every exchange once
# with the core (`run_core`: ResponseHead and CallContext prepared beforehand) and once through
# the ABI (`run_ffi`: McptHeader array and McptCallOptions over the same bytes, mcpt_classify,
# the outcome accessor, mcpt_verdict_free); `--toggle-collect` counts exactly one loop, so file
# reading and preparation are left out. Both print their outcome counts, which must agree. The
# wall-time ratio of the same loops (median of 5, interleaved) is printed beside it, for
# information.
#
# Two mixes by default: "small" (bodies of tens to thousands of bytes, where a fixed cost per
# call shows most) and "mixed" (5% large bodies, the core's work dominates).
# Environment: SHARED (default ../shared beside the checkout, for bench/make-exchanges.py),
# MIXES (default "small mixed"), COUNT (exchanges per mix, default 1000), ROUNDS (wall-time
# rounds over the file, default 20), JOBS (cargo -j, default 2).
# Needs cargo, python3, valgrind. Temporary files are removed on exit.
# Exit status: 0 when every mix is within the target and both sides agree, 1 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SHARED="${SHARED:-../shared}"
MIXES="${MIXES:-small mixed}"
COUNT="${COUNT:-1000}"
ROUNDS="${ROUNDS:-20}"
JOBS="${JOBS:-2}"
MAX_RATIO=1.1

for tool in cargo python3 valgrind; do
  command -v "$tool" >/dev/null || { echo "ffi-classify: $tool is missing" >&2; exit 2; }
done
[ -f "$SHARED/bench/make-exchanges.py" ] ||
  { echo "ffi-classify: $SHARED/bench/make-exchanges.py not found (set SHARED=...)" >&2; exit 2; }

echo "== building (release): cargo build --release -p mcp-triage-ffi --example ffi_bench"
cargo build --release -p mcp-triage-ffi --example ffi_bench -j "$JOBS"
BENCH="${CARGO_TARGET_DIR:-target}/release/examples/ffi_bench"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/ffi-classify.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# instructions MODE FILE: callgrind's instruction count of run_MODE alone; its standard output
# (the outcome counts) goes to $tmp/MODE.out.
instructions() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect="*run_$1*" \
    "$BENCH" "$1" "$2" >"$tmp/$1.out" 2>"$tmp/$1.err" ||
    { cat "$tmp/$1.err" >&2; echo "ffi-classify: $BENCH $1 failed" >&2; exit 1; }
  awk '/Collected :/ { print $NF }' "$tmp/$1.err"
}

result=PASS
for mix in $MIXES; do
  file="$tmp/$mix.jsonl"
  python3 "$SHARED/bench/make-exchanges.py" "$file" --mix "$mix" --count "$COUNT"
  echo
  echo "== mix $mix: $COUNT exchanges, $(awk -v b="$(stat -c %s "$file")" 'BEGIN { printf "%.1f", b / 1e6 }') MB"
  core=$(instructions core "$file")
  ffi=$(instructions ffi "$file")
  same=yes
  [ "$(sed 's/^core //' "$tmp/core.out")" = "$(sed 's/^ffi //' "$tmp/ffi.out")" ] || same=no
  echo "   $(cat "$tmp/core.out")"
  echo "   $(cat "$tmp/ffi.out")"
  ratio=$(awk -v f="$ffi" -v c="$core" 'BEGIN { printf "%.4f", f / c }')
  awk -v f="$ffi" -v c="$core" -v n="$COUNT" 'BEGIN {
    printf "   callgrind instructions per exchange: core %.0f, ffi %.0f (+%.0f per call)\n",
      c / n, f / n, (f - c) / n }'
  ok=$(awk -v r="$ratio" -v m="$MAX_RATIO" 'BEGIN { print (r <= m) ? "PASS" : "FAIL" }')
  [ "$same" = yes ] || ok=FAIL
  echo "   ratio ffi/core (instructions): $ratio (target <= $MAX_RATIO, same outcomes: $same): $ok"
  echo "   $("$BENCH" time "$file" "$ROUNDS")"
  [ "$ok" = PASS ] || result=FAIL
done
echo
echo "RESULT: $result"
[ "$result" = PASS ]
