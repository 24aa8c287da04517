"""``eaglelog watch`` (alerts over a stated window) and ``eaglelog fleet`` (one row per
instance, ranked), against real exporter processes driven by simulated runs with a known truth,
and (fleet) the real Prometheus of tests/promserver.py."""
from __future__ import annotations

import datetime as _dt
import json
import os
import sys
import time

import pytest
from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import promserver as P  # noqa: E402
from test_metrics import start_exporter  # noqa: E402

from simlab import simulate as S  # noqa: E402
from eaglelog.cli import main  # noqa: E402
from eaglelog.watch import Alert, Watcher  # noqa: E402


GOOD = {"scenario": "reference", "seed": 1, "overrides": {"duration_s": 60.0}}
BAD = {"scenario": "reference", "seed": 2, "overrides": {"duration_s": 60.0,
                                                         "accept_probs": [0.15]}}
COLLAPSE_AT = S.START + _dt.timedelta(seconds=60)      # simulated time of the collapse
ADVANCE = 5.0                                          # simulated seconds per scrape
ALERTS = ["--alert", "accept_len<1.5", "--alert", "speedup<1", "--baseline-toks", "130"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    ports = {k: P.free_port() for k in ("sglang_collapse", "vllm_collapse", "sglang_steady",
                                        "vllm_steady")}
    inst = [{"port": ports["sglang_collapse"], "engine": "sglang", "phases": [GOOD, BAD]},
            {"port": ports["vllm_collapse"], "engine": "vllm", "phases": [GOOD, BAD]},
            {"port": ports["sglang_steady"], "engine": "sglang",
             "phases": [{**GOOD, "overrides": {"duration_s": 80.0}}]},
            {"port": ports["vllm_steady"], "engine": "vllm",
             "phases": [{**GOOD, "overrides": {"duration_s": 200.0}}]}]
    proc = start_exporter(tmp_path_factory.mktemp("watch"), inst)
    yield ports
    proc.kill()
    proc.wait()


def url(ports, name):
    import urllib.request
    urllib.request.urlopen(f"http://127.0.0.1:{ports[name]}/rewind").read()
    return f"http://127.0.0.1:{ports[name]}/metrics"


def watch(args):
    # one refresh per scrape: --for one window (5 simulated seconds), as fast as it goes
    return CliRunner().invoke(main, ["watch", "--interval", "0.02", "--for", f"{ADVANCE:g}s",
                                     "--window", "60s", "--count", "16", *args])


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_watch_alert_fires_within_two_intervals_of_a_collapse(served, engine):
    r = watch([*ALERTS, url(served, f"{engine}_collapse")])
    assert r.exit_code == 3, r.output
    lines = [x for x in r.stdout.splitlines() if x.startswith("ALERT ")]
    assert lines and all("holds" in x for x in lines)
    at = _dt.datetime.fromisoformat(lines[0].rsplit(" to ", 1)[1].rstrip(")"))
    assert COLLAPSE_AT < at <= COLLAPSE_AT + _dt.timedelta(seconds=2 * ADVANCE), lines[0]
    assert "accept_len" in lines[0]
    assert "watching" in r.stderr                    # the views went to stderr


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_watch_does_not_fire_on_a_steady_run(served, engine):
    r = watch([*ALERTS, url(served, f"{engine}_steady")])
    assert r.exit_code == 0, r.output
    assert "ALERT" not in r.stdout and r.stdout == ""


def test_watch_keep_watching_prints_one_line_per_firing(served):
    r = watch(["--keep-watching", "--alert", "accept_len<1.5", url(served, "vllm_collapse")])
    assert r.exit_code == 3
    lines = [x for x in r.stdout.splitlines() if x.startswith("ALERT ")]
    assert len(lines) == 1                       # the condition keeps holding: one line


def test_watch_view_has_per_position_and_speedup(served):
    from eaglelog.baseline import Baseline
    # 180 s of 5 s scrapes: 36 windows, enough for an interval (stats.MIN_SERIES = 30)
    w = Watcher([url(served, "vllm_steady")], baseline=Baseline.from_text("130"), window=180,
                alerts=[Alert.parse("accept_len<1.5")], alert_for=ADVANCE)
    views = [w.refresh() for _ in range(38)]
    v = views[-1].instances[0]
    assert v.engine == "vllm" and v.windows == 36
    assert len(v.per_position) == 3 and v.per_position[0] > v.per_position[1] > v.per_position[2]
    assert sum(v.per_position) == pytest.approx(v.accept_len - 1, rel=1e-6)
    # the speedup against the baseline, with its interval: the per-stream rate / 130 tok/s
    assert v.speedup == pytest.approx(v.rate / 130, rel=1e-9)
    assert v.speedup_low < v.speedup < v.speedup_high and v.verdict == "above"
    assert 1.2 < v.speedup < 1.5                # the reference run: 155 tok/s per stream
    text = views[-1].text()
    assert f"{v.speedup:.3f}× [{v.speedup_low:.3f}, {v.speedup_high:.3f}]" in text
    assert " ".join(f"{p:.2f}" for p in v.per_position) in text and not views[-1].firings
    with pytest.raises(ValueError):
        Alert.parse("speedup<<1")
    bad = CliRunner().invoke(main, ["watch", "--alert", "speedup<1", "--count", "1",
                                    url(served, "vllm_steady")])
    assert bad.exit_code == 1 and "needs the baseline" in bad.stderr


def test_fleet_ranks_twenty_instances(tmp_path_factory):
    env = P.shared_env(str(tmp_path_factory.mktemp("prom")))
    since = time.time() - env["t0"] + 2
    r = CliRunner().invoke(main, ["fleet", "--baseline-toks", str(90 * P.SPEED), "--match",
                                  'job="fleet"', "--since", f"{since:.0f}s", "-f", "json",
                                  f"prom+{env['prom'].url}"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.stdout)["instances"]
    assert len(got) == 20 and not any(x["error"] for x in got)
    order = [int(x["instance"].rsplit(":", 1)[1]) for x in got]
    # the per-stream rate each instance's simulated run truly had (tok/s)
    truth = [env["truths"][str(p)][0]["rate_spec"] for p in env["fleet_ports"]]
    true_of = dict(zip(env["fleet_ports"], truth))
    assert [x["rank"] for x in got] == list(range(1, 21))
    # ranked by the truth: the instances are 6 % apart, so two neighbours may only swap when
    # eaglelog's own intervals say it cannot tell them apart (the replay's scrape times vary
    # from run to run; over 300 s of 5 s windows the deviations measured 0.1 – 2.9 %)
    for a, b, pa, pb in zip(got, got[1:], order, order[1:]):
        if true_of[pa] < true_of[pb]:
            lo, hi = a["speedup_low"], b["speedup_high"]
            assert lo is None or hi is None or lo <= hi, (a, b)
    swaps = sum(true_of[pa] < true_of[pb] for pa, pb in zip(order, order[1:]))
    assert swaps <= 2 and sorted(order) == sorted(env["fleet_ports"])
    # speedup against the stated baseline: within 4 % of the truth, or the truth inside the
    # instance's own interval (the intervals are ±1 – 8 %)
    for x, p in zip(got, order):
        t = true_of[p] / 90
        assert x["speedup"] == pytest.approx(t, rel=0.04) or (
            x["speedup_low"] is not None and x["speedup_low"] <= t <= x["speedup_high"]), (x, t)
    collapsed = got[order.index(env["fleet_ports"][-1])]
    assert collapsed["mark"] == "BELOW" and "accept length" in (collapsed["outlier"] or "")
    assert sum(1 for x in got if x["outlier"]) == 1
    below = {x["instance"] for x in got if x["mark"] == "BELOW"}
    assert below == {x["instance"] for x in got if x["speedup_high"] is not None and
                     x["speedup_high"] < 1}
    table = CliRunner().invoke(main, ["fleet", "--baseline-toks", str(90 * P.SPEED),
                                      "--match", 'job="fleet"', "--since", f"{since:.0f}s",
                                      f"prom+{env['prom'].url}"])
    assert table.exit_code == 0 and "BELOW" in table.stdout and "OUTLIER" in table.stdout
    assert "below break-even" in table.stdout


def test_watch_through_prometheus_fires_only_for_the_collapsed_instance(tmp_path_factory):
    """watch of a Prometheus source: one ALERT line, for the instance whose acceptance
    collapsed, over the replay of the 20 fleet instances; nothing for the other 19."""
    env = P.shared_env(str(tmp_path_factory.mktemp("prom")))
    span = f"{time.time() - env['t0'] + 2:.0f}s"
    r = CliRunner().invoke(main, ["watch", "--match", 'job="fleet"', "--window", span, "--for",
                                  span, "--interval", "1s", "--count", "1", "--alert",
                                  "accept_len<1.5", f"prom+{env['prom'].url}"])
    assert r.exit_code == 3, r.output
    lines = [x for x in r.stdout.splitlines() if x.startswith("ALERT ")]
    assert len(lines) == 1 and f"127.0.0.1:{env['fleet_ports'][-1]}:" in lines[0], lines
    al = float(lines[0].split("accept_len = ")[1].split()[0])
    assert al == pytest.approx(1 + P.COLLAPSED + P.COLLAPSED ** 2 + P.COLLAPSED ** 3, rel=0.05)
    view = r.stderr.split("\n", 1)[1]                # the view: every instance, on stderr
    assert sum(1 for x in view.splitlines() if "instance=127.0.0.1:" in x) == 20
