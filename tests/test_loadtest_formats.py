"""`eaglelog latency`'s other readers (docs/latency.md §1.2, §1.3): SGLang bench_serving
--output-file JSONL and aiperf's profile_export_aiperf.json / profile_export.jsonl, against the
synthetic fixtures in tests/fixtures/loadtest/ (written by `python tests/latency_sim.py
--fixtures`): every expected number is computed here from the fixture's own requests."""
import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

import latency_sim as S
from conftest import ROOT
from eaglelog.analysis import latency as A
from eaglelog.cli import main
from eaglelog.errors import EaglelogError
from eaglelog.parsers import aiperf, loadtest

FIX = ROOT / "tests" / "fixtures" / "loadtest"
SG_SPEC, SG_BASE = str(FIX / "sglang" / "spec.jsonl"), str(FIX / "sglang" / "base.jsonl")
SLO = "ttft=2s,tpot=50ms"


def _lines(path):
    return [json.loads(x) for x in open(path, encoding="utf-8")]


def _records(d):
    return [json.loads(x) for x in open(d / "profile_export.jsonl", encoding="utf-8")]


# ------------------------------------------------------------------ SGLang

def test_sglang_jsonl_reads_as_sglang_computed_it():
    runs = loadtest.read_runs(SG_SPEC)
    objs = _lines(SG_SPEC)
    assert [(r.line_no, r.load, r.run["load_kind"], r.run["tool"]) for r in runs] == \
        [(1, 2.0, "rate", "sglang"), (2, 6.0, "rate", "sglang")]
    for r, o in zip(runs, objs):
        req = r.requests
        ok = np.array([not e for e in o["errors"]])
        assert len(req) == len(o["ttfts"]) == 50
        assert list(req["ok"]) == list(ok) and ok.sum() == o["completed"] == r.run["completed"]
        assert r.run["failed"] == 50 - o["completed"] > 0          # SGLang saves no 'failed'
        assert r.run["run"] == o["tag"] == "synthetic-spec" and r.run["accept_len"] == 2.5
        # per request: e2el = ttft + Σ itl (SGLang saves no latencies), TPOT vLLM's way
        ttft = np.array(o["ttfts"])[ok] * 1000
        e2el = ttft + np.array([sum(g) for g, k in zip(o["itls"], ok) if k]) * 1000
        outl = np.array(o["output_lens"])[ok]
        np.testing.assert_allclose(req["ttft_ms"][ok], ttft)
        np.testing.assert_allclose(req["e2el_ms"][ok], e2el)
        np.testing.assert_allclose(req["tpot_ms"][ok], (e2el - ttft) / (outl - 1))
        assert (req.loc[~ok, "error"] == "Service Unavailable: synthetic overload").all()
        # the file's own percentiles from the requests (lists rounded to the µs)
        assert np.percentile(ttft, 99) == pytest.approx(o["p99_ttft_ms"], abs=2e-3)
        assert np.median(e2el) == pytest.approx(o["median_e2e_latency_ms"], abs=2e-3)
        assert np.percentile(r.itl_ms, 90) == pytest.approx(o["p90_itl_ms"], abs=2e-3)
        # kept as the file printed them: e2e_latency → e2el, p95 in extra
        assert r.run["p99_e2el_ms"] == o["p99_e2e_latency_ms"]
        assert r.run["p90_tpot_ms"] == o["p90_tpot_ms"]
        assert json.loads(r.run["extra"])["p95_ttft_ms"] == o["p95_ttft_ms"]
    (b,) = loadtest.read_runs(SG_BASE)[:1]
    assert b.run["accept_len"] is None                # accept_length null without speculation


def test_sglang_percentiles_goodput_and_verdict_from_the_fixture():
    r = A.latency(SG_SPEC, SG_BASE, slo=SLO, resamples=300)
    assert [p.load for p in r.points] == [2.0, 6.0]
    for p, (so, bo) in zip(r.points, zip(_lines(SG_SPEC), _lines(SG_BASE))):
        for arm, o in ((p.spec, so), (p.baseline, bo)):
            ok = np.array([not e for e in o["errors"]])
            ttft = np.array(o["ttfts"])[ok] * 1000
            e2el = ttft + np.array([sum(g) for g, k in zip(o["itls"], ok) if k]) * 1000
            tpot = (e2el - ttft) / (np.array(o["output_lens"])[ok] - 1)
            for q, name in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
                assert arm.quantiles["ttft"][name].estimate == pytest.approx(
                    np.quantile(ttft, q))
                assert arm.quantiles["tpot"][name].estimate == pytest.approx(
                    np.quantile(tpot, q))
            good = int(((ttft <= 2000) & (tpot <= 50)).sum())
            assert arm.sent == 50 and arm.completed == ok.sum()
            assert arm.goodput.estimate == pytest.approx(good / o["duration"])
            assert arm.per_stream_tok_s.estimate == pytest.approx(1000 / np.median(tpot))
    assert r.points[0].stream_ratio.estimate > 1 > r.points[1].stream_ratio.estimate


