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
    assert "eaglelog: note:" in r.stderr and "eaglelog: note:" not in out


def test_overview_json(run):
    r = run("parse", "-f", "json", FIVE, SAMPLES / "baseline.log")
    items = json.loads(r.stdout)
    assert [i["source"] for i in items] == [str(FIVE), str(SAMPLES / "baseline.log")]
    five = items[0]
    assert five["tables"] == {"prof": 42, "prof_phases": 168, "decode": 106, "prefill": 40,
                              "server_args": 1, "requests": 40}
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
    assert "Examples:" in run("-h").stdout


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
