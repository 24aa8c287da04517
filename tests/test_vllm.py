"""vLLM logs (vllm.md): grep counts per fixture, V0 differencing as a property, the family
sniffing, mixed logs, and summary / breakeven on the V1 sample worked out by hand."""
import json

import pytest
from hypothesis import given, settings, strategies as st

import eaglelog
from eaglelog.parsers import choose_engine
from eaglelog.parsers.scan import Scanner
from eaglelog.parsers.vllm import GREP_MARKERS, VllmScanner
from conftest import FIXTURES, SAMPLES

CASES = sorted((FIXTURES / "vllm").glob("*.log"))
SAMPLE = SAMPLES / "vllm_v1.log"


def base(case):
    return json.loads(case.with_suffix(".expected.json").read_text())["base_date"]


def grep(case, markers):
    return [i for i, ln in enumerate(case.read_bytes().split(b"\n"), 1)
            if any(m.encode() in ln for m in markers)]


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_record_count_equals_grep_count(case):
    log = eaglelog.parse(case, base_date=base(case))
    reported = {d.line_no for d in log.diagnostics if d.kind in ("malformed", "truncated")}
    for table, markers in GREP_MARKERS.items():
        lines = [n for n in grep(case, markers) if n not in reported]
        assert sorted(log.table(table).line_no) == lines, table
    # one decode row per throughput line, plus one per spec line that followed none
    spec = log.vllm_spec
    # (an optional column: absent when no spec line was paired)
    orphans = int(spec["paired_line"].isna().sum()) if "paired_line" in spec else len(spec)
    vllm_rows = log.decode[log.decode.get("engine", "").astype("string") == "vllm"] \
        if "engine" in log.decode else log.decode.iloc[:0]
    assert len(vllm_rows) == len(log.vllm_stats) + orphans


