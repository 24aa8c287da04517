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
    assert err_line(r) == (f"eaglelog: error: {p}:2: binary data (NUL byte at offset 9) and "
                           "no record: not a text log")
    # the same line, with its line number, beside a good input under --keep-going
    r = run("summary", "--keep-going", FIVE, p)
    assert r.exit_code == 1
    assert (f"eaglelog: error: {p}:2: binary data (NUL byte at offset 9) and no record: not a "
            "text log") in r.stderr.splitlines()
    from eaglelog.api import error_line
    assert error_line(f"{p}:2: binary data") == (2, "binary data")
    assert error_line("gpu7:/var/log/s.log: empty file") == (None, "empty file")
    assert error_line("gpu7:/var/log/s.log:12: cut short") == (12, "cut short")


def test_nul_bytes_inside_a_log_do_not_lose_records(write):
    """logrotate's copytruncate leaves NUL runs; a stray NUL line is just a line."""
    text = b"\x00" * 5000 + b"\n" + DECODE.encode() * 3 + b"\x00\x00\n" + DECODE.encode()
    log = eaglelog.parse(write("nul.log", text))
    assert log.decode.line_no.tolist() == [2, 3, 4, 6]
    assert log.sources[0].skipped == 2 and log.sources[0].first_skipped == 1


def test_no_line_break_at_all_is_rejected_early(write, run):
    p = write("zero.bin", b"\x00" * (17 << 20))
    r = run("parse", p)
    assert r.exit_code == 1
    assert err_line(r) == (f"eaglelog: error: {p}:1: no line break in the first 16 MiB: binary "
                           "data or not a line-oriented log")


def test_an_over_long_line_is_skipped_and_reported(write):
    text = DECODE + "x" * (17 << 20) + "\n" + DECODE
    log = eaglelog.parse(write("long.log", text))
    assert log.decode.line_no.tolist() == [1, 3]
    (d,) = [d for d in log.diagnostics if d.kind == "long_line"]
    assert d.line_no == 2 and d.message == "line longer than 16 MiB skipped"


@pytest.mark.parametrize("tool,ext", [("gzip", ".gz"), ("xz", ".xz"), ("bzip2", ".bz2"),
                                      ("zstd", ".zst")])
def test_truncated_compressed_file_keeps_what_zcat_would(run, tmp_path, tool, ext):
    """A compressed copy cut in half (a live log copied mid-write): every complete line that
    decompresses is parsed with --keep-going, and the error says the file is truncated."""
    import subprocess
    big = tmp_path / "big.log"
    big.write_bytes(FIVE.read_bytes() * 20)   # > 1 bzip2 block
    full = tmp_path / ("big.log" + ext)
    if tool == "zstd":   # zstd emits nothing of a cut frame: 20 frames, as a rotating writer
        subprocess.run(f"for i in $(seq 20); do zstd -q -c {FIVE}; done > {full}", shell=True,
                       check=True)
    else:
        level = "-1" if tool == "bzip2" else ""   # 100 kB blocks
        subprocess.run(f"{tool} {level} -c {big} > {full}", shell=True, check=True)
    cut = tmp_path / ("half.log" + ext)
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2 + 7])  # not on a frame end
    dec = subprocess.run(f"{tool} -dc {cut}", shell=True, capture_output=True).stdout
    want = dec[: dec.rfind(b"\n") + 1].count(b"Decode batch")
    r = run("parse", "--keep-going", "--table", "decode", "-f", "csv", cut)
    assert r.exit_code == 1
    assert want > 0 and r.stdout.count("\n") - 1 == want
    assert re.search(rf"{re.escape(str(cut))}:\d+: {'bzip2' if tool == 'bzip2' else tool} data "
                     r"ends early near compressed byte [\d,]+ \(after [\d,]+ decompressed "
                     r"bytes\): the file is truncated", r.stderr), r.stderr


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
    assert f"{p}:2: last line has no newline (cut short?); decode record not parsed" in r.stderr
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
    assert r.exit_code == 2 and "give it with -o FILE.parquet" in r.stderr


def test_time_only_prefix_dates(write):
    text = ("[23:59:58 TP0] Decode batch. #running-req: 3, #token: 2290, token usage: 0.01, "
            "gen throughput (token/s): 251.03, #queue-req: 0\n"
            "[00:00:38 TP0] Decode batch. #running-req: 3, #token: 2390, token usage: 0.01, "
            "gen throughput (token/s): 250.00, #queue-req: 0\n")
    log = eaglelog.parse(write("old.log", text), base_date="2024-09-01")
    assert [str(t) for t in log.decode.timestamp] == ["2024-09-01 23:59:58",
                                                      "2024-09-02 00:00:38"]
    assert any(d.kind == "date" and "--date 2024-09-01" in d.message for d in log.diagnostics)


def test_runs_of_blank_lines_are_all_blank(write):
    from eaglelog.parsers.scan import count_blank
    assert count_blank(b"a\n\n\n\nb\n") == 3
    assert count_blank(b"\n\r\nx\r\n\r\n") == 3
    assert count_blank(b"x\n") == 0
    log = eaglelog.parse(write("b.log", "noise\n\n\n\n" + DECODE + "\n\n\nmore noise\n"))
    assert log.sources[0].skipped == 2 and log.sources[0].first_skipped == 1


def test_record_lines_none_of_them_readable(run, write):
    """A log whose record lines are all unreadable names the first one and its reason (not the
    families tried: the family was found)."""
    p = write("bad.log", "EAGLE3_PROF (99999999999999999999999 cycles, 10 tok, no sync)\n"
              "  TOTAL: 10.00 ms/cycle\n\n" * 3)
    r = run("parse", p)
    assert r.exit_code == 1
    assert err_line(r) == (f"eaglelog: error: {p}:1: no record could be read: EAGLE3_PROF header "
                           "not understood: EAGLE3_PROF (99999999999999999999999 cycles, 10 tok, "
                           "no sync) (and 2 more record lines not parsed)")
