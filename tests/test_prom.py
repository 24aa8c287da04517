"""A real Prometheus server (tests/promserver.py) scraping a real exporter process
(tests/exporter.py) that replays simulated SGLang and vLLM runs SPEED times faster than real
time: eaglelog's answers from Prometheus are its answers from the log of the same run.

Every rate read from Prometheus is SPEED times the simulated one, so the baseline is stated as
SPEED × 90 tok/s for them and 90 tok/s for the log: speedups, accept lengths and break-evens are
then the same quantities (cycle times are SPEED times shorter)."""
from __future__ import annotations

import json
import os
import sys

import pytest
from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import exporter as X  # noqa: E402
import promserver as P  # noqa: E402

import eaglelog  # noqa: E402
from eaglelog.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return P.shared_env(str(tmp_path_factory.mktemp("prom")))


@pytest.fixture(scope="module")
def ref_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("log") / "server.log"
    path.write_text(X.Timeline([P.reference_phase()]).logs[0])
    return str(path)


def prom_spec(env, job):
    """The whole replay of the reference runs, whenever the test runs."""
    until = env["t_end"] + 1.0
    since = until - env["t0"] + 2.0
    return f"prom+{env['prom'].url}?match=job%3D%22{job}%22&since={since:.3f}s&until={until:.3f}"


def run_json(args):
    r = CliRunner().invoke(main, args + ["-f", "json"])
    assert r.exit_code in (0, 1), (r.exit_code, r.stdout, r.stderr)
    return json.loads(r.stdout), r


def source_of(env, port):
    return f"prom+{env['prom'].url} instance=127.0.0.1:{port}"


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_breakeven_and_summary_from_prometheus_agree_with_the_log(env, ref_log, engine):
    base = str(90 * P.SPEED)
    got, r = run_json(["breakeven", "--baseline-toks", base, "--no-cache", prom_spec(env,
                                                                                   "reference")])
    runs = {x["source"]: x for x in (got if isinstance(got, list) else got.get("runs", [got]))}
    m = runs[source_of(env, env["ports"][engine])]
    want, _ = run_json(["breakeven", "--baseline-toks", "90", "--no-cache", ref_log])
    w = want if "speedup" in want else want["runs"][0]
    # SGLang's accept length from its counters and the #running-req gauge, vLLM's from its
    # exact counters; the log's from its printed windows: within the resolution measured in
    # docs/formats-metrics.md §6 (0.4 % and 1 % at 5 s windows), well inside the intervals
    assert m["accept_len"]["estimate"] == pytest.approx(w["accept_len"]["estimate"], rel=0.01)
    assert m["speedup"]["estimate"] == pytest.approx(w["speedup"]["estimate"], rel=0.025)
    assert m["breakeven_accept_len"]["estimate"] == pytest.approx(
        w["breakeven_accept_len"]["estimate"], rel=0.025)
    assert m["cycle_ms"]["estimate"] * P.SPEED == pytest.approx(w["cycle_ms"]["estimate"],
                                                               rel=0.025)
    assert m["verdict"] == w["verdict"] == "above"
    # summary reads the same tables: its accept length is breakeven's
    s, _ = run_json(["summary", "--baseline-toks", base, "--no-cache",
                     prom_spec(env, "reference")])
    srun = {x["source"]: x for x in (s if isinstance(s, list) else s.get("runs", [s]))}
    sm = srun[source_of(env, env["ports"][engine])]
    assert json.dumps(sm).count(f"{m['accept_len']['estimate']:.6g}"[:6]) >= 1


def test_vllm_windows_from_prometheus_are_the_counters_exactly(env):
    """Every vLLM window's accept length and per-position rates are the exact counter
    differences; summed over the run they give the simulated truth's accept length."""
    log = eaglelog.parse(prom_spec(env, "reference"))
    src = source_of(env, env["ports"]["vllm"])
    spec = log.vllm_spec[log.vllm_spec["source"] == src]
    assert len(spec) > 40
    acc, drafts = spec["window_accepted"].sum(), spec["drafts"].sum()
    tl = X.Timeline([P.reference_phase()])
    end = tl.counters(float("inf"))
    assert acc == end["acc"] and drafts == end["b"]           # every token counted once
    for pp, a in zip(spec["per_position"].dropna(), spec["accept_len"].dropna()):
        assert sum(json.loads(pp)) == pytest.approx(a - 1, abs=1e-5)
    truth_tau = tl.truths[0].sums.metrics().tau
    assert 1 + acc / drafts == pytest.approx(truth_tau, rel=0.002)  # tail after the last line


