"""Rates across DP ranks and vLLM engines (issue 33, items 6 and 7): the aggregate throughput
adds concurrent ranks, vLLM windows without a draft count weigh by their seconds, the per-rank
rows, and the aggregate-baseline guard with k from the metric lines.  Every log here is
synthetic, written in the documented formats (docs/formats-*.md)."""
import json

import numpy as np
import pytest

import eaglelog
from eaglelog.analysis import draft_len, ranks
from eaglelog.analysis.breakeven import Baseline, breakeven, run_windows
from eaglelog.analysis.summary import summarize
from conftest import SAMPLES

DATE = "2026-02-10"
TPUT = ("(APIServer pid=7) INFO 02-10 {hms} [loggers.py:248] {eng}Avg prompt throughput: 0.0 "
        "tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: 0 "
        "reqs, GPU KV cache usage: 2.0%, Prefix cache hit rate: 0.0%")
SPEC = ("(APIServer pid=7) INFO 02-10 {hms} [metrics.py:188] SpecDecoding metrics: Mean "
        "acceptance length: {mal:.2f}, Accepted throughput: {acc_s:.2f} tokens/s, Drafted "
        "throughput: {dr_s:.2f} tokens/s, Accepted: {acc} tokens, Drafted: {dr} tokens, "
        "Per-position acceptance rate: 0.700, 0.500, 0.300, Avg Draft acceptance rate: 50.0%")
SGL = ("[2025-10-16 10:{m:02d}:{s:02d} DP{dp} TP{dp}] Decode batch, #running-req: {r}, #token: "
       "3318, token usage: 0.02, accept len: {a:.2f}, accept rate: {ar:.2f}, cuda graph: True, "
       "gen throughput (token/s): {g:.2f}, #queue-req: 0, ")


def hms(sec):
    return f"14:{sec // 60:02d}:{sec % 60:02d}"


def two_engines():
    """Two vLLM engines (T3 'Engine NNN:' lines, V1-e spec lines), each at 100 tok/s with 4
    running: 10 s windows of 1000 tokens, 400 drafts of k = 3, MAL 2.5."""
    out = []
    for i in range(10):
        for e in (0, 1):
            out.append(TPUT.format(hms=hms(10 + 10 * i), eng=f"Engine 00{e}: ", g=100.0, r=4))
            out.append(SPEC.format(hms=hms(10 + 10 * i), mal=2.5, acc_s=60, dr_s=120, acc=600,
                                   dr=1200))
    return "\n".join(out) + "\n"


def dp_ranks(n=12, sizes0=None):
    """SGLang DP attention: DP0 at 100 tok/s with 4 running, DP1 at 10 tok/s with 1, both
    printing every 4 s; accept len moves a little (exact throughputs: each rank's rate is its
    printed one whatever its accept length)."""
    out = []
    for i in range(n):
        a0, a1 = 2.5 + 0.04 * ((i * 7) % 5 - 2), 2.5 + 0.03 * ((i * 3) % 5 - 2)
        r0 = 4 if sizes0 is None else sizes0[i]
        out.append(SGL.format(m=i * 4 // 60, s=i * 4 % 60, dp=0, r=r0, a=a0, ar=(a0 - 1) / 3,
                              g=100.0))
        out.append(SGL.format(m=i * 4 // 60, s=i * 4 % 60, dp=1, r=1, a=a1, ar=(a1 - 1) / 3,
                              g=10.0))
    return "\n".join(out) + "\n"


def three_windows():
    """Three vLLM throughput lines (no spec lines) 10 s apart at 50, 50 and 200 tok/s."""
    return "\n".join(TPUT.format(hms=hms(10 + 10 * i), eng="Engine 000: ", g=g, r=4)
                     for i, g in enumerate((50, 50, 200))) + "\n"


def test_two_vllm_engines_add_up(write):
    # before: 100.0 (the two engines' windows averaged)
    log = eaglelog.parse(write("two.log", two_engines()), base_date=DATE)
    _, win = run_windows(log, log.sources[0].name)
    assert sorted(set(win.labels)) == ["vllm 0|-|-|-", "vllm 1|-|-|-"]   # Engine NNN: → dp
    s = summarize(log)
    assert s.throughput_all == pytest.approx(200.0, rel=1e-9)
    assert s.ranks == 2
    assert s.eff_tok_s.estimate == pytest.approx(25.0, rel=1e-3)    # 100 tok/s over 4 streams
    assert s.by_rank == ()                                          # the engines are alike
    assert json.loads(json.dumps(s.to_dict()))["throughput"]["aggregate_tok_s"] == \
        pytest.approx(200.0)


