"""eaglelog requests and compare --paired (issue 18): the per-request table of every source, its
distribution, groups and outliers computed exactly on the fixtures (tests/fixtures/requests,
written by make_fixtures.py), the paired comparison, the CLI, the plot, and the simulation test
of the paired test's power and false positives (tests/requests_sim.py)."""
import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats as sps

import eaglelog
from eaglelog.analysis import requests as rq
from eaglelog.parsers.request_identity import identity_from_json, identity_from_text
from eaglelog.parsers.requests_bench import parse_vllm_response
from conftest import FIXTURES, SAMPLES

F = FIXTURES / "requests"

# sglang_text.log: (rid, line, completion, verify, category) of the requests with a verify step
TEXT = [("r01", 3, 128, 47, None), ("r02", 4, 96, 34, None), ("r04", 6, 240, 70, None),
        ("r05", 7, 60, 30, None), ("r06", 9, 180, 60, None), ("r07", 10, 33, 20, None),
        ("r08", 11, 200, 80, "chat"), ("r09", 12, 2048, 515, "coding"),
        ("r10", 13, 150, 70, "chat"), ("r11", 14, 300, 100, "coding"),
        ("r12", 15, 90, 45, "chat"), ("r14", 17, 600, 200, "coding"), ("r15", 18, 30, 12, None)]


def pooled(rows):
    return sum(c - 1 for _, _, c, v, _ in rows) / sum(v for _, _, c, v, _ in rows)


def ratio_ci(y, x, conf=0.95):
    """The ratio estimator's interval, written out: R ± t_{n−1} · sqrt(n/(n−1) Σ(y − R x)²) / Σx."""
    y, x = np.asarray(y, float), np.asarray(x, float)
    n = len(x)
    r = y.sum() / x.sum()
    se = math.sqrt(n / (n - 1) * ((y - r * x) ** 2).sum()) / x.sum()
    t = sps.t.ppf(0.5 + conf / 2, n - 1)
    return r, r - t * se, r + t * se


# ------------------------------------------------------------------ the per-request table

def test_sglang_table_every_release_and_the_first_token():
    t = rq.request_table(eaglelog.parse(F / "sglang_text.log"))
    assert len(t) == 15 and list(t.columns) == list(rq.REQUEST_COLUMN_NAMES)
    by = {r["id"]: r for r in t.to_dict("records")}
    for rid, line, c, v, cat in TEXT:
        r = by[rid]
        assert r["line_no"] == line and r["steps"] == v and r["step_tokens"] == c - 1
        assert r["tau"] == pytest.approx((c - 1) / v, abs=1e-12)       # first token excluded
        assert (r["category"] if isinstance(r["category"], str) else None) == cat
    assert by["r02"]["tau_printed"] == pytest.approx(96 / 34)          # SGLang's, first token in
    assert math.isnan(by["r03"]["tau"]) and by["r03"]["steps"] == 0   # one token: no verify
    assert math.isnan(by["r13"]["tau"]) and missing(by["r13"]["steps"])
    assert by["r10"]["label"] == "category=chat, tenant=a"
    assert not missing(by["r08"]["prompt_hash"]) and missing(by["r01"]["prompt_hash"])
    assert set(t["origin"]) == {"sglang"} and set(t["run"]) == {str(F / "sglang_text.log")}


def missing(v):
    import pandas as pd
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def test_prompt_hash_is_the_same_in_both_formats_truncated_or_not():
    long = "x" * 1500 + "middle" + "y" * 1500
    for text in ("Write a haiku about GPUs.", long, "quote ' and \" and (paren), comma"):
        shown = f"{text[:1024]!r} ... {text[-1024:]!r}" if len(text) > 2048 else repr(text)
        a = identity_from_text(f"GenerateReqInput(text={shown}, input_ids=None, "
                               "sampling_params={'stop': [')', ',']}, rid='x', "
                               "custom_labels={'category': 'chat'})")
        j = text if len(text) <= 2048 else text[:1024] + "..." + text[-1024:]
        b = identity_from_json({"text": j, "rid": "x", "custom_labels": {"category": "chat"}})
        assert a == b and len(a["prompt_hash"]) == 16
        assert a["custom_labels"] == '{"category": "chat"}'
    ids = list(range(3000))
    a = identity_from_text(f"GenerateReqInput(text=None, input_ids={ids[:1024]} ... "
                           f"{ids[-1024:]}, rid='x')")
    assert a == identity_from_json({"input_ids": ids[:1024] + ["..."] + ids[-1024:]})
    assert identity_from_text("GenerateReqInput(rid='x', stream=False)") == {}


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_identity_and_vllm_parsers_never_raise(text):
    identity_from_text(text)
    identity_from_text("GenerateReqInput(" + text)
    parse_vllm_response(text)
    parse_vllm_response('{"metrics": {"speculative_decoding": {"num_spec_steps": ' + text)


