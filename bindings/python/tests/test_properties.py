"""Properties (hypothesis): any bytes give a verdict; any split of the body into chunks fed to
StreamClassifier gives the verdict classify gives for the whole body."""

from hypothesis import given, settings, strategies as st

import mcp_triage
from golden import arguments, golden_files
import json

# Real bodies from the golden vectors, so that mutations reach the JSON, SSE and rule code and
# not only the first byte's rejection.
SEED_BODIES = []
for f in golden_files():
    for line in f.read_text(encoding="utf-8").splitlines():
        if line.strip():
            _, _, body, _ = arguments(json.loads(line))
            if len(body) < 4096:
                SEED_BODIES.append(body)

CONTENT_TYPES = [
    "application/json",
    "text/event-stream",
    "application/json; charset=latin1",
    "text/html",
    "",
]


@st.composite
def bodies(draw):
    kind = draw(st.sampled_from(["random", "seed", "mutated"]))
    if kind == "random":
        return draw(st.binary(max_size=2048))
    seed = draw(st.sampled_from(SEED_BODIES))
    if kind == "seed":
        return seed
    at = draw(st.integers(0, len(seed)))
    cut = draw(st.integers(0, 8))
    return seed[:at] + draw(st.binary(max_size=16)) + seed[at + cut :]


@st.composite
def responses(draw):
    status = draw(st.sampled_from([200, 200, 200, 202, 204, 401, 404, 429, 503]) | st.integers(100, 999))
    ct = draw(st.sampled_from(CONTENT_TYPES))
    headers = [("Content-Type", ct)] if ct else []
    if draw(st.booleans()):
        headers.append(("Retry-After", draw(st.sampled_from(["2", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "soon"]))))
    body = draw(bodies())
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=12)))
    expect_id = draw(st.sampled_from([1, 7, "1", "abc"]))
    return status, headers, body, cuts, expect_id


def chunks(body, cuts):
    edges = [0, *cuts, len(body)]
    return [body[a:b] for a, b in zip(edges, edges[1:])]


@settings(max_examples=1500, deadline=None)
@given(responses())
def test_any_split_gives_the_whole_body_verdict(response):
    status, headers, body, cuts, expect_id = response
    whole = mcp_triage.classify(status, headers, body, expect_id=expect_id, now=0)
    assert whole["layer"] in ("transport", "protocol", "interaction", "application")
    stream = mcp_triage.StreamClassifier(status, headers, expect_id=expect_id, now=0)
    for chunk in chunks(body, cuts):
        stream.feed(chunk)
        if stream.is_decided:
            break
    assert stream.finish() == whole


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=4096), st.sampled_from(CONTENT_TYPES), st.integers(100, 999))
def test_any_bytes_give_a_verdict_and_feeding_past_the_verdict_is_harmless(body, ct, status):
    headers = {"content-type": ct} if ct else {}
    v = mcp_triage.classify(status, headers, bytearray(body), now=0)
    assert isinstance(v["outcome"], str) and v["outcome"].isupper()
    stream = mcp_triage.StreamClassifier(status, headers, now=0)
    for b in range(0, len(body), 64):
        stream.feed(memoryview(body)[b : b + 64])
    stream.finish()
