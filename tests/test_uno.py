"""Issue 35, item 5: SGLang's UNO commits two non-draft tokens per verify
(``accept_lens = accepted_specs + 2``: sglang 0.5.23 srt/speculative/uno_worker_v2.py:407), so a
UNO request's Σ (completion − 1) / Σ verify_ct is 2 + Σ P(accept ≥ i), not 1 + Σ P: the
acceptance identity takes the second one out instead of reporting a broken identity.  The
Finish lines here are written in SGLang's format for a UNO server, with known counts."""
from __future__ import annotations

import eaglelog
from eaglelog.analysis.engines import non_draft_tokens

ARGS = ("[2026-11-20 10:00:00] server_args={{'model_path': '/m/t', 'tp_size': 1, "
        "'speculative_algorithm': '{algo}', 'speculative_num_steps': 3, "
        "'speculative_eagle_topk': 1, 'speculative_num_draft_tokens': 4}}\n")


def finish(i: int, hist: list[int], extra: int) -> str:
    v = sum(hist)
    acc = sum(j * x for j, x in enumerate(hist))
    comp = 1 + acc + extra * v            # the prefill's token, then per verify its drafts
    return (f"[2026-11-20 10:00:{i + 1:02d}] Finish: obj=GenerateReqInput(rid='r{i}', "
            f"stream=False), out={{'meta_info': {{'id': 'r{i}', 'finish_reason': "
            f"{{'type': 'stop', 'matched': 2}}, 'prompt_tokens': 50, 'completion_tokens': "
            f"{comp}, 'cached_tokens': 0, 'spec_verify_ct': {v}, 'spec_num_correct_drafts': "
            f"{acc}, 'spec_num_proposed_drafts': {3 * v}, 'spec_correct_drafts_histogram': "
            f"{hist}}}}}\n")


HISTS = [[4, 6, 8, 12], [10, 5, 5, 5], [3, 3, 3, 21], [7, 7, 7, 7]]


def curve(tmp_path, algo: str, extra: int):
    p = tmp_path / f"{algo}.log"
    p.write_text(ARGS.format(algo=algo) + "".join(finish(i, h, extra)
                                                  for i, h in enumerate(HISTS)))
    return eaglelog.acceptance(str(p)).curves[0]


def test_non_draft_tokens_by_algorithm():
    assert non_draft_tokens({"speculative_algorithm": "UNO"}) == 2
    assert non_draft_tokens({"speculative_algorithm": "EAGLE3"}) == 1
    assert non_draft_tokens({}) == 1


def test_a_uno_run_keeps_its_identity(tmp_path):
    uno = curve(tmp_path, "UNO", 2)
    assert uno.identity.status == "holds" and abs(uno.identity.difference) < 1e-12
    eagle = curve(tmp_path, "EAGLE3", 1)
    assert abs(eagle.identity.difference) < 1e-12
    # the same UNO counts read as an EAGLE run: off by one token a verify
    wrong = curve(tmp_path, "EAGLE3", 2)
    assert wrong.identity.status == "mismatch" and abs(wrong.identity.difference - 1.0) < 1e-12


def test_reconcile_bonus_test_counts_two_non_draft_tokens_for_uno(tmp_path):
    """A profiler that counts accepted drafts (1.14 a cycle) next to SGLang's accept len: under
    UNO that is 1.14 + 2, which the bonus test reads as explained; under EAGLE3 the same
    numbers are not a missing bonus token."""
    from shortlogs import short_log
    out = {}
    for algo in ("UNO", "EAGLE3"):
        text = short_log(blocks=8, windows=40, accept=3.14, accept_sd=0.05, prof_accept=1.14)
        head, rest = text.split("\n", 1)
        p = tmp_path / f"{algo}.log"
        p.write_text(head + "\n" + ARGS.format(algo=algo).replace("2026-11-20 10:00:00",
                                                                  "2026-03-02 13:59:59") + rest)
        r = eaglelog.reconcile(str(p), base_date="2026-03-02").runs[0]
        out[algo] = next(f for f in r.findings if f.factor == "bonus token")
    assert out["UNO"].verdict == "explains" and "profiler + 2 = 3.140" in out["UNO"].text
    assert "uno_worker_v2.py:407" in out["UNO"].text
    assert out["EAGLE3"].verdict == "no" and "profiler + 1 = 2.140" in out["EAGLE3"].text
