"""eaglelog whatif (issue 17): predictions for other numbers of draft steps (docs/whatif.md).

The bundled sweep (sample_logs/make_samples.py) comes from a physical model that is not the
predictor's formula: conditional acceptance falling with depth (0.80, 0.70, 0.64, 0.60, 0.56,
0.53, 0.50 — not geometric), draft steps that cost a little more with depth, a verify convex
in K (25.0 + 0.12 K + 0.02 K² ms)."""
import glob
import math
import json
import os

import numpy as np
import pytest

import eaglelog
from conftest import SAMPLES
from eaglelog.analysis import whatif as W

SWEEP = sorted(glob.glob(str(SAMPLES / "sweep" / "*.log")))
STEPS = {int(os.path.basename(p)[5]): p for p in SWEEP}
FIVE = str(SAMPLES / "eagle3_5step.log")


def measured(path):
    return eaglelog.summarize(path).eff_tok_s


def test_the_five_step_run_alone_predicts_the_others_inside_its_intervals():
    """Issue 17's 'done when': given only the 5-step run, the measured per-stream rate of the
    1-, 2-, 3- and 7-step runs lies inside the prediction intervals."""
    w = eaglelog.whatif(STEPS[5], steps=[1, 2, 3, 7], baseline_toks=90)
    assert [p.steps for p in w.predictions] == [1, 2, 3, 7]
    for p in w.predictions:
        m = measured(STEPS[p.steps]).estimate
        assert p.eff_tok_s.ci_low <= m <= p.eff_tok_s.ci_high, (p.steps, p.eff_tok_s, m)
        assert abs(p.eff_tok_s.estimate / m - 1) < 0.03
        # the speedup is the rate against the baseline's 90 tok/s
        assert p.speedup.estimate == pytest.approx(p.eff_tok_s.estimate / 90, rel=1e-9)
    # one K measured: the verify slope is the stated prior, and the basis says what is modelled
    assert w.model.slope_from.startswith("one K (6) measured") and "the prior" in \
        w.model.slope_from
    assert w.predictions[0].basis == "measured positions; verify beyond the measured K 6–6"
    assert w.predictions[-1].basis.startswith("extrapolated: positions 6–7 from the last "
                                              "conditional rates")
    assert any("positions beyond the deepest run are extrapolated: between a constant last "
               "conditional acceptance rate and one that keeps falling" in n for n in w.notes)


def test_the_sweep_predicts_each_run_from_the_others():
    w = eaglelog.whatif(SWEEP, steps="1..8", baseline_toks=90)
    # the verify is convex (25.0 + 0.12 K + 0.02 K²): five K show the curvature, so the fit is
    # the quadratic, and it finds the simulation's coefficients
    assert w.model.slope_from == "fit (5 runs, K 2–8, quadratic in K)"
    assert (w.model.v0, w.model.v1, w.model.v2) == pytest.approx((25.0, 0.12, 0.02), abs=0.01)
    assert max(abs(v - f) for _, _, v, f in w.model.residuals) < 0.01
    assert w.model.df == 2
    # draft per step pooled: Σ draft / Σ steps of 0.19 S + 0.005 S (S − 1)
    want = sum(0.19 * s + 0.005 * s * (s - 1) for s in STEPS) / sum(STEPS)
    assert w.model.d == pytest.approx(want, rel=0.01)
    # three K only: a line (a quadratic needs four), its residuals printed
    lin = eaglelog.whatif([STEPS[1], STEPS[3], STEPS[7]], steps=[5])
    assert lin.model.slope_from == "fit (3 runs, K 2–8, linear in K)" and lin.model.v2 == 0
    res = [v - f for _, _, v, f in lin.model.residuals]
    assert res[0] > 0 and res[2] > 0 and res[1] < 0        # convex: the ends above the line
    assert [c.steps for c in w.checks] == [1, 2, 3, 5, 7]
    assert all(c.inside for c in w.checks)
    assert max(abs(c.error) for c in w.checks) < 0.03
    for c in w.checks:
        assert c.measured.estimate == pytest.approx(measured(STEPS[c.steps]).estimate)
    by = {p.steps: p for p in w.predictions}
    assert by[5].measured_eff_tok_s.estimate == pytest.approx(measured(STEPS[5]).estimate)
    assert by[4].measured_eff_tok_s is None
    assert "verify beyond the measured K 2–8" in by[8].basis
    assert "extrapolated" not in by[7].basis


def test_truncated_accept_length_is_the_histograms_own():
    """τ_h(S') for S' ≤ S counts min(a, S') + 1 tokens a verify: computed by hand."""
    ev = W.evidence(eaglelog.parse(STEPS[5]))[0]
    req = eaglelog.parse(STEPS[5]).requests
    hists = [json.loads(h) for h in req["accept_histogram"].dropna()]
    U = np.column_stack([ev.hist_x, ev.hist_y]).mean(axis=0)
    for s in range(1, 6):
        tok = sum(n * (min(a, s) + 1) for h in hists for a, n in enumerate(h))
        ver = sum(sum(h) for h in hists)
        assert W.tau_hist(U, s) == pytest.approx(tok / ver, rel=1e-12)
    # the full depth is acceptance's τ = 1 + Σ P(accept ≥ i)
    a = eaglelog.acceptance(STEPS[5])
    assert W.tau_hist(U, 5) == pytest.approx(a.curves[0].identity.tau.estimate, rel=1e-12)
    # beyond: a constant last conditional rate …
    p5, q = U[5] / U[0], U[5] / U[4]
    assert W.tau_hist(U, 7) == pytest.approx(W.tau_hist(U, 5) + p5 * (q + q * q), rel=1e-12)
    # … or a conditional rate that keeps falling by its last factor ρ = q5 / q4
    q4 = U[4] / U[3]
    rho = q / q4
    assert W.tau_hist(U, 7, True) == pytest.approx(
        W.tau_hist(U, 5) + p5 * q + p5 * q * q * rho, rel=1e-12)
    # the ratio beyond the depth is the log midpoint of the two, half their gap in its se
    r7, se7 = W.tau_ratio(ev, 7)
    lo, hi = W.tau_hist(U, 7, True) / W.tau_hist(U, 5), W.tau_hist(U, 7) / W.tau_hist(U, 5)
    assert r7 == pytest.approx(math.sqrt(lo * hi), rel=1e-9)
    assert se7 >= math.log(hi / lo) / 2
    r, se = W.tau_ratio(ev, 5)
    assert r == 1.0 and se == 0.0


