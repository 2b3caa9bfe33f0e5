"""Every golden vector compressed (gzip, br, zstd: bindings/test.sh writes them with the core's
`coded_golden` example) through the Python binding gives the plain vector's verdict, whole
(classify) and fed in 7-byte chunks (StreamClassifier): the binding hands Content-Encoding to the
core, which undoes it."""

import pytest

import mcp_triage
from golden import arguments, coded_cases

CASES = coded_cases()


def test_there_are_coded_cases():
    assert len(CASES) > 900
    assert {c[2]["headers"]["Content-Encoding"] for c in CASES} == {"gzip", "br", "zstd"}


@pytest.mark.parametrize(
    "name,line,case,want",
    CASES,
    ids=[f"{c[0]}:{c[1]}:{c[2]['headers']['Content-Encoding']}" for c in CASES],
)
def test_compressed_golden_vector_matches_the_plain_verdict(name, line, case, want):
    status, headers, body, kwargs = arguments(case)
    assert ("Content-Encoding", case["headers"]["Content-Encoding"]) in headers
    got = mcp_triage.classify(status, headers, body, **kwargs)
    assert got == want, f"{case['name']}: binding {got} != core {want}"

    stream = mcp_triage.StreamClassifier(status, headers, **kwargs)
    for at in range(0, len(body), 7):
        stream.feed(body[at : at + 7])
        if stream.is_decided:
            break
    assert stream.finish() == want, f"{case['name']}: fed in 7-byte chunks"
