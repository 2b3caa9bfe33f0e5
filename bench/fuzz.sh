#!/usr/bin/env bash
# A time-bounded run of every cargo-fuzz target (issue 41): the proxy's HTTP/1.1 parsers
# (h1_request, h1_response, h1_chunked), the core's JSON Scanner (scanner) and content decoder
# (decode), the C ABI's entry
# points (ffi_exchange) and the classifier's (classify, sse, compact). Each target starts from
# its checked-in corpus (fuzz/corpus/TARGET) and one line per target says how many runs, the
# coverage reached, and whether it found anything (a crash is saved under fuzz/artifacts/TARGET;
# reproduce it with `cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-…` and add the
# input to fuzz/corpus/TARGET, where tests/fuzz_corpus.rs replays it on stable).
#
#   bench/fuzz.sh                    every target, FUZZ_SECONDS (300) each
#   bench/fuzz.sh h1_request scanner the targets named
#   (env: FUZZ_SECONDS=300 FUZZ_MAX_LEN=8192 KEEP_NEW=1 keeps new corpus inputs in fuzz/corpus)
#
# Needs a nightly toolchain (`rustup toolchain install nightly`) and cargo-fuzz
# (`cargo install cargo-fuzz`); both are installed here if missing (crates.io only).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"
FUZZ_SECONDS="${FUZZ_SECONDS:-300}"
FUZZ_MAX_LEN="${FUZZ_MAX_LEN:-8192}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(h1_request h1_response h1_chunked scanner ffi_exchange decode classify sse compact)
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
found=0
printf '%-13s %10s %8s %9s  %s\n' target runs edges features found
for t in "${targets[@]}"; do
  corpus="corpus/$t"
  mkdir -p "$corpus"
  # New inputs go to a scratch directory unless KEEP_NEW=1: the checked-in corpus changes only
  # when someone means it to (then minimise it: cargo +nightly fuzz cmin TARGET).
  work="$out/$t"
  mkdir -p "$work"
  dirs=("$work" "$corpus")
  [ "${KEEP_NEW:-0}" = 1 ] && dirs=("$corpus")
  log="$out/$t.log"
  status=0
  cargo +nightly fuzz run -O "$t" "${dirs[@]}" -- -max_total_time="$FUZZ_SECONDS" \
    -max_len="$FUZZ_MAX_LEN" -dict=sse.dict -print_final_stats=1 >"$log" 2>&1 || status=$?
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  last="$(grep -E '^#[0-9]+' "$log" | tail -n1)"
  edges="$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo '?')"
  feats="$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo '?')"
  if [ "$status" -eq 0 ]; then
    what=nothing
  else
    found=1
    what="FOUND (exit $status): $(grep -m1 -E 'panicked|ERROR' "$log" || tail -n1 "$log")"
  fi
  printf '%-13s %10s %8s %9s  %s\n' "$t" "${runs:-?}" "${edges:-?}" "${feats:-?}" "$what"
done
exit "$found"
