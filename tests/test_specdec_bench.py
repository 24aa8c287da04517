"""NVIDIA specdec_bench / SPEED-Bench run directories in `eaglelog latency` (docs/latency.md §1.4),
against the synthetic fixtures in tests/fixtures/specdec_bench/ (README there; their shapes follow
github.com/NVIDIA/Model-Optimizer a2fbac7b examples/specdec_bench/specdec_bench/metrics/timing.py
:35–87, acceptance_rate.py:28–84, specbench.py:45–72, base.py:36–48, utils.py:276–324): every
expected number is read here from the fixture's own JSON; and the per-request acceptance that
`latency` reports (§2.1), from aiperf's records and from specdec_bench's Request_AL."""
import json
import math
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

import latency_sim as S
from conftest import ROOT
from eaglelog.analysis import latency as A
from eaglelog.cli import main
from eaglelog.errors import EaglelogError
from eaglelog.parsers import loadtest, specdec_bench
from eaglelog.report.latency import latency_block, markdown_rows

FIX = ROOT / "tests" / "fixtures" / "specdec_bench"
AIPERF = ROOT / "tests" / "fixtures" / "loadtest" / "aiperf"


def _json(p):
    return json.loads(p.read_text(encoding="utf-8"))


def _q(stat, q):
    return float(stat["quantiles"][q])


# ------------------------------------------------------------------ the reader

@pytest.mark.parametrize("name", ["spec-c4", "base-c4", "spec-c8", "base-c8"])
def test_run_directory_reads_as_specdec_bench_wrote_it(name):
    d = FIX / name
    (r,) = loadtest.read_runs(str(d))
    (t,), (a,), cfg = _json(d / "timing.json"), _json(d / "acceptance_rate.json"), \
        _json(d / "configuration.json")
    assert (r.load, r.run["load_kind"], r.run["tool"]) == (cfg["concurrency"], "concurrency",
                                                            "specdec_bench")
    assert r.source == str(d / "timing.json") and r.run["run"] == name
    assert not r.detailed and len(r.requests) == 0 and r.run["failed"] == 0
    assert r.run["model"] == "synthetic/model" and r.run["num_prompts"] == 40
    # TTFT and e2el: seconds as 4-decimal strings → ms
    for key, m in (("TTFT Time", "ttft"), ("E2E Request Time", "e2el")):
        assert r.run[f"median_{m}_ms"] == pytest.approx(_q(t[key], "0.5") * 1000)
        assert r.run[f"mean_{m}_ms"] == pytest.approx(float(t[key]["mean"]) * 1000)
        assert r.run[f"std_{m}_ms"] == pytest.approx(float(t[key]["std"]) * 1000)
        assert f"p99_{m}_ms" not in r.run                 # specdec_bench keeps quartiles only
    # TPOT p50 = 1000 / the median request generation rate; the quartiles swap
    tps = t["Request Generation Tokens Per Second"]
    assert r.run["median_tpot_ms"] == pytest.approx(1000 / _q(tps, "0.5"))
    extra = json.loads(r.run["extra"])
    assert extra["p25_tpot_ms"] == pytest.approx(1000 / _q(tps, "0.75"))
    assert extra["p75_tpot_ms"] == pytest.approx(1000 / _q(tps, "0.25"))
    assert extra["p50_step_ms"] == pytest.approx(
        _q(t["Request Generation Step Time"], "0.5") * 1000)
    assert extra["speculative_algorithm"] == cfg["speculative_algorithm"]
    assert r.run["output_tok_s"] == t["Output TPS"]
    # acceptance: the per-request values, and pooled = Σ length × count / Σ count
    hist = a["Acceptance_Length_Histogram"]
    pooled = sum(int(k) * c for k, c in hist.items()) / sum(hist.values())
    assert r.run["accept_len"] == pytest.approx(pooled)
    req = a["Request_AL"]
    flat = [x for v in req.values() for x in (v.values() if isinstance(v, dict) else [v])]
    np.testing.assert_allclose(r.accept, flat)
    assert np.mean(flat) == pytest.approx(a["Average_AL"])
    if name.endswith("c4"):       # AcceptanceRate: one entry a generate call → the duration
        assert r.accept_unit == "request-turn" and r.run["completed"] == len(flat) == 40
        tokens = float(t["Number of Output Tokens"]["mean"]) * 40
        assert r.run["total_output_tokens"] == pytest.approx(tokens)
        assert r.run["duration_s"] == pytest.approx(tokens / t["Output TPS"])
    else:                         # SpecBench: a question's turns pooled → no duration
        assert r.accept_unit == "question, its turns pooled" and r.run["completed"] == 40
        assert math.isnan(r.run["duration_s"]) and r.run["total_output_tokens"] is None
        assert any("n counts requests, not generate calls" in n for n in r.notes)
    assert any("no per-request times" in n for n in r.notes)
    if name.startswith("base"):
        assert r.run["accept_len"] == 1.0 and set(flat) == {1.0}


