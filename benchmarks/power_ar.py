#!/usr/bin/env python3
"""Power and coverage on the issue's own terms: 8 EAGLE3_PROF blocks and 30 decode windows whose
accept length has a per-window σ of 9 % and a stated lag-1 autocorrelation (an AR(1) series),
at true speedups 0.94, 1.00 and 1.06 against --baseline-toks 90.

    python benchmarks/power_ar.py                     # 200 runs a cell, 2 processes
    python benchmarks/power_ar.py --reps 400 --windows 60 --phi 0,0.3

The logs are written by tests/shortlogs.py (synthetic, SGLang v0.5.10 lines, millisecond or
whole-second stamps); the truth is the accept length the series is drawn around × the baseline
step / the cycle (27.28 ms): exact.  Unlike benchmarks/calibration.py's simulator, whose
single-stream windows carry longer-range correlation (requests, a drifting acceptance level:
their spread is about 1.5× what σ / √n gives), the windows here are exactly AR(1), so the
table shows what the interval rule itself costs at a known autocorrelation.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

CYCLE, BASE = 27.28, 90.0


def one(job):
    target, phi, seed, ms, windows, blocks, sigma = job
    import eaglelog
    from eaglelog.analysis.breakeven import Baseline, breakeven
    from shortlogs import short_log
    acc = target * CYCLE / (1000 / BASE)
    text = short_log(blocks=blocks, windows=windows, accept=acc, accept_sd=sigma * acc, phi=phi,
                     seed=seed, ms=ms, cycle=CYCLE)
    fd, path = tempfile.mkstemp(suffix=".log")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    try:
        r = breakeven(eaglelog.parse(path), Baseline(tok_s=BASE))
    finally:
        os.unlink(path)
    sp = r.speedup
    return target, phi, ms, r.verdict, sp.ci_low, sp.ci_high, sp.estimate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--windows", type=int, default=30)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--sigma", type=float, default=0.09, help="per-window σ of the accept length")
    ap.add_argument("--phi", default="0,0.15,0.3", help="lag-1 autocorrelations (comma list)")
    ap.add_argument("--targets", default="0.94,1,1.06")
    ap.add_argument("--stamps", default="ms,s", help="ms and/or s (whole seconds)")
    a = ap.parse_args()
    phis = [float(x) for x in a.phi.split(",")]
    targets = [float(x) for x in a.targets.split(",")]
    stamps = [s == "ms" for s in a.stamps.split(",")]
    jobs = [(t, p, seed, ms, a.windows, a.blocks, a.sigma) for t in targets for p in phis
            for ms in stamps for seed in range(a.reps)]
    with ProcessPoolExecutor(a.jobs) as ex:
        res = list(ex.map(one, jobs, chunksize=8))
    cells = defaultdict(list)
    for t, p, ms, v, lo, hi, est in res:
        cells[(p, ms, t)].append((v, lo, hi, est))
    print(f"{a.blocks} blocks + {a.windows} windows, accept length σ {a.sigma:.0%} a window, "
          f"{a.reps} runs a cell, 95 % intervals; decided = above or below, right = on the "
          "truth's side")
    print(f"{'lag-1':>6} {'stamps':>6} {'truth':>6} {'decided':>8} {'right':>6} {'cover':>6} "
          f"{'width':>7} {'spread':>7}")
    for (p, ms, t), rows in sorted(cells.items()):
        dec = np.mean([v in ("above", "below") for v, *_ in rows])
        right = np.mean([(v == "above" and t > 1) or (v == "below" and t < 1) for v, *_ in rows])
        cov = np.mean([lo is not None and lo <= t <= hi for _, lo, hi, _ in rows])
        w = np.mean([(hi - lo) / t for _, lo, hi, _ in rows if lo is not None])
        spread = 2 * 1.96 * float(np.std([e / t for *_, e in rows]))
        print(f"{p:6.2f} {'ms' if ms else 's':>6} {t:6.2f} {dec:8.1%} {right:6.1%} {cov:6.1%} "
              f"{w:7.3f} {spread:7.3f}")


if __name__ == "__main__":
    main()
