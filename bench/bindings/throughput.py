"""Times the Python binding over an exchange file (bench/bindings-throughput.sh runs it).

  python throughput.py FILE.jsonl RUNS

Two figures, each the median of RUNS passes: `endToEnd` reads the file, parses each line with
Python's json module into classify()'s arguments (as crates/mcp-triage-core/src/exchange.rs does)
and classifies it — the same work as `mcp-triage classify --batch`; `classifyOnly` times the
classify() calls alone over arguments prepared beforehand. Prints one JSON object.
"""

import base64
import json
import statistics
import sys
import time

import mcp_triage


def arguments(x):
    headers = []
    if x.get("contentType"):
        headers.append(("Content-Type", x["contentType"]))
    for name, value in sorted((x.get("headers") or {}).items()):
        if name.lower() != "content-type" or "contentType" not in x:
            headers.append((name, value))
    if "bodyBase64" in x:
        body = base64.b64decode(x["bodyBase64"])
    else:
        body = x.get("body", "").encode("utf-8")
    return x["status"], headers, body, x.get("expectId", 1)


def end_to_end(path):
    outcomes, n, size = {}, 0, 0
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            status, headers, body, expect_id = arguments(json.loads(line))
            v = mcp_triage.classify(status, headers, body, expect_id=expect_id, now=0)
            outcomes[v["outcome"]] = outcomes.get(v["outcome"], 0) + 1
            n += 1
            size += len(body)
    return n, size, outcomes


def main():
    path, runs = sys.argv[1], int(sys.argv[2])
    e2e = []
    for _ in range(runs):
        t = time.perf_counter()
        n, size, outcomes = end_to_end(path)
        e2e.append(time.perf_counter() - t)
    with open(path, "rb") as f:
        prepared = [arguments(json.loads(line)) for line in f if line.strip()]
    only = []
    for _ in range(runs):
        t = time.perf_counter()
        for status, headers, body, expect_id in prepared:
            mcp_triage.classify(status, headers, body, expect_id=expect_id, now=0)
        only.append(time.perf_counter() - t)
    print(json.dumps({
        "exchanges": n,
        "bytes": size,
        "outcomes": outcomes,
        "endToEnd": statistics.median(e2e),
        "classifyOnly": statistics.median(only),
    }))


if __name__ == "__main__":
    main()
