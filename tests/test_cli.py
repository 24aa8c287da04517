"""The command line: every output format, the overview, JSON shapes, exit codes."""
import json
import subprocess
import sys

import pandas as pd
import pytest

import eaglelog
from conftest import SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"


def test_overview_human(run):
    r = run("parse", FIVE)
    assert r.exit_code == 0
    out = r.stdout
    assert out.startswith(f"{FIVE}  (sglang · 612 lines · 73.6 KB)\n")
    assert "  tables      prof 42 · prof-phases 168 · decode 106 · prefill 40 · server-args 1 · " \
           "requests 40\n" in out
    assert "  time span   2026-03-02 14:00:00 → 2026-03-02 14:02:42 (2 min 42 s)\n" in out
    assert "  ranks       TP0\n" in out
    assert ("  spec config EAGLE3 · draft /models/llama-3.1-8b-eagle3 · steps 5 · topk 1 · "
            "draft tokens 6 · tp 2 · dp 1 · decode log interval 40\n") in out
    assert "  notes       47 lines without a record skipped (first at line 1)\n" in out
    assert r.stderr == ""  # the overview says it on stdout already


def test_overview_json(run):
    r = run("parse", "-f", "json", FIVE, SAMPLES / "baseline.log")
    items = json.loads(r.stdout)
    assert [i["source"] for i in items] == [str(FIVE), str(SAMPLES / "baseline.log")]
    five = items[0]
    assert five["tables"] == {"prof": 42, "prof_phases": 168, "decode": 106, "prefill": 40,
                              "server_args": 1, "requests": 40, "spec_params": 0}
    assert five["spec_config"]["steps"] == 5 and five["spec_config"]["algorithm"] == "EAGLE3"
    assert five["incomplete_blocks"] == [] and five["skipped_lines"] == 47
    assert items[1]["spec_config"]["algorithm"] is None


def test_table_json_is_an_array_of_row_objects(run):
    r = run("parse", "--table", "prof", "-f", "json", FIVE)
    rows = json.loads(r.stdout)
    assert len(rows) == 42
    first = rows[0]
    for col in ("source", "line_no", "timestamp", "ranks", "mode", "cycles", "tokens",
                "total_ms", "accept_len", "eff_tok_s", "complete"):
        assert col in first
    assert first["ranks"] is None and first["timestamp"] is None  # print() blocks: no prefix
    assert first["mode"] == "no sync" and isinstance(first["complete"], bool)
    log = eaglelog.parse(FIVE)
    assert first["total_ms"] == log.prof.total_ms.iloc[0]


def test_jsonl_csv_markdown_table(run):
    jl = run("parse", "--table", "decode", "-f", "jsonl", FIVE).stdout.splitlines()
    assert len(jl) == 106 and json.loads(jl[0])["timestamp"] == "2026-03-02T14:00:32.543"
    csv = run("parse", "--table", "decode", "-f", "csv", FIVE).stdout
    df = pd.read_csv(pd.io.common.StringIO(csv))
    assert len(df) == 106 and df.accept_len.iloc[0] == 2.38
    md = run("parse", "--table", "prof", "-f", "markdown", FIVE).stdout.splitlines()
    assert md[0].startswith("| source") and md[1].startswith("|--") and len(md) == 44
    human = run("parse", "--table", "prof", FIVE).stdout.splitlines()
    assert human[0].split()[:4] == ["source", "line_no", "mode", "cycles"]  # empty cols dropped
    assert len(human) == 44


def test_parquet_round_trip(run, tmp_path):
    out = tmp_path / "d.parquet"
    r = run("parse", "--table", "decode", "-f", "parquet", "-o", out, FIVE)
    assert r.exit_code == 0 and r.stdout == ""
    back = pd.read_parquet(out)
    want = eaglelog.parse(FIVE).decode
    assert list(back.columns) == list(want.columns)
    pd.testing.assert_series_equal(back.accept_len, want.accept_len)
    pd.testing.assert_series_equal(back.running_req, want.running_req)


