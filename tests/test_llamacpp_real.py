"""Real llama-server logs (issue 33 item 9): per-request timings joined to draft acceptance,
the per-stream rate, break-even against --baseline-toks and a baseline log, sweep, compare,
requests, report, and the cumulative statistics lines differenced.

The fixtures (tests/fixtures/llamacpp/real/, README.md there) were produced by llama-server built
from llama.cpp commit 0c1e57098bba (the source vendored in the llama-cpp-python 0.3.36 sdist) on
random-weight models, by make_logs.py (not run here).  The formats, as that source prints them:

* tools/server/server-context.cpp ``server_slot::print_timings`` (lines 602-653):
  ``prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)``,
  ``       eval time = …`` (n_gen tokens; the rate divides n_gen − 1, server-common.h
  ``n_gen_tps``), ``      total time = %10.2f ms / %5d tokens``, ``   graphs reused = %10d``,
  ``draft acceptance = %0.5f (%5d accepted / %5d generated), mean len = %5.2f`` and at trace
  level ``     acc per pos = (%s)``, each behind ``slot print_timing: id %2d | task %d | ``;
* common/speculative.cpp ``common_speculative_print_stats`` (line 2967): ``statistics %16s:
  #calls(b,g,a) = %4zu %6zu %6zu, #gen drafts = …`` at trace level, cumulative since the
  server started (one common_speculative for all slots: server-context.cpp line 1242);
* ``processing task`` (server-context.cpp line 1810) and ``stop processing`` (line 518).

responses.json holds the server's own counters of every request, from the JSON responses the
client received (timings.draft_n, draft_n_accepted, predicted_n, predicted_ms).
"""
import json
import re

import pytest

import eaglelog
from eaglelog.analysis import llamacpp as L
from eaglelog.report.blocks import num
from conftest import FIXTURES, grep_count

REAL = FIXTURES / "llamacpp" / "real"
LOGS = sorted(REAL.glob("*.log"))
DRAFT_C1 = [REAL / f"draft_nmax{k}_c1.log" for k in (2, 4, 8)]
DRAFT_C4 = [REAL / f"draft_nmax{k}_c4.log" for k in (2, 4, 8)]
RESPONSES = json.loads((REAL / "responses.json").read_text())
EVAL = re.compile(rb"\| task (\d+) \|\s+eval time =\s*([\d.]+) ms /\s*(\d+) tokens "
                  rb"\(\s*[\d.]+ ms per token,\s*([\d.]+) tokens per second\)")
DRAFT = re.compile(rb"\| task (\d+) \| draft acceptance = [\d.]+ \(\s*(\d+) accepted /\s*(\d+) "
                   rb"generated\), mean len =\s*([\d.]+)")
STATS = re.compile(rb"#calls\(b,g,a\) =\s*\d+\s+\d+\s+(\d+), #gen drafts =\s*\d+, #acc drafts ="
                   rb"\s*\d+, #gen tokens =\s*(\d+), #acc tokens =\s*(\d+)")


def parsed(path):
    return eaglelog.parse(path, cache=False)


def by_grep(path):
    """Each request's (task, eval ms, n_gen, tokens the printed rate divides) read with this
    test's own regex; the count is n_gen − 1 in this build (the first token comes from the
    prompt pass), checked against the printed rate."""
    out = []
    for line in path.read_bytes().splitlines():
        m = EVAL.search(line)
        if m:
            ms, n, tps = float(m[2]), int(m[3]), float(m[4])
            # (the rate has two decimals: ± 0.005 tok/s over the eval time)
            assert abs(tps * ms / 1000 - (n - 1)) <= 0.005 * ms / 1000 + 0.005 * tps / 1000
            out.append((int(m[1]), ms, n, n - 1))
    return out


def rate_by_grep(path) -> float:
    rows = by_grep(path)
    return 1000 * sum(r[3] for r in rows) / sum(r[1] for r in rows)


# ----------------------------------------------------------------------------- parsing