def test_a_stated_verify_slope_replaces_the_prior():
    w = eaglelog.whatif(STEPS[5], steps=[1], verify_slope=0.0)
    p = w.predictions[0]
    assert w.model.slope_from.endswith("(--verify-slope)") and w.model.v1 == 0.0
    # flat verify: the cycle only loses 4 draft steps of 0.19 + 0.01·(…) pooled per step
    ev = W.evidence(eaglelog.parse(STEPS[5]))[0]
    c5 = 1000 * ev.tau.estimate / ev.eff_tok_s.estimate
    d = ev.phases["Draft steps"].estimate / 5
    assert p.cycle_ms.estimate == pytest.approx(c5 * (ev.cycle.estimate - 4 * d) /
                                                ev.cycle.estimate, rel=1e-9)


def test_cli_table_json_markdown(run):
    r = run("whatif", "--baseline-toks", "90", "--steps", "1,3,7", STEPS[5])
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert out.startswith(f"what if: predictions from {STEPS[5]}   (95% prediction intervals")
    assert "verify = " in out and "the prior" in out
    assert out.count("\n      ") >= 3 and "positions extrapolated, verify extrapolated" in out
    d = json.loads(run("-q", "whatif", "-f", "json", "--steps", "1..3", *SWEEP).stdout)
    assert d["command"] == "whatif" and [p["steps"] for p in d["predictions"]] == [1, 2, 3]
    assert len(d["leave_one_out"]) == 5 and d["model"]["verify_slope_from"].startswith("fit")
    lib = eaglelog.whatif(SWEEP, steps="1..3")
    assert json.loads(json.dumps(lib.to_dict(), default=str)) == d
    md = run("-q", "whatif", "-f", "markdown", "--steps", "2", *SWEEP).stdout
    assert md.startswith("| steps ") and md.count("| sample_logs") == 0 or "steps1.log" in md
    csv = run("-q", "whatif", "-f", "csv", "--steps", "2,9", STEPS[5]).stdout.splitlines()
    assert csv[0].startswith("steps,topk,draft_tokens,basis,accept_len,accept_len_pi_low,")
    assert len(csv) == 3


@pytest.mark.parametrize("args,msg", [
    (["--steps", "0..3"], "draft steps from 1 to 16"),
    (["--steps", "3..1"], "give counts like 1..8"),
    (["--steps", "x"], "give counts like 1..8"),
])
def test_bad_steps_are_usage_errors(run, args, msg):
    r = run("whatif", *args, STEPS[5])
    assert r.exit_code == 2 and msg in r.stderr and "Traceback" not in r.stderr


def test_what_whatif_cannot_use_is_said(run, tmp_path):
    # no Finish histograms / no profiler / a tree draft: one line naming the run, exit 1
    r = run("whatif", str(SAMPLES / "baseline.log"))
    assert r.exit_code == 1 and "baseline.log: no speculative_num_steps" in r.stderr
    text = open(STEPS[5], encoding="utf-8").read()
    noprof = tmp_path / "noprof.log"
    noprof.write_text("".join(ln for ln in text.splitlines(True)
                              if not (ln.startswith("EAGLE3_PROF") or ln.startswith("  "))))
    r = run("whatif", str(noprof))
    # one run without a profiler: its derived cycle says nothing of the cycle's growth with S
    assert r.exit_code == 1 and "noprof.log: no EAGLE3_PROF phases, and the runs hold one " \
        "num_steps" in r.stderr and "give runs at two or more num_steps" in r.stderr
    cut = tmp_path / "nofinish.log"
    cut.write_text("".join(ln for ln in text.splitlines(True) if "Finish:" not in ln))
    r = run("whatif", str(cut))
    assert r.exit_code == 1 and "spec_accept_histogram" in r.stderr
    # a tree without the tokens each verify checks cannot be costed
    tree = tmp_path / "tree.log"
    assert text.count("speculative_eagle_topk=1") == 1
    assert text.count("speculative_num_draft_tokens=6") == 1
    tree.write_text(text.replace("speculative_eagle_topk=1", "speculative_eagle_topk=4")
                    .replace("speculative_num_draft_tokens=6, ", ""))
    r = run("whatif", str(tree))
    assert r.exit_code == 1 and "speculative_eagle_topk 4 (a tree) without " \
        "speculative_num_draft_tokens" in r.stderr and "Traceback" not in r.stderr


