"""http(s)://…/metrics sources (eaglelog/live/metrics.py): a real exporter process
(tests/exporter.py) serving SGLang's and vLLM's metric families with their real names and
labels, driven by a simulated run (simlab/simulate.py) whose log and truth are known.

The exporter runs on its 'scrape' clock: every scrape advances its simulated time by 5 s and the
samples carry that time (the text format's timestamp), so the windows are the same however fast
the test scrapes; the comparison with the log is then exact in time, as a real server's would be
at 5 s scrapes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import exporter as X  # noqa: E402
from promserver import free_port  # noqa: E402

import eaglelog  # noqa: E402
from eaglelog.live import metrics as M  # noqa: E402
from eaglelog.cli import main  # noqa: E402
from eaglelog.errors import InputError  # noqa: E402

RUN_S = 300.0
ADVANCE = 5.0
PHASE = {"scenario": "reference", "seed": 3, "overrides": {"duration_s": RUN_S}}


def start_exporter(tmp_path, instances, clock="scrape"):
    spec = {"clock": clock, "advance_s": ADVANCE, "lifetime_s": 120, "instances": instances}
    path = tmp_path / "exporter.json"
    path.write_text(json.dumps(spec))
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__),
                                                          "exporter.py"), str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError(f"exporter did not start: {proc.stderr.read()[-2000:]}")
    return proc


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("metrics")
    ports = {k: free_port() for k in ("sglang", "vllm", "restart", "down", "empty",
                                      "refused")}
    inst = [{"port": ports["sglang"], "engine": "sglang", "phases": [PHASE]},
            {"port": ports["vllm"], "engine": "vllm", "phases": [PHASE]},
            {"port": ports["restart"], "engine": "sglang", "restart_at_s": 150.0,
             "phases": [PHASE]},
            {"port": ports["down"], "mode": "404", "phases": []},
            {"port": ports["empty"], "mode": "empty", "phases": []}]
    proc = start_exporter(tmp, inst)
    log = tmp / "server.log"
    tl = X.Timeline([PHASE])
    log.write_text(tl.logs[0])
    yield {"ports": ports, "log": str(log), "timeline": tl}
    proc.kill()
    proc.wait()


def url(served, name, rewind=True):
    """The instance's /metrics, its scrape clock set back to the start of the run."""
    import urllib.request
    if rewind and name not in ("down", "refused", "empty"):
        urllib.request.urlopen(f"http://127.0.0.1:{served['ports'][name]}/rewind").read()
    return f"http://127.0.0.1:{served['ports'][name]}/metrics"


# scrapes as fast as possible: 0.01 s apart real time, 5 s apart simulated
SCRAPE = ["--step", "0.01", "--duration", f"{(RUN_S / ADVANCE + 3) * 0.01:.2f}"]


def cli_json(args):
    r = CliRunner().invoke(main, args + ["-f", "json", "--no-cache"])
    assert r.exit_code in (0, 1), (r.exit_code, r.output)
    obj = json.loads(r.stdout)
    (one,) = obj["runs"]            # {"command", "confidence", "runs": [the run], "errors"}
    return one, r


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_summary_and_breakeven_of_an_endpoint_agree_with_the_log(served, engine):
    m, _ = cli_json(["breakeven", "--baseline-toks", "90", *SCRAPE, url(served, engine)])
    w, _ = cli_json(["breakeven", "--baseline-toks", "90", served["log"]])
    assert m["source"] == url(served, engine, rewind=False)
    # the resolution measured over 6 seeds (docs/formats-metrics.md §6): accept length within
    # 0.4 %, cycle and speedup within 1 % at 5 s windows; the log's own interval is ±1.3–2 %
    assert m["accept_len"]["estimate"] == pytest.approx(w["accept_len"]["estimate"], rel=0.01)
    for k in ("cycle_ms", "speedup", "breakeven_accept_len"):
        assert m[k]["estimate"] == pytest.approx(w[k]["estimate"], rel=0.02), k
    assert m["verdict"] == w["verdict"] == "above"
    lo, hi = w["speedup"]["ci_low"], w["speedup"]["ci_high"]
    assert lo < m["speedup"]["estimate"] < hi
    ms, _ = cli_json(["summary", "--baseline-toks", "90", *SCRAPE, url(served, engine)])
    ws, _ = cli_json(["summary", "--baseline-toks", "90", served["log"]])
    assert ms["breakeven"]["speedup"]["estimate"] == pytest.approx(
        ws["breakeven"]["speedup"]["estimate"], rel=0.02)
    # the header counts what the source holds: windows of counters, not log lines
    r = CliRunner().invoke(main, ["summary", "--no-cache", *SCRAPE, url(served, engine)])
    head = r.stdout.splitlines()[0]
    assert f"({ms['lines']:,} metrics windows, " in head and " lines" not in head, head
    assert ms["lines"] == ms["throughput"]["windows"] > 10


