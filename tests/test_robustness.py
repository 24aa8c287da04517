"""Damaged lines never abort a parse or reach the output as NaN/inf (issue 13, items 2–4 and the
real-log items): a bad date or time, an out-of-range or non-ASCII number, a line cut short, a
non-finite value in a config or request line.  Each is one reported record, and JSON stays JSON."""
import json

import pytest

import eaglelog
from conftest import SAMPLES

LINE = ("[{ts}] Decode batch. #running-req: 1, #token: 100, token usage: 0.01, accept len: 2.00, "
        "gen throughput (token/s): 80.0, #queue-req: 0\n")


def strict_json(text):
    def no_constant(name):
        raise ValueError(f"non-JSON constant {name}")
    return json.loads(text, parse_constant=no_constant)


@pytest.mark.parametrize("pure", ["0", "1"])
@pytest.mark.parametrize("bad", ["2026-03-02 14:00:92", "2026-02-30 14:00:00",
                                 "2026-03-02 24:00:00", "2026-13-02 14:00:00",
                                 "\uff12\uff10\uff12\uff16-03-02 14:00:00",
                                 "2026-03-02 14:\u0661\u0662:00"])
def test_a_bad_date_or_time_is_one_reported_record(write, run, monkeypatch, bad, pure):
    """`14:00:92` or `2026-02-30` used to abort every command with a pandas message; now the
    record is kept without a timestamp and the line is reported (C and Python paths alike)."""
    monkeypatch.setenv("EAGLELOG_PURE_PYTHON", pure)
    path = write("bad.log", LINE.format(ts="2026-03-02 14:00:01") + LINE.format(ts=bad) +
                 LINE.format(ts="2026-03-02 14:00:03"))
    log = eaglelog.parse(path)
    ts = log.decode["timestamp"]
    assert log.decode["line_no"].tolist() == [1, 2, 3]
    assert ts.isna().tolist() == [False, True, False]
    assert [(d.line_no, d.kind) for d in log.diagnostics] == [(2, "bad_value")]
    assert "is not a valid date and time" in log.diagnostics[0].message
    r = run("-q", "summary", "--baseline-toks", "90", "-f", "json", path)
    assert r.exit_code == 0 and strict_json(r.stdout)["runs"][0]["source"] == path


def test_a_bad_date_in_a_large_log_on_the_c_path(tmp_path):
    """The C accelerator leaves the line with an impossible date to the Python parser."""
    lines = [LINE.format(ts=f"2026-03-02 14:{i // 60 % 60:02d}:{i % 60:02d}")
             for i in range(2000)]
    lines[700] = LINE.format(ts="2026-02-29 14:11:40")     # 2026 is no leap year
    p = tmp_path / "big.log"
    p.write_text("".join(lines))
    log = eaglelog.parse(str(p))
    assert len(log.decode) == 2000 and int(log.decode["timestamp"].isna().sum()) == 1
    assert [d.line_no for d in log.diagnostics] == [701]


def test_numbers_beyond_their_columns_are_reported_values(write):
    """ep_size beyond 64 bits, a 1e20-sized tp_size, inf in a config; 1e400 as a request's
    completion tokens; a NaN in a JSON request line: bad values, the rest kept."""
    path = write("cfg.log",
                 "[2026-03-02 14:00:00] server_args=ServerArgs(model_path='m', tp_size="
                 "100000000000000000000, ep_size=9223372036854775808, dp_size=1, "
                 "speculative_algorithm='EAGLE3', speculative_num_steps=3, x=1e400)\n" +
                 LINE.format(ts="2026-03-02 14:00:01") +
                 "[2026-03-02 14:00:02] Finish: obj=GenerateReqInput(rid='a'), out={'meta_info': "
                 "{'id': 'a', 'prompt_tokens': 12, 'completion_tokens': 1e400, "
                 "'spec_verify_ct': 4, 'spec_accept_histogram': [1e400, 2]}}\n"
                 '[2026-03-02 14:00:03] {"event": "request.finished", "rid": "b", "out": '
                 '{"meta_info": {"completion_tokens": 9, "e2e_latency": NaN}}}\n')
    log = eaglelog.parse(path)
    cfg = log.config()
    assert cfg["dp_size"] == 1 and cfg["speculative_num_steps"] == 3
    assert "tp_size" not in cfg and "ep_size" not in cfg and "x" not in cfg
    req = log.requests.set_index("rid")
    assert req.loc["a", "prompt_tokens"] == 12 and req.loc["a", "verify_ct"] == 4
    assert req["completion_tokens"].isna().tolist() == [True, False]
    assert req["accept_histogram"].isna().all() and req["e2e_latency"].isna().all()
    msgs = sorted((d.line_no, d.message.split(": ", 1)[1]) for d in log.diagnostics)
    assert msgs == [(1, "bad value for ep_size: 9223372036854775808 is out of range 0 … 1000000"),
                    (1, "bad value for tp_size: 100000000000000000000 is out of range 0 … "
                        "1000000"),
                    (1, "bad value for x: inf"),
                    (3, "bad value for 'completion_tokens': inf"),
                    (3, "bad value for 'spec_accept_histogram': [inf, 2]"),
                    (4, "bad value for 'e2e_latency': nan")]


