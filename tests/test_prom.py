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
    runs = {x["source"]: x for x in got["runs"]}
    m = runs[source_of(env, env["ports"][engine])]
    want, _ = run_json(["breakeven", "--baseline-toks", "90", "--no-cache", ref_log])
    (w,) = want["runs"]
    # SGLang's accept length from its counters and the #running-req gauge, vLLM's from its
    # exact counters; the log's from its printed windows: the resolution measured in
    # docs/formats-metrics.md §6 is 0.4 % and 1 % at 5 s windows, and the scrapes of a loaded
    # machine cover a slightly different span of the run (acceptance drifts over it: 1.3 %
    # seen on a CI run), so each estimate lies inside the other's interval and within 2 %
    ma, wa = m["accept_len"], w["accept_len"]
    assert ma["estimate"] == pytest.approx(wa["estimate"], rel=0.02)
    assert wa["ci_low"] <= ma["estimate"] <= wa["ci_high"]
    assert ma["ci_low"] <= wa["estimate"] <= ma["ci_high"]
    assert m["speedup"]["estimate"] == pytest.approx(w["speedup"]["estimate"], rel=0.025)
    assert m["breakeven_accept_len"]["estimate"] == pytest.approx(
        w["breakeven_accept_len"]["estimate"], rel=0.025)
    assert m["cycle_ms"]["estimate"] * P.SPEED == pytest.approx(w["cycle_ms"]["estimate"],
                                                               rel=0.025)
    assert m["verdict"] == w["verdict"] == "above"
    # summary reads the same tables: its accept length is breakeven's
    s, _ = run_json(["summary", "--baseline-toks", base, "--no-cache",
                     prom_spec(env, "reference")])
    srun = {x["source"]: x for x in s["runs"]}
    sm = srun[source_of(env, env["ports"][engine])]
    ws, _ = run_json(["summary", "--baseline-toks", "90", "--no-cache", ref_log])
    (ws,) = ws["runs"]
    assert sm["breakeven"]["speedup"]["estimate"] == pytest.approx(m["speedup"]["estimate"],
                                                                   rel=1e-9)
    assert sm["breakeven"]["speedup"]["estimate"] == pytest.approx(
        ws["breakeven"]["speedup"]["estimate"], rel=0.025)


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
    # the restarted server: one warning line, and two start-ups answered
    restart = source_of(env, env["ports"]["restart"])
    resets = [x for x in r.stderr.splitlines() if "counters reset" in x]
    assert len(resets) == 1 and restart in resets[0] and "start-up 1" in resets[0]
    assert not any(restart in e for e in errs)
    log = eaglelog.parse(prom_spec(env, "broken"))
    dec = log.decode[log.decode["source"] == restart]
    assert sorted(dec["startup"].unique()) == [0, 1]
    # no window spans the restart: the windows' tokens are the run's, less the one window
    # whose counters dropped
    tl = X.Timeline([P.reference_phase(5)])
    tokens = (dec["gen_throughput"] * dec.groupby("startup")["timestamp"].diff()
              .dt.total_seconds()).sum()
    assert 0.9 * tl.counters(float("inf"))["tok"] < tokens <= tl.counters(float("inf"))["tok"]


