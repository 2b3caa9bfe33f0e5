"""Checks what classify_captures.py produced against `mcp-triage classify --batch` (test.sh).

usage: check_job.py MCP_TRIAGE_BINARY ARCHIVE_DIR SUMMARY_JSON VERDICTS_PARQUET_DIR JOB_EXIT
                    [SERVER=RECORDS.jsonl ...]

- totals: the job's `verdicts`, `outcomes` (the tool calls), `otherExchanges`, `kinds` (what
  every kind of exchange was counted as) and `badLines` equal classify --batch's over every
  file of the archive;
- per server with its proxy's records given: the tool calls' outcome counts of classify --batch
  over that server's capture equal the outcomes of the proxy's `tools/call` request records;
- per server (a directory of the archive): the job's outcome counts equal classify --batch's
  over that directory's files;
- per line: for every file, the verdict JSON rows of the Parquet output are, as a multiset,
  the lines `classify --batch FILE --each --format json` prints, and each bad line's error is
  the CLI's error for it;
- the job exits 1 when classify --batch does (bad lines), 0 otherwise.
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pyarrow.parquet as pq


def batch(binary, files, each=False):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as t:
        for f in files:
            with open(f, "rb") as src:
                shutil.copyfileobj(src, t)
        t.flush()
        args = [binary, "classify", "--batch", t.name, "--jobs", "1"] + (["--each"] if each else [])
        r = subprocess.run(args, capture_output=True, check=False)
    if r.returncode not in (0, 1):
        sys.exit(f"classify --batch failed ({r.returncode}): {r.stderr.decode()}")
    out = r.stdout.decode()
    return (out.splitlines() if each else json.loads(out)), r.returncode


def main():
    binary, archive, summary_path, parquet_dir, job_exit = sys.argv[1:6]
    records = dict(a.split("=", 1) for a in sys.argv[6:])
    summary = json.load(open(summary_path, encoding="utf-8"))
    by_dir = collections.defaultdict(list)
    for d, _, names in os.walk(archive):
        for n in sorted(names):
            by_dir[os.path.basename(d)].append(os.path.join(d, n))
    files = [f for fs in by_dir.values() for f in fs]
    problems = []

    want, want_exit = batch(binary, files)
    totals = ("verdicts", "outcomes", "otherExchanges", "kinds", "badLines")
    got = {k: summary.get(k) for k in totals}
    exp = {k: want.get(k) for k in totals}
    print(f"classify --batch over {len(files)} files: {exp}")
    print(f"spark job:                        {got}")
    if got != exp:
        problems.append("totals differ")
    if int(job_exit) != want_exit:
        problems.append(f"job exit {job_exit}, classify --batch exit {want_exit}")

    for server, fs in sorted(by_dir.items()):
        w, _ = batch(binary, fs)
        g = collections.Counter()
        for r in summary["byServerTool"]:
            if r["server"] == server and r["kind"] == "tools/call":
                g[r["outcome"]] += r["count"]
        ok = dict(g) == w["outcomes"]
        print(f"{'ok  ' if ok else 'FAIL'} server {server}: {len(fs)} files, {dict(sorted(g.items()))}")
        if not ok:
            problems.append(f"server {server}: {dict(g)} != {w['outcomes']}")

    for server, path in sorted(records.items()):
        w, _ = batch(binary, by_dir[server])
        calls = collections.Counter()
        with open(path, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r.get("kind") == "request" and r.get("method") == "tools/call":
                    calls[r["outcome"]] += 1
        ok = dict(calls) == w["outcomes"] and sum(calls.values()) == w["verdicts"]
        print(f"{'ok  ' if ok else 'FAIL'} server {server}: tool calls by classify --batch "
              f"{w['verdicts']}, in the proxy's records {sum(calls.values())}")
        if not ok:
            problems.append(f"server {server}: tool calls {w['outcomes']} != records {dict(calls)}")

    table = pq.read_table(parquet_dir).to_pylist()
    rows = collections.defaultdict(list)
    for r in table:
        rows[r["file"].removeprefix("file://").removeprefix("file:")].append(r)
    checked = 0
    for f in files:
        lines, _ = batch(binary, [f], each=True)
        want_v = collections.Counter(l for l in lines if not l.startswith('{"error"'))
        want_e = collections.Counter(json.loads(l)["error"] for l in lines if l.startswith('{"error"'))
        got_v = collections.Counter(r["verdict"] for r in rows[f] if r["error"] is None)
        got_e = collections.Counter(r["error"].removeprefix("not an exchange line: ")
                                    for r in rows[f] if r["error"] is not None)
        if got_v != want_v or got_e != want_e:
            problems.append(f"{f}: per-line verdicts differ ({sum(got_v.values())} vs "
                            f"{sum(want_v.values())}; errors {dict(got_e)} vs {dict(want_e)})")
        checked += len(lines)
    if checked != len(table):
        problems.append(f"{len(table)} Parquet rows for {checked} lines")
    print(f"{'ok  ' if not problems else 'FAIL'} {checked} lines: each verdict equals classify --batch --each's")
    if problems:
        sys.exit("FAILED: " + "; ".join(problems))
    print("spark job over the capture archive agrees with classify --batch")


if __name__ == "__main__":
    main()
