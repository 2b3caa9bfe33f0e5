#!/usr/bin/env bash
# Times `mcp-triage classify --batch` against the seed's classifier (`node classify-batch.mjs`)
# on the same generated exchange file, in one run, and checks the targets of issue 44: at least
# 15x the seed's wall-clock speed and 8x its CPU-time efficiency (user + system seconds: on a
# busy machine wall time follows the load, CPU time much less), whole process, and at most 64 MB
# peak RSS.
#
#   bash bench/classify-vs-seed.sh
#
# Environment: SHARED (default ../shared beside the checkout), COUNT (default 20000 exchanges),
# MIX (default mixed), RUNS (default 3; the median time is reported), JOBS (cargo -j, default 2).
# Needs cargo, python3, node and GNU time (/usr/bin/time). Temporary files are removed on exit.
# Exit status: 0 when every target is met and both print the same summary, 1 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SHARED="${SHARED:-../shared}"
COUNT="${COUNT:-20000}"
MIX="${MIX:-mixed}"
RUNS="${RUNS:-3}"
JOBS="${JOBS:-2}"
MIN_RATIO=15
MIN_CPU_RATIO=8
MAX_RSS_KB=$((64 * 1024))

for tool in cargo python3 node; do
  command -v "$tool" >/dev/null || { echo "classify-vs-seed: $tool is missing" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "classify-vs-seed: GNU time (/usr/bin/time) is missing (apt-get install time)" >&2; exit 2; }
for f in "$SHARED/bench/make-exchanges.py" "$SHARED/reference/classify-batch.mjs"; do
  [ -f "$f" ] || { echo "classify-vs-seed: $f not found (set SHARED=...)" >&2; exit 2; }
done

echo "== building: cargo build --release -p mcp-triage"
cargo build --release -p mcp-triage -j "$JOBS"
OURS=target/release/mcp-triage

tmp="$(mktemp -d "${TMPDIR:-/tmp}/classify-vs-seed.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

FILE="$tmp/exchanges.jsonl"
echo "== generating: make-exchanges.py --mix $MIX --count $COUNT"
python3 "$SHARED/bench/make-exchanges.py" "$FILE" --mix "$MIX" --count "$COUNT"
size_mb=$(awk -v b="$(stat -c %s "$FILE")" 'BEGIN { printf "%.1f", b / 1e6 }')
echo "   $FILE: $size_mb MB"

# run NAME CMD...: one timed run; appends "seconds max_rss_kb cpu_seconds" to $tmp/NAME.times and
# keeps the first run's standard output as $tmp/NAME.out.
run() {
  local name="$1"
  shift
  /usr/bin/time -f '%e %M %U %S' -o "$tmp/$name.time" "$@" >"$tmp/$name.stdout"
  awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$tmp/$name.time" >"$tmp/$name.time.cpu"
  mv "$tmp/$name.time.cpu" "$tmp/$name.time"
  cat "$tmp/$name.time" >>"$tmp/$name.times"
  [ -f "$tmp/$name.out" ] || cp "$tmp/$name.stdout" "$tmp/$name.out"
}

echo "== timing $RUNS runs each (interleaved)"
for i in $(seq "$RUNS"); do
  run ours "$OURS" classify --batch "$FILE"
  run seed node "$SHARED/reference/classify-batch.mjs" "$FILE"
  printf '   run %s: ours %ss %s KB %s s CPU, seed %ss %s KB %s s CPU\n' "$i" \
    $(tail -n 1 "$tmp/ours.times") $(tail -n 1 "$tmp/seed.times")
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ours_s=$(awk '{ print $1 }' "$tmp/ours.times" | median)
seed_s=$(awk '{ print $1 }' "$tmp/seed.times" | median)
ours_cpu=$(awk '{ print $3 }' "$tmp/ours.times" | median)
seed_cpu=$(awk '{ print $3 }' "$tmp/seed.times" | median)
ours_kb=$(awk '{ print $2 }' "$tmp/ours.times" | sort -n | tail -n 1)
seed_kb=$(awk '{ print $2 }' "$tmp/seed.times" | sort -n | tail -n 1)

# The summary lines must agree (outcome counts compared regardless of key order).
same_summary=yes
canon() { python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.readline()), sort_keys=True))' <"$1"; }
if [ "$(canon "$tmp/ours.out")" != "$(canon "$tmp/seed.out")" ]; then
  same_summary=no
fi

ratio=$(awk -v s="$seed_s" -v o="$ours_s" 'BEGIN { if (o > 0) printf "%.1f", s / o; else print "inf" }')
speed_ok=$(awk -v r="$ratio" -v m="$MIN_RATIO" 'BEGIN { print (r == "inf" || r + 0 >= m) ? "PASS" : "FAIL" }')
cpu_ratio=$(awk -v s="$seed_cpu" -v o="$ours_cpu" 'BEGIN { if (o > 0) printf "%.1f", s / o; else print "inf" }')
cpu_ok=$(awk -v r="$cpu_ratio" -v m="$MIN_CPU_RATIO" 'BEGIN { print (r == "inf" || r + 0 >= m) ? "PASS" : "FAIL" }')
rss_ok=$([ "$ours_kb" -lt "$MAX_RSS_KB" ] && echo PASS || echo FAIL)
summary_ok=$([ "$same_summary" = yes ] && echo PASS || echo FAIL)
mb() { awk -v k="$1" 'BEGIN { printf "%.1f MB", k / 1024 }'; }

echo
echo "== classify --batch vs the seed: $COUNT exchanges (--mix $MIX, $size_mb MB), median of $RUNS"
echo "ours:  $(sed -n 1p "$tmp/ours.out")"
echo "seed:  $(sed -n 1p "$tmp/seed.out")"
printf 'time:  ours %s s, seed %s s, ratio (seed/ours) %sx   [target >= %sx: %s]\n' \
  "$ours_s" "$seed_s" "$ratio" "$MIN_RATIO" "$speed_ok"
printf 'CPU:   ours %s s, seed %s s, ratio (seed/ours) %sx   [target >= %sx: %s]\n' \
  "$ours_cpu" "$seed_cpu" "$cpu_ratio" "$MIN_CPU_RATIO" "$cpu_ok"
printf 'peak RSS: ours %s, seed %s   [target ours < 64 MB: %s]\n' "$(mb "$ours_kb")" "$(mb "$seed_kb")" "$rss_ok"
printf 'same summary line: %s   [%s]\n' "$same_summary" "$summary_ok"
if [ "$speed_ok$cpu_ok$rss_ok$summary_ok" = PASSPASSPASSPASS ]; then
  echo "RESULT: PASS"
else
  echo "RESULT: FAIL"
  exit 1
fi
