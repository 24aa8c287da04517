"""The library as a notebook uses it (docs/api.md): every public analysis with plain keyword
arguments, its result's .to_dict() equal to the CLI's JSON, .to_frame() equal to its csv."""
import glob
import io
import json

import pandas as pd
import pytest

import eaglelog
from conftest import SAMPLES

FIVE = str(SAMPLES / "eagle3_5step.log")
TWO = str(SAMPLES / "eagle3_2step.log")
BATCH = str(SAMPLES / "batch_eagle3.log")
BATCH_BASE = str(SAMPLES / "batch_baseline.log")
SWEEP = sorted(glob.glob(str(SAMPLES / "sweep" / "*.log")))


def cli(run, *args):
    r = run("-q", *args, "-f", "json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def cli_csv(run, *args):
    r = run("-q", *args, "-f", "csv")
    assert r.exit_code == 0, r.stderr
    return pd.read_csv(io.StringIO(r.stdout))


def same_json(result):
    """The result as the CLI writes it (JSON round trip: tuples become lists, NaN null)."""
    return json.loads(json.dumps(result.to_dict(), default=str))


def test_the_public_names():
    for name in ("parse", "summarize", "summary", "breakeven", "reconcile", "compare", "sweep",
                 "Runs", "Baseline", "EaglelogError"):
        assert name in eaglelog.__all__ and getattr(eaglelog, name) is not None
    assert eaglelog.summary is eaglelog.summarize
    for fn in (eaglelog.summarize, eaglelog.breakeven, eaglelog.reconcile, eaglelog.compare,
               eaglelog.sweep):
        assert ">>> " in fn.__doc__          # every docstring has an example


def test_breakeven_with_plain_arguments(run):
    r = eaglelog.breakeven(FIVE, baseline_toks=90)
    # the README's line: one run, so its fields are the result's
    assert r.speedup is r.runs[0].speedup and len(r) == 1 and r[0] is r.runs[0]
    assert (r.verdict, round(r.speedup.estimate, 3)) == ("below", 0.931)
    assert (round(r.speedup.ci_low, 3), round(r.speedup.ci_high, 3)) == (0.914, 0.947)
    assert same_json(r) == cli(run, "breakeven", "--baseline-toks", "90", FIVE)
    assert same_json(r)["command"] == "breakeven" and same_json(r)["errors"] == []
    pd.testing.assert_frame_equal(r.to_frame(), cli_csv(run, "breakeven", "--baseline-toks",
                                                        "90", FIVE), check_dtype=False)
    # the same numbers from a ParsedLog, a Baseline object, a rate per batch size as a dict
    log = eaglelog.parse(FIVE)
    assert eaglelog.breakeven(log, baseline=eaglelog.Baseline(tok_s=90)).to_dict() == r.to_dict()
    assert eaglelog.breakeven(log, baseline_toks={1: 90}).speedup.estimate == \
        pytest.approx(r.speedup.estimate)


def test_breakeven_by_batch_against_a_baseline_log(run):
    b = eaglelog.breakeven(BATCH, baseline_log=BATCH_BASE, by_batch=True, confidence=0.9)
    assert [(x.batch, x.verdict) for x in b.by_batch] == [
        ("1", "above"), ("2", "above"), ("4", "above"), ("8", "above"), ("16", "above"),
        ("32", "below")]                      # (16: truly 1.008, make_samples.py)
    assert b.verdict == "mixed"
    assert b.speedup.confidence == 0.9
    assert same_json(b) == cli(run, "breakeven", "--baseline-log", BATCH_BASE, "--by", "batch",
                               "--confidence", "0.9", BATCH)
    frame = b.to_frame()
    assert list(frame["scope"]) == ["all"] + ["bucket"] * 6
    assert pd.api.types.is_numeric_dtype(frame["running_req"])
    assert frame["running_req"].isna().tolist() == [True] + [False] * 6
    assert list(frame["running_req"][1:]) == [1, 2, 4, 8, 16, 32]


def test_summarize_several_runs(run):
    s = eaglelog.summarize([FIVE, TWO], baseline_toks=90)
    assert len(s) == 2 and [x.source for x in s] == [FIVE, TWO]
    assert [(x.bottleneck, x.breakeven.verdict) for x in s] == [("Target verify", "below")] * 2
    with pytest.raises(AttributeError, match="holds 2 runs"):
        s.bottleneck
    got = cli(run, "summary", "--baseline-toks", "90", FIVE, TWO)
    assert same_json(s) == got and len(got["runs"]) == 2
    assert round(s.to_dict()["runs"][1]["cycle_ms"]["estimate"], 1) == 25.9
    frame = s.to_frame()
    assert list(frame["source"]) == [FIVE, TWO]
    pd.testing.assert_frame_equal(frame, cli_csv(run, "summary", "--baseline-toks", "90", FIVE,
                                                 TWO), check_dtype=False)


def test_reconcile(run):
    r = eaglelog.reconcile(FIVE)
    assert round(r.ratio.estimate, 3) == 0.499
    assert same_json(r) == cli(run, "reconcile", FIVE)


def test_compare_and_sweep(run):
    c = eaglelog.compare([SWEEP[2], SWEEP[3]])           # steps3 → steps5
    prim = [m for m in c.metrics if m.role == "primary"]
    assert [(m.metric, m.direction) for m in prim] == [("eff_tok_s", "better")]
    assert same_json(c) == cli(run, "compare", SWEEP[2], SWEEP[3])
    assert list(c.to_frame()["metric"]) == [m.metric for m in c.metrics]
    w = eaglelog.sweep(SWEEP, baseline_toks=90)
    assert [(x.keys["speculative_num_steps"], x.mark) for x in w.rows][:2] == [(5, "best"),
                                                                              (7, "tied")]
    assert same_json(w) == cli(run, "sweep", "--baseline-toks", "90", *SWEEP)
    # (csv writes an empty mark as nothing: read back as NaN)
    pd.testing.assert_frame_equal(w.to_frame().replace("", float("nan")),
                                  cli_csv(run, "sweep", "--baseline-toks", "90", *SWEEP),
                                  check_dtype=False)


def test_selection_arguments(run):
    part = eaglelog.breakeven(FIVE, baseline_toks=90, since="+60s", skip_warmup=0)
    whole = eaglelog.breakeven(FIVE, baseline_toks=90, skip_warmup=0)
    assert part.accept_len.n < whole.accept_len.n
    assert same_json(part) == cli(run, "breakeven", "--baseline-toks", "90", "--since", "+60s",
                                  "--skip-warmup", "0", FIVE)


def test_errors_are_eaglelog_errors_or_value_errors(tmp_path):
    with pytest.raises(ValueError, match="give the baseline"):
        eaglelog.breakeven(FIVE)
    with pytest.raises(ValueError, match="not a rate"):
        eaglelog.breakeven(FIVE, baseline_toks="fast")
    with pytest.raises(eaglelog.EaglelogError, match="missing.log"):
        eaglelog.summarize(str(tmp_path / "missing.log"))


def test_requests_acceptance_and_paired_are_public(run):
    """The analyses of the later issues: the same functions the CLI calls, plain arguments."""
    for name in ("requests", "compare_paired", "acceptance"):
        assert name in eaglelog.__all__
    from eaglelog.analysis import acceptance, requests
    assert eaglelog.requests is requests.requests and eaglelog.acceptance is \
        acceptance.acceptance and eaglelog.compare_paired is requests.compare_paired
    r = eaglelog.requests(FIVE, by="finish", breakeven=2.45)
    assert same_json(r) == cli(run, "requests", "--by", "finish", "--breakeven", "2.45", FIVE)
    assert r.runs[0].overall.requests == 40 and r.runs[0].overall.below is not None
    a = eaglelog.acceptance(FIVE)
    got = cli(run, "acceptance", FIVE)
    assert same_json(a) == got and got["runs"]
    p = eaglelog.compare_paired(FIVE, FIVE)
    assert p.verdict == "no detectable difference"
    assert same_json(p) == cli(run, "compare", "--paired", FIVE, FIVE)


def test_compare_takes_an_export_as_the_reference(run, tmp_path):
    ref = str(tmp_path / "ref.json")
    assert run("-q", "export", SWEEP[2], "-o", ref).exit_code == 0
    c = eaglelog.compare([ref, SWEEP[3]])
    assert [m.direction for m in c.metrics if m.role == "primary"] == ["better"]
    assert same_json(c) == cli(run, "compare", ref, SWEEP[3])
    s = eaglelog.summarize(ref)
    assert len(s.runs) == 1 and same_json(s) == cli(run, "summary", ref)
    with pytest.raises(eaglelog.EaglelogError, match="at least two runs"):
        eaglelog.compare([SWEEP[2]])
    with pytest.raises(ValueError, match="either logs or eaglelog exports"):
        eaglelog.summarize([ref, SWEEP[3]])
    r = run("compare", SWEEP[2])
    assert r.exit_code == 2 and "at least two runs" in r.stderr


def test_selection_on_requests_positions_whatif_and_schedule(run):
    """acceptance and requests take --since/--until/--startup; whatif and schedule take
    --skip-warmup too: each CLI answer is the library's on the selected log, and the span
    changes it."""
    part = eaglelog.parse(FIVE).select(since="+60s")
    a = eaglelog.acceptance(part)
    assert same_json(a) == cli(run, "acceptance", "--since", "+60s", FIVE)
    assert same_json(a) != cli(run, "acceptance", FIVE)
    q = eaglelog.requests(eaglelog.parse(FIVE).select(until="+60s"))
    assert same_json(q) == cli(run, "requests", "--until", "+60s", FIVE)
    assert 0 < q.runs[0].requests < eaglelog.requests(FIVE).runs[0].requests
    assert cli(run, "requests", "--startup", "1", FIVE) == cli(run, "requests", FIVE)
    w = eaglelog.whatif(eaglelog.parse(SWEEP).select(since="+100s"), baseline_toks=90,
                        skip_warmup=0)
    got = cli(run, "whatif", "--baseline-toks", "90", "--since", "+100s", "--skip-warmup", "0",
              *SWEEP)
    assert same_json(w) == got and got != cli(run, "whatif", "--baseline-toks", "90", *SWEEP)
    sched = sorted(glob.glob(str(SAMPLES / "schedule" / "*.log")))
    base = str(SAMPLES / "batch_baseline.log")
    s = eaglelog.schedule(eaglelog.parse(sched), baseline_log=base, skip_warmup=5)
    got = cli(run, "schedule", "--baseline-log", base, "--skip-warmup", "5", *sched)
    assert same_json(s) == got and got != cli(run, "schedule", "--baseline-log", base, *sched)
