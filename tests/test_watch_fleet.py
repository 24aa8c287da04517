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

from eaglelog import simulate as S  # noqa: E402
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
             "phases": [{**GOOD, "overrides": {"duration_s": 80.0}}]}]
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
    w = Watcher([url(served, "vllm_steady")], baseline=None, window=60,
                alerts=[Alert.parse("accept_len<1.5")], alert_for=ADVANCE)
    views = [w.refresh() for _ in range(14)]
    v = views[-1].instances[0]
    assert v.engine == "vllm" and v.windows == 12
    assert len(v.per_position) == 3 and v.per_position[0] > v.per_position[1] > v.per_position[2]
    assert sum(v.per_position) == pytest.approx(v.accept_len - 1, rel=1e-6)
    assert "0." in views[-1].text() and not views[-1].firings
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
    want = [p for _, p in sorted(zip(truth, env["fleet_ports"]), reverse=True)]
    assert order == want
    assert [x["rank"] for x in got] == list(range(1, 21))
    # speedup against the stated baseline: within 3 % of the truth, instance by instance (the
    # instances are 6 % apart)
    for x, p in zip(got, order):
        t = truth[env["fleet_ports"].index(p)] / 90
        assert x["speedup"] == pytest.approx(t, rel=0.03)
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