def test_sglang_without_output_details_inf_rate_and_trace(tmp_path):
    o = _lines(SG_SPEC)[0]
    for k in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
        del o[k]
    o["request_rate"], o["max_concurrency"] = float("inf"), 16
    S.write_sglang(tmp_path / "s.jsonl", [o])              # json.dumps writes Infinity
    assert "Infinity" in (tmp_path / "s.jsonl").read_text()
    (r,) = loadtest.read_runs(str(tmp_path / "s.jsonl"))
    assert (r.load, r.run["load_kind"], r.run["request_rate"]) == (16.0, "concurrency", np.inf)
    assert not r.detailed and "--output-details" in r.notes[0] and r.run["failed"] is None
    assert r.run["p99_ttft_ms"] == o["p99_ttft_ms"]
    o["request_rate"] = "trace"
    with pytest.raises(EaglelogError, match="trace replay"):
        loadtest.from_result(o, "t.jsonl")


# ------------------------------------------------------------------ aiperf

@pytest.mark.parametrize("which", ["records", "summary", "directory"])
def test_aiperf_run_reads_as_aiperf_computed_it(which):
    d = FIX / "aiperf" / "spec-6qps"
    path = {"records": d / "profile_export.jsonl", "summary": d / "profile_export_aiperf.json",
            "directory": d}[which]
    (r,) = loadtest.read_runs(str(path))
    summ = json.loads((d / "profile_export_aiperf.json").read_text())
    recs = [x for x in _records(d) if x["metadata"]["benchmark_phase"] == "profiling"]
    assert r.detailed and (r.load, r.run["load_kind"], r.run["tool"]) == (6.0, "rate", "aiperf")
    assert r.run["duration_s"] == summ["benchmark_duration"]["avg"]
    assert r.run["model"] == "synthetic/model" and r.run["run"] == "synthetic-spec"
    assert any("2 warmup record(s) left out" in n for n in r.notes)
    req = r.requests
    ok = np.array(["error" not in x for x in recs])
    assert len(req) == 50 and list(req["ok"]) == list(ok)
    assert ok.sum() == summ["request_count"]["avg"] == r.run["completed"]
    assert r.run["failed"] == summ["error_request_count"]["avg"] == (~ok).sum()
    assert set(req.loc[~ok, "error"]) == {"503: Service Unavailable"}
    good = [x["metrics"] for x in recs if "error" not in x]
    ttft = np.array([m["time_to_first_token"]["value"] for m in good])
    tpot = np.array([m["inter_token_latency"]["value"] for m in good])
    gaps = np.concatenate([m["inter_chunk_latency"]["value"] for m in good])
    np.testing.assert_allclose(req["ttft_ms"][ok], ttft)
    np.testing.assert_allclose(req["tpot_ms"][ok], tpot)       # aiperf's per-request ITL
    np.testing.assert_allclose(np.sort(r.itl_ms), np.sort(gaps))
    # the records' percentiles are the summary's own (records rounded to the µs)
    for tag, x in (("time_to_first_token", ttft), ("inter_token_latency", tpot),
                   ("inter_chunk_latency", gaps)):
        for p in (50, 90, 99):
            assert np.percentile(x, p) == pytest.approx(summ[tag][f"p{p}"], abs=1e-3)
    assert r.run["p99_ttft_ms"] == summ["time_to_first_token"]["p99"]
    assert r.run["median_e2el_ms"] == summ["request_latency"]["p50"]
    # acceptance per request, and pooled over verify steps as aiperf's token-weighted one
    acc = [x["spec_decode_acceptance"] for x in recs if "error" not in x]
    np.testing.assert_allclose(req["accept_len"][ok], [a["mean_acceptance_length"]
                                                        for a in acc])
    pooled = 1 + sum(a["num_accepted_draft_tokens"] for a in acc) / sum(
        a["num_spec_steps"] for a in acc)
    assert r.run["accept_len"] == pytest.approx(pooled)
    assert pooled == pytest.approx(
        summ["spec_decode_token_weighted_acceptance_length"]["avg"], abs=1e-6)


