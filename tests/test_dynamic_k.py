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
