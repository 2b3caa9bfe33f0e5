#!/usr/bin/env python3
"""Checks of integrations/envoy/test.sh that differ from nginx's (standard library only); the
rest (outcomes, same-bytes, passthrough, coded, streaming, the hostile upstream) are
integrations/nginx/check.py's, run against Envoy.

  check.py metrics ENVOY_PROM.txt PRX_METRICS.txt ENVOY_LOG PRX_LOG
      Envoy's /stats/prometheus parses (strict) and, with Envoy's prefix for module stats
      (envoy_dynamicmodulescustom_) taken off, has the proxy's mcp_triage_calls_total with its
      labels, counting exactly the lines of Envoy's log, and the duration histogram (milliseconds)
      with the proxy's bucket bounds
  check.py six URL_ENVOY ENVOY_LOG [ENVOY_MCP_LOG]
      the six answers of issue 43 (a result, isError, JSON-RPC -32602, 429 + Retry-After, SSE
      isError, SSE cut before its response): each logged with its right verdict, the cut stream as
      interrupted; with ENVOY_MCP_LOG (run.sh --with-envoy-mcp), Envoy's own MCP filter's metadata
      for each is printed beside ours
  check.py hostile URL_ENVOY URL_PROXY ENVOY_LOG PRX_LOG
      behind check.py upstream (nginx's hostile upstream): 9 Retry-After and 9 WWW-Authenticate
      lines give the proxy's verdict; query secrets are REDACTED in Envoy's line; a 16 KiB
      response head passes (Envoy's limit is 60 KiB) with the proxy's verdict
  check.py abuse URL_ENVOY URL_DIRECT ENVOY_LOG MAX_BODY
      a body over the limit and malformed bodies pass as directly and write no line; a request sent
      in 1-byte chunks and one with 90 header lines (Envoy refuses over 100 with 431) are classified; client aborts before and
      during an SSE response are logged cancelled (CONNECTION_ERROR, STREAM_INCOMPLETE)
  check.py timeouts URL_ENVOY ENVOY_LOG
      behind an Envoy with run.sh --read-timeout-ms 1000: no response head in time is logged
      TIMEOUT with Envoy's 504, a silent SSE stream cut by Envoy's idle timeout TIMEOUT
  check.py memory URL_ENVOY URL_ADMIN ENVOY_LOG COUNT
      Envoy's allocated bytes (admin /memory) grow by at most 4 MiB over COUNT classified
      exchanges after a warm-up of COUNT/10 (the kitchen's baseline), each logged
"""
import http.client
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter

