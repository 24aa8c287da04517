"""A single-use log (ParsedLog.mark_single_use: the command line's summary and breakeven) lets
its decode table go once the one run's windows are made (library.each_run,
analysis/breakeven.run_windows; issue 37): the same answers as a log that keeps it, a table that
fails loudly if read again, and nothing let go where a log holds several runs or the API made it.
Also the per-log shortcuts of the same round: server_args rows read column-wise for many inputs,
a unit's rows known to be its input's, weighted_mean without the autocorrelation time its
short-series rule never reads."""
import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from eaglelog import api, library, stats
from eaglelog.analysis import breakeven as BE
from eaglelog.cli import main
from eaglelog.model import ReleasedTable

HERE = os.path.dirname(__file__)
SAMPLES = os.path.join(HERE, "..", "sample_logs")


def _no_config(tmp_path, name="eagle3_5step.log"):
    """A sample log without its server_args line: K comes from the decode lines (draft_len)."""
    src = os.path.join(SAMPLES, name)
    out = tmp_path / f"noconfig-{name}"
    with open(src) as f, open(out, "w") as g:
        g.writelines(line for line in f if "server_args=" not in line)
    return str(out)


def _json(result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True, default=str)


@pytest.mark.parametrize("name", ["eagle3_5step.log", "eagle3_2step.log", "batch_eagle3.log"])
@pytest.mark.parametrize("config", [True, False])
def test_single_use_gives_the_same_answers_and_lets_the_table_go(tmp_path, name, config):
    path = os.path.join(SAMPLES, name) if config else _no_config(tmp_path, name)
    kept = api.parse([path], cache=False)
    once = api.parse([path], cache=False).mark_single_use()
    for fn in (lambda log: library.summarize(log, baseline_toks=90),
               lambda log: library.breakeven(log, baseline_toks=90, by_batch=True)):
        a = fn(kept)
        b = fn(api.parse([path], cache=False).mark_single_use())
        assert _json(a) == _json(b)
        r = a.runs[0]
        verdict = r.verdict if hasattr(r, "verdict") else r.breakeven.verdict
        assert len(a.runs) == 1 and verdict in ("above", "below", "inconclusive", "mixed",
                                                "partial", "invalid baseline")
    assert not kept.single_use and isinstance(kept.decode, type(kept.prefill))
    library.summarize(once, baseline_toks=90)
    assert isinstance(once.tables["decode"], ReleasedTable)      # the caller's log let it go
    assert isinstance(once.tables["prefill"], ReleasedTable)     # … and its prefill lines
    assert isinstance(once.tables["prof_phases"], ReleasedTable)  # … and profiler phases
    assert "released" in repr(once)
    with pytest.raises(RuntimeError, match="released"):
        len(once.decode)
    with pytest.raises(RuntimeError, match="released"):
        "accept_len" in once.decode.columns


def test_the_facts_read_before_the_table_goes(tmp_path):
    path = _no_config(tmp_path)
    log = api.parse([path], cache=False).mark_single_use()
    unit = log.unit(log.unit_plans(whole=True)[0][1])
    unit.mark_single_use()
    src = unit.sources[0].name
    ref = api.parse([path], cache=False)
    dec = unit.tables["decode"]
    cfg, win = BE.run_windows(unit, src)
    assert isinstance(unit.tables["decode"], ReleasedTable)
    assert isinstance(unit.tables["prefill"], ReleasedTable)
    # the frame handed to the windows lost what they copied of it (not alive beside them)
    assert "accept_len" in dec.columns          # (the table itself: the run cut its own)
    assert win.line.dtype == np.int32
    ref_win = BE.run_windows(ref, src)[1]
    assert ref_win.line.dtype == np.int32 and np.array_equal(win.line, ref_win.line)
    for f in ("r", "b", "a", "y"):
        np.testing.assert_array_equal(getattr(win, f), getattr(ref_win, f))
    assert win.lifetime == ref_win.lifetime
    facts = BE._decode_facts(unit, src)
    assert facts.draft == BE.draft_len.max_tokens_of_rows(ref, src)
    assert facts.draft[0] == 6                       # 5 steps + 1, from accept len / rate
    assert facts.diluted is BE.diluted(ref.decode)
    want = BE.context.tokens_at(ref.decode, win.line)
    np.testing.assert_array_equal(BE.window_tokens(unit, src, win), want)
    # taken once: a second reader would go to the table, which says it is gone
    with pytest.raises(RuntimeError, match="released"):
        BE.window_tokens(unit, src, win)


def test_a_log_of_several_runs_keeps_its_tables():
    paths = [os.path.join(SAMPLES, n) for n in ("eagle3_5step.log", "eagle3_2step.log")]
    log = api.parse(paths, cache=False).mark_single_use()
    res = library.summarize(log, baseline_toks=90)
    assert len(res.runs) == 2
    assert not isinstance(log.tables["decode"], ReleasedTable)
    ref = library.summarize(api.parse(paths, cache=False), baseline_toks=90)
    assert _json(res) == _json(ref)


