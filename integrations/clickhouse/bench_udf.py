"""Rows per second through the ClickHouse functions (chdb) beside `classify --batch --jobs 1`.

usage: bench_udf.py MCP_TRIAGE_BINARY MAKE_EXCHANGES_PY WORKDIR [--count N] [--runs R]

Same exchanges as test_udf.py. Each function classifies every row of a Memory table (the query
sums the results' lengths, so every verdict is produced and read back); the CLI classifies the
same rows from a file on one thread and counts outcomes. Medians of R runs;
the ratio is the function's rows/s over the CLI's (target: at least 0.7). Exit 1 below target.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from chdb import session as chs

import test_udf

TARGET = 0.7


def timed(fn, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("generator")
    ap.add_argument("workdir")
    ap.add_argument("--count", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    os.makedirs(a.workdir, exist_ok=True)
    paths, n = test_udf.make_exchanges(a.generator, a.workdir, a.count)
    os.environ["PATH"] = os.path.dirname(binary) + os.pathsep + os.environ["PATH"]
    d, names = test_udf.udf_dir(a.workdir)
    test_udf.chdb.g_udf_path = d
    sess = chs.Session()
    sess.query(f"CREATE TABLE ex ({test_udf.COLUMNS}) ENGINE = Memory")
    sess.query(f"INSERT INTO ex SELECT * FROM file('{paths['full']}', JSONEachRow, "
               f"'{test_udf.COLUMNS}')")
    failed = False
    for form in ("basic", "full"):
        cli = timed(lambda: subprocess.run(
            [binary, "classify", "--batch", paths[form], "--jobs", "1"],
            check=True, capture_output=True), a.runs)
        print(f"{form}: classify --batch --jobs 1: {n / cli:,.0f} rows/s ({cli:.2f} s)")
        for fn in (f for f in names if ("full" in f) == (form == "full")):
            # every result is produced and read back; length() keeps the SQL around the
            # function cheap, so the figure is the function's (test_udf.py checks the verdicts)
            sql = f"SELECT sum(length({fn}({test_udf.fn_args(fn)}))) FROM ex"
            t = timed(lambda: sess.query(sql, "CSV"), a.runs)
            ratio = cli / t
            ok = ratio >= TARGET
            failed |= not ok
            print(f"  {fn}: {n / t:,.0f} rows/s ({t:.2f} s), ratio {ratio:.2f} "
                  f"{'ok' if ok else 'BELOW'} (target >= {TARGET})")
    print(json.dumps({"rows": n, "result": "FAIL" if failed else "PASS"}))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
