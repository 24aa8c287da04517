"""`eaglelog latency` (docs/latency.md): the vllm bench serve result reader, the analysis'
numbers, the CLI, and the calibration of the intervals and the crossover against
tests/latency_sim.py's known truth."""
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import binomtest

import latency_sim as S
from conftest import ROOT
from eaglelog.analysis import latency as A
from eaglelog.cli import main
from eaglelog.errors import EaglelogError, UsageProblem
from eaglelog.parsers import loadtest

SAMPLES = ROOT / "sample_logs" / "latency"
SPEC = sorted(str(p) for p in SAMPLES.glob("spec-*.json"))
BASE = sorted(str(p) for p in SAMPLES.glob("base-*.json"))


# ------------------------------------------------------------------ the reader

def test_sample_file_reads_as_vllm_computed_it():
    (run,) = loadtest.read_runs(str(SAMPLES / "base-4qps.json"))
    obj = json.loads((SAMPLES / "base-4qps.json").read_text())
    req = run.requests
    assert len(req) == 400 and run.run["load"] == 4.0 and run.run["load_kind"] == "rate"
    ok = req["ok"].to_numpy(bool)
    assert ok.sum() == obj["completed"] == run.run["completed"]
    assert (~ok).sum() == obj["failed"]
    assert req.loc[~ok, "error"].str.startswith("HTTP 503").all()
    # the file's own percentiles (computed unrounded) from the rounded lists: within 1e-3 ms
    assert np.percentile(req["ttft_ms"][ok], 99) == pytest.approx(obj["p99_ttft_ms"], abs=2e-3)
    assert np.percentile(req["tpot_ms"][ok], 99) == pytest.approx(obj["p99_tpot_ms"], rel=1e-4)
    assert np.percentile(run.itl_ms, 99) == pytest.approx(obj["p99_itl_ms"], rel=1e-4)
    assert np.median(req["e2el_ms"][ok]) == pytest.approx(obj["median_e2el_ms"], abs=2e-3)
    i = int(np.flatnonzero(ok)[0])
    tpot = (obj["latencies"][i] - obj["ttfts"][i]) / (obj["output_lens"][i] - 1) * 1000
    assert req["tpot_ms"][i] == pytest.approx(tpot)
    assert req["itl_chunks"][i] == len(obj["itls"][i]) == obj["output_lens"][i] - 1
    assert run.run["output_tok_s"] == pytest.approx(obj["output_throughput"])
    assert run.run["p99_ttft_ms"] == obj["p99_ttft_ms"]
    assert list(loadtest.runs_frame([run])["load"]) == [4.0]


def test_simulator_arrays_equal_the_file_path():
    a = loadtest.from_result(S.result("spec", 3.0, 50, np.random.default_rng(3)), "x")
    b = S.run_of("spec", 3.0, 50, np.random.default_rng(3))
    np.testing.assert_allclose(a.requests["tpot_ms"], b.requests["tpot_ms"], rtol=1e-9)
    np.testing.assert_allclose(a.itl_ms, b.itl_ms, rtol=1e-9)


def test_jsonl_pretty_printed_and_without_latencies(tmp_path):
    rng = np.random.default_rng(1)
    objs = [S.result("baseline", x, 30, rng) for x in (1.0, 2.0)]
    S.write(tmp_path / "a.json", objs)                       # --append-result
    runs = loadtest.read_runs(str(tmp_path / "a.json"))
    assert [(r.line_no, r.load) for r in runs] == [(1, 1.0), (2, 2.0)]
    o = dict(objs[0])
    del o["latencies"]                                        # older releases: ttft + Σ itl
    (tmp_path / "b.json").write_text(json.dumps(o, indent=2))
    (r,) = loadtest.read_runs(str(tmp_path / "b.json"))
    np.testing.assert_allclose(r.requests["e2el_ms"], runs[0].requests["e2el_ms"], rtol=1e-9)
    o["max_concurrency"], o["request_rate"] = 16, "inf"
    (r,) = [loadtest.from_result(o, "c.json")]
    assert (r.load, r.run["load_kind"]) == (16.0, "concurrency")