def test_the_command_line_marks_its_log_and_prints_the_same(tmp_path):
    path = _no_config(tmp_path)
    runner = CliRunner()
    for args in (["summary", "--no-cache", "--baseline-toks", "90", "-f", "json", path],
                 ["breakeven", "--no-cache", "--by", "batch", "--baseline-toks", "90", "-f",
                  "json", path]):
        out = runner.invoke(main, args)
        assert out.exit_code == 0, out.output
        got = json.loads(out.stdout)
        fn = library.summarize if args[0] == "summary" else \
            (lambda log, **k: library.breakeven(log, by_batch=True, **k))
        want = json.loads(json.dumps(fn(api.parse([path], cache=False),
                                        baseline_toks=90).to_dict(), default=str))
        assert got["runs"] == want["runs"]


def test_config_rows_of_many_inputs_read_column_wise_are_the_rows(tmp_path):
    names = ["eagle3_5step.log", "eagle3_2step.log", "batch_eagle3.log", "baseline.log"]
    paths = []
    for i in range(10):        # ≥ 8 rows: the column-wise path
        n = names[i % len(names)]
        p = tmp_path / f"{i:02d}-{n}"
        shutil.copy(os.path.join(SAMPLES, n), p)
        paths.append(str(p))
    many = api.parse(paths, cache=False)
    assert len(many.server_args) >= 8
    for p in paths:
        one = api.parse([p], cache=False)
        a, b = many.config(p), one.config(p)
        assert a == b and [type(v) for v in a.values()] == [type(v) for v in b.values()]
        assert a["speculative_num_steps"] == b["speculative_num_steps"]


def test_a_units_rows_are_its_inputs_without_a_pass():
    paths = [os.path.join(SAMPLES, n) for n in ("eagle3_5step.log", "eagle3_2step.log")]
    log = api.parse(paths, cache=False)
    for label, plan in log.unit_plans(whole=True):
        unit = log.unit(plan)
        src = plan[0]
        for name, df in unit.tables.items():
            assert unit._where(src, name) == slice(0, len(df))
            assert (unit.values(src, name, "line_no") if "line_no" in df.columns else
                    np.empty(0)).shape[0] == (len(df) if "line_no" in df.columns else 0)
        ref = api.parse([src], cache=False)
        assert unit.span_s(src) == ref.span_s(src)
        np.testing.assert_array_equal(unit.values(src, "decode", "accept_len"),
                                      ref.values(src, "decode", "accept_len"))


def test_weighted_mean_without_the_tau_it_does_not_read():
    rng = np.random.default_rng(7)
    for n in (3, 15, 40, 99):
        v, w = rng.gamma(4, 1, n), rng.integers(1, 9, n).astype(float)
        theta = float(np.dot(w, v) / w.sum())
        u = stats.block_sums(w * (v - theta) / w.sum() / theta)
        full, facts = stats.influence_estimates([theta], [u], n, 0.95)
        lean, lean_facts = stats.influence_estimates([theta], [u], n, 0.95, tau_fact=False)
        assert full == lean
        assert np.isfinite(facts["tau"]) and np.isnan(lean_facts["tau"])
        assert stats.weighted_mean(v, w, 0.95) == full[0]
    # from LONG_SERIES_MIN windows the batches need τ: asked for or not, it is taken
    n = stats.LONG_SERIES_MIN + 50
    v, w = rng.gamma(4, 1, n), np.ones(n)
    theta = float(v.mean())
    u = stats.block_sums((v - theta) / n / theta)
    _, facts = stats.influence_estimates([theta], [u], n, 0.95, tau_fact=False)
    assert np.isfinite(facts["tau"])


def test_a_units_tables_are_cut_when_first_read_and_read_alike_every_way():
    import pickle

    from eaglelog.model import LazyTables, _Cut
    paths = [os.path.join(SAMPLES, n) for n in ("eagle3_5step.log", "eagle3_2step.log")]
    log = api.parse(paths, cache=False)
    unit = log.subset(paths[1])
    t = unit.tables
    assert isinstance(t, LazyTables)
    raw = dict.__getitem__(t, "decode")
    assert type(raw) is _Cut                          # nothing cut yet
    want = log.rows_of(paths[1], "decode").reset_index(drop=True)
    got = t["decode"]
    assert got is t["decode"] and got is unit.decode  # cut once, kept
    assert got.equals(want) and list(got.index) == list(range(len(want)))
    # every way of reading the dict gives frames, never the pending cut
    for view in (dict(t), t.copy(), {**t}, dict(t.items()), pickle.loads(pickle.dumps(t))):
        assert set(view) == set(dict.keys(t))
        assert not any(type(v) is _Cut for v in view.values())
    assert not any(type(v) is _Cut for v in t.values())
    assert t.get("server_args").equals(
        log.rows_of(paths[1], "server_args").reset_index(drop=True))
    assert t.get("no such table", 7) == 7 and "no such table" not in t
    assert len(unit.server_args) == 1 and unit.config() == log.config(paths[1])


