#!/usr/bin/env python3
"""The summary of bench/proxy-overhead.sh: medians over its rounds, ratios measured in the same run.

    proxy_overhead_report.py RESULTS INSTRUCTIONS BIG HWM_KB BIG_OUTCOME CONCURRENCY CLK_TCK WORK_MS

RESULTS: one JSON line per round, mode and row kind (latency, shared, dedicated, work), each with
one load run per process in the path; INSTRUCTIONS: callgrind totals for N and 2N exchanges. Either
may be empty (--quick has no instruction counts, --instructions no rounds). Every "target" line
compares figures from this one run only: on a shared machine, figures of different runs are not
comparable.
"""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1])]
instr = [json.loads(l) for l in open(sys.argv[2])]
big_json, hwm_kb, big_outcome = sys.argv[3], int(sys.argv[4]), sys.argv[5]
concurrency, tck, work_ms = sys.argv[6], int(sys.argv[7]), sys.argv[8]
med = statistics.median
ok = True
targets = []


def say(b):
    return "met" if b else "NOT met"


def errors(r):
    global ok
    for side, run in r.items():
        if isinstance(run, dict) and run.get("errors"):
            print(f"  errors in round {r['round']} {r['mode']} {r['what']} {side}: {run}")
            ok = False


def cpu_us(run):
    return run["ticks"] / tck / max(run["requests"], 1) * 1e6


def of(what, mode, side):
    return [r for r in rows if r["mode"] == mode and r["what"] == what and side in r]


LABELS = {"proxy": "proxy (default)", "nospin": "proxy --spin-us 0", "relay": "bare TCP relay",
          "h1relay": "HTTP/1.1 relay",
          "nginx": "nginx, 1 worker", "nginxauto": "nginx, auto workers"}

if rows:
    print(f"median of {len({r['round'] for r in rows})} alternating rounds; "
          f"latency with 1 connection, throughput with {concurrency}")
    for r in rows:
        errors(r)
if any(r["what"] == "latency" for r in rows):
    print(f"{'through':20} {'mode':5} {'direct p50':>11} {'p50':>8} {'added p50':>10} {'direct p99':>11} {'p99':>8}")
    lat_ok = {}
    for side in ("proxy", "nospin", "nginx"):
        for mode in ("json", "sse"):
            rs = of("latency", mode, side)
            if not rs:
                continue
            d50 = med(r["direct"]["p50_ms"] for r in rs) * 1000
            p50 = med(r[side]["p50_ms"] for r in rs) * 1000
            added = med((r[side]["p50_ms"] - r["direct"]["p50_ms"]) * 1000 for r in rs)
            d99 = med(r["direct"]["p99_ms"] for r in rs) * 1000
            p99 = med(r[side]["p99_ms"] for r in rs) * 1000
            if side != "nginx":
                lat_ok[LABELS[side]] = lat_ok.get(LABELS[side], True) and added <= 100
            print(f"{LABELS[side]:20} {mode:5} {d50:9.0f}µs {p50:6.0f}µs {added:8.0f}µs {d99:9.0f}µs {p99:6.0f}µs")
    targets.append("added p50 <= 100 µs: " + ", ".join(f"{w} {say(v)}" for w, v in lat_ok.items()))

