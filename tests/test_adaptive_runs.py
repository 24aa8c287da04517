"""Issue 34, item 7: a run whose num_steps changes at run time (SGLang adaptive speculation,
'Adaptive spec params updated: steps A -> B' every ~10 windows) is answered whole — its
per-stream rate and verdict need no configuration — and per configuration, every segment of
one configuration pooled.  And item 2's lifetime from the KV usage (analysis/kv_life.py).
The logs are the simulator's (simlab.simulate, scenarios 'adaptive' and 'long_requests'),
with their exact truths."""
from __future__ import annotations

import json

import numpy as np
import pytest

import eaglelog
from eaglelog.analysis.breakeven import request_lifetime
from eaglelog.analysis.kv_life import kv_lifetime
from eaglelog.api import ConfigSegment, by_configuration, whole_run
from simlab.simulate import SCENARIOS, simulate


@pytest.fixture(scope="module")
def adaptive(tmp_path_factory):
    sc = SCENARIOS["adaptive"].replace(duration_s=150.0)
    run = simulate(sc, 3)
    path = tmp_path_factory.mktemp("adaptive") / "adaptive.log"
    run.write(str(path))
    return str(path), run.truth


def _cycle_truth(sums) -> float:
    m = sums.metrics()
    return m.cycle_ms


def test_the_simulated_log_switches_its_steps(adaptive):
    path, truth = adaptive
    text = open(path).read()
    assert "speculative_adaptive=True" in text
    assert text.count("Adaptive spec params updated: steps ") == \
        sum(1 for _ in text.splitlines() if "Adaptive spec params" in _) >= 8
    assert sorted(truth.by_k) == [2, 3, 5]


def test_breakeven_answers_the_whole_run_first(adaptive, run):
    path, truth = adaptive
    res = run("breakeven", "--baseline-toks", "120", "-f", "json", path)
    assert res.exit_code == 0, res.output
    runs = json.loads(res.output)["runs"]
    segs = open(path).read().count("Adaptive spec params updated") + 1
    assert runs[0]["source"] == f"{path} [whole run: steps 2, 3, 5 in {segs} segments]"
    assert runs[0]["notes"][0].startswith("the whole run across its configurations (steps 2, 3, "
                                          f"5, changed at run time {segs - 1} times)")
    # the whole run's cycle is the run's own mix of the three configurations' cycles
    whole = _cycle_truth(truth.sums)
    c = runs[0]["cycle_ms"]
    assert c["ci_low"] <= whole <= c["ci_high"]
    assert abs(c["estimate"] / whole - 1) < 0.04        # (pooled without levels: −12 %)
    assert runs[0]["verdict"] in ("above", "below", "inconclusive")
    # then each configuration, its segments pooled, each with its own cycle
    labels = [r["source"].split("[")[1] for r in runs[1:]]
    assert sorted(lb.split(":")[0] for lb in labels) == ["steps 2", "steps 3", "steps 5"]
    for r in runs[1:]:
        k = int(r["source"].split("[steps ")[1].split(":")[0].split(" ")[0])
        want = _cycle_truth(truth.by_k[k])
        assert abs(r["cycle_ms"]["estimate"] / want - 1) < 0.01, (k, r["cycle_ms"], want)


def test_other_commands_never_pool_configurations(adaptive):
    path, _ = adaptive
    log = eaglelog.parse(path)
    labels = [label for label, _ in log.units()]
    assert not any("whole run" in lb for lb in labels)
    assert len(labels) == 3 and all("segments pooled" in lb or "from line" in lb
                                    or "until line" in lb for lb in labels)


def test_a_pooled_configuration_leaves_out_each_segments_first_window():
    segs = [ConfigSegment(None, 100, 3), ConfigSegment(100, 200, 5),
            ConfigSegment(200, 300, 3), ConfigSegment(300, None, 2)]
    units = by_configuration(segs)
    assert [u.steps for u in units] == [3, 5, 2]
    three = units[0]
    assert three.parts == ((None, 100), (200, 300)) and three.label == \
        "steps 3: 2 segments pooled"
    lines = np.array([5, 99, 100, 150, 200, 250, 299, 300])
    assert three.part(lines).tolist() == [0, 0, -1, -1, 1, 1, 1, -1]
    assert three.holds(lines).tolist() == [True, True, False, False, True, True, True, False]
    assert units[1] is segs[1]              # a lone segment stays as it is
    w = whole_run(segs)
    assert w.mixed == (2, 3, 5) and w.steps == 5 and w.holds(lines).all()
    assert w.steps_at(lines).tolist() == [0, 0, 1, 1, 0, 0, 0, 2]
    assert w.label == "whole run: steps 2, 3, 5 in 4 segments"


def test_the_kv_usage_gives_the_requests_lifetime_without_finish_lines(tmp_path):
    """Heavy-tailed outputs (Pareto α 1.2): the request-step weighted life from #token drops
    is within −50 … +30 % of the Finish lines' own (Σ v² / Σ v; a window where two finish
    shares its total equally, and the prompts' spread is taken out: a lower bound), and longer
    than the mean life Σ B̃ / admissions."""
    sc = SCENARIOS["long_requests"]
    for seed in (0, 1, 2):
        path = tmp_path / f"lr{seed}.log"
        simulate(sc, seed).write(str(path))
        log = eaglelog.parse(str(path))
        kv = kv_lifetime(log.decode, log.prefill, 40)
        fin = request_lifetime(log, log.sources[0].name, 40)
        assert kv is not None and fin is not None
        assert 0.5 < kv / fin < 1.3, (seed, kv, fin)
        mean_life = float(log.decode["running_req"].sum()) / float(log.prefill["new_seq"].sum())
        assert kv > 1.25 * mean_life, (seed, kv, mean_life)


def test_kv_lifetime_needs_one_pool():
    import pandas as pd
    dec = pd.DataFrame({"line_no": [1, 2, 3, 4], "running_req": [4, 4, 4, 4],
                        "num_tokens": [100, 200, 300, 400], "accept_len": [2.0] * 4,
                        "dp": [0, 1, 0, 1]})
    pre = pd.DataFrame({"line_no": [0], "new_seq": [4], "new_token": [400]})
    assert kv_lifetime(dec, pre, 40) is None                 # two DP pools
    assert kv_lifetime(dec.drop(columns=["dp"]), pre, 40) is None   # nothing finished
    # one request finishes in the third window: 4 → 3 → (one admitted) 4
    dec = pd.DataFrame({"line_no": [1, 2, 4, 5], "running_req": [4, 4, 4, 4],
                        "num_tokens": [2000, 2320, 2000, 2320], "accept_len": [2.0] * 4})
    pre = pd.DataFrame({"line_no": [0, 3, 3], "new_seq": [4, 1, 1], "new_token": [1600, 100,
                                                                                  300]})
    # window 3: committed 2 × 4 × 40 = 320, prefills 402 tokens (2 prompts + first tokens),
    # finished 2 (4 + 2 − 4): 320 + 402 − (2000 − 2320) = 1042 over 2 = 521 each, less the
    # mean prompt (2000 / 6 = 333.3): 187.7 tokens, 93.8 verifies; Σ n v² less the prompts'
    # variance (36,667 tokens², over a² = 4) is below the mean life, which bounds it: 2.35
    # windows
    assert kv_lifetime(dec, pre, 40) == pytest.approx((1042 / 2 - 2000 / 6) / 2 / 40)