def test_sglang_dp_ranks_add_up_with_a_row_each(write, run):
    # before: 35.71 (the ranks' windows pooled: a harmonic mean weighted by their tokens)
    path = write("dp.log", dp_ranks())
    s = summarize(eaglelog.parse(path))
    assert s.throughput_all == pytest.approx(110.0, rel=1e-9)
    assert s.ranks == 2
    rows = {r.rank: r for r in s.by_rank}
    assert set(rows) == {"DP 0", "DP 1"}
    assert rows["DP 0"].aggregate_tok_s == pytest.approx(100.0, rel=1e-9)
    assert rows["DP 1"].aggregate_tok_s == pytest.approx(10.0, rel=1e-9)
    assert (rows["DP 0"].sizes, rows["DP 1"].sizes) == ((4, 4), (1, 1))
    assert rows["DP 0"].windows == rows["DP 1"].windows == 12
    # per stream: the rank's rate over its batch (no prefill in these windows)
    assert rows["DP 0"].eff_tok_s.estimate == pytest.approx(25.0, rel=0.01)
    assert rows["DP 1"].eff_tok_s.estimate == pytest.approx(10.0, rel=0.01)
    assert rows["DP 0"].accept_len.estimate == pytest.approx(2.5, abs=0.03)
    # pooled ranks are not 'batch sizes 1–4'
    assert not any("batch sizes 1–4" in n for n in s.notes)
    assert any(n.startswith("the 2 ranks differ") for n in s.notes)
    out = run("summary", path).stdout
    assert "110.0 tok/s aggregate: all streams of its 2 ranks added" in out
    table = out[out.index("by rank"):]
    assert "DP 0" in table and "100.0" in table and "DP 1" in table and "10.00" in table
    thr = json.loads(run("summary", "-f", "json", path).stdout)["runs"][0]["throughput"]
    assert thr["aggregate_tok_s"] == pytest.approx(110.0) and thr["ranks"] == 2
    assert [(r["rank"], r["batch_sizes"], r["aggregate_tok_s"]) for r in thr["by_rank"]] == \
        [("DP 0", [4, 4], pytest.approx(100.0)), ("DP 1", [1, 1], pytest.approx(10.0))]


def test_a_rank_whose_batch_moves_is_said_per_rank(write):
    # DP0 moves 3 → 8 in steps of one, DP1 stays at 1: the note names DP0's own span
    sizes = [3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8]
    s = summarize(eaglelog.parse(write("dp.log", dp_ranks(sizes0=sizes))))
    assert any("the run spans batch sizes within its ranks (DP 0: 3–8)" in n for n in s.notes)
    assert not any("batch sizes 1–8" in n for n in s.notes)


def test_vllm_windows_without_drafts_are_tokens_over_seconds(write):
    # before: 80.0 here (a harmonic mean: windows weighted by a nominal 40 iterations);
    # truth: (50 × 10 s + 200 × 10 s) / 20 s over the two windows with a known start
    log = eaglelog.parse(write("three.log", three_windows()), base_date=DATE)
    _, win = run_windows(log, log.sources[0].name)
    # request-steps (one token each without speculation) = throughput × seconds
    assert win.w.tolist() == pytest.approx([500.0, 500.0, 2000.0])
    s = summarize(log)
    assert s.throughput_all == pytest.approx(125.0, rel=1e-9)
    # each window's step is 1000 × 4 / throughput (80, 80, 20 ms); the run's, weighted by
    # request-steps over the two used windows: (500 × 80 + 2000 × 20) / 2500 = 32 ms (was 50),
    # and a stream gets 1000 / 32 = 31.25 tok/s = 125 / 4 (was 20)
    assert s.cycle_derived.estimate == pytest.approx(32.0, rel=1e-9)
    assert s.eff_tok_s.estimate == pytest.approx(31.25, rel=1e-9)


def test_vllm_window_after_a_demoted_line_covers_one_interval(write):
    # a line missing (demoted to DEBUG) makes a 20 s gap; the window after it is one interval
    lines = [TPUT.format(hms=hms(t), eng="", g=g, r=4)
             for t, g in ((10, 50), (20, 50), (30, 50), (50, 200), (60, 200))]
    log = eaglelog.parse(write("gap.log", "\n".join(lines) + "\n"), base_date=DATE)
    _, win = run_windows(log, log.sources[0].name)
    assert win.w.tolist() == pytest.approx([500.0, 500.0, 500.0, 2000.0, 2000.0])


