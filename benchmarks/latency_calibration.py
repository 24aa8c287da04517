#!/usr/bin/env python3
"""Calibration of `eaglelog latency` (issue 39) against tests/latency_sim.py's known truth.

    python benchmarks/latency_calibration.py                    # 500 runs, 1000 requests, B 2000
    python benchmarks/latency_calibration.py --runs 200 --requests 400 --resamples 1000
    python benchmarks/latency_calibration.py --json out.json

Each run simulates a speculative and a baseline `vllm bench serve --save-detailed` load test
at 1 … 8 req/s (the simulator's docstring states the distributions; the true crossover is
5 req/s) and analyses it with eaglelog.analysis.latency.  Printed per metric and quantile:

    cover   share of intervals holding the true quantile (the level is 95 %; TTFT and TPOT:
            order-statistic intervals, ITL: percentile bootstrap over requests)
    width   mean (high − low) / truth

and how often the crossover load is found within one load step of the truth, and exactly.
Single-threaded numpy; about 0.5 s a run at 1,000 requests a point with B = 2,000.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import latency_sim as S  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--requests", type=int, default=1000, help="requests a load point")
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args()
    t = time.perf_counter()
    r = S.calibrate(runs=a.runs, n=a.requests, resamples=a.resamples, seed=a.seed)
    dt = time.perf_counter() - t
    print(f"{a.runs} runs × 8 load points × 2 arms, {a.requests} requests a point, "
          f"B = {a.resamples}, 95 % intervals ({dt:.0f} s)")
    print(f"{'metric':8} {'quantile':8} {'cover':>7} {'width':>7}")
    for (m, q), c in r["coverage"].items():
        print(f"{m:8} {q:8} {c:7.3f} {r['width'][(m, q)]:7.3f}")
    print(f"crossover (true {r['true_crossover']:g} req/s): within one step "
          f"{r['crossover_within_one_step']:.3f}, exact {r['crossover_exact']:.3f}, found "
          f"{r['crossover_found']}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({**r, "coverage": {f"{m} {q}": v for (m, q), v in r["coverage"].items()},
                       "width": {f"{m} {q}": v for (m, q), v in r["width"].items()},
                       "seconds": dt}, fh, indent=2)


if __name__ == "__main__":
    main()