thr_ok = {}
vs_nginx = {}
vs_relay = {}
if any(r["what"] in ("shared", "dedicated") for r in rows):
    print(f"{'placement':10} {'mode':5} {'through':20} {'direct rps':>11} {'rps':>8} {'of direct':>9} {'CPU/exchange':>13}")
    order = (("shared", ("proxy", "relay", "nginx", "nginxauto")),
             ("dedicated", ("proxy", "nospin", "relay", "nginx")),
             ("work", ("proxy", "nospin")))
    for what, sides in order:
        for side in sides:
            for mode in ("json", "sse"):
                rs = of(what, mode, side)
                if not rs:
                    continue
                d = med(r["direct"]["rps"] for r in rs)
                p = med(r[side]["rps"] for r in rs)
                ratio = med(r[side]["rps"] / r["direct"]["rps"] for r in rs)
                cpu = med(cpu_us(r[side]) for r in rs)
                if side in ("proxy", "nospin") and what != "work":
                    key = f"{what} {LABELS[side]}"
                    thr_ok[key] = thr_ok.get(key, True) and ratio >= 0.9
                place = what if what != "work" else f"{work_ms} ms tool"
                print(f"{place:10} {mode:5} {LABELS[side]:20} {d:11.0f} {p:8.0f} {ratio:9.1%} {cpu:10.0f} µs")
    print("(bare TCP relay: no HTTP, no records; shared: the ceiling for any user-space proxy on this machine;"
          f" dedicated: a reference only. The {work_ms} ms tool rows are context, not a target)")
    print("ratios within each round, median over rounds:")
    for what in ("shared", "dedicated"):
        for mode in ("json", "sse"):
            rs = of(what, mode, "relay")
            if rs:
                v = med(cpu_us(r["proxy"]) / max(cpu_us(r["relay"]), 1e-9) for r in rs)
                vs_relay[f"{what} {mode}"] = v
                print(f"  {what:9} {mode:4} proxy CPU per exchange / bare relay's: {v:5.2f}×")
            rs = of(what, mode, "nginx")
            if rs:
                v = med(r["proxy"]["rps"] / r["nginx"]["rps"] for r in rs)
                c = med(cpu_us(r["proxy"]) / max(cpu_us(r["nginx"]), 1e-9) for r in rs)
                vs_nginx[f"{what} {mode}"] = v
                line = f"  {what:9} {mode:4} proxy throughput / nginx (1 worker)'s: {v:5.2f}×; CPU per exchange {c:4.2f}×"
                auto = of(what, mode, "nginxauto")
                if auto:
                    line += f"; throughput / nginx auto's: {med(r['proxy']['rps'] / r['nginxauto']['rps'] for r in auto):4.2f}×"
                print(line)
    targets.append("throughput >= 90% of direct: " + ", ".join(f"{w} {say(v)}" for w, v in thr_ok.items()))
    if vs_relay:
        targets.append("CPU per exchange <= 1.5× the bare relay's: "
                       + ", ".join(f"{w} {say(v <= 1.5)} ({v:.2f}×)" for w, v in vs_relay.items()))
    if vs_nginx:
        targets.append("throughput >= nginx's: "
                       + ", ".join(f"{w} {say(v >= 1.0)} ({v:.2f}×)" for w, v in vs_nginx.items()))
    else:
        targets.append("throughput >= nginx's: not measured (no nginx)")

if instr:
    print(f"instructions per exchange under callgrind (user space only; one exchange at a time; "
          f"(total of {2 * instr[0]['n']} - total of {instr[0]['n']}) / {instr[0]['n']}):")
    per = {}
    for i in instr:
        per[(i["mode"], i["name"])] = (i["total_2n"] - i["total_n"]) / i["n"]
        print(f"  {i['mode']:4} {LABELS[i['name']]:20} {per[(i['mode'], i['name'])]:10,.0f}")
    for mode in ("json", "sse"):
        p = per.get((mode, "nospin"))
        if p is None:
            continue
        parts = []
        if (mode, "relay") in per:
            parts.append(f"{p / per[(mode, 'relay')]:.1f}× the bare relay's")
        if (mode, "nginx") in per:
            parts.append(f"{p / per[(mode, 'nginx')]:.2f}× nginx's")
        print(f"  {mode:4} proxy --spin-us 0: " + ", ".join(parts))

if big_json != "null":
    big = json.loads(big_json)
    hwm_mb = hwm_kb / 1024
    n, outcome, rbytes = big_outcome.split()
    print(f"1 GiB SSE through the proxy: {big['bytes']} bytes in {big['seconds']} s ({big['mib_per_s']} MiB/s), "
          f"proxy peak RSS {hwm_mb:.1f} MB, record: {outcome}, responseBytes {rbytes}")
    targets.append(f"RSS < 64 MB: {say(hwm_mb < 64)}")
if targets:
    print("targets (this run): " + "; ".join(targets) + ("" if ok else "; ERRORS in some runs"))
if not ok:
    sys.exit(1)
