"""Issue 35, item 3 (vLLM): under dynamic speculative decoding
(``num_speculative_tokens_per_batch_size``, vLLM 0.24 →) a draft may hold fewer tokens than the
positions the SpecDecoding line lists, and the per-position rate is accepted-at-i over every
draft (vllm 0.34.0 v1/spec_decode/metrics.py:114–117): a position a draft never reached reads as
rejected.  `acceptance` says so — from the config, or from windows that drafted fewer tokens a
draft than there are positions.  Lines written in vLLM 0.34's format with known counts."""
from __future__ import annotations

import eaglelog

HEAD = "(APIServer pid=90) INFO 11-20 10:00:{s:02d} [metrics.py:122] SpecDecoding metrics: "


def line(s: int, drafts: int, drafted: int, per_pos: list[int]) -> str:
    acc = sum(per_pos)
    rates = ", ".join(f"{a / drafts:.3f}" for a in per_pos)
    return (HEAD.format(s=s) + f"Mean acceptance length: {1 + acc / drafts:.2f}, Accepted "
            f"throughput: {acc / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} "
            f"tokens/s, Accepted: {acc} tokens, Drafted: {drafted} tokens, Per-position "
            f"acceptance rate: {rates}, Avg Draft acceptance rate: {100 * acc / drafted:.1f}%\n")


def curve(tmp_path, text: str):
    p = tmp_path / "v.log"
    p.write_text(text)
    cs = eaglelog.acceptance(eaglelog.parse(str(p), base_date="2026-11-20")).curves
    assert len(cs) == 1
    return cs[0]


def test_windows_that_drafted_short_are_said(tmp_path):
    # 100 drafts a window, half of 3 tokens and half of 1: 200 drafted; position 1 accepted
    # 80 times, 2 and 3 (drafted by 50 only) 30 and 20 times
    c = curve(tmp_path, "".join(line(10 * i, 100, 200, [80, 30, 20]) for i in range(1, 6)))
    note = [n for n in c.notes if "per-position rate counts every draft" in n]
    assert len(note) == 1 and "drafted 2.00 tokens a draft, fewer than the 3" in note[0]
    # the per-draft reach is what the line says; the conditional at 2 is 0.375, not 0.6
    assert round(c.positions[1].conditional.estimate, 3) == 0.375


def test_fixed_k_windows_are_not_flagged(tmp_path):
    c = curve(tmp_path, "".join(line(10 * i, 100, 300, [80, 60, 40]) for i in range(1, 6)))
    assert not any("per-position rate counts every draft" in n for n in c.notes)


def test_a_per_batch_size_schedule_in_the_config_is_said(tmp_path):
    cfg = ("INFO 11-20 09:59:00 [api_server.py:1043] non-default args: {'model': 'm', "
           "'speculative_config': {'method': 'eagle3', 'model': 'd', 'num_speculative_tokens': "
           "3, 'num_speculative_tokens_per_batch_size': [[1, 8, 3], [9, 256, 1]]}}\n")
    c = curve(tmp_path, cfg + "".join(line(10 * i, 100, 300, [80, 60, 40])
                                      for i in range(1, 6)))
    note = [n for n in c.notes if "per-position rate counts every draft" in n]
    assert len(note) == 1 and note[0].startswith("the config sets "
                                                 "num_speculative_tokens_per_batch_size")


# ---------------------------------------------------------------- saved vLLM responses
# vLLM 0.34.0 --per-request-spec-decode-metrics (v1/metrics/stats.py:350–422,
# RequestSpecDecodeMetrics.to_dict): acceptance_histogram over accepted drafts j, and with
# 'detailed' the per-step lists per_step_accepted / per_step_drafted.

def response(i: int, steps: list[tuple[int, int]], k: int = 5, detailed: bool = True) -> str:
    import json
    hist = [0] * (k + 1)
    for a, _ in steps:
        hist[a] += 1
    acc = sum(a for a, _ in steps)
    drafted = sum(d for _, d in steps)
    sd = {"mean_acceptance_length": 1 + acc / len(steps),
          "draft_acceptance_rate": acc / drafted if drafted else 0.0,
          "acceptance_histogram": hist, "num_spec_steps": len(steps),
          "num_accepted_draft_tokens": acc, "num_draft_tokens": drafted, "num_spec_tokens": k}
    if detailed:
        sd["per_step_accepted"] = [a for a, _ in steps]
        sd["per_step_drafted"] = [d for _, d in steps]
    return json.dumps({"id": f"cmpl-{i}", "object": "text_completion",
                       "usage": {"prompt_tokens": 100, "completion_tokens": 1 + acc + len(steps)},
                       "metrics": {"speculative_decoding": sd}}) + "\n"


def dynamic_requests(n: int = 60, p: float = 0.7, seed: int = 3):
    """Requests whose every step drafts K ∈ {1, 3, 5} (a per-batch-size schedule) and accepts
    each drafted position with probability p given the one before: the conditional rate is p
    at every position."""
    import random
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        steps = []
        for _ in range(40):
            d = rng.choice((1, 3, 5))
            a = 0
            while a < d and rng.random() < p:
                a += 1
            steps.append((a, d))
        out.append(steps)
    return out