# sglang_json.log: (rid, line, completion, verify, category); j8 has one token and no spec key
JSON = [("j1", 2, 64, 25, "math"), ("j2", 3, 22, 8, None), ("j3", 4, 150, 50, "math"),
        ("j4", 5, 500, 140, "chat"), ("j5", 6, 80, 40, "chat"), ("j6", 7, 121, 40, "chat"),
        ("j7", 8, 97, 32, "math")]


def test_sglang_json_table_every_release():
    """The JSON format (v0.5.7 →) with the key sets of v0.5.7 – v0.5.10 (*_token_num), v0.5.11
    (accepted/proposed drafts) and v0.5.12 → (num_correct_drafts and aliases), and a one-token
    request of v0.5.9 → (no spec key at all)."""
    r = rq.requests(F / "sglang_json.log", by="category")
    t = r.to_frame().set_index("id")
    assert list(t.index) == [q[0] for q in JSON] + ["j8"]
    for rid, line, c, v, cat in JSON:
        row = t.loc[rid]
        assert (row["line_no"], row["steps"], row["step_tokens"]) == (line, v, c - 1)
        assert row["tau"] == pytest.approx((c - 1) / v, abs=1e-12)
        assert row["tau_printed"] == pytest.approx(c / v)
        assert (row["category"] if isinstance(row["category"], str) else None) == cat
        assert isinstance(row["prompt_hash"], str) and len(row["prompt_hash"]) == 16
    assert missing(t.loc["j8", "steps"]) and math.isnan(t.loc["j8", "tau"])
    run, = r.runs
    assert (run.requests, run.without_steps) == (8, 1)
    assert "1 with no verify step (one output token)" in " ".join(run.notes)
    assert run.overall.pooled.estimate == pytest.approx(pooled(JSON), rel=1e-12)
    g = {x.group: x for x in run.groups}
    assert {k: x.requests for k, x in g.items()} == {"chat": 3, "math": 3, "unknown": 1}
    for name in ("chat", "math"):
        assert g[name].pooled.estimate == pytest.approx(pooled([q for q in JSON
                                                                if q[4] == name]))


def _vllm_truth(path):
    """(id, spec steps, accepted) of every saved response that carries the metrics, read here."""
    out = []
    for line in path.read_text().splitlines():
        obj = json.loads(line[len("data: "):] if line.startswith("data: ") else line)
        sd = (obj.get("metrics") or {}).get("speculative_decoding")
        if sd:
            out.append((obj["id"], sd["num_spec_steps"], sd["num_accepted_draft_tokens"]))
    return out


@pytest.mark.parametrize("name", ["sglang_text.log", "sglang_json.log", "paired_ref.log",
                                  "paired_rid_ref.log", "specbench_categories.log",
                                  "eagle_categories.log", "vllm_responses.log",
                                  "specforge_results.log", "specbench_ref.jsonl"])
def test_every_source_alone_through_the_cli(run, name):
    """Each source by itself (the bench table then holds only its own columns)."""
    r = run("requests", "--no-cache", "-f", "json", "--by", "category", F / name)
    assert r.exit_code == 0, r.stderr
    j = json.loads(r.stdout)
    if name == "specforge_results.log":
        assert j["runs"] == [] and len(j["workloads"]) == 6
        return
    run_, = j["runs"]
    assert run_["overall"]["requests"] >= 3
    if name == "vllm_responses.log":
        truth = _vllm_truth(F / name)
        assert run_["requests"] == len(truth) == 3
        want = sum(s + a for _, s, a in truth) / sum(s for _, s, a in truth)
        assert run_["overall"]["pooled_accept_len"]["estimate"] == pytest.approx(want)
        assert run_["origins"] == {"vllm": 3}


