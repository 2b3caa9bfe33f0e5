#!/usr/bin/env bash
# The proxy against hostile load, with figures (issue 15). Each scenario prints one line.
#
#   bench/proxy-hostile.sh     (env: BIG_BYTES=2147483648 IDLE=2000 MAX_CONNECTIONS=512
#                                    PROXY_BIN=path/to/another/mcp-triage SKIP_BIG=1)
#
# - Big responses: BIG_BYTES of SSE, of chunked JSON and of JSON with a Content-Length, each
#   through a fresh proxy (default limits: the classifier reads JSON bodies up to
#   --max-body-bytes, 64 MiB) and once more chunked JSON with --max-body-bytes 8388608; the
#   proxy's peak RSS (VmHWM), the bytes the client got, and the record's outcome.
# - Idle flood: IDLE connections that send nothing, against a proxy with --max-connections
#   MAX_CONNECTIONS: how many it holds, how many it closed to make room (the longest idle) or
#   refused with a 503, what a real request during the flood gets, the proxy's RSS during the
#   flood, and that a request goes through once the flood is gone (issue 23 item 13).
# - Trickled bodies (item 13): a body sent 1 byte every 0.5 s (within --body-read-timeout) to a
#   proxy with --body-deadline 3: the status and when; the same body to an upstream that answers
#   after the head: when the answer reaches the client.
# - wrap (items 1, 11): a 50 MB answer read 6 s after the server exited (bytes delivered, exit
#   status); a 1 GiB line without a newline (wrap's peak RSS, when the first bytes arrived).
# - Early 413: a 100 MB chunked POST through the proxy to the kitchen, which refuses bodies over
#   1 MiB: the status the client gets, the seconds it took, and the record.
# - Full disk: the proxy logging to /dev/full: its exit status and its last stderr line.
# - Rebinding: Host: evil.example and Origin: http://evil.example: the status and the record.
# 127.0.0.1 only; every process started here is stopped on exit.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
BIG_BYTES="${BIG_BYTES:-2147483648}"
IDLE="${IDLE:-2000}"
MAX_CONNECTIONS="${MAX_CONNECTIONS:-512}"

cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-kitchen --example serve
cargo build -j 2 -q --release --manifest-path "$root/Cargo.toml" -p mcp-triage-proxy --example big_sse
bin="$root/target/release"
proxy_bin="${PROXY_BIN:-$bin/mcp-triage}"
# shellcheck source=interop/procs.sh
. "$root/interop/procs.sh"
# The flood needs a descriptor per connection here and two per held connection in the proxy.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# start_proxy NAME UPSTREAM ARGS...: a proxy logging to $out/NAME.jsonl; sets $proxy_pid, $proxy_url.
start_proxy() {
  local name="$1" upstream="$2"
  shift 2
  "$proxy_bin" proxy --listen 127.0.0.1:0 --upstream "$upstream" --log "$out/$name.jsonl" "$@" 2>"$out/$name.log" &
  proxy_pid=$!
  pids+=("$proxy_pid")
  wait_for "$out/$name.log" "http://"
  proxy_url="$(grep -o 'http://[0-9.:]*' "$out/$name.log" | head -n1)"
}

stop_proxy() { kill -TERM "$1"; wait "$1" 2>/dev/null || true; }

# first_record NAME: "outcome classified detail" of the first record.
first_record() {
  python3 -c 'import json,sys
r=[json.loads(l) for l in open(sys.argv[1])][0]
lim=(r.get("verdict") or {}).get("limit")
parts=[r["outcome"], "classified" if r["classified"] else "not classified"]
if lim: parts.append("limit %s=%s" % (lim["name"], lim["max"]))
parts += [w["code"] for w in r.get("warnings", [])]
parts.append("responseBytes %s" % r.get("responseBytes"))
print(" ".join(parts))' "$out/$1.jsonl"
}

echo "== big responses: $BIG_BYTES bytes through the proxy"
big() { # big NAME SERVE_ARGS -- PROXY_ARGS
  local name="$1" serve_args=() proxy_args=()
  shift
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do serve_args+=("$1"); shift; done
  [ "$#" -gt 0 ] && shift
  proxy_args=("$@")
  "$bin/examples/big_sse" serve --listen 127.0.0.1:0 --bytes "$BIG_BYTES" "${serve_args[@]}" >"$out/$name.url" &
  local server=$!
  pids+=("$server")
  wait_for "$out/$name.url" "http://"
  local origin
  origin="$(head -n1 "$out/$name.url")"; origin="${origin%/mcp}"
  start_proxy "$name" "$origin" "${proxy_args[@]}"
  local got hwm
  got="$(timeout 600 "$bin/examples/big_sse" fetch --url "$proxy_url/mcp")"
  hwm="$(awk '/VmHWM/ {print $2}' "/proc/$proxy_pid/status")"
  stop_proxy "$proxy_pid"
  kill "$server" 2>/dev/null || true
  printf '%-38s peak RSS %6.1f MB  client got %s  record: %s\n' "$name ${proxy_args[*]}" "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')" "$got" "$(first_record "$name")"
}
if [ -z "${SKIP_BIG:-}" ]; then
  big sse --
  big json-chunked --json --
  big json-length --json --content-length --
  big json-chunked-8MiB --json -- --max-body-bytes 8388608
