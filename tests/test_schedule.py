"""eaglelog schedule (issue 17): num_steps per batch size, and the configs vLLM and SGLang load
(docs/schedule.md; the engines' rules: eaglelog/engine_schedules.py, docs/dev/schedule-engines.md).

The evidence is sample_logs/schedule/steps{1,3,5}.log against batch_baseline.log (written by
sample_logs/make_samples.py): at batch size b a cycle of S steps takes
10.5 + 0.45 n (1 + n / 256) + S (0.4 + 0.02 b) + 0.5 + 0.02 b ms with n = b (S + 1), a plain step
11.1 + 0.45 (b − 1) ms, and position i is accepted with the falling conditional rates
SWEEP_ACCEPT.  The truth is computed from those formulas here."""
import glob
import itertools
import json
import math
import operator
import os
import sys

import pytest

import eaglelog
from conftest import SAMPLES
from eaglelog import engine_schedules as E

RUNS = sorted(glob.glob(str(SAMPLES / "schedule" / "*.log")))
BASE = str(SAMPLES / "batch_baseline.log")
sys.path.insert(0, str(SAMPLES))
import make_samples as M  # noqa: E402


def true_speedup(steps: int, b: int) -> float:
    tau = 1 + sum(itertools.accumulate(M.SWEEP_ACCEPT[:steps], operator.mul))
    return tau * (11.1 + 0.45 * (b - 1)) / M.schedule_cycle(steps)(b)


@pytest.fixture(scope="module")
def result():
    return eaglelog.schedule(RUNS, baseline_log=BASE)


def test_every_bucket_gets_the_truly_best_k_or_one_tied_with_it(result):
    assert [s.batch for s in result.slots] == ["1", "2", "4", "8", "16", "32"]
    for s in result.slots:
        b = s.lo
        truth = {k: true_speedup(k, b) for k in (1, 3, 5)}
        best_k = max(truth, key=truth.get)
        if truth[best_k] < 1:
            assert s.steps == 0 and s.status == "no speculation", s
            continue
        ok = {c.steps for c in s.candidates if c is s.best or c.tied}
        assert s.steps == s.best.steps and best_k in ok, (b, s.steps, ok, truth)
        # the measured speedups are within 4 % of the formulas'
        for c in s.candidates:
            assert c.speedup.estimate == pytest.approx(truth[c.steps], rel=0.04), (b, c.steps)
    assert [s.steps for s in result.slots] == [5, 3, 3, 3, 1, 0]
    assert [s.status for s in result.slots] == ["pays"] * 5 + ["no speculation"]
    # 1: 5 and 3 steps are 2.134 and 2.139 by the formulas: tied.  8: 3 and 1 are 1.334 and
    # 1.324, and the millisecond stamps measure each window's batch, so 0.8 % is resolved
    assert [c.steps for c in result.slots[0].candidates if c.tied] == [3]
    assert [c.steps for c in result.slots[3].candidates if c.tied] == []
    assert any("running_req 1: the choice is not settled" in n for n in result.notes)


def test_the_crossover_holds_the_true_one(result):
    # 1 step's speedup falls through 1 where 1.8 × step(b) = cycle(b): b ≈ 25.3
    lo_b, hi_b = 16.0, 32.0
    for _ in range(60):
        mid = (lo_b + hi_b) / 2
        lo_b, hi_b = (mid, hi_b) if true_speedup(1, mid) > 1 else (lo_b, mid)
    c = result.crossover
    assert c.low < lo_b < c.high and c.low > 16 and c.high < 32
    # log-linear between the 16 and 32 buckets' estimates
    s16, s32 = (result.slots[4].best.speedup.estimate, result.slots[5].best.speedup.estimate)
    f = math.log(s16) / (math.log(s16) - math.log(s32))
    assert c.estimate == pytest.approx(16 * 2 ** f, rel=1e-9)
    assert c.text.startswith(f"speculation stops paying at running_req ≈ {c.estimate:.3g} [")