def test_server_args_table_has_config_columns(run):
    rows = json.loads(run("parse", "--table", "server-args", "-f", "json", FIVE).stdout)
    assert len(rows) == 1
    row = rows[0]
    assert row["line_no"] == 3 and row["parse_ok"] is True
    assert row["speculative_num_steps"] == 5 and row["tp_size"] == 2
    assert row["model_path"] == "/models/llama-3.1-8b-instruct"


def test_output_file(run, tmp_path):
    out = tmp_path / "prof.csv"
    r = run("parse", "--table", "prof", "-f", "csv", "-o", out, FIVE)
    assert r.exit_code == 0 and r.stdout == ""
    assert out.read_text().count("\n") == 43


def test_help_has_examples_and_version(run):
    r = run("parse", "--help")
    assert "Examples:" in r.stdout and "eaglelog parse --table prof server.log" in r.stdout
    assert run("--version").stdout.strip() == f"eaglelog, version {eaglelog.__version__}"
    top = run("-h").stdout
    assert "Examples:" in top
    # every example line of the top-level help at the same indent
    ex = top.split("Examples:\n")[1].split("\n\n")[0].split("\n")
    assert len(ex) == 9 and all(line.startswith("    eaglelog ") for line in ex)


def test_quiet_silences_notes(run):
    r = run("-q", "parse", FIVE)
    assert r.exit_code == 0 and r.stderr == ""


def test_broken_pipe_exits_quietly(tmp_path):
    big = tmp_path / "big.log"
    big.write_bytes(FIVE.read_bytes() * 40)
    p = subprocess.run(f"{sys.executable} -m eaglelog parse --table decode {big} | head -1",
                       shell=True, capture_output=True, text=True)
    assert p.stdout.startswith("source")
    assert "Traceback" not in p.stderr and "Error" not in p.stderr


def test_docs_tables_md_is_generated_from_the_schema():
    from conftest import ROOT
    from eaglelog.docs import tables_markdown
    assert (ROOT / "docs" / "tables.md").read_text() == tables_markdown(), \
        "run: python -m eaglelog.docs > docs/tables.md"


def test_output_never_overwrites_an_input(run, tmp_path):
    victim = tmp_path / "victim.log"
    victim.write_bytes(FIVE.read_bytes())
    r = run("parse", "--table", "decode", "-f", "csv", "-o", victim, victim)
    assert r.exit_code == 2 and "is also an input: refusing to overwrite it" in r.stderr
    assert victim.read_bytes() == FIVE.read_bytes()


def test_dash_output_is_stdout_and_table_names_take_both_spellings(run):
    a = run("-q", "parse", "--table", "prof_phases", "-f", "csv", "-o", "-", FIVE)
    b = run("-q", "parse", "--table", "prof-phases", "-f", "csv", FIVE)
    assert a.exit_code == 0 and a.stdout == b.stdout and a.stdout.count("\n") == 169


def test_overview_jsonl_and_csv(run):
    jl = run("parse", "-f", "jsonl", FIVE, SAMPLES / "baseline.log").stdout.splitlines()
    assert len(jl) == 2 and json.loads(jl[1])["source"] == str(SAMPLES / "baseline.log")
    csv = run("parse", "-f", "csv", FIVE).stdout.splitlines()
    assert csv[0].startswith("source,engine,compression,bytes,lines,rows_prof,")
    assert csv[1].startswith(f"{FIVE},sglang,,73602,612,42,168,106,40,1,40,")


def test_quiet_and_verbose_also_after_the_command(run):
    r = run("parse", "-q", "--table", "prof", FIVE)
    assert r.exit_code == 0 and r.stderr == ""


def test_json_floats_are_exact_and_histograms_are_arrays(run):
    rows = json.loads(run("parse", "--table", "requests", "-f", "json", FIVE).stdout)
    log = eaglelog.parse(FIVE)
    assert rows[0]["spec_accept_rate"] == log.requests.spec_accept_rate.iloc[0]
    assert rows[0]["accept_histogram"] == json.loads(log.requests.accept_histogram.iloc[0])
    assert isinstance(rows[0]["accept_histogram"], list)
    prof = json.loads(run("parse", "--table", "prof", "-f", "json", FIVE).stdout)
    assert prof[0]["phase_sum_ms"] == 27.26