@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_every_request_is_one_row_with_the_servers_own_counters(path):
    log = parsed(path)
    assert log.diagnostics == [] and log.sources[0].engine == "llamacpp"
    req = L.request_rows(log)
    assert len(req) == grep_count(path, "prompt eval time =") == 20
    assert req["complete"].all() and (req["format"] == "block").all()
    resp = RESPONSES[path.stem]
    for r in req.to_dict("records"):
        # the response of this request: same prompt and output length, eval time to 0.01 ms
        m = [x for x in resp if x["prompt_n"] == r["prompt_tokens"] and
             x["predicted_n"] == r["output_tokens"] and
             abs(x["predicted_ms"] - r["eval_ms"]) <= 0.005 + 1e-9]
        assert len(m) == 1, r["line_no"]
        x = m[0]
        assert r["decode_tokens"] == x["predicted_n"] - 1
        assert abs(r["prompt_ms"] - x["prompt_ms"]) <= 0.005 + 1e-9
        if "draft_n" in x:
            assert (r["accepted_tokens"], r["draft_tokens"]) == \
                (x["draft_n_accepted"], x["draft_n"])
        else:                 # no draft: no acceptance (the table has not even the column)
            assert "accepted_tokens" not in req.columns
    # and the slot/task of every row is the one its lines print
    tasks = [t for t, *_ in by_grep(path)]
    assert req["task_id"].tolist() == tasks
    assert req["label"].tolist() == [f"task {t}" for t in tasks]


@pytest.mark.parametrize("path", DRAFT_C1, ids=lambda p: p.stem)
def test_statistics_lines_differenced_give_each_request_its_counts(path):
    """At one slot the cumulative statistics line printed after each request, minus the one
    before it, is that request: accepted, drafted, and its verify steps (#calls a), which the
    parser reads back from the printed mean len (and acc per pos)."""
    log = parsed(path)
    req = L.request_rows(log)
    d = L.statistics_deltas(log.bench)
    assert len(d) == 20 and d["restart"].tolist() == [True] + [False] * 19
    assert d["accepted_tokens"].tolist() == req["accepted_tokens"].tolist()
    assert d["draft_tokens"].tolist() == req["draft_tokens"].tolist()
    assert d["calls_a"].tolist() == req["steps"].tolist()
    # independently: the raw cumulative numbers, differenced here
    raw = [tuple(int(x) for x in m.groups()) for m in map(STATS.search,
                                                          path.read_bytes().splitlines()) if m]
    inc = [tuple(b - a for a, b in zip((0, 0, 0) if i == 0 else raw[i - 1], raw[i]))
           for i in range(len(raw))]
    assert [(int(s), int(dt), int(a)) for s, dt, a in
            zip(req["steps"], req["draft_tokens"], req["accepted_tokens"])] == inc
    tot = L.statistics_totals(log.bench)
    assert len(tot) == 1 and tot[0]["lines"] == 20
    assert (tot[0]["calls_a"], tot[0]["draft_tokens"], tot[0]["accepted_tokens"]) == raw[-1]


def test_steps_read_back_from_mean_len_alone_match_the_counted_ones():
    """The concurrency-4 logs print no acc per pos and no statistics: the steps come from the
    printed mean len alone, and equal the counted steps of the same requests at one slot
    (greedy decoding: the same tokens, the same drafts)."""
    for c1, c4 in zip(DRAFT_C1, DRAFT_C4):
        a, b = L.request_rows(parsed(c1)), L.request_rows(parsed(c4))
        key = ["prompt_tokens", "output_tokens", "accepted_tokens", "draft_tokens"]
        ka = {tuple(r[k] for k in key): r["steps"] for r in a.to_dict("records")}
        kb = {tuple(r[k] for k in key): r["steps"] for r in b.to_dict("records")}
        assert ka == kb


def test_concurrency_follows_the_slots():
    for path in DRAFT_C1 + [REAL / "baseline_c1.log"]:
        assert set(L.request_rows(parsed(path))["concurrency"]) == {1.0}
    for path in DRAFT_C4 + [REAL / "baseline_c4.log"]:
        c = L.request_rows(parsed(path))["concurrency"].tolist()
        assert max(c) == 4 and min(c) >= 1 and c[-1] == 1.0   # the last finishes alone
        assert L.analyse(parsed(path)).concurrency == 4


def test_config_from_the_start_up_lines():
    cfg = L.config_of(parsed(DRAFT_C1[1]), str(DRAFT_C1[1]))
    assert cfg["spec_draft_n_max"] == 4 and cfg["speculative_algorithm"] == "draft-simple"
    assert cfg["n_slots"] == 1 and cfg["model_path"].endswith("target.gguf")
    assert cfg["speculative_draft_model_path"].endswith("draft.gguf")
    base = L.config_of(parsed(REAL / "baseline_c4.log"), str(REAL / "baseline_c4.log"))
    assert base == {"model_path": "/tmp/llama/work/target.gguf", "n_slots": 4}


# ----------------------------------------------------------------------------- analysis

