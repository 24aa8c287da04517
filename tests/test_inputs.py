"""Inputs: compression, stdin, chunk boundaries, and every kind of bad input (CLI level)."""
import bz2
import re
import gzip
import lzma
import shutil

import pandas as pd
import pytest
import zstandard

import eaglelog
from conftest import SAMPLES, grep_count

FIVE = SAMPLES / "eagle3_5step.log"
DECODE = ("[2026-02-24 12:30:18 TP0] Decode batch, #running-req: 6, #token: 5012, token usage: "
          "0.03, accept len: 2.88, accept rate: 0.72, cuda graph: True, gen throughput (token/s): "
          "512.40, #queue-req: 0\n")


def assert_same(a, b):
    for name in eaglelog.TABLES:
        x = a.table(name).drop(columns="source")
        y = b.table(name).drop(columns="source")
        pd.testing.assert_frame_equal(x, y, check_categorical=False)


@pytest.mark.parametrize("ext,opener", [
    (".gz", lambda p: gzip.open(p, "wb")), (".xz", lambda p: lzma.open(p, "wb")),
    (".bz2", lambda p: bz2.open(p, "wb")),
    (".zst", lambda p: zstandard.ZstdCompressor().stream_writer(open(p, "wb")))])
def test_compressed_equals_plain(tmp_path, ext, opener):
    dst = tmp_path / ("five.log" + ext)
    with open(FIVE, "rb") as src, opener(dst) as out:
        shutil.copyfileobj(src, out)
    plain, packed = eaglelog.parse(FIVE), eaglelog.parse(dst)
    assert packed.sources[0].compression == {".gz": "gzip", ".xz": "xz", ".bz2": "bzip2",
                                             ".zst": "zstd"}[ext]
    assert len(packed.decode) == grep_count(FIVE, "Decode batch") == 106
    assert_same(plain, packed)


def test_compression_is_sniffed_not_taken_from_the_name(tmp_path):
    dst = tmp_path / "server.log"  # gzip data behind a plain name
    dst.write_bytes(gzip.compress(FIVE.read_bytes()))
    assert len(eaglelog.parse(dst).decode) == 106


@pytest.mark.parametrize("chunk", [64, 1000, 4096])
def test_small_chunks_give_the_same_tables(chunk):
    """Chunk boundaries fall inside lines and blocks: nothing changes."""
    for name in ("eagle3_5step.log", "eagle3_2step.log"):
        assert_same(eaglelog.parse(SAMPLES / name),
                    eaglelog.parse(SAMPLES / name, chunk_size=chunk))


def test_stdin(run):
    r = run("parse", "--table", "decode", "-f", "csv", "-", input=FIVE.read_bytes())
    assert r.exit_code == 0
    assert r.stdout.count("\n") == 1 + 106  # header + rows
    assert r.stdout.splitlines()[1].startswith("-,")


def test_crlf_ansi_and_invalid_utf8_do_not_break_parsing(write):
    text = (b"\x1b[36m(SchedulerActor pid=4412)\x1b[0m " + DECODE.encode().replace(b"\n", b"\r\n")
            + b"garbage \xff\xfe\xfa line\r\n"
            + b"  3%|\xe2\x96\x8c  | 1/30\r" + DECODE.encode())
    log = eaglelog.parse(write("x.log", text))
    d = log.decode
    assert d.line_no.tolist() == [1, 3]
    assert d.accept_len.tolist() == [2.88, 2.88] and d.queue_req.tolist() == [0, 0]
    assert d.trailing_comma.tolist() == [False, False]
    assert log.sources[0].skipped == 1 and log.sources[0].first_skipped == 2


def err_line(r):
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("eaglelog: error:")]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and "Traceback" not in r.stdout
    return lines[0]


def test_missing_file(run):
    r = run("parse", "/nonexistent/server.log")
    assert r.exit_code == 1
    assert err_line(r) == "eaglelog: error: /nonexistent/server.log: no such file"


def test_directory(run, tmp_path):
    r = run("parse", tmp_path)
    assert r.exit_code == 1 and "is a directory" in err_line(r)


def test_empty_file(run, write):
    p = write("empty.log", "")
    r = run("parse", p)
    assert r.exit_code == 1 and err_line(r) == f"eaglelog: error: {p}: empty file"