def _tree(tmp_path, topk=4, n=16):
    """The 5-step sample as a tree run: topk 4, 16 draft tokens (its histograms and phases
    stay the chain's, so every figure below follows from the chain's by the stated model)."""
    text = open(STEPS[5], encoding="utf-8").read()
    p = tmp_path / "tree.log"
    p.write_text(text.replace("speculative_eagle_topk=1", f"speculative_eagle_topk={topk}")
                 .replace("speculative_num_draft_tokens=6", f"speculative_num_draft_tokens={n}"))
    return str(p)


def test_a_tree_run_is_predicted_as_an_approximation_that_says_which_way(tmp_path):
    """topk > 1 (issue 17): τ(S', N') from the accepted path truncated as a chain, the
    verify costed at K = N' draft tokens (not S + 1), each row saying which way it errs."""
    tree = _tree(tmp_path)
    w = eaglelog.whatif(tree, steps=[3, 5, 6], baseline_toks=90, draft_tokens=[8, 16])
    got = {(p.steps, p.draft_tokens): p for p in w.predictions}
    assert sorted(got) == [(3, 8), (3, 16), (5, 8), (5, 16), (6, 8), (6, 16)]
    assert all(p.topk == 4 for p in w.predictions)
    # the measured configuration is the run itself: its rate, no approximation
    own = got[(5, 16)]
    assert own.basis == "measured positions" and \
        own.eff_tok_s.estimate == pytest.approx(measured(tree).estimate, rel=1e-9)
    assert own.measured_eff_tok_s is not None
    # fewer steps, as many draft tokens: at least this accept length (a lower bound)
    assert "tree approximation (topk 4, draft tokens 16 → 16" in got[(3, 16)].basis and \
        "τ at least this" in got[(3, 16)].basis
    # as many steps, fewer draft tokens: at most this
    assert "τ at most this" in got[(5, 8)].basis
    assert "direction of its error unknown" in got[(3, 8)].basis
    # τ does not depend on N' in the approximation; the chain's truncation gives it
    chain = eaglelog.whatif(STEPS[5], steps=[3], baseline_toks=90).predictions[0]
    assert got[(3, 8)].accept_len.estimate == pytest.approx(chain.accept_len.estimate, rel=1e-9)
    assert got[(3, 16)].accept_len.estimate == pytest.approx(chain.accept_len.estimate,
                                                             rel=1e-9)
    # the verify grows with the draft tokens: one K measured (16), the prior's slope
    m = w.model
    assert m.k_range == (16, 16) and m.slope_from.startswith("one K (16) measured")
    for s_ in (3, 5, 6):
        # the anchored cycles keep the model's ratio, and K = 16 costs v1 × 8 over K = 8
        r = got[(s_, 16)].cycle_ms.estimate / got[(s_, 8)].cycle_ms.estimate
        assert r == pytest.approx(m._at(s_, 16)[0] / m._at(s_, 8)[0], rel=1e-9)
        assert m._at(s_, 16)[0] - m._at(s_, 8)[0] == pytest.approx(m.v1 * 8, rel=1e-9)
        assert m.v1 > 0
    assert any("drafts a tree (topk 4, 16 draft tokens)" in n for n in w.notes)


def test_tree_limits_and_chain_misuse_are_usage_errors(run, tmp_path):
    tree = _tree(tmp_path)
    # SGLang picks N − 1 of topk + (S − 1)·topk² candidates: 1 step of topk 4 holds 5
    assert W.tree_limit(4, 1) == 5 and W.tree_limit(4, 3) == 37 and W.tree_limit(1, 5) == 6
    w = eaglelog.whatif(tree, steps=[1, 2], draft_tokens=[16])
    assert [(p.steps, p.draft_tokens) for p in w.predictions] == [(2, 16)]
    assert any("left out, more draft tokens than the tree has candidates" in n and
               "1 steps × 16" in n for n in w.notes)
    r = run("whatif", "--steps", "1", "--draft-tokens", "30", tree)
    assert r.exit_code == 2 and "with topk 4, 1 steps verify at most 5 draft tokens" in r.stderr
    r = run("whatif", "--draft-tokens", "8", STEPS[5])
    assert r.exit_code == 2 and "drafts a chain (topk 1)" in r.stderr
    r = run("whatif", "--draft-tokens", "1", tree)
    assert r.exit_code == 2 and "--draft-tokens" in r.stderr and "Traceback" not in r.stderr
    r = run("whatif", "--draft-tokens", "x", tree)
    assert r.exit_code == 2 and "--draft-tokens" in r.stderr
    # the human block names the draft tokens and the bound
    out = run("whatif", "--steps", "3,5", "--draft-tokens", "16", "--baseline-toks", "90",
              tree).stdout
    assert "verify(K = draft tokens)" in out and "draft tokens" in out.splitlines()[3]
    assert "tree approx.: τ ≥" in out
    d = json.loads(run("-q", "whatif", "-f", "json", "--steps", "5", "--draft-tokens", "8,16",
                       tree).stdout)
    assert [(p["steps"], p["topk"], p["draft_tokens"]) for p in d["predictions"]] == \
        [(5, 4, 8), (5, 4, 16)]