def test_whole_run_benchmark_results_are_no_requests(run):
    """bench_serving --output-details keeps no per-request acceptance: a clear error that says
    what the file holds."""
    r = run("requests", "--no-cache", F / "bench_serving_details.log")
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "2 whole-run result(s) of sglang.bench_serving (line 1: accept length 3.12 " \
        "(server-lifetime))" in r.stderr and "no per-request acceptance" in r.stderr


def test_benchmark_sources_give_per_request_rows():
    log = eaglelog.parse([F / "specbench_categories.log", F / "eagle_categories.log",
                          F / "vllm_responses.log"])
    t = rq.request_table(log)
    sb = t[t["origin"] == "spec-bench"].set_index("id")
    assert sb.loc["81", "steps"] == 8 and sb.loc["81", "step_tokens"] == 24
    assert sb.loc["81", "tau"] == 3.0 and sb.loc["81", "category"] == "writing"
    assert sb.loc["201", "tau"] == pytest.approx(5 / 4)
    ea = t[t["origin"] == "eagle"].set_index("id")
    assert ea.loc["81", "tau"] == pytest.approx(340 / (60 + 42)) and ea.loc["101", "category"] \
        == "math"
    vl = t[t["origin"] == "vllm"].set_index("id")
    assert vl.loc["cmpl-1", "tau"] == pytest.approx(1 + 13 / 24)    # 1 + accepted / spec steps
    assert vl.loc["cmpl-2", "prompt_tokens"] == 300 and vl.loc["cmpl-2", "finish_reason"] == \
        "length"
    assert len(vl) == 3                                  # the response without metrics: no row


# ------------------------------------------------------------------ distribution and groups

def test_distribution_groups_and_breakeven_exactly():
    r = rq.requests(F / "sglang_text.log", by="category", breakeven=2.5)
    run, = r.runs
    assert run.requests == 15 and run.without_steps == 2
    assert "1 without verify counts" not in " ".join(run.notes)      # r13 is a one-token request
    assert "2 with no verify step (one output token)" in " ".join(run.notes)
    g = run.overall
    assert g.requests == 13 and g.steps == sum(v for _, _, c, v, _ in TEXT)
    y = [c - 1 for _, _, c, v, _ in TEXT]
    x = [v for _, _, c, v, _ in TEXT]
    est, lo, hi = ratio_ci(y, x)
    assert g.pooled.estimate == pytest.approx(pooled(TEXT), rel=1e-12) == pytest.approx(est)
    assert (g.pooled.ci_low, g.pooled.ci_high) == (pytest.approx(lo), pytest.approx(hi))
    taus = np.array([(c - 1) / v for _, _, c, v, _ in TEXT])
    assert g.mean.estimate == pytest.approx(taus.mean())
    assert g.quantiles["p50"] == pytest.approx(np.median(taus))
    assert g.quantiles["p10"] == pytest.approx(np.quantile(taus, 0.1))
    k = int((taus < 2.5).sum())
    p = k / 13
    z = sps.norm.ppf(0.975)
    c = (p + z * z / 26) / (1 + z * z / 13)
    h = z * math.sqrt(p * (1 - p) / 13 + z * z / (4 * 169)) / (1 + z * z / 13)
    assert g.below == (pytest.approx(p), pytest.approx(c - h), pytest.approx(c + h))
    groups = {x.group: x for x in run.groups}
    assert list(groups) == ["chat", "coding", "unknown"]
    for name, want in (("chat", [q for q in TEXT if q[4] == "chat"]),
                       ("coding", [q for q in TEXT if q[4] == "coding"]),
                       ("unknown", [q for q in TEXT if q[4] is None])):
        assert groups[name].requests == len(want)
        assert groups[name].pooled.estimate == pytest.approx(pooled(want), rel=1e-12)
        e = groups[name].pooled      # from 2 requests up: a t interval on n − 1 df
        assert e.sufficient == (len(want) >= 2)
        if e.sufficient:
            assert e.df == len(want) - 1 and e.ci_low < e.estimate < e.ci_high
    assert sum(c for _, _, c in run.histogram) == 13
    assert run.histogram[0][0] == 1.5 and run.histogram[-1][1] == 4.0


