"""Open any input as a stream of byte chunks that end at line boundaries.

An input is a path, ``-`` for standard input, or a compressed file (gzip, xz, bzip2, zstandard),
recognised by its magic bytes rather than its name.  Reading is streaming: ``iter_chunks`` yields
chunks of about ``chunk_size`` bytes, each ending just after a newline (the last one may not), so
memory stays bounded and a chunk can be handed to a parser as a unit (the unit a later byte-range
split will hand to worker processes).
"""
from __future__ import annotations

import bz2
import io
import lzma
import os
import stat
import sys
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from .errors import InputError

CHUNK_SIZE = 8 << 20
READ_SIZE = 1 << 20

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


RAW_PIECE = 64 << 10          # compressed bytes fed to a decompressor at a time
MAX_LINE = 16 << 20           # a longer line is not a log line: skipped and reported


class _Decoder:
    """Incremental decompression that keeps every byte decoded before damage or truncation
    (like zcat), across concatenated members/frames."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.obj = self._new()
        self.total_in = 0

    def _new(self):
        if self.kind == "gzip":
            return zlib.decompressobj(wbits=31)
        if self.kind == "xz":
            return lzma.LZMADecompressor()
        if self.kind == "bzip2":
            return bz2.BZ2Decompressor()
        import zstandard
        return zstandard.ZstdDecompressor().decompressobj()

    def feed(self, data: bytes) -> bytes:
        out = []
        while data:
            out.append(self.obj.decompress(data))
            if not self.obj.eof:
                break
            data = self.obj.unused_data
            if not data.strip(b"\x00"):   # trailing zero padding after the last member
                break
            self.obj = self._new()          # next member / stream / frame
        self.total_in += 1
        return b"".join(out)

    @property
    def at_end(self) -> bool:
        return bool(self.obj.eof)


@dataclass
class Source:
    """An opened input: its user-facing name, the decompressed stream, and what we know of it."""

    name: str
    stream: BinaryIO
    raw: BinaryIO
    compression: str | None
    size: int | None  # bytes on disk (compressed size for compressed files)
    mtime: float | None
    notes: list = field(default_factory=list)   # (line_no, message) found while reading

    def close(self) -> None:
        for f in (self.stream, self.raw):
            if f is not sys.stdin.buffer:
                try:
                    f.close()
                except Exception:  # closing a broken stream must not mask the real error
                    pass

    def __enter__(self) -> "Source":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_source(spec: str) -> Source:
    """Open a local path or ``-``; raise InputError with a one-line reason otherwise."""
    if spec == "-":
        raw = sys.stdin.buffer
        size = mtime = None
        name = "-"
    else:
        name = spec
        try:
            st = os.stat(spec)
        except FileNotFoundError:
            raise InputError(f"{spec}: no such file") from None
        except PermissionError:
            raise InputError(f"{spec}: permission denied") from None
        except OSError as e:
            raise InputError(f"{spec}: cannot read: {e.strerror or e}") from None
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{spec}: is a directory; give the log files inside it "
                             f"(for example {os.path.join(spec, '*.log')})")
        try:
            raw = open(spec, "rb")
        except PermissionError:
            raise InputError(f"{spec}: permission denied") from None
        except OSError as e:
            raise InputError(f"{spec}: cannot open: {e.strerror or e}") from None
        size, mtime = st.st_size, st.st_mtime
    buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
    head = buffered.peek(8)[:8]
    compression = next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)
    return Source(name, buffered, buffered, compression, size, mtime)


def _corrupt(src: Source, e: Exception | None, done: int, line: int) -> InputError:
    """A one-line error for damaged or cut compressed data, naming the line and the offsets."""
    where = ""
    try:
        where = f" near compressed byte {src.raw.tell():,}"
    except (OSError, ValueError):
        pass
    if e is None:
        return InputError(f"{src.name}:{line}: {src.compression} data ends early{where} (after "
                          f"{done:,} decompressed bytes): the file is truncated")
    return InputError(f"{src.name}:{line}: corrupt {src.compression} data{where} (after "
                      f"{done:,} decompressed bytes): {str(e) or type(e).__name__}")


def _pieces(src: Source):
    """Decompressed pieces of the input.  On damage or truncation, yields what was decoded,
    then raises the InputError built by the caller from ('corrupt'|'truncated', exc)."""
    if src.compression is None:
        while True:
            block = src.raw.read(READ_SIZE)
            if not block:
                return
            yield block
    dec = _Decoder(src.compression)
    while True:
        raw = src.raw.read(RAW_PIECE)
        if not raw:
            if not dec.at_end:
                raise _Damage(None)
            return
        try:
            out = dec.feed(raw)
        except Exception as e:  # zlib.error, LZMAError, OSError, zstd errors
            raise _Damage(e) from None
        if out:
            yield out


class _Damage(Exception):
    def __init__(self, cause: Exception | None) -> None:
        self.cause = cause


def iter_chunks(src: Source, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield chunks that end just after a newline; the final chunk may lack one.

    When compressed data turns out to be damaged or cut short, everything decoded before that
    point is yielded first (as zcat would print it); then InputError is raised, naming the line
    and the byte offsets.  A line longer than MAX_LINE is replaced by an empty line and noted in
    ``src.notes``; an input whose first MAX_LINE bytes hold no line break is rejected.
    """
    buf: list[bytes] = []
    have = 0
    done = 0
    lines = 0
    skipping = False   # inside an over-long line, dropping bytes until its newline
    pieces = _pieces(src)
    while True:
        try:
            piece = next(pieces, None)
        except _Damage as d:
            data = b"".join(buf)
            if data:
                yield data
            lines += data.count(b"\n")
            raise _corrupt(src, d.cause, done, lines + 1) from None
        if piece is not None:
            done += len(piece)
            if skipping:
                nl = piece.find(b"\n")
                if nl < 0:
                    continue
                piece = b"\n" + piece[nl + 1:]   # the long line becomes an empty line
                skipping = False
            buf.append(piece)
            have += len(piece)
            if have < chunk_size:
                continue
        data = b"".join(buf)
        buf, have = [], 0
        if piece is None:
            if data:
                yield data
            return
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) <= MAX_LINE:
                buf, have = [data], len(data)
                continue
            if lines == 0 and done == len(data):
                raise InputError(f"{src.name}:1: no line break in the first {MAX_LINE >> 20} "
                                 "MiB: binary data or not a line-oriented log")
            src.notes.append((lines + 1, f"line longer than {MAX_LINE >> 20} MiB skipped"))
            skipping = True
            continue
        out, rest = data[:cut + 1], data[cut + 1:]
        if rest:
            buf, have = [rest], len(rest)
        lines += out.count(b"\n")
        yield out
