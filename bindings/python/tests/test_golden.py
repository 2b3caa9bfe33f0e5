"""Every golden vector through the Python binding gives the Rust core's verdict, key for key, both
whole (classify) and fed in chunks (StreamClassifier)."""

import pytest

import mcp_triage
from golden import arguments, cases

CASES = cases()


def test_there_are_golden_cases():
    assert len(CASES) > 300


@pytest.mark.parametrize("name,line,case,want", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_golden_vector_matches_the_core(name, line, case, want):
    status, headers, body, kwargs = arguments(case)
    got = mcp_triage.classify(status, headers, body, **kwargs)
    assert got == want, f"{case['name']}: binding {got} != core {want}"
    assert got["outcome"] == case["expect"]["outcome"]

    stream = mcp_triage.StreamClassifier(status, headers, **kwargs)
    for at in range(0, len(body), 7):
        stream.feed(body[at : at + 7])
        if stream.is_decided:
            break
    assert stream.finish() == want, f"{case['name']}: fed in 7-byte chunks"