def test_simulated_runs_with_another_verify_shape_are_covered():
    """The simulator (simlab.simulate) at batch 1, a verify with a quadratic term and a
    falling acceptance curve: single-run predictions from a 5-step run cover the measured rate
    of 1-, 2-, 3- and 7-step runs (docs/whatif.md quotes the larger run of this check)."""
    from simlab.simulate import ConvexVerify, Scenario, simulate

    base = Scenario(name="w", clients=((0.0, 1),), think_s=0.05, output_median=250.0,
                    output_sigma=0.4, duration_s=240.0, prof_every=100, hw=ConvexVerify(),
                    accept_probs=(0.85, 0.74, 0.66, 0.6, 0.55, 0.5, 0.46))
    inside = total = 0
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for seed in range(6):
            paths = {}
            for s in (1, 2, 3, 5, 7):
                p = os.path.join(d, f"s{s}-{seed}.log")
                simulate(base.replace(num_steps=s), seed * 10 + s).write(p)
                paths[s] = p
            w = eaglelog.whatif(paths[5], steps=[1, 2, 3, 7])
            for p in w.predictions:
                m = measured(paths[p.steps]).estimate
                inside += p.eff_tok_s.ci_low <= m <= p.eff_tok_s.ci_high
                total += 1
                assert abs(p.eff_tok_s.estimate / m - 1) < 0.08
    assert total == 24 and inside >= 22          # ≥ 90 % of the configs


def test_one_vllm_run_is_said_to_be_not_enough(run):
    """vLLM prints no split of the cycle: one run (one k) does not measure its growth."""
    r = run("-q", "whatif", str(SAMPLES / "vllm_v1.log"))
    assert r.exit_code == 1 and "vllm_v1.log: no EAGLE3_PROF phases, and the runs hold one " \
        "num_steps" in r.stderr and "Traceback" not in r.stderr


def test_a_baseline_per_batch_size_gives_the_verify_growth():
    """One K measured and a baseline per batch size: the verify grows as the baseline's step
    does from B to B·K tokens (a verify of K tokens for B requests is a forward of B·K),
    ± 100 %, instead of the prior."""
    rates = {1: 90.0, 2: 88.0, 4: 85.0, 8: 80.0}
    w = eaglelog.whatif(STEPS[5], steps=[1, 7],
                        baseline_toks=",".join(f"{b}:{v}" for b, v in rates.items()))
    # batch 1, K0 = 6: the step at 6 is linear between 4 and 8 → secant (step(6) − step(1)) / 5
    step6 = (1000 / 85 + 1000 / 80) / 2
    slope = (step6 - 1000 / 90) / 5
    assert w.model.v1 == pytest.approx(slope, rel=1e-6)
    assert w.model.slope_from.startswith("one K (6) measured; verify +") and \
        "the baseline's step grows" in w.model.slope_from and "(± 100 %)" in w.model.slope_from
    assert W._token_slope(lambda b: 10 + 0.5 * np.asarray(b), 4.0, 6.0) == pytest.approx(0.5)
    # a baseline that does not reach B·K: the prior again
    assert W._token_slope(lambda b: np.where(np.asarray(b) <= 4, 10.0, np.nan), 1.0, 6.0) \
        is None
    w1 = eaglelog.whatif(STEPS[5], steps=[1], baseline_toks="1:90,4:85")
    assert "the prior" in w1.model.slope_from


# ----------------------------------------------------------------------------- --by batch

def _varying_sweep(d, seed):
    """Runs of 1, 2, 3, 5 and 7 steps whose clients step 2 → 8 → 16 (120 s each), on hardware
    whose verify is convex in batch × K (benchmarks/whatif_calibration.py --by-batch)."""
    from simlab.simulate import ConvexVerify, Scenario, simulate
    sc = Scenario(name="wb", clients=((0.0, 2), (120.0, 8), (240.0, 16)), think_s=0.05,
                  output_median=250.0, output_sigma=0.4, duration_s=360.0, prof_every=100,
                  hw=ConvexVerify(), accept_probs=(0.85, 0.74, 0.66, 0.6, 0.55, 0.5, 0.46))
    paths = {}
    for s in (1, 2, 3, 5, 7):
        p = os.path.join(d, f"s{s}-{seed}.log")
        simulate(sc.replace(num_steps=s), seed * 10 + s).write(p)
        paths[s] = p
    return paths


def test_by_batch_predicts_each_bucket_of_a_sweep_from_the_other_runs(tmp_path):
    """A sweep whose batch size steps 2 → 8 → 16: every #running-req bucket of every run
    predicted from the other runs (the verify grows with batch × K) holds its measured rate
    in ≥ 80 % of 20 checks over two seeds (benchmarks/whatif_calibration.py --by-batch: 90 %
    on 25 seeds), and the best K falls as the batch grows, as the hardware's truth does."""
    from simlab.simulate import ConvexVerify
    inside = total = 0
    errs = []
    for seed in (0, 1):
        paths = _varying_sweep(str(tmp_path), seed)
        w = eaglelog.whatif([paths[s] for s in sorted(paths)], steps="1..7", by_batch=True)
        assert {r.batch for r in w.by_batch} >= {"2", "8"}
        assert sum(r.share for r in w.by_batch) == pytest.approx(1.0, abs=1e-6)
        for c in w.batch_checks:
            inside += c.inside
            total += 1
            errs.append(c.error)
        best = {r.batch: r.best.steps for r in w.by_batch if r.measured.sufficient}
        assert best["2"] > best["8"]
    assert total == 20 and inside >= 16
    assert abs(float(np.median(errs))) < 0.03
    # the truth the best K is judged against: rate = τ(S) / cycle(b, S) on this hardware
    hw, probs = ConvexVerify(), (0.85, 0.74, 0.66, 0.6, 0.55, 0.5, 0.46)

    def true_best(b):
        tau = [1 + sum(np.prod(probs[:i + 1]) for i in range(s)) for s in range(1, 8)]
        return 1 + int(np.argmax([t / hw.cycle_ms(b, s) for s, t in zip(range(1, 8), tau)]))
    assert true_best(2) > true_best(8)


