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
    assert "runs of different engines (vllm vs sglang)" in r.stderr


# ---------------------------------------------------------------------------------- the sample
# The lists vllm_sample() in sample_logs/make_samples.py wrote the sample from (k = 3, 8 running
# requests, 10 s windows; prefill in windows 0, 6, 15; window 19 after a 60 s gap).
DRAFTS = [1600, 2000, 2010, 1990, 2005, 1995, 1700, 2002, 1998, 2004, 1996, 2001, 1999,
          2003, 1997, 1750, 2000, 2006, 1994, 2000, 2008, 1992, 2001, 1999]
ACCEPTED = [2000, 3300, 3350, 3250, 3310, 3290, 2700, 3305, 3280, 3320, 3275, 3300, 3290,
            3310, 3285, 2800, 3300, 3320, 3270, 3300, 3330, 3260, 3305, 3295]


def test_sample_matches_its_lists():
    import sys
    sys.path.insert(0, str(SAMPLES))
    import make_samples
    assert (make_samples.VLLM_DRAFTS, make_samples.VLLM_ACCEPTED) == (DRAFTS, ACCEPTED)


def test_summary_and_breakeven_on_the_v1_sample(run):
    # accept length: each window's τ = 1 + accepted / drafts, weighted by its drafts (the exact
    # request-step count) = 1 + Σ accepted / Σ drafts = 1 + 76_745 / 47_050
    assert (sum(ACCEPTED), sum(DRAFTS)) == (76_745, 47_050)
    accept = 1 + 76_745 / 47_050                                    # 2.631137…
    # cycle: gen throughput = (drafts + accepted) / 10 s, so a window's derived cycle
    # 1000 × τ × 8 / gen = 1000 × 8 × 10 / drafts = 80000 / drafts ms; clean windows: not the
    # first, no prefill (0, 6, 15), not after the idle gap (19) → 20 windows
    clean = [i for i in range(24) if i not in (0, 6, 15, 19)]
    cycle = sum(80_000 / DRAFTS[i] for i in clean) / len(clean)     # 40.0003 ms
    assert cycle == pytest.approx(40.0003, abs=1e-4)
    s = json.loads(run("-q", "summary", "-f", "json", SAMPLE).stdout)
    assert s["accept_len"]["sglang"]["estimate"] == pytest.approx(accept, rel=1e-12)
    assert s["throughput"]["windows"] == 24 and s["throughput"]["clean_windows"] == 20
    # break-even against 90 tok/s: a plain step takes 1000 / 90 = 11.111 ms
    step = 1000 / 90
    b = json.loads(run("-q", "breakeven", "--baseline-toks", "90", "-f", "json", SAMPLE).stdout)
    assert b["cycle_ms"]["estimate"] == pytest.approx(cycle, rel=1e-12)
    assert b["baseline_step_ms"]["estimate"] == pytest.approx(step)
    assert b["breakeven_accept_len"]["estimate"] == pytest.approx(cycle / step, rel=1e-12)  # 3.600
    assert b["accept_len"]["estimate"] == pytest.approx(accept, rel=1e-12)
    assert b["speedup"]["estimate"] == pytest.approx(accept * step / cycle, rel=1e-12)    # 0.731
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
    d = json.loads(run("-q", "summary", "-f", "json", "--date", "2025-10-02", path).stdout)
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