def test_the_fixture_values_by_hand():
    """A few numbers of spec-c4 written out, so a change of the reader's units shows."""
    (r,) = loadtest.read_runs(str(FIX / "spec-c4"))
    assert r.load == 4.0
    assert r.run["median_ttft_ms"] == pytest.approx(119.2)          # "0.1192" s
    assert r.run["median_e2el_ms"] == pytest.approx(1188.4)         # "1.1884" s
    assert r.run["median_tpot_ms"] == pytest.approx(1000 / 74.5533)
    assert r.run["output_tok_s"] == pytest.approx(260.6152566)
    assert r.run["total_output_tokens"] == pytest.approx(81.2 * 40)
    assert r.run["accept_len"] == pytest.approx(2.42, abs=0.005)


@pytest.mark.parametrize("given", ["timing.json", "acceptance_rate.json", "configuration.json",
                                   "specbench_results.json", "."])
def test_any_file_of_the_run_names_it(given):
    d = FIX / "spec-c8"
    (r,) = loadtest.read_runs(str(d / given))
    assert r.source == str(d / "timing.json") and r.load == 8.0
    assert len(r.accept) == 40


def test_its_files_given_together_are_one_run():
    d = FIX / "spec-c8"
    runs = loadtest.read([str(d / f) for f in ("timing.json", "acceptance_rate.json",
                                               "configuration.json", "specbench_results.json")]
                         + [str(d)])
    assert len(runs) == 1
    assert sum("read once" in n for n in runs[0].notes) == 4


def _copy(tmp_path, name="spec-c4"):
    d = tmp_path / name
    shutil.copytree(FIX / name, d)
    return d


def test_keys_before_1531_and_an_appended_run(tmp_path):
    """Before NVIDIA/Model-Optimizer#1531 the keys ended in _AR; a reused --save_dir appends a
    run to each file's list (metrics/base.py:36–48) and configuration.json is the last's."""
    d = _copy(tmp_path)
    (a,) = _json(d / "acceptance_rate.json")
    old = {k.replace("_AL", "_AR"): v for k, v in a.items() if k != "Joint_Acceptance_Rate"}
    (t,) = _json(d / "timing.json")
    first = dict(t, **{"Output TPS": 1.0})
    (d / "timing.json").write_text(json.dumps([first, t], indent=4))
    (d / "acceptance_rate.json").write_text(json.dumps([{"Request_AR": {"0": {"0": 9.0}},
                                                         "Average_AR": 9.0}, old], indent=4))
    (r,) = loadtest.read_runs(str(d))
    assert r.run["output_tok_s"] == t["Output TPS"]                 # the last run
    assert r.run["accept_len"] == pytest.approx(loadtest.read_runs(str(FIX / "spec-c4"))[0]
                                                .run["accept_len"])
    assert len(r.accept) == 40 and r.accept.max() < 9
    assert any("2 runs" in n and "the last" in n for n in r.notes)