def test_by_batch_cost_ratio_scales_the_verify_by_batch_times_k():
    """c_b(S', K') = c_b + d·f·(S' − S) + v1·b/E[B]·(K' − K) + v2·b²/E[B²]·(K'² − K²), with f
    the midpoint between a flat draft step and one growing as the bucket's cycle."""
    from eaglelog.analysis import whatif_batch as WB
    from eaglelog.stats import Estimate
    m = W.CostModel(0.5, 10.0, 1.0, 0.0, 1.0, np.zeros((4, 4)), 0.0, 0.0, "fit", (2, 6), (),
                    batch=4.0, batch2=16.0)
    bk = WB.Bucket("8", 0.5, 8.0, Estimate(100.0, 90.0, 110.0, 50, 0.95, 0.05, 20),
                   Estimate(20.0, 19.0, 21.0, 50, 0.95, 0.0, 20), None)
    # the bucket's cycle is the run's: f = 1; 5 → 3 steps: −2 × 0.5 − 2 × (8 / 4) × 1.0
    r, se = WB.cost_ratio(m, bk, 20.0, 3, 5, 4, 6)
    assert r == pytest.approx(15.0 / 20.0) and se == pytest.approx(0.0)
    # a bucket cycle twice the run's: the draft grows by half of it (f = 1.5), σ of half the
    # draft change over the new cycle
    r, se = WB.cost_ratio(m, bk, 10.0, 3, 5, 4, 6)
    assert r == pytest.approx((20.0 - 1.5 - 4.0) / 20.0)
    assert se == pytest.approx(0.5 * 2 * 0.5 / 14.5)
    # a K² term scales by b² / E[B²]
    m2 = W.CostModel(0.5, 10.0, 0.0, 0.1, 1.0, np.zeros((4, 4)), 0.0, 0.0, "fit", (2, 6), (),
                     batch=4.0, batch2=32.0)
    r, _ = WB.cost_ratio(m2, bk, 20.0, 5, 5, 4, 6)
    assert r == pytest.approx((20.0 + 0.1 * 64 / 32 * (16 - 36)) / 20.0)


def test_the_verify_fit_scales_each_run_by_its_batch_mix():
    """Runs whose cycles sit at different batch sizes: verify = 10 + 0.5·K·E[B] is fitted
    as 10 + 0.5·E̅[B]·K at the pooled mix, not as a line through the raw K."""
    K = np.array([2.0, 4.0, 6.0])
    m1 = np.array([2.0, 4.0, 8.0])
    v = 10 + 0.5 * K * m1
    mix = np.column_stack([m1 / m1.mean(), np.ones(3)])
    coef, *_ = W._verify_fit(K, v, np.zeros(3), 1, mix)
    assert coef == pytest.approx([10.0, 0.5 * m1.mean()])


def test_cli_by_batch_table_and_json(run, tmp_path):
    paths = _varying_sweep(str(tmp_path), 0)
    r = run("-q", "whatif", "--by", "batch", "--steps", "1..7", paths[5])
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "by batch size: each #running-req bucket of the anchor run" in out
    assert "running_req" in out and "best tok/s" in out and "S7" in out
    d = json.loads(run("-q", "whatif", "--by", "batch", "-f", "json", "--steps", "3,5",
                       paths[5]).stdout)
    rows = {x["running_req"]: x for x in d["by_batch"]}
    assert {2, 8, 16} <= set(rows)
    p5 = next(p for p in rows[8]["predictions"] if p["steps"] == 5)
    # the anchor's own config: its measured rate, an exact cycle ratio
    assert p5["eff_tok_s"]["estimate"] == pytest.approx(rows[8]["measured_eff_tok_s"]
                                                        ["estimate"])
    assert d["by_batch_leave_one_out"] == []
    csv = run("-q", "whatif", "--by", "batch", "-f", "csv", "--steps", "3,5", paths[5]).stdout
    assert "running_req" in csv.splitlines()[0] and ",by batch," in csv


SCHEDULE = sorted(glob.glob(str(SAMPLES / "schedule" / "*.log")))


def test_the_per_batch_cost_model_recovers_the_samples_hardware():
    """sample_logs/make_samples.py writes the schedule runs' EAGLE3_PROF phases from a verify
    of 10.5 + 0.45 n (1 + n / 256) ms (n = batch × K) and a draft step of 0.4 + 0.02 B ms: the
    cells of their blocks (run × #running-req) give both back."""
    from eaglelog.analysis import whatif_batch as WB
    from eaglelog.library import load
    cells = []
    for p in SCHEDULE:
        log = load(p)
        steps = log.config(p)["speculative_num_steps"]
        cells += WB.cells_of(log, p, p, steps, steps + 1)
    # 3 runs × 6 batch sizes; the blocks that span a change of batch size are left out
    assert len(cells) == 18
    assert sorted({round(c.m1) for c in cells}) == [1, 2, 4, 8, 16, 32]
    assert all(c.m2 == pytest.approx(c.m1 ** 2) for c in cells)
    bc = WB.fit_batch_cost(cells)
    # (the last column: a step in n, none here — the quadratic fits)
    assert bc.verify == pytest.approx([10.5, 0.45, 0.45 / 256, 0.0], rel=0.01)
    assert bc.draft == pytest.approx([0.4, 0.02], rel=0.02)
    assert bc.n_range == (2.0, 192.0)
    assert "verify = 10.5 + 0.4501·n + 0.00176·n² ms" in bc.text
    # one batch size and one K: nothing to fit on
    one = [c for c in cells if round(c.m1) == 8 and c.k == 4]
    assert WB.fit_batch_cost(one * 4) is None