def _load_nginx_checks():
    """integrations/nginx/check.py, loaded under its own name (this file is check.py too)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "nginx", "check.py")
    spec = importlib.util.spec_from_file_location("nginx_check", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ngx = _load_nginx_checks()

fail = ngx.fail
PREFIX = "envoy_dynamicmodulescustom_"
PROXY_BUCKETS_S = ["0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
                   "30", "60", "300", "+Inf"]


def check_metrics(envoy_path, prx_path, envoy_log, prx_log):
    with open(envoy_path, encoding="utf-8") as f:
        etypes, esamples = ngx.parse_prometheus(f.read())
    with open(prx_path, encoding="utf-8") as f:
        ptypes, psamples = ngx.parse_prometheus(f.read())
    etypes = {k[len(PREFIX):]: v for k, v in etypes.items() if k.startswith(PREFIX)}
    esamples = [(n[len(PREFIX):], lab, v) for n, lab, v in esamples if n.startswith(PREFIX)]
    if etypes.get("mcp_triage_calls_total") != ptypes.get("mcp_triage_calls_total") or \
            etypes.get("mcp_triage_call_duration_milliseconds") != "histogram":
        fail(f"metrics: Envoy's families {etypes}, the proxy's {ptypes}")
    ec, pc = ngx.calls_total(esamples), ngx.calls_total(psamples)
    logged = Counter((r.get("tool") or "unknown", r["layer"], r["outcome"])
                     for r in ngx.read_jsonl(envoy_log) if ngx.counted_call("nginx", r))
    counted = Counter({k[1:]: int(v) for k, v in ec.items()})
    if counted != logged:
        fail(f"metrics: Envoy's calls_total does not count the lines of its log: only counted"
             f" {sorted((counted - logged).items())}, only logged {sorted((logged - counted).items())}")
    if {k[0] for k in ec} != {k[0] for k in pc}:
        fail(f"metrics: server labels differ: {sorted({k[0] for k in ec})} vs {sorted({k[0] for k in pc})}")
    buckets = {}
    for name, lab, v in esamples:
        if name == "mcp_triage_call_duration_milliseconds_bucket":
            buckets.setdefault(lab["tool"], []).append(lab["le"])
    want = [b if b == "+Inf" else f"{float(b) * 1000:g}" for b in PROXY_BUCKETS_S]
    for tool, les in buckets.items():
        if les != want:
            fail(f"metrics: the duration buckets of {tool} are {les}, want the proxy's in ms {want}")
    if not buckets:
        fail("metrics: no duration histogram")
    print(f"metrics: parsed; {len(ec)} calls_total series count Envoy's log; labels as the proxy's;"
          f" duration buckets the proxy's in milliseconds")


SIX = [("result", "baseline", "&responseMode=json", "TOOL_SUCCESS"),
       ("isError", "errors.tool_error", "&responseMode=json", "TOOL_ERROR"),
       ("JSON-RPC -32602", "errors.jsonrpc_error", "&code=-32602&responseMode=json", "JSONRPC_ERROR"),
       ("429 + Retry-After", "errors.rate_limited", "&onInvocation=0&retryAfter=7", "HTTP_ERROR"),
       ("SSE isError", "errors.tool_error", "&responseMode=sse", "TOOL_ERROR"),
       ("SSE cut before its response", "sse.cut_before_response", "&responseMode=sse", "STREAM_INCOMPLETE")]


def check_six(via, envoy_log, envoy_mcp_log=None):
    for i, (what, sc, query, _) in enumerate(SIX):
        try:
            with ngx.post_call(f"{via}/s/{sc}/mcp?instance=six-{i}{query}") as r:
                r.read()
        except urllib.error.HTTPError:  # the 429: the client's side does not matter here
            pass
    time.sleep(1)
    mcp = ngx.read_jsonl(envoy_mcp_log) if envoy_mcp_log else []
    print("| answer | mcp-triage (Envoy filter) | detail | Envoy's MCP filter |")
    print("|---|---|---|---|")
    for i, (what, sc, _, want) in enumerate(SIX):
        line = ngx.line_for(envoy_log, f"six-{i}&")
        if line["outcome"] != want:
            fail(f"six: {what} ({sc}) logged {line['outcome']}, want {want}: {line}")
        theirs = [f'"status":"{m["envoy_mcp"].get("status")}" (HTTP {m["status"]})' for m in mcp
                  if f"instance=six-{i}&" in m.get("path", "") and isinstance(m.get("envoy_mcp"), dict)]
        print(f"| {what} | {line['outcome']} ({line['layer']}) | {line['verdict'].get('detail', '')[:90]} |"
              f" {theirs[0] if theirs else '-'} |")
    # and the stream the upstream resets in the middle of its response event: the case Envoy's Lua
    # filter has no hook for; the verdict comes from stream_complete, through `interrupted`
    try:
        with ngx.post_call(f"{via}/s/sse.cut_mid_event/mcp?instance=six-cut&responseMode=sse") as r:
            r.read()
    except http.client.IncompleteRead:  # the client sees the cut: expected
        pass
    time.sleep(1)
    cut = ngx.line_for(envoy_log, "six-cut&")
    if cut["outcome"] != "STREAM_INCOMPLETE" or "upstream_reset_after_response_started" not in cut["verdict"]["detail"]:
        fail(f"six: the stream cut mid-event was not recorded as interrupted by the upstream: {cut}")
    print(f"six: six right verdicts through Envoy, the cut stream as STREAM_INCOMPLETE; cut mid-event:"
          f" {cut['outcome']}: {cut['verdict']['detail'][:100]}")


def check_hostile(via_envoy, via_prx, envoy_log, prx_log):
    secret = "access_token=SECRET-A&Client_Secret=SECRET-B"
    status = {}
    for base, side in ((via_envoy, "envoy"), (via_prx, "proxy")):
        for path, tag in (("/challenges", "h-ch"), ("/mcp", "h-q"), ("/big-head", "h-big")):
            query = f"instance={tag}" + (f"&{secret}" if tag == "h-q" else "")
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                               "params": {"name": "t", "arguments": {}, "_meta": ngx.MODERN}}).encode()
            status[side, tag] = ngx.post_raw(f"{base}{path}?{query}", body)[0]
    time.sleep(1)
    for tag in ("h-ch", "h-q", "h-big"):
        e, p = ngx.line_for(envoy_log, tag), ngx.line_for(prx_log, tag)
        if e["verdict"] != p["verdict"] or e["path"] != p["path"]:
            fail(f"hostile {tag}: Envoy logged {e}, the proxy {p}")
    v = ngx.line_for(envoy_log, "h-ch")["verdict"]
    if (v.get("authChallenge") or {}).get("scheme") != "Bearer" or v.get("retryAfterMs") != 7000:
        fail(f"hostile challenges: the Bearer challenge (9th line) or the first Retry-After is lost: {v}")
    if status["envoy", "h-big"] != 200:
        fail(f"hostile big head: Envoy answered {status['envoy', 'h-big']}")
    if "SECRET" in open(envoy_log, encoding="utf-8").read() or \
            "access_token=REDACTED" not in ngx.line_for(envoy_log, "h-q")["path"]:
        fail("hostile: a query secret is in Envoy's log, or the query was not redacted")
    print(f"hostile: {len(ngx.CHALLENGES)} challenge lines give the proxy's verdict; query secrets"
          f" {ngx.line_for(envoy_log, 'h-q')['path']}; a {ngx.BIG_HEAD}-byte head passes")


def raw_exchange(url, head_lines, body, chunk=None, read=True, close_after=None):
    """One POST over a plain socket: `chunk` sends the body chunked in pieces of that many bytes;
    `close_after` closes after reading that many response bytes (None: read to the end)."""
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=20)
    target = u.path + ("?" + u.query if u.query else "")
    head = [f"POST {target} HTTP/1.1", f"Host: {u.netloc}", "Content-Type: application/json",
            "Accept: application/json, text/event-stream", "MCP-Protocol-Version: 2026-07-28",
            "Mcp-Method: tools/call", "Mcp-Name: run_configured_test_scenario",
            "Connection: close"] + head_lines
    if chunk:
        head.append("Transfer-Encoding: chunked")
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        for i in range(0, len(body), chunk):
            piece = body[i:i + chunk]
            s.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        s.sendall(b"0\r\n\r\n")
    else:
        head.append(f"Content-Length: {len(body)}")
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    got = b""
    while read:
        try:
            data = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not data:
            break
        got += data
        if close_after is not None and len(got) >= close_after:
            break
    s.close()
    return got


HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
           "Mcp-Name": "run_configured_test_scenario"}


def call_body(pad=0):
    msg = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
           "params": {"name": "run_configured_test_scenario", "arguments": {}, "_meta": ngx.MODERN}}
    if pad:
        msg["params"]["arguments"]["pad"] = "x" * pad
    return json.dumps(msg).encode()


def check_abuse(via, direct, envoy_log, max_body):
    # (no query secrets here: the kitchen refuses parameters it does not know; `hostile` has them)
    # huge and malformed bodies: Envoy answers as the server does directly, and writes no line
    for name, body in (("huge", call_body(4 * int(max_body))), ("broken", b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'),
                       ("binary", bytes(range(256)) * 64), ("deep", b"[" * 100000 + b"]" * 100000)):
        got = [ngx.post_raw(f"{b}/s/baseline/mcp?instance=abuse-{name}-{t}", body)
               for b, t in ((direct, "d"), (via, "e"))]
        if got[0] != got[1]:
            fail(f"abuse {name}: direct {got[0]!r:.200} != through Envoy {got[1]!r:.200}")
    # a request in 1-byte chunks, and one with 90 header lines (Envoy refuses over 100 with 431): both classified
    tiny = raw_exchange(f"{via}/s/baseline/mcp?instance=abuse-tiny", [], call_body(), chunk=1)
    many = raw_exchange(f"{via}/s/baseline/mcp?instance=abuse-many",
                        [f"X-Filler-{i}: {'v' * 20}" for i in range(90)], call_body())
    if b" 200 " not in tiny.split(b"\r\n", 1)[0] or b" 200 " not in many.split(b"\r\n", 1)[0]:
        fail(f"abuse: tiny chunks {tiny[:80]!r}, many headers {many[:80]!r}")
    # client aborts: before the response head (a slow tool), and in the middle of an SSE stream
    raw_exchange(f"{via}/s/baseline/mcp?instance=abuse-abort-head&slowReportDelayMs=1500", [], call_body(), read=False)
    raw_exchange(f"{via}/s/sse.keepalive/mcp?instance=abuse-abort-body&comments=5&intervalMs=400",
                 [], call_body(), close_after=1)
    time.sleep(3)
    lines = [r for r in ngx.read_jsonl(envoy_log) if "instance=abuse-" in r["path"]]
    tags = sorted(urllib.parse.parse_qs(urllib.parse.urlsplit(r["path"]).query)["instance"][0] for r in lines)
    if tags != ["abuse-abort-body", "abuse-abort-head", "abuse-many", "abuse-tiny"]:
        fail(f"abuse: Envoy logged {tags}, want the aborts, the tiny chunks and the many headers only")
    by = {urllib.parse.parse_qs(urllib.parse.urlsplit(r["path"]).query)["instance"][0]: r for r in lines}
    for tag in ("abuse-tiny", "abuse-many"):
        if by[tag]["outcome"] != "TOOL_SUCCESS":
            fail(f"abuse {tag}: {by[tag]}")
    # the core's verdicts of a client's hang-up: before the head a lost connection; in an SSE
    # stream before its response an incomplete stream (as the proxy records it)
    for tag, want in (("abuse-abort-head", "CONNECTION_ERROR"), ("abuse-abort-body", "STREAM_INCOMPLETE")):
        if by[tag]["outcome"] != want or not by[tag].get("cancelled"):
            fail(f"abuse {tag}: want {want}, cancelled: {by[tag]}")
    print("abuse: huge, broken, binary and deep bodies pass as directly, unlogged; 1-byte chunks and"
          " 90 header lines classified; client aborts logged as cancelled (CONNECTION_ERROR before the head, STREAM_INCOMPLETE in the stream)")


def check_timeouts(via, envoy_log):
    """Behind an Envoy started with --read-timeout-ms 1000: an answer that comes after 2.5 s is
    Envoy's 504 and logged TIMEOUT with that status (the proxy's verdict for no head in time, as
    the nginx module logs its 504); an SSE stream silent for 2.5 s after its head is cut by
    Envoy's idle timeout and logged through `interrupted` as TIMEOUT."""
    try:
        with ngx.post_call(f"{via}/s/timeout.late_response/mcp?instance=to-head&delayMs=2500") as r:
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    try:
        with ngx.post_call(f"{via}/s/sse.keepalive/mcp?instance=to-body&comments=1&intervalMs=2500") as r:
            r.read()
    except http.client.IncompleteRead:
        pass
    time.sleep(1)
    head, body = ngx.line_for(envoy_log, "to-head"), ngx.line_for(envoy_log, "to-body")
    if status != 504 or head["outcome"] != "TIMEOUT" or head["httpStatuses"] != [504]:
        fail(f"timeouts: no head in time: the client got {status}, Envoy logged {head}")
    if body["outcome"] != "TIMEOUT" or body["httpStatuses"] != [200] or "stream_idle_timeout" not in body["verdict"]["detail"]:
        fail(f"timeouts: a silent SSE stream: Envoy logged {body}")
    print(f"timeouts: no head in time: {head['outcome']} {head['httpStatuses']}; a silent stream:"
          f" {body['outcome']}: {body['verdict']['detail'][:90]}")


