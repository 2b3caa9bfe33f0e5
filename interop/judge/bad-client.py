#!/usr/bin/env python3
"""A deliberately bad MCP client for `mcp-triage judge`: it resends everything at once.

Every request after the handshake goes out three times in parallel with the same JSON-RPC
id, then once more right away, whatever the server answered: no backoff, no Retry-After,
no idempotency key, no resumption, no re-initialize. The judge must fail it on every check
that grades resends, each with its journal line (crates/mcp-triage/tests/judge.rs).

    python3 bad-client.py URL        (MCP_TRIAGE_TOOL / MCP_TRIAGE_ARGS name the call)
    python3 bad-client.py URL --silent-exit N
        sends the call once, then exits N without a word, whatever came back: a client
        that ends without an outcome (as Node does with exit 13 when a top-level await
        never settles), which must fail `reported_outcome` and collect no resend check.

Standard library only; talks to 127.0.0.1 only because the judge gives it a loopback URL.
"""
import json
import os
import sys
import threading
import urllib.error
import urllib.request

URL = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP_TRIAGE_URL", "")
SILENT_EXIT = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--silent-exit" else None
if not URL.startswith("http://127.0.0.1:"):
    sys.exit("usage: bad-client.py http://127.0.0.1:PORT/...  (loopback only)")
TOOL = os.environ.get("MCP_TRIAGE_TOOL", "run_configured_test_scenario")
ARGS = json.loads(os.environ.get("MCP_TRIAGE_ARGS", "{}"))
VERSION = "2025-11-25"


def post(body, session=None):
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
    }
    if session:
        headers["Mcp-Session-Id"] = session
    req = urllib.request.Request(URL, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers.get("Mcp-Session-Id"), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, None, e.read().decode("utf-8", "replace")
    except Exception as e:  # cut streams, resets: the bad client does not care
        return None, None, f"{type(e).__name__}: {e}"


status, session, _ = post({
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {},
               "clientInfo": {"name": "bad-client", "version": "0"}},
})
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)

call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": TOOL, "arguments": ARGS}}
if SILENT_EXIT is not None:
    post(call, session)
    sys.exit(SILENT_EXIT)
answers = []
burst = [threading.Thread(target=lambda: answers.append(post(call, session))) for _ in range(3)]
for t in burst:
    t.start()
for t in burst:
    t.join()
answers.append(post(call, session))
for status, _, body in answers:
    print(f"{status} {body[:200]!r}")
