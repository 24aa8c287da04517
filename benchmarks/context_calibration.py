#!/usr/bin/env python3
"""Calibration of the accept length's trend with the context (analysis/context.trend; issue 39,
'context length as an axis') against tests/context_sim.py's known slope.

    python benchmarks/context_calibration.py                 # 1000 series a case
    python benchmarks/context_calibration.py --series 200 --json out.json

Each series is ``windows`` decode windows whose mean context per running request drifts as an
AR(1) series in log2 (lag-1 ``ctx_phi``) and whose accept length is 3 + slope × log2(context /
4k) + 0.15 × an AR(1) series of lag-1 ``phi``, printed with two decimals (the simulator's
docstring).  Printed per case, side by side at the true slopes 0, −0.03 and −0.1 tokens per
doubling:

    cover   share of 95 % intervals holding the true slope
    reject  share of series whose interval excludes 0 (at slope 0: the false alarms; else the
            power)

Single-threaded numpy; about 5 ms a series of 400 windows.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

import numpy as np  # noqa: E402

from context_sim import calibrate  # noqa: E402

CASES = ((100, 0.5, 0.9), (100, 0.7, 0.9), (150, 0.9, 0.95), (400, 0.5, 0.97),
         (400, 0.9, 0.97), (400, 0.5, 0.995), (2000, 0.9, 0.99))
SLOPES = (0.0, -0.03, -0.1)


def run(series: int, windows: int, phi: float, ctx_phi: float, slope: float,
        seed: int) -> dict:
    cover, reject, have = calibrate(series, windows, slope, phi, ctx_phi, seed)
    return {"cover": cover, "reject": reject, "intervals": have}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20000)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    a = ap.parse_args()
    t0 = time.perf_counter()
    out = []
    print(f"{'windows':>7} {'phi':>5} {'ctx_phi':>7}  " +
          "  ".join(f"{'slope ' + format(s, '+.2f'):>17}" for s in SLOPES))
    print(f"{'':>22}  " + "  ".join(f"{'cover':>8} {'reject':>8}" for _ in SLOPES))
    for windows, phi, ctx_phi in CASES:
        row = {"windows": windows, "phi": phi, "ctx_phi": ctx_phi}
        cells = []
        for s in SLOPES:
            r = run(a.series, windows, phi, ctx_phi, s, a.seed)
            row[f"{s:+.2f}"] = r
            cells.append(f"{r['cover']:8.3f} {r['reject']:8.3f}")
        out.append(row)
        print(f"{windows:>7} {phi:>5} {ctx_phi:>7}  " + "  ".join(cells), flush=True)
    print(f"{a.series} series a case, {time.perf_counter() - t0:.1f} s; numpy {np.__version__}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"series": a.series, "seed": a.seed, "cases": out}, f, indent=1)


if __name__ == "__main__":
    main()