def test_a_log_with_two_server_startups_is_two_runs(run, tmp_path):
    two = tmp_path / "two.log"
    two.write_bytes(FIVE.read_bytes() + (SAMPLES / "eagle3_2step.log").read_bytes())
    out = run("-q", "parse", two).stdout
    assert "start-ups   2 server start-ups (lines 3, 615)" in out
    assert "they differ in steps 5 → 2; draft tokens 6 → 3" in out
    d = json.loads(run("-q", "breakeven", "--baseline-toks", "90", "-f", "json",
                       two).stdout)["runs"]
    assert [x["source"] for x in d] == [f"{two} [start-up 1 at line 3]",
                                        f"{two} [start-up 2 at line 615]"]
    (single,) = json.loads(run("-q", "breakeven", "--baseline-toks", "90", "-f", "json",
                               FIVE).stdout)["runs"]
    assert d[0]["cycle_ms"] == single["cycle_ms"] and d[0]["accept_len"] == single["accept_len"]
    log = eaglelog.parse(two)
    assert log.decode.groupby("startup").size().to_dict() == {1: 106, 2: 120}
    assert log.config(str(two), 1)["speculative_num_steps"] == 5
    assert log.config(str(two))["speculative_num_steps"] == 2
    json.dumps(log.config(str(two)))  # plain Python values


def test_console_entry_exit_codes(tmp_path):
    """The process entry point (cli.run: no interpreter teardown) keeps every exit code and
    flushes the output: 0 with the output, 1 for an input error, 2 for usage, 3 for a gate."""
    def sh(*args):
        return subprocess.run([sys.executable, "-m", "eaglelog", *map(str, args)],
                              capture_output=True, text=True)
    ok = sh("-q", "summary", FIVE)
    assert ok.returncode == 0 and ok.stdout.startswith(str(FIVE)) and ok.stderr == ""
    assert ok.stdout.endswith("\n") and "accept length" in ok.stdout
    missing = sh("summary", tmp_path / "nope.log")
    assert missing.returncode == 1
    assert missing.stderr == f"eaglelog: error: {tmp_path / 'nope.log'}: no such file\n"
    usage = sh("summary", "--no-such-option", FIVE)
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1
    assert usage.stderr.startswith("eaglelog: error: No such option '--no-such-option'.")
    assert usage.stderr.endswith(" (see 'eaglelog summary --help')\n")
    assert sh("compare", FIVE).stderr.count("\n") == 1      # usage errors: one line too
    assert "Usage: eaglelog [OPTIONS] COMMAND" in sh().stderr   # alone: the help
    gate = sh("-q", "breakeven", "--baseline-toks", "150", "--check", FIVE)
    assert gate.returncode == 3 and "below" in gate.stdout.lower()
    out = tmp_path / "s.json"
    written = sh("-q", "summary", "-f", "json", "-o", out, FIVE)
    assert written.returncode == 0 and json.loads(out.read_text())["runs"][0]["source"] == \
        str(FIVE)


@pytest.mark.parametrize("rate", ["0", "-1", "abc", "inf", "1e400", "nan", "90+-nan", "90±inf"])
def test_a_baseline_rate_must_be_a_finite_positive_number(run, rate):
    """A rate that is no rate is a usage error (exit 2), never a division by zero or a NaN
    verdict that --check lets pass."""
    r = run("breakeven", "--check", "--baseline-toks", rate, FIVE)
    assert r.exit_code == 2 and "--baseline-toks" in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""


def test_one_run_that_cannot_be_analysed_does_not_hide_the_others(run, write):
    """Several runs: the one with nothing to analyse is one line on stderr and exit 1 at the
    end; the others are still answered."""
    bad = write("one.log", "[2026-03-02 14:00:00 TP0] EAGLE3_PROF (10 cycles, 12 tokens, "
                           "no-sync)\n")
    r = run("-q", "breakeven", "--baseline-toks", "90", "-f", "json", FIVE, bad)
    assert r.exit_code == 1
    assert r.stderr == (f"eaglelog: error: {bad}: no EAGLE3_PROF blocks and no 'Decode batch' "
                        "lines with accept len: nothing to take a cycle time from (is this a "
                        "speculative run?)\n")
    got = json.loads(r.stdout)
    assert got["errors"] == [f"{bad}: no EAGLE3_PROF blocks and no 'Decode batch' lines with "
                             "accept len: nothing to take a cycle time from (is this a "
                             "speculative run?)"]
    (one,) = got["runs"]
    assert one["source"] == str(FIVE) and one["verdict"] in ("above", "below", "inconclusive")


