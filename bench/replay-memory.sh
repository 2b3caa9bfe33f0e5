#!/usr/bin/env bash
# Peak memory of `mcp-triage kitchen --replay` loading a generated capture (issue 41: replay
# peaked at ~6x the file). Two shapes of about 170 MB each: "bodies" (3,000 tools/call lines with
# 32 KiB responses, small requests) and "requests" (2,400 lines whose request arguments are
# 1,500 small objects: a JSON tree takes many times its text). The peak is /usr/bin/time -v's
# maximum RSS once the kitchen listens (it is then stopped).
#
#   bench/replay-memory.sh [BIN]      (default target/debug/mcp-triage; env WORK=dir to keep files)
#
# 127.0.0.1 only. The kitchen started here is stopped before the next one starts.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
bin="${1:-$root/target/debug/mcp-triage}"
[ -x "$bin" ] || { echo "replay-memory: $bin is not built (cargo build -p mcp-triage)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "replay-memory: needs GNU time (/usr/bin/time)" >&2; exit 1; }
work="${WORK:-$(mktemp -d)}"
mkdir -p "$work"

python3 - "$work" <<'PY'
import json, random, sys
work = sys.argv[1]

def line(i, tool, req, body):
    return json.dumps({"capture": 1, "seq": i, "transport": "http", "method": "tools/call",
                       "tool": tool, "request": {"method": "POST", "path": "/mcp", "headers": {},
                                                 "body": json.dumps(req)},
                       "status": 200, "contentType": "application/json", "headers": {},
                       "body": body, "expectId": i, "headMs": 1,
                       "chunks": [[0, len(body.encode())]], "end": "complete"}) + "\n"

def call(i, tool, args):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args}}

random.seed(1)
with open(f"{work}/bodies.jsonl", "w") as f:
    for i in range(1, 3001):
        text = "".join(random.choice('abcdefghij "\\') for _ in range(64)) * 512
        body = json.dumps({"jsonrpc": "2.0", "id": i, "result": {
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"rows": [{"n": k, "v": "x" * 20} for k in range(163)]}}})
        f.write(line(i, "search", call(i, "search", {"query": f"q{i}", "items": list(range(50))}), body))
with open(f"{work}/requests.jsonl", "w") as f:
    for i in range(1, 2401):
        args = {"rows": [{"id": k, "ok": True, "v": k * 0.5} for k in range(1500)]}
        body = json.dumps({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "ok" * 4000}]}})
        f.write(line(i, "load", call(i, "load", args), body))
PY

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
for shape in bodies requests; do
  cap="$work/$shape.jsonl"
  port=$(free_port)
  /usr/bin/time -v "$bin" kitchen --replay "$cap" --listen "127.0.0.1:$port" >"$work/$shape.out" 2>"$work/$shape.time" &
  tp=$!
  t0=$(date +%s.%N)
  until python3 -c "import socket,sys; sys.exit(socket.socket().connect_ex(('127.0.0.1',$port)))" 2>/dev/null; do
    kill -0 "$tp" 2>/dev/null || { cat "$work/$shape.time" >&2; exit 1; }
    sleep 0.2
  done
  t1=$(date +%s.%N)
  kill -TERM "$(pgrep -P "$tp")"
  wait "$tp" || true
  size=$(stat -c %s "$cap")
  rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$work/$shape.time")
  python3 -c "import sys; s,r,t=int(sys.argv[1]),int(sys.argv[2])*1024,float(sys.argv[3]); print(f'{sys.argv[4]}: file {s/1e6:.1f} MB, peak RSS {r/1e6:.1f} MB ({r/s:.2f}x the file), loaded in {t:.1f} s')" \
    "$size" "$rss" "$(echo "$t1 - $t0" | bc)" "$shape"
done
[ -n "${WORK:-}" ] || rm -rf "$work"
