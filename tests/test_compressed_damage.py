"""Damaged compressed inputs against the real tools (issue 13, items 2 and 15): with
--keep-going eaglelog keeps what `zcat`, `xzcat` and `bzcat` print before their error, byte for
byte, and at least what `zstd -dc` prints (every block decoded before the damage); the error is
one line naming the line and the byte offsets; never a traceback."""
import gzip
import random
import re
import subprocess
import zlib

import pytest

from conftest import SAMPLES

from eaglelog.errors import InputError
from eaglelog.io.sources import iter_chunks, open_source

FIVE = SAMPLES / "eagle3_5step.log"
KIND = {"gzip": "gzip", "xz": "xz", "bzip2": "bzip2", "zstd": "zstd"}
COMPRESS = {"gzip": "gzip -c", "xz": "xz -c", "bzip2": "bzip2 -1 -c", "zstd": "zstd -q -c"}
DECOMPRESS = {"gzip": "gzip -dc", "xz": "xz -dc", "bzip2": "bzip2 -dc", "zstd": "zstd -dc"}
ERROR = re.compile(r"corrupt (gzip|xz|bzip2|zstd) data near compressed byte [\d,]+ \(after "
                   r"([\d,]+) decompressed bytes\): .+|(gzip|xz|bzip2|zstd) data ends early near "
                   r"compressed byte [\d,]+ \(after ([\d,]+) decompressed bytes\): the file is "
                   r"truncated")


def ours(path):
    """What eaglelog reads of a (damaged) compressed file, and the error it ends with."""
    out = []
    err = None
    try:
        with open_source(str(path)) as src:
            for chunk in iter_chunks(src, 1 << 16):
                out.append(chunk)
    except InputError as e:
        err = str(e)
    return b"".join(out), err


def tool(kind, path):
    r = subprocess.run(f"{DECOMPRESS[kind]} {path}", shell=True, capture_output=True)
    return r.stdout, r.returncode


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    d = tmp_path_factory.mktemp("damage")
    log = d / "big.log"
    rng = random.Random(13)
    lines = [FIVE.read_bytes()]
    t = 0
    for _ in range(9000):        # 1.7 MB that compresses 5-10x: several 64 KiB pieces
        t += rng.randint(100, 900)
        lines.append(f"[2026-03-02 {10 + t // 3600000:02d}:{t // 60000 % 60:02d}:"
                     f"{t // 1000 % 60:02d}.{t % 1000:03d} TP0] Decode batch, #running-req: "
                     f"{rng.randint(1, 8)}, #token: {rng.randint(100, 90000)}, token usage: "
                     f"0.{rng.randint(0, 99):02d}, accept len: {rng.uniform(1, 4):.2f}, accept "
                     f"rate: {rng.uniform(0, 1):.2f}, cuda graph: True, gen throughput "
                     f"(token/s): {rng.uniform(20, 900):.2f}, #queue-req: 0\n".encode())
    log.write_bytes(b"".join(lines))
    return log


@pytest.fixture(scope="module")
def packed(plain):
    out = {}
    for kind, cmd in COMPRESS.items():
        p = plain.parent / f"big.{kind}"
        subprocess.run(f"{cmd} {plain} > {p}", shell=True, check=True)
        out[kind] = p.read_bytes()
    return out