def test_by_batch_on_the_schedule_samples_predicts_each_run_from_the_others():
    """docs/whatif.md quotes this: 16 of the 18 buckets inside, errors −0.4 % … +1.7 %; the two
    outside are the 5-step run at batch 16 and 32 predicted from the 3-step one (positions 4
    and 5 extrapolated from the last conditional rates)."""
    w = eaglelog.whatif(SCHEDULE, steps="1..8",
                        baseline_log=str(SAMPLES / "batch_baseline.log"), by_batch=True)
    assert w.batch_model.startswith("per batch size from 18 cells")
    got = {(c.steps, c.batch): (round(100 * c.error, 1), c.inside) for c in w.batch_checks}
    assert len(got) == 18
    assert [k for k, (_, ok) in got.items() if not ok] == [(5, "16"), (5, "32")]
    assert max(abs(e) for e, _ in got.values()) <= 1.7
    # the anchor (5 steps) bucket by bucket: the best predicted K falls with the batch size
    best = [(r.batch, r.best.steps) for r in w.by_batch]
    assert best == [("1", 4), ("2", 3), ("4", 3), ("8", 2), ("16", 1), ("32", 1)]
    row32 = next(r for r in w.by_batch if r.batch == "32")
    p1 = next(p for p in row32.predictions if p.steps == 1)
    # measured by the 1-step run in the same bucket: 36.94 tok/s
    assert p1.measured_eff_tok_s.estimate == pytest.approx(36.94, abs=0.01)
    assert p1.eff_tok_s.ci_low <= 36.94 <= p1.eff_tok_s.ci_high
    assert p1.speedup.estimate < 1            # at 32, even one step does not pay here


def test_by_batch_marks_what_it_extrapolates_and_prints_its_residuals(run):
    """batch × K beyond the cells' range (2 … 192 tokens here; at 32 requests, 6 steps verify
    224) is marked; the fit's residuals are printed and in the JSON."""
    args = ["-q", "whatif", "--by", "batch", "--steps", "1..8", *SCHEDULE]
    out = run(*args).stdout
    row32 = next(line for line in out.splitlines() if line.strip().startswith("32 "))
    assert row32.count("*") == 3                      # S6, S7, S8
    assert "* batch × K beyond the measured range: the verify model extrapolated" in out
    assert "verify fit residuals (measured − fitted) over 18 cells:" in out
    d = json.loads(run(*args, "-f", "json").stdout)
    assert len(d["by_batch_residuals"]) == 18
    b32 = next(r for r in d["by_batch"] if r["running_req"] == 32)
    assert [p["extrapolated"] for p in b32["predictions"]] == [False] * 5 + [True] * 3


VLLM_SWEEP = sorted(glob.glob(str(SAMPLES / "vllm_sweep" / "*.log")))


def test_a_vllm_sweep_is_predicted_from_its_derived_cycles():
    """vLLM prints no split of the cycle: with runs at k = 1, 2, 3 and 5 the cost model is
    fitted on the rate model's derived cycles (runs × #running-req). make_samples.py writes a
    step of 9.8 + 0.6 b + k (0.35 + 0.015 b) + 0.4 n (1 + n / 300) ms, n = b (k + 1): in the
    model's columns 9.8 + 1.0 B + 0.35 S + 0.415 B·S + 0.00133 n²."""
    from eaglelog.analysis.whatif_derived import DerivedCost
    w = eaglelog.whatif(VLLM_SWEEP, steps="1..6", by_batch=True)
    m = w.model
    assert isinstance(m, DerivedCost) and m.cells == 12
    assert m.coef == pytest.approx([9.8, 1.0, 0.35, 0.415, 0.4 / 300, 0.0], rel=0.05)
    assert m.slope_from.startswith("derived cycles of 12 cells (runs × #running-req, 4 "
                                   "num_steps; no EAGLE3_PROF phases)")
    # the whole-run leave-one-out, each run at its own batch mix: k = 5 from k = 3 rests on
    # positions 4 and 5 extrapolated (+1.5 %); the others within 0.3 %
    got = {c.steps: (round(100 * c.error, 1), c.inside, c.comparable) for c in w.checks}
    assert got == {1: (-0.3, True, True), 2: (0.1, True, True), 3: (-0.1, True, True),
                   5: (1.5, False, True)}
    # by batch: 9 of 12 inside, the 3 outside are k = 5 (the extrapolated positions)
    outside = [(c.steps, c.batch) for c in w.batch_checks if not c.inside]
    assert len(w.batch_checks) == 12 and {s for s, _ in outside} == {5} and len(outside) <= 3
    assert max(abs(c.error) for c in w.batch_checks) < 0.021
    assert [r.best.steps for r in w.by_batch] == [3, 2, 1]     # at 2, 8 and 24 requests
    # the runs at k = 1, 2, 3 spend their request-steps differently from the anchor (k = 5):
    # their measured rates are marked as another mix's in the prediction table
    assert [(p.steps, p.other_mix) for p in w.predictions if p.measured_eff_tok_s] == \
        [(1, True), (2, True), (3, True), (5, False)]


