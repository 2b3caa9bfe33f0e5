#!/usr/bin/env python3
"""The upstream and the client of `bench/envoy-filter-overhead.sh` (standard library only).

    envoy_bench.py upstream PORT
        an MCP server stand-in on 127.0.0.1:PORT answering every tools/call POST at once with a
        fixed response chosen by the path: /json (a small result), /sse (three SSE events, two
        notifications and the result, each its own chunk), /big (a 64 KiB text result); the
        request's id is echoed. Keep-alive HTTP/1.1.
    envoy_bench.py client URL COUNT
        COUNT tools/call requests one at a time over one keep-alive connection; prints
        {"requests": N, "errors": E}

Why not the kitchen: its answers carry a session and counters; here only Envoy's instructions
are counted, so the upstream is fixed and as small as possible, and its speed does not matter.
"""
import http.client
import http.server
import json
import sys
from urllib.parse import urlsplit

BIG_TEXT = "x" * 65536


def result(id_, text="ok"):
    return {"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": text}]}}


def notification(i):
    return {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": i, "total": 2}}


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # head and body leave in separate writes: without this each exchange waits for a delayed ACK
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            id_ = json.loads(body).get("id")
        except (ValueError, AttributeError):
            id_ = None
        path = urlsplit(self.path).path
        if path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for msg in (notification(1), notification(2), result(id_)):
                event = f"event: message\ndata: {json.dumps(msg)}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        out = json.dumps(result(id_, BIG_TEXT if path == "/big" else "ok")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def client(url, count):
    u = urlsplit(url)
    if u.hostname != "127.0.0.1":
        sys.exit(f"envoy_bench.py: only 127.0.0.1, got {url!r}")
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    errors = 0
    for i in range(count):
        body = json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                           "params": {"name": "bench", "arguments": {}}})
        conn.request("POST", u.path, body, {"Content-Type": "application/json",
                                            "Accept": "application/json, text/event-stream",
                                            "MCP-Protocol-Version": "2025-06-18"})
        r = conn.getresponse()
        data = r.read()
        if r.status != 200 or f'"id": {i + 1}'.encode() not in data:
            errors += 1
    conn.close()
    print(json.dumps({"requests": count, "errors": errors}))


def main(argv):
    if len(argv) == 3 and argv[1] == "upstream":
        http.server.ThreadingHTTPServer(("127.0.0.1", int(argv[2])), Upstream).serve_forever()
    elif len(argv) == 4 and argv[1] == "client":
        client(argv[2], int(argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
