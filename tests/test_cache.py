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
    from eaglelog.io import parallel
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
    assert ("token_usage" in second.decode.columns) == (columns is None)


# ------------------------------------------------------------ what "unchanged" means (item 8)

def _edit_away_from_the_samples(data: bytes) -> int:
    """The offset of an 'accept len: 2.' in a part of the file that neither the head, the tail
    nor a sampled block covers: only ctime (or the content) can tell the edit."""
    from eaglelog.io import cache
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
    from eaglelog.io import cache
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
    from eaglelog.io import cache
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
    from eaglelog.io import cache
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
    from eaglelog.io import cache
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
    from eaglelog.io import cache
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
    from eaglelog.io import cache
    monkeypatch.setattr(cache, "RACY_NS", 10 ** 18)
    monkeypatch.setattr(cache, "RACY_CRC_MAX", 1000)
    log = tmp_path / "live.log"
    log.write_bytes(FIVE.read_bytes())
    assert cache.result_key("summary", {}, [str(log)]) is None
    eaglelog.parse(log, cache=True)
    assert not eaglelog.parse(log, cache=True).sources[0].cached


# ------------------------------------------------- size limit, LRU eviction, cache info|clear
# (issue 16).  Real entries written by the cache's own functions; their last use is their
# modification time, set here with os.utime to give a known order.

from eaglelog.io import cache as _cache   # noqa: E402

OLD = 1_600_000_000.0        # a last use long ago (2020-09-13)


def _key(i: int) -> str:
    return f"{i:064x}"       # result keys of one length: entries of one size


def _results(n: int, start: int = 0) -> list[str]:
    """n result entries, each the same number of bytes; returns their paths, oldest first
    (last used OLD + 10·i s)."""
    paths = []
    for i in range(start, start + n):
        _cache.store_result(_key(i), "x" * 1000, "", 0)
        p = _cache._result_path(_key(i))
        os.utime(p, (OLD + 10 * i, OLD + 10 * i))
        paths.append(p)
    return paths


def _left(cache_on) -> list[str]:
    d = cache_on / "results"
    return sorted(p.name[:-5].lstrip("0") or "0" for p in d.iterdir()) if d.exists() else []


@pytest.mark.parametrize("text, want", [
    ("500M", 500 << 20), ("2G", 2 << 30), ("2g", 2 << 30), ("1.5GiB", 3 << 29),
    ("2GB", 2_000_000_000), ("10kB", 10_000), ("64K", 65536), ("4096", 4096), ("0", 0),
    (" 3 MiB ", 3 << 20), ("1T", 1 << 40), ("none", None), ("Unlimited", None)])
def test_cache_sizes_are_read_as_documented(text, want):
    assert _cache.parse_size(text) == want


@pytest.mark.parametrize("text", ["5X", "-1", "1iB", "G", "2 G B", "1e9", "lots"])
def test_a_size_that_is_not_one_is_refused(text):
    with pytest.raises(ValueError):
        _cache.parse_size(text)


def test_the_limit_defaults_to_2_gib_and_comes_from_the_variable(monkeypatch):
    monkeypatch.delenv("EAGLELOG_CACHE_MAX", raising=False)
    assert _cache.limit() == (2 << 30, "default")
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "500M")
    assert _cache.limit() == (524_288_000, "EAGLELOG_CACHE_MAX")
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "5X")
    with pytest.raises(_cache.CacheConfigError) as e:
        _cache.limit()
    assert e.value.exit_code == 2 and "EAGLELOG_CACHE_MAX='5X' is not a size" in str(e.value)


