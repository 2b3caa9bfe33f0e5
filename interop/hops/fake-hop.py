#!/usr/bin/env python3
"""Fake hops for `mcp-triage judge --hop` (Python standard library only, loopback only).

    fake-hop.py MODE LISTEN UPSTREAM [LABELS]

LISTEN is 127.0.0.1:PORT, UPSTREAM http://127.0.0.1:PORT. Each MODE is one hop behaviour
the judge must grade (crates/mcp-triage/tests/judge_hop.rs runs them all):

  relay        byte-transparent TCP relay: every byte both ways, a close passed on as a
               close. Must be graded "kept" on every case.
  success      turns every failure of a tools/call into a success: any status >= 400, a
               JSON-RPC error, isError, a cut or dropped answer all become HTTP 200 with a
               result. Must be caught as "success invented".
  resend       sends every tools/call upstream twice, answers with the second answer.
               Must be caught as "resent by the hop".
  buffer       reads each whole answer before sending any of it (SSE too). Must be caught
               as "stream held back".
  strip-retry  drops the Retry-After header. Must be caught as "retry information lost".
  no-session   drops Mcp-Session-Id from every request. Must be caught as "session broken".
  hide-expiry  answers 502 where the upstream said 404 (an expired session), so a client
               cannot know to re-initialize. Must be caught as "session broken".
  swallow      forwards every tools/call and never answers it (holds the connection open
               for 60 s). Must be caught as "lost".
  label-ok     passes every answer on (buffered) and labels every tools/call TOOL_SUCCESS in
               the file given as a 4th argument, one mcp-triage-proxy-style record a line (as
               gateways that count every tool call as a success do). Must be caught as a
               wrong label (judge --hop-labels mcp-triage-proxy, `{labels}`).

The HTTP modes answer each request on its own connection (Connection: close).
"""
import http.client
import http.server
import json
import socket
import sys
import threading
import time

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length",
              "proxy-connection", "te", "trailer", "upgrade"}
# Every upstream exchange is bounded: a hop under test must not hang the judge.
UPSTREAM_TIMEOUT = 30


def relay(listen, upstream):
    host, port = upstream.split("//", 1)[1].rstrip("/").split(":")
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lh, lp = listen.rsplit(":", 1)
    server.bind((lh, int(lp)))
    server.listen(64)

    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        # Pass the end on: a close upstream is a close downstream, and back.
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    while True:
        client, _ = server.accept()
        try:
            up = socket.create_connection((host, int(port)), timeout=UPSTREAM_TIMEOUT)
            up.settimeout(None)
        except OSError:
            client.close()
            continue
        threading.Thread(target=pump, args=(client, up), daemon=True).start()
        threading.Thread(target=pump, args=(up, client), daemon=True).start()


class Hop(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "buffer"
    upstream = ("127.0.0.1", 0)

    def log_message(self, *args):
        pass

    def forward(self, body):
        """One upstream exchange: (status, headers, body bytes, complete?) or None when
        the upstream sent no response."""
        conn = http.client.HTTPConnection(*self.upstream, timeout=UPSTREAM_TIMEOUT)
        drop = HOP_BY_HOP | ({"mcp-session-id"} if self.mode == "no-session" else set())
        headers = {k: v for k, v in self.headers.items() if k.lower() not in drop}
        headers["Host"] = "%s:%d" % self.upstream
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException):
            conn.close()
            return None
        try:
            data, complete = resp.read(), True
        except http.client.IncompleteRead as e:
            data, complete = e.partial, False
        except OSError:
            data, complete = b"", False
        conn.close()
        return resp.status, resp.getheaders(), data, complete

    def answer(self, status, headers, data, complete=True, drop=()):
        self.send_response_only(status)
        for k, v in headers:
            if k.lower() not in HOP_BY_HOP and k.lower() not in drop:
                self.send_header(k, v)
        if complete:
            self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        try:
            msg = json.loads(body) if body else {}
        except ValueError:
            msg = {}
        is_call = isinstance(msg, dict) and msg.get("method") == "tools/call"
        got = self.forward(body)
        if self.mode == "swallow" and is_call:
            time.sleep(60)
            self.close_connection = True
            return
        if self.mode == "resend" and is_call:
            got = self.forward(body) or got
        if self.mode == "success" and is_call and not succeeded(got):
            result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
            data = json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": result}).encode()
            return self.answer(200, [("Content-Type", "application/json")], data)
        if got is None:
            self.close_connection = True
            return
        status, headers, data, complete = got
        if self.mode == "label-ok" and is_call:
            line = {"method": "tools/call", "tool": msg.get("params", {}).get("name"),
                    "outcome": "TOOL_SUCCESS"}
            with open(self.labels, "a") as f:
                f.write(json.dumps(line) + "\n")
        drop = ("retry-after",) if self.mode == "strip-retry" else ()
        if self.mode == "hide-expiry" and status == 404:
            status = 502
        self.answer(status, headers, data, complete, drop)

    do_POST = do_GET = do_DELETE = handle_any


def succeeded(got):
    """Whether an upstream answer to a tools/call is a whole success (no error, no isError)."""
    if got is None:
        return False
    status, _, data, complete = got
    if status >= 400 or not complete:
        return False
    text = data.decode("utf-8", "replace")
    for chunk in [text] + [l[5:] for l in text.splitlines() if l.startswith("data:")]:
        try:
            m = json.loads(chunk)
        except ValueError:
            continue
        if isinstance(m, dict) and "result" in m and not m["result"].get("isError"):
            return m["result"].get("resultType") in (None, "complete")
    return False


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    mode, listen, upstream = sys.argv[1:4]
    Hop.labels = sys.argv[4] if len(sys.argv) == 5 else None
    if (mode == "label-ok") != (Hop.labels is not None):
        sys.exit("label-ok, and only it, takes a LABELS file\n" + __doc__)
    if mode == "relay":
        return relay(listen, upstream)
    modes = ("success", "resend", "buffer", "strip-retry", "no-session", "hide-expiry", "swallow",
             "label-ok")
    if mode not in modes:
        sys.exit("unknown mode %r\n%s" % (mode, __doc__))
    Hop.mode = mode
    h, p = upstream.split("//", 1)[1].rstrip("/").split(":")
    Hop.upstream = (h, int(p))
    lh, lp = listen.rsplit(":", 1)
    server = http.server.ThreadingHTTPServer((lh, int(lp)), Hop)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
