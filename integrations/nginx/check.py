#!/usr/bin/env python3
"""Checks of integrations/nginx/test.sh (standard library only).

  check.py outcomes CLIENT_NGX.jsonl NGX_LOG PREFIX_NGX CLIENT_PRX.jsonl PRX_LOG PREFIX_PRX
      every demo row: the tools/call outcomes in nginx's JSON log == those `mcp-triage proxy`
      recorded for the same row == the client's tools/call attempts
  check.py metrics NGX_METRICS.txt PRX_METRICS.txt NGX_LOG PRX_LOG
      nginx's /metrics parses as Prometheus text (strict) with the proxy's families, labels and
      buckets, and its calls_total counts exactly the lines of nginx's log
  check.py same-bytes URL_DIRECT URL_NGINX SCENARIO...
      a tools/call answered directly and through nginx: identical bodies, byte for byte
  check.py passthrough URL_DIRECT URL_NGINX NGX_LOG MAX_BODY_BYTES
      what is not a tools/call nginx may classify (tools/list, a notification, a batch, a body
      over the limit) passes as it does directly and writes no line
  check.py coded URL_DIRECT URL_NGINX URL_PROXY NGX_LOG PRX_LOG
      issue 44: answers the kitchen compresses (gzip, deflate, br, zstd; JSON and SSE) reach the
      client through nginx and the proxy byte for byte as sent, and nginx's line and the proxy's
      record hold the decoded body's outcome (a success, a tool error), not MALFORMED_JSON
  check.py streaming URL_NGINX
      the first SSE bytes of a slow stream arrive through nginx while the upstream holds it open
  check.py upstream PORT
      a hostile upstream on 127.0.0.1:PORT (runs until killed): the answers `hostile` sends for
  check.py hostile URL_NGINX URL_PROXY NGX_LOG PRX_LOG
      issue 41: many WWW-Authenticate and Retry-After lines give nginx the proxy's verdict; query
      secrets are redacted in nginx's line as in the proxy's record; a head too big for
      proxy_buffer_size is recorded as that, not as an upstream close

Why a separate file: the comparisons need JSON and a parser; bash would hide the logic.
"""
import json
import re
import sys
import time
import urllib.parse
import urllib.error
import urllib.request
from collections import Counter, defaultdict

# Client attempt kinds that are a tools/call POST (resume is a GET, poll/task_result are tasks/*).
CALL_KINDS = {"call", "input_round"}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def exchange_record(r):
    """A tools/call exchange's record: the proxy also writes `taskEnd` records (a task's final
    verdict, no HTTP exchange of its own, counted in its metrics), which the module has no
    counterpart for."""
    return r.get("method") == "tools/call" and r.get("kind", "request") == "request"


def counted_call(side, r):
    """Whether `calls_total` counts log record `r`. nginx counts every tools/call exchange; the
    proxy links a task's polls to its call and counts a task call once, at its `taskEnd`
    record, not its TASK_CREATED exchange (crates/mcp-triage-proxy/src/ui/metrics.rs)."""
    if r.get("method") != "tools/call":
        return False
    if side == "proxy" and r.get("outcome") == "TASK_CREATED":
        return r.get("kind") == "taskEnd"
    return True


def gateway_calls(path, prefix):
    """tools/call lines of a gateway log by instance tag (row), in the order they were written."""
    rows = defaultdict(list)
    for r in read_jsonl(path):
        if not exchange_record(r):
            continue
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(r["path"]).query)
        tag = q.get("instance", [""])[0]
        if tag.startswith(prefix) and tag[len(prefix):].isdigit():
            rows[int(tag[len(prefix):])].append(r)
    return rows


def client_calls(record):
    """The client's tools/call attempts of a row: (outcome, verdict detail)."""
    return [(a["verdict"]["outcome"], a["verdict"].get("detail", "")) for a in record["attempts"]
            if a["kind"] in CALL_KINDS]


def expected_from_gateway(line, client_detail):
    """What the client's attempt must be, given the gateway's line for it. Three differences
    are by design: the client gave up first (its deadline; the gateway saw the client hang up);
    the client checks structuredContent against the tool's outputSchema from tools/list, which
    neither gateway is given (both could pass it, the ABI takes output_schema_json; neither
    caches tools/list); and a legacy stream carried a server->client request the client could
    not answer (its record says INPUT_REQUIRED) while the gateways see the response the server
    sent after the client's refusal."""
    outcome = line["outcome"]
    if line.get("cancelled", False):
        # before the head: the client's deadline; after: the refused server request (above), or
        # a stream whose response the client read and closed before the server's end of stream
        # (the gateway decided the same outcome first: the race client_hung_up_race names)
        return {"TIMEOUT"} if not line["httpStatuses"] else {"INPUT_REQUIRED", outcome}
    if outcome == "TOOL_SUCCESS" and "outputSchema" in client_detail:
        return {outcome, "INVALID_TOOL_RESULT"}
    if refused_server_request(line):
        return {outcome, "INPUT_REQUIRED"}
    return {outcome}


