#!/usr/bin/env bash
# The PySpark job of this directory over a real capture archive, against `classify --batch`.
#
#   bash integrations/spark/test.sh
#
# Starts the kitchen and two `mcp-triage proxy --capture` in front of it (servers "alpha" and
# "beta", small capture files so they rotate), runs the demo plan through each, adds a third
# server's file with a line that is not an exchange, then runs classify_captures.py in Spark
# local[2] (pinned pyspark, Java 17) over the archive directory with the wheel built from this
# checkout. Checks (check_job.py): the job's totals (per kind too) and per-server counts equal
# classify --batch's over the same files, each server's tool calls its proxy's tools/call
# records, every row's verdict equals classify --batch --each's, the bad line is
# counted as classify --batch counts it and both exit 1 for it.
# Environment: JOBS (cargo -j, default 2). Makes integrations/spark/.venv from requirements.lock.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.."
root="$(pwd)"
JOBS="${JOBS:-2}"
command -v java >/dev/null || { echo "spark test: java is missing (Debian openjdk-17-jre-headless)" >&2; exit 2; }
source interop/procs.sh
source scripts/pinned-venv.sh
spark_venv="$here/.venv"
pinned_venv "$spark_venv" "$here/requirements.lock"

echo "== the CLI and the Python wheel from this checkout"
cargo build -p mcp-triage -j "$JOBS"
bin="$root/target/debug/mcp-triage"
source bindings/python/venv.sh
(cd bindings/python && "$bindings_venv/bin/maturin" build --quiet -j "$JOBS" -o "$out/wheels")
"$spark_venv/bin/pip" install --quiet --disable-pip-version-check --no-input --force-reinstall \
  --no-deps "$out"/wheels/mcp_triage-*.whl

echo "== a capture archive: the demo plan through two proxies in front of the kitchen"
kport=$(free_port)
"$bin" kitchen --listen "127.0.0.1:$kport" >"$out/kitchen.log" 2>&1 &
pids+=($!)
wait_port "$kport" kitchen "$out/kitchen.log"
archive="$out/archive"
proxies=()
for server in alpha beta; do
  mkdir -p "$archive/$server"
  port=$(free_port)
  "$bin" proxy --listen "127.0.0.1:$port" --upstream "http://127.0.0.1:$kport" \
    --log "$out/$server.records.jsonl" --capture "$archive/$server/capture.jsonl" \
    --capture-max-bytes 300000 --capture-keep 1000 >"$out/$server.proxy.log" 2>&1 &
  pids+=($!)
  proxies+=($!)
  wait_port "$port" "proxy $server" "$out/$server.proxy.log"
  # The demo's own verdicts are not this test's subject (some rows expect a direct connection);
  # its exit status is reported, the archive is what is checked.
  only=(); [ "$server" = beta ] && only=(--only errors.)
  if ! "$bin" demo --kitchen "http://127.0.0.1:$port" --instance-prefix "$server" "${only[@]}" \
    >"$out/$server.demo.txt" 2>&1; then
    echo "   (demo through proxy $server: $(tail -1 "$out/$server.demo.txt"))"
  fi
done
for p in "${proxies[@]}"; do kill -TERM "$p"; wait "$p" || true; done  # drained: captures complete
mkdir -p "$archive/gamma"
head -1 "$archive/alpha/capture.jsonl" >"$archive/gamma/capture.jsonl"
echo '{"status":"not a status"}' >>"$archive/gamma/capture.jsonl"
ls -R "$archive" | tr '\n' ' '; echo

echo "== classify_captures.py in Spark local[2] over $archive"
set +e
"$spark_venv/bin/python" "$here/classify_captures.py" "$archive" --master 'local[2]' \
  --summary "$out/summary.json" --out "$out/verdicts" >"$out/job.out" 2>"$out/job.err"
job_exit=$?
set -e
cat "$out/job.out"
"$spark_venv/bin/python" "$here/check_job.py" "$bin" "$archive" "$out/summary.json" \
  "$out/verdicts" "$job_exit" alpha="$out/alpha.records.jsonl" beta="$out/beta.records.jsonl" || { echo "job stderr:" >&2; tail -30 "$out/job.err" >&2; exit 1; }
