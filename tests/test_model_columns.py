"""ParsedLog's numpy accessors (model.py: positions, values, codes, span_s) and the profiler
blocks read through them (analysis/prof_blocks.py): the same numbers the DataFrame operations
they replace give, on one input and on several."""
import os

import numpy as np
import pytest

from eaglelog import api
from eaglelog.analysis.prof_blocks import ProfBlocks

HERE = os.path.dirname(__file__)
SAMPLES = os.path.join(HERE, "..", "sample_logs")
FIX = os.path.join(HERE, "fixtures", "sglang")


def _log(*names):
    return api.parse([os.path.join(SAMPLES, n) for n in names], cache=False)


def test_positions_of_one_input_are_every_row_and_kept():
    log = _log("eagle3_5step.log")
    src = log.sources[0].name
    assert log._where(src, "decode") == slice(0, len(log.decode))
    np.testing.assert_array_equal(log.positions(src, "decode"), np.arange(len(log.decode)))
    # the same answer object the second time (kept), and one that cannot be written
    assert log._where(src, "decode") is log._where(src, "decode")
    assert log._where("no such input", "decode").size == 0


def test_positions_and_values_of_several_inputs_match_a_filter():
    log = _log("eagle3_5step.log", "eagle3_prof8.log")
    assert len(log.sources) == 2
    for info in log.sources:
        for name in ("decode", "prof", "prof_phases"):
            df = log.tables[name]
            want = np.flatnonzero((df["source"] == info.name).to_numpy(dtype=bool))
            np.testing.assert_array_equal(log.positions(info.name, name), want)
            got = log.values(info.name, name, "line_no", np.int64, -1)
            np.testing.assert_array_equal(got, df["line_no"].to_numpy(np.int64)[want])


def test_values_of_a_categorical_column_as_objects():
    log = _log("eagle3_5step.log", "eagle3_prof8.log")
    for info in log.sources:
        at = log.positions(info.name, "prof_phases")
        want = log.prof_phases["phase"].astype(object).to_numpy(
            dtype=object, na_value=np.nan)[at]
        got = log.values(info.name, "prof_phases", "phase", object)
        assert got.tolist() == want.tolist()
        assert len(got) and got[0] == "Draft steps"


def test_codes_number_labels_by_first_occurrence():
    log = _log("eagle3_5step.log")
    src = log.sources[0].name
    code, labels = log.codes(src, "prof_phases", "phase")
    phase = log.values(src, "prof_phases", "phase", object).astype(str)
    assert labels == list(dict.fromkeys(phase.tolist()))
    assert [labels[k] for k in code] == phase.tolist()
    assert labels[:2] == ["Draft steps", "Target verify"]
    # a column that is not categorical: the same labels, by its strings
    code2, labels2 = log.codes(src, "decode", "line_no")
    lines = log.values(src, "decode", "line_no", object).astype(str)
    assert [labels2[k] for k in code2] == lines.tolist()
    none, no_labels = log.codes(src, "decode", "no_such_column")
    assert len(none) == 0 and no_labels == []


@pytest.mark.parametrize("path", [os.path.join(FIX, "wrap_docker.log"),
                                  os.path.join(SAMPLES, "eagle3_5step.log"),
                                  os.path.join(FIX, "decode_current.log")])
def test_span_is_pandas_total_seconds(path):
    log = api.parse([path], cache=False)
    src = log.sources[0].name
    ends = []
    for df in log.tables.values():
        if "timestamp" in df and len(df) and df["timestamp"].notna().any():
            ends.append((df["timestamp"].min(), df["timestamp"].max()))
    want = (max(h for _, h in ends) - min(lo for lo, _ in ends)).total_seconds()
    assert log.span_s(src) == want          # the same float, not one within rounding
    if path.endswith("wrap_docker.log"):
        assert want == 3.1189999999999998   # (3 s + 0.119 s, as pandas adds them; not 3.119)


def test_span_of_a_log_without_timestamps_is_none():
    log = api.parse([os.path.join(SAMPLES, "eagle3_prof8.log")], cache=False)
    assert not any(len(df) and "timestamp" in df and df["timestamp"].notna().any()
                   for df in log.tables.values())     # (bare EAGLE3_PROF blocks: no stamps)
    assert log.span_s(log.sources[0].name) is None