def refused_server_request(line):
    v = line["verdict"]
    return (v.get("stream") or {}).get("serverRequests", 0) > 0 and v["layer"] == "application"


def client_hung_up_race(ngx_line, prx_line, client_attempt):
    """Two timing races of a client closing a stream, and no other difference:
    - a legacy stream with a server->client request the client refused: the client closes the
      stream after its answer while the server sends its response, so each gateway sees either
      that response or the client's hang-up;
    - a stream whose response the client has read: it closes the stream at once, before the
      server's end of stream, so a gateway may see the hang-up after the verdict was decided
      (same outcome, `cancelled` differs; seen once in CI on `sse.server_request` at 2025-11-25)."""
    if client_attempt[0] == "INPUT_REQUIRED":
        return all(line.get("cancelled", False) or refused_server_request(line)
                   for line in (ngx_line, prx_line))
    return ngx_line["outcome"] == prx_line["outcome"] == client_attempt[0]


def check_outcomes(client_ngx, ngx_log, p_ngx, client_prx, prx_log, p_prx):
    cn, cp = read_jsonl(client_ngx), read_jsonl(client_prx)
    if len(cn) != len(cp) or not cn:
        fail(f"the two demo runs have {len(cn)} and {len(cp)} rows")
    ngx, prx = gateway_calls(ngx_log, p_ngx), gateway_calls(prx_log, p_prx)
    compared = 0
    for i, (rn, rp) in enumerate(zip(cn, cp)):
        what = f"row {i} ({rn.get('scenario')}, {rn.get('protocolVersion')})"
        if rn["outcome"] != rp["outcome"]:
            fail(f"{what}: the client says {rn['outcome']} through nginx, {rp['outcome']} through the proxy")
        n = [(r["outcome"], r.get("cancelled", False)) for r in ngx.get(i, [])]
        p = [(r["outcome"], r.get("cancelled", False)) for r in prx.get(i, [])]
        c = client_calls(rn)
        if len(n) != len(p) or any(a != b and not client_hung_up_race(ln, lp, cc)
                                   for a, b, ln, lp, cc in zip(n, p, ngx[i], prx[i], c)):
            fail(f"{what}: nginx logged {n}, the proxy recorded {p}")
        if len(c) != len(n):
            fail(f"{what}: the client made {len(c)} tools/call attempts, nginx logged {len(n)}: {c} vs {n}")
        for (co, detail), line in zip(c, ngx.get(i, [])):
            if co not in expected_from_gateway(line, detail):
                fail(f"{what}: the client's attempt is {co}, nginx logged {line['outcome']}"
                     f" (cancelled={line.get('cancelled', False)})")
            compared += 1
        for r in ngx.get(i, []):
            if not isinstance(r.get("verdict"), dict) or r["verdict"].get("outcome") != r["outcome"]:
                fail(f"{what}: nginx line without its verdict: {r}")
    extra = set(ngx) - set(range(len(cn)))
    if extra:
        fail(f"nginx logged rows the demo does not have: {sorted(extra)}")
    print(f"outcomes: {len(cn)} rows, {compared} tools/call exchanges: nginx log == proxy log == client")


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def parse_prometheus(text):
    """Strict parser of the text exposition format 0.0.4 as we write it: families declared by
    HELP and TYPE before their samples, label values escaped, values floats."""
    if not text.endswith("\n"):
        fail("metrics: the text does not end with a newline")
    types, samples = {}, []
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            if typ not in ("counter", "gauge", "histogram", "summary", "untyped") or name in types:
                fail(f"metrics line {n}: bad TYPE line {line!r}")
            types[name] = typ
            continue
        m = SAMPLE.match(line)
        if not m:
            fail(f"metrics line {n}: not a sample: {line!r}")
        name, _, labels, value = m.groups()
        family = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
        if family not in types:
            fail(f"metrics line {n}: {name} has no TYPE line before it")
        lab, rest = {}, labels or ""
        while rest:
            lm = LABEL.match(rest)
            if not lm:
                fail(f"metrics line {n}: bad labels {labels!r}")
            lab[lm.group(1)] = lm.group(2)
            rest = rest[lm.end():]
        try:
            v = float(value)
        except ValueError:
            fail(f"metrics line {n}: value {value!r} is not a number")
        samples.append((name, lab, v))
    return types, samples


