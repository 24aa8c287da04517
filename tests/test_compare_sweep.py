"""`eaglelog compare`, `sweep` and `export`."""
import importlib.util
import json

import pandas as pd
import pytest

from conftest import ROOT, SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"
TWO = SAMPLES / "eagle3_2step.log"
SWEEP = sorted((SAMPLES / "sweep").glob("*.log"))


def make_samples():
    spec = importlib.util.spec_from_file_location("make_samples",
                                                  ROOT / "sample_logs" / "make_samples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def metrics_of(run, *args):
    r = run("-q", "compare", "-f", "json", *args)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_a_log_compared_with_itself_is_not_significant_anywhere(run):
    d = metrics_of(run, FIVE, FIVE)
    assert len(d["metrics"]) == 9
    for m in d["metrics"]:
        assert m["verdict"] == "not significant" and m["significant"] is False
        assert m["ratio"] == 1.0 and m["p_value"] == 1.0
    assert d["config_diff"] == {str(FIVE): {}} and d["warnings"] == []


def test_swapping_the_logs_inverts_every_ratio(run):
    ab = {m["metric"]: m for m in metrics_of(run, FIVE, TWO)["metrics"]}
    ba = {m["metric"]: m for m in metrics_of(run, TWO, FIVE)["metrics"]}
    assert set(ab) == set(ba)
    for k, m in ab.items():
        if m["ratio"] is None:
            continue
        assert ba[k]["ratio"] == pytest.approx(1 / m["ratio"], rel=1e-12)
        assert ba[k]["ratio_ci_low"] == pytest.approx(1 / m["ratio_ci_high"], rel=1e-9)
        assert ba[k]["ratio_ci_high"] == pytest.approx(1 / m["ratio_ci_low"], rel=1e-9)
        assert ba[k]["p_value"] == pytest.approx(m["p_value"], rel=1e-9, abs=1e-300)


def test_a_27_percent_slower_verify_is_found(run, tmp_path):
    ms = make_samples()
    base = {"Draft steps": 0.95, "Target verify": 20.0, "Draft re-extend": 0.29,
            "Other overhead": 0.0}
    slow = dict(base, **{"Target verify": 20.0 * 1.27})
    spec = {"algorithm": "EAGLE3", "draft": "/d", "steps": 5}
    for name, ph, seed in (("a.log", base, 1), ("b.log", slow, 2)):
        ms.simulate(name, seed=seed, spec=spec, cycle_ms=sum(ph.values()), phases=ph,
                    accept_dist=(0.2, 0.4, 0.3, 0.1), prof_accept=1.14, requests=16,
                    out_tokens=(160, 320), prof_prefix=False, port=1, out_dir=str(tmp_path))
    d = metrics_of(run, tmp_path / "a.log", tmp_path / "b.log")
    m = {x["metric"]: x for x in d["metrics"]}["phase:Target verify"]
    assert m["significant"] and m["p_value"] < 1e-6
    assert m["ratio_ci_low"] <= 1.27 <= m["ratio_ci_high"]
    assert m["ratio"] == pytest.approx(1.27, abs=0.01)
    assert m["verdict"] == "1.27x slower" and m["worse"] is True
    cyc = {x["metric"]: x for x in d["metrics"]}["cycle_ms"]
    assert cyc["verdict"].endswith("x slower")
    acc = {x["metric"]: x for x in d["metrics"]}["accept_len"]
    assert acc["ratio_ci_low"] <= 1 <= acc["ratio_ci_high"]  # same draft: no real change


def test_human_output_and_config_diff(run):
    out = run("-q", "compare", FIVE, TWO).stdout
    assert out.startswith(f"reference: {FIVE}   (95% intervals; Welch's t-test on the log scale)")
    assert f"{TWO} vs reference" in out
    assert "cycle time (cycle_ms)                         27.28 ± 0.032 ms" in out
    assert "1.05x faster" in out
    assert "accept length 1.15x lower" in out
    assert "config: speculative_num_draft_tokens 6 → 3; speculative_num_steps 5 → 2" in out


def test_formats_csv_markdown_jsonl(run):
    csv = pd.read_csv(pd.io.common.StringIO(run("-q", "compare", "-f", "csv", FIVE, TWO).stdout))
    assert list(csv.columns[:4]) == ["metric", "label", "unit", "better"] and len(csv) == 9
    md = run("-q", "compare", "-f", "markdown", FIVE, TWO).stdout.splitlines()
    assert md[0].startswith("| metric") and len(md) == 11
    jl = run("-q", "compare", "-f", "jsonl", FIVE, TWO).stdout.splitlines()
    assert len(jl) == 9 and json.loads(jl[0])["metric"] == "cycle_ms"


def test_mann_whitney_and_min_effect(run):
    d = metrics_of(run, "--test", "mannwhitney", FIVE, TWO)
    assert d["test"] == "mannwhitney"
    m = {x["metric"]: x for x in d["metrics"]}
    assert m["accept_len"]["test"] == "mannwhitney" and m["accept_len"]["p_value"] < 0.01
    d = metrics_of(run, "--min-effect", "10", FIVE, TWO)
    m = {x["metric"]: x for x in d["metrics"]}
    assert m["cycle_ms"]["significant"] and not m["cycle_ms"]["practical"]
    assert m["cycle_ms"]["verdict"] == "not significant in practice (below --min-effect 10.0%)"
    assert m["accept_len"]["practical"]


def test_fail_on_regression(run):
    # 2-step vs 5-step: faster cycle (better) but lower accept length (worse)
    assert run("-q", "compare", "--fail-on-regression", "cycle_ms", FIVE, TWO).exit_code == 0
    assert run("-q", "compare", "--fail-on-regression", "accept_len", FIVE, TWO).exit_code == 3
    assert run("-q", "compare", FIVE, TWO, "--fail-on-regression").exit_code == 3
    assert run("-q", "compare", "--fail-on-regression", "any", FIVE, TWO).exit_code == 3
    r = run("compare", "--fail-on-regression", "accept_len", FIVE, TWO)   # says what regressed
    assert r.exit_code == 3 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("eaglelog: regression: ") and \
        "accept_len 2.286 → 1.987 tokens/verify" in r.stderr
    assert run("-q", "compare", FIVE, FIVE, "--fail-on-regression").exit_code == 0
    r = run("-q", "compare", "--fail-on-regression", FIVE, TWO, FIVE)
    assert r.exit_code == 2 and "put the option after the logs" in r.stderr
    r = run("-q", "compare", "--fail-on-regression", FIVE, TWO)
    assert r.exit_code == 2 and "put the option after the logs" in r.stderr
    r = run("-q", "compare", "--fail-on-regression", "nope", FIVE, TWO)
    assert r.exit_code == 2 and "'nope' is not a compared metric" in r.stderr


def test_with_a_baseline_breakeven_and_speedup_are_compared(run):
    m = {x["metric"]: x for x in
         metrics_of(run, "--baseline-toks", "90", FIVE, TWO)["metrics"]}
    assert m["speedup"]["verdict"] == "speedup 1.09x lower"
    assert m["breakeven_accept_len"]["ratio"] == pytest.approx(25.9042 / 27.2802, rel=1e-4)


def test_errors(run, write):
    r = run("compare", FIVE)
    assert r.exit_code == 2 and "compare needs at least two runs" in r.stderr
    base = run("compare", FIVE, SAMPLES / "baseline.log")
    assert base.exit_code == 0  # common metrics: decode throughput and nothing else…
    m = json.loads(run("-q", "compare", "-f", "json", FIVE, SAMPLES / "baseline.log").stdout)
    assert [x["metric"] for x in m["metrics"]] == ["gen_throughput"]
    only_prof = write("p.log", "EAGLE3_PROF (100 cycles, 114 tok, no sync)\n  TOTAL: 27.28 "
                               "ms/cyc\n  Accept len: 1.14\n  Eff tok/s: 41.8\n")
    r = run("compare", only_prof, SAMPLES / "baseline.log")
    assert r.exit_code == 1 and "have no metric in common" in r.stderr
    exp = json.loads(run_export(run, FIVE, write))
    exp["engine"] = "vllm"
    other = write("vllm.json", json.dumps(exp))
    r = run("compare", FIVE, other)
    assert r.exit_code == 0           # allowed (issue 7), but said on stderr
    assert "runs of different engines (vllm vs sglang)" in r.stderr


def run_export(run, log, write):
    import tempfile
    import os
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    r = run("-q", "export", log, "-o", path)
    assert r.exit_code == 0, r.stderr
    with open(path) as f:
        return f.read()


def test_an_export_is_as_good_as_the_log(run, write):
    text = run_export(run, FIVE, write)
    d = json.loads(text)
    assert d["eaglelog_export"] == 1 and d["engine"] == "sglang"
    assert set(d["metrics"]) >= {"cycle_ms", "accept_len", "gen_throughput"}
    assert len(d["metrics"]["accept_len"]["values"]) == 106
    assert len(text) < 60_000
    saved = write("five.json", text)
    from_log = metrics_of(run, FIVE, TWO)
    from_export = metrics_of(run, saved, TWO)
    assert [m["ratio"] for m in from_export["metrics"]] == \
        [m["ratio"] for m in from_log["metrics"]]
    assert from_export["reference"] == f"{saved} (export of {FIVE})"


def test_sweep_sample(run):
    d = json.loads(run("-q", "sweep", "--baseline-toks", "90", "-f", "json", *SWEEP).stdout)
    assert d["keys"] == ["speculative_num_steps", "speculative_num_draft_tokens"]
    rows = d["rows"]
    assert [r["config"]["speculative_num_steps"] for r in rows] == [7, 5, 3, 2, 1]
    assert [r["mark"] for r in rows] == ["best", "tied", "", "", ""]
    assert [r["verdict"] for r in rows] == ["above", "above", "inconclusive", "below", "below"]
    effs = [r["eff_tok_s"]["estimate"] for r in rows]
    assert effs == sorted(effs, reverse=True)
    # eff tok/s = 1000 × accept len / cycle ms
    r0 = rows[0]
    assert r0["eff_tok_s"]["estimate"] == pytest.approx(
        1000 * r0["accept_len"]["estimate"] / r0["cycle_ms"]["estimate"], rel=1e-9)
    # cycle times follow the simulation: 0.19 S + 25.0 + 0.21 (S + 1) + 0.28 ms
    for r in rows:
        s = r["config"]["speculative_num_steps"]
        assert r["cycle_ms"]["estimate"] == pytest.approx(0.19 * s + 25.21 + 0.21 * s + 0.28,
                                                          abs=0.02)


def test_sweep_key_choice_and_human(run):
    out = run("-q", "sweep", "--key", "speculative_num_steps", *SWEEP).stdout.splitlines()
    assert out[0] == "sweep of 5 runs, sorted by effective tok/s (95% intervals)"
    assert out[1].split()[:3] == ["speculative_num_steps", "cycle", "ms"]
    assert out[3].split()[0] == "7" and "best" in out[3]
    r = run("-q", "sweep", "--key", "nope", *SWEEP)
    assert r.exit_code == 1 and "--key nope: not in any server_args line" in r.stderr
    r = run("-q", "sweep", FIVE)
    assert r.exit_code == 1 and "sweep needs at least two runs" in r.stderr
    csv = pd.read_csv(pd.io.common.StringIO(run("-q", "sweep", "-f", "csv", *SWEEP).stdout))
    assert csv.speculative_num_steps.tolist() == [7, 5, 3, 2, 1]


def test_not_comparable_runs_are_warned_about(run):
    r = run("compare", FIVE, SAMPLES / "batch_eagle3.log")
    assert r.exit_code == 0
    assert "different batch sizes (#running-req 1–32 vs 1)" in r.stderr
    d = json.loads(run("-q", "compare", "-f", "json", FIVE, SAMPLES / "batch_eagle3.log").stdout)
    assert any("different batch sizes" in w for w in d["warnings"])


def test_the_shared_baseline_uncertainty_cancels(run):
    sweep = SAMPLES / "sweep"
    a = metrics_of(run, "--baseline-toks", "90", sweep / "steps7.log", sweep / "steps3.log")
    b = metrics_of(run, "--baseline-toks", "90±20", sweep / "steps7.log", sweep / "steps3.log")
    for name in ("speedup", "breakeven_accept_len"):
        ma = {m["metric"]: m for m in a["metrics"]}[name]
        mb = {m["metric"]: m for m in b["metrics"]}[name]
        assert (mb["ratio_ci_low"], mb["ratio_ci_high"]) == pytest.approx(
            (ma["ratio_ci_low"], ma["ratio_ci_high"]), rel=1e-9)
        assert mb["significant"]
    assert any("cancels" in n for n in b["notes"])


def test_one_log_with_two_startups_can_be_compared(run, tmp_path):
    two = tmp_path / "two.log"
    two.write_bytes(FIVE.read_bytes() + TWO.read_bytes())
    d = metrics_of(run, two)
    assert d["reference"] == f"{two} [start-up 1 at line 3]"
    assert d["runs"] == [f"{two} [start-up 2 at line 615]"]


def test_exports_get_breakeven_and_speedup_and_bad_exports_fail_cleanly(run, write):
    text = run_export(run, FIVE, write)
    saved = write("five.json", text)
    d = metrics_of(run, "--baseline-toks", "90", saved, TWO)
    names = {m["metric"] for m in d["metrics"]}
    assert {"speedup", "breakeven_accept_len"} <= names
    assert d["reference"] == f"{saved} (export of {FIVE})"
    bad = write("bad.json", '{"eaglelog_export": 1, "source": "x"}')
    r = run("compare", bad, FIVE)
    assert r.exit_code == 1 and "not a valid eaglelog export" in r.stderr


def test_mann_whitney_is_not_fooled_by_float_noise(run):
    sweep = SAMPLES / "sweep"
    d = metrics_of(run, "--test", "mannwhitney", sweep / "steps3.log", sweep / "steps5.log")
    m = {x["metric"]: x for x in d["metrics"]}["phase:Draft re-extend"]
    assert m["p_value"] == 1.0 and m["verdict"] == "not significant"


def test_sweep_keep_going_and_batch_size_note(run):
    d = json.loads(run("-q", "sweep", "--keep-going", "-f", "json", SWEEP[0],
                       SAMPLES / "batch_eagle3.log", SAMPLES / "baseline.log").stdout)
    assert len(d["rows"]) == 2
    assert any(n.startswith("left out: ") and "baseline.log" in n for n in d["notes"])
    assert any("different batch sizes" in n for n in d["notes"])
    r = run("-q", "sweep", SWEEP[0], SAMPLES / "baseline.log")
    assert r.exit_code == 1 and "nothing to take a cycle time from" in r.stderr