@pytest.mark.parametrize("case,file,words", [
    ("ttft", "timing.json", "bad value 'soon' for 'TTFT Time.mean'"),
    ("no-stats", "timing.json", "'E2E Request Time' is not a statistics object"),
    ("json", "timing.json", "invalid JSON"),
    ("no-acceptance", "timing.json", "acceptance_rate.json is not beside it"),
    ("no-config", "timing.json", "no configuration.json beside it"),
    ("concurrency", "configuration.json", "bad value '0' for 'concurrency'"),
    ("acc-kind", "acceptance_rate.json", "not an acceptance object ('Request_AL'"),
    ("below-1", "acceptance_rate.json", "accept length 0.5 below 1 for request 3"),
    ("histogram", "acceptance_rate.json", "Acceptance_Length_Histogram.2"),
])
def test_a_malformed_run_is_one_line_naming_the_file(tmp_path, case, file, words):
    d = _copy(tmp_path)
    t, a, c = d / "timing.json", d / "acceptance_rate.json", d / "configuration.json"
    if case == "ttft":
        (x,) = _json(t)
        x["TTFT Time"]["mean"] = "soon"
        t.write_text(json.dumps([x]))
    elif case == "no-stats":
        (x,) = _json(t)
        x["E2E Request Time"] = 1.5
        t.write_text(json.dumps([x]))
    elif case == "json":
        t.write_text(t.read_text()[:-40])
    elif case == "no-acceptance":
        a.unlink()
    elif case == "no-config":
        c.unlink()
    elif case == "concurrency":
        c.write_text(json.dumps(dict(_json(c), concurrency=0)))
    elif case == "acc-kind":
        a.write_text(json.dumps([{"Average_AL": 2.0}]))
    elif case == "below-1":
        (x,) = _json(a)
        x["Request_AL"]["3"]["0"] = 0.5
        a.write_text(json.dumps([x]))
    elif case == "histogram":
        (x,) = _json(a)
        x["Acceptance_Length_Histogram"]["2"] = -4
        a.write_text(json.dumps([x]))
    with pytest.raises(EaglelogError) as e:
        loadtest.read_runs(str(d))
    msg = str(e.value)
    assert words in msg and "\n" not in msg and msg.startswith(str(d / file))
    res = CliRunner().invoke(main, ["latency", str(d), "--baseline", str(FIX / "base-c4")])
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and str(d / file) in res.stderr
    assert words in res.stderr and "Traceback" not in res.stderr


def test_kind_tells_the_files_apart():
    assert specdec_bench.kind(_json(FIX / "spec-c4" / "timing.json")[0]) == "timing"
    assert specdec_bench.kind(_json(FIX / "spec-c4" / "acceptance_rate.json")[0]) == "acceptance"
    assert specdec_bench.kind(_json(FIX / "spec-c8" / "specbench_results.json")) == "acceptance"
    assert specdec_bench.kind(_json(FIX / "spec-c4" / "configuration.json")) == "configuration"
    assert specdec_bench.kind({"AA Output TPS": 1.0}) == "aa_timing"
    assert specdec_bench.kind({"duration": 1, "completed": 2}) is None
    with pytest.raises(EaglelogError, match="a specdec_bench timing object: read its run"):
        loadtest.from_result(_json(FIX / "spec-c4" / "timing.json")[0], "t.json")


# ------------------------------------------------------------------ latency over them