def calls_total(samples):
    return {(s[1]["server"], s[1]["tool"], s[1]["layer"], s[1]["outcome"]): s[2]
            for s in samples if s[0] == "mcp_triage_calls_total"}


def check_histogram(samples):
    by_tool = defaultdict(list)
    counts = {}
    for name, lab, v in samples:
        if name == "mcp_triage_call_duration_seconds_bucket":
            by_tool[lab["tool"]].append((lab["le"], v))
        elif name == "mcp_triage_call_duration_seconds_count":
            counts[lab["tool"]] = v
    for tool, buckets in by_tool.items():
        values = [v for _, v in buckets]
        if values != sorted(values) or buckets[-1][0] != "+Inf" or buckets[-1][1] != counts.get(tool):
            fail(f"metrics: histogram of {tool} is not cumulative up to +Inf == count: {buckets}")
    return by_tool


def check_metrics(ngx_path, prx_path, ngx_log, prx_log):
    with open(ngx_path, encoding="utf-8") as f:
        ntypes, nsamples = parse_prometheus(f.read())
    with open(prx_path, encoding="utf-8") as f:
        ptypes, psamples = parse_prometheus(f.read())
    for fam in ("mcp_triage_calls_total", "mcp_triage_call_duration_seconds"):
        if ntypes.get(fam) != ptypes.get(fam):
            fail(f"metrics: {fam} is {ntypes.get(fam)} in nginx, {ptypes.get(fam)} in the proxy")
    nc, pc = calls_total(nsamples), calls_total(psamples)
    # each side counts exactly its own log (nginx's and the proxy's logs were compared line by
    # line by `outcomes`; a refused server request can race, so the totals are not compared)
    for name, series, log in (("nginx", nc, ngx_log), ("proxy", pc, prx_log)):
        logged = Counter((r.get("tool") or "unknown", r["layer"], r["outcome"])
                         for r in read_jsonl(log) if counted_call(name, r))
        counted = Counter({k[1:]: int(v) for k, v in series.items()})
        if counted != logged:
            fail(f"metrics: {name}'s calls_total does not count the lines of its log:"
                 f" only counted {sorted((counted - logged).items())},"
                 f" only logged {sorted((logged - counted).items())}")
    if {k[0] for k in nc} != {k[0] for k in pc}:
        fail(f"metrics: server labels differ: {sorted({k[0] for k in nc})} vs {sorted({k[0] for k in pc})}")
    nb, pb = check_histogram(nsamples), check_histogram(psamples)
    for tool in nb:
        if [le for le, _ in nb[tool]] != [le for le, _ in pb.get(tool, [])]:
            fail(f"metrics: the buckets of {tool} differ from the proxy's")
    print(f"metrics: parsed; {len(nc)} calls_total series count nginx's log; families, labels, buckets as the proxy's")


MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


def post_call(url, id_=7):
    """A 2026-07-28 tools/call (no session needed); returns the response and its opening time."""
    body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call",
                       "params": {"name": "run_configured_test_scenario", "arguments": {},
                                  "_meta": MODERN}}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
        "Mcp-Name": "run_configured_test_scenario"})
    return urllib.request.urlopen(req, timeout=20)


def check_same_bytes(direct, via, scenarios):
    for sc in scenarios:
        got = []
        for base, tag in ((direct, "bytes-direct"), (via, "bytes-nginx")):
            with post_call(f"{base}/s/{sc}/mcp?instance={tag}-{sc}") as r:
                got.append(r.read())
        if got[0] != got[1] or not got[0]:
            fail(f"same-bytes {sc}: direct {got[0]!r} != through nginx {got[1]!r}")
        print(f"same-bytes: {sc}: {len(got[0])} bytes identical")


