"""Classify an archive of mcp-triage capture files (`proxy --capture`) with PySpark.

    python classify_captures.py DIR_OR_GLOB... [--master local[2]] [--out VERDICTS_DIR]
                                [--summary FILE.json] [--server-from dir|file] [--now SECONDS]

Every line of every file is one exchange (docs/capture-format.md). Each line goes, as its raw
bytes, to `mcp_triage.classify_exchange_line`: the core's own exchange reader and classifier, the
code `mcp-triage classify --batch` runs, so the verdicts are the CLI's (a capture's `end`, base64
bodies, `no_response` and all); nothing of the mapping or of a rule is written here. Spark only
reads the files, carries the lines to Python workers in Arrow batches (`mapInArrow`) and counts.

Out: outcome counts per server, method and tool (printed, and with --summary as JSON, with the
totals in the shape of `classify --batch`'s summary: `verdicts` and `outcomes` of the tool calls,
`otherExchanges` and `kinds`, what every other kind of exchange (`initialize`, `tools/list`,
notifications, GET streams) was counted as, by `mcp_triage.count_exchange_line`, and `badLines`),
and with --out one Parquet row per line (file, server, seq, method, tool, kind, counted, layer,
outcome, the verdict JSON, or the error of a line that is not an exchange).

The server of a line is where its file sits (`--server-from dir`, the default: one directory per
proxy, `archive/SERVER/capture.jsonl[.N]`) or the file's name without `.jsonl` and its rotation
suffix (`--server-from file`). Capture lines do not name their upstream themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Iterator

# Characters Rust's `u8::is_ascii_whitespace` counts: `classify --batch` skips lines made only of
# them (Python's bytes.strip() would also strip \x0b, which the CLI reports as a bad line).
_BLANK = b" \t\n\r\x0c"

# The Parquet / Arrow schema of one classified line (mapInArrow's output).
VERDICT_SCHEMA = (
    "file string, server string, seq long, method string, tool string, kind string, "
    "counted string, layer string, outcome string, verdict string, error string"
)


def server_of(path: str, mode: str) -> str:
    """The server a capture file belongs to (see the module doc)."""
    path = re.sub(r"^file:(//)?", "", path)
    if mode == "dir":
        return os.path.basename(os.path.dirname(path)) or "-"
    name = os.path.basename(path)
    return re.sub(r"\.jsonl(\.\d+)?$", "", name) or "-"


def classify_batches(
    batches: Iterator,
    *,
    server_from: str,
    now: float | None,
    keep_verdict: bool,
    max_line_bytes: int,
) -> Iterator:
    """mapInArrow's function: Arrow batches of (file, seq, method, tool, line bytes) in,
    batches of VERDICT_SCHEMA rows out; blank lines are skipped, as `classify --batch` skips them.
    Runs on the Python workers, so it imports there."""
    import pyarrow as pa

    import mcp_triage

    names = [f.split()[0] for f in VERDICT_SCHEMA.split(", ")]
    servers: dict[str, str] = {}
    for batch in batches:
        cols = {n: batch.column(n).to_pylist() for n in ("file", "seq", "method", "tool")}
        lines = batch.column("line").to_pylist()
        out = {n: [] for n in names}
        for i, line in enumerate(lines):
            if line is None or line.strip(_BLANK) == b"":
                continue
            kind = counted = layer = outcome = verdict = error = None
            if len(line) > max_line_bytes:
                error = f"longer than --max-line-bytes {max_line_bytes} (skipped)"
            else:
                try:
                    c = mcp_triage.count_exchange_line(line, now=now)
                    v = c["verdict"]
                    kind, counted = c["kind"], c["counted"]
                    layer, outcome = v["layer"], v["outcome"]
                    if keep_verdict:
                        verdict = json.dumps(v, ensure_ascii=False, separators=(",", ":"))
                except ValueError as e:
                    error = str(e)
            for n in ("file", "seq", "method", "tool"):
                out[n].append(cols[n][i])
            file = cols["file"][i]
            if file not in servers:
                servers[file] = server_of(file, server_from)
            out["server"].append(servers[file])
            out["kind"].append(kind)
            out["counted"].append(counted)
            out["layer"].append(layer)
            out["outcome"].append(outcome)
            out["verdict"].append(verdict)
            out["error"].append(error)
        yield pa.RecordBatch.from_pydict(
            out,
            schema=pa.schema(
                [(n, pa.int64() if n == "seq" else pa.string()) for n in names]
            ),
        )


def spark_session(master: str, batch_rows: int):
    """A session bound to loopback only, UI off, quiet (WARN), workers on this interpreter."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    log4j = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
    quiet = f"-Dlog4j2.configurationFile=file:{log4j}"
    builder = (
        SparkSession.builder.master(master)
        .config("spark.driver.extraJavaOptions", quiet)
        .config("spark.executor.extraJavaOptions", quiet)
        .appName("mcp-triage-classify-captures")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch_rows))
        .config("spark.sql.shuffle.partitions", "4")
    )
    if master.startswith("local"):
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def classified(spark, paths, args):
    """The DataFrame of VERDICT_SCHEMA rows for every line of `paths`."""
    from pyspark.sql import functions as F

    # lineSep "\n": the CLI splits on \n only (Spark's default also splits on a lone \r).
    # recursiveFileLookup: rotated files and per-server directories alike.
    raw = (
        spark.read.option("lineSep", "\n")
        .option("recursiveFileLookup", "true")
        .text(paths)
        .select(F.col("_metadata.file_path").alias("file"), F.col("value"))
    )
    meta = F.from_json("value", "seq long, method string, tool string")
    lines = raw.select(
        "file",
        meta["seq"].alias("seq"),
        meta["method"].alias("method"),
        meta["tool"].alias("tool"),
        # the line's bytes as they are in the file (no UTF-8 check or repair on the way)
        F.col("value").cast("binary").alias("line"),
    )
    opts = dict(
        server_from=args.server_from,
        now=args.now,
        keep_verdict=args.out is not None,
        max_line_bytes=args.max_line_bytes,
    )
    return lines.mapInArrow(lambda it: classify_batches(it, **opts), VERDICT_SCHEMA)