def test_outliers_with_line_numbers_and_the_loop_suspect():
    run = rq.requests(F / "sglang_text.log").runs[0]
    low = [(o.line_no, o.id) for o in run.outliers if o.kind == "lowest"]
    high = [(o.line_no, o.id) for o in run.outliers if o.kind == "highest"]
    order = sorted(TEXT, key=lambda q: ((q[2] - 1) / q[3], q[1]))
    assert low == [(q[1], q[0]) for q in order[:5]]
    assert high == [(q[1], q[0]) for q in order[::-1][:5]]
    loops = [o for o in run.outliers if o.kind == "loop suspect"]
    assert [(o.line_no, o.id) for o in loops] == [(12, "r09")]
    # 13 requests are too few to judge a τ_r against its peers (robust_z): the flag is the
    # physical one, all but 0.8 % of its drafts accepted over a long output
    assert run.max_accept == 4.0 and loops[0].why.startswith(
        "99.2% of its drafts accepted (τ_r of at most 4); a long output: 2,048 tokens (long "
        "here: ≥ 512), finished by length")


def test_groupings_by_finish_prompt_and_output_length_and_label():
    t = rq.requests(F / "sglang_text.log", by="finish").runs[0]
    assert [g.group for g in t.groups] == ["abort", "length", "stop"]
    assert [g.requests for g in t.groups] == [1, 2, 10]
    t = rq.requests(F / "sglang_text.log", by="prompt-len").runs[0]
    assert [g.group for g in t.groups] == ["<64", "64–127", "128–255", "256–511", "512–1023"]
    assert [g.requests for g in t.groups] == [2, 4, 3, 3, 1]
    t = rq.requests(F / "sglang_text.log", by="label").runs[0]
    assert {g.group: g.requests for g in t.groups} == {
        "category=chat": 2, "category=chat, tenant=a": 1, "category=coding": 3, "unknown": 7}
    assert rq.auto_by(eaglelog.parse(F / "sglang_text.log")) == "category"


def test_spec_bench_groups_are_pooled_over_steps():
    run = rq.requests(F / "specbench_categories.log", by="category").runs[0]
    g = {x.group: x for x in run.groups}
    assert g["writing"].pooled.estimate == pytest.approx((24 + 13) / (8 + 4))
    assert g["math_reasoning"].pooled.estimate == pytest.approx((8 + 19) / (6 + 4))
    assert run.overall.pooled.estimate == pytest.approx(69 / 26)


def test_specforge_results_are_workloads_not_requests():
    r = rq.requests(F / "specforge_results.log")
    assert r.runs == () and len(r.workloads) == 6
    w = [(x["workload"], x["accept_len"], x["spec_steps"], x["requests"]) for x in r.workloads]
    assert w == [("mtbench", 1.0, 0, 80), ("mtbench", 3.21, 3, 80), ("writing", 3.52, 3, 10),
                 ("math", 3.87, 3, 10), ("gsm8k", 3.64, 3, 200), ("gsm8k", 3.62, 3, 200)]
    assert {x["accept_len_def"] for x in r.workloads} == {"pooled-with-first-token"}


def test_no_request_is_one_clear_error():
    with pytest.raises(eaglelog.EaglelogError, match="no finished request"):
        rq.requests(SAMPLES / "batch_eagle3.log")


def test_result_objects_are_frozen_and_serialisable():
    r = rq.requests(F / "sglang_text.log", by="category", breakeven=2.5)
    json.dumps(r.to_dict(), allow_nan=False)
    f = r.to_frame()
    assert list(f.columns) == list(rq.REQUEST_COLUMN_NAMES) + ["group", "flag"]
    # each request's flag, as the outliers list gives it
    assert f.loc[f["flag"].notna(), ["line_no", "flag"]].values.tolist() == \
        [[12, "loop suspect"]]
    f.loc[0, "tau"] = 99.0
    assert r.to_frame().loc[0, "tau"] != 99.0
    with pytest.raises(Exception):
        r.by = "finish"


# ------------------------------------------------------------------ paired comparison

