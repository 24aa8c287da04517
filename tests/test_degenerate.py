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


def _running_req(value, count=0):
    return lambda text: re.sub(r"#running-req: \d+", f"#running-req: {value}", text, count=count)


@pytest.mark.parametrize("value", ["0", "-1", "9223372036854775807"])
def test_no_batch_size_gives_no_picture_and_no_crash(tmp_path, value):
    """Before: `internal error: ValueError: Axis limits cannot be NaN or Inf` in `report` and
    `plot --kind breakeven` when every #running-req is 0, negative or absurd (every window left
    out: accept length and break-even insufficient).  Now -1 and 2^63−1 are bad values at their
    lines (a batch size is 0 … 10^6), the plot refuses in one line naming the input, the report
    says its picture was not drawn."""
    p = edited(tmp_path, "batch_eagle3.log", "b.log", _running_req(value))
    plot = run(["plot", "--kind", "breakeven", "--baseline-toks", "90", "-o",
                tmp_path / "p.png", p])
    assert plot.code == 1 and not (tmp_path / "p.png").exists()
    err = plot.stderr.splitlines()
    assert err[-1].startswith(f"eaglelog: error: {p}: nothing to draw a break-even picture")
    if value != "0":
        assert f"{p}:4: prefill line: bad value in '#running-req: {value}'" in plot.stderr
    rep = run(["report", "--baseline-toks", "90", "-o", tmp_path / "r.html", p])
    assert rep.code == 0
    assert "not drawn: " in (tmp_path / "r.html").read_text()


def test_an_absurd_batch_size_is_a_bad_value_not_a_model_input(tmp_path):
    """'#running-req: 2147483647' fitted in 32 bits and reached the rate model (arrays sized
    from it); now it is a bad value at its line, the record kept without it, and the run's
    answer the same as without that line's batch size."""
    text = (SAMPLES / "eagle3_5step.log").read_text()
    i = text.index("#running-req: ", text.index("Decode batch", len(text) // 2))
    line_no = text.count("\n", 0, i) + 1
    p = tmp_path / "a.log"
    p.write_text(text[:i] + "#running-req: 2147483647" + text[i + len("#running-req: 1"):])
    inv = run(["summary", "--baseline-toks", "90", p])
    assert inv.code == 0 and "verdict" in inv.stdout
    assert f"{p}:{line_no}: decode line: bad value in '#running-req: 2147483647'" in inv.stderr


def test_a_zero_gen_throughput_leaks_no_warning(tmp_path):
    """Before: 'RuntimeWarning: divide by zero' from the measured-batch rounding (rate.py) on a
    'gen throughput (token/s): 0.00' window; such a window is simply not timed."""
    p = edited(tmp_path, "batch_eagle3.log", "g.log",
               lambda t: re.sub(r"gen throughput \(token/s\): [\d.]+",
                                "gen throughput (token/s): 0.00", t, count=40))
    assert run(["report", "--baseline-toks", "90", "-o", tmp_path / "r.html", p]).code == 0


@pytest.mark.parametrize("value", ["2.5", "inf", "nan", "-1", "9223372036854775807"])
def test_a_num_steps_that_is_no_count(tmp_path, value):
    """Before: `internal error: ValueError: invalid literal for int()` (2.5, inf, nan) or
    `array is too big` (2^63−1) in whatif and schedule.  Now the server_args value is a bad
    value at its line and each command refuses in one line naming the input."""
    p = edited(tmp_path, "schedule/steps1.log", "s1.log",
               lambda t: t.replace("speculative_num_steps=1,", f"speculative_num_steps={value},"))
    inv = run(["whatif", "--baseline-toks", "90", p])
    assert inv.code == 1
    assert f"{p}:2: server_args line: bad value for speculative_num_steps" in inv.stderr
    assert inv.stderr.splitlines()[-1].startswith(f"eaglelog: error: {p}: ")
    for fmt in ("vllm", "sglang"):
        inv = run(["schedule", "--baseline-log", SAMPLES / "batch_baseline.log", "-f", fmt, p,
                   SAMPLES / "schedule" / "steps3.log", SAMPLES / "schedule" / "steps5.log"])
        assert inv.code == 1 and inv.stdout == ""
        assert inv.stderr.splitlines()[-1].startswith(f"eaglelog: error: {p}: ")


# ------------------------------------------------------------------------------- item 9

def test_a_k_the_engines_refuse_is_refused_in_one_line():
    """Before: a negative K reached sglang_config outside the engine check's try, and its
    EngineConfigError surfaced as `internal error: EngineConfigError`; now each engine's
    config is refused with a note (-f vllm / -f sglang print it as one error line), and a
    run's num_steps that is no K is refused naming the run."""
    from eaglelog.analysis import schedule as sch
    from eaglelog.errors import EaglelogError
    from eaglelog.report.schedule import engine_config

    notes = []
    cfg = {"speculative_algorithm": "EAGLE3", "speculative_eagle_topk": 1}
    vllm, sglang, steps, _ = sch.engine_configs([(1, 4, -1), (5, 8, 3)], 8, "eagle3", "/m",
                                                cfg, {"SGLang"}, notes)
    assert vllm is None and sglang is None and steps is None
    assert any(n.startswith("no vLLM config: ") and ">= 0" in n for n in notes)
    assert any(n.startswith("no SGLang config: ") and "[-1]" in n for n in notes)

    class R:
        pass
    r = R()
    r.vllm = r.sglang = None
    r.notes = tuple(notes)
    for fmt in ("vllm", "sglang"):
        with pytest.raises(EaglelogError, match=f"^no {'vLLM' if fmt == 'vllm' else 'SGLang'}"):
            engine_config(r, fmt)
    for bad in (-1, 0, 2.5, float("inf"), float("nan"), "3", True, 1025):
        with pytest.raises(EaglelogError, match=r"^run\.log: speculative_num_steps .* is no "):
            sch._draft_steps("run.log", bad)
    assert sch._draft_steps("run.log", 3.0) == 3


def test_a_fit_without_solution_is_one_line_not_an_internal_error(monkeypatch):
    """Issue 36 item 8: numpy's 'SVD did not converge' on a degenerate window set is a
    least-squares system the numbers leave without a solution — one line naming the input."""
    import numpy as np
    from click.testing import CliRunner
    from eaglelog.analysis import rate
    from eaglelog.cli import main

    def boom(*a, **k):
        raise np.linalg.LinAlgError("SVD did not converge")
    monkeypatch.setattr(rate, "fit", boom)
    log = str(ROOT / "sample_logs" / "eagle3_5step.log")
    res = CliRunner().invoke(main, ["--no-cache", "breakeven", "--baseline-toks", "90", log])
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 1 and len(lines) == 1
    assert lines[0].startswith(f"eaglelog: error: {log}: the rate model's least-squares fit has "
                               "no solution on these numbers (SVD did not converge)")
    assert "internal error" not in res.output


def test_a_thread_that_cannot_start_is_out_of_memory(monkeypatch):
    from click.testing import CliRunner
    from eaglelog.analysis import rate
    from eaglelog.cli import main

    def boom(*a, **k):
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(rate, "fit", boom)
    log = str(ROOT / "sample_logs" / "eagle3_5step.log")
    res = CliRunner().invoke(main, ["--no-cache", "breakeven", "--baseline-toks", "90", log])
    assert res.exit_code == 1 and "internal error" not in res.output
    assert "eaglelog: error: out of memory analysing 71.9 KiB of input" in res.output