def test_the_engine_configs_load_and_select_the_schedule(result):
    v = result.vllm
    assert v["method"] == "eagle3" and v["model"] == "/models/llama-3.1-8b-eagle3"
    assert v["num_speculative_tokens"] == 5
    assert v["num_speculative_tokens_per_batch_size"] == [[1, 1, 5], [2, 15, 3], [16, 31, 1],
                                                         [32, 32, 0]]
    dense = E.vllm_lookup(v["num_speculative_tokens_per_batch_size"], 5, max_num_seqs=48)
    for s in result.slots:
        assert dense[s.lo] == s.steps
    assert dense[5] == 3 and dense[24] == 1 and dense[48] == 0     # between and above: carried
    slots = E.sglang_validate(result.sglang, num_steps=result.sglang_num_steps)
    assert slots == {1: [5], 2: [3], 16: [1], 32: [0]}
    for s in result.slots:
        assert slots[E.sglang_route(slots, s.lo)] == [s.steps]
    # with CUDA graphs a batch is padded first: 17 → 24 → slot 16; 5 → 8 → slot 2
    graphs = [1, 2, 4, 8, 16, 24, 32, 48]
    assert E.sglang_route(slots, 17, graphs) == 16 and E.sglang_route(slots, 5, graphs) == 2
    assert E.sglang_route(slots, 500, graphs) == 32
    # SGLang v0.5.13 takes only positive steps: this schedule's K = 0 slot needs v0.5.14
    with pytest.raises(E.EngineConfigError, match=r"BS 32: candidate_steps must be a list of "
                       r"positive ints, got \[0\]"):
        E.sglang_validate(result.sglang, version=(0, 5, 13))
    assert any("v0.5.14 or later" in n for n in result.notes)


@pytest.mark.parametrize("schedule,msg", [
    # docs/dev/schedule-engines.md §3 (vllm/v1/spec_decode/dynamic/utils.py, merge 4ef4492e9b7a)
    ({"1-16": 3, "64-128": 2}, "Input should be a valid list"),
    ([[1, 64]], "must be a 3-item sequence"),
    ([[1, 64, 2.5]], "fractional part"),
    ([[2, 64, 3]], "The first batch-size range must start at 1 so every runtime batch size has "
                   "a defined schedule."),
    ([[1, 64, 3], [64, 128, 1]], "Batch-size ranges must be non-overlapping and sorted."),
    ([[1, 64, -1]], "num_speculative_tokens_per_batch_size values must be >= 0."),
    ([[10, 5, 1]], r"Batch-size range start must be <= end for \(10, 5, 1\)."),
    ([[0, 5, 1]], r"Batch-size range \(0, 5\) must be positive."),
    ([], "must not be empty"),
])
def test_vllm_rejects_what_vllm_rejects(schedule, msg):
    with pytest.raises(E.EngineConfigError, match=msg):
        E.vllm_validate(schedule, 3)


def test_vllm_accepts_what_vllm_accepts():
    assert E.vllm_validate([[65, 128, 1], [1, 64, 3]], 3) == [(1, 64, 3), (65, 128, 1)]
    # K above num_speculative_tokens is clamped; a gap takes the previous K (the upstream
    # comment's example), above the last range the last K
    dense = E.vllm_lookup([[1, 16, 5], [33, 64, 1]], 3, 256)
    assert dense[1] == 3 and dense[32] == 3 and dense[33] == 1 and dense[256] == 1
    assert E.vllm_lookup([[1, 16, 3], [32, 128, 2]], 3, 256)[17:32] == [3] * 15


@pytest.mark.parametrize("cfg,steps,msg", [
    # docs/dev/schedule-engines.md §3 (adaptive_spec_params.py, v0.5.14+)
    ({"ema_alpha": 0.3}, None, r"must contain at least one integer-string BS key, e\.g\. "
                               r"\{\"1\": \{\"candidate_steps\": \[1,3,7\]\}\}\. Got keys: "
                               r"\['ema_alpha'\]"),
    ({"1-8": {"candidate_steps": [1, 3]}}, None, r"Got keys: \['1-8'\]"),
    ({"1": {"up_hysteresis": 0.1}}, None, "BS 1: candidate_steps must be a list of "
                                          "non-negative ints, got None"),
    ({"1": {"candidate_steps": [1, 2.5]}}, None, r"got \[1, 2\.5\]"),
    ({"1": {"candidate_steps": [1, 3]}}, 5, r"--speculative-num-steps=5 is not in the adaptive "
                                            r"config candidate_steps \[1, 3\]\. Pass one of "
                                            "those values."),
    ([{"candidate_steps": [1, 3]}], None, "'list' object has no attribute 'items'"),
])
def test_sglang_rejects_what_sglang_rejects(cfg, steps, msg):
    with pytest.raises(E.EngineConfigError, match=msg):
        E.sglang_validate(cfg, steps)