def test_paired_by_prompt_hash_exactly():
    p = rq.compare_paired(F / "paired_ref.log", F / "paired_new.log")
    assert p.match == "prompt" and p.by == "category"
    c = p.counts
    assert (c["matched"], c["ref_only"], c["new_only"], c["new_repeated"]) == (11, 1, 1, 1)
    assert c["unmatched_ref"] == pytest.approx(1 / 12) and c["unmatched_new"] == pytest.approx(
        1 / 12)
    ref = {"p01": 200 / 80, "p02": 150 / 60, "p03": 300 / 120, "p04": 100 / 50,
           "p05": 250 / 100, "p06": 180 / 60, "p07": 120 / 40, "p08": 240 / 80,
           "p09": 360 / 120, "p10": 90 / 30, "p11": 130 / 52}
    new = {"p01": 400 / 144, "p02": 150 / 57, "p03": 300 / 110, "p04": 100 / 46,
           "p05": 250 / 96, "p06": 180 / 64, "p07": 120 / 41, "p08": 240 / 83,
           "p09": 360 / 118, "p10": 90 / 33, "p11": 130 / 50}
    d = np.log([new[k] / ref[k] for k in ref])
    tt = sps.ttest_1samp(d, 0.0)
    assert p.ratio.estimate == pytest.approx(math.exp(d.mean()))
    assert p.p_value == pytest.approx(tt.pvalue) and p.t == pytest.approx(tt.statistic)
    lo, hi = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
    assert (p.ratio.ci_low, p.ratio.ci_high) == (pytest.approx(math.exp(lo)),
                                                 pytest.approx(math.exp(hi)))
    assert (p.wins, p.losses, p.ties) == (7, 4, 0)
    groups = {g.group: g for g in p.groups}
    assert (groups["chat"].wins, groups["chat"].losses) == (6, 0)
    assert (groups["code"].wins, groups["code"].losses) == (1, 4)
    assert [w["ratio"] for w in p.worse] == sorted(new[k] / ref[k] for k in ref
                                                   if new[k] < ref[k])
    assert p.verdict == "no detectable difference"
    pooled_new = (400 + 150 + 300 + 100 + 250 + 180 + 120 + 240 + 360 + 90 + 130) / \
        (144 + 57 + 110 + 46 + 96 + 64 + 41 + 83 + 118 + 33 + 50)
    pooled_ref = 2120 / 792
    assert p.pooled_ratio.estimate == pytest.approx(pooled_new / pooled_ref)
    assert any("unmatched: 1 of 12" in n for n in p.notes)


def test_paired_by_rid_map_and_auto_order():
    p = rq.compare_paired(F / "paired_rid_ref.log", F / "paired_rid_new.log",
                          rid_map=F / "rid_map.csv")
    assert p.match == "rid-map" and p.counts["matched"] == 11
    with pytest.raises(eaglelog.EaglelogError, match="cannot match"):
        rq.compare_paired(F / "paired_rid_ref.log", F / "paired_rid_new.log")
    q = rq.compare_paired(F / "specbench_ref.jsonl", F / "specbench_new.jsonl")
    assert q.match == "question" and q.counts["matched"] == 60
    g = {x.group: x for x in q.groups}
    assert g["translation"].verdict == "worse" and g["writing"].verdict == "better"
    adj = rq.holm([x.p_value for x in q.groups])
    assert [x.p_adjusted for x in q.groups] == pytest.approx(adj)
    same = rq.compare_paired(F / "specbench_ref.jsonl", F / "specbench_ref.jsonl")
    assert same.ratio.estimate == 1.0 and same.p_value == 1.0 and same.verdict == \
        "no detectable difference"


def test_rid_map_errors_name_file_and_line(tmp_path):
    bad = tmp_path / "map.csv"
    bad.write_text("ref,new\na1,b1\na2\n")
    with pytest.raises(eaglelog.EaglelogError, match=r"map.csv:3: a rid map line holds two"):
        rq.read_rid_map(str(bad))
    bad.write_text('{"a": 1')
    with pytest.raises(eaglelog.EaglelogError, match="not valid JSON"):
        rq.read_rid_map(str(bad))
    assert rq.read_rid_map(str(F / "rid_map.csv"))["a000p01"] == "b000p01"


def test_holm():
    assert rq.holm([0.01, 0.04, None, 0.03]) == [0.03, 0.06, None, 0.06]


# ------------------------------------------------------------------ the CLI

