"""Power and false positives of `eaglelog compare --paired` (issue 18), on the request-level
simulator with a fixed bank of questions (tests/requests_sim.py, docs/requests.md).

Every pair is two independent runs (their own seeds) over the same questions.  An improvement
pair's changed run accepts more on every question: a true per-question τ ratio of --ratio
(geometric mean over the questions, 1.03 by default); a same-truth pair's runs share the truth.
For each pair it records what the paired test says (verdict 'better' / 'worse' at 95 %), what
the same requests compared without the pairing say (Welch on log τ_r), what a naive Welch test
on the decode windows' accept len says, and — for the first --compare-pairs pairs — what
`eaglelog compare` says about the accept length (its JSON, the logs written to disk).

    python benchmarks/requests_power.py                       # 200 pairs per row, ~10 min
    python benchmarks/requests_power.py --pairs 50 --drift 0  # a quick look
"""
from __future__ import annotations

import argparse
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
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from scipy import stats as sps  # noqa: E402

from eaglelog.analysis import requests as rq  # noqa: E402
from requests_sim import (PAIRED, decode_accept, parsed, prompt_bank, run_lines,  # noqa: E402
                          shift_for, true_ratio)


def window_compare(ref_lines, new_lines) -> tuple[bool, bool] | None:
    """`eaglelog compare REF NEW -f json` on the two logs: (accept length significant and higher,
    significant at all); None when the command or its JSON is not what this script knows."""
    from click.testing import CliRunner

    from eaglelog.cli import main

    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "ref.log"), os.path.join(d, "new.log")
        for path, lines in ((a, ref_lines), (b, new_lines)):
            with open(path, "w") as fh:
                fh.writelines(lines)
        res = CliRunner().invoke(main, ["-q", "compare", "--no-cache", "-f", "json", a, b])
        try:
            obj = json.loads(res.stdout)
            metrics = obj.get("metrics") or [m for r in obj.get("runs", []) for m in
                                             r.get("metrics", [])]
            m = next(m for m in metrics if m.get("metric") == "accept_len")
            return bool(m["significant"] and m["ratio"] > 1), bool(m["significant"])
        except Exception:          # noqa: BLE001 - the compare JSON is being reshaped (issue 16)
            return None


def one_pair(args) -> dict:
    drift, ratio, duration, seed, improve, with_compare = args
    sc = PAIRED.replace(duration_s=duration, drift_sd=drift)
    bank = prompt_bank(sc, 1000, seed=1)
    shift = shift_for(ratio, bank, sc) if improve else 0.0
    ref = run_lines(sc, 10_000 + seed, bank, 0.0)
    new = run_lines(sc, 20_000 + seed, bank, shift)
    p = rq.compare_paired(parsed(ref, "ref"), parsed(new, "new"))
    keys = p.to_frame()["key"]
    truth = true_ratio([bank[int(k[1:])] for k in keys], sc, shift) if len(keys) else math.nan
    w_ref, w_new = np.log(decode_accept(ref)), np.log(decode_accept(new))
    w = sps.ttest_ind(w_new, w_ref, equal_var=False)
    out = {"better": p.verdict == "better", "worse": p.verdict == "worse",
           "significant": p.p_value is not None and p.p_value < 0.05,
           "p": p.p_value, "est": p.ratio.estimate, "truth": truth,
           "covered": p.ratio.sufficient and p.ratio.ci_low <= truth <= p.ratio.ci_high,
           "matched": p.counts["matched"], "unmatched_ref": p.counts["unmatched_ref"],
           "warned": p.autocorr_time is not None and p.autocorr_time >= rq.TAU_WARN,
           "unpaired_better": p.unpaired["p_value"] < 0.05 and p.unpaired["ratio"].estimate > 1,
           "unpaired_sig": p.unpaired["p_value"] < 0.05,
           "windows_better": bool(w.pvalue < 0.05 and w.statistic > 0),
           "windows_sig": bool(w.pvalue < 0.05), "windows": len(w_ref)}
    if with_compare:
        c = window_compare(ref, new)
        out["compare"] = c
    return out