def test_non_finite_values_never_reach_json(run, write):
    """A value that is inf or NaN (from any source) is null in every JSON output."""
    from eaglelog.report import render_frame, render_object
    import pandas as pd
    df = pd.DataFrame({"a": [1.0, float("inf"), float("nan"), -float("inf")]})
    assert strict_json(render_frame(df, "json")) == [{"a": 1.0}, {"a": None}, {"a": None},
                                                     {"a": None}]
    assert [strict_json(x) for x in render_frame(df, "jsonl").splitlines()][1] == {"a": None}
    import numpy as np
    assert strict_json(render_object({"x": [float("nan"), np.float64("inf"), 2.5]}, "json")) \
        == {"x": [None, None, 2.5]}


def test_summary_of_an_export(run, tmp_path):
    """`eaglelog summary export.json` reads the export (it used to fail to parse it as a log)."""
    exp = tmp_path / "run.json"
    assert run("export", SAMPLES / "eagle3_5step.log", "-o", exp).exit_code == 0
    r = run("summary", "--baseline-toks", "90", exp)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "an eaglelog export" in lines[0]
    assert any(ln.split()[:4] == ["cycle", "time", "27.28", "ms"] for ln in lines)
    assert any(ln.split()[:2] == ["speedup", "0.931×"] for ln in lines)
    d = strict_json(run("summary", "-f", "json", "--baseline-toks", "90", exp).stdout)["runs"][0]
    assert d["export"] is True and d["config"]["steps"] == 5
    assert round(d["metrics"]["accept_len"]["estimate"], 3) == 2.286
    assert round(d["breakeven"]["speedup"]["estimate"], 3) == 0.931
    r = run("summary", exp, SAMPLES / "eagle3_5step.log")
    assert r.exit_code == 2 and "not both" in r.stderr


def test_sync_mode_blocks_give_the_phase_shares(run, tmp_path):
    """A log with only sync-mode EAGLE3_PROF blocks: the phase shares, labelled, no cycle time."""
    p = tmp_path / "sync.log"
    p.write_text((SAMPLES / "eagle3_5step.log").read_text().replace("no sync)", "sync)"))
    r = run("-q", "summary", p)
    assert r.exit_code == 0
    out = r.stdout
    assert "not measured: 42 sync-mode blocks only (exact phase shares" in out
    assert "Target verify      95.5% of the cycle   ← bottleneck" in out
    # the cycle time comes from the decode lines, never from the sync-mode blocks' TOTAL
    assert "derived cycle   27.28 ms  [27.26 … 27.31]   decode lines" in out
    assert "27.28 ms  [27.27" not in out
    d = strict_json(run("-q", "summary", "-f", "json", p).stdout)["runs"][0]
    assert d["cycle_ms"] is None and d["phases_from"] == "42 sync-mode blocks"
    assert [round(x["pct"], 1) for x in d["phases"]] == [3.5, 95.5, 1.1, 0.0]


def test_vllm_numbers_are_not_labelled_sglang_next_to_benchmark_output(run, tmp_path):
    p = tmp_path / "vb.log"
    p.write_bytes((SAMPLES / "vllm_v1.log").read_bytes() +
                  (SAMPLES.parent / "tests/fixtures/others/bench_serving.log").read_bytes())
    r = run("-q", "summary", "--date", "2026-03-02", p)
    assert r.exit_code == 0
    assert "vLLM accept len: decode lines" in r.stdout and "SGLang" not in r.stdout


BAD_BATCH = (
    "[2026-03-02 14:03:07.219 TP0] Decode batch, #running-req: {r}, #token: 767, token usage: "
    "0.00, accept len: 2.65, accept rate: 0.44, cuda graph: True, gen throughput (token/s): "
    "81.57, #queue-req: 0\n"
    "EAGLE3_PROF (100 cycles, 170 tok, no sync)\n  TOTAL:             27.50 ms/cyc\n"
    "  Accept len:      1.70\n  Eff tok/s:       61.8\n"
    "[2026-03-02 14:03:09.419 TP0] Decode batch, #running-req: {r2}, #token: 993, token usage: "
    "0.01, accept len: 2.55, accept rate: 0.42, cuda graph: True, gen throughput (token/s): "
    "92.77, #queue-req: 0\n")


@pytest.mark.parametrize("r,r2", [("0.00", "1"), ("-1e400", "1e400")])
def test_an_unreadable_batch_size_is_no_accept_length_not_nan(run, write, r, r2):
    """A bad #running-req (reported) leaves its window and the next one without request-steps:
    they give no accept length, and no command prints nan (issue 13's fuzz: 'nan× SGLang's',
    '#running-req is nan–nan')."""
    path = write("bad_batch.log", BAD_BATCH.format(r=r, r2=r2))
    for cmd in ("summary", "reconcile"):
        res = run("-q", cmd, path)
        assert res.exit_code == 0, res.stderr
        assert "nan" not in res.stdout.replace(str(path), "").lower(), (cmd, res.stdout)
        strict_json(run("-q", cmd, "-f", "json", path).stdout)
    text = run("-q", "reconcile", path).stdout
    assert "none is readable in this log" in text
    if r2 == "1e400":      # no readable batch size in any aligned window
        assert "no readable #running-req in the aligned windows" in text


def test_control_characters_in_a_message_reach_stderr_as_escapes(run, tmp_path):
    """A file name (or any log text) that carries ESC or a newline into an error message is
    written as escapes: one line, and nothing that drives the terminal."""
    name = tmp_path / "a\x1b]0;owned\x07b\nc.log"
    r = run("-q", "summary", name)
    assert r.exit_code == 1
    assert r.stderr.count("\n") == 1 and "\x1b" not in r.stderr and "\x07" not in r.stderr
    assert r.stderr.startswith("eaglelog: error: ") and "a\\x1b]0;owned\\x07b\\nc.log" in r.stderr