def test_partial_answers_and_a_broken_proxy_are_one_line(env):
    """A Prometheus that answers partially (warnings, series left out) and one behind a proxy
    that answers HTML: one line each, never a traceback, the rest answered."""
    vllm_at = f"127.0.0.1:{env['ports']['vllm']}"
    sglang_at = f"127.0.0.1:{env['ports']['sglang']}"
    until = env["t_end"] + 1.0
    since = until - env["t0"] + 2.0

    def spec(srv):
        return (f"prom+http://127.0.0.1:{srv.server_port}?match=job%3D%22reference%22"
                f"&since={since:.3f}s&until={until:.3f}")
    # a store lost the SGLang instance's series
    lost = P.broken_proxy(env["prom"].url, lambda m: m.get("instance") == sglang_at)
    # … or only the vLLM instance's spec-decode counters
    nospec = P.broken_proxy(env["prom"].url, lambda m: m.get("instance") == vllm_at and
                            "spec_decode" in m.get("__name__", ""))
    html = P.broken_proxy(env["prom"].url, mode="html")
    try:
        r = CliRunner().invoke(main, ["fleet", "--baseline-toks", str(90 * P.SPEED), spec(lost)])
        assert r.exit_code == 1 and "Traceback" not in r.stderr
        warns = [x for x in r.stderr.splitlines() if "Prometheus warns" in x]
        assert len(warns) == 1 and "partial response" in warns[0]
        errs = [x for x in r.stderr.splitlines() if "error:" in x]
        assert len(errs) == 1 and sglang_at in errs[0] and "partial answer" in errs[0]
        rows = [x for x in r.stdout.splitlines() if vllm_at in x]
        assert len(rows) == 1 and "above" in rows[0]            # the other one answered
        r = CliRunner().invoke(main, ["fleet", "--baseline-toks", str(90 * P.SPEED), "-f", "json",
                                      spec(nospec)])
        got = {x["instance"].rsplit(" instance=", 1)[1]: x
               for x in json.loads(r.stdout)["instances"]}
        assert got[sglang_at]["verdict"] == "above" and got[sglang_at]["rank"] == 1
        assert got[vllm_at]["error"].startswith("not speculating")
        lines = [x for x in r.stderr.splitlines() if vllm_at in x]
        assert len(lines) == 1 and "no vllm:spec_decode_num_drafts_total series" in lines[0]
        r = CliRunner().invoke(main, ["summary", "--no-cache", spec(html)])
        assert r.exit_code == 1 and r.stderr.count("\n") == 1
        assert "HTTP 503 Service Unavailable" in r.stderr
    finally:
        for srv in (lost, nospec, html):
            srv.shutdown()


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


AT_S = P.REF_S / P.SPEED - 1.5        # a time (s after the replay's start) whose 10 s window
#                                     lies inside the replay


def _against_eaglelog(env, at, value):
    """Check the rules' quantities ``value(engine, name)`` (Prometheus evaluating the PromQL at
    ``at``) against eaglelog's over the same samples: accept length exactly (vLLM: the ratio of
    the counters' increments, rate()'s extrapolation cancels; SGLang: Σ tokens / Σ decode
    passes / running requests, equal while the batch is steady); the speedup within the stated
    gap (the rules' rate is the delivered one, prefill time included: lower)."""
    from eaglelog.analysis.breakeven import breakeven
    from eaglelog.baseline import Baseline
    from eaglelog.live.watch import pooled
    log = eaglelog.parse(f"prom+{env['prom'].url}?match=job%3D%22reference%22"
                         f"&since={P.RULES_WINDOW}&until={at}")
    for eng in ("vllm", "sglang"):
        sub = log.subset(source_of(env, env["ports"][eng]))
        assert len(sub.decode) >= 30                      # the 10 s of 250 ms scrapes
        al = pooled(sub.decode)["accept_len"]
        assert value(eng, "accept_len") == pytest.approx(al, rel=1e-9 if eng == "vllm" else
                                                         2e-3), eng
        r = breakeven(sub, Baseline.from_text(str(90 * P.SPEED)))
        # measured on this run: the rules' speedup 2.0 % under eaglelog's (both engines), whose
        # own 95 % interval is ±4–5 % over 10 s (docs/formats-metrics.md §5)
        sp = value(eng, "speedup")
        assert 0.95 * r.speedup.estimate < sp <= r.speedup.estimate * 1.005, (eng, sp)
        # (40 windows of one 10 s span: when their autocorrelation leaves fewer than 5 batches,
        # eaglelog rightly gives no interval)
        assert not r.speedup.sufficient or r.speedup.ci_low * 0.98 < sp
        assert value(eng, "stream_tok_s") == pytest.approx(sp * 90 * P.SPEED, rel=1e-12)
        assert value(eng, "breakeven_accept_len") == pytest.approx(
            value(eng, "accept_len") / sp, rel=1e-12)