def test_least_recently_used_entries_go_first_and_a_hit_counts_as_a_use(cache_on, monkeypatch):
    monkeypatch.setattr(_cache, "IN_USE_S", 0)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "none")
    paths = _results(4)                                     # 0, 1, 2, 3: oldest first
    size = os.path.getsize(paths[0])
    assert {os.path.getsize(p) for p in paths} == {size} and size > 1000
    assert _cache.load_result(_key(0))["stdout"] == "x" * 1000     # a hit: 0 is the newest
    assert os.path.getmtime(paths[0]) > OLD + 1e6
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", str(3 * size))
    _cache.store_result(_key(4), "x" * 1000, "", 0)         # 5 entries, room for 3
    assert _left(cache_on) == ["0", "3", "4"]               # 1 and 2 were the least recent
    assert _cache.info()["bytes"] == 3 * size


def test_eviction_returns_what_it_deleted_oldest_first(cache_on, monkeypatch):
    monkeypatch.setattr(_cache, "IN_USE_S", 0)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "none")
    paths = _results(5)
    size = os.path.getsize(paths[0])
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", str(2 * size + size // 2))   # room for 2.5
    gone = _cache.evict(keep=paths[0])
    assert [os.path.basename(e.path) for e in gone] == \
        [os.path.basename(p) for p in paths[1:4]]           # never 0: it is kept
    assert [e.bytes for e in gone] == [size] * 3 and [e.kind for e in gone] == ["results"] * 3
    assert _left(cache_on) == ["0", "4"]


def test_the_entry_just_written_stays_even_alone_over_the_limit(cache_on, monkeypatch):
    monkeypatch.setattr(_cache, "IN_USE_S", 0)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "none")
    _results(2)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "10")           # 10 bytes: nothing fits
    _cache.store_result(_key(7), "y" * 5000, "", 0)
    assert _left(cache_on) == ["7"]
    assert _cache.load_result(_key(7))["stdout"] == "y" * 5000


def test_an_entry_used_in_the_last_minute_is_not_evicted(cache_on, monkeypatch):
    """Another command may be reading it: the cache exceeds the limit for a while instead."""
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "none")
    paths = _results(3)
    os.utime(paths[1])                                       # used just now
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "10")
    _cache.store_result(_key(9), "x" * 1000, "", 0)
    assert _left(cache_on) == ["1", "9"]


def test_tables_and_remote_copies_share_the_lru_order(cache_on, tmp_path, monkeypatch):
    """A fetched copy (remote/) is in use as long as its table entry is: a hit on the tables
    needs the copy in place, though it does not read it."""
    monkeypatch.setattr(_cache, "IN_USE_S", 0)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "none")
    (cache_on / "remote").mkdir(parents=True)
    copy = cache_on / "remote" / ("a" * 32)                  # as remote.py names a copy
    copy.write_bytes(FIVE.read_bytes())
    eaglelog.parse(copy, cache=True)
    tdir = _cache.table_dir(str(copy), "auto", None)
    assert os.path.isdir(tdir)
    old_result = _results(1)[0]                              # used at OLD
    os.utime(copy, (OLD + 100, OLD + 100))                   # fetched long ago …
    os.utime(tdir, (OLD + 500, OLD + 500))                   # … its tables used later
    later = _results(1, start=1)[0]
    os.utime(later, (OLD + 300, OLD + 300))                  # between the two
    kinds = {e.kind: e.bytes for e in _cache._scan(str(cache_on))[0] if e.kind != "results"}
    assert kinds["remote"] == len(FIVE.read_bytes()) == copy.stat().st_size
    assert kinds["tables"] == sum(f.stat().st_size for f in os.scandir(tdir))
    res = os.path.getsize(old_result)
    # room for the copy and its tables only: both results go, the copy (used at +500) stays
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", str(kinds["remote"] + kinds["tables"] + res // 2))
    gone = _cache.evict()
    assert [e.path for e in gone] == [old_result, later]
    assert copy.exists() and os.path.isdir(tdir)
    # room for less: the copy (last used +500 through its tables) and then the tables
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", str(kinds["tables"]))
    gone = _cache.evict()
    assert [e.kind for e in gone] == ["remote"] and not copy.exists() and os.path.isdir(tdir)


