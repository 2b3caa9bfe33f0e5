#!/usr/bin/env python3
"""A fixed number of MCP exchanges, for `bench/proxy-overhead.sh`'s instruction counts.

    mcp_exchanges.py URL COUNT [CONNECTIONS]
    mcp_exchanges.py --exchange FILE URL COUNT

One legacy session (initialize + notifications/initialized), then COUNT `tools/call
test_simple_text` requests spread over CONNECTIONS keep-alive HTTP/1.1 connections (default 1),
each connection sending its share back to back. Prints one JSON line: requests, errors.

`--exchange FILE` sends one such call and writes its response COUNT times to FILE as exchange
lines (`mcp-triage classify --batch` input: status, headers, body, expected id, protocol
version), so `crates/mcp-triage-ffi/examples/ffi_bench.rs` can count what the classifier alone
costs for the very exchange the gateways were measured with.

Why not the kitchen's `examples/load.rs`: it runs for a time, not a count, and a process under
callgrind runs some 50 times slower, so only a fixed count makes "instructions per exchange"
comparable between two runs (N and 2N exchanges: the difference over N leaves out startup).
The client's own speed does not matter here: only the proxy's instruction count is measured.
"""
import http.client
import json
import sys
import threading
from urllib.parse import urlsplit


def main():
    exchange_file = None
    if len(sys.argv) == 5 and sys.argv[1] == "--exchange":
        exchange_file = sys.argv[2]
        del sys.argv[1:3]
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: mcp_exchanges.py [--exchange FILE] URL COUNT [CONNECTIONS]")
    url = urlsplit(sys.argv[1])
    if url.scheme != "http" or url.hostname != "127.0.0.1":
        sys.exit(f"mcp_exchanges.py: only http://127.0.0.1 URLs, got {sys.argv[1]!r}")
    count = int(sys.argv[2])
    connections = int(sys.argv[3]) if len(sys.argv) == 4 else 1
    if count < 0 or connections < 1:
        sys.exit("mcp_exchanges.py: COUNT must be >= 0 and CONNECTIONS >= 1")
    path = url.path + ("?" + url.query if url.query else "")
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

    def post(conn, body, headers, keep=None):
        conn.request("POST", path, body=json.dumps(body), headers=headers)
        resp = conn.getresponse()
        if keep is not None:
            keep.update(status=resp.status, headers=dict(resp.getheaders()))
        return resp.status, resp.getheader("mcp-session-id"), resp.read()

    first = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
    status, sid, body = post(first, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-exchanges", "version": "1"}}}, base)
    if status != 200 or not sid:
        sys.exit(f"mcp_exchanges.py: initialize answered {status}: {body[:200]!r}")
    session = dict(base, **{"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
    status, _, body = post(first, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    if status not in (200, 202):
        sys.exit(f"mcp_exchanges.py: notifications/initialized answered {status}: {body[:200]!r}")
    if exchange_file is not None:
        write_exchange(first, post, session, exchange_file, count)
        first.close()
        return
    first.close()

    errors = [0] * connections

    def worker(w, n):
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        for i in range(n):
            msg = {"jsonrpc": "2.0", "id": (w << 32) + i + 1, "method": "tools/call",
                   "params": {"name": "test_simple_text", "arguments": {}}}
            try:
                status, _, body = post(conn, msg, session)
                if status != 200 or b'"result"' not in body:
                    errors[w] += 1
            except (OSError, http.client.HTTPException):
                errors[w] += 1
                conn.close()
                conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
        conn.close()

    shares = [count // connections + (1 if w < count % connections else 0) for w in range(connections)]
    threads = [threading.Thread(target=worker, args=(w, n)) for w, n in enumerate(shares)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"requests": count, "errors": sum(errors)}))


def write_exchange(conn, post, session, path, count):
    """One tools/call on `conn`; its response COUNT times as exchange lines in `path`."""
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "test_simple_text", "arguments": {}}}
    head = {}
    status, _, body = post(conn, msg, session, head)
    if status != 200:
        sys.exit(f"mcp_exchanges.py: tools/call answered {status}: {body[:200]!r}")
    line = json.dumps({"status": status, "headers": head["headers"], "body": body.decode(),
                       "expectId": 1, "protocolVersion": session["mcp-protocol-version"]})
    with open(path, "w", encoding="utf-8") as f:
        f.write((line + "\n") * count)
    print(json.dumps({"requests": 1, "errors": 0, "exchanges": count}))


if __name__ == "__main__":
    main()
