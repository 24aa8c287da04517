"""Issue 36, items 5, 8 and 9: damaged stamps, valid but degenerate inputs and absurd values.

Each input is a bundled sample with a few lines edited; each test failed before its fix (the
defect is named in its docstring).  Through the console entry in this process
(benchmarks/fuzz.py's ``invoke``, as tests/test_fuzz.py), so an internal error, a traceback or a
leaked warning is seen as the user would see it.
"""
import importlib.util
import json
import re
import sys

import pytest

from conftest import ROOT, SAMPLES

_spec = importlib.util.spec_from_file_location("eaglelog_fuzz", ROOT / "benchmarks" / "fuzz.py")
fuzz = sys.modules.setdefault("eaglelog_fuzz", importlib.util.module_from_spec(_spec))
if not hasattr(fuzz, "invoke"):
    _spec.loader.exec_module(fuzz)


@pytest.fixture(scope="module", autouse=True)
def _warm():
    fuzz.warm_up()


def run(argv, fmt=None):
    """An invocation that must end cleanly: no traceback, no internal error, no leaked
    warning, one-line messages (fuzz.check); returned for the test's own assertions."""
    inv = fuzz.invoke([str(a) for a in argv])
    found = fuzz.check(inv, fmt)
    assert not found, "\n".join(map(str, found)) + "\n" + inv.stderr
    return inv


def edited(tmp_path, sample, name, edit):
    text = (SAMPLES / sample).read_text()
    out = edit(text)
    assert out != text
    p = tmp_path / name
    p.write_text(out)
    return p


# ------------------------------------------------------------------------------- item 5

def _bad_stamp(text):
    """The sixth line (a vLLM throughput line) behind an SGLang-style outer stamp, both times
    out of range."""
    lines = text.splitlines(True)
    assert "Avg generation throughput" in lines[5]
    lines[5] = "[2026-02-10 14:00:999] " + lines[5].replace("INFO 02-10 14:00:30",
                                                              "INFO 02-10 10:999:20")
    return "".join(lines)


def _bad_outer_stamp_only(text):
    lines = text.splitlines(True)
    lines[5] = re.sub(r"^\(APIServer pid=\d+\) INFO 02-10 14:00:30 \[loggers.py:\d+\] ",
                      "[2026-02-10 14:00:999] ", lines[5])
    return "".join(lines)


@pytest.mark.parametrize("edit", [_bad_stamp, _bad_outer_stamp_only])
@pytest.mark.parametrize("keep_going", [False, True])
def test_a_damaged_stamp_pair_costs_its_timestamp_not_the_run(tmp_path, edit, keep_going):
    """Before: `internal error: ValueError: Time data 2026-02-10 14:00:99 is not ISO8601` in
    every command, --keep-going included (the outer stamp was taken unchecked, and the table
    builder converted the whole column at once).  Now the line is reported at file:6, its
    record kept without a timestamp (and, with its vLLM prefix damaged, still in its process:
    one engine, not two)."""
    p = edited(tmp_path, "vllm_v1.log", "v.log", edit)
    kg = ["--keep-going"] if keep_going else []
    inv = run(["parse", *kg, "--table", "vllm-stats", "-f", "json", p], "json")
    assert inv.code == 0
    rows = json.loads(inv.stdout)
    ref = json.loads(run(["parse", "--table", "vllm-stats", "-f", "json",
                          SAMPLES / "vllm_v1.log"], "json").stdout)
    assert len(rows) == len(ref)
    sixth = next(r for r in rows if r["line_no"] == 6)
    assert sixth["timestamp"] is None and sixth["running_req"] == 8
    warn = [ln for ln in inv.stderr.splitlines() if f"{p}:6:" in ln]
    assert len(warn) == 1 and "is not a valid date and time" in warn[0]
    if edit is _bad_stamp:
        assert "10:999:20" in warn[0] and sixth["process"] == "APIServer"
    else:
        assert "14:00:999" in warn[0]
    summ = run(["summary", *kg, p])
    assert summ.code == 0 and "per stream" in summ.stdout
    if edit is _bad_stamp:
        assert "all streams of its 2 ranks" not in summ.stdout


def test_the_table_builder_keeps_a_row_whose_datetime_names_no_instant():
    """The last guard: one value that names no instant is NaT and reported at its line; the
    column's other values are kept (before: the whole column's conversion raised)."""
    from eaglelog.schema import TABLES
    from eaglelog.tables import build_frame

    said = []
    rows = [{"line_no": 1, "timestamp": "2026-02-10 14:00:10"},
            {"line_no": 2, "timestamp": "2026-02-10 14:00:99"},
            {"line_no": 3, "timestamp": None}]
    df = build_frame(TABLES["vllm_stats"], rows, report=lambda *a: said.append(a))
    assert df["line_no"].tolist() == [1, 2, 3]
    assert str(df["timestamp"].iloc[0]) == "2026-02-10 14:00:10"
    assert df["timestamp"].isna().tolist() == [False, True, True]
    assert [ln for ln, _ in said] == [2] and "14:00:99" in said[0][1]


# ------------------------------------------------------------------------------- item 8

def _identical_decode_lines(text):
    """Every decode line dropped, then 180 copies of one of them (stamp included) at the
    end."""
    lines = text.splitlines(True)
    dec = [ln for ln in lines if "Decode batch" in ln]
    return "".join(ln for ln in lines if "Decode batch" not in ln) + dec[3] * 180


@pytest.mark.parametrize("argv", [["summary"], ["breakeven", "--baseline-toks", "90"],
                                  ["compare", SAMPLES / "schedule" / "steps3.log"]])
def test_180_identical_decode_lines(tmp_path, argv):
    """Before: `internal error: OverflowError: (34, 'Numerical result out of range')`: a
    near-zero variance gave a Welch–Satterthwaite ν of ~1e300 and the t quantile's
    Cornish–Fisher expansion raised ν to the fourth power.  Now the interval is the normal
    one (ν → ∞), stated."""
    p = edited(tmp_path, "schedule/steps3.log", "same.log", _identical_decode_lines)
    args = list(argv)
    inv = run([args[0], *args[1:-1], p, args[-1]] if args[0] == "compare" else [*args, p])
    assert inv.code == 0
    assert "accept length" in inv.stdout


def test_the_t_quantile_of_a_huge_df_is_the_normal_one():
    from eaglelog import distributions as dist
    from scipy import stats
    for df in (1e7, 1e80, 1e300, sys.float_info.max):
        assert dist.stdtrit(df, 0.975) == pytest.approx(stats.norm.ppf(0.975), rel=1e-6)
    assert dist.stdtrit(10.0, 0.975) == pytest.approx(stats.t.ppf(0.975, 10), rel=1e-9)
