"""The ClickHouse UDF through chdb (ClickHouse in-process) against `classify --batch`.

usage: test_udf.py MCP_TRIAGE_BINARY MAKE_EXCHANGES_PY WORKDIR [--count N]

Generates N exchanges (JSON bodies and SSE streams) with the shared deterministic generator,
gives a third of them response headers and a protocol version, loads them into a chdb table and
counts outcomes with SQL through every function in this directory's XML files (basic and full
form, executable and executable_pool), and through JSONEachRow variants of them. Each count must
equal `classify --batch`'s summary of the same exchanges: the full form over the file as
written, the basic form over the same file without headers and protocol versions. Then a bad
row must get an error result in its place, not fail the query or shift the other rows.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import chdb
from chdb import session as chs

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ("n UInt64, status UInt16, contentType String, body String, expectId Int64, "
           "headers Map(String, String), protocolVersion String")
VERSIONS = ["", "2025-06-18", "2026-07-28", "2024-11-05"]


def make_exchanges(gen, workdir, count):
    """Writes full.jsonl (with headers and versions) and basic.jsonl (without)."""
    parts = []
    for mix, n in (("small", count * 4 // 5), ("sse", count - count * 4 // 5)):
        out = os.path.join(workdir, f"gen-{mix}.jsonl")
        subprocess.run([sys.executable, gen, out, "--count", str(n), "--mix", mix, "--seed", "20"],
                       check=True)
        with open(out, encoding="utf-8") as f:
            parts.extend(json.loads(line) for line in f if line.strip())
    full, basic = [], []
    for i, x in enumerate(parts):
        b = {"n": i}  # the row's number: other members are ignored by the classifier
        b.update({k: x[k] for k in ("status", "contentType", "body", "expectId") if k in x})
        basic.append(b)
        f = dict(b)
        if i % 3 == 0:
            f["headers"] = {"Retry-After": str(i % 7), "X-Note": "tab\there, quote ' and \\"}
            f["protocolVersion"] = VERSIONS[i % len(VERSIONS)]
        full.append(f)
    paths = {}
    for name, rows in (("full", full), ("basic", basic)):
        paths[name] = os.path.join(workdir, f"{name}.jsonl")
        with open(paths[name], "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return paths, len(parts)


def batch_outcomes(binary, path):
    out = subprocess.run([binary, "classify", "--batch", path, "--jobs", "1"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["outcomes"]


def batch_verdicts(binary, path):
    out = subprocess.run([binary, "classify", "--batch", path, "--jobs", "1", "--each"],
                         check=True, capture_output=True, text=True).stdout
    return out.splitlines()


def udf_dir(workdir):
    """The shipped XML files, plus JSONEachRow variants of them (names end in _json)."""
    d = os.path.join(workdir, "udf")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    names = []
    for xml in sorted(f for f in os.listdir(HERE) if f.endswith("_function.xml")):
        text = open(os.path.join(HERE, xml), encoding="utf-8").read()
        shutil.copy(os.path.join(HERE, xml), d)
        # mcp_classify_capture takes a capture table's columns: test_capture.py runs it.
        names += [n for n in re.findall(r"<name>(mcp_classify\w*)</name>", text)
                  if "capture" not in n]
        variant = re.sub(r"<name>(mcp_classify\w*)</name>", r"<name>\1_json</name>", text)
        variant = variant.replace("<format>TabSeparated</format>", "<format>JSONEachRow</format>")
        variant = variant.replace("--format TabSeparated", "--format JSONEachRow")
        with open(os.path.join(d, xml.replace("_function", "_json_function")), "w") as f:
            f.write(variant)
    return d, names + [n + "_json" for n in names]


def fn_args(fn):
    args = "status, contentType, body, expectId"
    return args + ", headers, protocolVersion" if "full" in fn else args


def sql_verdicts(sess, fn):
    res = sess.query(f"SELECT {fn}({fn_args(fn)}) FROM ex ORDER BY n", "JSONCompact")
    return [row[0] for row in json.loads(res.bytes())["data"]]


def sql_outcomes(sess, fn):
    args = fn_args(fn)
    res = sess.query(f"SELECT JSONExtractString({fn}({args}), 'outcome') AS o, count() AS n "
                     f"FROM ex GROUP BY o ORDER BY o", "JSONCompact")
    return {o: int(n) for o, n in json.loads(res.bytes())["data"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("generator")
    ap.add_argument("workdir")
    ap.add_argument("--count", type=int, default=20000)
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    os.makedirs(a.workdir, exist_ok=True)
    paths, n = make_exchanges(a.generator, a.workdir, a.count)
    want = {"full": batch_outcomes(binary, paths["full"]),
            "basic": batch_outcomes(binary, paths["basic"])}
    each = {"full": batch_verdicts(binary, paths["full"]),
            "basic": batch_verdicts(binary, paths["basic"])}
    assert each["full"] != each["basic"], "headers and versions must change some verdicts"
    print(f"classify --batch over {n} exchanges: basic {want['basic']}; full {want['full']}")
    # The functions find mcp-triage on the PATH (the other way, MCP_TRIAGE_BIN, is checked last).
    os.environ["PATH"] = os.path.dirname(binary) + os.pathsep + os.environ["PATH"]
    d, names = udf_dir(a.workdir)
    chdb.g_udf_path = d
    sess = chs.Session()
    sess.query(f"CREATE TABLE ex ({COLUMNS}) ENGINE = Memory")
    sess.query(f"INSERT INTO ex SELECT * FROM file('{paths['full']}', JSONEachRow, '{COLUMNS}')")
    loaded = int(sess.query("SELECT count() FROM ex", "CSV").bytes().decode().strip())
    assert loaded == n, f"loaded {loaded} rows of {n}"
    failed = []
    for fn in names:
        form = "full" if "full" in fn else "basic"
        got = sql_outcomes(sess, fn)
        ok = got == want[form]
        print(f"{'ok  ' if ok else 'FAIL'} {fn}: {got}")
        # Every row's verdict JSON, not only the counts: headers and versions change some.
        verdicts = sql_verdicts(sess, fn)
        diff = [i for i, (a, b) in enumerate(zip(verdicts, each[form])) if a != b]
        if diff or len(verdicts) != len(each[form]):
            ok = False
            i = diff[0] if diff else min(len(verdicts), len(each[form]))
            print(f"FAIL {fn}: {len(diff)} verdicts differ from classify --batch --each, "
                  f"the first at row {i}: {verdicts[i:i+1]} vs {each[form][i:i+1]}")
        if not ok:
            failed.append(fn)
    failed += bad_rows(sess, names)
    failed += named_binary(sess, binary)
    if failed:
        sys.exit(f"FAILED: {failed}")
    print(f"all {len(names)} functions gave classify --batch's outcome counts over {n} rows")


def bad_rows(sess, names):
    """A row that is not an exchange (status 0) gets an error result in its own place."""
    failed = []
    for fn in names:
        extra = ""
        if "full" in fn:
            extra = ", map('Retry-After', '1'), '2099-01-01'"
        sql = (f"SELECT n, {fn}(toUInt16(if(n = 1, 0, 500)), '', '', toInt64(1){extra}) AS r "
               f"FROM (SELECT number AS n FROM numbers(3)) ORDER BY n")
        rows = [json.loads(line) for line in sess.query(sql, "JSONEachRow").bytes().splitlines()]
        verdicts = [json.loads(r["r"]) for r in rows]
        if "full" in fn:  # rows 0 and 2 name the unknown version, row 1 its bad status
            ok = ("status" in verdicts[1].get("error", "")
                  and all("protocolVersion" in verdicts[i].get("error", "") for i in (0, 2)))
        else:
            ok = ("status" in verdicts[1].get("error", "")
                  and verdicts[0].get("outcome") == verdicts[2].get("outcome") == "HTTP_ERROR")
        print(f"{'ok  ' if ok else 'FAIL'} {fn}: bad rows -> {[v.get('error', v.get('outcome')) for v in verdicts]}")
        if not ok:
            failed.append(fn + " (bad rows)")
    return failed


def named_binary(sess, binary):
    """MCP_TRIAGE_BIN names the binary when it is not on the PATH."""
    os.environ["PATH"] = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if p != os.path.dirname(binary))
    os.environ["MCP_TRIAGE_BIN"] = binary
    r = sess.query("SELECT JSONExtractString(mcp_classify(toUInt16(503), '', '', toInt64(1)), "
                   "'outcome')", "CSV").bytes().decode().strip()
    ok = r == '"HTTP_ERROR"'
    print(f"{'ok  ' if ok else 'FAIL'} MCP_TRIAGE_BIN names the binary: {r}")
    return [] if ok else ["MCP_TRIAGE_BIN"]


if __name__ == "__main__":
    main()
