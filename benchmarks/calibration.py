#!/usr/bin/env python3
"""Calibration of eaglelog's estimates, intervals and verdicts against a simulator's truth.

    python benchmarks/calibration.py                      # every scenario, 200 runs each, 2 jobs
    python benchmarks/calibration.py --reps 100 --scenario continuous --scenario ar09
    python benchmarks/calibration.py --reps 60 --compare  # also compare / sweep (issue 15)

For each scenario of ``eaglelog.simulate.SCENARIOS`` (docs/simulation.md): simulate R runs
(seeds 0 … R−1), give the stated baseline that is exact for them, run the CLI in-process as a
user would (``eaglelog breakeven -f json``), and compare every estimate with the truth of its
own run.  Printed per scenario, for the speedup, the cycle time and the accept length:

    truth      the true value (mean over the runs; each run's truth is its own batch-size mix
               with the population's per-batch-size values: docs/simulation.md, 'which truth')
    est        mean estimate            bias   mean(estimate / truth) − 1
    cover      share of intervals that hold the truth (the level is 95 %)
    width      mean interval width / truth;   spread   2 × 1.96 × σ(estimate / truth), the
               width a calibrated interval would have;   w/s   their ratio
    above / below / inconcl. / insuff.   the verdicts printed (speedup only)

``calibrate(name, reps=30)`` returns the same figures as a dict, for tests.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from eaglelog.simulate import (SCENARIOS, Scenario, TruthSums, baseline_log,  # noqa: E402
                               baseline_map, simulate, stated_steps)

ROWS = ["reference", "continuous", "continuous_s", "reference_s", "few_think_s",
        "continuous_docker", "continuous_pause", "growing", "varying", "warmup", "prof5",
        "baseline_batch1", "aggregate_baseline", "ar09", "ar095", "few_windows"]
METRICS = ("speedup", "cycle_ms", "accept_len")
os.environ.setdefault("EAGLELOG_WORKERS", "1")      # no nested parallel scans


# ----------------------------------------------------------------------------- running the CLI

def cli(args: list[str]) -> tuple[int, str, str]:
    """``eaglelog ARGS`` in-process: (exit code, stdout, stderr)."""
    from click.testing import CliRunner

    from eaglelog.cli import main
    res = CliRunner().invoke(main, args, catch_exceptions=True)
    out = res.stdout
    err = res.stderr if hasattr(res, "stderr") else ""
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        err += f"\n{type(res.exception).__name__}: {res.exception}"
    return res.exit_code, out, err


def cli_json(args: list[str]):
    code, out, err = cli(["-q", *args, "--no-cache", "-f", "json"])
    if code not in (0, 3) or not out.strip():
        return code, None, err.strip().splitlines()[-1] if err.strip() else f"exit {code}"
    return code, json.loads(out), None


# ----------------------------------------------------------------------------- simulation

def _sim(job):
    """One simulated run, written to a file: (path, truth sums, steady sums, sim seconds)."""
    sc, seed, path = job
    t = time.perf_counter()
    run = simulate(sc, seed)
    run.write(path)
    return path, run.truth.sums, run.truth.steady, time.perf_counter() - t, len(
        run.truth.windows["line_no"]), os.path.getsize(path)


def _pmap(fn, jobs, n_jobs: int):
    if n_jobs <= 1 or len(jobs) <= 1:
        return [fn(j) for j in jobs]
    with ProcessPoolExecutor(n_jobs) as ex:
        return list(ex.map(fn, jobs, chunksize=max(1, len(jobs) // (4 * n_jobs))))


@dataclasses.dataclass
class Runs:
    """R simulated runs of one scenario, on disk, with their truths."""

    scenario: Scenario
    paths: list[str]
    sums: list[TruthSums]
    steady: list[TruthSums]
    sim_s: list[float]
    windows: list[int]
    sizes: list[int]

    @property
    def pop(self) -> TruthSums:
        """The population: every run pooled (steady state only when the scenario says so)."""
        parts = self.steady if self.scenario.truth_basis == "steady" else self.sums
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out

    def truths(self, steps: np.ndarray) -> list:
        pop = self.pop
        return [s.conditional(pop).metrics(steps) for s in self.sums]


def simulate_runs(sc: Scenario, reps: int, workdir: str, jobs: int = 1, seed0: int = 0,
                  requests: bool = False) -> Runs:
    if not requests:
        sc = sc.replace(log_requests=False)     # Finish lines cost parse time, not used here
    todo = [(sc, seed0 + i, os.path.join(workdir, f"{sc.name}-{seed0 + i}.log"))
            for i in range(reps)]
    got = _pmap(_sim, todo, jobs)
    return Runs(sc, *[list(x) for x in zip(*got)])


# ----------------------------------------------------------------------------- the baseline

def baseline_args(runs: Runs, workdir: str) -> tuple[list[str], np.ndarray, str]:
    """(CLI baseline options, the true per-stream step per batch size, a label)."""
    sc = runs.scenario
    steps, mu = stated_steps(runs.pop, sc)
    if sc.baseline_toks:                     # a stated rate that is not the exact one
        return ["--baseline-toks", f"{sc.baseline_toks:g}"], steps, \
            f"--baseline-toks {sc.baseline_toks:g} (exact: {runs.pop.metrics(steps).rate_base:.4g})"
    sizes = [b for b, n in enumerate(runs.pop.iters) if n > 0]
    if sc.baseline == "toks":
        rate = runs.pop.metrics(steps).rate_base
        return ["--baseline-toks", f"{rate:.8g}"], steps, f"--baseline-toks {rate:.4g}"
    if sc.baseline == "map":
        text = baseline_map(steps, sizes)
        code, _, err = cli_json(["breakeven", "--baseline-toks", text, runs.paths[0]])
        if code != 2:
            return ["--baseline-toks", text], steps, \
                f"--baseline-toks per batch size ({len(sizes)})"
    path = os.path.join(workdir, f"{sc.name}-baseline.log")
    baseline_log(sc, mu).write(path)
    how = "--baseline-log" + (" (a per-batch-size --baseline-toks is not accepted yet)"
                              if sc.baseline == "map" else "")
    return ["--baseline-log", path], steps, how


# ----------------------------------------------------------------------------- analysis

def _breakeven(job):
    path, base = job
    t = time.perf_counter()
    code, obj, err = cli_json(["breakeven", *base, path])
    if obj is not None:                       # {"command", "runs": [the one run], …}
        obj = obj["runs"][0] if obj["runs"] else None
        err = err or (None if obj is not None else "no run")
    return obj, err, time.perf_counter() - t


def _stats(est: np.ndarray, lo: np.ndarray, hi: np.ndarray, truth: np.ndarray) -> dict:
    ok = np.isfinite(est) & (truth > 0)
    rel = est[ok] / truth[ok]
    have = ok & np.isfinite(lo) & np.isfinite(hi)
    cover = float(np.mean((lo[have] <= truth[have]) & (truth[have] <= hi[have]))) \
        if have.any() else math.nan
    width = float(np.mean((hi[have] - lo[have]) / truth[have])) if have.any() else math.nan
    spread = 2 * 1.96 * float(np.std(rel, ddof=1)) if len(rel) > 1 else math.nan
    return {"truth": float(np.mean(truth)), "est": float(np.mean(est[ok])) if ok.any() else
            math.nan, "bias": float(np.mean(rel) - 1) if len(rel) else math.nan,
            "cover": cover, "width": width, "spread": spread,
            "w_s": width / spread if spread and spread > 0 else math.nan,
            "with_interval": float(np.mean(have))}


def _field(objs, name, key):
    return np.array([o[name][key] if o is not None and o[name][key] is not None else np.nan
                     for o in objs], dtype=float)


def calibrate(name: str | Scenario, reps: int = 30, jobs: int = 1, seed0: int = 0,
              workdir: str | None = None, requests: bool = False) -> dict:
    """Figures of one scenario (see the module docstring) as a dict."""
    sc = SCENARIOS[name] if isinstance(name, str) else name
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="eaglelog-cal-"))
        t0 = time.perf_counter()
        runs = simulate_runs(sc, reps, workdir, jobs, seed0, requests)
        t_sim = time.perf_counter() - t0
        base, steps, how = baseline_args(runs, workdir)
        t1 = time.perf_counter()
        got = _pmap(_breakeven, [(p, base) for p in runs.paths], jobs)
        t_an = time.perf_counter() - t1
    objs = [g[0] for g in got]
    errors = [g[1] for g in got if g[1]]
    truths = runs.truths(steps)
    truth = {"speedup": np.array([t.speedup for t in truths]),
             "cycle_ms": np.array([t.cycle_ms for t in truths]),
             "accept_len": np.array([t.tau for t in truths])}
    out = {"scenario": sc.name, "about": sc.about, "reps": reps, "baseline": how,
           "errors": len(errors), "first_error": errors[0] if errors else None,
           "windows": float(np.mean(runs.windows)),
           "sim_s_per_run": float(np.mean(runs.sim_s)), "mb_per_run": np.mean(runs.sizes) / 1e6,
           "wall_sim_s": t_sim, "wall_analysis_s": t_an}
    for m in METRICS:
        out[m] = _stats(_field(objs, m, "estimate"), _field(objs, m, "ci_low"),
                        _field(objs, m, "ci_high"), truth[m])
    verdicts = [o["verdict"] if o is not None else "error" for o in objs]
    for v in ("above", "below", "inconclusive", "insufficient data", "partial", "mixed",
              "invalid baseline", "error"):
        out[v] = verdicts.count(v) / len(verdicts)
    # a claim is wrong when the run's own truth is on the other side of 1 (each run's truth is
    # its own batch mix: in a varying-batch scenario it is not exactly the pool's 1.00)
    sp = truth["speedup"]
    out["wrong"] = sum((v == "above" and t <= 1) or (v == "below" and t >= 1)
                       for v, t in zip(verdicts, sp)) / len(verdicts)
    kinds = [o.get("cycle_kind") or "?" if o is not None else "error" for o in objs]
    out["cycle_from"] = {k: kinds.count(k) / reps for k in dict.fromkeys(kinds)}
    out["notes"] = sorted({n.split(":")[0] for o in objs if o for n in o.get("notes", [])})
    return out


# ----------------------------------------------------------------------------- compare / sweep

def _compare(job):
    a, b, base = job
    code, obj, err = cli_json(["compare", *base, "--fail-on-regression", "any", a, b])
    return code, obj, err


def _sweep(job):
    paths, base = job
    code, obj, err = cli_json(["sweep", *base, *paths])
    return obj, err


def calibrate_compare(reps: int = 30, jobs: int = 1, workdir: str | None = None,
                      power: bool = False) -> dict:
    """Issue 15: compare on same-truth pairs, a constant-phase pair, a self-comparison, and
    sweep's 'tied' for an equal run and for a run truly 9 % slower.  ``reps`` pairs each."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = stack.enter_context(tempfile.TemporaryDirectory(prefix="eaglelog-cmp-"))
        ref = simulate_runs(SCENARIOS["compare_pair"], 2 * reps, workdir, jobs)
        eq = simulate_runs(SCENARIOS["sweep_equal"], 2 * reps, workdir, jobs, seed0=40_000)
        slow = simulate_runs(SCENARIOS["sweep_slower9"], reps, workdir, jobs, seed0=50_000)
        ca = simulate_runs(SCENARIOS["const_phase_a"], reps, workdir, jobs, seed0=60_000)
        cb = simulate_runs(SCENARIOS["const_phase_b"], reps, workdir, jobs, seed0=70_000)
        base, _, how = baseline_args(ref, workdir)
        pairs = [(ref.paths[2 * i], ref.paths[2 * i + 1], base) for i in range(reps)]
        same = _pmap(_compare, pairs, jobs)
        selfc = _pmap(_compare, [(p, p, base) for p in ref.paths[:reps]], jobs)
        cbase, _, _ = baseline_args(ca, workdir)
        const = _pmap(_compare, [(a, b, cbase) for a, b in zip(ca.paths, cb.paths)], jobs)
        eq_pairs = [(eq.paths[2 * i], eq.paths[2 * i + 1]) for i in range(reps)]
        sw_eq = _pmap(_sweep, [([a, b], []) for a, b in eq_pairs], jobs)
        sw_slow = _pmap(_sweep, [([eq.paths[2 * i], slow.paths[i]], [])
                                 for i in range(reps)], jobs)
        pw = {}
        if power:
            for pct in (5, 10):
                ch = simulate_runs(SCENARIOS["compare_pair"].replace(
                    name=f"slower{pct}", cycle_scale=1 / (1 - pct / 100), target_speedup=None),
                    reps, workdir, jobs, seed0=80_000 + pct)
                res = _pmap(_compare, [(ref.paths[2 * i], ch.paths[i], base)
                                       for i in range(reps)], jobs)
                pw[pct] = _metric_share(res, "speedup", "worse")
    out = {"reps": reps, "baseline": how}

    def any_sig(res):
        return float(np.mean([bool(o) and any(m["significant"] for m in o["metrics"])
                              for _, o, _ in res]))
    per_metric = {}
    for _, o, _ in same:
        for m in (o or {}).get("metrics", []):
            per_metric.setdefault(m["metric"], []).append(bool(m["significant"]))
    out["same_truth"] = {
        "any_significant": any_sig(same),
        "fail_on_regression": float(np.mean([c == 3 for c, _, _ in same])),
        "speedup_significant": _metric_share(same, "speedup", "significant"),
        "per_metric": {k: float(np.mean(v)) for k, v in per_metric.items()},
        "errors": sum(o is None for _, o, _ in same)}
    out["self"] = {"any_significant": any_sig(selfc),
                   "fail_on_regression": float(np.mean([c == 3 for c, _, _ in selfc]))}
    out["const_phase"] = {
        "draft_phase_significant": _metric_share(const, "phase:Draft steps", "significant"),
        "any_significant": any_sig(const),
        "fail_on_regression": float(np.mean([c == 3 for c, _, _ in const]))}

    def sweep_marks(res, path_of):
        out_m = []
        for (o, _), p in zip(res, path_of):
            if not o:
                out_m.append("error")
                continue
            out_m.append({r["run"]: r["mark"] for r in o["rows"]}.get(p, "?"))
        return out_m
    eq_marks = []
    for (o, _), (a, b) in zip(sw_eq, eq_pairs):
        if not o:
            eq_marks.append("error")
            continue
        m = {r["run"]: r["mark"] for r in o["rows"]}
        if "no interval" in m.values():
            eq_marks.append("no interval")       # a row without an interval: not a tie test
            continue
        eq_marks.append(m.get(b) if m.get(a) == "best" else m.get(a))   # the non-best row
    slow_marks = sweep_marks(sw_slow, slow.paths)
    full = [x for x in eq_marks if x != "no interval"]
    sfull = [x for x in slow_marks if x != "no interval"]
    out["sweep"] = {"equal_tied": float(np.mean([x in ("tied", "best") for x in full])),
                    "equal_no_interval": float(np.mean([x == "no interval" for x in eq_marks])),
                    "slower9_tied": float(np.mean([x == "tied" for x in sfull])),
                    "slower9_best": float(np.mean([x == "best" for x in sfull])),
                    "slower9_no_interval": float(np.mean([x == "no interval"
                                                          for x in slow_marks]))}
    if pw:
        out["power_speedup_worse"] = pw
    return out