def test_without_save_detailed_the_files_numbers_only(tmp_path):
    o = S.result("spec", 2.0, 40, np.random.default_rng(2))
    for k in ("input_lens", "output_lens", "ttfts", "itls", "errors", "start_times"):
        del o[k]
    (r,) = [loadtest.from_result(o, "x.json")]
    assert not r.detailed and len(r.requests) == 0 and "--save-detailed" in r.notes[0]
    res = A.latency([r], [S.run_of("baseline", 2.0, 40, np.random.default_rng(4))])
    e = res.points[0].spec.quantiles["ttft"]["p99"]
    assert e.estimate == o["p99_ttft_ms"] and e.ci_low is None
    assert res.points[0].pays == "n/a"


@pytest.mark.parametrize("text,where", [
    ('{"duration": 1, "completed": 1}\n{"duration": 2,\n', "x.json:2: invalid JSON"),
    ('{\n  "duration": 1,\n  "completed": \n}', "x.json:4: invalid JSON"),
    ('[1, 2]', "x.json:1: a JSON int"),
    ('{"date": "x"}', "none of the load-test results eaglelog reads"),
    ('{"duration": 10, "completed": 2, "request_rate": 1, "ttfts": [0.1, 0.2], '
     '"output_lens": [3]}', "'output_lens' holds 1 entries, 'ttfts' 2"),
    ('{"duration": -1, "completed": 2, "request_rate": 1}', "bad value '-1' for 'duration'"),
    ('{"duration": 1, "completed": 2, "request_rate": 1, "ramp_up_strategy": "linear"}',
     "ramp-up run"),
    ('{"duration": 1, "completed": 2, "request_rate": "fast"}', "'request_rate'"),
    ('{"duration": 10, "completed": 1, "request_rate": 1, "ttfts": [0.1], '
     '"output_lens": [2], "itls": [["a"]]}', "'itls' holds 'a'"),
    ('', "x.json: empty file"),
])
def test_bad_input_is_one_line_naming_the_file(tmp_path, text, where):
    p = tmp_path / "x.json"
    p.write_text(text)
    with pytest.raises(EaglelogError) as e:
        loadtest.read_runs(str(p))
    msg = str(e.value)
    assert where in msg and "\n" not in msg and msg.startswith(str(p))


# ------------------------------------------------------------------ the model's pieces

def test_parse_slo():
    assert A.parse_slo("ttft=2s,tpot=50ms") == {"ttft": 2000.0, "tpot": 50.0}
    assert A.parse_slo("ttft:2000 e2el=1.5s") == {"ttft": 2000.0, "e2el": 1500.0}
    assert A.slo_text({"ttft": 2000.0, "tpot": 50.0}) == "ttft=2s,tpot=50ms"
    for bad in ("ttft=2h", "itl=50ms", "tpot=0", "tpot"):
        with pytest.raises(UsageProblem):
            A.parse_slo(bad)


def test_order_statistic_interval():
    x = np.arange(1.0, 101.0)                     # X_(i) = i
    # Binomial(100, 0.5): F(39) = 0.0176 ≤ 0.025 < F(40) → X_(40); F(59) < 0.975 ≤ F(60) → X_(61)
    assert A.order_interval(x, 0.5, 0.95) == (40.0, 61.0)
    assert A.order_interval(np.arange(200.0), 0.99, 0.95)[1] is None   # 0.99^200 > 0.025
    # Binomial(400, 0.99): F(391) = 0.0208 ≤ 0.025 < F(392); F(399) = 0.982 ≥ 0.975: the max
    assert A.order_interval(np.arange(400.0), 0.99, 0.95) == (391.0, 399.0)


def test_quantiles_match_numpy():
    rng = np.random.default_rng(0)
    x = rng.lognormal(size=(7, 33))
    x[2, :5] = np.nan
    np.testing.assert_allclose(A._quantiles(x), np.nanquantile(x, A.QUANTILES, axis=1))
    d = A._data([S.run_of("spec", 4.0, 60, rng)])
    idx = rng.integers(0, 60, size=(20, 60))
    counts = np.bincount((idx + 60 * np.arange(20)[:, None]).ravel(),
                         minlength=1200).reshape(20, 60)
    want = np.array([np.quantile(np.concatenate([d.itl[d.itl_owner == i] for i in row]),
                                 A.QUANTILES) for row in idx]).T
    np.testing.assert_allclose(A._weighted_quantiles(d.itl, d.itl_owner, counts), want)