@pytest.mark.parametrize("n", [4, 39, 41, 1000, (1 << 16) + 3, 300_000])
def test_autocorr_time_of_a_masked_series_is_that_of_its_copy(n):
    rng = np.random.default_rng(n)
    e = rng.normal(size=n)
    u = np.empty(n)                  # AR(1) at 0.995: on a long series the first reach (4,096
    u[0] = e[0]                      # lags) ends before the pairs turn: the deviations are made
    for i in range(1, n):            # again for the longer one
        u[i] = 0.995 * u[i - 1] + e[i]
    mask = rng.random(n) < 0.8
    assert stats.autocorr_time(u, where=mask) == stats.autocorr_time(u[mask].copy())
    assert stats.autocorr_time(u, where=np.ones(n, bool)) == stats.autocorr_time(u)
    tau = stats.autocorr_time(u)
    assert tau >= 1 and (n < 1000 or 50 < tau < 2000)   # (1 + ρ) / (1 − ρ) = 399 when long
    assert stats.autocorr_time(np.full(n, 2.5)) == 1.0


def test_a_single_use_logs_results_cross_from_workers_without_their_windows():
    import pickle

    from eaglelog.library import _without_windows
    path = os.path.join(SAMPLES, "eagle3_5step.log")
    res = library.summarize(api.parse([path], cache=False), baseline_toks=90).runs[0]
    assert res.evidence is not None and res.breakeven.evidence is not None
    lean = _without_windows(res)
    assert lean.evidence is None and lean.breakeven.evidence is None
    assert lean.breakeven.whole_fit is None and res.breakeven.whole_fit is not None
    assert _json(lean) == _json(res)                          # the same printed answers
    assert len(pickle.dumps(lean)) * 4 < len(pickle.dumps(res))
    with pytest.raises(Exception, match="no decode windows"):
        lean.windows()
    assert len(res.windows()) == 106                          # the original keeps them
    # many runs by forked workers: the command line's output is the same with 1 and 2 workers
    import glob as _glob
    runner = CliRunner()
    files = sorted(_glob.glob(os.path.join(SAMPLES, "sweep", "*.log")))
    outs = []
    for w in ("1", "2"):
        os.environ["EAGLELOG_WORKERS"] = w
        try:
            import eaglelog.library as L
            old = L.PARALLEL_RUNS
            L.PARALLEL_RUNS = 2                                 # (the forked path, on a few)
            out = runner.invoke(main, ["summary", "--no-cache", "-f", "json", *files])
        finally:
            L.PARALLEL_RUNS = old
            os.environ.pop("EAGLELOG_WORKERS", None)
        assert out.exit_code == 0, out.output
        outs.append(out.stdout)
    assert outs[0] == outs[1] and len(json.loads(outs[0])["runs"]) == len(files)


# a mutated vLLM SpecDecoding line and a llama-server request's timings in one input (the
# fuzzer's synthetic lines, benchmarks/fuzz.py case 98:481, reduced)
MIXED_LLAMA = (
    " SpecDecoding metrics: DepAccepted: 607 tokens, Drafted: 999 tokens, Per-position "
    "acceptance rate: 0.775\n"
    "0.02.991.460 I slot print_timing: id  0 | task 113 | prompt eval time =      21.85 ms /     "
    "8 tokens (    2.73 ms per token,   366.08 tokens per second)\n"
    "0.02.991.469 I slot print_timing: id  0 | task 113 |        eval time =     557.26 ms /    "
    "86 tokens (    6.56 ms per token,   152.53 tokens per second)")


@pytest.mark.parametrize("light", [False, True])
def test_a_released_decode_table_is_not_read_by_the_llama_server_check(tmp_path, light):
    """breakeven inside a single-use summary asks again whether the input is a llama-server
    log after its decode table was let go (fuzz case 98:481: an internal error before); the
    answer is the one the summary got first, and the result is the kept log's."""
    from eaglelog.baseline import Baseline
    p = tmp_path / "mixed.log"
    p.write_text(MIXED_LLAMA)
    base = api.parse(os.path.join(SAMPLES, "baseline.log"))
    kept = library.summarize(api.parse(str(p)), baseline=Baseline(log=base))
    once = library.summarize(api.parse(str(p), light=light).mark_single_use(),
                             baseline=Baseline(log=base))
    assert _json(once) == _json(kept)
    r = CliRunner().invoke(main, ["summary", "--no-cache", "--baseline-log",
                                  os.path.join(SAMPLES, "baseline.log"), "-f", "json", str(p)])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["runs"][0]["source"] == str(p)