def test_sglang_runs_without_a_profiler_use_their_derived_cycles(tmp_path):
    """The bundled sweep without its EAGLE3_PROF blocks: the cycle model comes from the decode
    lines' derived cycles, and every run is still predicted from the others inside its
    interval."""
    paths = []
    for p in SWEEP:
        out = tmp_path / os.path.basename(p)
        out.write_text("".join(ln for ln in open(p, encoding="utf-8").readlines()
                               if not (ln.startswith("EAGLE3_PROF") or ln.startswith("  "))))
        paths.append(str(out))
    w = eaglelog.whatif(paths, steps="1..7", baseline_toks=90)
    assert w.model.slope_from.startswith("derived cycles of 5 cells")
    assert all(c.inside and abs(c.error) < 0.02 for c in w.checks) and len(w.checks) == 5
    d = w.to_dict()
    assert d["model"]["kind"] == "derived cycles" and len(d["model"]["residuals"]) == 5


def test_three_batch_sizes_are_not_taken_for_a_warm_up():
    """A run that steps 2 → 8 → 24 requests: the rate model's curve in the batch size is a
    quadratic through three levels (a line left the first level above it, and the whole level
    was cut as a warm-up)."""
    from eaglelog.analysis import rate
    from eaglelog.analysis.breakeven import run_windows
    from eaglelog.library import load
    for p in VLLM_SWEEP:
        _, win = run_windows(load(p), p)
        f = rate.fit(win, 0.95, None)
        assert f.warmup == 0 and f.kind == "corrected"


def test_a_tree_without_a_profiler_is_refused(run, tmp_path):
    tree = _tree(tmp_path)
    text = open(tree, encoding="utf-8").read()
    bare = tmp_path / "tree_noprof.log"
    bare.write_text("".join(ln for ln in text.splitlines(True)
                            if not (ln.startswith("EAGLE3_PROF") or ln.startswith("  "))))
    r = run("-q", "whatif", str(bare))
    assert r.exit_code == 1 and "tree_noprof.log: a tree draft (topk > 1) without EAGLE3_PROF " \
        "phases" in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------------------- hostile inputs
# (found by an adversarial review of whatif: each was a traceback, an abort or a wrong table)

def test_two_runs_without_a_profiler_predict_and_skip_the_checks_they_cannot_make(run):
    r = run("-q", "whatif", VLLM_SWEEP[0], VLLM_SWEEP[2])
    assert r.exit_code == 0, r.stderr
    assert "derived cycles of 6 cells" in r.stdout
    assert "not predicted from the others: without it they hold one num_steps" in r.stdout


def test_a_baseline_that_covers_some_batch_sizes_changes_no_rate():
    """The rates come from a baseline-free fit; the speedups hold where it covers, said so."""
    free = eaglelog.whatif(VLLM_SWEEP, steps=[1, 5])
    part = eaglelog.whatif(VLLM_SWEEP, steps=[1, 5], baseline_toks="1:90,8:70")
    assert [p.eff_tok_s.estimate for p in part.predictions] == \
        pytest.approx([p.eff_tok_s.estimate for p in free.predictions], rel=1e-12)
    assert [c.error for c in part.checks] == pytest.approx([c.error for c in free.checks])
    assert any("the baseline covers" in n and "the speedups hold for the batch sizes it covers "
               "only" in n for n in part.notes)


def test_positions_nothing_reached_give_no_tail_not_nan():
    """eagle3_5step.log's histograms never reach positions 5–6: beyond them τ stays put."""
    w = eaglelog.whatif(FIVE, steps="5..8")
    taus = [p.accept_len.estimate for p in w.predictions]
    assert all(math.isfinite(t) for t in taus) and max(taus) - min(taus) < 1e-12


def test_impossible_vllm_per_position_lists_are_refused(run, tmp_path):
    text = open(VLLM_SWEEP[3], encoding="utf-8").read()
    import re
    bad = tmp_path / "k5_rising.log"
    bad.write_text(re.sub(r"Per-position acceptance rate: [0-9., ]*, Avg",
                          "Per-position acceptance rate: 0.500, 0.600, 0.700, 0.800, 0.900, Avg",
                          text))
    r = run("-q", "whatif", VLLM_SWEEP[0], VLLM_SWEEP[2], str(bad))
    assert r.exit_code == 1 and "k5_rising.log:4: Per-position acceptance rate 0.5, 0.6, 0.7, " \
        "0.8, 0.9 is not a falling sequence" in r.stderr and "Traceback" not in r.stderr


def test_duplicates_mixed_engines_and_bad_arguments_are_refused(run):
    r = run("-q", "whatif", SWEEP[2], SWEEP[3], SWEEP[3])
    assert r.exit_code == 2 and "steps5.log: given twice" in r.stderr
    r = run("-q", "whatif", VLLM_SWEEP[0], VLLM_SWEEP[2], SWEEP[3])
    assert r.exit_code == 1 and "different engines (sglang, vllm)" in r.stderr
    from eaglelog.errors import UsageProblem
    for kw, msg in ((dict(confidence=1.5), "confidence 1.5"), (dict(steps=0), "from 1 to 16"),
                    (dict(baseline="base.log"), "baseline= takes an eaglelog Baseline")):
        with pytest.raises(UsageProblem, match=msg):
            eaglelog.whatif(STEPS[5], **kw)
    assert [p.steps for p in eaglelog.whatif(STEPS[5], steps=3).predictions] == [3]


