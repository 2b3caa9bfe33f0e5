"""The Python surface: argument forms, the exceptions bad arguments raise, the retry policy."""

import datetime
import json

import pytest

import mcp_triage

OK = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":false}}'
JSON = {"Content-Type": "application/json"}


def test_classify_returns_the_verdict_dict():
    assert mcp_triage.classify(200, JSON, OK) == {
        "layer": "application",
        "outcome": "TOOL_SUCCESS",
        "resultType": "complete",
        "isError": False,
    }
    v = mcp_triage.classify(503, [("content-type", "application/json"), ("Retry-After", "2")], b"")
    assert (v["outcome"], v["status"], v["retryAfterMs"]) == ("HTTP_ERROR", 503, 2000)


def test_header_forms_and_repeated_headers():
    v = mcp_triage.classify(
        401,
        [(b"www-authenticate", b'Basic realm="x"'), ("WWW-Authenticate", 'Bearer error="invalid_token"')],
        b"",
    )
    assert v["authChallenge"]["scheme"] in ("Basic", "Bearer")
    assert mcp_triage.classify(200, None, b"")["outcome"] == "MISSING_RESPONSE"


def test_expect_id_type_matters_and_now_reads_retry_after_dates():
    assert mcp_triage.classify(200, JSON, OK, expect_id="1")["outcome"] == "INVALID_ENVELOPE"
    now = datetime.datetime(2015, 10, 21, 7, 28, 0, tzinfo=datetime.timezone.utc)
    v = mcp_triage.classify(429, {"Retry-After": "Wed, 21 Oct 2015 07:28:05 GMT"}, b"", now=now)
    assert v["retryAfterMs"] == 5000


def test_output_schema_dict_or_compiled():
    body = b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":"x"}}}'
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    a = mcp_triage.classify(200, JSON, body, output_schema=schema, protocol_version="2025-06-18")
    b = mcp_triage.classify(200, JSON, body, output_schema=mcp_triage.OutputSchema(schema), protocol_version="2025-06-18")
    assert a == b and a["outcome"] == "INVALID_TOOL_RESULT"


def test_limits_by_name():
    v = mcp_triage.classify(200, JSON, OK, limits={"maxBodyBytes": 10})
    assert v["limit"] == {"name": "maxBodyBytes", "max": 10}


@pytest.mark.parametrize(
    "call,exc,words",
    [
        (lambda: mcp_triage.classify("200", JSON, OK), TypeError, "status must be an int, not str"),
        (lambda: mcp_triage.classify(True, JSON, OK), TypeError, "status must be an int"),
        (lambda: mcp_triage.classify(42, JSON, OK), ValueError, "100-999, got 42"),
        (lambda: mcp_triage.classify(200, JSON, OK.decode()), TypeError, "not str (encode it first"),
        (lambda: mcp_triage.classify(200, JSON, None), TypeError, "body must be bytes"),
        (lambda: mcp_triage.classify(200, "application/json", OK), TypeError, "headers must be a mapping"),
        (lambda: mcp_triage.classify(200, [("a",)], OK), TypeError, "headers[0] must be a (name, value) pair"),
        (lambda: mcp_triage.classify(200, {"a": 1}, OK), TypeError, "headers[0] value must be str or bytes"),
        (lambda: mcp_triage.classify(200, JSON, OK, expect_id=1.5), TypeError, "expect_id must be an int or a str"),
        (lambda: mcp_triage.classify(200, JSON, OK, protocol_version="2099-01-01"), ValueError, "not a known revision"),
        (lambda: mcp_triage.classify(200, JSON, OK, output_schema={"type": 7}), ValueError, "invalid outputSchema"),
        (lambda: mcp_triage.classify(200, JSON, OK, output_schema="{}"), TypeError, "output_schema must be a dict"),
        (lambda: mcp_triage.classify(200, JSON, OK, now=-1), ValueError, "now must be a time at or after 1970"),
        (lambda: mcp_triage.classify(200, JSON, OK, now="today"), TypeError, "now must be Unix seconds"),
        (lambda: mcp_triage.classify(200, JSON, OK, limits={"maxBody": 1}), ValueError, "unknown field `maxBody`"),
        (lambda: mcp_triage.classify(200, JSON, OK, limits={"maxBodyBytes": -1}), ValueError, "limits:"),
        (lambda: mcp_triage.decide_retry("HTTP_ERROR"), TypeError, "verdict must be a dict"),
        (lambda: mcp_triage.decide_retry({"outcome": "NOPE"}), ValueError, "verdict is not a verdict"),
        (lambda: mcp_triage.decide_retry({"layer": "transport", "outcome": "TIMEOUT"}, delivery="maybe"), ValueError, "delivery must be"),
        (lambda: mcp_triage.decide_retry({"layer": "transport", "outcome": "TIMEOUT"}, attempt=0), ValueError, "attempt counts the sends"),
        (lambda: mcp_triage.decide_retry({"layer": "transport", "outcome": "TIMEOUT"}, options={"maxRetry": 3}), ValueError, "unknown field `maxRetry`"),
        (lambda: mcp_triage.decide_retry({"layer": "transport", "outcome": "TIMEOUT"}, jitter=2.0), ValueError, "jitter must be in [0, 1]"),
    ],
)
def test_bad_arguments_raise_the_language_exceptions(call, exc, words):
    with pytest.raises(exc) as e:
        call()
    assert words in str(e.value)