def _metric_share(res, metric: str, key: str) -> float:
    vals = []
    for _, o, _ in res:
        ms = [m for m in (o or {}).get("metrics", []) if m["metric"] == metric]
        if ms:
            vals.append(bool(ms[0][key]))
    return float(np.mean(vals)) if vals else math.nan


# ----------------------------------------------------------------------------- printing

def _pct(x, signed=False) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{100 * x:+.1f}" if signed else f"{100 * x:.0f}"


def table(results: list[dict]) -> str:
    head = (f"{'scenario':<19} {'metric':<8} {'truth':>8} {'est':>8} {'bias%':>6} "
            f"{'cover%':>6} {'width%':>6} {'spread%':>7} {'w/s':>5}   "
            f"{'above':>5} {'below':>5} {'incon':>5} {'insuf':>5} {'other':>5} {'wrong':>5}")
    lines = [head, "-" * len(head)]
    for r in results:
        for i, m in enumerate(METRICS):
            s = r[m]
            lab = {"speedup": "speedup", "cycle_ms": "cycle", "accept_len": "accept"}[m]
            row = (f"{r['scenario'] if i == 0 else '':<19} {lab:<8} {s['truth']:>8.4g} "
                   f"{s['est']:>8.4g} {_pct(s['bias'], True):>6} {_pct(s['cover']):>6} "
                   f"{100 * s['width']:>6.1f} {100 * s['spread']:>7.1f} "
                   f"{s['w_s']:>5.2f}" if np.isfinite(s['width']) else
                   f"{r['scenario'] if i == 0 else '':<19} {lab:<8} {s['truth']:>8.4g} "
                   f"{s['est']:>8.4g} {_pct(s['bias'], True):>6} {'–':>6} {'–':>6} "
                   f"{100 * s['spread']:>7.1f} {'–':>5}")
            if i == 0:
                other = r.get("partial", 0) + r.get("mixed", 0) + r.get("invalid baseline", 0)
                row += (f"   {_pct(r['above']):>5} {_pct(r['below']):>5} "
                        f"{_pct(r['inconclusive']):>5} {_pct(r['insufficient data']):>5} "
                        f"{_pct(other):>5} {_pct(r.get('wrong', 0)):>5}")
            lines.append(row)
        cf = ", ".join(f"{k} {100 * v:.0f}%" for k, v in r["cycle_from"].items() if v)
        verd = ", ".join(f"{k} {100 * r[k]:.0f}%" for k in ("partial", "mixed",
                                                            "invalid baseline") if r.get(k))
        lines.append(f"{'':<19} {r['reps']} runs, {r['windows']:.0f} windows, baseline "
                     f"{r['baseline']}; cycle: {cf}" + (f"; {verd}" if verd else "") +
                     (f"; {r['errors']} errors ({r['first_error']})" if r["errors"] else ""))
    return "\n".join(lines)


