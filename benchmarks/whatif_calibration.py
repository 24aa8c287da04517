#!/usr/bin/env python3
"""Calibration of `eaglelog whatif` against the simulator's truth (docs/whatif.md).

    python benchmarks/whatif_calibration.py --seeds 20

For each seed and batch size (1 and 4 clients), simulate runs with 1, 2, 3, 5 and 7 draft
steps on hardware whose verify is convex in the tokens verified (a quadratic term the cost
model does not have) and with an acceptance that falls with depth (not geometric), then:

* single run: predict the 1-, 2-, 3- and 7-step runs from the 5-step run alone — with the
  verify-slope prior, and with the hardware's plain step per batch size as the baseline
  (``--baseline-toks B:rate,…``, whose growth per token then gives the verify's);
* leave-one-run-out: predict each run from the other four;
* by batch size (``--by-batch``): the clients step 2 → 8 → 16 (120 s each), and every
  #running-req bucket of the 1-, 2-, 3- and 7-step runs is predicted from the 5-step run's
  same bucket (``whatif --by batch``), and each run's buckets from the other four; the same
  runs without EAGLE3_PROF blocks (the cost model fitted on derived cycles), whole-run (at
  each checked run's own batch mix) and per bucket.

Printed per case: configs predicted, the share whose measured per-stream rate lies inside the
95 % prediction interval, and the mean and σ of predicted / measured − 1.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import eaglelog  # noqa: E402
from simlab.simulate import ConvexVerify, Scenario, TiledVerify, simulate  # noqa: E402

STEPS = (1, 2, 3, 5, 7)
CURVE = (0.85, 0.74, 0.66, 0.6, 0.55, 0.5, 0.46)


HARDWARE = {"convex": ConvexVerify(),
            # issue 34: verify flat up to 64 tokens, + 5 ms for each 64-token tile begun after
            "tiled": TiledVerify(tile_tokens=64, tile_ms=5.0)}


def scenario(clients: int, hw: str = "convex") -> Scenario:
    return Scenario(name="w" if hw == "convex" else f"w{hw}", clients=((0.0, clients),),
                    think_s=0.05, output_median=250.0, output_sigma=0.4, duration_s=240.0,
                    prof_every=100, hw=HARDWARE[hw], accept_probs=CURVE)


LEVELS = ((0.0, 2), (120.0, 8), (240.0, 16))


def varying(hw: str = "convex") -> Scenario:
    return scenario(1, hw).replace(clients=LEVELS, duration_s=360.0)


def runs(clients: int, seed: int, workdir: str, sc: Scenario | None = None) -> dict[int, str]:
    out = {}
    sc = sc or scenario(clients)
    for s in STEPS:
        p = os.path.join(workdir, f"{sc.name}c{clients}-s{s}-{seed}.log")
        simulate(sc.replace(num_steps=s), seed * 10 + s).write(p)
        out[s] = p
    return out


def by_batch(seeds: int, workdir: str, hw_name: str = "convex") -> None:
    """Per-bucket predictions on runs whose batch size steps 2 → 8 → 16; the same runs without
    EAGLE3_PROF blocks (the derived-cycle cost model), whole-run and per bucket."""
    hw = HARDWARE[hw_name]
    per_batch = ",".join(f"{b}:{1000 / float(hw.step_ms(b)):.6g}" for b in range(1, 129))
    single, based, loo, whole, bare, bare_whole = [], [], [], [], [], []
    for seed in range(seeds):
        paths = runs(0, seed, workdir, varying(hw_name))
        noprof = runs(0, seed, workdir, varying(hw_name).replace(name=f"np{hw_name}",
                                                                   prof_every=0))
        w = eaglelog.whatif([noprof[s] for s in STEPS], steps=[1], by_batch=True)
        bare += [(c.predicted, c.measured.estimate) for c in w.batch_checks]
        bare_whole += [(c.predicted, c.measured.estimate) for c in w.checks if c.comparable]
        meas = {}
        for s, p in paths.items():
            w = eaglelog.whatif(p, steps=[s], by_batch=True)
            meas[s] = {r.batch: r.measured for r in w.by_batch}
        for base, got in ((None, single), (per_batch, based)):
            w = eaglelog.whatif(paths[5], steps=[1, 2, 3, 7], baseline_toks=base, by_batch=True)
            for r in w.by_batch:
                for p in r.predictions:
                    m = meas[p.steps].get(r.batch)
                    if m is not None and m.sufficient and p.eff_tok_s.sufficient:
                        got.append((p.eff_tok_s, m.estimate))
        w = eaglelog.whatif([paths[s] for s in STEPS], steps=[1], by_batch=True)
        loo += [(c.predicted, c.measured.estimate) for c in w.batch_checks]
        whole += [(c.predicted, c.measured.estimate) for c in w.checks if c.comparable]
    print(f"# {hw_name} hardware", flush=True)
    for name, got in (("by batch: from the 5-step run", single),
                      ("by batch: the same, baseline per batch", based),
                      ("by batch: leave-one-run-out", loo),
                      ("varying: whole-run leave-one-run-out", whole),
                      ("no profiler: whole-run leave-one-run-out", bare_whole),
                      ("no profiler: by batch leave-one-run-out", bare)):
        line(name, got)


def line(name: str, got: list) -> None:
    if not got:
        print(f"{name:40} {0:7d}  (none comparable: every checked run has another batch mix "
              "than its predictor's buckets cover)", flush=True)
        return
    inside = np.mean([e.ci_low <= m <= e.ci_high for e, m in got])
    err = np.array([e.estimate / m - 1 for e, m in got])
    print(f"{name:40} {len(got):7d} {100 * inside:6.1f}% {100 * err.mean():+8.2f}% "
          f"{100 * err.std(ddof=1):6.2f}%", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--clients", default="1,4", help="batch sizes (closed-loop clients)")
    ap.add_argument("--by-batch", action="store_true",
                    help="also the per-bucket predictions on runs of varying batch size")
    ap.add_argument("--hardware", default="convex", choices=sorted(HARDWARE),
                    help="with --by-batch: the verify cost (convex: a quadratic the model "
                         "lacks; tiled: flat to 64 tokens, +5 ms a 64-token tile)")
    ap.add_argument("--only-by-batch", action="store_true", help="skip the single-size runs")
    a = ap.parse_args()
    print(f"{'case':40} {'configs':>7} {'inside':>7} {'mean err':>9} {'σ err':>7}")
    with tempfile.TemporaryDirectory(prefix="eaglelog-whatif-") as d:
        for clients in (() if a.only_by_batch else (int(c) for c in a.clients.split(","))):
            single, based, loo = [], [], []
            hw = ConvexVerify()
            per_batch = ",".join(f"{b}:{1000 / float(hw.step_ms(b)):.6g}" for b in range(1, 65))
            for seed in range(a.seeds):
                paths = runs(clients, seed, d)
                meas = {s: eaglelog.summarize(p).eff_tok_s.estimate for s, p in paths.items()}
                w = eaglelog.whatif(paths[5], steps=[1, 2, 3, 7])
                single += [(p.eff_tok_s, meas[p.steps]) for p in w.predictions]
                w = eaglelog.whatif(paths[5], steps=[1, 2, 3, 7], baseline_toks=per_batch)
                based += [(p.eff_tok_s, meas[p.steps]) for p in w.predictions]
                w = eaglelog.whatif([paths[s] for s in STEPS], steps=[1])
                loo += [(c.predicted, c.measured.estimate) for c in w.checks]
            for name, got in ((f"batch {clients}: from the 5-step run", single),
                              (f"batch {clients}: the same, baseline per batch", based),
                              (f"batch {clients}: leave-one-run-out", loo)):
                line(name, got)
        if a.by_batch or a.only_by_batch:
            by_batch(a.seeds, d, a.hardware)


if __name__ == "__main__":
    main()