def test_a_table_hit_records_the_use(cache_on, tmp_path):
    log = tmp_path / "s.log"
    log.write_bytes(FIVE.read_bytes())
    eaglelog.parse(log, cache=True)
    tdir = _cache.table_dir(str(log), "auto", None)
    os.utime(tdir, (OLD, OLD))
    assert eaglelog.parse(log, cache=True).sources[0].cached
    assert os.path.getmtime(tdir) > OLD + 1e6
    st = os.stat(log)
    assert eaglelog.parse(log, cache=True).sources[0].cached      # the input was not touched
    assert os.stat(log).st_ctime_ns == st.st_ctime_ns


def test_an_eviction_in_another_process_makes_this_one_skip(cache_on, monkeypatch):
    import fcntl
    monkeypatch.setattr(_cache, "IN_USE_S", 0)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "none")
    _results(3)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "10")
    fd = os.open(cache_on / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert _cache.evict() == [] and len(_left(cache_on)) == 3
    finally:
        os.close(fd)
    assert len(_cache.evict()) == 3 and _left(cache_on) == []


def _writer(root: str, who: int, n: int) -> None:
    os.environ["XDG_CACHE_HOME"] = root
    os.environ["EAGLELOG_CACHE_MAX"] = "20K"
    _cache.IN_USE_S = 0
    for i in range(n):
        key = _key(who * 1000 + i)
        _cache.store_result(key, f"{who}:{i:03d}:" + "z" * 3000, "", 0)
        for j in range(max(0, i - 3), i + 1):                # read back what may be evicted
            got = _cache.load_result(_key(who * 1000 + j))
            assert got is None or got["stdout"] == f"{who}:{j:03d}:" + "z" * 3000


def test_concurrent_writers_under_a_small_limit_never_crash_or_read_a_mix(cache_on, tmp_path,
                                                                          monkeypatch):
    import multiprocessing as mp
    root = str(cache_on.parent)
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(root, w, 60)) for w in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    names = [p.name for p in (cache_on / "results").iterdir()]
    assert not [n for n in names if n.startswith(".")]       # no temporary left behind
    size = os.path.getsize(cache_on / "results" / names[0])
    # within the limit, but for the other writer's last entry (its eviction skipped its turn)
    assert 20 * 1024 - size < len(names) * size <= 20 * 1024 + size
    for n in names:                                          # every entry whole
        got = _cache.load_result(n[:-5])
        who, i = int(n[:-5], 16) // 1000, int(n[:-5], 16) % 1000
        assert got["stdout"] == f"{who}:{i:03d}:" + "z" * 3000
    monkeypatch.setattr(_cache, "IN_USE_S", 0)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "20K")
    _cache.evict()                                           # the next turn: within it
    assert len(list((cache_on / "results").iterdir())) == 20 * 1024 // size == 6


# ------------------------------------------------------------------- eaglelog cache info|clear

def test_cache_info_shows_path_entries_size_and_limit(cache_on, tmp_path, run, monkeypatch):
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "none")
    empty = run("cache", "info")
    assert empty.exit_code == 0 and empty.stderr == ""
    assert empty.stdout.splitlines() == [
        f"path       {cache_on}", "entries    0", "size       0 B (0 bytes)",
        "limit      no limit (EAGLELOG_CACHE_MAX=none)"]
    log = tmp_path / "s.log"
    log.write_bytes(FIVE.read_bytes())
    assert run("summary", "--baseline-toks", "90", log).exit_code == 0
    _results(2)
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "500M")
    res = sorted(os.path.getsize(p) for p in (cache_on / "results").iterdir())
    tables = sum(f.stat().st_size for d in (cache_on / "tables").iterdir()
                 for f in os.scandir(d))
    got = json.loads(run("cache", "info", "-f", "json").stdout)
    assert got == {"path": str(cache_on), "entries": 4, "bytes": sum(res) + tables,
                   "limit": 524_288_000, "limit_from": "EAGLELOG_CACHE_MAX",
                   "kinds": {"results": {"entries": 3, "bytes": sum(res)},
                             "tables": {"entries": 1, "bytes": tables},
                             "remote": {"entries": 0, "bytes": 0}},
                   "temporary": {"files": 0, "bytes": 0}, "off": False}
    text = run("cache", "info").stdout.splitlines()
    assert text[1] == (f"entries    4: results 3 ({_cache.fmt_size(sum(res))}), "
                       f"table sets 1 ({_cache.fmt_size(tables)})")
    assert text[2] == f"size       {_cache.fmt_size(sum(res) + tables)} " \
                      f"({sum(res) + tables:,} bytes)"
    assert text[3] == "limit      500.0 MiB (EAGLELOG_CACHE_MAX)"
    monkeypatch.delenv("EAGLELOG_CACHE_MAX")
    assert run("cache", "info").stdout.splitlines()[3] == \
        "limit      2.0 GiB (default; set EAGLELOG_CACHE_MAX, e.g. 500M)"