def post_raw(url, body):
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def check_passthrough(direct, via, ngx_log, max_body):
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "run_configured_test_scenario", "arguments": {}, "_meta": MODERN}}
    big = json.loads(json.dumps(call))
    big["params"]["arguments"]["pad"] = "x" * int(max_body)
    cases = {
        "list": {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": MODERN}},
        "notification": {"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 1, "_meta": MODERN}},
        "batch": [call],
        "over-limit": big,
    }
    for name, msg in cases.items():
        body = json.dumps(msg).encode()
        got = [post_raw(f"{base}/s/baseline/mcp?instance=pass-{name}-{tag}", body)
               for base, tag in ((direct, "direct"), (via, "nginx"))]
        if got[0] != got[1]:
            fail(f"passthrough {name}: direct {got[0]!r} != through nginx {got[1]!r}")
    time.sleep(0.3)
    logged = [r["path"] for r in read_jsonl(ngx_log) if "instance=pass-" in r["path"]]
    if logged:
        fail(f"passthrough: nginx logged requests it must pass untouched: {logged}")
    print(f"passthrough: {', '.join(cases)}: same status and body as direct, no line logged")


CODED = [("gzip", "json", "baseline", "TOOL_SUCCESS"), ("br", "sse", "baseline", "TOOL_SUCCESS"),
         ("zstd", "json", "errors.tool_error", "TOOL_ERROR"),
         ("deflate", "sse", "errors.tool_error", "TOOL_ERROR"),
         ("gzip", "sse", "errors.jsonrpc_error", "JSONRPC_ERROR")]


def check_coded(direct, via_ngx, via_prx, ngx_log, prx_log):
    for coding, mode, sc, _ in CODED:
        got = []
        for base, side in ((direct, "direct"), (via_ngx, "nginx"), (via_prx, "proxy")):
            tag = f"coded-{coding}-{mode}-{side}"
            url = f"{base}/s/{sc}/mcp?instance={tag}&responseMode={mode}&contentEncoding={coding}"
            with post_call(url) as r:
                got.append((r.headers.get("Content-Encoding"), r.read()))
        # (a short answer may go out in stored blocks, its text readable inside the coding)
        if got[0][0] != coding or got[0][1].startswith((b"{", b"event:", b"data:", b":")):
            fail(f"coded {coding} {mode}: the kitchen did not compress: {got[0]!r}")
        if got[1] != got[0] or got[2] != got[0]:
            fail(f"coded {coding} {mode}: direct {got[0]!r}, nginx {got[1]!r}, proxy {got[2]!r}")
    time.sleep(1)
    for coding, mode, _, outcome in CODED:
        for log, side in ((ngx_log, "nginx"), (prx_log, "proxy")):
            tag = f"coded-{coding}-{mode}-{side}"
            lines = [r for r in read_jsonl(log) if exchange_record(r) and f"instance={tag}&" in r["path"]]
            if len(lines) != 1 or lines[0]["outcome"] != outcome:
                fail(f"coded {coding} {mode}: {side} logged {lines}, want one {outcome}")
    print(f"coded: {len(CODED)} compressed answers byte for byte through nginx and the proxy,"
          " each logged with its decoded body's outcome")


def check_streaming(via):
    # three comments 800 ms apart, then the response: the upstream holds the stream ~2.4 s
    t0 = time.monotonic()
    with post_call(f"{via}/s/sse.keepalive/mcp?instance=stream-1&comments=3&intervalMs=800") as r:
        if not r.headers.get("Content-Type", "").startswith("text/event-stream"):
            fail(f"streaming: not an SSE response: {r.headers.get('Content-Type')}")
        first = r.read1(65536)
        t_first = time.monotonic() - t0
        rest = r.read()
        t_end = time.monotonic() - t0
    if not first.startswith(b":") or b'"result"' not in rest:
        fail(f"streaming: unexpected stream {first!r} ... {rest[-80:]!r}")
    if t_end - t_first < 1.5:
        fail(f"streaming: first bytes at {t_first:.3f} s, end at {t_end:.3f} s: nginx held the stream back")
    print(f"streaming: first SSE bytes after {t_first * 1000:.0f} ms, stream ended after {t_end * 1000:.0f} ms")


# The hostile upstream's answers (issue 41). More WWW-Authenticate and Retry-After lines than
# the modules once had slots for (7): the Bearer challenge a client must act on comes last, the
# first Retry-After is the one the core reads.
CHALLENGES = ([("Retry-After", "7")] + [("Retry-After", "1")] * 8
              + [("WWW-Authenticate", f'Basic realm="r{i}"') for i in range(8)]
              + [("WWW-Authenticate", 'Bearer resource_metadata="http://127.0.0.1/.well-known/'
                  'oauth-protected-resource", scope="mcp"')])
BIG_HEAD = 16384  # over the 4k proxy_buffer_size of the templates, under the proxy's 256 KiB


def serve_upstream(port):
    import http.server

    class Hostile(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                id_ = json.loads(body).get("id")
            except (ValueError, AttributeError):
                id_ = None
            path = urllib.parse.urlsplit(self.path).path
            status, fields = 200, []
            if path == "/challenges":
                status, fields = 401, CHALLENGES
            elif path == "/big-head":
                fields = [("X-Pad", "a" * BIG_HEAD)]
            out = json.dumps({"jsonrpc": "2.0", "id": id_, "result": {"content": []}}).encode()
            self.send_response(status)
            for name, value in fields:
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Hostile).serve_forever()


def line_for(log, tag):
    lines = [r for r in read_jsonl(log) if exchange_record(r) and f"instance={tag}" in r["path"]]
    if len(lines) != 1:
        fail(f"hostile {tag}: {len(lines)} lines in {log}, want 1")
    return lines[0]


def check_hostile(via_ngx, via_prx, ngx_log, prx_log):
    secret = "access_token=SECRET-A&Client_Secret=SECRET-B"
    got = {}
    for base, side in ((via_ngx, "nginx"), (via_prx, "proxy")):
        for path, tag in (("/challenges", "h-ch"), ("/mcp", "h-q"), ("/big-head", "h-big")):
            query = f"instance={tag}" + (f"&{secret}" if tag == "h-q" else "")
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                               "params": {"name": "t", "arguments": {}, "_meta": MODERN}}).encode()
            try:
                got[side, tag] = post_raw(f"{base}{path}?{query}", body)[0]
            except (ConnectionError, urllib.error.URLError) as e:
                got[side, tag] = f"no response ({e})"
    time.sleep(1)
    ngx = {t: line_for(ngx_log, t) for t in ("h-ch", "h-q", "h-big")}
    prx = {t: line_for(prx_log, t) for t in ("h-ch", "h-q")}
    # a: every WWW-Authenticate and Retry-After line reaches the classifier, as in the proxy
    v = ngx["h-ch"]["verdict"]
    if v != prx["h-ch"]["verdict"]:
        fail(f"hostile challenges: nginx's verdict {v} != the proxy's {prx['h-ch']['verdict']}")
    if (v.get("authChallenge") or {}).get("scheme") != "Bearer" or v.get("retryAfterMs") != 7000:
        fail(f"hostile challenges: the Bearer challenge (9th line) or the first Retry-After is lost: {v}")
    # b: query secrets redacted as the proxy redacts them
    if ngx["h-q"]["path"] != prx["h-q"]["path"] or "SECRET" in open(ngx_log, encoding="utf-8").read():
        fail(f"hostile query: nginx logged {ngx['h-q']['path']}, the proxy {prx['h-q']['path']}")
    # c: a head over proxy_buffer_size: nginx's 502, recorded as that limit, not an upstream close
    big = ngx["h-big"]
    detail = big["verdict"].get("detail", "")
    if got["nginx", "h-big"] != 502 or big["httpStatuses"] != [502] or "proxy_buffer_size" not in detail \
            or "too big header" not in detail:
        fail(f"hostile big head: client got {got['nginx', 'h-big']}, nginx logged {big}")
    if got["proxy", "h-big"] != 200:
        fail(f"hostile big head: the proxy (256 KiB limit) answered {got['proxy', 'h-big']}")
    print(f"hostile: {len(CHALLENGES)} challenge lines give the proxy's verdict; query secrets"
          f" {ngx['h-q']['path']}; a {BIG_HEAD}-byte head: {detail}")


def main(argv):
    cmds = {"outcomes": (check_outcomes, 6), "metrics": (check_metrics, 4)}
    if len(argv) >= 2 and argv[1] in cmds and len(argv) == 2 + cmds[argv[1]][1]:
        cmds[argv[1]][0](*argv[2:])
    elif len(argv) >= 5 and argv[1] == "same-bytes":
        check_same_bytes(argv[2], argv[3], argv[4:])
    elif len(argv) == 6 and argv[1] == "passthrough":
        check_passthrough(*argv[2:])
    elif len(argv) == 7 and argv[1] == "coded":
        check_coded(*argv[2:])
    elif len(argv) == 3 and argv[1] == "streaming":
        check_streaming(argv[2])
    elif len(argv) == 3 and argv[1] == "upstream":
        serve_upstream(argv[2])
    elif len(argv) == 6 and argv[1] == "hostile":
        check_hostile(*argv[2:])
    else:
        fail("usage: see the docstring of integrations/nginx/check.py")


if __name__ == "__main__":
    main(sys.argv)