def test_goodput_counts_failed_requests_and_has_a_wilson_interval():
    rng = np.random.default_rng(7)
    spec = S.run_of("spec", 2.0, 100, rng, p_fail=0.1)
    base = S.run_of("baseline", 2.0, 100, rng)
    r = A.latency([spec], [base], slo={"ttft": 2000, "tpot": 50}, resamples=200)
    a = r.points[0].spec
    req = spec.requests
    ok = req["ok"].to_numpy(bool)
    good = int((ok & (req["ttft_ms"] <= 2000) & ~(req["tpot_ms"] > 50)).sum())
    assert a.sent == 100 and a.completed == ok.sum() < 100
    assert a.goodput.estimate == pytest.approx(good / 50.0)        # duration 100 / 2 = 50 s
    ci = binomtest(good, 100).proportion_ci(0.95, method="wilson")
    assert a.goodput.ci_low == pytest.approx(ci.low * 2.0)
    assert a.slo_share.ci_high == pytest.approx(ci.high)


# ------------------------------------------------------------------ the bundled sample, CLI

def test_sample_verdict_and_crossover():
    r = A.latency(SPEC, BASE, slo="ttft=2s,tpot=50ms")
    assert [p.load for p in r.points] == [2.0, 4.0, 6.0, 8.0]
    assert [p.pays for p in r.points] == ["yes", "yes", "no", "no"]
    assert r.crossover == {"per_stream": 6.0, "goodput": 6.0, "overall": 6.0}
    assert r.meets_up_to == {"spec": 2.0, "baseline": 2.0}
    p2 = r.points[0]
    # per-stream tok/s = 1000 / p50 TPOT; the ratio its spec / baseline
    assert p2.spec.per_stream_tok_s.estimate == pytest.approx(
        1000 / p2.spec.quantiles["tpot"]["p50"].estimate)
    assert p2.stream_ratio.estimate == pytest.approx(
        p2.spec.per_stream_tok_s.estimate / p2.baseline.per_stream_tok_s.estimate)
    assert 1.3 < p2.stream_ratio.ci_low < p2.stream_ratio.estimate < p2.stream_ratio.ci_high
    assert p2.verdict.startswith("2 req/s: speculation: 1.41× per-stream tok/s")
    assert "crossover at 6 req/s" in r.verdict


def test_cli_table_json_csv(tmp_path):
    args = ["latency", *SPEC, "--baseline", *BASE, "--slo", "ttft=2s,tpot=50ms"]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "crossover at 6 req/s" in res.stdout
    assert "tokens per chunk" in res.stderr and "tokens per chunk" not in res.stdout
    res = CliRunner().invoke(main, args + ["-f", "json"])
    d = json.loads(res.stdout)
    assert d["crossover"]["overall"] == 6.0 and d["slo_ms"] == {"ttft": 2000.0, "tpot": 50.0}
    assert d["points"][0]["spec"]["quantiles_ms"]["ttft"]["p99"]["n"] == 395
    out = tmp_path / "l.csv"
    res = CliRunner().invoke(main, args + ["-f", "csv", "-o", str(out)])
    assert res.exit_code == 0 and "wrote" in res.stderr
    import pandas as pd
    df = pd.read_csv(out)
    assert len(df) == 8 and set(df["arm"]) == {"spec", "baseline"}
    assert df.loc[0, "p50_tpot_ms_low"] < df.loc[0, "p50_tpot_ms"] < df.loc[0, "p50_tpot_ms_high"]


