"""The result and table caches: hits, invalidation, incremental parse of a grown log."""
import json
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


# ------------------------------------------------------------ what "unchanged" means (item 8)

def _edit_away_from_the_samples(data: bytes) -> int:
    """The offset of an 'accept len: 2.' in a part of the file that neither the head, the tail
    nor a sampled block covers: only ctime (or the content) can tell the edit."""
    from eaglelog import cache
    fp = cache.FP_BYTES
    n, blk = getattr(cache, "SAMPLES", 16), getattr(cache, "SAMPLE_BYTES", 4096)
    span = len(data) - 2 * fp - blk
    covered = [(0, fp), (len(data) - fp, len(data))] + \
        [(fp + span * k // (n + 1), fp + span * k // (n + 1) + blk) for k in range(1, n + 1)]
    at = fp
    while True:
        at = data.index(b"accept len: 2.", at + 1)
        if all(at + 16 <= a or at >= b for a, b in covered):
            return at + len(b"accept len: ")


def _rewrite_in_place(log, data: bytes, at: int, new: bytes, how: str) -> None:
    """Change bytes in the middle, keep size, inode and mtime: in place, or as `cp -p` does."""
    import shutil
    st = os.stat(log)
    edited = data[:at] + new + data[at + len(new):]
    if how == "in place":
        with open(log, "r+b") as f:
            f.seek(at)
            f.write(new)
    else:                              # cp -p: the copy's mtime, written into the same inode
        src = log.parent / "edited.tmp"
        src.write_bytes(edited)
        os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
        shutil.copy2(src, log)
    os.utime(log, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(log)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (st.st_size, st.st_mtime_ns,
                                                                st.st_ino)
    assert log.read_bytes() == edited


@pytest.mark.parametrize("how", ["in place", "cp -p"])
def test_an_edit_away_from_head_tail_and_samples_is_seen(cache_on, tmp_path, monkeypatch, how):
    """Same size, mtime and inode, the edit far from every sampled block: the inode change
    time tells (the state is not racy here, so no content check helps)."""
    from eaglelog import cache
    monkeypatch.setattr(cache, "RACY_NS", 0, raising=False)
    log = tmp_path / "m.log"
    data = FIVE.read_bytes() * 8
    log.write_bytes(data)
    first = eaglelog.parse(log, cache=True)
    at = _edit_away_from_the_samples(data)
    old = data[at:at + 4]
    _rewrite_in_place(log, data, at, b"9.99", how)
    again = eaglelog.parse(log, cache=True)
    assert not again.sources[0].cached
    assert (again.decode.accept_len == 9.99).sum() == 1 + (first.decode.accept_len == 9.99).sum()
    assert old != b"9.99"


def test_the_result_cache_sees_an_edit_that_keeps_size_and_mtime(cache_on, tmp_path, run,
                                                                 monkeypatch):
    from eaglelog import cache
    monkeypatch.setattr(cache, "RACY_NS", 0, raising=False)
    log = tmp_path / "r.log"
    data = FIVE.read_bytes() * 8
    log.write_bytes(data)
    before = run("summary", "--baseline-toks", "90", log)
    at = _edit_away_from_the_samples(data)
    _rewrite_in_place(log, data, at, b"9.99", "cp -p")
    getattr(cache, "_STATES", {}).clear()
    after = run("summary", "--baseline-toks", "90", log)
    fresh = run("summary", "--no-cache", "--baseline-toks", "90", log)
    assert after.stdout == fresh.stdout != before.stdout


def test_a_racy_state_is_checked_by_content(cache_on, tmp_path, monkeypatch):
    """A file changed less than RACY_NS before its state was taken: an edit within the same
    ctime tick (simulated: the same stat identity) is seen by the content CRC."""
    from eaglelog import cache
    monkeypatch.setattr(cache, "RACY_NS", 10 ** 18)
    log = tmp_path / "racy.log"
    data = FIVE.read_bytes() * 8
    log.write_bytes(data)
    old = cache.file_state(str(log))
    assert old["racy"] and old["content"] is not None
    at = _edit_away_from_the_samples(data)
    same_stat = {k: v for k, v in old.items() if k != "content"}
    assert cache.unchanged(old, same_stat, str(log))
    log.write_bytes(data[:at] + b"9.99" + data[at + 4:])
    assert not cache.unchanged(old, same_stat, str(log))
    log.write_bytes(data)
    assert cache.unchanged(old, same_stat, str(log))


def test_a_racy_result_entry_is_checked_by_content_and_then_settled(cache_on, tmp_path,
                                                                    monkeypatch):
    from eaglelog import cache
    monkeypatch.setattr(cache, "RACY_NS", 10 ** 18)
    log = tmp_path / "racy.log"
    data = FIVE.read_bytes() * 2
    log.write_bytes(data)
    key = cache.result_key("summary", {"x": 1}, [str(log)])
    cache.store_result(key, "out\n", "", 0)
    stored = json.loads((cache_on / "results" / f"{key}.json").read_text())
    assert list(stored["checks"].values()) == [cache.file_state(str(log))["content"]]
    assert cache.load_result(key)["stdout"] == "out\n"
    # the key stays the same once the file is no longer racy: the entry is settled
    monkeypatch.setattr(cache, "RACY_NS", 0)
    cache._STATES.clear()
    assert cache.result_key("summary", {"x": 1}, [str(log)]) == key
    assert cache.load_result(key)["stdout"] == "out\n"
    assert "checks" not in json.loads((cache_on / "results" / f"{key}.json").read_text())
    # an edit of a racy entry's file, however the stat looks, is not served
    monkeypatch.setattr(cache, "RACY_NS", 10 ** 18)
    cache._STATES.clear()
    key = cache.result_key("summary", {"x": 2}, [str(log)])
    cache.store_result(key, "out\n", "", 0)
    log.write_bytes(data[:100] + b"X" + data[101:])
    assert cache.load_result(key) is None


def test_a_racy_table_entry_is_served_after_a_content_check_and_settled(cache_on, tmp_path,
                                                                        monkeypatch):
    from eaglelog import cache
    monkeypatch.setattr(cache, "RACY_NS", 10 ** 18)
    log = tmp_path / "s.log"
    log.write_bytes(FIVE.read_bytes())
    first = eaglelog.parse(log, cache=True)
    d = cache.table_dir(str(log), "auto", None)
    assert json.loads(open(os.path.join(d, "meta.json")).read())["state"]["racy"]
    monkeypatch.setattr(cache, "RACY_NS", 0)
    cache._STATES.clear()
    second = eaglelog.parse(log, cache=True)
    assert second.sources[0].cached
    frames_equal(first, second)
    assert "racy" not in json.loads(open(os.path.join(d, "meta.json")).read())["state"]
    assert eaglelog.parse(log, cache=True).sources[0].cached


def test_a_large_racy_file_is_not_served_from_the_caches(cache_on, tmp_path, monkeypatch):
    """A big log being written: no content check (it would read it all), so no cache hit."""
    from eaglelog import cache
    monkeypatch.setattr(cache, "RACY_NS", 10 ** 18)
    monkeypatch.setattr(cache, "RACY_CRC_MAX", 1000)
    log = tmp_path / "live.log"
    log.write_bytes(FIVE.read_bytes())
    assert cache.result_key("summary", {}, [str(log)]) is None
    eaglelog.parse(log, cache=True)
    assert not eaglelog.parse(log, cache=True).sources[0].cached