def compare_table(c: dict) -> str:
    s = c["same_truth"]
    top = sorted(s["per_metric"].items(), key=lambda kv: -kv[1])
    lines = [f"compare / sweep ({c['reps']} pairs each, baseline {c['baseline']})",
             f"  same-truth pairs: any metric significant {_pct(s['any_significant'])}%, "
             f"--fail-on-regression trips {_pct(s['fail_on_regression'])}%, speedup "
             f"significant {_pct(s['speedup_significant'])}%",
             "    per metric: " + ", ".join(f"{k} {_pct(v)}%" for k, v in top),
             f"  self-comparison: any significant {_pct(c['self']['any_significant'])}%, "
             f"trips {_pct(c['self']['fail_on_regression'])}%",
             f"  constant phase (0.12 vs 0.13 printed, truth 0.1249 vs 0.1251 ms): Draft steps "
             f"significant {_pct(c['const_phase']['draft_phase_significant'])}%, any "
             f"{_pct(c['const_phase']['any_significant'])}%, trips "
             f"{_pct(c['const_phase']['fail_on_regression'])}%",
             f"  sweep (pairs whose rows both have an interval): truly equal run tied "
             f"{_pct(c['sweep']['equal_tied'])}%; truly 9 % slower run tied "
             f"{_pct(c['sweep']['slower9_tied'])}% (best {_pct(c['sweep']['slower9_best'])}%); "
             f"a row without an interval in {_pct(c['sweep']['equal_no_interval'])}% / "
             f"{_pct(c['sweep']['slower9_no_interval'])}% of the pairs"]
    if "power_speedup_worse" in c:
        lines.append("  power (speedup significantly worse): " + ", ".join(
            f"{k} % slower {_pct(v)}%" for k, v in c["power_speedup_worse"].items()))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="runs per scenario (default 200)")
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                    help="a scenario (repeatable; default: every table row)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--compare", action="store_true", help="also compare and sweep (issue 15)")
    ap.add_argument("--power", action="store_true", help="with --compare: power at 5 and 10 %%")
    ap.add_argument("--requests", action="store_true", help="keep the Finish: lines")
    ap.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    ap.add_argument("--seed0", type=int, default=0,
                    help="the first seed (default 0: seeds 0 … reps−1 in every scenario)")
    a = ap.parse_args()
    names = a.scenario or ROWS
    results = []
    for n in names:
        t = time.perf_counter()
        r = calibrate(n, a.reps, a.jobs, seed0=a.seed0, requests=a.requests)
        results.append(r)
        print(f"# {n}: {time.perf_counter() - t:.0f} s (simulation {r['sim_s_per_run']:.2f} s "
              f"and {r['mb_per_run']:.2f} MB a run, {r['windows']:.0f} windows)", file=sys.stderr)
    print(table(results))
    cmp = None
    if a.compare:
        cmp = calibrate_compare(max(1, a.reps // 2), a.jobs, power=a.power)
        print()
        print(compare_table(cmp))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"scenarios": results, "compare": cmp}, f, indent=1, default=float)


if __name__ == "__main__":
    main()