def test_cli_requests_table_json_csv(run):
    r = run("requests", "--no-cache", "--by", "category", "--breakeven", "2.5",
            F / "sglang_text.log")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "pooled            3.228 [2.506 … 3.951]" in out
    assert "(the first token comes from the prefill and needs no verify" in out
    assert "below break-even  46.2% [23.2% … 70.9%]" in out
    assert "12: τ_r 3.975 · r09 · 99.2% of its drafts accepted (τ_r of at most 4)" in out
    j = json.loads(run("requests", "--no-cache", "-f", "json", F / "sglang_text.log").stdout)
    assert j["runs"][0]["overall"]["requests"] == 13 and "first token" in j["definition"]
    csv = run("requests", "--no-cache", "-f", "csv", F / "sglang_text.log").stdout
    assert csv.splitlines()[0].split(",") == list(rq.REQUEST_COLUMN_NAMES) + ["group", "flag"]
    assert len(csv.splitlines()) == 16


def test_cli_requests_errors(run):
    r = run("requests", "--no-cache", SAMPLES / "batch_eagle3.log")
    assert r.exit_code == 1 and r.stderr.startswith("eaglelog: error: ") and \
        "no finished request" in r.stderr and "Traceback" not in r.stderr
    r = run("requests", "--no-cache", "--breakeven", "2", "--baseline-toks", "90",
            F / "sglang_text.log")
    assert r.exit_code == 2


def test_cli_requests_baseline_breakeven(run):
    r = run("requests", "--no-cache", "--baseline-toks", "90",
            SAMPLES / "eagle3_5step.log")
    assert r.exit_code == 0, r.stderr
    assert "of the requests have τ_r < 2.456 (eaglelog breakeven against 90 tok/s)" in r.stdout
    r = run("requests", "--no-cache", "--baseline-toks", "90", F / "specbench_new.jsonl")
    assert r.exit_code == 1 and "give it with --breakeven X" in r.stderr


def test_cli_compare_paired(run, tmp_path):
    r = run("compare", "--no-cache", "--paired", F / "specbench_ref.jsonl",
            F / "specbench_new.jsonl")
    assert r.exit_code == 0, r.stderr
    assert "matched by benchmark question id" in r.stdout
    assert "60 matched of 60" in r.stdout and "translation" in r.stdout
    j = json.loads(run("compare", "--no-cache", "--paired", "-f", "json",
                       F / "paired_ref.log", F / "paired_new.log").stdout)
    assert j["match"] == "prompt" and j["counts"]["matched"] == 11 and "t-test" in j["test"]
    r = run("compare", "--no-cache", "--paired", "--pair-by", "rid", "--rid-map",
            F / "rid_map.csv", "-f", "csv", F / "paired_rid_ref.log", F / "paired_rid_new.log")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 12
    for args in (("--paired", F / "paired_ref.log"),
                 ("--pair-by", "rid", F / "paired_ref.log", F / "paired_new.log"),
                 ("--paired", "--baseline-toks", "90", F / "paired_ref.log",
                  F / "paired_new.log")):
        assert run("compare", "--no-cache", *args).exit_code == 2
    # the gate: a changed run that accepts less on every prompt
    lines_ref, lines_new = [], []
    for q in range(12):
        lens = [3, 2, 4, 3, 2] * (2 + q % 3)
        for side, out in (("ref", lines_ref), ("new", lines_new)):
            ls = lens if side == "ref" else [max(1, x - (1 if i % 2 else 0))
                                             for i, x in enumerate(lens)]
            out.append(json.dumps({"question_id": q, "category": "c", "choices": [
                {"index": 0, "turns": ["…"], "decoding_steps": [len(ls)],
                 "new_tokens": [sum(ls)], "wall_time": [0.1], "accept_lengths": ls}]}))
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("\n".join(lines_ref) + "\n")
    b.write_text("\n".join(lines_new) + "\n")
    r = run("compare", "--no-cache", "--paired", a, b, "--fail-on-regression")
    assert r.exit_code == 3 and "regression: accept length per prompt" in r.stderr
    assert "WORSE: accept length" in r.stdout
    assert run("compare", "--no-cache", "--paired", b, a, "--fail-on-regression").exit_code == 0


def test_cli_choices_are_the_library_s():
    from eaglelog import cli
    from eaglelog.report import plot
    assert cli.REQUEST_GROUPINGS == rq.GROUPINGS and cli.PAIR_BY == rq.MATCHES
    assert cli.PLOT_KINDS == plot.KINDS