def test_per_step_lists_give_the_conditional_rate_under_a_dynamic_k(tmp_path):
    reqs = dynamic_requests()
    c = curve(tmp_path, "".join(response(i, s) for i, s in enumerate(reqs)))
    assert c.origin == "vllm-response" and c.unit == "request" and c.samples == 60
    # the exact counts: position i reached by steps with a ≥ i; could be reached by d ≥ i, a ≥ i−1
    for i in (1, 3, 5):
        reached = sum(a >= i for s in reqs for a, _ in s)
        base = sum(d >= i and a >= i - 1 for s in reqs for a, d in s)
        pos = c.positions[i - 1]
        assert pos.reached == reached and pos.base == base
        assert abs(pos.conditional.estimate - reached / base) < 1e-12
    # every position's conditional rate is the draft model's p (0.7), not diluted by short drafts
    assert all(abs(pos.conditional.estimate - 0.7) < 0.08 for pos in c.positions)
    assert sum(pos.conditional.ci_low < 0.7 < pos.conditional.ci_high for pos in c.positions) >= 4
    assert any("per_step_drafted" in n for n in c.notes)
    # τ = 1 + Σ P(accept ≥ i) is the responses' own mean length, weighted by their steps
    assert c.identity.status == "holds"


def test_without_per_step_lists_the_deep_rates_are_said_to_be_lower_bounds(tmp_path):
    reqs = dynamic_requests()
    c = curve(tmp_path, "".join(response(i, s, detailed=False) for i, s in enumerate(reqs)))
    note = [n for n in c.notes if "lower bound" in n]
    assert len(note) == 1 and "fewer tokens than num_spec_tokens" in note[0]
    # half the steps that accepted 3 drafted only 3 (K 3): P(≥ 4 | ≥ 3) reads ≈ 0.7 / 2
    assert c.positions[3].conditional.estimate < 0.45
    # the fixed-K requests draw no note
    fixed = [[(a, 5) for a, _ in s] for s in reqs]
    c = curve(tmp_path, "".join(response(i, s, detailed=False) for i, s in enumerate(fixed)))
    assert not [n for n in c.notes if "lower bound" in n]


def test_damaged_per_step_lists_are_reported_and_left_out(tmp_path):
    from eaglelog.parsers.requests_bench import parse_vllm_response
    good = response(1, [(1, 3), (0, 1), (3, 3)])
    bad = good.replace('"per_step_drafted": [3, 1, 3]', '"per_step_drafted": [0, 1, 3]')
    r = parse_vllm_response(bad)
    assert r.record is not None and any("accepted more drafts than it proposed" in p
                                        for p in r.problems)
    r = parse_vllm_response(good.replace('"per_step_drafted": [3, 1, 3]',
                                         '"per_step_drafted": [3, 1]'))
    assert any("do not both hold num_spec_steps (3)" in p for p in r.problems)


def iteration(i: int, reqs: int, k: int) -> str:
    """vllm 0.34.0 v1/metrics/loggers.py:199–213 with --enable-logging-iteration-details: a
    generation request is scheduled 1 + its drafts."""
    return (f"(EngineCore pid=91) INFO 11-20 10:00:{i % 60:02d} [loggers.py:199] Engine 000: "
            f"Iteration({i}): 0 context requests, 0 context tokens, {reqs} generation requests, "
            f"{reqs * (1 + k)} generation tokens, iteration elapsed time: 20.00 ms, GPU KV cache "
            f"usage: 10.0%\n")


def test_iteration_lines_give_the_drafts_own_conditional_rate(tmp_path):
    # half the request-steps draft 3 tokens, half 1 (batch 8 at K 3, batch 8 at K 1, in turn);
    # the draft's own chain: P(L ≥ 1) = 0.8, P(L ≥ 2) = 0.6, P(L ≥ 3) = 0.4 → conditionals
    # 0.8, 0.75, 0.667.  Per draft: position 1 0.8; 2 and 3 only from the K-3 half: 0.3, 0.2
    its = "".join(iteration(i, 8, 3 if i % 2 else 1) for i in range(40))
    wins = "".join(line(10 * i, 100, 200, [80, 30, 20]) for i in range(1, 6))
    c = curve(tmp_path, its + wins)
    assert [round(p.reach.estimate, 3) for p in c.positions] == [0.8, 0.3, 0.2]
    assert [round(p.conditional.estimate, 3) for p in c.positions] == [0.8, 0.75, 0.667]
    note = [n for n in c.notes if n.startswith("Iteration lines:")]
    assert len(note) == 1 and "100 %, 50 %, 50 %" in note[0]
    assert not [n for n in c.notes if "is a lower bound" in n]
    # at a fixed K the Iteration lines change nothing
    its = "".join(iteration(i, 8, 3) for i in range(40))
    wins = "".join(line(10 * i, 100, 300, [80, 60, 40]) for i in range(1, 6))
    c = curve(tmp_path, its + wins)
    assert [round(p.conditional.estimate, 3) for p in c.positions] == [0.8, 0.75, 0.667]
    assert not [n for n in c.notes if n.startswith("Iteration lines:")]