def test_aiperf_goodput_and_verdict_from_the_fixture():
    spec = [str(FIX / "aiperf" / f"spec-{x}qps") for x in (2, 6)]
    base = [str(FIX / "aiperf" / f"base-{x}qps" / "profile_export.jsonl") for x in (2, 6)]
    r = A.latency(spec, base, slo=SLO, resamples=300)
    assert [p.load for p in r.points] == [2.0, 6.0]
    for p in r.points:
        for arm, name in ((p.spec, "spec"), (p.baseline, "base")):
            d = FIX / "aiperf" / f"{name}-{p.load:g}qps"
            summ = json.loads((d / "profile_export_aiperf.json").read_text())
            recs = [x for x in _records(d) if x["metadata"]["benchmark_phase"] == "profiling"]
            good = [x["metrics"] for x in recs if "error" not in x]
            ttft = np.array([m["time_to_first_token"]["value"] for m in good])
            tpot = np.array([m["inter_token_latency"]["value"] for m in good])
            k = int(((ttft <= 2000) & (tpot <= 50)).sum())
            assert arm.sent == len(recs) == 50
            assert arm.goodput.estimate == pytest.approx(k / summ["benchmark_duration"]["avg"])
            assert arm.quantiles["ttft"]["p90"].estimate == pytest.approx(
                np.quantile(ttft, 0.9))
            assert arm.output_tok_s == pytest.approx(summ["total_osl"]["avg"] /
                                                     summ["benchmark_duration"]["avg"])
    assert r.points[0].spec.accept_len > 1 and r.points[0].baseline.accept_len is None


