"""The capture function (mcp_classify_capture) through chdb over a real capture, against
`classify --batch` and the proxy's own records.

usage: test_capture.py MCP_TRIAGE_BINARY CAPTURE.jsonl RECORDS.jsonl WORKDIR

The capture is the demo plan through `mcp-triage proxy --capture` (test.sh makes it). It is
loaded into a table with README.md's statement, classified with README.md's query, and:
- the per-kind counts (kind, counted) equal `classify --batch`'s `kinds` over the same file, and
  the tool calls' outcome counts its `outcomes`, through the shipped TabSeparated function and
  its JSONEachRow variant;
- the tool calls' outcome counts equal the outcomes of the proxy's `tools/call` request records;
- the rows' verdicts are, as a multiset, the lines `classify --batch --each` prints.
"""
import collections
import json
import os
import subprocess
import sys

import chdb
from chdb import session as chs

from test_udf import udf_dir

# README.md's capture table: a capture line's columns as they load from the file.
COLUMNS = ("seq UInt64, status UInt16, contentType String, body String, bodyBase64 String, "
           "expectId String, headers Map(String, String), protocolVersion String, "
           "method String, `end` String")
# README.md's query: what every kind of exchange was counted as.
KINDS_SQL = """
SELECT JSONExtractString(r, 'kind') AS kind, JSONExtractString(r, 'counted') AS counted,
       count() AS n
FROM (SELECT {fn}(status, contentType, if(bodyBase64 != '', base64Decode(bodyBase64), body),
                  expectId, headers, protocolVersion, method, `end`) AS r FROM captures)
GROUP BY kind, counted ORDER BY kind, counted
"""
ROWS_SQL = """
SELECT JSONExtractRaw({fn}(status, contentType, if(bodyBase64 != '', base64Decode(bodyBase64), body),
                           expectId, headers, protocolVersion, method, `end`), 'verdict')
FROM captures
"""


def batch(binary, path, each=False):
    args = [binary, "classify", "--batch", path, "--jobs", "1"] + (["--each"] if each else [])
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return out.splitlines() if each else json.loads(out)


def record_tool_calls(path):
    calls = collections.Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "request" and r.get("method") == "tools/call":
                calls[r["outcome"]] += 1
    return dict(calls)


def sql_kinds(sess, fn):
    res = sess.query(KINDS_SQL.format(fn=fn), "JSONCompact")
    kinds = collections.defaultdict(dict)
    for kind, counted, n in json.loads(res.bytes())["data"]:
        kinds[kind][counted] = int(n)
    return dict(kinds)


def main():
    binary, capture, records, workdir = sys.argv[1:5]
    binary = os.path.abspath(binary)
    want = batch(binary, capture)
    each = batch(binary, capture, each=True)
    calls = record_tool_calls(records)
    print(f"classify --batch over the capture: {want['verdicts']} tool calls {want['outcomes']}, "
          f"{want.get('otherExchanges', 0)} other exchanges")
    print(f"the proxy's tools/call records: {calls}")
    failed = []
    if calls != want["outcomes"]:
        failed.append(f"records {calls} != classify --batch {want['outcomes']}")
    if not want.get("otherExchanges"):
        failed.append("the capture holds no exchange but tool calls: nothing to count apart")
    os.environ["PATH"] = os.path.dirname(binary) + os.pathsep + os.environ["PATH"]
    d, _ = udf_dir(workdir)
    chdb.g_udf_path = d
    sess = chs.Session()
    sess.query(f"CREATE TABLE captures ({COLUMNS}) ENGINE = Memory")
    sess.query(f"INSERT INTO captures SELECT * FROM file('{os.path.abspath(capture)}', "
               f"JSONEachRow, '{COLUMNS}')")
    for fn in ("mcp_classify_capture", "mcp_classify_capture_json"):
        got = sql_kinds(sess, fn)
        tool_calls = got.get("tools/call", {})
        ok = got == want["kinds"] and tool_calls == want["outcomes"]
        print(f"{'ok  ' if ok else 'FAIL'} {fn}: {json.dumps(got, sort_keys=True)}")
        if not ok:
            failed.append(f"{fn}: {got} != {want['kinds']}")
        rows = [json.loads(r[0]) for r in
                json.loads(sess.query(ROWS_SQL.format(fn=fn), "JSONCompact").bytes())["data"]]
        mine = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows]
        theirs = [json.dumps(json.loads(l), ensure_ascii=False, separators=(",", ":")) for l in each]
        # As multisets: a capture's lines are in the order exchanges ended, not by seq.
        extra = collections.Counter(mine) - collections.Counter(theirs)
        missing = collections.Counter(theirs) - collections.Counter(mine)
        if extra or missing:
            failed.append(f"{fn}: {sum(extra.values())} row verdicts not in --each's, "
                          f"{sum(missing.values())} of --each's missing")
            print(f"FAIL {fn}: first extra {list(extra)[:1]}, first missing {list(missing)[:1]}")
    if failed:
        sys.exit("FAILED: " + "; ".join(failed))
    print(f"the capture function agrees with classify --batch and the proxy's records over "
          f"{len(each)} captured exchanges")


if __name__ == "__main__":
    main()
