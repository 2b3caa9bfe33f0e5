#!/usr/bin/env bash
# Issue 22's "no behaviour change" check for the formats that cross crates: the same traffic through
# the whole stack of two builds, and their records, capture lines, journal and demo records compared
# byte for byte after the fields that differ from run to run are masked.
#
#   bench/format-identity.sh OLD_REV [NEW_REV]   (NEW_REV: the work tree as it is)
#   bench/format-identity.sh --bins OLD_BIN NEW_BIN
#
# Each side runs its own `mcp-triage kitchen`, `mcp-triage proxy --log --capture` in front of it
# (one forwarding thread, the default) and `mcp-triage demo --kitchen PROXY --concurrency 1`: every
# kitchen scenario in both eras, one call at a time. Then the kitchen's journal (GET
# /kitchen/journal). mask-run-values.py masks what differs between two runs of one build (clocks,
# random ids, ports, backoff jitter, the proxy's retry linkage across rows, the few outcomes that
# race a client's close, the content of standalone GET streams; each rule says why), sorts the
# lines, and compares them byte for byte; it also names members only one side writes and objects
# whose members changed order. Exit 1 when a file differs, with where the first lines differ.
#
# Why the demo and not bench/proxy-soak.sh: the soak keeps its records inside a test process and
# drives chaos.mix only; the demo plan drives every scenario, so every kind of record, capture line
# and journal entry is written. KEEP_DIR=DIR keeps both sides' files in DIR/old and DIR/new.
#
# OLD_REV is built in a scratch git worktree (release, its target seeded with hard links to this
# tree's compiled dependencies, so only the workspace crates compile: ≈ 10 min on 2 cores).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
# shellcheck source=../interop/procs.sh
. "$root/interop/procs.sh"

build_rev() { # build_rev REV DIR: prints the binary
  local rev=$1 dir=$2
  git -C "$root" worktree add -q --detach "$dir" "$rev" >&2
  mkdir -p "$dir/target/release"
  if [ -d "$root/target/release/deps" ]; then
    (cd "$root/target/release" && cp -al deps build .fingerprint "$dir/target/release/")
  fi
  CARGO_INCREMENTAL=0 cargo build -j 2 -q --release --manifest-path "$dir/Cargo.toml" -p mcp-triage >&2
  echo "$dir/target/release/mcp-triage"
}

# On exit: both sides' files kept when KEEP_DIR asks, scratch worktrees removed, servers stopped.
worktrees=()
finish() {
  if [ -n "${KEEP_DIR:-}" ]; then cp -r "$out/old" "$out/new" "$KEEP_DIR"/ 2>/dev/null || true; fi
  for w in "${worktrees[@]}"; do git -C "$root" worktree remove --force "$w" 2>/dev/null || true; done
  cleanup
}
trap finish EXIT

if [ "${1:-}" = --bins ]; then
  old_bin=$2 new_bin=$3
else
  [ $# -ge 1 ] || { echo "usage: $0 OLD_REV [NEW_REV] | --bins OLD_BIN NEW_BIN" >&2; exit 2; }
  worktrees+=("$out/build-old")
  old_bin="$(build_rev "$1" "$out/build-old")"
  if [ -n "${2:-}" ]; then
    worktrees+=("$out/build-new")
    new_bin="$(build_rev "$2" "$out/build-new")"
  else
    cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage
    new_bin="$root/target/release/mcp-triage"
  fi
fi

run_side() { # run_side NAME BIN: leaves $out/NAME/{records,capture,journal,demo}.jsonl
  local name=$1 bin=$2 dir="$out/$1"
  mkdir -p "$dir"
  "$bin" kitchen --listen 127.0.0.1:0 >"$dir/kitchen.url" 2>"$dir/kitchen.log" &
  local kitchen=$!
  pids+=("$kitchen")
  wait_for "$dir/kitchen.url" "http://"
  local origin
  origin="$(head -n1 "$dir/kitchen.url")"; origin="${origin%/mcp}"
  "$bin" proxy --listen 127.0.0.1:0 --upstream "$origin" --log "$dir/records.jsonl" \
    --capture "$dir/capture.jsonl" 2>"$dir/proxy.log" &
  local proxy=$!
  pids+=("$proxy")
  wait_for "$dir/proxy.log" "http://"
  local proxy_origin
  proxy_origin="$(grep -o 'http://[0-9.:]*' "$dir/proxy.log" | head -n1)"
  # Rows whose expectation fails still write their record: the comparison is the point here.
  "$bin" demo --kitchen "$proxy_origin" --concurrency 1 --format json >"$dir/demo.jsonl" 2>"$dir/demo.err" || true
  kill -TERM "$proxy"; wait "$proxy" 2>/dev/null || true
  python3 - "$origin/kitchen/journal" "$dir/journal.jsonl" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as r, open(sys.argv[2], "wb") as f:
    f.write(r.read())
PY
  kill -TERM "$kitchen"; wait "$kitchen" 2>/dev/null || true
  printf '%s %s %s\n' "$(wc -l <"$dir/records.jsonl") records" "$(wc -l <"$dir/capture.jsonl") capture lines" \
    "$(wc -l <"$dir/journal.jsonl") journal entries, $(wc -l <"$dir/demo.jsonl") demo rows ($name)"
}

run_side old "$old_bin"
run_side new "$new_bin"
python3 "$here/mask-run-values.py" "$out/old" "$out/new"