def test_aiperf_pairs_summary_and_records_and_reads_a_run_once(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(FIX / "aiperf" / "base-2qps", d)
    runs = loadtest.read([d / "profile_export_aiperf.json", d / "profile_export.jsonl"])
    assert len(runs) == 1 and any("read once" in n for n in runs[0].notes)
    (d / "profile_export_aiperf.json").rename(d / "elsewhere.json")
    with pytest.raises(EaglelogError) as e:
        loadtest.read_runs(str(d / "profile_export.jsonl"))
    assert str(e.value).startswith(str(d / "profile_export.jsonl")) and \
        "profile_export_aiperf.json is not beside it" in str(e.value)
    (d / "elsewhere.json").rename(d / "summary_only.json")        # no summary_only.jsonl
    (r,) = loadtest.read_runs(str(d / "summary_only.json"))
    assert not r.detailed and "profile_export.jsonl" in r.notes[0]
    assert r.run["median_ttft_ms"] is not None
    # --profile-export-prefix: <prefix>.json ↔ <prefix>.jsonl
    shutil.copy(d / "profile_export.jsonl", d / "summary_only.jsonl")
    (r,) = loadtest.read_runs(str(d / "summary_only.json"))
    assert r.detailed and len(r.requests) == 50


def _summary(cfg):
    return {"benchmark_duration": {"unit": "sec", "avg": 10.0},
            "request_count": {"unit": "requests", "avg": 5.0},
            "time_to_first_token": {"unit": "ms", "avg": 100.0, "p50": 90.0, "p99": 300.0},
            "input_config": cfg}


def test_aiperf_load_point_in_both_config_shapes():
    # 0.13: phases; earlier releases: loadgen (aiperf's docs/tutorials/working-with-profile-
    # exports.md: "loadgen": {"concurrency": 100, "request_rate_mode": "concurrency_burst"})
    cases = [({"phases": [{"name": "warmup", "kind": "warmup", "type": "concurrency",
                           "concurrency": 2},
                          {"name": "profiling", "kind": "profiling", "type": "concurrency",
                           "concurrency": 32}]}, (32.0, "concurrency")),
             ({"phases": [{"name": "profiling", "type": "poisson", "rate": 4.5,
                           "concurrency": 64}]}, (4.5, "rate")),
             ({"phases": [{"name": "profiling", "type": "concurrency"}]}, (1.0, "concurrency")),
             ({"loadgen": {"concurrency": 100, "request_rate_mode": "concurrency_burst"}},
              (100.0, "concurrency")),
             ({"loadgen": {"request_rate": 8, "request_count": 100}}, (8.0, "rate"))]
    for cfg, want in cases:
        r = loadtest.from_result(_summary(cfg), "p.json")
        assert (r.load, r.run["load_kind"]) == want and not r.detailed
        assert r.run["p99_ttft_ms"] == 300.0 and r.run["median_ttft_ms"] == 90.0


@pytest.mark.parametrize("cfg,words", [
    ({"phases": [{"name": "profiling", "type": "poisson", "rate": 4, "rate_ramp": 30}]},
     "ramped run"),
    ({"phases": [{"name": "a", "kind": "profiling", "type": "poisson", "rate": 2},
                 {"name": "b", "kind": "profiling", "type": "poisson", "rate": 4}]},
     "2 profiling phases"),
    ({"phases": [{"name": "profiling", "type": "fixed_schedule"}]}, "replayed schedule"),
    ({"loadgen": {"concurrency": -3}}, "bad value"),
    (None, "no 'input_config'"),
])
def test_aiperf_without_one_load_point_is_one_line(cfg, words):
    with pytest.raises(EaglelogError) as e:
        loadtest.from_result(_summary(cfg), "p.json")
    assert words in str(e.value) and str(e.value).startswith("p.json:1") and \
        "\n" not in str(e.value)


def test_aiperf_units_are_converted():
    s = _summary({"loadgen": {"concurrency": 4}})
    s["time_to_first_token"] = {"unit": "sec", "avg": 0.1, "p50": 0.09, "p99": 0.3}
    s["benchmark_duration"] = {"unit": "ms", "avg": 10_000.0}
    r = loadtest.from_result(s, "p.json")
    assert r.run["p99_ttft_ms"] == pytest.approx(300.0) and r.run["duration_s"] == 10.0
    s["time_to_first_token"]["unit"] = "fortnights"
    with pytest.raises(EaglelogError, match="unknown time unit"):
        loadtest.from_result(s, "p.json")


def test_aiperf_record_helpers():
    rec = {"metadata": {"benchmark_phase": "profiling"}, "metrics": {}}
    assert aiperf.is_record(rec) and not aiperf.is_summary(rec)
    assert aiperf.is_summary(_summary({})) and not aiperf.is_record(_summary({}))
    assert loadtest.tool_of({"duration": 1, "completed": 1, "mean_e2el_ms": 1}) == "vllm"
    assert loadtest.tool_of({"duration": 1, "completed": 1, "mean_e2e_latency_ms": 1}) == \
        "sglang"


# ------------------------------------------------------------------ none of them, CLI

@pytest.mark.parametrize("text,where", [
    ('{"foo": 1}', ":1: none of the load-test results eaglelog reads"),
    ('{"metadata": {}, "metrics": {}}\n{"foo": 1}\n', ":2: not an aiperf record"),
    ('{"metadata": {"benchmark_phase": "profiling"}, "metrics": {"time_to_first_token": '
     '{"value": "soon", "unit": "ms"}}}\n', "bad value 'soon' for 'time_to_first_token'"),
])
def test_unknown_json_is_one_error_naming_the_file(tmp_path, text, where):
    p = tmp_path / "x.json"
    p.write_text(text)
    if "metadata" in text:                       # records need their summary beside them
        (tmp_path / "x.json").rename(tmp_path / "x.jsonl")
        (tmp_path / "x.json").write_text(json.dumps(_summary({"loadgen": {"concurrency": 2}})))
        p = tmp_path / "x.jsonl"
    with pytest.raises(EaglelogError) as e:
        loadtest.read_runs(str(p))
    msg = str(e.value)
    assert where in msg and "\n" not in msg and msg.startswith(str(p))


def test_cli_reads_sglang_and_aiperf():
    res = CliRunner().invoke(main, ["latency", SG_SPEC, "--baseline", SG_BASE, "--slo", SLO,
                                    "-f", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert [p["load"] for p in d["points"]] == [2.0, 6.0]
    assert d["points"][0]["spec"]["accept_len"] == 2.5
    res = CliRunner().invoke(main, ["latency", str(FIX / "aiperf" / "spec-2qps"),
                                    str(FIX / "aiperf" / "spec-6qps"), "--baseline",
                                    str(FIX / "aiperf" / "base-2qps"),
                                    str(FIX / "aiperf" / "base-6qps")])
    assert res.exit_code == 0, res.output
    assert "2 req/s: speculation:" in res.stdout and "warmup record" in res.stderr
    res = CliRunner().invoke(main, ["latency", str(FIX), "--baseline", SG_BASE])
    assert res.exit_code == 1 and "without profile_export_aiperf.json" in res.stderr