def test_prof_blocks_match_the_frame_filter():
    log = _log("eagle3_5step.log", "eagle3_prof8.log")
    for info in log.sources:
        p = log.prof[(log.prof["source"] == info.name).to_numpy(dtype=bool)]
        b = ProfBlocks.of(log, info.name)
        assert len(b) == len(p) > 0
        order = p.sort_values("line_no")
        np.testing.assert_array_equal(b.line, order["line_no"].to_numpy(np.int64))
        np.testing.assert_array_equal(b.total_ms, order["total_ms"].to_numpy(float))
        np.testing.assert_array_equal(b.cycles, order["cycles"].to_numpy(float))
        np.testing.assert_array_equal(
            b.sync, (order["mode"] == "sync").to_numpy(dtype=bool))
        np.testing.assert_array_equal(
            b.complete, order["complete"].fillna(False).astype(bool).to_numpy())
        keep = b.complete & ~b.sync
        assert len(b.take(keep)) == int(keep.sum())
        assert not b.no_mode.any()


def test_prof_blocks_without_a_mode_are_counted(tmp_path):
    path = tmp_path / "nomode.log"
    path.write_text("EAGLE3_PROF (100 cycles, 250 tok)\n"
                    "  Draft steps:        1.00 ms/cyc  ( 10.0%)\n"
                    "  Target verify:      9.00 ms/cyc  ( 90.0%)\n"
                    "  TOTAL:             10.00 ms/cyc\n"
                    "  Accept len:      2.50\n")
    log = api.parse([str(path)], cache=False)
    b = ProfBlocks.of(log, log.sources[0].name)
    assert len(b) == 1
    assert b.no_mode.tolist() == [True] and b.sync.tolist() == [False]
    assert b.total_ms.tolist() == [10.0] and b.cycles.tolist() == [100.0]


def test_a_block_whose_total_is_not_a_cycle_is_left_out_with_a_note(tmp_path):
    """A damaged TOTAL (-29.07: the parsers keep signed numbers, the identity warning names
    it) is no cycle to weigh: left out of the cycle, the phases' shares and the profiler's
    accept length, with a note — it made the cycle 0.00 ms and the shares 10¹⁸ % (and, with
    two blocks, an interval past any float: fuzz seed 54, case 138)."""
    from eaglelog.library import summarize
    good = ("EAGLE3_PROF (100 cycles, 223 tok, no sync)\n"
            "  Draft steps:        1.54 ms/cyc  (  5.3%)\n"
            "  Target verify:     27.25 ms/cyc  ( 93.7%)\n"
            "  Draft re-extend:    0.28 ms/cyc  (  1.0%)\n"
            "  TOTAL:             {total} ms/cyc\n"
            "  Accept len:      2.23\n"
            "  Eff tok/s:       76.7\n\n")
    path = tmp_path / "prof.log"
    path.write_text(good.format(total="29.07") * 3 + good.format(total="-29.07"))
    log = api.parse([str(path)], cache=False)
    b = ProfBlocks.of(log, log.sources[0].name)
    assert b.bad_total.tolist() == [False, False, False, True]
    assert b.usable().tolist() == [True, True, True, False]
    s = summarize(log).runs[0]
    assert s.cycle_ms.estimate == pytest.approx(29.07) and s.blocks == 3
    assert [round(p.pct, 1) for p in s.phases] == [5.3, 93.7, 1.0]
    note = ("1 EAGLE3_PROF block(s) with a TOTAL of 0 ms/cyc or less left out (a damaged "
            "value: see its identity warning)")
    assert note in s.notes
    # with a baseline, break-even says it; the summary does not say it again
    both = summarize(log, baseline_toks=90).runs[0]
    assert (list(both.notes) + list(both.breakeven.notes)).count(note) == 1


def test_stamp_range_leaves_nat_out_without_a_copy():
    # (the first and last stamp of a run's rows: NaT, the least int64, is below every stamp)
    from eaglelog.model import _stamp_range
    nat = np.iinfo(np.int64).min
    rng = np.random.default_rng(0)
    for _ in range(2000):
        n = int(rng.integers(0, 20))
        t = rng.integers(-10**15, 10**15, n)
        t[rng.random(n) < 0.3] = nat
        kept = t[t != nat]
        assert _stamp_range(t) == ((int(kept.min()), int(kept.max())) if len(kept) else None)
    assert _stamp_range(np.array([nat, 5, nat, 3])) == (3, 5)
    assert _stamp_range(np.array([nat, nat])) is None