@pytest.mark.parametrize("args,code,words", [
    (["latency", "x.json"], 2, "no baseline run"),
    (["latency", "--baseline", "x.json"], 2, "no speculative run"),
    (["latency", "a.json", "--baseline", "b.json", "--slox", "1"], 2, "No such option"),
    (["latency", "nope.json", "--baseline", "b.json"], 1, "nope.json: no such file"),
    (["latency", str(SAMPLES / "spec-2qps.json"), "--baseline",
      str(SAMPLES / "base-2qps.json"), "--slo", "ttft=2h"], 2, "--slo"),
])
def test_cli_errors_are_one_line(args, code, words):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == code
    assert words in res.stderr and "Traceback" not in res.stderr and res.stdout == ""


def test_no_common_load_point(tmp_path):
    res = CliRunner().invoke(main, ["latency", SPEC[0], "--baseline", BASE[1]])
    assert res.exit_code == 2 and "no load point has both" in res.stderr


# ------------------------------------------------------------------ calibration

def test_sglang_and_aiperf_go_through_the_same_path(tmp_path):
    """The simulator's draws written as vLLM, SGLang (bench_serving --output-details) and
    aiperf (summary + records) write them give the same numbers, and the crossover found is
    within one load step of the simulator's true one."""
    loads = (2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
    results = {}
    for fmt in ("vllm", "sglang", "aiperf"):
        rng = np.random.default_rng(5)
        arms = {"spec": [], "baseline": []}
        for arm in arms:
            for x in loads:
                p = tmp_path / fmt / f"{arm}-{x:g}"
                p.parent.mkdir(parents=True, exist_ok=True)
                if fmt == "vllm":
                    S.write(f"{p}.json", [S.result(arm, x, 370, rng, p_fail=0.01)])
                    arms[arm].append(f"{p}.json")
                elif fmt == "sglang":
                    S.write_sglang(f"{p}.jsonl", [S.sglang_result(arm, x, 370, rng,
                                                                  p_fail=0.01)])
                    arms[arm].append(f"{p}.jsonl")
                else:
                    S.write_aiperf(p, *S.aiperf_run(arm, x, 370, rng, p_fail=0.01))
                    arms[arm].append(str(p))
        results[fmt] = A.latency(arms["spec"], arms["baseline"], slo=S.SLO, resamples=300,
                                 seed=1)
    ref = results["vllm"]
    assert abs(ref.crossover["overall"] - S.true_crossover(loads=loads)) <= 1.0
    for fmt in ("sglang", "aiperf"):
        r = results[fmt]
        assert r.crossover == ref.crossover and r.meets_up_to == ref.meets_up_to
        assert [p.pays for p in r.points] == [p.pays for p in ref.points]
        for p, q in zip(r.points, ref.points):
            for a, b in ((p.spec, q.spec), (p.baseline, q.baseline)):
                for m in ("ttft", "tpot", "itl"):
                    for qn in ("p50", "p90", "p99"):
                        e, f = a.quantiles[m][qn], b.quantiles[m][qn]
                        assert e.estimate == pytest.approx(f.estimate, rel=1e-9), (fmt, m, qn)
                        assert (e.ci_low is None) == (f.ci_low is None)
                assert a.goodput.estimate == pytest.approx(b.goodput.estimate)
            assert p.stream_ratio.ci_low == pytest.approx(q.stream_ratio.ci_low, rel=1e-9)


def test_calibration():
    """200 simulated spec/baseline load tests (6 load points, 370 requests each — enough for
    a 95 % order-statistic bound on both sides of p99 — B = 300): every interval covers its
    true quantile in ≥ 92 % of runs, with widths that say the interval is informative, and
    the crossover is found within one load step in ≥ 90 %.  (benchmarks/
    latency_calibration.py runs the larger version.)"""
    r = S.calibrate(runs=200, n=370, resamples=300, loads=(2.0, 3.0, 4.0, 5.0, 6.0, 7.0))
    cov, width = r["coverage"], r["width"]
    for key, c in cov.items():
        assert c >= 0.92, (key, c, cov)
    # relative widths (mean (high − low) / truth): finite and informative
    assert width[("tpot", "p50")] < 0.1 and width[("ttft", "p50")] < 0.2
    assert width[("itl", "p99")] < 0.2 and width[("ttft", "p99")] < 0.9
    assert all(math.isfinite(w) for w in width.values())
    assert r["crossover_within_one_step"] >= 0.9, r