def test_latency_of_specdec_bench_runs():
    res = CliRunner().invoke(main, ["latency", str(FIX / "spec-c4"), str(FIX / "spec-c8"),
                                    "--baseline", str(FIX / "base-c4"), str(FIX / "base-c8"),
                                    "-f", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["load_kind"] == "concurrency" and [p["load"] for p in d["points"]] == [4.0, 8.0]
    for p, name in zip(d["points"], ("c4", "c8")):
        (t,) = _json(FIX / f"spec-{name}" / "timing.json")
        (a,) = _json(FIX / f"spec-{name}" / "acceptance_rate.json")
        s = p["spec"]
        # per-stream tok/s = 1000 / p50 TPOT = the median request generation rate
        assert s["per_stream_tok_s"]["estimate"] == pytest.approx(
            _q(t["Request Generation Tokens Per Second"], "0.5"))
        assert s["quantiles_ms"]["ttft"]["p99"]["estimate"] is None
        assert p["pays"] == "n/a" and p["stream_ratio"]["ci_low"] is None
        acc = s["acceptance"]
        flat = [x for v in a["Request_AL"].values()
                for x in (v.values() if isinstance(v, dict) else [v])]
        assert acc["mean"]["estimate"] == pytest.approx(np.mean(flat)) and acc["mean"]["n"] == 40
        h = stats.t.ppf(0.975, 39) * np.std(flat, ddof=1) / math.sqrt(40)
        assert acc["mean"]["ci_low"] == pytest.approx(np.mean(flat) - h)
        assert acc["pooled"] == pytest.approx(s["accept_len"])
        assert acc["spearman_tpot"] is None and "cannot be paired" in acc["note"]
        assert p["baseline"]["acceptance"]["mean"]["estimate"] == 1.0
    assert "cannot be judged" in d["verdict"]
    res = CliRunner().invoke(main, ["latency", str(FIX / "spec-c4"), "--baseline",
                                    str(FIX / "base-c4")])
    assert res.exit_code == 0
    assert "concurrency 4 spec: accept length 2.49 [2.34, 2.64] (mean over 40 " \
           "request-turns), pooled 2.42 (over streamed chunks" in res.stdout
    assert "no per-request times" in res.stderr


def test_a_vllm_result_has_no_per_request_acceptance():
    spec = str(ROOT / "sample_logs" / "latency" / "spec-2qps.json")
    base = str(ROOT / "sample_logs" / "latency" / "base-2qps.json")
    r = A.latency(spec, base, resamples=200)
    assert r.points[0].spec.accept_len == 2.5 and r.points[0].spec.acceptance is None
    assert "acceptance (" not in latency_block(r)
    assert "accept_len_mean" not in r.to_frame().columns


# ------------------------------------------------------------------ acceptance from aiperf

def test_aiperf_acceptance_against_tpot_from_the_fixture():
    d = AIPERF / "spec-2qps"
    r = A.latency(str(d), str(AIPERF / "base-2qps"), resamples=200)
    c = r.points[0].spec.acceptance
    recs = [json.loads(x) for x in open(d / "profile_export.jsonl", encoding="utf-8")]
    good = [x for x in recs if x["metadata"]["benchmark_phase"] == "profiling"
            and "error" not in x]
    acc = np.array([x["metrics"]["spec_decode_acceptance_length"]["value"] for x in good])
    tpot = np.array([x["metrics"]["inter_token_latency"]["value"] for x in good])
    assert c.unit == "request" and c.mean.n == c.paired == len(good) == 49
    assert c.mean.estimate == pytest.approx(acc.mean())
    h = stats.t.ppf(0.975, 48) * acc.std(ddof=1) / 7
    assert (c.mean.ci_low, c.mean.ci_high) == pytest.approx((acc.mean() - h, acc.mean() + h))
    summ = _json(d / "profile_export_aiperf.json")
    assert c.pooled == pytest.approx(
        summ["spec_decode_token_weighted_acceptance_length"]["avg"], abs=1e-6)
    assert "aiperf's token-weighted" in c.pooled_def
    rho = stats.spearmanr(acc, tpot).statistic
    assert c.rho.estimate == pytest.approx(rho)
    se = math.sqrt((1 + rho ** 2 / 2) / (49 - 3))
    assert c.rho.ci_low == pytest.approx(math.tanh(math.atanh(rho) - 1.959964 * se))
    med = np.median(acc)
    assert c.tpot_low.estimate == pytest.approx(np.median(tpot[acc < med]))
    assert c.tpot_high.estimate == pytest.approx(np.median(tpot[acc > med]))
    assert c.tpot_low.n == (acc < med).sum() and c.tpot_low.ci_low < c.tpot_low.estimate
    assert r.points[0].baseline.acceptance is None          # the baseline does not speculate
    df = r.to_frame()
    row = df[df["arm"] == "spec"].iloc[0]
    assert row["accept_len_mean"] == pytest.approx(acc.mean())
    assert row["accept_tpot_rho"] == pytest.approx(rho)
    assert np.isnan(df[df["arm"] == "baseline"].iloc[0]["accept_len_mean"])
    assert markdown_rows(r)[2][0]["one sample"] == "request"
    text = latency_block(r)
    assert "2 req/s spec: accept length" in text and "Spearman ρ" in text


def _aiperf_with_acceptance(tmp_path, n, rng, slope):
    """An aiperf speculative run whose requests' TPOT falls with their accept length:
    TPOT = 30 ms × (2.5 / a)^slope × lognormal(0, 0.1), a ~ U(1.5, 3.5)."""
    summ, recs = S.aiperf_run("spec", 2.0, n, rng)
    for x in recs:
        if "error" in x:
            continue
        a = rng.uniform(1.5, 3.5)
        x["metrics"]["spec_decode_acceptance_length"]["value"] = a
        x["metrics"]["inter_token_latency"]["value"] = \
            30 * (2.5 / a) ** slope * rng.lognormal(0, 0.1)
    S.write_aiperf(tmp_path / "spec", summ, recs)
    S.write_aiperf(tmp_path / "base", *S.aiperf_run("baseline", 2.0, n, rng))
    return A.latency(str(tmp_path / "spec"), str(tmp_path / "base"), resamples=200)


def test_acceptance_that_lowers_tpot_is_found(tmp_path):
    r = _aiperf_with_acceptance(tmp_path, 200, np.random.default_rng(5), slope=1.0)
    c = r.points[0].spec.acceptance
    assert c.rho.ci_high < -0.6                      # strongly negative, significantly
    assert c.tpot_low.ci_low > c.tpot_high.ci_high   # the halves' p50 TPOT do not overlap
    assert 2.3 < c.mean.ci_low < 2.5 < c.mean.ci_high < 2.7


def test_no_relation_is_not_significant(tmp_path):
    r = _aiperf_with_acceptance(tmp_path, 200, np.random.default_rng(6), slope=0.0)
    c = r.points[0].spec.acceptance
    assert c.rho.ci_low < 0 < c.rho.ci_high


def test_spearman_interval_covers_the_truth():
    """Over 400 samples of 100 bivariate-normal pairs (ρ = 0.5) the Bonett–Wright interval
    covers Spearman's population value (6/π)·asin(ρ/2) at least 92 % of the time."""
    rng = np.random.default_rng(11)
    truth = 6 / math.pi * math.asin(0.25)
    cov = np.array([[1, 0.5], [0.5, 1]])
    hits = 0
    for _ in range(400):
        x = rng.multivariate_normal([0, 0], cov, size=100)
        e = A.spearman(x[:, 0], x[:, 1], 0.95)
        hits += e.ci_low <= truth <= e.ci_high
    assert hits / 400 >= 0.92


def test_spearman_and_mean_with_too_little_data():
    assert A.spearman(np.arange(10.0), np.arange(10.0), 0.95) is None
    assert A.spearman(np.ones(30), np.arange(30.0), 0.95) is None
    e = A.mean_interval(np.array([2.0, 3.0, 4.0]), 0.95)
    assert e.estimate == 3.0 and e.ci_low is None and e.n == 3