def test_cache_clear_removes_entries_and_says_how_much(cache_on, tmp_path, run, monkeypatch):
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "none")
    paths = _results(3)
    total = sum(os.path.getsize(p) for p in paths)
    (cache_on / "results" / ".tmp-live").write_bytes(b"a write in progress")
    stale = cache_on / "results" / ".tmp-killed"
    stale.write_bytes(b"k" * 100)
    os.utime(stale, (OLD, OLD))
    got = run("cache", "clear")
    assert got.exit_code == 0 and got.stderr == ""
    assert got.stdout == (f"removed 3 entries from {cache_on}: {_cache.fmt_size(total + 100)} "
                          f"freed ({total + 100:,} bytes); 1 file(s) of writes in progress "
                          "left alone\n")
    assert sorted(p.name for p in (cache_on / "results").iterdir()) == [".tmp-live"]
    (cache_on / "results" / ".tmp-live").unlink()
    again = run("cache", "clear", "-f", "json")
    assert json.loads(again.stdout) == {"path": str(cache_on), "entries": 0, "bytes": 0,
                                        "in_progress": 0}
    assert run("cache", "clear").stdout == f"the cache in {cache_on} is empty: nothing to remove\n"
    assert json.loads(run("cache", "info", "-f", "json").stdout)["entries"] == 0


def test_a_bad_cache_limit_is_a_one_line_usage_error(cache_on, tmp_path, run, monkeypatch):
    monkeypatch.setenv("EAGLELOG_CACHE_MAX", "2 gigs")
    log = tmp_path / "s.log"
    log.write_bytes(FIVE.read_bytes())
    want = ("eaglelog: error: EAGLELOG_CACHE_MAX='2 gigs' is not a size: give bytes with an "
            "optional unit (500M, 2G, 1.5GiB) or 'none' for no limit\n")
    for args in (("cache", "info"), ("summary", "--baseline-toks", "90", log),
                 ("parse", "-o", tmp_path / "out.txt", log)):
        got = run(*args)
        assert (got.exit_code, got.stdout, got.stderr) == (2, "", want), args
    assert run("--no-cache", "summary", "--baseline-toks", "90", log).exit_code == 0


def test_no_cache_before_the_command(cache_on, tmp_path, run):
    log = tmp_path / "s.log"
    log.write_bytes(FIVE.read_bytes())
    want = run("summary", "--no-cache", "--baseline-toks", "90", log)
    for args in (("--no-cache", "summary"), ("-q", "--no-cache", "summary"),
                 ("--no-cache", "-q", "summary")):
        got = run(*args, "--baseline-toks", "90", log)
        assert (got.exit_code, got.stdout) == (0, want.stdout), args
    assert not cache_on.exists()                      # nothing read or written
    assert run("--no-cache", "parse", log).exit_code == 0 and not cache_on.exists()
    assert run("summary", "--baseline-toks", "90", log).stdout == want.stdout
    assert json.loads(run("cache", "info", "-f", "json").stdout)["entries"] == 2