def v0_line(acc, draft, emitted, k=3):
    rate = acc / draft if draft else 0.0
    eff = emitted / ((draft // k) * (k + 1)) if draft >= k else 0.0
    return (f"INFO 09-30 11:47:26 metrics.py:351] Speculative metrics: Draft acceptance rate: "
            f"{rate:.3f}, System efficiency: {eff:.3f}, Number of speculative tokens: {k}, "
            f"Number of accepted tokens: {acc}, Number of draft tokens: {draft}, Number of "
            f"emitted tokens: {emitted}.\n")


window = st.tuples(st.integers(0, 400), st.integers(1, 300)).map(
    lambda t: (min(t[0], 3 * t[1]), 3 * t[1], t[1] + min(t[0], 3 * t[1]) // 2))
# (accepted, draft tokens, emitted) of one window: k = 3, emitted ≥ drafts


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(window, min_size=1, max_size=6), min_size=1, max_size=4))
def test_v0_differencing_reproduces_the_windows(segments):
    """Cumulative counters of engine runs (each restart from zero) difference back to the
    windows exactly; a restart is found where a counter drops."""
    text, want = [], []
    prev_last = None
    for s, seg in enumerate(segments):
        total = [0, 0, 0]
        first = [sum(x) for x in zip(*seg[:1])]
        if prev_last is not None and not any(f < p for f, p in zip(first, prev_last)):
            return       # an undetectable restart (no counter dropped): not a case to test
        for i, w in enumerate(seg):
            total = [t + x for t, x in zip(total, w)]
            text.append(v0_line(*total))
            want.append(None if (s == 0 and i == 0) else (s, tuple(w)))
        prev_last = total
    sc = VllmScanner("p")
    sc.feed("".join(text).encode())
    spec = sc.finish()["vllm_spec"]
    got = []
    for r in spec.itertuples():
        if r.window_accepted is None or str(r.window_accepted) == "<NA>":
            got.append(None)
            continue
        got.append((r.segment, (r.window_accepted, r.window_draft_tokens, r.window_emitted)))
        assert r.drafts == r.window_draft_tokens / 3
        assert r.accept_len == pytest.approx(r.window_emitted / r.drafts)
    assert got == want


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_the_sglang_scanner_declines_vllm_lines(case):
    if "mixed" in case.name:
        return
    sc = Scanner("x")           # with the C accelerator when it is built
    sc.feed(case.read_bytes())
    assert sc.stats.consumed == 0
    assert all(len(df) == 0 for df in sc.finish().values())


def test_engine_sniffing_and_errors(run, write):
    assert choose_engine("auto", (CASES[0]).read_bytes()).name == "vllm"
    assert choose_engine("auto", (FIXTURES / "vllm" / "mixed_families.log").read_bytes()).name \
        == "sglang+vllm"
    assert choose_engine("auto", (SAMPLES / "baseline.log").read_bytes()).name == "sglang"
    empty = write("x.log", "hello\nworld\n")
    r = run("parse", empty)
    assert r.exit_code == 1 and "families tried: sglang, vllm," in r.stderr
    # --engine vllm reads no SGLang line
    r = run("-q", "parse", "--engine", "vllm", SAMPLES / "baseline.log")
    assert r.exit_code == 1 and "no speculative-decoding records" in r.stderr


def test_mixed_log_is_split_by_family():
    log = eaglelog.parse(FIXTURES / "vllm" / "mixed_families.log", base_date="2026-03-05")
    assert log.sources[0].engine == "sglang+vllm"
    assert log.sources[0].skipped == 0
    d = log.decode
    assert list(d["engine"].astype("string").fillna("sglang")) == ["sglang", "vllm"]
    from eaglelog.analysis.windows import windows
    w = windows(d, log.prefill, 40)
    assert w["series"].nunique() == 2          # the families never share a series


def test_compare_across_engines_warns(run):
    r = run("compare", SAMPLES / "eagle3_5step.log", SAMPLE)
    assert r.exit_code == 0
    assert "runs of different engines (vllm vs sglang)" in r.stdout          # in the block
    r = run("compare", "-f", "csv", SAMPLES / "eagle3_5step.log", SAMPLE)
    assert "runs of different engines (vllm vs sglang)" in r.stderr          # no room in rows


# ---------------------------------------------------------------------------------- the sample
# The lists vllm_sample() in sample_logs/make_samples.py wrote the sample from (k = 3, 8 running
# requests, 10 s windows; prefill in windows 0, 6, 15, 30, 38; window 19 after a 60 s gap).
DRAFTS = [1600, 2000, 2010, 1990, 2005, 1995, 1700, 2002, 1998, 2004, 1996, 2001, 1999,
          2003, 1997, 1750, 2000, 2006, 1994, 2000, 2008, 1992, 2001, 1999,
          2004, 1996, 2002, 1998, 2000, 2006, 1680, 1994, 2003, 1997, 2001, 1999, 2005,
          1995, 1720, 2000, 2002, 1998, 2004, 1996, 2000, 2001, 1999, 2003]
ACCEPTED = [2000, 3300, 3350, 3250, 3310, 3290, 2700, 3305, 3280, 3320, 3275, 3300, 3290,
            3310, 3285, 2800, 3300, 3320, 3270, 3300, 3330, 3260, 3305, 3295,
            3315, 3285, 3300, 3290, 3310, 3325, 2750, 3270, 3305, 3295, 3300, 3290, 3320,
            3280, 2790, 3300, 3310, 3290, 3315, 3285, 3300, 3305, 3295, 3310]
PREFILL = (0, 6, 15, 30, 38)


def test_sample_matches_its_lists():
    import sys
    sys.path.insert(0, str(SAMPLES))
    import make_samples
    assert (make_samples.VLLM_DRAFTS, make_samples.VLLM_ACCEPTED) == (DRAFTS, ACCEPTED)
    assert tuple(sorted(make_samples.VLLM_PREFILL)) == PREFILL
    assert make_samples.VLLM_IDLE_BEFORE == 19


def test_summary_and_breakeven_on_the_v1_sample(run):
    # accept length: each window's τ = 1 + accepted / drafts, weighted by its drafts (the exact
    # request-step count) = 1 + Σ accepted / Σ drafts, over all 48 windows
    assert (sum(ACCEPTED), sum(DRAFTS)) == (154_880, 94_453)
    accept = 1 + 154_880 / 94_453                                   # 2.639757…
    # cycle: gen throughput = (drafts + accepted) / 10 s, so a window's derived cycle
    # 1000 × τ × 8 / gen = 80000 / drafts ms.  The rate model regresses the prefill windows'
    # excess away (prompt tokens in the window and the one before); the windows that hold no
    # prefill work, not the first and not after the idle gap (19), give the pure decode cycle
    # by hand: 37 windows, mean 39.9964 ms.  The fit uses all 46 usable windows and the printed
    # (rounded) throughputs, so it agrees to the printed precision (0.05 tok/s in ~530: 1e-4).
    skip = {0, 19} | set(PREFILL) | {p + 1 for p in PREFILL}
    clean = [i for i in range(48) if i not in skip]
    cycle = sum(80_000 / DRAFTS[i] for i in clean) / len(clean)
    assert (len(clean), cycle) == (37, pytest.approx(39.99641, abs=1e-5))
    s = json.loads(run("-q", "summary", "-f", "json", SAMPLE).stdout)["runs"][0]
    assert s["accept_len"]["sglang"]["estimate"] == pytest.approx(accept, rel=1e-12)
    assert s["throughput"]["windows"] == 48 and s["throughput"]["windows_used"] == 46
    # break-even against 90 tok/s: a plain step takes 1000 / 90 = 11.111 ms
    step = 1000 / 90
    b = json.loads(run("-q", "breakeven", "--baseline-toks", "90", "-f", "json",
                       SAMPLE).stdout)["runs"][0]
    got = b["cycle_ms"]["estimate"]
    assert got == pytest.approx(cycle, rel=1e-4) and b["cycle_kind"] == "corrected"
    assert b["baseline_step_ms"]["estimate"] == pytest.approx(step)
    assert b["breakeven_accept_len"]["estimate"] == pytest.approx(got / step, rel=1e-12)  # 3.600
    assert b["accept_len"]["estimate"] == pytest.approx(accept, rel=1e-12)
    assert b["speedup"]["estimate"] == pytest.approx(accept * step / got, rel=1e-12)    # 0.733
    # per-stream rate: 1000 × τ / cycle, the figure summary prints next to the aggregate
    assert s["throughput"]["per_stream_tok_s"]["estimate"] == pytest.approx(1000 * accept / got,
                                                                            rel=1e-12)
    assert b["verdict"] == "below"


def v0_log(n=12):
    """A V0 log: per 5 s a throughput line, a cumulative spec line and a stage-times line."""
    out, acc, drafts, emitted = [], 0, 0, 0
    for i in range(n):
        t = f"10-02 13:{i // 12:02d}:{(i * 5) % 60:02d}"
        out.append(f"INFO {t} metrics.py:341] Avg prompt throughput: 0.0 tokens/s, Avg generation "
                   f"throughput: {80 + i % 3}.0 tokens/s, Running: 4 reqs, Swapped: 0 reqs, "
                   f"Pending: 0 reqs, GPU KV cache usage: 8.0%, CPU KV cache usage: 0.0%.")
        drafts += 400                            # proposals (k = 4 draft tokens each)
        acc += 280 + 10 * (i % 2)
        emitted += 400 + 280 + 10 * (i % 2)      # one bonus token per proposal + accepted
        out.append(f"INFO {t} metrics.py:351] Speculative metrics: Draft acceptance rate: "
                   f"{acc / (drafts * 4):.3f}, System efficiency: 0.600, Number of speculative "
                   f"tokens: 4, Number of accepted tokens: {acc}, Number of draft tokens: "
                   f"{drafts * 4}, Number of emitted tokens: {emitted}.")
        out.append(f"INFO {t} spec_decode_worker.py:829] SpecDecodeWorker stage times: "
                   f"average_time_per_proposal_tok_ms={3.5 + 0.1 * (i % 2):.2f} "
                   f"scoring_time_ms={22 + i % 4}.00 verification_time_ms=0.90")
    return "\n".join(out) + "\n"


def test_v0_stage_times_give_the_cycle_breakdown(run, write):
    """12 stage lines, each a window of equal weight: draft = 4 × (3.5 or 3.6) ms → mean 14.2;
    scoring 22..25 cycling → mean (22+23+24+25)/4 = 23.5; verification 0.9; sum 38.6 ms."""
    path = write("v0.log", v0_log())
    d = json.loads(run("-q", "summary", "-f", "json", "--date", "2025-10-02",
                       path).stdout)["runs"][0]
    got = {p["phase"]: p["ms_per_cycle"]["estimate"] for p in d["phases"]}
    assert got == pytest.approx({"Draft (proposal)": 14.2, "Scoring (target)": 23.5,
                                 "Verification": 0.9})
    assert d["cycle_ms"]["estimate"] == pytest.approx(38.6)
    assert d["cycle_ms"]["n"] == 12 and d["bottleneck"] == "Scoring (target)"
    assert any("lower bound" in n for n in d["notes"])
    text = run("-q", "summary", "--date", "2025-10-02", path).stdout
    assert "12 SpecDecodeWorker stage-time lines (stage sum) (a lower bound" in text
    assert "Scoring (target)" in text and "← bottleneck" in text


def test_sweep_and_compare_on_vllm_logs(run, write):
    """Two vLLM runs: compare and sweep give their usual JSON keys."""
    a = write("a.log", v0_log())
    b = write("b.log", v0_log().replace("Running: 4 reqs", "Running: 5 reqs"))
    cmp = json.loads(run("-q", "compare", "-f", "json", "--date", "2025-10-02", a, b).stdout)
    # windows 2..12 (the first has no start): 6 with 290 accepted, 5 with 280, 400 drafts each
    acc = next(m for m in cmp["metrics"] if m["metric"] == "accept_len")
    assert acc["reference_mean"] == pytest.approx((6 * 690 + 5 * 680) / (11 * 400))
    ref = json.loads(run("-q", "compare", "-f", "json", SAMPLES / "eagle3_5step.log",
                         SAMPLES / "eagle3_2step.log").stdout)
    assert set(cmp) == set(ref)
    sw = run("-q", "sweep", "-f", "json", "--baseline-toks", "60", "--date", "2025-10-02", a, b)
    assert sw.exit_code == 0, sw.stderr
    rows = json.loads(sw.stdout)
    ref_rows = json.loads(run("-q", "sweep", "-f", "json", "--baseline-toks", "90",
                              *sorted((SAMPLES / "sweep").glob("*.log"))).stdout)
    assert set(rows) == set(ref_rows)


def test_counts_beyond_64_bits_are_reported_not_fatal(tmp_path):
    """A count no 64-bit column holds is a bad value said on stderr (the line is not parsed when
    the count is one it needs), never an overflow of the frame building."""
    huge = "9" * 23
    path = tmp_path / "huge.log"
    path.write_text(
        f"INFO 01-20 10:00:00 [loggers.py:100] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
        f"Avg generation throughput: 80.0 tokens/s, Running: {huge} reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%\n"
        "INFO 01-20 10:00:01 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 2.50, "
        f"Accepted throughput: 10.0 tokens/s, Drafted throughput: 20.0 tokens/s, Accepted: {huge} "
        "tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.700, 0.500\n"
        "INFO 01-20 10:00:02 [metrics.py:100] SpecDecoding metrics: Mean acceptance length: 2.50, "
        "Accepted throughput: 10.0 tokens/s, Drafted throughput: 20.0 tokens/s, Accepted: 100 "
        "tokens, Drafted: 200 tokens, Per-position acceptance rate: 0.700, 0.500\n"
        f"INFO 01-20 10:00:03 [core.py:100] Iteration({huge}): 1 context requests, 10 context "
        "tokens, 2 generation requests, 2 generation tokens, iteration elapsed time: 30.0 ms\n")
    log = eaglelog.parse(path, base_date="2026-01-20")
    msgs = sorted((d.line_no, d.kind, d.message) for d in log.diagnostics if d.line_no)
    assert msgs == [
        (1, "malformed", f"vllm_stats line not parsed: bad value '{huge}' for running_req"),
        (2, "malformed", f"vllm_spec line not parsed: bad value '{huge}' for accepted_tokens"),
        (4, "bad_value", f"vllm_iterations line: bad value '{huge}' for iteration")]
    assert len(log.vllm_spec) == 1 and log.vllm_spec["accepted_tokens"].tolist() == [100]
    it = log.vllm_iterations
    assert len(it) == 1 and it["iteration"].isna().all() and it["iter_ms"].tolist() == [30.0]


# ---------------------------------------------------------------------------- issue 13 / 14
# Fixtures added for them (tests/fixtures/vllm, written by make_fixtures.py from vllm.md's
# formulas): v0_k_change, v0_bad_window, bad_values, startup_v0, startup_v1, startup_forms.
import gzip
import math
import warnings

from eaglelog.parsers import SniffingScanner
from eaglelog.parsers.vllm import config_keys, parse_config_line, parse_spec_line, \
    parse_throughput_line

NEW = ("v0_k_change", "v0_bad_window", "bad_values", "startup_v0", "startup_v1", "startup_forms")


@pytest.mark.parametrize("name", NEW)
def test_the_reports_of_each_new_fixture_exactly(name):
    case = FIXTURES / "vllm" / f"{name}.log"
    exp = json.loads(case.with_suffix(".expected.json").read_text())
    log = eaglelog.parse(case, base_date=exp["base_date"])
    got = [[d.line_no, d.kind, d.message] for d in log.diagnostics if d.line_no is not None]
    assert got == exp["diagnostics"]


def _finite_tables(log):
    """No inf or nan in any float column; no value out of its column's range."""
    for name, df in log.tables.items():
        for col in df.columns:
            if str(df[col].dtype) == "float64":
                v = df[col].dropna().to_numpy()
                assert all(math.isfinite(x) for x in v), (name, col)
    for df in (log.vllm_spec, log.decode):
        if "accept_len" in df:
            a = df["accept_len"].dropna()
            assert (a >= 1).all(), a.tolist()
        for col in ("accept_rate", "window_acceptance_rate", "draft_acceptance_rate"):
            if col in df:
                assert df[col].dropna().between(0, 1).all(), (col, df[col].tolist())


def test_a_change_of_k_starts_a_new_segment(run):
    """Two V0 runs back to back (k = 3, then k = 5 with higher counters): differenced across the
    runs, line 6 gave accept length 570 / (16056 / 5) = 0.178 and rate -0.164; the change of k
    starts segment 1, whose first window is the run's own counters (6000 / 4800 = 1.25)."""
    case = FIXTURES / "vllm" / "v0_k_change.log"
    log = eaglelog.parse(case, base_date="2024-09-30")
    spec = log.vllm_spec.set_index("line_no")
    assert spec.loc[6, "segment"] == 1 and spec.loc[6, "accept_len"] == 6000 / 4800
    assert spec.loc[8, "accept_len"] == 790 / 200 and spec.loc[8, "accept_rate"] == pytest.approx(
        (790 / 200 - 1) / 5)
    _finite_tables(log)
    s = json.loads(run("-q", "summary", "-f", "json", "--date", "2024-09-30",
                       case).stdout)["runs"]
    # two configurations are never pooled: one run per k, each window weighted by its drafts
    # (Σ emitted / Σ drafts within the run)
    assert [r["source"] for r in s] == [f"{case} [steps 3 until line 5]",
                                        f"{case} [steps 5 from line 5]"]
    assert s[0]["accept_len"]["sglang"]["estimate"] == pytest.approx(505 / 243, rel=1e-12)
    assert s[1]["accept_len"]["sglang"]["estimate"] == pytest.approx(
        (6000 + 790) / (4800 + 200), rel=1e-12)


def test_impossible_v0_windows_are_reported_not_printed():
    log = eaglelog.parse(FIXTURES / "vllm" / "v0_bad_window.log", base_date="2025-10-02")
    assert log.vllm_spec["accept_len"].notna().tolist() == [False, True, False, True, False,
                                                             False, False]
    assert sorted(d.line_no for d in log.diagnostics if d.kind == "bad_window") == [3, 5, 6]
    _finite_tables(log)


# cumulative counters of engine runs logged one after another (a run's k, its per-window
# (drafts, accepted positions, emitted tokens)); a run may start with counters above the last
# run's (an undetectable restart) or with another k
_run = st.tuples(st.integers(1, 6), st.lists(st.tuples(st.integers(0, 400), st.floats(0, 1),
                                                        st.floats(0, 1)), min_size=1, max_size=5),
                 st.integers(0, 30_000))


@settings(max_examples=80, deadline=None)
@given(st.lists(_run, min_size=1, max_size=4))
def test_derived_v0_values_are_never_impossible(runs):
    text = []
    for k, windows, offset in runs:
        acc, draft, emitted = offset, offset * k, offset * 2    # where this run's counters start
        for d, fa, fe in windows:
            a = int(fa * d * k)
            draft += d * k
            acc += a
            emitted += d + int(fe * min(a, d * k))
            text.append(v0_line(acc, draft, emitted, k))
    sc = VllmScanner("p")
    sc.feed("".join(text).encode())
    frames = sc.finish()
    spec = frames["vllm_spec"]
    tau = spec["accept_len"].dropna()
    k = spec.loc[tau.index, "k"]
    assert ((tau >= 1) & (tau <= k + 1)).all()
    assert spec["accept_rate"].dropna().between(0, 1).all()
    if "window_acceptance_rate" in spec:
        assert spec["window_acceptance_rate"].dropna().between(0, 1).all()


NUMBER_SLOTS = [
    # (a valid line, the number in it to replace)
    ("INFO 01-20 10:00:00 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
     "generation throughput: 35.6 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
     "usage: 0.4%, Prefix cache hit rate: 0.0%", "35.6"),
    ("INFO 01-20 10:00:00 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
     "generation throughput: 35.6 tokens/s, Running: 7 reqs, Waiting: 0 reqs, GPU KV cache "
     "usage: 0.4%, Prefix cache hit rate: 0.0%", "7"),
    ("INFO 01-20 10:00:00 [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
     "generation throughput: 35.6 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
     "usage: 0.4%, Prefix cache hit rate: 0.0%", "0.4"),
    ("INFO 01-20 10:00:01 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.31, "
     "Accepted throughput: 10.10 tokens/s, Drafted throughput: 15.40 tokens/s, Accepted: 101 "
     "tokens, Drafted: 154 tokens, Per-position acceptance rate: 0.792, 0.519, Avg Draft "
     "acceptance rate: 65.6%", "2.31"),
    ("INFO 01-20 10:00:01 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.31, "
     "Accepted throughput: 10.10 tokens/s, Drafted throughput: 15.40 tokens/s, Accepted: 101 "
     "tokens, Drafted: 154 tokens, Per-position acceptance rate: 0.792, 0.519, Avg Draft "
     "acceptance rate: 65.6%", "101"),
    ("INFO 01-20 10:00:01 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.31, "
     "Accepted throughput: 10.10 tokens/s, Drafted throughput: 15.40 tokens/s, Accepted: 101 "
     "tokens, Drafted: 154 tokens, Per-position acceptance rate: 0.792, 0.519, Avg Draft "
     "acceptance rate: 65.6%", "0.519"),
    ("INFO 01-20 10:00:01 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.31, "
     "Accepted throughput: 10.10 tokens/s, Drafted throughput: 15.40 tokens/s, Accepted: 101 "
     "tokens, Drafted: 154 tokens, Per-position acceptance rate: 0.792, 0.519, Avg Draft "
     "acceptance rate: 65.6%", "65.6"),
    ("INFO 09-30 11:47:31 metrics.py:351] Speculative metrics: Draft acceptance rate: 0.571, "
     "System efficiency: 0.513, Number of speculative tokens: 3, Number of accepted tokens: 4533, "
     "Number of draft tokens: 7944, Number of emitted tokens: 5430.", "0.513"),
    ("INFO 09-30 11:47:31 metrics.py:351] Speculative metrics: Draft acceptance rate: 0.571, "
     "System efficiency: 0.513, Number of speculative tokens: 3, Number of accepted tokens: 4533, "
     "Number of draft tokens: 7944, Number of emitted tokens: 5430.", "5430"),
    ("INFO 10-02 13:05:27 spec_decode_worker.py:829] SpecDecodeWorker stage times: "
     "average_time_per_proposal_tok_ms=3.71 scoring_time_ms=22.48 verification_time_ms=0.94",
     "22.48"),
    ("(EngineCore_DP0 pid=311) INFO 01-09 04:12:55 [core.py:352] Iteration(1042): 0 context "
     "requests, 0 context tokens, 8 generation requests, 8 generation tokens, iteration elapsed "
     "time: 14.07 ms", "14.07"),
    ("INFO 09-30 11:47:26 metrics.py:341] Avg prompt throughput: 0.0 tokens/s, Avg generation "
     "throughput: 188.6 tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV "
     "cache usage: 2.7%, CPU KV cache usage: 0.0%.\n"
     "INFO 09-30 11:47:26 metrics.py:357] Prefix cache hit rate: GPU: 41.25%, CPU: 0.00%",
     "41.25"),
]
NOT_NUMBERS = ["inf", "nan", "NaN", "-inf", "1e400", "9" * 400, "\u0663\u0665", "\uff13\uff15",
               "1_000", "-1", "101.5", "", "0x10", "3.5.1"]


@pytest.mark.parametrize("slot", range(len(NUMBER_SLOTS)))
@pytest.mark.parametrize("bad", NOT_NUMBERS)
def test_a_number_vllm_never_prints_is_reported(tmp_path, slot, bad):
    """Every number of every vLLM line: a value that is not an ASCII, finite, in-range number
    is a reported bad value or a reported line, never an exception or a stored inf/nan."""
    line, value = NUMBER_SLOTS[slot]
    assert line.count(value) >= 1
    p = tmp_path / "x.log"
    p.write_text(line.replace(value, bad, 1) + "\n", encoding="utf-8")
    try:
        log = eaglelog.parse(p, base_date="2025-01-20")
    except eaglelog.NoRecordsError as e:
        assert "x.log:1: no record could be read: " in str(e)
        return
    _finite_tables(log)
    said = [d for d in log.diagnostics if d.kind in ("bad_value", "bad_window")]
    # 101.5 is a valid throughput or time; anywhere else it is not a count, or out of range
    if bad == "101.5" and value in ("35.6", "22.48", "14.07"):
        assert not said
    else:
        assert said and said[0].line_no in (1, 2), [d.message for d in log.diagnostics]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(range(len(NUMBER_SLOTS))), st.text(min_size=0, max_size=12))
def test_any_text_in_a_number_slot_never_raises(slot, text):
    line, value = NUMBER_SLOTS[slot]
    bad = line.replace(value, text.replace("\n", " "), 1)
    for parse in (parse_spec_line, parse_throughput_line):
        parse(bad)
    sc = VllmScanner("p")
    sc.feed((bad + "\n").encode("utf-8", "surrogatepass"))
    frames = sc.finish()
    for df in frames.values():
        for col in df.columns:
            if str(df[col].dtype) == "float64":
                assert df[col].dropna().map(math.isfinite).all(), col


# --------------------------------------------------------------------------- start-up lines
def test_vllm_startups_give_the_config_sglang_names(run):
    """Each start-up (the lines printed together, vllm.md / docs/formats-vllm.md) is a
    server_args row whose keys use SGLang's names; the analyses label the runs by them."""
    case = FIXTURES / "vllm" / "startup_v1.log"
    log = eaglelog.parse(case, base_date="2025-11-18")
    src = log.sources[0].name
    c1, c2 = log.config(src, 1), log.config(src, 2)
    assert {k: c1[k] for k in ("speculative_algorithm", "speculative_draft_model_path",
                               "speculative_num_steps", "tp_size", "model_path")} == {
        "speculative_algorithm": "eagle3", "speculative_draft_model_path": "org/Target-8B-EAGLE3",
        "speculative_num_steps": 3, "tp_size": 2, "model_path": "org/Target-8B"}
    assert (c2["speculative_algorithm"], c2["speculative_num_steps"], c2["tp_size"]) == \
        ("ngram", 4, 1)
    assert [u for u, _ in log.startups(src)] == [1, 2]
    text = run("-q", "summary", "--date", "2025-11-18", case).stdout
    assert "config          eagle3 · draft org/Target-8B-EAGLE3 · steps 3 · tp 2 · dp 1" in text
    assert "config          ngram · steps 4 · tp 1 · dp 1" in text
    cmp = run("-q", "compare", "--date", "2025-11-18", case).stdout
    assert "speculative_algorithm eagle3 → ngram" in cmp
    assert "speculative_num_steps 3 → 4" in cmp


@pytest.mark.parametrize("raw, want", [
    # V0 --speculative-model (2024); '[ngram]' is V0's n-gram lookup
    ({"speculative_model": "org/D", "num_speculative_tokens": 5},
     {"speculative_draft_model_path": "org/D", "speculative_num_steps": 5,
      "speculative_algorithm": "unknown"}),
    ({"speculative_model": "[ngram]", "num_speculative_tokens": 4},
     {"speculative_draft_model_path": None, "speculative_num_steps": 4,
      "speculative_algorithm": "ngram"}),
    ({"speculative_model": None, "num_speculative_tokens": None},
     {"speculative_draft_model_path": None, "speculative_num_steps": None,
      "speculative_algorithm": None}),
    # --speculative-config (2025 →), and SpeculativeConfig(...)'s repr of every version
    ({"speculative_config": {"method": "deepseek_mtp", "num_speculative_tokens": 1}},
     {"speculative_algorithm": "deepseek_mtp", "speculative_num_steps": 1}),
    ({"speculative_config": "SpeculativeConfig(draft_model='[ngram]', num_spec_tokens=5)"},
     {"speculative_algorithm": "ngram", "speculative_draft_model_path": None,
      "speculative_num_steps": 5}),
    ({"speculative_config": "SpeculativeConfig(draft_model='ngram', num_spec_tokens=5)"},
     {"speculative_algorithm": "ngram", "speculative_draft_model_path": None,
      "speculative_num_steps": 5}),
    ({"speculative_config": "SpeculativeConfig(method='suffix', model=None, num_spec_tokens=8)"},
     {"speculative_algorithm": "suffix", "speculative_draft_model_path": None,
      "speculative_num_steps": 8}),
    ({"speculative_config": None}, {"speculative_algorithm": None}),
    ({"model": "m", "tensor_parallel_size": 4, "data_parallel_size": 2,
      "pipeline_parallel_size": 1, "max_model_len": 4096, "seed": 7, "port": 1},
     {"model_path": "m", "tp_size": 4, "dp_size": 2, "pp_size": 1, "context_length": 4096,
      "random_seed": 7, "port": 1}),
])
def test_config_keys_map_to_sglang_names(raw, want):
    assert config_keys(raw) == want


def test_a_start_up_line_cut_short_keeps_what_survived():
    r = parse_config_line("INFO 06-17 09:00:00 [api_server.py:1043] non-default args: {'model': "
                          "'m', 'port': 80")
    assert r.record["_args"] == {"model_path": "m", "speculative_algorithm": None}
    assert r.record["parse_ok"] is False and "cut short" in r.problems[0]
    r = parse_config_line("INFO 06-17 09:00:00 [api_server.py:1043] non-default args: {'model': "
                          "'m', 'tensor_parallel_size': 99999999999999999999999}")
    assert r.record["_args"]["tp_size"] is None
    assert r.problems == ["bad value '99999999999999999999999' for tp_size: beyond 64 bits"]


def test_the_v0_throughput_flag(run):
    """gen_throughput counts sequence-steps on V0 rows (vllm issue 6669), emitted tokens on V1
    rows: the decode column gen_throughput_steps says which, for the analyses."""
    for case, want in (("v0_spec_b_restart", True), ("v1e_dp", False), ("startup_v0", True),
                       ("startup_v1", False)):
        path = FIXTURES / "vllm" / f"{case}.log"
        log = eaglelog.parse(path, base_date=base(path))
        d = log.decode[log.decode["gen_throughput"].notna()]
        assert d["gen_throughput_steps"].tolist() == [want] * len(d), case
    # the analyses get it with their column projection too
    from eaglelog.schema import ANALYSIS_COLUMNS
    path = FIXTURES / "vllm" / "startup_v0.log"
    log = eaglelog.parse(path, base_date="2024-10-02", columns=ANALYSIS_COLUMNS)
    assert log.decode["gen_throughput_steps"].tolist() == [True] * 3


def test_a_resumed_scan_keeps_the_start_ups(tmp_path, monkeypatch):
    """The table cache resumes a grown log only where no start-up row is still open; the
    resumed tables equal a fresh parse."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lines = (FIXTURES / "vllm" / "startup_v1.log").read_text().splitlines(keepends=True)
    p = tmp_path / "grow.log"
    p.write_text("".join(lines[:7]))
    eaglelog.parse(p, base_date="2025-11-18", cache=True)
    with open(p, "a") as f:
        f.write("".join(lines[7:]))
    got = eaglelog.parse(p, base_date="2025-11-18", cache=True)
    fresh = eaglelog.parse(p, base_date="2025-11-18")
    import pandas.testing as pdt
    for t in ("server_args", "decode", "vllm_spec"):
        pdt.assert_frame_equal(got.table(t), fresh.table(t), check_dtype=False,
                               check_categorical=False)


# --------------------------------------------------------------------------- sniffing
NOISE_LINE = b'INFO:     10.0.0.%d:5%04d - "GET /health HTTP/1.1" 200 OK\n'


def noise(mib: float) -> bytes:
    out, n, i = [], 0, 0
    while n < mib * (1 << 20):
        ln = NOISE_LINE % (i % 250, i % 10000)
        out.append(ln)
        n += len(ln)
        i += 1
    return b"".join(out)


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_a_vllm_log_after_megabytes_of_other_lines_is_read_whole(tmp_path, gz):
    """The first metrics line after 5 MiB of health checks: --engine auto still picks vllm, and
    the rows are those of the log without the noise, their line numbers shifted."""
    case = FIXTURES / "vllm" / "startup_v1.log"
    pre = noise(5)
    n_pre = pre.count(b"\n")
    data = pre + case.read_bytes()
    p = tmp_path / ("noisy.log.gz" if gz else "noisy.log")
    if gz:
        with gzip.open(p, "wb") as f:
            f.write(data)
    else:
        p.write_bytes(data)
    ref = eaglelog.parse(case, base_date="2025-11-18")
    log = eaglelog.parse(p, base_date="2025-11-18")
    info = log.sources[0]
    assert info.engine == "vllm"
    assert (info.lines, info.skipped, info.first_skipped) == (n_pre + 11, n_pre + 1, 1)
    for t in ("decode", "vllm_spec", "vllm_stats", "server_args"):
        a, b = ref.table(t), log.table(t)
        assert b["line_no"].tolist() == [x + n_pre for x in a["line_no"]], t
        cols = [c for c in a.columns if c not in ("source", "line_no", "paired_line")]
        assert b[cols].equals(a[cols]), t
    notes = [(d.line_no, d.kind) for d in log.diagnostics if d.kind == "engine"]
    assert notes == [(n_pre + 2, "engine")]


def test_an_engine_named_on_another_familys_log_points_at_its_lines(tmp_path):
    p = tmp_path / "noisy.log"
    pre = noise(2)
    p.write_bytes(pre + (FIXTURES / "vllm" / "v1e_dp.log").read_bytes())
    with pytest.raises(eaglelog.NoRecordsError) as e:
        eaglelog.parse(p, engine="sglang")
    n = pre.count(b"\n") + 1
    assert str(e.value).endswith(f"families tried: sglang; it holds vllm (from line {n:,}) lines: "
                                 "drop --engine (auto) or pass --engine vllm")


SG = ("[2026-03-05 10:00:{:02d}] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, "
      "accept len: 2.50, accept rate: 0.50, cuda graph: True, gen throughput (token/s): 100.00, "
      "#queue-req: 0,\n")


def test_vllm_lines_after_a_sglang_head_are_reported(tmp_path, monkeypatch):
    """A log whose head is SGLang's and whose vLLM lines come later (in the first chunk, after
    its first MiB): the SGLang rows are read and the vLLM lines are reported, with the engine
    that reads them (no scan path reads both: the parallel one never looks past the head)."""
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    vl = (FIXTURES / "vllm" / "v1e_dp.log").read_bytes()
    pre = noise(1.5)
    data = SG.format(0).encode() + pre + vl + SG.format(5).encode()
    p = tmp_path / "both.log"
    p.write_bytes(data)
    log = eaglelog.parse(p, base_date="2025-11-18")
    assert log.sources[0].engine == "sglang"
    assert log.decode["line_no"].tolist() == [1, data.count(b"\n")]
    first_vllm = pre.count(b"\n") + 2
    said = [(d.line_no, d.kind, d.message) for d in log.diagnostics if d.kind == "other_family"]
    assert said == [(first_vllm, "other_family", "vLLM lines from here on are not read (read as "
                     "sglang, the family of its first lines): pass --engine vllm to read them")]
    log = eaglelog.parse(p, base_date="2025-11-18", engine="vllm")
    assert len(log.vllm_spec) == 2 and log.vllm_spec["line_no"].min() == first_vllm + 1


def test_a_head_with_sglang_markers_but_no_record_suggests_the_engine(tmp_path):
    """The head's only SGLang marker is no record ('Prefil' in prose); the vLLM lines 9 MiB on
    (in a later chunk) are named in the error with the --engine that reads them."""
    pre = noise(9)
    p = tmp_path / "x.log"
    p.write_bytes(b"Prefilling the prompt cache warm-up set\n" + pre +
                  (FIXTURES / "vllm" / "v1e_dp.log").read_bytes())
    with pytest.raises(eaglelog.NoRecordsError) as e:
        eaglelog.parse(p)
    n = pre.count(b"\n") + 2
    assert str(e.value).endswith(f"families tried: sglang (the family whose markers it holds); "
                                 f"it holds vllm (from line {n:,}) lines: pass --engine vllm")
    assert len(eaglelog.parse(p, engine="vllm", base_date="2025-11-18").vllm_spec) == 2


def test_a_large_log_with_no_family_in_its_head_is_not_split(tmp_path, monkeypatch):
    """The parallel scan (SGLang only) is chosen from the head; a head without any family's
    lines goes to the sequential scan, which looks further: a 33 MiB log whose vLLM lines come
    after the noise is read whole."""
    monkeypatch.setenv("EAGLELOG_WORKERS", "2")
    from eaglelog.io import parallel
    pre = noise(parallel.MIN_PARALLEL / (1 << 20) + 1)
    p = tmp_path / "big.log"
    p.write_bytes(pre + (FIXTURES / "vllm" / "v1e_dp.log").read_bytes())
    log = eaglelog.parse(p, base_date="2025-11-18")
    assert log.sources[0].engine == "vllm" and len(log.vllm_spec) == 2


def test_the_sniffing_scanner_counts_the_lines_it_skips():
    sc = SniffingScanner("auto", b"", "x")
    sc.feed(b"\nhello\n\n")
    assert (sc.stats.lines, sc.stats.blank, sc.stats.first_skipped) == (3, 2, 2)
    sc.feed((FIXTURES / "vllm" / "v1e_dp.log").read_bytes())
    frames = sc.finish()
    assert sc.engine_name == "vllm" and frames["vllm_spec"]["line_no"].tolist() == [5, 7]
    assert (sc.stats.lines, sc.stats.blank, sc.stats.first_skipped) == (8, 2, 2)


# --------------------------------------------------------------------------- idle windows
def idle_log(n=12):
    out = []
    for i in range(n):
        t = f"01-20 10:00:{5 * i:02d}"
        out.append(f"INFO {t} [loggers.py:100] Engine 000: Avg prompt throughput: 0.0 tokens/s, "
                   "Avg generation throughput: 35.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, "
                   "GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%")
        out.append(f"INFO {t} [metrics.py:100] SpecDecoding metrics: Mean acceptance length: "
                   "2.50, Accepted throughput: 30.00 tokens/s, Drafted throughput: 60.00 "
                   "tokens/s, Accepted: 150 tokens, Drafted: 300 tokens, Per-position acceptance "
                   "rate: 0.700, 0.500, 0.300")
    return "\n".join(out) + "\n"


def test_all_idle_windows_leak_no_numpy_warning(write):
    """Every window 'Running: 0 reqs': no tokens per iteration, so no all-windows throughput
    (it was 0 / 0: a RuntimeWarning on stderr and NaN in the JSON)."""
    from eaglelog.analysis.summary import summarize
    log = eaglelog.parse(write("idle.log", idle_log()), base_date="2026-01-20")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = summarize(log)
    assert s.throughput_all is None


def test_the_year_note_asks_for_date_only_without_it(run):
    """vLLM prefixes carry no year: the note says where the years came from, and asks for
    --date only when it was not given."""
    log = SAMPLES / "vllm_v1.log"
    given = run("acceptance", "--date", "2026-02-10", log).stderr
    assert ("vllm_v1.log: vLLM prefixes carry no year; years from --date (2026 for the first "
            "line)\n") in given and "pass --date" not in given
    assert "; pass --date YYYY-MM-DD (the first line's date) to set it" in \
        run("acceptance", log).stderr


def test_a_wrapper_stamp_of_no_date_is_reported_not_an_internal_error(run, tmp_path):
    """A wrapper's stamp '2026-13-01T08:00:100000Z' (month 13, no space after the seconds)
    in front of a vLLM line (fuzz seed 50, case 186: an AttributeError in read_prefix): one
    line, exit 1."""
    log = tmp_path / "vllm.log"
    log.write_text("2026-13-01T08:00:100000Z Avg prompt throughput: \n")
    r = run("parse", log)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.startswith(f"eaglelog: error: {log}:1: no record could be read: ")
    assert "internal error" not in r.stderr and r.stderr.count("\n") == 1