def test_plot_requests_real_render(run, tmp_path):
    pytest.importorskip("matplotlib")
    from eaglelog.report import plot
    r = rq.requests(F / "specbench_new.jsonl", by="category", breakeven=2.3)
    svg = plot.figure_svg(plot.requests_figure(r))
    for text in ("coding", "translation", "repetition-loop suspect", "break-even 2.3",
                 "τ_r against output length"):
        assert text in svg
    out = tmp_path / "r.png"
    res = run("plot", "--no-cache", "--kind", "requests", "-o", out, F / "sglang_text.log")
    assert res.exit_code == 0, res.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_readme_picture_is_what_make_figures_renders(run, tmp_path, monkeypatch):
    """docs/img/requests.png (the README's) is the output of docs/make_figures.py's 'requests'
    command, byte for byte (the rendering is deterministic)."""
    pytest.importorskip("matplotlib")
    import runpy
    from conftest import ROOT

    figures = runpy.run_path(str(ROOT / "docs" / "make_figures.py"))["FIGURES"]
    out = tmp_path / "requests.png"
    monkeypatch.chdir(ROOT)                 # the script's paths, relative: the title shows them
    res = run("plot", "--no-cache", "-q", "--kind", "requests", "-o", out, *figures["requests"])
    assert res.exit_code == 0, res.stderr
    assert out.read_bytes() == (ROOT / "docs" / "img" / "requests.png").read_bytes()


# ------------------------------------------------------------------ the simulation test

def test_simulation_paired_power_and_false_positives():
    """A 3 % per-prompt τ improvement (true geometric-mean ratio 1.030 over the questions) on
    about 70 questions: the unpaired comparisons miss it, the paired test finds it; same-truth
    pairs are rarely significant and their p-values are not too small (docs/requests.md)."""
    from requests_sim import (PAIRED, decode_accept, parsed, prompt_bank, run_lines, shift_for,
                              true_ratio)

    sc = PAIRED.replace(duration_s=25.0)
    bank = prompt_bank(sc, 300, seed=1)
    shift = shift_for(1.03, bank, sc)
    assert true_ratio(bank, sc, shift) == pytest.approx(1.03, abs=1e-9)
    m = 8
    runs = {}
    for side, s, base in (("ref", 0.0, 1000), ("new", shift, 2000)):
        for i in range(m):
            lines = run_lines(sc, base + i, bank, s)
            runs[side, i] = (rq.request_table(parsed(lines, f"{side}{i}")),
                             np.log(decode_accept(lines)))
    hits, missed_unpaired, missed_windows, ratios = 0, 0, 0, []
    for i, j in itertools.product(range(m), range(m)):            # improvement pairs
        p = rq.compare_paired(runs["ref", i][0], runs["new", j][0])
        hits += p.verdict == "better"
        matched = [bank[int(k[1:])] for k in p.to_frame()["key"]]   # the truth of these
        ratios.append(p.ratio.estimate / true_ratio(matched, sc, shift))
        missed_unpaired += not (p.unpaired["p_value"] < 0.05)
        w = sps.ttest_ind(runs["new", j][1], runs["ref", i][1], equal_var=False)
        missed_windows += not (w.pvalue < 0.05 and w.statistic > 0)
    n = m * m
    assert hits / n >= 0.80                       # the paired test detects it
    assert missed_unpaired / n >= 0.80            # the same requests, unpaired: missed
    assert missed_windows / n >= 0.60             # decode windows, naive Welch: mostly missed
    assert np.mean(ratios) == pytest.approx(1.0, abs=0.005)     # unbiased
    same = [rq.compare_paired(runs[side, i][0], runs[side, j][0]).p_value
            for side in ("ref", "new") for i, j in itertools.combinations(range(m), 2)]
    same = np.array(same)
    assert np.mean(same < 0.05) <= 0.05           # false positives on same-truth pairs
    assert np.mean(same < 0.25) <= 0.35 and np.median(same) >= 0.35   # not anti-conservative


# ----------------------------------------------------------------------------- flags

def _clean_table(name, seed, tmp_path):
    """A clean simulated run's requests with a τ_r (no request loops, none is garbled)."""
    from simlab.simulate import SCENARIOS, simulate
    path = simulate(SCENARIOS[name], seed).write(tmp_path / f"{name}{seed}.log")
    t = rq.request_table(eaglelog.parse(path, cache=False))
    return t[t["tau"].notna()].reset_index(drop=True)


