"""Rows per second through the ClickHouse functions (chdb) beside `classify --batch --jobs 1`.

usage: bench_udf.py MCP_TRIAGE_BINARY MAKE_EXCHANGES_PY WORKDIR [--count N] [--runs R]

Same exchanges as test_udf.py. Each function classifies every row of a Memory table (the query
sums the results' lengths, so every verdict is produced and read back); the CLI classifies the
same rows from a file on one thread and counts outcomes. The CLI and each function run
alternately R times; the ratio is the median of the pairs' rows/s ratios (target: at least
0.7 for the shipped TabSeparated functions; the JSONEachRow variants are shown). Exit 1 below
target.
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


def once(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def paired(cli, fn, runs):
    """The CLI and the function run alternately, `runs` times each: the ratio of each pair is
    taken on the machine as it was at that moment, and the median of those ratios is the
    figure. Why: timing the CLI once up front and the functions afterwards let a change of
    load in between move a ratio by 40% (bench runs of 2026-12-04 and 2026-12-06)."""
    pairs = [(once(cli), once(fn)) for _ in range(runs)]
    return (statistics.median(c for c, _ in pairs), statistics.median(f for _, f in pairs),
            statistics.median(c / f for c, f in pairs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("generator")
    ap.add_argument("workdir")
    ap.add_argument("--count", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=5)
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
        def cli_run(form=form):
            subprocess.run([binary, "classify", "--batch", paths[form], "--jobs", "1"],
                           check=True, capture_output=True)
        print(f"{form}: each function beside classify --batch --jobs 1 on the same rows, "
              f"{a.runs} alternating runs each (medians)")
        for fn in (f for f in names if ("full" in f) == (form == "full")):
            # every result is produced and read back; length() keeps the SQL around the
            # function cheap, so the figure is the function's (test_udf.py checks the verdicts)
            sql = f"SELECT sum(length({fn}({test_udf.fn_args(fn)}))) FROM ex"
            cli, t, ratio = paired(cli_run, lambda: sess.query(sql, "CSV"), a.runs)
            line = (f"  {fn}: {n / t:,.0f} rows/s ({t:.2f} s) beside the CLI's {n / cli:,.0f} "
                    f"({cli:.2f} s), ratio {ratio:.2f}")
            if fn.endswith("_json"):
                # Not shipped (test_udf.udf_dir makes them): ClickHouse's own JSON writing and
                # reading of every row is most of their time, so they are shown, not judged.
                print(f"{line} (JSONEachRow variant, not shipped: not judged)")
                continue
            ok = ratio >= TARGET
            failed |= not ok
            print(f"{line} {'ok' if ok else 'BELOW'} (target >= {TARGET})")
    print(json.dumps({"rows": n, "result": "FAIL" if failed else "PASS"}))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