fi

echo "== idle flood: $IDLE idle connections, --max-connections $MAX_CONNECTIONS"
"$bin/examples/serve" --listen 127.0.0.1:0 >"$out/kitchen.url" 2>"$out/kitchen.log" &
pids+=("$!")
wait_for "$out/kitchen.url" "http://"
kitchen="$(head -n1 "$out/kitchen.url")"; kitchen="${kitchen%/mcp}"
start_proxy flood "$kitchen" --max-connections "$MAX_CONNECTIONS"
rss_before="$(awk '/VmRSS/ {print $2}' "/proc/$proxy_pid/status")"
python3 - "${proxy_url#http://}" "$IDLE" "$proxy_pid" "$rss_before" <<'PY'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n, pid, rss_before = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
def request():
    s = socket.create_connection((host, int(port)), timeout=5)
    s.sendall(b"GET /.well-known/oauth-protected-resource HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
    data = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError:
        pass
    s.close()
    return data.split(b"\r\n", 1)[0].decode(errors="replace")
t = time.time()
conns = []
for _ in range(n):
    try:
        conns.append(socket.create_connection((host, int(port)), timeout=5))
    except OSError as e:
        print(f"connect failed after {len(conns)}: {e}")
        break
time.sleep(1.0)
# A connection the proxy refused has its 503 waiting; one it closed to make room reads EOF.
refused = held = closed = 0
for c in conns:
    c.setblocking(False)
    try:
        d = c.recv(4096)
        refused += d.startswith(b"HTTP/1.1 503")
        closed += d == b""
    except BlockingIOError:
        held += 1
    except OSError:
        closed += 1
rss = int([l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0])
during = request()
for c in conns:
    c.close()
time.sleep(0.5)
after = request()
print(f"{len(conns)} idle connections in {time.time() - t:.1f} s: {held} held, {closed} closed to make room, {refused} got 503; "
      f"proxy RSS {rss_before/1024:.1f} MB before, {rss/1024:.1f} MB during; "
      f"a request during the flood: {during!r}; after it: {after!r}")
PY
stop_proxy "$proxy_pid"
grep -h "max-connections" "$out/flood.log" | sed 's/^/  proxy said: /'

echo "== early 413: 100 MB chunked POST to the kitchen (limit 1 MiB) through the proxy"
start_proxy early "$kitchen"
python3 - "${proxy_url#http://}" <<'PY'
import socket, sys, threading, time
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=20)
s.sendall(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
          b"accept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
chunk = b"%x\r\n" % 65536 + b" " * 65536 + b"\r\n"
sent = [0]
def send():
    try:
        while sent[0] < 100 << 20:
            s.sendall(chunk)
            sent[0] += 65536
        s.sendall(b"0\r\n\r\n")
    except OSError:
        pass
t = time.time()
threading.Thread(target=send, daemon=True).start()
resp = b""
head_at = None
sent_then = 0
try:
    while b"\r\n\r\n" not in resp:
        d = s.recv(65536)
        if not d:
            break
        resp += d
    head_at = time.time() - t
    sent_then = sent[0]
    while True:
        d = s.recv(65536)
        if not d:
            break
        resp += d
    end = f"closed after {time.time() - t:.2f} s"
except OSError as e:
    end = f"{e} after {time.time() - t:.2f} s"
status = resp.split(b"\r\n", 1)[0].decode(errors="replace")
print(f"client got {status!r} after {head_at or 0:.2f} s, having sent {sent_then >> 20} MB of 100 by then; "
      f"connection {end}, {sent[0] >> 20} MB sent in all")
PY
sleep 0.5
stop_proxy "$proxy_pid"
echo "  record: $(first_record early)"

# trickle_client ADDR UNTIL: POSTs a tools/call whose body goes 1 byte every 0.5 s and prints
# what the client got and when; UNTIL "status" stops at the status line, "body" at the answer.
trickle_client() {
  python3 - "$1" "$2" <<'PY'
import socket, sys, threading, time
host, port = sys.argv[1].rsplit(":", 1)
until = b"\r\n" if sys.argv[2] == "status" else b'"isError":false}}'
body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}'
s = socket.create_connection((host, int(port)), timeout=30)
s.sendall(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
          b"accept: application/json, text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(body))
def send():
    try:
        for b in body:
            s.sendall(bytes([b]))
            time.sleep(0.5)
    except OSError:
        pass
t = time.time()
threading.Thread(target=send, daemon=True).start()
resp = b""
try:
    while until not in resp:
        d = s.recv(4096)
        if not d:
            break
        resp += d
except OSError:
    pass
status = resp.split(b"\r\n", 1)[0].decode(errors="replace")
print(f"client got {status!r} ({sys.argv[2]}) after {time.time() - t:.2f} s, "
      f"while the body trickled ({len(body) * 0.5:.0f} s in all)")
PY
}

echo "== trickled body: 1 byte every 0.5 s, --body-deadline 3 (gap limit 30 s)"
start_proxy trickle "$kitchen" --body-deadline 3
trickle_client "${proxy_url#http://}" status
sleep 0.3
stop_proxy "$proxy_pid"
echo "  record: $(first_record trickle)"

echo "== early answer to a trickled body (an upstream that answers after the head)"
python3 - >"$out/early-up.addr" <<'PY' &
import socket, threading
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(16)
print("%s:%d" % l.getsockname(), flush=True)
body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}'
def serve(c):
    data = b""
    while b"\r\n\r\n" not in data:
        d = c.recv(4096)
        if not d:
            return
        data += d
    c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
    while c.recv(4096):
        pass
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
pids+=("$!")
wait_for "$out/early-up.addr" ":"
start_proxy earlyanswer "http://$(head -n1 "$out/early-up.addr")"
trickle_client "${proxy_url#http://}" body
stop_proxy "$proxy_pid"