def test_cli_verify_slope_is_the_api_s():
    from click.testing import CliRunner
    from eaglelog.cli import main
    out = CliRunner().invoke(main, ["-q", "whatif", "-f", "json", "--verify-slope", "1.5",
                                    "--steps", "1", STEPS[5]]).output
    d = json.loads(out)
    api = eaglelog.whatif(STEPS[5], steps=[1], verify_slope=0.015)
    assert d["predictions"][0]["eff_tok_s"]["estimate"] == \
        pytest.approx(api.predictions[0].eff_tok_s.estimate, rel=1e-12)
    assert d["model"]["verify_slope_from"].endswith("(--verify-slope)")


def test_summary_keeps_the_run_s_own_figures_when_the_baseline_covers_part_of_it(run):
    """A baseline that covers 60 % of the run's request-steps narrows the break-even to that
    part (said in a note), never the run's own accept length and per-stream rate: with and
    without the baseline, summary prints the same lines for them."""
    out = run("-q", "summary", "--baseline-toks", "1:90,8:70", VLLM_SWEEP[3]).stdout
    free = run("-q", "summary", VLLM_SWEEP[3]).stdout

    def line(text, key):
        return next(ln for ln in text.splitlines() if ln.strip().startswith(key))
    for key in ("per stream", "accept length", "cycle"):
        assert line(out, key) == line(free, key), key
    assert "the baseline covers running_req 1–8: 60% of the run's request-steps" in out
    assert "baseline covers" not in free


def test_runs_of_different_draft_methods_are_not_pooled(run, tmp_path):
    ngram = tmp_path / "k3_ngram.log"
    ngram.write_text(open(VLLM_SWEEP[2], encoding="utf-8").read()
                     .replace("'method': 'eagle3'", "'method': 'ngram'"))
    r = run("-q", "whatif", VLLM_SWEEP[0], str(ngram), VLLM_SWEEP[3])
    assert r.exit_code == 1 and "different methods (eagle3, ngram)" in r.stderr


def test_held_out_runs_outside_their_intervals_are_said(run):
    """Three runs at several batch sizes each: every held-out run misses its interval (3 of 3;
    P(≥ 3 of 3 outside) at 95 % intervals is 1.25e-4), and a note says the intervals are too
    narrow for such runs; by batch size 16 of 18 are inside (P(≥ 2 of 18) = 0.23: no note on
    those)."""
    from eaglelog.stats import binom_tail
    assert binom_tail(3, 3, 0.05) == pytest.approx(1.25e-4)
    assert binom_tail(2, 18, 0.05) == pytest.approx(1 - 0.95 ** 18 - 18 * 0.05 * 0.95 ** 17)
    assert binom_tail(0, 4, 0.3) == pytest.approx(1.0)
    logs = sorted(str(p) for p in (SAMPLES / "schedule").glob("steps*.log"))
    base = ["--steps", "1..6", "--baseline-log", str(SAMPLES / "batch_baseline.log")]
    d = json.loads(run("-q", "whatif", "-f", "json", *base, *logs).stdout)
    assert [c["inside"] for c in d["leave_one_out"]] == [False, False, False]
    (note,) = [n for n in d["notes"] if "outside their" in n]
    assert note == ("leave-one-run-out: 3 of 3 runs outside their 95% prediction intervals "
                    "(errors -11.1% … +15.7%), more than the level explains: the runs differ in "
                    "more than the model holds, and the intervals above are too narrow for runs "
                    "like these (--by batch predicts and checks each batch size on its own)")
    d = json.loads(run("-q", "whatif", "-f", "json", "--by", "batch", *base, *logs).stdout)
    inside = [c["inside"] for c in d["by_batch_leave_one_out"] if c.get("comparable", True)]
    assert (sum(inside), len(inside)) == (16, 18)
    (note,) = [n for n in d["notes"] if "outside their" in n]
    assert note.endswith("too narrow for runs like these")
    # runs the model predicts: no such note
    sweep = sorted(str(p) for p in (SAMPLES / "sweep").glob("steps*.log"))
    d = json.loads(run("-q", "whatif", "-f", "json", "--baseline-toks", "90", *sweep).stdout)
    assert all(c["inside"] for c in d["leave_one_out"])
    assert not [n for n in d["notes"] if "outside their" in n]


def test_a_cost_model_that_misfits_says_its_intervals_carry_it(tmp_path):
    """Cells at 15 and 16 running requests (a span under ×1.5: no batch column) scatter beyond
    their own errors; the model line says by how much, and that the prediction intervals hold
    it as model error (whatif_derived: the χ² above 1 is a relative variance of a new cell)."""
    from simlab.simulate import SCENARIOS, simulate
    paths = []
    for k in (1, 2, 3, 5):
        p = tmp_path / f"k{k}.log"
        simulate(SCENARIOS["continuous_s"].replace(num_steps=k, duration_s=300.0,
                                                   name=f"k{k}"), 3).write(str(p))
        paths.append(str(p))
    w = eaglelog.whatif(paths, baseline_toks=81.8)
    text = w.to_dict()["model"]["model"]
    chi2 = float(text.split("χ²/df ")[1].split(" ")[0])
    assert chi2 > 2
    # (χ² is printed to 2 digits: the scatter, √χ² of the unrounded value, to within them)
    scatter = float(text.split("the cells scatter ")[1].split("×")[0])
    assert abs(scatter - math.sqrt(chi2)) < 0.06 * math.sqrt(chi2)
    assert text.endswith(f"χ²/df {chi2:.2g} (the cells scatter {scatter:.2g}× beyond "
                         "their own errors: the intervals carry it as model error)")
    # the vLLM sweep fits within its errors: no such words
    assert "scatter" not in eaglelog.whatif(VLLM_SWEEP).to_dict()["model"]["model"]
