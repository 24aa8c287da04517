"""The analyses read only schema.ANALYSIS_COLUMNS of the decode and prefill tables: with that
projection every analysis command prints exactly what it prints from the whole tables."""
import pandas as pd
import pytest

import eaglelog
from eaglelog import schema
from conftest import SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"
TWO = SAMPLES / "eagle3_2step.log"
BATCH, BATCH_BASE = SAMPLES / "batch_eagle3.log", SAMPLES / "batch_baseline.log"
SWEEP = sorted((SAMPLES / "sweep").glob("*.log"))

COMMANDS = [
    ("summary", "--baseline-toks", "90", FIVE),
    ("summary", "-f", "json", FIVE, TWO),
    ("breakeven", "--baseline-toks", "90±3", "-f", "json", FIVE),
    ("breakeven", "--baseline-log", BATCH_BASE, "--by", "batch", "-f", "json", BATCH),
    ("breakeven", "--baseline-log", SAMPLES / "baseline.log", FIVE),
    ("reconcile", "-f", "json", FIVE),
    ("compare", "-f", "json", FIVE, TWO),
    ("compare", "--test", "mannwhitney", FIVE, TWO),
    ("sweep", "--baseline-toks", "90", "-f", "json", *SWEEP),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(str(x) for x in a[:3]))
def test_every_analysis_gives_the_same_answer_from_the_projection(run, monkeypatch, args):
    projected = run("-q", *args)
    monkeypatch.setattr(schema, "ANALYSIS_COLUMNS", None)       # every column
    whole = run("-q", *args)
    assert projected.exit_code == whole.exit_code == 0
    assert projected.stdout == whole.stdout and len(projected.stdout) > 200


def test_export_and_report_from_the_projection(run, monkeypatch, tmp_path):
    outs = []
    for cols in (schema.ANALYSIS_COLUMNS, None):
        monkeypatch.setattr(schema, "ANALYSIS_COLUMNS", cols)
        out = tmp_path / f"run-{cols is None}.json"
        assert run("-q", "export", FIVE, "-o", out).exit_code == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]


def test_projected_tables_hold_only_those_columns():
    log = eaglelog.parse(FIVE, columns=schema.ANALYSIS_COLUMNS)
    full = eaglelog.parse(FIVE)
    for t in ("decode", "prefill"):
        assert set(log.table(t).columns) <= set(schema.ANALYSIS_COLUMNS[t])
        keep = list(log.table(t).columns)
        pd.testing.assert_frame_equal(log.table(t), full.table(t)[keep], check_categorical=False)
    assert "token_usage" in full.decode and "token_usage" not in log.decode
    pd.testing.assert_frame_equal(log.prof, full.prof)


def test_the_table_cache_serves_a_projection_only_what_it_holds(monkeypatch, tmp_path):
    monkeypatch.delenv("EAGLELOG_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "s.log"
    path.write_bytes(FIVE.read_bytes())
    a = eaglelog.parse(path, cache=True, columns=schema.ANALYSIS_COLUMNS)
    b = eaglelog.parse(path, cache=True, columns=schema.ANALYSIS_COLUMNS)
    assert not a.sources[0].cached and b.sources[0].cached
    full = eaglelog.parse(path, cache=True)          # needs every column: not from the cache
    assert not full.sources[0].cached and "num_tokens" in full.decode
    again = eaglelog.parse(path, cache=True, columns=schema.ANALYSIS_COLUMNS)
    assert again.sources[0].cached                   # the whole tables serve a projection
    assert set(again.decode.columns) <= set(schema.ANALYSIS_COLUMNS["decode"])
    pd.testing.assert_frame_equal(again.decode, a.decode, check_categorical=False)



def test_memory_trim_reaches_glibc():
    from eaglelog import _memory
    _memory.trim()
    assert _memory._libc not in (None, False)     # Linux with glibc, as CI runs

