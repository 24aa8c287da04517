#!/usr/bin/env python3
"""False flags and power of `eaglelog requests`' per-request flags (docs/requests.md,
'Outliers'): the repetition-loop suspects and the lowest requests marked 'garbled output?'.

Clean runs come from the request-level simulator (simlab/simulate.py, with its Finish: lines):
no request loops and none is garbled, so any flag is a false one.  The rule's promise is that a
run without the fault flags a request with at most FLAG_ALPHA (5 %) probability, per kind of
flag.  Power: into each clean run, one request is made faulty at the table level —

    loop      a long output (twice the limit of the rule: ≥ 512 tokens and 2 × the median)
              whose verifies commit `--loop-tau` tokens each on average (default 3.5 of at most 4:
              below the 'within 10 % of the maximum' rule, so the robust-z test alone finds it)
    garbled   a request of the median length whose verifies commit `--garbled-tau` (1.3: the
              draft is rejected at the first position 70 % of the time)

and the share of runs that flag exactly it is reported.

    python benchmarks/requests_flags.py                   # 40 runs of each scenario, ~4 min
    python benchmarks/requests_flags.py --runs 10 --scenario continuous
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from eaglelog.analysis import requests as rq  # noqa: E402

SCENARIOS = ("reference", "continuous", "varying")


def one(job):
    """(clean: loop flags, garbled flags; loop found; garbled found) of one simulated run."""
    name, seed, loop_tau, garbled_tau = job
    import eaglelog
    from simlab.simulate import SCENARIOS as SC, simulate
    with tempfile.TemporaryDirectory() as d:
        path = simulate(SC[name], seed).write(os.path.join(d, "run.log"))
        table = rq.request_table(eaglelog.parse(path, cache=False))
    ok = table[table["tau"].notna()].reset_index(drop=True)
    groups = ok["source"].astype(str)
    mx = 4.0                                   # the simulator's k = 3

    def flags(df):
        out = rq._outliers(df, groups, 5, mx, rq.LOOP_MIN_TOKENS)
        return ([o.line_no for o in out if o.kind == "loop suspect"],
                [o.line_no for o in out if o.kind == "lowest" and o.why])
    loops, garbled = flags(ok)
    rng = np.random.default_rng(seed)
    outs = ok["output_tokens"].to_numpy(dtype=float)
    long_at = max(rq.LOOP_MIN_TOKENS, 2 * float(np.median(outs)))
    # a loop: a request's output made long, its verifies committing loop_tau tokens each
    bad = ok.copy()
    i = int(rng.integers(len(bad)))
    n_out = int(2 * long_at)
    steps = int(round((n_out - 1) / loop_tau))
    bad.loc[i, ["output_tokens", "steps", "step_tokens"]] = [n_out, steps, n_out - 1]
    bad.loc[i, "tau"] = (n_out - 1) / steps
    found_loop = bad.loc[i, "line_no"] in flags(bad)[0]
    # garbled: a request of the median length whose verifies commit garbled_tau tokens each
    bad = ok.copy()
    n_out = int(np.median(outs))
    steps = int(round((n_out - 1) / garbled_tau))
    bad.loc[i, ["output_tokens", "steps", "step_tokens"]] = [n_out, steps, n_out - 1]
    bad.loc[i, "tau"] = (n_out - 1) / steps
    found_garbled = bad.loc[i, "line_no"] in flags(bad)[1]
    return name, len(ok), len(loops), len(garbled), found_loop, found_garbled


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40, help="runs per scenario (default 40)")
    ap.add_argument("--scenario", action="append", choices=SCENARIOS,
                    help="a scenario (repeatable; default: all)")
    ap.add_argument("--loop-tau", type=float, default=3.5)
    ap.add_argument("--garbled-tau", type=float, default=1.3)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    names = a.scenario or list(SCENARIOS)
    jobs = [(n, s, a.loop_tau, a.garbled_tau) for n in names for s in range(a.runs)]
    t = time.perf_counter()
    with ProcessPoolExecutor(a.jobs) as ex:
        got = list(ex.map(one, jobs))
    print(f"# {len(got)} runs in {time.perf_counter() - t:.0f} s; injected loop τ {a.loop_tau}, "
          f"garbled τ {a.garbled_tau}")
    print(f"{'scenario':<12}{'requests':>9}{'runs with a loop flag':>23}{'with a garbled flag':>21}"
          f"{'loop found':>12}{'garbled found':>15}")
    for n in names:
        rows = [g for g in got if g[0] == n]
        k = len(rows)
        print(f"{n:<12}{np.mean([r[1] for r in rows]):>9.0f}"
              f"{100 * sum(r[2] > 0 for r in rows) / k:>22.1f}%"
              f"{100 * sum(r[3] > 0 for r in rows) / k:>20.1f}%"
              f"{100 * sum(r[4] for r in rows) / k:>11.1f}%"
              f"{100 * sum(r[5] for r in rows) / k:>14.1f}%")


if __name__ == "__main__":
    main()