def test_vllm_v0_aggregate_counts_tokens_not_sequence_steps(write):
    """V0's throughput counts one token per sequence-step (vllm.md §2.4): 100 steps/s with an
    accept length of 2 (1000 emitted tokens in 500 drafts a window) is 200 tok/s."""
    out = []
    acc = dr = em = 0
    for i in range(8):
        t = f"14:00:{10 + 5 * i:02d}"
        out.append(f"INFO 02-10 {t} metrics.py:341] Avg prompt throughput: 0.0 tokens/s, Avg "
                   "generation throughput: 100.0 tokens/s, Running: 4 reqs, Swapped: 0 reqs, "
                   "Pending: 0 reqs, GPU KV cache usage: 2.7%, CPU KV cache usage: 0.0%.")
        acc, dr, em = acc + 600 + (i % 3), dr + 1500, em + 1000
        out.append(f"INFO 02-10 {t} metrics.py:351] Speculative metrics: Draft acceptance rate: "
                   f"{acc / dr:.3f}, System efficiency: {em / (dr // 3 * 4):.3f}, Number of "
                   f"speculative tokens: 3, Number of accepted tokens: {acc}, Number of draft "
                   f"tokens: {dr}, Number of emitted tokens: {em}.")
    s = summarize(eaglelog.parse(write("v0.log", "\n".join(out) + "\n"), base_date=DATE))
    assert s.throughput_all == pytest.approx(200.0, rel=1e-9)       # before: 100.0


def test_aggregate_baseline_guard_takes_k_from_the_spec_lines(run):
    """sample_logs/vllm_v1.log has no config line; its spec lines list 3 positions (k = 3):
    a cycle commits at most 4 tokens, and a break-even of 28.8 is an aggregate rate."""
    log = eaglelog.parse(SAMPLES / "vllm_v1.log", base_date=DATE)
    assert log.config() == {}
    assert draft_len.max_tokens_of_rows(log, log.sources[0].name)[0] == 4
    r = breakeven(log, Baseline(tok_s=720))
    assert r.breakeven_accept_len.estimate == pytest.approx(28.8, rel=1e-3)
    assert r.verdict == "invalid baseline"           # before: 'below', 0.0917×, no warning
    note = next(n for n in r.notes if "probably an aggregate rate" in n)
    assert "4 tokens: k + 1, k = 3 from the spec lines' per-position acceptance lists" in note
    assert "no config line" in note
    res = run("breakeven", "--baseline-toks", "720", "--date", DATE, SAMPLES / "vllm_v1.log")
    assert "INVALID BASELINE" in res.stdout
    assert "k = 3 from the spec lines" in res.stdout
    ok = breakeven(log, Baseline(tok_s=90))          # a per-stream rate: no guard
    assert ok.verdict != "invalid baseline"


@pytest.mark.parametrize("formula", ["(L-1)/(K-1)", "L/K", "L/(S+1)"])
def test_sglang_k_from_accept_len_and_accept_rate(write, formula):
    """A chain with S = 3, K = 4 under each release's accept-rate formula (sglang.md §3.2):
    L / rate or 1 + (L − 1) / rate is 4 on every line."""
    lines = []
    for i in range(12):
        a = round(2.3 + 0.05 * ((i * 7) % 9), 2)
        ar = {"(L-1)/(K-1)": (a - 1) / 3, "L/K": a / 4, "L/(S+1)": a / 4}[formula]
        lines.append(f"[2026-05-19 03:11:{i * 4:02d}] Decode batch, #running-req: 4, #token: "
                     f"9630, token usage: 0.05, accept len: {a:.2f}, accept rate: {ar:.2f}, "
                     f"cuda graph: True, gen throughput (token/s): {400 + i:.2f}, #queue-req: 0")
    log = eaglelog.parse(write("k.log", "\n".join(lines) + "\n"))
    k1, where = draft_len.max_tokens_of_rows(log, log.sources[0].name)
    assert k1 == 4 and "accept len / accept rate" in where
    r = breakeven(log, Baseline(tok_s=720))     # 1000 / 720 ms a token against ~4 × 10 ms
    assert r.verdict == "invalid baseline"


def test_no_k_without_the_numbers(write):
    # 'Decode batch.' lines before accept rate was printed: nothing to take k from
    lines = [f"[2025-05-02 08:19:{i * 4:02d} TP0] Decode batch. #running-req: 6, #token: 4120, "
             f"token usage: 0.02, accept len: {2.6 + 0.01 * i:.2f}, gen throughput (token/s): "
             f"{540 + i:.2f}, #queue-req: 0" for i in range(8)]
    log = eaglelog.parse(write("old.log", "\n".join(lines) + "\n"))
    assert draft_len.max_tokens_of_rows(log, log.sources[0].name) is None


def test_rank_labels():
    class W:
        labels = ("vllm 0|-|-|-", "vllm 1|-|-|-", "0|1|-|-", "0|0|-|-")
        series = np.array([0, 1, 2, 3, 2])
        n = 5
    code, labels = ranks.rank_of(W())
    assert labels == ["engine 0", "engine 1", "DP 0"]     # PP stages of DP 0: one rank
    assert code.tolist() == [0, 1, 2, 2, 2]
