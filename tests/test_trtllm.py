"""TensorRT-LLM (parsers/trtllm.py; others.md §2): DECODING STATISTICS blocks, per-iteration log
lines and specDecodingStats records with values the columns cannot hold, cut lines, the
device-time alignment (issue 13 items 2–4)."""
import math

import pytest
from hypothesis import given, settings, strategies as st

import eaglelog
from eaglelog.parsers import others, trtllm
from conftest import FIXTURES
from others_mutations import (check_block_substitutions, check_substitutions,
                              check_truncations, scan)

OTHERS = FIXTURES / "others"
KINDS = others.FAMILY_KINDS["trtllm"]


def test_device_time_is_aligned_with_the_previous_iteration():
    it = eaglelog.parse(OTHERS / "trtllm_iter_log.log").bench_iters
    assert it["prev_device_step_time_ms"].tolist() == [20.981, 21.016, 46.87]
    assert it["device_step_time_ms"].tolist()[:2] == [21.016, 46.87]
    assert math.isnan(it["device_step_time_ms"].iloc[2])


def test_values_the_columns_cannot_hold(write):
    """A time zone or 30 February aborted the whole parse (pandas 'Mixed timezones'); a 23-digit
    iter raised OverflowError; 'nanms' and a 64-bit rank were taken as they came."""
    log = eaglelog.parse(OTHERS / "trtllm_iter_bad.log")
    it = log.bench_iters
    assert it["iter"].tolist() == [40, 41, 42, 43, 44]
    assert it["timestamp"].isna().tolist() == [True, True, False, False, True]
    assert str(it["timestamp"][2]) == "2026-02-03 10:20:00.125000"
    assert it["extra"][0] == '{"timestamp": "2026-02-03 10:20:00+01:00"}'
    assert it["rank"].isna().tolist() == [False, False, True, False, True]
    assert math.isnan(it["host_step_time_ms"][2]) and math.isnan(it["accept_len"][4])
    assert it["accept_len_derived"][4] == (13 + 8) / 8
    # the cut line keeps what was printed before the cut
    assert (it["num_ctx_requests"][3], it["num_ctx_tokens"].isna()[3]) == (0, True)
    got = [(d.line_no, d.kind) for d in log.diagnostics]
    assert got == [(1, "bad_value"), (2, "bad_value"), (3, "bad_value"), (3, "bad_value"),
                   (4, "bad_value"), (5, "bad_value")]
    assert "cut short ('states = {…}' not closed)" in log.diagnostics[4].message
    p = write("big.log", "iter = 99999999999999999999999, global_rank = 0, rank = 0, "
              "host_step_time = 21.734ms\n")
    it = eaglelog.parse(p).bench_iters
    assert it["iter"].isna().all() and it["host_step_time_ms"].tolist() == [21.734]


@pytest.mark.parametrize("text,ok", [
    ("2026-02-03 10:11:12", "2026-02-03T10:11:12"),
    ("2026-02-03T10:11:12.093", "2026-02-03T10:11:12.093000"),
    ("2026/02/03 10:11:12,5", "2026-02-03T10:11:12.500000"),
    ("2026-02-03 10:11:12.123456789", "2026-02-03T10:11:12.123456"),
    ("2026-02-03T10:11:12Z", None), ("2026-02-03 10:11:12+05:00", None),
    ("2026-02-30 10:11:12", None), ("2026-02-03 24:00:00", None), ("2026-W05-1", None),
    ("\uff12\uff10\uff12\uff16-02-03 10:11:12", None), ("3026-02-03 10:11:12", None),
    ("20260203T101112", None), ("", None)])
def test_timestamps(text, ok):
    if ok is None:
        with pytest.raises(ValueError):
            trtllm.to_timestamp(text)
    else:
        assert trtllm.to_timestamp(text) == ok


def test_block_with_bad_rows_keeps_the_others():
    lines = (OTHERS / "trtllm_bench.log").read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("[AL] AVERAGE"))
    lines[at] = "[AL] AVERAGE: 1e400"
    rows, diags = scan("\n".join(lines) + "\n", KINDS)
    r = rows["bench"][0]
    assert r.get("accept_len") is None and r["accept_len_min"] == 1.66 and r["complete"] is True
    assert [(d.line_no, d.kind) for d in diags] == [(at + 1, "bad_value")]
    assert '"AVERAGE"' not in r["stats"].split('"AL"')[1]


def test_a_cut_block_is_kept():
    log = eaglelog.parse(OTHERS / "trtllm_bench_cut.log")
    assert log.bench["complete"].tolist() == [False]
    assert [(d.line_no, d.kind) for d in log.diagnostics] == [(2, "incomplete_block")]


# ------------------------------------------------------------------ properties
ITER_LINES = [ln for name in ("trtllm_iter_log", "trtllm_iter_stats")
              for ln in (OTHERS / f"{name}.log").read_text().splitlines()
              if "host_step_time" in ln or "specDecodingStats" in ln]


def test_bad_numbers_in_every_iteration_line():
    assert sum(check_substitutions(ln, KINDS) for ln in ITER_LINES) > 500


def test_bad_numbers_in_a_decoding_statistics_block():
    lines = (OTHERS / "trtllm_bench.log").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if "DECODING STATISTICS" in ln) - 1
    assert check_block_substitutions(lines[start:], KINDS) > 250


def test_every_truncation_of_every_iteration_line():
    n = 0
    for ln in ITER_LINES:
        if "host_step_time" in ln:
            n += check_truncations(ln, trtllm.parse_iter, others.markers(("trt_iter",)))
        else:
            n += check_truncations(ln, trtllm.parse_stats, others.markers(("trt_stats",)))
    assert n > 800


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_parsers_never_raise(text):
    for fn in trtllm.LINE_PARSERS.values():
        fn(text)
    trtllm.parse_stats('{"specDecodingStats": ' + text)
    scan("= DECODING STATISTICS (X)\n" + text + "\nhost_step_time = " + text, KINDS)


def test_deep_json_is_no_crash():
    res = trtllm.parse_stats('{"specDecodingStats": {"a": ' + "[" * 100000)
    assert res.record is None and res.problems