echo "== wrap: a 50 MB answer read 6 s after the server exited; a 1 GiB line without newline"
python3 - "$proxy_bin" "$out" <<'PY'
import subprocess, sys, time
binary, out = sys.argv[1], sys.argv[2]
def hwm(pid):
    try:
        return int([l.split()[1] for l in open(f"/proc/{pid}/status") if l.startswith("VmHWM")][0])
    except OSError:
        return 0
p = subprocess.Popen([binary, "wrap", "--log", f"{out}/wrap50.jsonl", "--", "sh", "-c",
                      "head -c 52428800 /dev/zero | tr '\\0' x; echo"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
time.sleep(6)
got = 0
while True:
    d = p.stdout.read1(1 << 16)
    if not d:
        break
    got += len(d)
p.stdin.close()
err = p.stderr.read().decode(errors="replace").strip().splitlines()
print(f"50 MB answer read 6 s late: {got} of 52428801 bytes delivered; exit {p.wait()}"
      + (f"; stderr: {err[-1]}" if err else ""))
p = subprocess.Popen([binary, "wrap", "--log", f"{out}/wrap1g.jsonl", "--", "sh", "-c",
                      "head -c 1073741824 /dev/zero | tr '\\0' x; sleep 1"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
t = time.time()
first = None
got = peak = 0
while True:
    d = p.stdout.read1(1 << 16)
    if not d:
        break
    if first is None:
        first = time.time() - t
    got += len(d)
    peak = max(peak, hwm(p.pid))
p.stdin.close()
code = p.wait()
print(f"1 GiB line without newline: {got >> 20} MiB relayed in {time.time() - t:.1f} s, first bytes after "
      f"{first or 0:.2f} s; wrap's peak RSS {peak / 1024:.1f} MB; exit {code}")
PY

echo "== full disk: --log /dev/full"
"$proxy_bin" proxy --listen 127.0.0.1:0 --upstream "$kitchen" --log /dev/full 2>"$out/fulldisk.log" &
proxy_pid=$!
pids+=("$proxy_pid")
wait_for "$out/fulldisk.log" "http://"
proxy_url="$(grep -o 'http://[0-9.:]*' "$out/fulldisk.log" | head -n1)"
curl -s -o /dev/null -H 'host: 127.0.0.1' "$proxy_url/.well-known/oauth-protected-resource" || true
sleep 0.3
kill -TERM "$proxy_pid"
status=0; wait "$proxy_pid" 2>/dev/null || status=$?
echo "exit status $status; stderr: $(grep -h 'cannot write\|record(s) written' "$out/fulldisk.log" | tr '\n' ' ')"

echo "== rebinding: foreign Host / Origin"
start_proxy rebind "$kitchen"
h="$(curl -s -o /dev/null -w '%{http_code}' -H 'Host: evil.example' "$proxy_url/.well-known/oauth-protected-resource")"
o="$(curl -s -o /dev/null -w '%{http_code}' -H 'Origin: http://evil.example' "$proxy_url/.well-known/oauth-protected-resource")"
l="$(curl -s -o /dev/null -w '%{http_code}' -H "Host: 127.1:${proxy_url##*:}" "$proxy_url/.well-known/oauth-protected-resource")"
sleep 0.3
stop_proxy "$proxy_pid"
echo "Host: evil.example -> $h; Origin: http://evil.example -> $o; Host: 127.1 -> $l; records: $(python3 -c 'import json,sys; print(", ".join(r["outcome"] + ("/" + r["warnings"][0]["code"] if r.get("warnings") else "") for r in map(json.loads, open(sys.argv[1]))))' "$out/rebind.jsonl")"