@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.stem)
def test_per_stream_rate_is_tokens_over_eval_time(path):
    run = L.analyse(parsed(path))
    assert run.rate.estimate == pytest.approx(rate_by_grep(path), rel=1e-12)
    assert run.rate.sufficient and run.rate.ci_low < run.rate.estimate < run.rate.ci_high
    assert run.requests == 20 and run.tokens == sum(r[3] for r in by_grep(path))


def test_accept_length_pooled_per_verify_step():
    path = DRAFT_C1[1]
    run = L.analyse(parsed(path))
    raw = [tuple(int(x) for x in m.groups()) for m in map(STATS.search,
                                                          path.read_bytes().splitlines()) if m]
    calls, drafted, accepted = raw[-1]
    assert (run.accepted, run.drafted) == (accepted, drafted) == (1510, 2244)
    assert run.accept_len.estimate == pytest.approx(1 + accepted / calls, rel=1e-12)
    assert run.cycle_ms.estimate == pytest.approx(
        run.accept_len.estimate / run.rate.estimate * 1000, rel=1e-12)


def _verdict_line(text):
    return next(ln for ln in text.splitlines() if ln.strip().startswith("verdict"))


def test_breakeven_against_baseline_toks(run):
    path = DRAFT_C1[1]
    rate = rate_by_grep(path)
    r = run("breakeven", "--baseline-toks", "82.5", path)
    assert r.exit_code == 0, r.stderr
    want = rate / 82.5
    assert f"{num(want, 3)}×" in _verdict_line(r.stdout) and "ABOVE break-even" in r.stdout
    d = json.loads(run("breakeven", "--baseline-toks", "82.5", "-f", "json", path).stdout)
    one = d["runs"][0]
    assert one["verdict"] == "above"
    assert one["speedup"]["estimate"] == pytest.approx(want, rel=1e-12)
    assert one["baseline_step_ms"]["estimate"] == pytest.approx(1000 / 82.5)
    assert one["eff_tok_s"]["estimate"] == pytest.approx(rate, rel=1e-12)
    # speedup = accept length × baseline step / cycle
    assert one["speedup"]["estimate"] == pytest.approx(
        one["accept_len"]["estimate"] * one["baseline_step_ms"]["estimate"] /
        one["cycle_ms"]["estimate"], rel=1e-12)
    # a rate far above: below break-even, and --check gates it
    r = run("breakeven", "--baseline-toks", "200", "--check", path)
    assert r.exit_code == 3 and "BELOW break-even" in r.stdout


def test_breakeven_against_a_baseline_log(run):
    spec, base = DRAFT_C1[0], REAL / "baseline_c1.log"
    want = rate_by_grep(spec) / rate_by_grep(base)
    r = run("breakeven", "--baseline-log", base, "-f", "json", spec)
    assert r.exit_code == 0, r.stderr
    one = json.loads(r.stdout)["runs"][0]
    assert one["speedup"]["estimate"] == pytest.approx(want, rel=1e-12)
    assert one["verdict"] == "above" and one["speedup"]["ci_low"] > 1
    assert one["baseline_step_ms"]["estimate"] == pytest.approx(1000 / rate_by_grep(base))
    r = run("breakeven", "--baseline-log", base, spec)
    assert r.exit_code == 0
    assert f"ABOVE break-even: {num(want, 3)}× the baseline" in r.stdout
    assert "both at concurrency 1" in r.stdout
    # at concurrency 4 against the baseline at 4
    spec4, base4 = DRAFT_C4[1], REAL / "baseline_c4.log"
    one = json.loads(run("breakeven", "--baseline-log", base4, "-f", "json", spec4).stdout)[
        "runs"][0]
    assert one["speedup"]["estimate"] == pytest.approx(rate_by_grep(spec4) / rate_by_grep(base4),
                                                       rel=1e-12)


def test_a_baseline_at_another_concurrency_is_invalid(run):
    r = run("breakeven", "--baseline-log", REAL / "baseline_c4.log", DRAFT_C1[1])
    assert r.exit_code == 0
    assert "INVALID BASELINE: the baseline log ran at concurrency 4, the run at 1" in r.stdout
    r = run("breakeven", "--check", "--baseline-log", REAL / "baseline_c4.log", DRAFT_C1[1])
    assert r.exit_code == 3