def test_binary_file(run, write):
    p = write("model.bin", b"line one\n\x00\x01\x02\x03garbage" * 50)
    r = run("parse", p)
    assert r.exit_code == 1
    assert err_line(r) == (f"eaglelog: error: {p}:2: binary data (NUL byte at offset 9), "
                           "not a text log")


def test_unknown_family_names_the_families_tried(run, write):
    p = write("nginx.log", '127.0.0.1 - - [29/Nov/2026:10:00:00] "GET / HTTP/1.1" 200 12\n' * 3)
    r = run("parse", p)
    assert r.exit_code == 1
    msg = err_line(r)
    assert f"{p}: no speculative-decoding records in 3 lines; families tried: sglang" in msg
    assert "EAGLE3_PROF" in msg


def test_truncated_final_line_is_reported_not_guessed(run, write):
    p = write("cut.log", DECODE + DECODE[:-30])  # the last line stops inside its last value
    r = run("parse", "--table", "decode", "-f", "csv", p)
    assert r.exit_code == 0
    assert r.stdout.count("\n") == 2  # header + the one complete line
    assert f"{p}:2: decode line not parsed: decode line has no '#queue-req'" in r.stderr
    p = write("cut2.log", DECODE + DECODE[:-1])  # complete text but no newline
    r = run("parse", "--table", "decode", "-f", "csv", p)
    assert r.stdout.count("\n") == 2
    assert f"{p}:2: last line has no newline (cut short?); decode record not parsed" in r.stderr


def test_corrupt_gzip_half_way(run, tmp_path):
    import random
    rng = random.Random(1)
    text = "".join(DECODE.replace("5012", str(rng.randint(1000, 99999)))
                   .replace("512.40", f"{rng.uniform(100, 900):.2f}") for _ in range(20000))
    data = gzip.compress(text.encode())
    bad = bytearray(data)
    mid = len(bad) // 2
    bad[mid:mid + 64] = bytes(rng.randrange(256) for _ in range(64))
    p = tmp_path / "corrupt.log.gz"
    p.write_bytes(bytes(bad))
    r = run("parse", p)
    assert r.exit_code == 1
    msg = err_line(r)
    assert re.fullmatch(rf"eaglelog: error: {re.escape(str(p))}:\d+: corrupt gzip data near "
                        r"compressed byte [\d,]+ \(after [\d,]+ decompressed bytes\): .+", msg)
    # --keep-going keeps what was read before the damage, still exits 1
    r = run("parse", "--keep-going", "--table", "decode", "-f", "csv", p)
    assert r.exit_code == 1
    rows = r.stdout.count("\n") - 1
    assert 0 < rows < 20000
    assert "corrupt gzip data" in r.stderr and "records before it are kept" in r.stderr


def test_keep_going_with_one_missing_input(run):
    r = run("parse", "--keep-going", "--table", "prof", "-f", "csv", "/nope.log", FIVE)
    assert r.exit_code == 1
    assert r.stdout.count("\n") == 1 + grep_count(FIVE, "EAGLE3_PROF")
    assert "eaglelog: error: /nope.log: no such file" in r.stderr


def test_unknown_table_is_a_usage_error(run):
    r = run("parse", "--table", "bogus", FIVE)
    assert r.exit_code == 2 and "Invalid value for '--table'" in r.stderr


def test_parquet_needs_output(run):
    r = run("parse", "--table", "decode", "-f", "parquet", FIVE)
    assert r.exit_code == 1 and "give it with -o FILE.parquet" in err_line(r)


def test_time_only_prefix_dates(write):
    text = ("[23:59:58 TP0] Decode batch. #running-req: 3, #token: 2290, token usage: 0.01, "
            "gen throughput (token/s): 251.03, #queue-req: 0\n"
            "[00:00:38 TP0] Decode batch. #running-req: 3, #token: 2390, token usage: 0.01, "
            "gen throughput (token/s): 250.00, #queue-req: 0\n")
    log = eaglelog.parse(write("old.log", text), base_date="2024-09-01")
    assert [str(t) for t in log.decode.timestamp] == ["2024-09-01 23:59:58",
                                                      "2024-09-02 00:00:38"]
    assert any(d.kind == "date" and "--date 2024-09-01" in d.message for d in log.diagnostics)
