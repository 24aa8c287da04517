"""EAGLE3_PROF blocks through the whole scanner: values, grouping, incomplete blocks."""
import pandas as pd
import pytest

import eaglelog
from conftest import CANON



def parse_text(write, text, name="p.log"):
    return eaglelog.parse(write(name, text))


def test_canonical_block_values(write):
    log = parse_text(write, CANON)
    p = log.prof.iloc[0]
    assert (p.line_no, p.cycles, p.tokens, p["mode"]) == (1, 100, 114, "no sync")
    assert (p.total_ms, p.accept_len, p.eff_tok_s) == (27.28, 1.14, 41.8)
    assert bool(p.complete) and p.n_phases == 4 and p.end_line == 8
    assert p.phase_sum_ms == pytest.approx(27.28)
    ph = log.prof_phases
    assert ph.phase.tolist() == ["Draft steps", "Target verify", "Draft re-extend",
                                 "Other overhead"]
    assert ph.ms_per_cycle.tolist() == [0.93, 26.07, 0.28, 0.0]
    assert ph.pct.tolist() == [3.4, 95.6, 1.0, 0.0]
    assert ph.line_no.tolist() == [2, 3, 4, 5] and set(ph.block) == {1}
    assert log.diagnostics == []  # the worked example satisfies every identity


def test_variants_tabs_decimals_missing_pct_no_mode(write):
    text = ("EAGLE3_PROF (50 cycles, 120 tok)\n"
            "\tDraft tree build:\t1.5 ms/cyc\n"
            "\tSampling:  0.125 ms/cyc (1.2%)\n"
            "\tTarget verify: 8.875 ms/cyc\n"
            "\tTOTAL:\t10.5 ms/cyc\n"
            "\tAccept len: 2.4\n"
            "\tEff tok/s: 228.57\n")
    log = parse_text(write, text)
    p = log.prof.iloc[0]
    assert pd.isna(p["mode"])
    assert (p.cycles, p.tokens, p.total_ms, p.accept_len, p.eff_tok_s) == (50, 120, 10.5, 2.4,
                                                                           228.57)
    ph = log.prof_phases
    assert ph.phase.tolist() == ["Draft tree build", "Sampling", "Target verify"]
    assert ph.pct.isna().tolist() == [True, False, True]
    assert log.diagnostics == []


def test_identity_violation_warns(write):
    bad = CANON.replace("TOTAL:             27.28", "TOTAL:             29.00")
    log = parse_text(write, bad)
    msgs = [d.message for d in log.diagnostics]
    assert any("TOTAL 29.00 ms/cyc != sum of phases 27.28" in m for m in msgs)
    assert all(d.kind == "identity" and d.line_no == 1 for d in log.diagnostics)
    assert bool(log.prof.complete.iloc[0])  # kept: an identity break is a warning


def test_prefixed_interleaved_ranks_are_kept_apart(write):
    lines = []
    for body in CANON.splitlines():
        for rank, scale in (("TP0", 1), ("TP1", 2)):
            b = body
            if scale == 2:
                b = (b.replace("114 tok", "228 tok").replace("Accept len:      1.14",
                                                            "Accept len:      2.28")
                     .replace("41.8", "83.6"))
            lines.append(f"[2026-03-02 14:07:11 {rank}] {b}")
    log = parse_text(write, "\n".join(lines) + "\n")
    prof = log.prof.sort_values("tp")
    assert prof.ranks.astype(str).tolist() == ["TP0", "TP1"]
    assert prof.line_no.tolist() == [1, 2] and prof.end_line.tolist() == [15, 16]
    assert prof.tokens.tolist() == [114, 228] and prof.accept_len.tolist() == [1.14, 2.28]
    assert prof.complete.all() and prof.n_phases.tolist() == [4, 4]
    assert str(prof.timestamp.iloc[0]) == "2026-03-02 14:07:11"
    ph = log.prof_phases
    assert ph[ph.block == 1].line_no.tolist() == [3, 5, 7, 9]
    assert ph[ph.block == 2].line_no.tolist() == [4, 6, 8, 10]
    assert log.diagnostics == []


def test_block_cut_by_traceback_and_by_eof(write):
    text = ("EAGLE3_PROF (100 cycles, 114 tok, no sync)\n"
            "  Draft steps:        0.93 ms/cyc  (  3.4%)\n"
            "  Target verify:     26.07 ms/cyc  ( 95.6%)\n"
            "Traceback (most recent call last):\n"
            '  File "worker.py", line 10, in forward\n'
            "RuntimeError: CUDA error\n"
            + CANON +
            "EAGLE3_PROF (100 cycles, 110 tok, no sync)\n"
            "  Draft steps:        0.93 ms/cyc  (  3.4%)\n")
    log = parse_text(write, text)
    assert log.prof.line_no.tolist() == [1, 7, 15]
    assert log.prof.complete.tolist() == [False, True, False]
    assert log.prof.n_phases.tolist() == [2, 4, 1]
    assert log.prof.total_ms.isna().tolist() == [True, False, True]
    inc = [d for d in log.diagnostics if d.kind == "incomplete_block"]
    assert [d.line_no for d in inc] == [1, 15]
    assert "cut short after 3 lines" in inc[0].message
    # the traceback's indented line is not taken into the block
    assert log.prof_phases[log.prof_phases.block == 1].line_no.tolist() == [2, 3]


def test_new_header_before_end_and_no_blank_separator(write):
    text = ("EAGLE3_PROF (100 cycles, 114 tok, no sync)\n"
            "  Draft steps:        0.93 ms/cyc  (  3.4%)\n" + CANON + CANON)
    log = parse_text(write, text)
    assert log.prof.line_no.tolist() == [1, 3, 11]
    assert log.prof.complete.tolist() == [False, True, True]
    assert log.prof.end_line.tolist() == [2, 10, 18]


def test_sync_mode_and_records_around_blocks(write):
    text = ("[2026-03-02 14:07:10 TP0] Decode batch, #running-req: 1, #token: 900, token usage: "
            "0.01, accept len: 2.10, accept rate: 0.35, cuda graph: True, gen throughput "
            "(token/s): 80.00, #queue-req: 0\n"
            + CANON.replace("no sync", "sync") +
            "[2026-03-02 14:07:12 TP0] Decode batch, #running-req: 1, #token: 990, token usage: "
            "0.01, accept len: 2.20, accept rate: 0.37, cuda graph: True, gen throughput "
            "(token/s): 81.00, #queue-req: 0\n")
    log = parse_text(write, text)
    assert log.prof["mode"].astype(str).tolist() == ["sync"]
    assert log.decode.line_no.tolist() == [1, 10]
    assert log.sources[0].skipped == 0