def test_an_input_that_cannot_be_read_is_in_the_json_errors_too(run, write, tmp_path):
    """--keep-going: an empty or missing input is said on stderr when it is read, and is an
    entry of the JSON's "errors" (before the runs that could not be analysed), so that a
    reader of the JSON alone sees every input that gave no answer."""
    empty = write("empty.log", "")
    missing = str(tmp_path / "missing.log")
    for cmd in (["summary"], ["breakeven", "--baseline-toks", "90"], ["reconcile"]):
        r = run("-q", *cmd, "-f", "json", "--keep-going", FIVE, empty, missing)
        assert r.exit_code == 1, (cmd, r.output)
        got = json.loads(r.stdout)
        assert got["errors"] == [f"{empty}: empty file", f"{missing}: no such file"], cmd
        assert [x["source"] for x in got["runs"]] == [str(FIVE)]


def test_help_lists_a_command_s_own_options_first_and_each_table_once(run):
    """Issue 16: a command's help shows its own options, then the shared input options, then
    the output ones; the main help's examples show the main job; --table lists each table
    once (the snake_case spelling still works)."""
    text = run("breakeven", "--help").stdout
    order = [text.index(o) for o in ("--baseline-toks", "--check", "--engine", "--since",
                                     "--format", "--help")]
    assert order == sorted(order)
    main_help = run("--help").stdout
    assert "eaglelog summary --baseline-toks 90 server.log" in main_help
    assert "eaglelog breakeven --baseline-log base.log --by batch server.log" in main_help
    table_help = run("parse", "--help").stdout
    assert "prof-phases" in table_help and "prof_phases|" not in table_help
    assert run("-q", "parse", "--table", "prof_phases", "-f", "csv", FIVE).stdout == \
        run("-q", "parse", "--table", "prof-phases", "-f", "csv", FIVE).stdout


def test_a_time_that_is_not_one_is_a_usage_error(run):
    """--since/--until take a time: anything else exits 2 (a usage error), in one line."""
    for opt in ("--since", "--until"):
        r = run("summary", opt, "garbage", SAMPLES / "eagle3_5step.log")
        assert r.exit_code == 2
        assert r.stderr == (f"eaglelog: error: {opt} 'garbage': not a time (YYYY-MM-DD "
                            "HH:MM[:SS], HH:MM[:SS] or +N[s|m|h] after the first line)\n")
    # a time with a zone (a docker or kubectl stamp pasted): SGLang's clock names none, so it
    # would be taken an offset away without a word; it is refused
    for when in ("2026-03-02T13:01:30Z", "2026-03-02 14:01:30+01:00"):
        r = run("summary", "--since", when, SAMPLES / "eagle3_5step.log")
        assert r.exit_code == 2
        assert r.stderr == (f"eaglelog: error: --since '{when}': a time zone is not taken: the "
                            "log's times are SGLang's local wall clock, which names no zone; "
                            "write the time as the log's prefix prints it (YYYY-MM-DD "
                            "HH:MM[:SS])\n")


def test_json_lines_stay_lines_when_a_value_holds_a_line_separator(run, tmp_path):
    # a damaged decode line whose unparsed tail (the 'extra' column) holds U+2028: str.splitlines
    # and editors end a line there; the machine formats escape it (the same JSON value)
    text = FIVE.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(text) if "Decode batch" in line)
    text[at] = text[at].replace("accept rate: 0.", "accept rate: 0.\u2028", 1)
    log = tmp_path / "ls.log"
    log.write_text("".join(text), encoding="utf-8")
    out = run("parse", "--keep-going", "--table", "decode", "-f", "jsonl", log).stdout
    lines = out.splitlines()
    assert len(lines) == 106 and "\u2028" not in out
    rows = [json.loads(x) for x in lines]
    assert any("\u2028" in (r.get("extra") or "") for r in rows)
    whole = json.loads(run("parse", "--keep-going", "--table", "decode", "-f", "json", log).stdout)
    assert whole == rows