def wilson(k: int, n: int) -> str:
    if not n:
        return "n/a"
    p = k / n
    z = 1.959964
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * p:5.1f}% [{100 * (c - h):4.1f} … {100 * (c + h):4.1f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=200, help="pairs per row (default 200)")
    ap.add_argument("--ratio", type=float, default=1.03, help="true per-question τ ratio")
    ap.add_argument("--duration", type=float, default=25.0,
                    help="simulated seconds per run (25 s: about 70 questions finish)")
    ap.add_argument("--drift", default="0,0.05,0.2",
                    help="server-wide latent acceptance level σ to try (comma-separated)")
    ap.add_argument("--compare-pairs", type=int, default=40,
                    help="pairs also run through `eaglelog compare` (slow: logs on disk)")
    ap.add_argument("--rows", default="better,same",
                    help="which rows: 'better' (improvement pairs), 'same' (same truth)")
    ap.add_argument("--seed", type=int, default=0, help="first pair's seed (more pairs later)")
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    t0 = time.time()
    print(f"compare --paired on the simulator: {a.pairs} independent pairs per row, true ratio "
          f"{a.ratio} (improvement) or 1 (same truth), {a.duration:g} s runs, 8 clients; 95% "
          "Wilson intervals of the rates")
    header = (f"{'drift σ':>8}  {'pairs':<12}{'paired: better':<26}{'requests unpaired':<26}"
              f"{'windows (Welch)':<26}{'eaglelog compare':<26}{'CI cover':>9}{'est/truth':>10}"
              f"{'warned':>8}")
    print(header)
    print("-" * len(header))
    with ProcessPoolExecutor(max_workers=a.jobs) as ex:
        for drift in (float(x) for x in a.drift.split(",")):
            for improve in (True, False):
                if ("better" if improve else "same") not in a.rows.split(","):
                    continue
                jobs = [(drift, a.ratio, a.duration, (0 if improve else 500_000) + s, improve,
                         s - a.seed < a.compare_pairs) for s in range(a.seed, a.seed + a.pairs)]
                res = list(ex.map(one_pair, jobs, chunksize=4))
                n = len(res)
                key = "better" if improve else "significant"
                ukey = "unpaired_better" if improve else "unpaired_sig"
                wkey = "windows_better" if improve else "windows_sig"
                comp = [r["compare"] for r in res if r.get("compare") is not None]
                ck = [c[0] if improve else c[1] for c in comp]
                cmp_text = wilson(sum(ck), len(ck)) + f" n={len(ck)}" if ck else "n/a"
                cover = np.mean([r["covered"] for r in res])
                bias = np.nanmean([r["est"] / r["truth"] for r in res])
                print(f"{drift:>8g}  {'3% better' if improve else 'same truth':<12}"
                      f"{wilson(sum(r[key] for r in res), n):<26}"
                      f"{wilson(sum(r[ukey] for r in res), n):<26}"
                      f"{wilson(sum(r[wkey] for r in res), n):<26}{cmp_text:<26}"
                      f"{100 * cover:8.1f}%{bias:10.4f}"
                      f"{100 * np.mean([r['warned'] for r in res]):7.1f}%", flush=True)
                if not improve:
                    ps = np.array([r["p"] for r in res if r["p"] is not None])
                    worse = wilson(sum(r["worse"] for r in res), n)
                    print(f"{'':10}same-truth p-values: P(p < 0.25) {np.mean(ps < 0.25):.3f}, "
                          f"median {np.median(ps):.3f}; 'worse' {worse}; questions matched "
                          f"{np.mean([r['matched'] for r in res]):.0f}, windows "
                          f"{np.mean([r['windows'] for r in res]):.0f} per run; significant "
                          f"{sum(r['significant'] for r in res)} of {n}")
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