def test_decode_windows_of_an_endpoint_are_the_counters(served):
    """Window by window: vLLM's accept length is 1 + Δaccepted / Δdrafts of the simulated
    counters at the scrape times, SGLang's tokens (gen_throughput × Δt) are Δ realtime tokens;
    and the decode table has the log's columns and meaning."""
    tl = served["timeline"]
    log = eaglelog.parse([url(served, "vllm") + f"?step=0.01&duration={RUN_S / ADVANCE * 0.01}",
                          url(served, "sglang") + f"?step=0.01&duration={RUN_S / ADVANCE * 0.01}"])
    dec = log.decode
    v = dec[dec["source"] == url(served, "vllm", False)]
    s = dec[dec["source"] == url(served, "sglang", False)]
    assert len(v) >= 50 and len(s) >= 50
    assert (v["engine"] == "vllm").all() and s["engine"].isna().all()
    epoch0 = X.Instance({"phases": [PHASE]}, "scrape", 1, ADVANCE, 0).epoch0
    for _, row in v.iloc[5:15].iterrows():
        t = row["timestamp"].timestamp() - epoch0
        c1, c0 = tl.counters(t * 1000), tl.counters((t - ADVANCE) * 1000)
        assert row["drafts"] == c1["b"] - c0["b"]
        assert row["accept_len"] == pytest.approx(1 + (c1["acc"] - c0["acc"]) /
                                                  (c1["b"] - c0["b"]), rel=1e-12)
        assert row["gen_throughput"] == pytest.approx((c1["tok"] - c0["tok"]) / ADVANCE,
                                                      rel=1e-12)
    for _, row in s.iloc[5:15].iterrows():
        t = row["timestamp"].timestamp() - epoch0
        c1, c0 = tl.counters(t * 1000), tl.counters((t - ADVANCE) * 1000)
        assert row["gen_throughput"] * ADVANCE == pytest.approx(c1["tok"] - c0["tok"])
        # request-steps × accept length = the window's tokens
        assert row["drafts"] * row["accept_len"] == pytest.approx(c1["tok"] - c0["tok"])
    spec = log.vllm_spec
    assert spec["per_position"].notna().all() and (spec["k"] == 3).all()
    pre = log.prefill[log.prefill["source"] == url(served, "sglang", False)]
    assert pre["new_token"].sum() == pytest.approx(
        tl.counters(float(s["timestamp"].max().timestamp() - epoch0) * 1000)["pre"] -
        tl.counters(float(s["timestamp"].min().timestamp() - epoch0 - ADVANCE) * 1000)["pre"])


def test_a_counter_reset_is_a_restart(served):
    r = CliRunner().invoke(main, ["summary", "--no-cache", *SCRAPE, url(served, "restart")])
    assert r.exit_code == 0, r.output
    lines = [x for x in r.stderr.splitlines() if "counters reset" in x]
    assert len(lines) == 1 and "start-up 1" in lines[0]
    assert "start-up 1 at line" in r.stdout and "before the first start-up" not in r.stdout
    log = eaglelog.parse(url(served, "restart") + "?step=0.01&duration=0.65")
    assert sorted(log.decode["startup"].unique()) == [0, 1]
    # no window spans the restart: the windows' tokens add up to the counters on either side
    assert len(log.units()) == 2