def test_cli_table_configs_and_plot(run, tmp_path):
    r = run("schedule", "--baseline-log", BASE, *RUNS)
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "crossover: speculation stops paying at running_req ≈ 24.7 [" in out
    assert "--speculative-adaptive --speculative-adaptive-config schedule.json " \
           "--speculative-num-steps 5" in out
    assert "'{\"method\": \"eagle3\", \"model\": \"/models/llama-3.1-8b-eagle3\", " \
           "\"num_speculative_tokens\": 5, \"num_speculative_tokens_per_batch_size\": " \
           "[[1, 1, 5], [2, 15, 3], [16, 31, 1], [32, 32, 0]]}'" in out
    v = run("-q", "schedule", "--baseline-log", BASE, "-f", "vllm", *RUNS)
    assert v.exit_code == 0 and json.loads(v.stdout) == eaglelog.schedule(
        RUNS, baseline_log=BASE).vllm
    g = tmp_path / "adaptive.json"
    s = run("-q", "schedule", "--baseline-log", BASE, "-f", "sglang", "-o", str(g), *RUNS)
    assert s.exit_code == 0 and E.sglang_validate(json.loads(g.read_text()), 5)
    d = json.loads(run("-q", "schedule", "--baseline-log", BASE, "-f", "json", *RUNS).stdout)
    assert d["command"] == "schedule" and [x["steps"] for x in d["slots"]] == [5, 3, 3, 3, 1, 0]
    png = tmp_path / "schedule.png"
    p = run("-q", "schedule", "--baseline-log", BASE, "--plot", str(png), *RUNS)
    assert p.exit_code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(png) > 20_000
    md = run("-q", "schedule", "--baseline-log", BASE, "-f", "markdown", *RUNS).stdout
    assert md.startswith("| running_req ") and md.count("\n") == 8


def test_what_schedule_cannot_answer_is_said(run):
    r = run("schedule", *RUNS)
    assert r.exit_code == 2 and "give the baseline" in r.stderr
    r = run("schedule", "--baseline-toks", "90", *RUNS)
    assert r.exit_code == 1 and "one --baseline-toks rate cannot be that" in r.stderr
    r = run("schedule", "--baseline-log", BASE, BASE)
    assert r.exit_code == 1 and "no speculative_algorithm" in r.stderr
    # a per-batch-size stated baseline works like a log
    ok = run("-q", "schedule", "--baseline-toks", "1:90.09,2:86.58,4:80.32,8:70.18,16:56.02,"
             "32:39.92", "-f", "json", *RUNS)
    assert ok.exit_code == 0, ok.stderr
    assert [x["steps"] for x in json.loads(ok.stdout)["slots"]] == [5, 3, 3, 3, 1, 0]


def test_an_adaptive_run_is_evidence_for_each_of_its_configurations():
    """SGLang adaptive speculation (`Adaptive spec params updated: steps 3 -> 5`, v0.5.11 →):
    one log, two configurations, two candidates (analysis/engines.py splits the segments)."""
    log = str(SAMPLES.parent / "tests" / "fixtures" / "engines" / "sglang_adaptive.log")
    r = eaglelog.schedule(log, baseline_toks="1:90,64:40")
    assert [s for _, s in r.runs] == [3, 5]
    (slot,) = r.slots
    assert slot.batch == "4" and sorted(c.steps for c in slot.candidates) == [3, 5]
    assert slot.steps == 3 and slot.status == "pays"
    assert r.vllm["num_speculative_tokens_per_batch_size"] == [[1, 4, 3]]
    assert any("batch sizes below 4 were not measured" in n for n in r.notes)