def test_broken_instances_one_line_each_and_the_others_answered(env):
    r = CliRunner().invoke(main, ["summary", "--no-cache",
                                                  prom_spec(env, "broken"),
                                                  prom_spec(env, "reference")])
    assert r.exit_code == 1                        # an input failed, the others answered
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    errs = [line for line in r.stderr.splitlines() if "error:" in line]
    down = [e for e in errs if f"127.0.0.1:{env['ports']['down']}" in e]
    empty = [e for e in errs if f"127.0.0.1:{env['ports']['empty']}" in e]
    assert len(down) == 1 and "up == 0" in down[0]
    assert len(empty) == 1 and "--enable-metrics" in empty[0]
    for eng in ("sglang", "vllm"):
        assert source_of(env, env["ports"][eng]) in r.stdout


def test_prometheus_errors_are_one_line(env):
    runner = CliRunner()
    bad = runner.invoke(main, ["summary", "--no-cache", "--match", 'job=~"(unclosed"',
                               f"prom+{env['prom'].url}"])
    assert bad.exit_code == 1 and bad.stderr.count("\n") == 1, bad.stderr
    assert "Prometheus answered 400: bad_data" in bad.stderr
    nothing = runner.invoke(main, ["summary", "--no-cache", "--match", 'job="nosuchjob"',
                                   f"prom+{env['prom'].url}"])
    assert nothing.exit_code == 1 and "no SGLang or vLLM series match" in nothing.stderr
    down = runner.invoke(main, ["summary", "--no-cache", f"prom+http://127.0.0.1:{P.free_port()}"])
    assert down.exit_code == 1 and "connection refused" in down.stderr
    assert "Traceback" not in bad.stderr + nothing.stderr + down.stderr


def test_generated_rules_compute_eaglelogs_accept_length(env):
    """The recording rule Prometheus evaluated equals eaglelog's accept length over the same
    30 s of samples (vLLM: the ratio of the counters' increments, rate()'s extrapolation
    cancels); the rules file passes promtool."""
    import subprocess
    rules = os.path.join(os.path.dirname(env["prom"].root), "rules.yml")
    assert subprocess.run(["promtool", "check", "rules", rules], capture_output=True).returncode \
        == 0
    mid = env["t0"] + 0.6 * (env["t_end"] - env["t0"])
    rec = env["prom"].query('eaglelog:vllm_accept_len:30s{job="reference"}[3s]', at=mid)
    assert rec, "the rule recorded nothing"
    t_e, value = rec[0]["values"][-1]
    log = eaglelog.parse(f"prom+{env['prom'].url}?match=job%3D%22reference%22&since=30s"
                         f"&until={t_e}")
    dec = log.decode[log.decode["source"] == source_of(env, env["ports"]["vllm"])]
    w, a = dec["drafts"].to_numpy(dtype=float), dec["accept_len"].to_numpy(dtype=float)
    ok = w > 0
    assert ok.sum() >= 20                      # the windows of the replay in those 30 s
    pooled = float((w[ok] * a[ok]).sum() / w[ok].sum())
    assert float(value) == pytest.approx(pooled, rel=1e-9)


def test_export_prometheus_rules_cli(tmp_path):
    out = tmp_path / "spec-rules.yml"
    r = CliRunner().invoke(main, ["export", "--prometheus-rules",
                                                  "--baseline-toks", "90", "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    text = out.read_text()
    assert "EagleSpeculationBelowBreakEven" in text and "EagleAcceptLengthLow" in text
    assert "/ 90" in text
    dash = json.loads((tmp_path / "spec-rules.grafana.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert len(exprs) == 8 and any("spec_decode_num_drafts_total" in e for e in exprs)
    no = CliRunner().invoke(main, ["export", "--prometheus-rules", "-o",
                                                   str(out)])
    assert no.exit_code == 2 and "--baseline-toks" in no.stderr
    missing = CliRunner().invoke(main, ["export", "-o", str(out)])
    assert missing.exit_code == 2 and "LOG" in missing.stderr
