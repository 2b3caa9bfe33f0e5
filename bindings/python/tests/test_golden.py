"""Every golden vector through the Python binding gives the Rust core's verdict, key for key, both
whole (classify) and fed in chunks (StreamClassifier)."""

import pytest

import mcp_triage
from golden import GOLDEN_DIR, arguments, cases

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


@pytest.mark.parametrize("name,line,case,want", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_golden_line_as_an_exchange_line(name, line, case, want):
    """The line's own bytes through the core's exchange reader: the CLI's verdict, with no
    argument mapping in Python (now=0 is the clock `classify --batch --now 0` gave)."""
    raw = [l for l in (GOLDEN_DIR / name).read_bytes().split(b"\n") if l.strip()][line - 1]
    assert mcp_triage.classify_exchange_line(raw, now=0) == want, case["name"]