# The kind `count_exchange_line` names a tool call by (a line of `tools/call`, or of an exchange
# file without methods).
TOOL_CALL = "tools/call"
# Row columns carried into the per-server table.
BY_TOOL = ("server", "method", "tool", "kind", "counted", "layer", "outcome", "count")


def summarize(rows) -> dict:
    """The counts: totals as `classify --batch` prints them (`verdicts` and `outcomes` of the
    tool calls, `otherExchanges` and `kinds` when there are other exchanges: what each kind was
    counted as), and per server, method and tool."""
    outcomes: dict[str, int] = {}
    kinds: dict[str, dict[str, int]] = {}
    by_tool = []
    bad = other = 0
    for r in rows:
        n = r["count"]
        if r["outcome"] is None:
            bad += n
        else:
            if r["kind"] == TOOL_CALL:
                outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + n
            else:
                other += n
            counted = kinds.setdefault(r["kind"], {})
            counted[r["counted"]] = counted.get(r["counted"], 0) + n
        by_tool.append({k: r[k] for k in BY_TOOL})
    summary = {"verdicts": sum(outcomes.values()), "outcomes": dict(sorted(outcomes.items()))}
    if other:
        summary["otherExchanges"] = other
        summary["kinds"] = {k: dict(sorted(c.items())) for k, c in sorted(kinds.items())}
    if bad:
        summary["badLines"] = bad
    summary["byServerTool"] = by_tool
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", metavar="DIR_OR_GLOB", help="capture files, directories or globs")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.add_argument("--out", metavar="DIR", help="write one Parquet row per line here")
    p.add_argument("--summary", metavar="FILE", help="write the counts as JSON here")
    p.add_argument("--server-from", choices=("dir", "file"), default="dir")
    p.add_argument("--now", type=float, help="Unix seconds Retry-After dates are read against (default: the clock)")
    p.add_argument("--batch-rows", type=int, default=1000, help="lines per Arrow batch (bounds worker memory)")
    p.add_argument("--max-line-bytes", type=int, default=256 << 20, help="longest line classified (as classify --batch)")
    args = p.parse_args(argv)
    if args.batch_rows < 1 or args.max_line_bytes < 1:
        p.error("--batch-rows and --max-line-bytes must be at least 1")

    spark = spark_session(args.master, args.batch_rows)
    try:
        from pyspark.sql import functions as F

        df = classified(spark, args.paths, args)
        if args.out:
            df.write.mode("errorifexists").parquet(args.out)
            df = spark.read.parquet(args.out)
        keys = BY_TOOL[:-1]
        counts = (
            df.groupBy(*keys)
            .agg(F.count(F.lit(1)).alias("count"))
            .orderBy(*keys)
            .collect()
        )
        errors = df.where(F.col("error").isNotNull()).select("file", "error").limit(5).collect()
    finally:
        spark.stop()
    summary = summarize(counts)
    for r in summary["byServerTool"]:
        print(
            f"{r['server'] or '-'}\t{r['method'] or '-'}\t{r['tool'] or '-'}\t"
            f"{r['kind'] or '-'}\t{r['counted'] or 'BAD_LINE'}\t"
            f"{r['layer'] or '-'}/{r['outcome'] or 'BAD_LINE'}\t{r['count']}"
        )
    total = {k: v for k, v in summary.items() if k != "byServerTool"}
    print(json.dumps(total, separators=(",", ":")))
    for e in errors:
        print(f"bad line in {e['file']}: {e['error']}", file=sys.stderr)
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
    # As `classify --batch`: 1 when lines were skipped, so a script cannot take it for a clean run.
    return 1 if summary.get("badLines") else 0


if __name__ == "__main__":
    sys.exit(main())
