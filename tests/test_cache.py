"""The result and table caches: hits, invalidation, incremental parse of a grown log."""
import os

import pandas as pd
import pytest

import eaglelog
from conftest import SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"
TWO = SAMPLES / "eagle3_2step.log"


@pytest.fixture
def cache_on(monkeypatch, tmp_path):
    monkeypatch.delenv("EAGLELOG_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "eaglelog"


def frames_equal(a, b):
    for t in eaglelog.TABLES:
        pd.testing.assert_frame_equal(a.table(t), b.table(t), check_categorical=False)


def test_table_cache_hit_gives_the_same_tables(cache_on, tmp_path):
    log = tmp_path / "s.log"
    log.write_bytes(FIVE.read_bytes())
    first = eaglelog.parse(log, cache=True)
    assert not first.sources[0].cached and (cache_on / "tables").exists()
    second = eaglelog.parse(log, cache=True)
    assert second.sources[0].cached
    frames_equal(first, second)
    assert second.sources[0].skipped == first.sources[0].skipped == 47
    assert [d.message for d in second.diagnostics] == [d.message for d in first.diagnostics]


def test_a_grown_log_is_parsed_from_where_the_cache_stopped(cache_on, tmp_path):
    log = tmp_path / "grow.log"
    log.write_bytes(FIVE.read_bytes())
    eaglelog.parse(log, cache=True, chunk_size=4096)
    with open(log, "ab") as f:
        f.write(TWO.read_bytes())
    grown = eaglelog.parse(log, cache=True, chunk_size=4096)
    fresh = eaglelog.parse(log, chunk_size=4096)
    assert not grown.sources[0].cached
    frames_equal(fresh, grown)
    assert grown.sources[0].lines == fresh.sources[0].lines == 1244
    assert grown.decode.groupby("startup").size().to_dict() == {1: 106, 2: 120}


def test_a_changed_file_of_the_same_size_is_not_taken_from_the_cache(cache_on, tmp_path):
    log = tmp_path / "c.log"
    data = FIVE.read_bytes()
    log.write_bytes(data)
    eaglelog.parse(log, cache=True)
    changed = data.replace(b"accept len: 2.38", b"accept len: 9.99", 1)
    assert len(changed) == len(data)
    st = os.stat(log)
    log.write_bytes(changed)
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))     # same size and mtime
    again = eaglelog.parse(log, cache=True)
    assert not again.sources[0].cached and again.decode.accept_len.iloc[0] == 9.99


def test_repeated_command_is_served_from_the_result_cache(cache_on, tmp_path, run):
    log = tmp_path / "r.log"
    log.write_bytes(FIVE.read_bytes())
    a = run("summary", "--baseline-toks", "90", log)
    assert len(list((cache_on / "results").iterdir())) == 1
    b = run("summary", "--baseline-toks", "90", log)
    assert (a.exit_code, a.stdout, a.stderr) == (b.exit_code, b.stdout, b.stderr)
    c = run("summary", "--baseline-toks", "91", log)       # other options: another entry
    assert c.stdout != a.stdout and len(list((cache_on / "results").iterdir())) == 2
    assert run("breakeven", "--baseline-toks", "90", "--check", log).exit_code == 3
    assert run("breakeven", "--baseline-toks", "90", "--check", log).exit_code == 3  # cached 3
    d = run("summary", "--no-cache", "--baseline-toks", "92", log)
    assert d.exit_code == 0 and len(list((cache_on / "results").iterdir())) == 3


def test_the_cached_second_run_is_fast_and_skips_pandas(cache_on, tmp_path):
    """Not a timing assertion: the cached path must not import pandas (that is what makes it
    fast; benchmarks/cache_speed.py measures it)."""
    import subprocess
    import sys
    log = tmp_path / "f.log"
    log.write_bytes(FIVE.read_bytes())
    env = {**os.environ}
    cmd = [sys.executable, "-X", "importtime", "-m", "eaglelog", "summary", str(log)]
    subprocess.run(cmd, capture_output=True, env=env, check=True)
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    assert "pandas" not in second.stderr.split("import time:", 1)[-1].replace(
        "import time: self [us] | cumulative | imported package", "")
    assert "cycle           27.28 ms" in second.stdout


def test_engine_choices_match_the_registry():
    from eaglelog.cli import ENGINE_CHOICES
    from eaglelog.parsers import ENGINES
    assert ENGINE_CHOICES == ("auto",) + tuple(ENGINES)


def test_a_large_grown_log_resumes_after_a_parallel_scan(cache_on, tmp_path, monkeypatch):
    from eaglelog import parallel
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    monkeypatch.setenv("EAGLELOG_WORKERS", "3")
    log = tmp_path / "big.log"
    log.write_bytes(FIVE.read_bytes() * 3)
    eaglelog.parse(log, cache=True)
    with open(log, "ab") as f:
        f.write(TWO.read_bytes())
    grown = eaglelog.parse(log, cache=True)
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    fresh = eaglelog.parse(log)
    frames_equal(fresh, grown)
    assert all(d.source == str(log) for d in grown.diagnostics)


def test_an_edit_in_the_middle_plus_an_append_is_not_resumed(cache_on, tmp_path):
    log = tmp_path / "e.log"
    data = FIVE.read_bytes() * 4
    log.write_bytes(data)
    eaglelog.parse(log, cache=True, chunk_size=4096)
    mid = len(data) // 2
    i = data.index(b"accept len: 2.", mid)
    edited = data[:i] + b"accept len: 7." + data[i + 14:] + TWO.read_bytes()
    log.write_bytes(edited)
    again = eaglelog.parse(log, cache=True, chunk_size=4096)
    fresh = eaglelog.parse(log, chunk_size=4096)
    frames_equal(fresh, again)
    assert (again.decode.accept_len >= 7).sum() == 1


@pytest.mark.parametrize("columns", [None, "analysis"])
def test_large_cached_tables_read_a_column_at_a_time(cache_on, tmp_path, monkeypatch, columns):
    """A cached table of BIG_TABLE rows or more is read column by column (its arrow and pandas
    forms never whole at once): the same frames, every dtype, with or without a projection."""
    from eaglelog import api
    from eaglelog.schema import ANALYSIS_COLUMNS
    monkeypatch.setattr(api, "BIG_TABLE", 1)
    cols = ANALYSIS_COLUMNS if columns else None
    log = tmp_path / "s.log"
    log.write_bytes(FIVE.read_bytes() + (SAMPLES / "vllm_v1.log").read_bytes())
    first = eaglelog.parse(log, cache=True, columns=cols, engine="sglang")
    second = eaglelog.parse(log, cache=True, columns=cols, engine="sglang")
    assert second.sources[0].cached and not first.sources[0].cached
    for t in eaglelog.TABLES:
        pd.testing.assert_frame_equal(first.table(t), second.table(t), obj=t)
    assert len(second.decode) == 106 and len(second.server_args) == 1
    assert ("num_tokens" in second.decode.columns) == (columns is None)
