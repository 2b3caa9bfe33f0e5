"""Reads the core's golden vectors (crates/mcp-triage-core/tests/golden/*.jsonl) into the
arguments of mcp_triage.classify, as crates/mcp-triage-core/src/exchange.rs reads an exchange line,
and the verdicts the Rust core gave for them (the directory bindings/test.sh fills with
`mcp-triage classify --batch FILE --each --format json --now 0`)."""

import base64
import email.utils
import json
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
GOLDEN_DIR = REPO / "crates" / "mcp-triage-core" / "tests" / "golden"


def golden_files():
    files = sorted(GOLDEN_DIR.glob("*.jsonl"))
    assert len(files) >= 10, f"golden files missing in {GOLDEN_DIR}"
    return files


def expected_dir():
    d = os.environ.get("MCP_TRIAGE_EXPECTED")
    if not d:
        raise RuntimeError(
            "MCP_TRIAGE_EXPECTED is not set: run bindings/test.sh, which writes the Rust core's "
            "verdicts for the golden files there"
        )
    return Path(d)


def cases():
    """(file, line number, case dict, the Rust core's verdict dict) for every golden line."""
    out = []
    for f in golden_files():
        lines = [l for l in f.read_text(encoding="utf-8").splitlines() if l.strip()]
        expected = (expected_dir() / f.name).read_text(encoding="utf-8").splitlines()
        assert len(expected) == len(lines), f"{f.name}: {len(lines)} cases, {len(expected)} core verdicts"
        for i, (line, want) in enumerate(zip(lines, expected), start=1):
            case = json.loads(line)
            out.append((f.name, i, case, json.loads(want)))
    return out


def coded_cases():
    """(file, plain line number, coded case dict, the Rust core's verdict of the plain line) for
    every line bindings/test.sh wrote compressed (gzip, br, zstd) into $MCP_TRIAGE_CODED."""
    d = os.environ.get("MCP_TRIAGE_CODED")
    if not d:
        raise RuntimeError("MCP_TRIAGE_CODED is not set: run bindings/test.sh, which writes the "
                           "compressed golden vectors there")
    out = []
    for f in sorted(Path(d).glob("*.jsonl")):
        expected = [l for l in (expected_dir() / f.name).read_text(encoding="utf-8").splitlines()
                    if l.strip()]
        for line in f.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            out.append((f.name, case["plainLine"], case, json.loads(expected[case["plainLine"] - 1])))
    return out


def arguments(case):
    """(status, headers, body, keyword arguments) for mcp_triage.classify."""
    headers = []
    if case.get("contentType"):
        headers.append(("Content-Type", case["contentType"]))
    # The core reads the `headers` object into a sorted map and skips Content-Type there when
    # the line has `contentType`.
    for name in sorted(case.get("headers") or {}):
        if name.lower() == "content-type" and "contentType" in case:
            continue
        headers.append((name, case["headers"][name]))
    if "bodyBase64" in case:
        body = base64.b64decode(case["bodyBase64"])
    else:
        body = case.get("body", "").encode("utf-8")
    kwargs = {"expect_id": case.get("expectId", 1), "now": 0}
    if "protocolVersion" in case:
        kwargs["protocol_version"] = case["protocolVersion"]
    if "outputSchema" in case:
        kwargs["output_schema"] = case["outputSchema"]
    if "method" in case:  # tasks.jsonl: answers to tasks/get, judged as task polls
        kwargs["method"] = case["method"]
    if "now" in case:
        kwargs["now"] = email.utils.parsedate_to_datetime(case["now"]).timestamp()
    return case["status"], headers, body, kwargs