def test_bad_baselines_are_one_line_errors(run):
    r = run("breakeven", "--baseline-log", DRAFT_C1[0], DRAFT_C1[1])
    assert r.exit_code == 1 and "not a baseline: its requests print draft acceptance" in \
        r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run("breakeven", "--baseline-toks", "90", REAL / "baseline_c1.log")
    assert r.exit_code == 1 and "not a speculative run" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_summary_gives_the_per_stream_rate(run):
    path = DRAFT_C1[2]
    r = run("summary", path)
    assert r.exit_code == 0, r.stderr
    rate = rate_by_grep(path)
    line = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("per stream"))
    assert f"{rate:.4g}" in line or f"{rate:.1f}" in line
    assert "draft max 8" in r.stdout and "(= the requests' counts)" in r.stdout
    d = json.loads(run("summary", "-f", "json", "--baseline-toks", "82.5", path).stdout)
    s = d["runs"][0]
    assert s["throughput"]["per_stream_tok_s"]["estimate"] == pytest.approx(rate, rel=1e-12)
    assert s["breakeven"]["speedup"]["estimate"] == pytest.approx(rate / 82.5, rel=1e-12)
    assert s["llamacpp"]["requests"] == 20 and s["llamacpp"]["concurrency"] == 1
    r = run("summary", REAL / "baseline_c1.log")
    assert r.exit_code == 0 and "no draft" in r.stdout and "step" in r.stdout


def test_sweep_ranks_the_three_n_max_runs(run):
    r = run("sweep", "-f", "json", *DRAFT_C1)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["keys"] == ["spec_draft_n_max"]
    rates = {p.name: rate_by_grep(p) for p in DRAFT_C1}
    order = sorted(rates, key=rates.get, reverse=True)
    assert [row["run"].rsplit("/", 1)[-1] for row in d["rows"]] == order
    assert [row["config"]["spec_draft_n_max"] for row in d["rows"]] == \
        [int(n.split("nmax")[1][0]) for n in order]
    assert d["rows"][0]["mark"] == "best"
    for row in d["rows"]:
        assert row["eff_tok_s"]["estimate"] == pytest.approx(
            rates[row["run"].rsplit("/", 1)[-1]], rel=1e-12)
    r = run("sweep", "--baseline-log", REAL / "baseline_c4.log", "-f", "json", *DRAFT_C4)
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    base = rate_by_grep(REAL / "baseline_c4.log")
    for row in rows:
        assert row["speedup"]["estimate"] == pytest.approx(
            rate_by_grep(REAL / row["run"].rsplit("/", 1)[-1]) / base, rel=1e-12)


def test_compare_two_runs(run):
    a, b = DRAFT_C1[0], DRAFT_C1[2]
    r = run("compare", "-f", "json", a, b)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["primary"] == "eff_tok_s"
    m = {x["metric"]: x for x in d["metrics"]}
    assert m["eff_tok_s"]["ratio"] == pytest.approx(rate_by_grep(b) / rate_by_grep(a), rel=1e-12)
    assert m["accept_len"]["direction"] == "better"
    assert d["config_diff"][str(b)] == {"spec_draft_n_max": [2, 8]}
    r = run("compare", a, b)
    assert r.exit_code == 0 and "per-stream rate" in r.stdout


def test_requests_show_each_requests_accept_length(run):
    path = DRAFT_C4[1]
    r = run("requests", "-f", "csv", path)
    assert r.exit_code == 0, r.stderr
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert len(rows) == 20
    printed = {}
    for line in path.read_bytes().splitlines():
        m = DRAFT.search(line)
        if m:
            printed[f"task {int(m[1])}"] = (int(m[2]), m[4].decode())
    for row in rows:
        acc, mal = printed[row["id"]]
        tau = float(row["tau"])
        assert tau == pytest.approx(1 + acc / int(row["steps"]), rel=1e-12)
        assert f"{tau:.2f}" == mal            # the server's own mean len, unrounded
    r = run("requests", "--baseline-log", REAL / "baseline_c4.log", path)
    assert r.exit_code == 0 and "below break-even" in r.stdout


def test_report_answers(run, tmp_path):
    out = tmp_path / "r.html"
    r = run("report", "--baseline-log", REAL / "baseline_c1.log", "-o", out, *DRAFT_C1)
    assert r.exit_code == 0, r.stderr
    page = out.read_text()
    assert "not a speculative run" not in page
    want = rate_by_grep(DRAFT_C1[0]) / rate_by_grep(REAL / "baseline_c1.log")
    assert f"ABOVE break-even: {num(want, 3)}× the baseline" in page


def test_acceptance_folds_the_cumulative_statistics(run):
    r = run("acceptance", "-f", "json", DRAFT_C1[1])
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    stat = [c for r in d["runs"] for c in r["curves"] if c["origin"] == "llamacpp-statistics"]
    assert len(stat) == 1 and stat[0]["drafts"] == 570        # one whole-run total, not 20


