#!/usr/bin/env python3
"""Whole-process speed and peak memory of `eaglelog parse` against grep on the same file.

    python benchmarks/parse_speed.py                 # 100 MB log from ../shared/bench/genlog.py
    python benchmarks/parse_speed.py --size-mb 1000 --runs 3
    python benchmarks/parse_speed.py --many 2000      # 2,000 small logs: parse and summary

Each command runs --runs times as its own process; the table shows the median wall time, the
throughput it implies and the largest peak RSS (os.wait4's ru_maxrss, the process's own).
The references run in the same invocation, on the same (page-cached) file.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys

from wholeproc import GENLOG, bytecode_as_installed, run  # (this folder)

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(cmd: str) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one shell command and its children; exits if it fails."""
    r = run(cmd)
    if not r.ok:
        sys.exit(f"failed ({r.failure()}): {cmd}\n{r.err}")
    return r.wall, r.rss_mib


def main() -> None:
    bytecode_as_installed()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--log", help="use this log instead of generating one")
    ap.add_argument("--genlog", default=GENLOG, help="path of shared/bench/genlog.py")
    ap.add_argument("--scaling", metavar="MB,MB,…",
                    help="instead: one uncached `summary` per size (e.g. 10,100,1000,2000) and a "
                         "table of time, MB/s, peak RSS and the grep|awk reference per size")
    ap.add_argument("--many", type=int, metavar="N",
                    help="instead: N copies of the bundled 5-step sample log (612 lines each), "
                         "uncached `parse` and `summary` of all of them in one call, against "
                         "grep over the same files")
    args = ap.parse_args()
    if args.many:
        return many(args.many, args.runs)
    if args.scaling:
        return scaling([float(x) for x in args.scaling.split(",")], args.genlog, args.runs)
    log = args.log or f"/tmp/eaglelog-bench-{args.size_mb:g}MB.log"
    if not os.path.exists(log):
        if not os.path.exists(args.genlog):
            sys.exit(f"parse_speed.py: no log to time: {args.genlog} (the workspace's synthetic "
                     "log generator) is not here; give --genlog PATH or --log FILE")
        print(f"generating {log} with {args.genlog} …", file=sys.stderr)
        subprocess.run([sys.executable, args.genlog, log, str(args.size_mb)], check=True)
    size_mb = os.path.getsize(log) / 1e6
    eaglelog = shutil.which("eaglelog") or f"{sys.executable} -m eaglelog"
    import tempfile
    cache_home = tempfile.mkdtemp(prefix="eaglelog-bench-cache-")
    nc = f"EAGLELOG_NO_CACHE=1 {eaglelog}"
    ca = f"XDG_CACHE_HOME={cache_home} {eaglelog}"
    subprocess.run(f"{ca} -q summary --baseline-toks 90 {log} > /dev/null", shell=True,
                   check=True)   # fills both caches
    cmds = [
        ("eaglelog parse (all tables)", f"{nc} -q parse {log}"),
        ("eaglelog summary (no cache)", f"{nc} -q summary --baseline-toks 90 {log}"),
        ("summary again (result cache)", f"{ca} -q summary --baseline-toks 90 {log}"),
        ("summary, new args (table cache)",
         f"EAGLELOG_NO_RESULT_CACHE=1 {ca} -q summary --baseline-toks 91 {log}"),
        ("grep -c 'Decode batch'", f"grep -c 'Decode batch' {log}"),
        ("grep|awk mean accept len",
         f"grep -oP 'accept len: \\K[\\d.]+' {log} | awk '{{s+=$1}} END {{print s/NR}}'"),
    ]
    subprocess.run(f"cat {log} > /dev/null", shell=True, check=True)  # warm the page cache
    print(f"log: {log} ({size_mb:.1f} MB), {args.runs} runs each, median wall time; "
          f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print(f"{'command':<30} {'wall s':>8} {'MB/s':>8} {'peak RSS MB':>12}")
    for label, cmd in cmds:
        walls, rss = [], []
        for _ in range(args.runs):
            w, r = measure(cmd)
            walls.append(w)
            rss.append(r)
        med = statistics.median(walls)
        print(f"{label:<30} {med:>8.3f} {size_mb / med:>8.1f} {max(rss):>12.0f}")


def many(n: int, runs: int) -> None:
    """N small logs (copies of sample_logs/eagle3_5step.log): whole-process `parse` and
    `summary` of all N in one call, each the median of ``runs``, with `grep -c` over the same
    files as the reference."""
    import tempfile
    sample = os.path.join(HERE, "..", "sample_logs", "eagle3_5step.log")
    eaglelog = shutil.which("eaglelog") or f"{sys.executable} -m eaglelog"
    with tempfile.TemporaryDirectory(prefix="eaglelog-many-") as d:
        with open(sample, "rb") as f:
            data = f.read()
        for i in range(n):
            with open(os.path.join(d, f"log{i:05d}.log"), "wb") as f:
                f.write(data)
        files = os.path.join(d, "*.log")
        print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; {n} logs of "
              f"{len(data) / 1e3:.0f} KB; median of {runs} runs each")
        print("| command | wall s | per log ms | peak RSS MB |")
        print("|---|---:|---:|---:|")
        for label, cmd in (("grep -c 'Decode batch'", f"cat {files} | grep -c 'Decode batch'"),
                           ("eaglelog parse", f"EAGLELOG_NO_CACHE=1 {eaglelog} -q parse {files}"),
                           ("eaglelog summary",
                            f"EAGLELOG_NO_CACHE=1 {eaglelog} -q summary {files}")):
            got = [measure(cmd) for _ in range(runs)]
            t = statistics.median(w for w, _ in got)
            print(f"| {label} | {t:.2f} | {1000 * t / n:.1f} | {max(r for _, r in got):.0f} |",
                  flush=True)


def scaling(sizes: list[float], genlog: str, runs: int) -> None:
    """Per size: uncached `summary` and the grep|awk one-liner, each the median of ``runs``
    whole-process runs in the same invocation; rows = the records the summary read."""
    eaglelog = shutil.which("eaglelog") or f"{sys.executable} -m eaglelog"
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; median of {runs} "
          "runs each; peak RSS is the largest of the runs")
    print("| size MB | eaglelog summary s | grep\\|awk s | ratio | peak RSS MB | rows/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for mb in sizes:
        log = f"/tmp/eaglelog-bench-{mb:g}MB.log"
        if not os.path.exists(log):
            if not os.path.exists(genlog):
                sys.exit(f"parse_speed.py: {genlog} is not here; give --genlog PATH")
            subprocess.run([sys.executable, genlog, log, str(mb)], check=True)
        subprocess.run(f"cat {log} > /dev/null", shell=True, check=True)
        rows = int(subprocess.run(
            ["grep", "-c", "-e", "Decode batch", "-e", "Prefill batch", "-e", "EAGLE3_PROF", log],
            capture_output=True, text=True).stdout)
        ts, gs, rss = [], [], []
        for _ in range(runs):
            t, r = measure(f"EAGLELOG_NO_CACHE=1 {eaglelog} -q summary --baseline-toks 90 {log}")
            g, _ = measure(f"grep -oP 'accept len: \\K[\\d.]+' {log} | awk '{{s+=$1}} END "
                           f"{{print s/NR}}'")
            ts.append(t)
            gs.append(g)
            rss.append(r)
        t, g = statistics.median(ts), statistics.median(gs)
        size = os.path.getsize(log) / 1e6
        print(f"| {size:.0f} | {t:.2f} | {g:.3f} | {t / g:.1f}× | {max(rss):.0f} | "
              f"{rows / t:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