def damage(data: bytes, how: str) -> bytes:
    rng = random.Random(how)
    bad = bytearray(data)
    if how == "bit at 1/3":
        bad[len(bad) // 3] ^= 0x10
    elif how == "16 bytes at 1/2":
        at = len(bad) // 2
        bad[at:at + 16] = bytes(rng.randrange(256) for _ in range(16))
    elif how == "zeros at 3/4":
        at = len(bad) * 3 // 4
        bad[at:at + 100] = bytes(100)
    elif how == "trailer":
        bad[-6] ^= 0xFF          # gzip's CRC, zstd's checksum, bzip2's and xz's footers
    elif how == "cut at 2/3":
        bad = bad[: len(bad) * 2 // 3]
    return bytes(bad)


HOW = ["bit at 1/3", "16 bytes at 1/2", "zeros at 3/4", "trailer", "cut at 2/3"]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz"])
def test_a_damaged_file_keeps_exactly_what_the_tool_prints(tmp_path, packed, kind, how):
    p = tmp_path / f"bad.{kind}"
    p.write_bytes(damage(packed[kind], how))
    want, code = tool(kind, p)
    got, err = ours(p)
    assert code != 0 and err is not None
    assert got == want, (len(got), len(want))
    m = ERROR.search(err)
    assert m and int((m.group(2) or m.group(4)).replace(",", "")) == len(got)
    line = got.count(b"\n") + 1
    assert err.startswith(f"{p}:{line}: ")


@pytest.mark.parametrize("how", HOW)
def test_a_damaged_zstd_file_keeps_at_least_what_zstd_prints(tmp_path, packed, plain, how):
    """zstd -dc drops the output of its failing ZSTD_decompressStream call (up to one 128 KiB
    block decoded before the damage); eaglelog keeps every block decoded before it."""
    p = tmp_path / "bad.zst"
    p.write_bytes(damage(packed["zstd"], how))
    want, code = tool("zstd", p)
    got, err = ours(p)
    assert code != 0 and err is not None and ERROR.search(err)
    original = plain.read_bytes()
    if want == original[:len(want)]:       # zstd printed no garbage: neither do we, and more
        assert got.startswith(want) and len(got) - len(want) <= 128 << 10
        assert got == original[:len(got)]
    assert len(got) >= len(want) - (128 << 10)


def test_the_failing_piece_of_a_zstd_or_bzip2_file_is_kept(tmp_path, packed):
    """The 64 KiB of compressed data in which the damage lies used to be dropped whole."""
    for kind in ("zstd", "bzip2"):
        p = tmp_path / f"bad.{kind}"
        p.write_bytes(damage(packed[kind], "16 bytes at 1/2"))
        want, _ = tool(kind, p)
        got, _ = ours(p)
        assert len(got) >= len(want) > 0


@pytest.mark.parametrize("kind", ["gzip", "bzip2", "xz", "zstd"])
def test_keep_going_keeps_the_records_the_tool_prints(run, tmp_path, packed, kind):
    p = tmp_path / f"bad.{kind}"
    p.write_bytes(damage(packed[kind], "cut at 2/3"))       # no garbage: records countable
    want, _ = tool(kind, p)
    complete = want[: want.rfind(b"\n") + 1]
    r = run("parse", "--keep-going", "--table", "decode", "-f", "csv", p)
    assert r.exit_code == 1 and "Traceback" not in r.stderr
    rows = r.stdout.count("\n") - 1
    if kind == "zstd":
        assert rows >= complete.count(b"Decode batch") > 0
    else:
        assert rows == complete.count(b"Decode batch") > 0
    assert "records before it are kept" in r.stderr


def test_a_tiny_gzip_with_a_crc_error_keeps_every_line(run, tmp_path):
    """The whole file is one 64 KiB piece: its failing call used to take every line with it."""
    data = bytearray(gzip.compress(FIVE.read_bytes(), mtime=0))
    data[-6] ^= 0xFF                                   # the CRC-32
    p = tmp_path / "tiny.log.gz"
    p.write_bytes(bytes(data))
    want, _ = tool("gzip", p)
    assert want == FIVE.read_bytes()
    got, err = ours(p)
    assert got == want and "incorrect data check" in err
    r = run("parse", "--keep-going", "--table", "decode", "-f", "csv", p)
    assert r.exit_code == 1 and r.stdout.count("\n") - 1 == 106


# ---------------------------------------------------------------- garbage before the CRC check

def garbage_gzip(tmp_path):
    """A real .gz of a sample log whose deflate data decodes to other text (a stored block with
    a changed date and time in a Decode batch prefix), found out only by the CRC at the end."""
    text = FIVE.read_bytes()
    i = text.index(b"Decode batch")
    line = text[text.rfind(b"\n", 0, i) + 1: i]          # "[2026-03-02 14:00:32.543 TP0] "
    data = gzip.compress(text, compresslevel=0, mtime=0)  # stored blocks: bytes as they are
    at = data.index(line)
    bad = data[:at] + line.replace(line[1:20], b"2026-02-30 14:00:92") + data[at + len(line):]
    p = tmp_path / "garbage.log.gz"
    p.write_bytes(bad)
    with pytest.raises(zlib.error, match="incorrect data check"):
        zlib.decompress(bad, wbits=31)
    out = zlib.decompressobj(wbits=-15).decompress(bad[10:])
    assert b"[2026-02-30 14:00:92" in out and len(out) == len(text)
    return p, text[:i].count(b"\n") + 1


def test_a_gzip_decoding_to_garbage_ends_in_the_one_line_error(run, tmp_path):
    p, bad_line = garbage_gzip(tmp_path)
    r = run("parse", "--table", "decode", "-f", "csv", p)
    assert r.exit_code == 1 and "Traceback" not in r.stderr + r.stdout
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("eaglelog: error:")]
    last = FIVE.read_bytes().count(b"\n") + 1
    crc_end = p.stat().st_size - 5                        # the CRC-32's last byte
    assert errors == [f"eaglelog: error: {p}:{last}: corrupt gzip data near compressed byte "
                      f"{crc_end:,} (after 73,602 decompressed bytes): Error -3 while "
                      "decompressing data: incorrect data check"]
    r = run("parse", "--keep-going", "--table", "decode", "-f", "csv", p)
    assert r.exit_code == 1 and "Traceback" not in r.stderr + r.stdout
    assert r.stdout.count("\n") - 1 == 106                # every decode line, the bad one too
    assert "incorrect data check; the records before it are kept" in r.stderr
    assert f"{p}:{bad_line}:" in r.stderr                 # the bad date: a reported value


def test_deflate_garbage_of_a_compressed_gzip_is_read_like_zcat(run, tmp_path):
    """A flipped bit in the Huffman-coded data of a level-9 .gz: zlib emits other text (a wrong
    time in a prefix, lines of another length) before the CRC fails; eaglelog reads what zcat
    prints and ends in the one-line error."""
    text = FIVE.read_bytes()
    data = gzip.compress(text, compresslevel=9, mtime=0)
    for i in range(len(data) // 3, len(data) - 8):
        bad = bytearray(data)
        bad[i] ^= 0x02
        try:
            out = zlib.decompressobj(wbits=-15).decompress(bytes(bad[10:]))
        except zlib.error:
            continue
        lines = [(a, b) for a, b in zip(out.split(b"\n"), text.split(b"\n")) if a != b]
        if lines and lines[0][0][:1] == b"[" and lines[0][0][:20] != lines[0][1][:20]:
            break
    else:
        pytest.fail("no flip gave garbage in a prefix")
    p = tmp_path / "flip.log.gz"
    p.write_bytes(bytes(bad))
    want, code = tool("gzip", p)
    got, err = ours(p)
    assert code == 1 and got == want and "incorrect data check" in err
    r = run("parse", "--keep-going", "--table", "decode", "-f", "csv", p)
    assert r.exit_code == 1 and "Traceback" not in r.stderr + r.stdout
    assert r.stdout.count("\n") - 1 == want.count(b"Decode batch")


def test_damage_in_a_later_member_keeps_the_earlier_members(tmp_path):
    """Concatenated members (logrotate, pigz): the replay starts at the failing member."""
    one = FIVE.read_bytes()
    members = [gzip.compress(one, mtime=0) for _ in range(3)]
    bad = bytearray(members[2])
    bad[-6] ^= 0xFF
    p = tmp_path / "multi.log.gz"
    p.write_bytes(members[0] + members[1] + bytes(bad))
    want, _ = tool("gzip", p)
    got, err = ours(p)
    assert got == want == one * 3 and "incorrect data check" in err


@pytest.mark.parametrize("kind", ["gzip", "xz"])
def test_an_unseekable_damaged_input_keeps_what_it_can(tmp_path, packed, kind):
    """A pipe on stdin: the failing member is replayed from its bytes kept in memory, so a
    pipe keeps what the file keeps."""
    import sys
    bad = tmp_path / f"bad.{kind}"
    bad.write_bytes(damage(packed[kind], "16 bytes at 1/2"))
    cmd = f"{sys.executable} -m eaglelog parse --no-cache --keep-going --table decode -f csv"
    piped = subprocess.run(f"cat {bad} | {cmd} -", shell=True, capture_output=True, text=True)
    direct = subprocess.run(f"{cmd} {bad}", shell=True, capture_output=True, text=True)
    assert piped.returncode == direct.returncode == 1 and "Traceback" not in piped.stderr
    rows = [ln.split(",", 1)[1] for ln in piped.stdout.splitlines()[1:]]
    assert rows == [ln.split(",", 1)[1] for ln in direct.stdout.splitlines()[1:]] and rows