# ----------------------------------------------------------------------------- synthetic lines

def test_two_cumulative_statistics_lines_are_differenced(write):
    """Two lines of one drafter (lines written in this build's format): the second counts the
    first's numbers again; its increment is the second request alone."""
    p = write("stats.log",
              "0.01.000.000 I spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1"
              "     39     39, #gen drafts =     39, #acc drafts =    33, #gen tokens =    154, "
              "#acc tokens =    99, #mean acc len = 3.54, #acc rate/pos = (0.846, 0.692, 0.538, "
              "0.462), dur(b,g,a) = 0.004, 180.125, 0.051 ms\n"
              "0.02.000.000 I spec common_specu: statistics     draft-simple: #calls(b,g,a) =    2"
              "     73     73, #gen drafts =     73, #acc drafts =    66, #gen tokens =    287, "
              "#acc tokens =   196, #mean acc len = 3.68, #acc rate/pos = (0.904, 0.753, 0.589, "
              "0.438), dur(b,g,a) = 0.008, 330.250, 0.097 ms\n")
    log = parsed(p)
    d = L.statistics_deltas(log.bench)
    assert d[["calls_a", "drafts", "accepted_drafts", "draft_tokens", "accepted_tokens"]] \
        .values.tolist() == [[39, 39, 33, 154, 99], [34, 34, 33, 133, 97]]
    assert d["restart"].tolist() == [True, False]
    assert d["accept_len"].tolist() == pytest.approx([1 + 99 / 39, 1 + 97 / 34])
    # per position: counts (rate × accept calls) differenced: 66 × 0.904 − 39 × 0.846 …
    assert d["pos_counts"][1] == pytest.approx([73 * 0.904 - 39 * 0.846, 73 * 0.753 - 39 * 0.692,
                                                73 * 0.589 - 39 * 0.538, 73 * 0.438 - 39 * 0.462])
    tot = L.statistics_totals(log.bench)
    assert [(t["calls_a"], t["draft_tokens"], t["accepted_tokens"]) for t in tot] == \
        [(73, 287, 196)]                                # the last line, not 39 + 73 …
    assert tot[0]["accept_len"] == pytest.approx(1 + 196 / 73)
    folded, notes = L.fold_statistics(log.bench)
    assert folded["line_no"].tolist() == [2] and "differenced" in notes[0]
    # a count that falls: a restarted server, counted whole
    p2 = write("restart.log", open(p).read() + open(p).read().splitlines(True)[0])
    d2 = L.statistics_deltas(parsed(p2).bench)
    assert d2["restart"].tolist() == [True, False, True]
    assert d2["accepted_tokens"].tolist() == [99, 97, 99]
    assert [t["accepted_tokens"] for t in L.statistics_totals(parsed(p2).bench)] == [196, 99]


def test_older_builds_print_the_times_behind_a_bare_prefix(write):
    """Builds before the split print the three time lines with one SLT_INF ("\\n" first) and
    the draft line after a bare prefix: one row all the same (slot and task unknown)."""
    p = write("old.log",
              "slot print_timing: id  0 | task 7 | \n"
              "prompt eval time =      35.83 ms /     8 tokens (    4.48 ms per token,   223.26 "
              "tokens per second)\n"
              "       eval time =    1318.47 ms /   132 tokens (    9.99 ms per token,   100.12 "
              "tokens per second)\n"
              "      total time =    1354.30 ms /   140 tokens\n"
              "slot print_timing: id  0 | task 7 | \n"
              "draft acceptance rate = 0.72932 (   97 accepted /   133 generated)\n")
    log = parsed(p)
    b = log.bench
    assert len(b) == 1 and log.diagnostics == []
    r = b.iloc[0]
    assert (r["line_no"], r["end_line"], r["output_tokens"], r["decode_tokens"],
            r["accepted_tokens"], r["draft_tokens"]) == (2, 6, 132, 132, 97, 133)
    assert r["eval_ms"] == 1318.47 and r["prompt_ms"] == 35.83


def test_a_cut_timing_block_is_kept_and_reported(write):
    p = write("cut.log", "slot print_timing: id  0 | task 0 | prompt eval time =     136.68 ms /"
                         "    22 tokens (    6.21 ms per token,   160.97 tokens per second)\n")
    log = parsed(p)
    assert len(log.bench) == 1 and not log.bench["complete"].iloc[0]
    assert [d.kind for d in log.diagnostics] == ["incomplete_block"]
    assert "no 'eval time and total time' line" in log.diagnostics[0].message