def test_stream_classifier_decides_early_and_is_used_up_once():
    sse = {"Content-Type": "text/event-stream"}
    s = mcp_triage.StreamClassifier(200, sse)
    s.feed(b'data: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n')
    assert not s.is_decided
    s.feed(b"data: " + OK + b"\n\n")
    assert s.is_decided
    v = s.finish()
    assert v["outcome"] == "TOOL_SUCCESS" and v["stream"]["notifications"] == 1
    with pytest.raises(ValueError, match="already returned its verdict"):
        s.finish()
    with pytest.raises(ValueError, match="already returned its verdict"):
        s.feed(b"x")


def test_interrupted_streams():
    s = mcp_triage.StreamClassifier(200, {"Content-Type": "text/event-stream"})
    s.feed(b'id: 4\ndata: {"jsonrpc":"2.0","method":"notifications/progress"}\n\n')
    v = s.interrupted("deadline of 5 s passed", timed_out=True)
    assert v["outcome"] == "TIMEOUT" and v["stream"]["lastEventId"] == "4"
    d = mcp_triage.decide_retry(v, None, "maybe_executed", 1, legacy_stream=True, jitter=0.0)
    assert (d["action"], d["lastEventId"], d["delayMs"]) == ("resume", "4", 200)


def test_decide_retry_follows_the_core_policy():
    v = mcp_triage.classify(503, JSON, b"")
    unsafe = mcp_triage.decide_retry(v, None, "sent", 1)
    assert unsafe["action"] == "give_up" and "resending could run it twice" in unsafe["reason"]
    hints = {"title": "Search", "readOnlyHint": True}
    d = mcp_triage.decide_retry(v, hints, "sent", 1, local_server=True, jitter=0.5)
    assert d == {
        "action": "resend",
        "delayMs": 300,
        "reason": "HTTP 503; safe to resend because the tool is annotated readOnlyHint (300 ms backoff)",
    }
    assert mcp_triage.decide_retry(v, hints, "sent", 3, local_server=True)["action"] == "give_up"
    remote = mcp_triage.decide_retry(v, hints, "sent", 1, options={"trust": "distrust"}, local_server=True)
    assert remote["action"] == "give_up"
    keyed = mcp_triage.decide_retry(v, None, "sent", 1, options={"idempotencyKey": True, "backoffBaseMs": 10}, jitter=0)
    assert (keyed["action"], keyed["delayMs"]) == ("resend", 10)
    assert mcp_triage.decide_retry(mcp_triage.classify(200, JSON, OK))["action"] == "done"


def test_classify_exchange_line_reads_exchange_and_capture_lines():
    line = '{"status":200,"contentType":"application/json","body":' + json.dumps(OK.decode()) + "}"
    assert mcp_triage.classify_exchange_line(line)["outcome"] == "TOOL_SUCCESS"
    assert mcp_triage.classify_exchange_line(line.encode() + b"\r\n")["outcome"] == "TOOL_SUCCESS"
    # a capture's `end`: a body the upstream broke off is judged broken off
    cut = ('{"status":200,"contentType":"text/event-stream","body":"event: message\\ndata: {",'
           '"end":"upstream_closed","expectId":1}')
    assert mcp_triage.classify_exchange_line(cut)["outcome"] == "STREAM_INCOMPLETE"
    # no response head: 504 is the proxy's own response timeout
    assert mcp_triage.classify_exchange_line('{"status":504,"end":"no_response"}')["outcome"] == "TIMEOUT"


@pytest.mark.parametrize(
    "line,words",
    [(b"not json", "not an exchange line"), (b'{"status":42}', "status"), (b"[1]", "not an exchange line")],
)
def test_classify_exchange_line_names_what_is_wrong(line, words):
    with pytest.raises(ValueError, match=words):
        mcp_triage.classify_exchange_line(line)
    with pytest.raises(TypeError):
        mcp_triage.classify_exchange_line(42)


# A tasks/get answer: the task's state (working: the task is still running), not a tool result.
POLL = (b'{"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"working",'
        b'"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":60000}}')


def test_method_judges_a_task_poll_as_a_poll():
    assert mcp_triage.classify(200, JSON, POLL)["outcome"] == "INVALID_TOOL_RESULT"
    assert mcp_triage.classify(200, JSON, POLL, method="tasks/get")["outcome"] == "TASK_CREATED"
    s = mcp_triage.StreamClassifier(200, JSON, method="tasks/get")
    s.feed(POLL)
    assert s.finish()["outcome"] == "TASK_CREATED"


def test_count_exchange_line_names_the_kind_and_what_it_counts_as():
    def counted(line):
        c = mcp_triage.count_exchange_line(line)
        return c["kind"], c["counted"], c["verdict"]["outcome"]

    body = json.dumps('{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}')
    assert counted('{"status":200,"contentType":"application/json","body":' + body
                   + ',"method":"tools/list","transport":"http"}') == (
        "tools/list", "RESULT", "INVALID_TOOL_RESULT")
    assert counted('{"status":202,"method":"notifications/initialized","transport":"http"}')[:2] == (
        "notifications/initialized", "ACCEPTED")
    assert counted('{"status":200,"transport":"http"}')[:2] == ("(not JSON-RPC)", "FORWARDED")
    assert counted('{"status":503}') == ("tools/call", "HTTP_ERROR", "HTTP_ERROR")
    with pytest.raises(ValueError, match="not an exchange line"):
        mcp_triage.count_exchange_line(b"not json")
