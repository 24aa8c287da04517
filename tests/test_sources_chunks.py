"""sources.iter_chunks of a regular file (one buffer, read at each chunk's offset) against the
same bytes read as a stream (pieces, joined): the same bytes, every chunk ending at a line end,
the same notes; and a chunk is valid until the next is asked for (the buffer is reused)."""
import io
import random

import pytest

from eaglelog.io import sources
from eaglelog.io.sources import Source, iter_chunks, open_source


def stream_source(data: bytes) -> Source:
    raw = io.BufferedReader(io.BytesIO(data))
    return Source("<stream>", raw, raw, None, len(data), None)


def chunks(src: Source, size: int) -> tuple[list[bytes], list]:
    got = [bytes(c) for c in iter_chunks(src, size)]    # (each copied before the next read)
    return got, list(src.notes)


def random_log(r: random.Random, n: int, longest: int) -> bytes:
    lines = [b"x" * r.choice([0, 1, 5, 40, 200, longest]) for _ in range(n)]
    text = b"\n".join(lines)
    return text + (b"\n" if r.random() < 0.5 else b"")


@pytest.mark.parametrize("seed", range(40))
def test_a_files_chunks_are_the_streams_bytes_at_line_ends(tmp_path, seed):
    r = random.Random(seed)
    data = random_log(r, r.randint(0, 400), r.choice([300, 3000]))
    path = tmp_path / "a.log"
    path.write_bytes(data)
    for size in (1, 7, 64, 1000, 1 << 16):
        with open_source(str(path)) as src:
            assert sources._regular_file(src) is not None
            got, notes = chunks(src, size)
        want, want_notes = chunks(stream_source(data), size)
        assert b"".join(got) == b"".join(want) == data
        assert notes == want_notes == []
        assert all(c.endswith(b"\n") for c in got[:-1]) and all(got)


def test_a_line_longer_than_max_line_goes_to_the_stream_reader(tmp_path, monkeypatch):
    # (MAX_LINE and the stream's reads made small: the file reader hands the rest to the
    # stream reader at the chunk the long line ends, which drops it and notes it at its line,
    # as the stream reader alone does)
    monkeypatch.setattr(sources, "MAX_LINE", 1000)
    monkeypatch.setattr(sources, "READ_SIZE", 64)
    data = b"a\n" * 300 + b"L" * 5000 + b"\n" + b"b\n" * 300
    path = tmp_path / "long.log"
    path.write_bytes(data)
    for size in (100, 500, 999):          # (chunks shorter than MAX_LINE, as they are)
        with open_source(str(path)) as src:
            got, notes = chunks(src, size)
        want, want_notes = chunks(stream_source(data), size)
        assert b"".join(got) == b"".join(want)
        assert b"L" not in b"".join(got) and b"".join(got).count(b"\n") == 601
        assert notes == want_notes == [(301, "line longer than 0 MiB skipped")]


def test_a_file_that_starts_with_a_long_line_is_rejected_either_way(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "MAX_LINE", 1000)
    monkeypatch.setattr(sources, "READ_SIZE", 64)
    path = tmp_path / "binary.log"
    path.write_bytes(b"y" * 5000 + b"\nb\n")
    for src in (open_source(str(path)), stream_source(path.read_bytes())):
        with pytest.raises(sources.InputError, match=":1: no line break in the first"):
            chunks(src, 100)
        src.close()


def test_a_files_chunks_are_one_buffer(tmp_path):
    path = tmp_path / "a.log"
    path.write_bytes(b"0123456789\n" * 1000)
    with open_source(str(path)) as src:
        seen = {id(c) for c in iter_chunks(src, 100)}
    assert len(seen) == 1


def test_without_preadv_a_file_is_read_with_pread(tmp_path, monkeypatch):
    # (os.preadv is not on every POSIX system: read_at copies a pread's bytes instead)
    monkeypatch.delattr(sources.os, "preadv")
    data = b"".join(b"line %d\n" % i for i in range(5000))
    path = tmp_path / "a.log"
    path.write_bytes(data)
    with open_source(str(path)) as src:
        got, _ = chunks(src, 1000)
    assert b"".join(got) == data and all(c.endswith(b"\n") for c in got)