def _one(env, expr, at, eng):
    got = env["prom"].query(expr, at=at)
    assert [g["metric"]["instance"] for g in got] == [f"127.0.0.1:{env['ports'][eng]}"], expr
    return float(got[0]["value"][1])


def test_generated_rules_compute_eaglelogs_numbers(env):
    """The rules file passes promtool and the real Prometheus records its rules; their PromQL,
    evaluated by it, gives eaglelog's numbers over the same 10 s of samples."""
    import subprocess

    from eaglelog.live.rules import expressions
    rules = os.path.join(os.path.dirname(env["prom"].root), "rules.yml")
    assert subprocess.run(["promtool", "check", "rules", rules], capture_output=True).returncode \
        == 0
    at = env["t0"] + AT_S
    w = P.RULES_WINDOW
    ex = expressions(90 * P.SPEED, w)
    for eng in ("vllm", "sglang"):
        for name, expr in ex[eng].items():
            # the recorded series (evaluated every second, while the samples came in) …
            rec = env["prom"].query(f'{name}{{job="reference"}}[3s]', at=at)
            assert len(rec) == 1 and rec[0]["values"], name
            t_r, v_r = rec[0]["values"][-1]
            # … is the expression's value at its time, but for a scrape still being written
            now = _one(env, f'({expr}) and on (instance) up{{job="reference"}}', float(t_r), eng)
            assert float(v_r) == pytest.approx(now, rel=0.02), name
    _against_eaglelog(env, at, lambda eng, name: _one(
        env, f'({ex[eng][f"eaglelog:{eng}_{name}:{w}"]}) and on (instance) up{{job="reference"}}',
        at, eng))


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
    import subprocess
    check = subprocess.run(["promtool", "check", "rules", str(out)], capture_output=True,
                           text=True)
    assert check.returncode == 0 and "SUCCESS: 12 rules found" in check.stdout, check
    no = CliRunner().invoke(main, ["export", "--prometheus-rules", "-o",
                                                   str(out)])
    assert no.exit_code == 2 and "--baseline-toks" in no.stderr
    missing = CliRunner().invoke(main, ["export", "-o", str(out)])
    assert missing.exit_code == 2 and "LOG" in missing.stderr


def test_grafana_panels_are_the_rules(env, tmp_path):
    """Every panel of the dashboard `export --prometheus-rules --rules-match` writes, evaluated
    by the real Prometheus ($__rate_interval as the rules' window), is one series per instance
    of its engine and gives eaglelog's numbers; the rules with that selector pass promtool."""
    import subprocess
    out = tmp_path / "rules.yml"
    r = CliRunner().invoke(main, ["export", "--prometheus-rules", "--baseline-toks",
                                  str(90 * P.SPEED), "--rules-match", 'job="reference"',
                                  "--rules-window", P.RULES_WINDOW, "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    assert 'job=\\"reference\\"' in out.read_text()           # a YAML double-quoted scalar
    assert subprocess.run(["promtool", "check", "rules", str(out)],
                          capture_output=True).returncode == 0
    dash = json.loads((tmp_path / "rules.grafana.json").read_text())
    assert len(dash["panels"]) == 8
    at = env["t0"] + AT_S
    names = {"accept length": "accept_len", "tok/s per": "stream_tok_s", "speedup": "speedup",
             "break-even": "breakeven_accept_len"}
    panels = {}
    for panel in dash["panels"]:
        eng, what = panel["title"].split(": ", 1)
        key = next(v for k, v in names.items() if what.startswith(k))
        expr = panel["targets"][0]["expr"].replace("$__rate_interval", P.RULES_WINDOW)
        panels[eng, key] = _one(env, expr, at, eng)
    assert len(panels) == 8
    _against_eaglelog(env, at, lambda eng, name: panels[eng, name])