def test_unreachable_404_and_missing_families_one_line_each(served):
    r = CliRunner().invoke(main, ["summary", "--no-cache", "--step", "0.01", "--duration",
                                  "0.2", url(served, "vllm"), url(served, "down"),
                                  url(served, "empty"), url(served, "refused")])
    assert r.exit_code == 1
    assert "Traceback" not in r.output and "internal error" not in r.stderr
    errs = [x for x in r.stderr.splitlines() if x.startswith("eaglelog: error:")]
    assert len(errs) == 3, errs
    assert any("HTTP 404" in e and "--enable-metrics" in e for e in errs)
    assert any(str(served["ports"]["empty"]) in e and "no SGLang or vLLM metric families" in e
               for e in errs)
    assert any("connection refused" in e for e in errs)
    assert url(served, "vllm") in r.stdout           # the one that answers is answered
    alone = CliRunner().invoke(main, ["summary", "--no-cache", "--step", "0.01", "--duration",
                                      "0.1", url(served, "refused")])
    assert alone.exit_code == 1 and alone.stderr.count("\n") == 1
    assert "connection refused" in alone.stderr


# ------------------------------------------------------------------------------- unit level
TEXT = """# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts counter
vllm_spec_decode_num_drafts_total{engine="0",model_name="m"} 100 1700000000000
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 150 1700000000000
vllm:generation_tokens_total{engine="0",model_name="m"} 250 1700000000000
vllm:num_requests_running{engine="0",model_name="m"} 4 1700000000000
process_open_fds 12
"""


def test_exposition_read_with_prometheus_parser_both_spellings():
    got = M.parse_exposition(TEXT, "x")
    names = [n for n, *_ in got]
    assert "vllm_spec_decode_num_drafts_total" in names           # OpenMetrics-escaped form
    assert M.canonical("vllm_spec_decode_num_drafts_total") == \
        "vllm:spec_decode_num_drafts_total"
    assert all(ts == 1700000000.0 for *_, ts in got)
    assert len(got) == 4                                          # not process_open_fds
    rec = M.Recorder()
    rec.add_scrape(M.Scrape("x", 0, got))
    later = TEXT.replace(" 100 ", " 300 ").replace(" 150 ", " 550 ").replace(" 250 ", " 850 ") \
        .replace("1700000000000", "1700000005000")
    rec.add_scrape(M.Scrape("x", 0, M.parse_exposition(later, "x")))
    log = M.parsed_log(rec, ["x"])
    row = log.decode.iloc[0]
    assert row["accept_len"] == 1 + 400 / 200 and row["drafts"] == 200
    assert row["gen_throughput"] == 600 / 5 and row["running_req"] == 4


def test_not_the_text_format_is_one_line():
    with pytest.raises(InputError) as e:
        M.parse_exposition('vllm:x{a="1" 2\n', "http://h/metrics")
    assert str(e.value).startswith("http://h/metrics: not the Prometheus text format")


def test_vllm_v0_counters_are_not_differenced():
    rec = M.Recorder()
    for i, t in enumerate((0.0, 5.0)):
        for name, v in (("vllm:spec_decode_num_accepted_tokens_total", 100 * (i + 1) ** 2),
                        ("vllm:spec_decode_num_draft_tokens_total", 300 * (i + 1) ** 2),
                        ("vllm:spec_decode_num_emitted_tokens_total", 200 * (i + 1) ** 2),
                        ("vllm:generation_tokens_total", 1000 * (i + 1)),
                        ("vllm:num_requests_running", 4)):
            rec.add("x", name, {"model_name": "m"}, t, float(v))
    log = M.parsed_log(rec, ["x"])
    assert log.decode["accept_len"].isna().all()
    assert log.decode["gen_throughput_steps"].all()
    assert any("V0" in d.message and d.severity == "warning" for d in log.diagnostics)


def test_compare_and_sweep_read_endpoints_as_runs(served):
    """compare matches each endpoint to its run (names without eaglelog's parameters): the same
    simulated run served as SGLang and as vLLM metrics is no detectable difference."""
    r = CliRunner().invoke(main, ["compare", "--baseline-toks", "90", "--no-cache", *SCRAPE,
                                  url(served, "sglang"), url(served, "vllm")])
    assert r.exit_code == 0, r.output
    assert f"{url(served, 'vllm', False)} vs reference" in r.stdout
    assert "no detectable difference in the speedup" in r.stdout
    s = CliRunner().invoke(main, ["sweep", "--baseline-toks", "90", "--no-cache", *SCRAPE,
                                  url(served, "sglang"), url(served, "vllm")])
    assert s.exit_code == 0 and "sweep of 2 runs" in s.stdout