def allocated(admin):
    with urllib.request.urlopen(f"{admin}/memory", timeout=10) as r:
        return int(json.loads(r.read())["allocated"])


def check_memory(via, admin, envoy_log, count):
    """Memory stays flat: Envoy's allocated bytes (admin /memory, tcmalloc's count) after a
    warm-up of count/10 exchanges and after `count` more, every one classified and logged."""
    count = int(count)
    body = call_body()
    conn = http.client.HTTPConnection(urllib.parse.urlsplit(via).hostname, urllib.parse.urlsplit(via).port, timeout=20)

    def send(n, tag):
        for i in range(n):
            conn.request("POST", f"/s/baseline/mcp?instance={tag}", body, HEADERS)
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                fail(f"memory: exchange {i} answered {r.status}")
    send(count // 10, "mem-warm")
    time.sleep(0.5)
    before = allocated(admin)
    send(count, "mem")
    time.sleep(0.5)
    after = allocated(admin)
    conn.close()
    growth = after - before
    time.sleep(0.5)
    logged = sum(1 for r in ngx.read_jsonl(envoy_log) if r["path"].endswith("/s/baseline/mcp?instance=mem")
                 and r["outcome"] == "TOOL_SUCCESS")
    if logged != count:
        fail(f"memory: {logged} TOOL_SUCCESS lines for {count} exchanges")
    if growth > 4 << 20:
        fail(f"memory: Envoy's allocated bytes grew by {growth:,} over {count:,} exchanges ({before:,} -> {after:,})")
    print(f"memory: {count:,} exchanges: Envoy's allocated bytes {before:,} -> {after:,} ({growth:+,})")


def main(argv):
    cmds = {"metrics": (check_metrics, 4), "hostile": (check_hostile, 4), "abuse": (check_abuse, 4),
            "memory": (check_memory, 4), "timeouts": (check_timeouts, 2)}
    if len(argv) >= 2 and argv[1] in cmds and len(argv) == 2 + cmds[argv[1]][1]:
        cmds[argv[1]][0](*argv[2:])
    elif len(argv) in (4, 5) and argv[1] == "six":
        check_six(*argv[2:])
    else:
        fail("usage: see the docstring of integrations/envoy/check.py")


if __name__ == "__main__":
    main(sys.argv)