def _flags(t):
    out = rq._outliers(t, t["source"].astype(str), 5, 4.0, rq.LOOP_MIN_TOKENS)
    return ([o.line_no for o in out if o.kind == "loop suspect"],
            [o.line_no for o in out if o.kind == "lowest" and o.why])


def _set(t, i, out_tokens, tau):
    t = t.copy()
    steps = int(round((out_tokens - 1) / tau))
    t.loc[i, ["output_tokens", "steps", "step_tokens"]] = [out_tokens, steps, out_tokens - 1]
    t.loc[i, "tau"] = (out_tokens - 1) / steps
    return t


@pytest.mark.parametrize("name, seed", [("continuous", 1), ("varying", 10), ("varying", 12)])
def test_a_clean_run_flags_nothing_and_a_fault_is_found(name, seed, tmp_path):
    """The runs that the old rules flagged most (top 5 % and Tukey fences: a loop suspect in
    every large run; these three also had requests at z 4.4–5.0 against a normal limit): no
    flag; one request made a loop (τ_r 3.9 of at most 4 over twice the long-output limit) or
    garbled (τ_r 1.05 at the median length) is flagged, and only it."""
    t = _clean_table(name, seed, tmp_path)
    assert _flags(t) == ([], [])
    i = len(t) // 2
    line = int(t.loc[i, "line_no"])
    long_at = max(rq.LOOP_MIN_TOKENS, 2 * float(t["output_tokens"].median()))
    assert _flags(_set(t, i, int(2 * long_at), 3.9)) == ([line], [])
    assert _flags(_set(t, i, int(t["output_tokens"].median()), 1.05)) == ([], [line])


def test_a_short_request_that_accepted_nothing_is_noise_not_garbage(tmp_path):
    """3 verifies with no draft accepted happen to (1 − 0.72)³ ≈ 2 % of short requests: judged
    against requests of its own length, not flagged; the same over 300 verifies is."""
    t = _clean_table("continuous", 0, tmp_path)
    i = int(t["steps"].astype(float).idxmin())
    line = int(t.loc[i, "line_no"])
    assert _flags(_set(t, i, 4, 1.0)) == ([], [])
    assert _flags(_set(t, i, 301, 1.0)) == ([], [line])


def test_the_flags_limits_are_bonferronis_with_a_t_tail():
    # one-sided, 5 % over n tests, Student t on 10 degrees of freedom
    for n in (1, 200, 4797):
        assert rq.z_limit(n) == pytest.approx(sps.t(10).isf(0.05 / n), rel=1e-12)
    assert rq.z_limit(1) == pytest.approx(1.8125, abs=1e-4)
    assert rq.z_limit(4797) == pytest.approx(7.4908, abs=1e-4)


def test_the_chain_logit_inverts_a_chains_tokens_per_verify():
    # 1 + p + p² + p³ at p = 0.72 is 2.6589: logit 0.72 back (with half a draft off the
    # bounds, over 10⁶ verifies the shift is below 10⁻⁶)
    tau = 1 + 0.72 + 0.72 ** 2 + 0.72 ** 3
    got = rq.chain_logit(np.array([tau]), np.array([1e6]), 3)[0]
    assert got == pytest.approx(math.log(0.72 / 0.28), abs=1e-5)
    # a request that accepted nothing, or everything, is far out but finite
    ends = rq.chain_logit(np.array([1.0, 4.0]), np.array([100.0, 100.0]), 3)
    assert np.isfinite(ends).all() and ends[0] < -5 and ends[1] > 5


def test_a_run_without_suspects_says_the_rule_it_applied(run, tmp_path):
    from simlab.simulate import SCENARIOS, simulate
    path = simulate(SCENARIOS["reference"].replace(duration_s=300), 1).write(tmp_path / "r.log")
    r = run("requests", "--no-cache", str(path))
    assert r.exit_code == 0, r.stderr
    assert ("  repetition-loop suspects: none (a long output, ≥ 512 tokens and twice the "
            "median, whose acceptance is far above that of requests of its length, or that "
            "accepted ≥ 98% of its drafts (τ_r of at most 4); docs/requests.md)") in r.stdout
    assert "garbled output?" not in r.stdout and "top 5%" not in r.stdout
