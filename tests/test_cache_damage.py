"""Damaged, foreign and stale cache entries: never served, never an error, rebuilt (issue 13,
items 7, 8 and 15)."""
import json
import os
import shutil
import threading
import time

import pandas as pd
import pytest

import eaglelog
from eaglelog.io import cache
from conftest import SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"
TWO = SAMPLES / "eagle3_2step.log"


@pytest.fixture
def cache_on(monkeypatch, tmp_path):
    monkeypatch.delenv("EAGLELOG_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    getattr(cache, "_STATES", {}).clear()      # the states this process took
    return tmp_path / "xdg" / "eaglelog"


def frames_equal(a, b):
    for t in eaglelog.TABLES:
        pd.testing.assert_frame_equal(a.table(t), b.table(t), check_categorical=False, obj=t)


def entry(log):
    d = cache.table_dir(str(log), "auto", None)
    assert os.path.isfile(os.path.join(d, "meta.json"))
    return d


def cached_log(tmp_path, name="s.log", data=None):
    log = tmp_path / name
    log.write_bytes(FIVE.read_bytes() if data is None else data)
    first = eaglelog.parse(log, cache=True)
    assert not first.sources[0].cached
    return log, first, entry(log)


def assert_reparsed_and_rebuilt(log, first):
    """The damaged entry is not served: the tables are parsed again (and equal a fresh parse),
    and the entry is whole again afterwards (the next run is a hit)."""
    again = eaglelog.parse(log, cache=True)
    assert not again.sources[0].cached
    frames_equal(first, again)
    assert [str(d) for d in again.diagnostics] == [str(d) for d in first.diagnostics]
    third = eaglelog.parse(log, cache=True)
    assert third.sources[0].cached
    frames_equal(first, third)


# ------------------------------------------------------------------------ damaged table entries

def test_a_truncated_parquet_is_dropped_and_rebuilt(cache_on, tmp_path):
    log, first, d = cached_log(tmp_path)
    p = os.path.join(d, "decode.parquet")
    data = open(p, "rb").read()
    open(p, "wb").write(data[: len(data) // 2])
    assert_reparsed_and_rebuilt(log, first)


def test_a_damaged_data_page_is_not_served(cache_on, tmp_path):
    """Bytes flipped inside the column data (the footer intact): the page checksums fail."""
    log, first, d = cached_log(tmp_path)
    import pyarrow.parquet as pq
    p = os.path.join(d, "decode.parquet")
    md = pq.ParquetFile(p).metadata
    col = md.row_group(0).column(md.schema.names.index("accept_len"))
    at = (col.dictionary_page_offset or col.data_page_offset) + col.total_compressed_size // 2
    data = bytearray(open(p, "rb").read())
    data[at] ^= 0x55
    open(p, "wb").write(bytes(data))
    assert_reparsed_and_rebuilt(log, first)


@pytest.mark.parametrize("what", ["decode.parquet", "meta.json"])
def test_a_directory_in_place_of_a_cache_file(cache_on, tmp_path, what):
    log, first, d = cached_log(tmp_path)
    os.unlink(os.path.join(d, what))
    os.makedirs(os.path.join(d, what, "x"))
    assert_reparsed_and_rebuilt(log, first)


def test_a_file_in_place_of_the_entry_directory(cache_on, tmp_path):
    log, first, d = cached_log(tmp_path)
    shutil.rmtree(d)
    open(d, "w").write("not a directory")
    assert_reparsed_and_rebuilt(log, first)


def _rewrite_meta(d, change, resign=True):
    p = os.path.join(d, "meta.json")
    meta = json.load(open(p))
    meta = change(meta)
    if resign and isinstance(meta, dict) and hasattr(cache, "_digest"):
        # a checksum that matches the damage
        body = {k: v for k, v in meta.items() if k != "sum"}
        meta["sum"] = cache._digest(body)
    open(p, "w").write(json.dumps(meta))


@pytest.mark.parametrize("change,resign", [
    (lambda m: [], False),
    (lambda m: "meta", False),
    (lambda m: {}, False),
    (lambda m: {**m, "info": [1, 2, 3, 4]}, False),            # checksum no longer matches
    (lambda m: {**m, "info": "many"}, True),
    (lambda m: {**m, "info": [1, 2, 3]}, True),
    (lambda m: {**m, "state": 5}, True),
    (lambda m: {**m, "state": {**m["state"], "size": "73602"}}, True),
    (lambda m: {**m, "diags": [[1, "kind"]]}, True),
    (lambda m: {**m, "diags": [[True, "k", "m", "warning", 0]]}, True),
    (lambda m: {**m, "engine": "nginx"}, True),
    (lambda m: {**m, "safe": {"offset": "end"}}, True),
    (lambda m: {**m, "columns": {"decode": "line_no"}}, True),
    (lambda m: {**m, "tables": {}}, True),
    (lambda m: {k: v for k, v in m.items() if k != "state"}, True),
    (lambda m: {**m, "version": 1}, True),
])
def test_meta_of_the_wrong_shape_is_dropped(cache_on, tmp_path, change, resign):
    log, first, d = cached_log(tmp_path)
    _rewrite_meta(d, change, resign)
    assert_reparsed_and_rebuilt(log, first)


@pytest.mark.parametrize("text", [b"", b"{", b"\xff\xfe\x00garbage", b"[" * 100000 + b"]" * 100000])
def test_meta_that_is_not_json_is_dropped(cache_on, tmp_path, text):
    log, first, d = cached_log(tmp_path)
    open(os.path.join(d, "meta.json"), "wb").write(text)
    assert_reparsed_and_rebuilt(log, first)


def test_another_tables_parquet_copied_over_one_is_not_served(cache_on, tmp_path):
    log, first, d = cached_log(tmp_path)
    shutil.copy(os.path.join(d, "prefill.parquet"), os.path.join(d, "decode.parquet"))
    assert_reparsed_and_rebuilt(log, first)


def test_the_same_table_of_another_log_copied_over_is_not_served(cache_on, tmp_path):
    """Same table, same schema, another log's rows: the entry's token tells them apart."""
    other, _, od = cached_log(tmp_path, "other.log", TWO.read_bytes())
    log, first, d = cached_log(tmp_path)
    shutil.copy(os.path.join(od, "decode.parquet"), os.path.join(d, "decode.parquet"))
    assert_reparsed_and_rebuilt(log, first)


def test_a_parquet_of_the_right_token_but_foreign_columns_is_not_served(cache_on, tmp_path):
    """Schema validation against eaglelog.schema: a column of another dtype, a missing core
    column, a column the schema does not know."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    log, first, d = cached_log(tmp_path)
    p = os.path.join(d, "decode.parquet")
    for damage in ("dtype", "missing", "unknown"):
        t = pq.read_table(p)
        if damage == "dtype":
            i = t.schema.names.index("accept_len")
            t = t.set_column(i, "accept_len", pa.array([str(x) for x in t["accept_len"]
                                                        .to_pylist()]))
        elif damage == "missing":
            t = t.drop_columns(["gen_throughput"])
        else:
            t = t.append_column("evil", pa.array([1] * len(t)))
        pq.write_table(t, p)             # the schema metadata, with the token, is kept
        assert_reparsed_and_rebuilt(log, first)
        d = entry(log)
        p = os.path.join(d, "decode.parquet")


def test_a_damaged_entry_of_a_grown_log_is_not_resumed_from(cache_on, tmp_path):
    log, _, d = cached_log(tmp_path, data=FIVE.read_bytes())
    p = os.path.join(d, "prof.parquet")
    data = open(p, "rb").read()
    open(p, "wb").write(data[:100])
    with open(log, "ab") as f:
        f.write(TWO.read_bytes())
    grown = eaglelog.parse(log, cache=True)
    fresh = eaglelog.parse(log)
    frames_equal(fresh, grown)
    assert len(grown.prof) == len(fresh.prof) > 0


def test_a_scanner_state_that_cannot_be_restored_is_not_resumed_from(cache_on, tmp_path):
    log, _, d = cached_log(tmp_path, data=FIVE.read_bytes())
    _rewrite_meta(d, lambda m: {**m, "safe": {**m["safe"], "state": {"_line": 3}}})
    with open(log, "ab") as f:
        f.write(TWO.read_bytes())
    grown = eaglelog.parse(log, cache=True)
    frames_equal(eaglelog.parse(log), grown)


# ------------------------------------------------------------------------ damaged results

def _one_result(cache_on):
    (p,) = list((cache_on / "results").iterdir())
    return p


@pytest.mark.parametrize("content", [
    b"[]", b'"text"', b"{}", b'{"stdout": 5, "stderr": "", "code": 0}',
    b'{"stdout": "forged\\n", "stderr": "", "code": 0}',                       # no key
    b'{"key": "0000", "stdout": "forged\\n", "stderr": "", "code": 0}',          # another key
    None,                                                                          # KEY below
    b"\xff\xfe", b"{" * 50000, b"",
])
def test_a_results_entry_of_another_shape_is_not_printed(cache_on, tmp_path, run, content):
    log = tmp_path / "r.log"
    log.write_bytes(FIVE.read_bytes())
    want = run("summary", "--baseline-toks", "90", log)
    assert want.exit_code == 0 and "forged" not in want.stdout
    p = _one_result(cache_on)
    key = p.name[:-len(".json")]
    if content is None:          # the right key, a code no command exits with
        content = json.dumps({"key": key, "stdout": "forged\n", "stderr": "", "code": 7}).encode()
    p.write_bytes(content)
    got = run("summary", "--baseline-toks", "90", log)
    assert (got.exit_code, got.stdout, got.stderr) == (want.exit_code, want.stdout, want.stderr)
    entry_ = json.loads(p.read_text())            # rewritten whole
    assert entry_["key"] == key and entry_["stdout"] == want.stdout


def test_a_directory_in_place_of_a_results_entry(cache_on, tmp_path, run):
    log = tmp_path / "r.log"
    log.write_bytes(FIVE.read_bytes())
    want = run("summary", "--baseline-toks", "90", log)
    p = _one_result(cache_on)
    p.unlink()
    (p / "sub").mkdir(parents=True)
    got = run("summary", "--baseline-toks", "90", log)
    assert (got.exit_code, got.stdout, got.stderr) == (want.exit_code, want.stdout, want.stderr)
    assert p.is_file() and json.loads(p.read_text())["stdout"] == want.stdout
    assert [x.name for x in (cache_on / "results").iterdir()] == [p.name]   # no temp file left


# ------------------------------------------------------------------------ atomic writes

def test_table_entries_are_written_whole_by_concurrent_runs(cache_on, tmp_path, monkeypatch):
    """Two runs store the same entry at once, the first paused after its first table while the
    second writes its whole entry: what stays is one run's tables and meta, never a mix (fixed
    temp names mixed them)."""
    log, first, d = cached_log(tmp_path)
    a = {t: df.assign(line_no=df["line_no"] + 1000) for t, df in first.tables.items()}
    b = {t: df.assign(line_no=df["line_no"] + 2000) for t, df in first.tables.items()}
    meta = json.load(open(os.path.join(d, "meta.json")))
    body = {k: meta[k] for k in ("state", "safe", "compression", "engine", "columns", "info",
                                 "diags")}
    real_replace = os.replace
    calls = []

    def the_other_run_after_the_first_rename(src, dst):
        real_replace(src, dst)
        calls.append(dst)
        if len(calls) == 1:
            cache.store_tables(d, body, b)

    monkeypatch.setattr(os, "replace", the_other_run_after_the_first_rename)
    cache.store_tables(d, body, a)
    monkeypatch.setattr(os, "replace", real_replace)
    assert calls
    meta = cache.load_tables_meta(d) or json.load(open(os.path.join(d, "meta.json")))
    from eaglelog import api
    try:
        frames, _ = api._cached_frames(d, meta)
    except cache.CacheDamage:
        return                            # a mixed entry at least is not served
    offsets = {int(frames[t]["line_no"].iloc[0]) - int(first.table(t)["line_no"].iloc[0])
               for t in frames if len(frames[t])}
    assert offsets in ({1000}, {2000})
    assert not [n for n in os.listdir(os.path.dirname(d)) if n.startswith(".")]


@pytest.mark.parametrize("where", ["tables", "results"])
def test_a_file_in_place_of_a_cache_directory(cache_on, tmp_path, run, where):
    log = tmp_path / "s.log"
    log.write_bytes(FIVE.read_bytes())
    cache_on.mkdir(parents=True)
    (cache_on / where).write_text("in the way")
    want = run("summary", "--no-cache", "--baseline-toks", "90", log)
    for _ in range(2):
        got = run("summary", "--baseline-toks", "90", log)
        assert (got.exit_code, got.stdout, got.stderr) == (want.exit_code, want.stdout,
                                                          want.stderr)
    assert (cache_on / where).is_dir()
    if where == "tables":                 # the summaries' projected tables were cached
        from eaglelog.schema import ANALYSIS_COLUMNS
        assert eaglelog.parse(log, cache=True, columns=ANALYSIS_COLUMNS).sources[0].cached


def test_the_cache_does_not_wake_a_fifo_writer(tmp_path):
    """A writer waiting in open() on a FIFO must still be waiting after the cache looked at the
    path: a non-blocking probe of the read end let it go on, its write then failed once the
    probe closed (EPIPE), and the real read waited for ever (the suite hung so, under load)."""
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    data = FIVE.read_bytes()
    state = {"opened": False, "error": None}

    def writer():
        try:
            with open(fifo, "wb") as f:
                state["opened"] = True
                f.write(data)
        except OSError as e:
            state["error"] = e
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    time.sleep(0.3)                                    # the writer waits in open()
    assert cache.file_state(str(fifo)) is None
    time.sleep(0.3)
    assert not state["opened"]                          # still waiting: nothing opened the pipe
    with open(fifo, "rb") as f:
        got = f.read()
    t.join(10)
    assert got == data and state["error"] is None


def test_a_fifo_is_read_and_never_opened_by_the_cache(cache_on, tmp_path):
    """The cache's state of an input opens it without blocking (a FIFO has no state)."""
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    assert cache.file_state(str(fifo)) is None          # returns at once, no writer needed

    def writer():
        with open(fifo, "wb") as f:
            f.write(FIVE.read_bytes())
    t = threading.Thread(target=writer)
    t.start()
    got = eaglelog.parse(fifo, cache=True)
    t.join(10)
    assert len(got.decode) == 106 and not got.sources[0].cached
