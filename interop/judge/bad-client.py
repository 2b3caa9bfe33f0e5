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
    python3 bad-client.py URL --liar
        sends the call once, then prints "result: ok" and exits 0 whatever came back: a
        claim of success the journal contradicts after a 503, a 429, a JSON-RPC error or a
        cut stream, which must fail `reported_outcome` there (and pass after a result).
    python3 bad-client.py URL --keyed
        sends the call with an idempotency key (`params.idempotencyKey`) and, while no
        result comes back, resends it with the same key twice more, 300 ms apart: safe only
        where the server honours the key, so it must fail `no_unsafe_resend` in
        `sse_cut.increment_counter` and pass it in `sse_cut.increment_counter.keys_honoured`.
    python3 bad-client.py URL --task-tight
        speaks 2026-07-28 with the tasks extension declared: creates the task and polls
        tasks/get in a tight loop (no wait) until it ends: must fail `poll_pace` in the
        `tasks.*` cases.
    python3 bad-client.py URL --task-resend
        as --task-tight, but sends the creating tools/call a second time, then polls
        politely: must fail `no_create_resend`.
    python3 bad-client.py URL --oauth-loop
        authorizes (RFC 9728 discovery, registration, PKCE, following the kitchen's
        auto-approving redirect), then resends every request refused with 401 eight more
        times with the same token: must fail `auth_bounded` in the `auth.*` cases.
    python3 bad-client.py URL --oauth-wrong-resource
        authorizes as above but asks for a token for another resource (RFC 8707 `resource`)
        and presents it here: must fail `token_audience`.
    python3 bad-client.py URL --resume-once
        resumes a primed stream once (GET + Last-Event-ID after `retry:`) and, when that
        stream drops too, gives up with a message: must fail `resume_again` in
        `sse.second_drop` (issue 45), where a second resumption with the same id gets the result.
    python3 bad-client.py URL --progress-ignored
        asks for progress (`_meta.progressToken`) but gives up at a fixed deadline
        (MCP_TRIAGE_REQUEST_TIMEOUT_MS, default 1500) however much progress flows: must fail
        `progress_keeps_alive` in `timeout.progress_keepalive` (issue 45; opencode #28186).
    python3 bad-client.py URL --no-oauth
        does no OAuth at all: pushes its call through the 401s, resending it three times with
        a new id each, then states the 401 and exits 1. It used to pass every `auth.*` case
        (a call answered 401 counted as a call, and the OAuth checks were n/a "no token to
        expire"); it must fail `tool_called` in the three OAuth cases and `refresh_once` /
        `scope_step_up` where those are the point (issue 45, defect 1).

Standard library only; talks to 127.0.0.1 only because the judge gives it a loopback URL.
"""
import base64
import hashlib
import json
import os
import re
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

URL = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MCP_TRIAGE_URL", "")
SILENT_EXIT = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--silent-exit" else None
MODE = sys.argv[2] if len(sys.argv) > 2 else None
OAUTH_MODE = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2].startswith("--oauth-") else None
if not URL.startswith("http://127.0.0.1:"):
    sys.exit("usage: bad-client.py http://127.0.0.1:PORT/...  (loopback only)")
TOOL = os.environ.get("MCP_TRIAGE_TOOL", "run_configured_test_scenario")
ARGS = json.loads(os.environ.get("MCP_TRIAGE_ARGS", "{}"))
VERSION = "2025-11-25"


def post(body, session=None, token=None):
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
    }
    if session:
        headers["Mcp-Session-Id"] = session
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(URL, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers.get("Mcp-Session-Id"), r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, None, e.read().decode("utf-8", "replace")
    except Exception as e:  # cut streams, resets: the bad client does not care
        return None, None, f"{type(e).__name__}: {e}"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


def fetch(url, data=None, form=False):
    """GET (or POST JSON / a form) a loopback URL; (status, headers, body) without following
    redirects."""
    if not url.startswith("http://127.0.0.1:"):
        sys.exit(f"bad-client: {url} is not loopback")
    headers = {"Accept": "application/json"}
    if data is not None:
        if form:
            data = urllib.parse.urlencode(data).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        else:
            data = json.dumps(data).encode()
            headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=5) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode("utf-8", "replace")


def oauth_token(wrong_resource):
    """The authorization code flow against the server's authorization server; with
    `wrong_resource` the token is asked for another resource than this one."""
    _, headers, _ = fetch(URL, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    challenge = headers.get("WWW-Authenticate", "")
    found = re.search(r'resource_metadata="([^"]+)"', challenge)
    if not found:
        sys.exit(f"bad-client: no resource_metadata in the challenge {challenge!r}")
    prm = json.loads(fetch(found.group(1))[2])
    issuer = urllib.parse.urlsplit(prm["authorization_servers"][0])
    meta = json.loads(fetch(f"{issuer.scheme}://{issuer.netloc}/.well-known/oauth-authorization-server{issuer.path}")[2])
    redirect = "http://127.0.0.1:9/callback"
    client = json.loads(fetch(meta["registration_endpoint"], {"redirect_uris": [redirect]})[2])["client_id"]
    resource = prm["resource"] + "-elsewhere" if wrong_resource else prm["resource"]
    verifier = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urllib.parse.urlencode({
        "response_type": "code", "client_id": client, "redirect_uri": redirect, "state": "s",
        "code_challenge": challenge, "code_challenge_method": "S256",
        "scope": " ".join(prm.get("scopes_supported", [])), "resource": resource,
    })
    _, headers, _ = fetch(f"{meta['authorization_endpoint']}?{query}")
    code = urllib.parse.parse_qs(urllib.parse.urlsplit(headers.get("Location", "")).query).get("code")
    if not code:
        sys.exit(f"bad-client: no code in the redirect {headers.get('Location')!r}")
    answer = json.loads(fetch(meta["token_endpoint"], {
        "grant_type": "authorization_code", "code": code[0], "redirect_uri": redirect,
        "client_id": client, "code_verifier": verifier, "resource": resource,
    }, form=True)[2])
    return answer["access_token"]


TOKEN = oauth_token(OAUTH_MODE == "--oauth-wrong-resource") if OAUTH_MODE else None

TASKS = "io.modelcontextprotocol/tasks"


def modern(rid, method, params, name=None):
    """One 2026-07-28 request (no session; `_meta` and headers as the era asks), declaring
    the tasks extension; (status, parsed JSON-RPC message or None)."""
    params = dict(params)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "bad-client", "version": "0"},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    if name:
        headers["Mcp-Name"] = name
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    req = urllib.request.Request(URL, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, None
    for line in text.splitlines():
        if line.startswith("data:"):
            text = line[5:]
    try:
        return 200, json.loads(text)
    except ValueError:
        return 200, None


def run_task(resend):
    """Create the task, maybe create it again, poll until it ends; exit 0 on a result."""
    import time
    call = {"name": TOOL, "arguments": ARGS}
    _, msg = modern(1, "tools/call", call, TOOL)
    task = (msg or {}).get("result", {})
    if task.get("resultType") != "task":
        print(f"no task: {msg}")
        sys.exit(1)
    if resend:
        modern(2, "tools/call", call, TOOL)
    rid = 10
    while True:
        if resend:
            time.sleep(0.3)
        rid += 1
        _, msg = modern(rid, "tasks/get", {"taskId": task["taskId"]}, task["taskId"])
        state = (msg or {}).get("result", {})
        if "error" in (msg or {}) or state.get("status") not in ("working", "input_required"):
            print(f"task ended: {msg}")
            sys.exit(0 if state.get("status") == "completed" else 1)
        if rid > 2000:
            print("task still working after 2000 polls")
            sys.exit(1)


if MODE in ("--task-tight", "--task-resend"):
    run_task(MODE == "--task-resend")


def send(body, session=None):
    """One request; in --oauth-loop mode a 401 is resent eight more times, same token."""
    answer = post(body, session, TOKEN)
    for _ in range(8 if OAUTH_MODE == "--oauth-loop" else 0):
        if answer[0] != 401:
            break
        answer = post(body, session, TOKEN)
    return answer


status, session, _ = send({
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {},
               "clientInfo": {"name": "bad-client", "version": "0"}},
})
if MODE == "--resume-once":
    import time
    status, _, body = post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                            "params": {"name": TOOL, "arguments": ARGS}}, session)
    primed = re.search(r"^id: *(\S+)", body, re.M)
    if not primed:
        print(f"result: {status} {body[:200]!r}")
        sys.exit(0 if '"result"' in body else 1)
    retry = re.search(r"^retry: *(\d+)", body, re.M)
    time.sleep(int(retry.group(1)) / 1000 if retry else 0.5)
    req = urllib.request.Request(URL, headers={
        "Accept": "text/event-stream", "MCP-Protocol-Version": VERSION,
        "Mcp-Session-Id": session or "", "Last-Event-ID": primed.group(1)})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            print(f"resumed: {r.read().decode('utf-8', 'replace')[:200]!r}")
            sys.exit(0)
    except Exception as e:  # the resumed stream dropped: this client does not try again
        print(f"error: the resumed stream dropped ({type(e).__name__}); giving up")
        sys.exit(1)
if MODE == "--progress-ignored":
    limit = int(os.environ.get("MCP_TRIAGE_REQUEST_TIMEOUT_MS") or "1500") / 1000
    asked = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
             "params": {"name": TOOL, "arguments": ARGS, "_meta": {"progressToken": "bad-1"}}}
    got = {}
    reader = threading.Thread(target=lambda: got.update(answer=post(asked, session)), daemon=True)
    reader.start()
    reader.join(limit)
    if reader.is_alive():
        print(f"error: no result within {limit} s; giving up (progress or not)", flush=True)
        os._exit(1)
    status, _, body = got["answer"]
    print(f"result: {status} {body[:200]!r}")
    sys.exit(0)
if MODE == "--no-oauth":
    for rid in (1, 2, 3, 4):
        status, _, body = post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                "params": {"name": TOOL, "arguments": ARGS}}, session)
        if status != 401:
            break
    print(f"error: HTTP {status} {body[:200]!r}")
    sys.exit(1)
if OAUTH_MODE:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": TOOL, "arguments": ARGS}}
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session, TOKEN)
    status, _, body = send(call, session)
    print(f"{status} {body[:200]!r}")
    sys.exit(0)
post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)

call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": TOOL, "arguments": ARGS}}
if SILENT_EXIT is not None:
    post(call, session)
    sys.exit(SILENT_EXIT)
if MODE == "--liar":
    post(call, session)
    print("result: ok")
    sys.exit(0)
if MODE == "--keyed":
    import time
    call["params"]["idempotencyKey"] = "bad-client-op-1"
    for attempt in range(3):
        if attempt:
            time.sleep(0.3)
        call["id"] = 1 + attempt
        status, _, body = post(call, session)
        print(f"{status} {body[:200]!r}")
        if status == 200 and '"result"' in body:
            break
    sys.exit(0)
answers = []
burst = [threading.Thread(target=lambda: answers.append(post(call, session))) for _ in range(3)]
for t in burst:
    t.start()
for t in burst:
    t.join()
answers.append(post(call, session))
for status, _, body in answers:
    print(f"{status} {body[:200]!r}")
