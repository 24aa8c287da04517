"""Open any input as a stream of byte chunks that end at line boundaries.

An input is a path, ``-`` for standard input, or a compressed file (gzip, xz, bzip2, zstandard),
recognised by its magic bytes rather than its name.  Reading is streaming: ``iter_chunks`` yields
chunks of about ``chunk_size`` bytes, each ending just after a newline (the last one may not), so
memory stays bounded and a chunk can be handed to a parser as a unit (the unit a later byte-range
split will hand to worker processes).
"""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import sys
from dataclasses import dataclass
from typing import BinaryIO, Iterator

from .errors import InputError

CHUNK_SIZE = 8 << 20

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


@dataclass
class Source:
    """An opened input: its user-facing name, the decompressed stream, and what we know of it."""

    name: str
    stream: BinaryIO
    raw: BinaryIO
    compression: str | None
    size: int | None  # bytes on disk (compressed size for compressed files)
    mtime: float | None

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
    stream: BinaryIO
    if compression == "gzip":
        stream = gzip.GzipFile(fileobj=buffered, mode="rb")
    elif compression == "xz":
        stream = lzma.LZMAFile(buffered, "rb")
    elif compression == "bzip2":
        stream = bz2.BZ2File(buffered, "rb")
    elif compression == "zstd":
        import zstandard

        stream = zstandard.ZstdDecompressor().stream_reader(buffered, read_across_frames=True)
    else:
        stream = buffered
    return Source(name, stream, buffered, compression, size, mtime)


READ_SIZE = 1 << 20


def _corrupt(src: Source, e: Exception, done: int, line: int) -> InputError:
    """A one-line error for damaged compressed data, naming the line and the offsets."""
    where = ""
    try:
        where = f" near compressed byte {src.raw.tell():,}"
    except (OSError, ValueError):
        pass
    reason = str(e) or type(e).__name__
    if isinstance(e, EOFError):
        reason = "the compressed stream ends early (file truncated?)"
    return InputError(f"{src.name}:{line}: corrupt {src.compression or 'input'} data{where} "
                      f"(after {done:,} decompressed bytes): {reason}")


def iter_chunks(src: Source, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield chunks that end just after a newline; the final chunk may lack one.

    Reads at most 1 MiB at a time, so when compressed data turns out to be corrupt the complete
    lines read before the damage are yielded first; then InputError is raised, naming the line
    and the decompressed byte offset.
    """
    carry = b""
    done = 0
    lines = 0
    pieces: list[bytes] = []
    have = 0
    while True:
        try:
            block = src.stream.read(min(READ_SIZE, chunk_size))
        except Exception as e:  # zlib/lzma/bz2/zstd errors, EOFError for a cut stream, OSError
            data = carry + b"".join(pieces)
            cut = data.rfind(b"\n")
            if cut >= 0:
                yield data[:cut + 1]
            # the damaged line: the first one not yielded complete
            raise _corrupt(src, e, done, lines + data.count(b"\n", 0, cut + 1) + 1) from None
        if block:
            done += len(block)
            pieces.append(block)
            have += len(block)
            if have < chunk_size:
                continue
        data = carry + b"".join(pieces)
        pieces, have = [], 0
        if not block:
            if data:
                yield data
            return
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            if len(carry) > 64 * max(chunk_size, READ_SIZE):
                raise InputError(f"{src.name}:{lines + 1}: no line break in {len(carry):,} "
                                 "bytes; not a line-oriented log")
            continue
        carry = data[cut + 1:]
        out = data[:cut + 1]
        lines += out.count(b"\n")
        yield out
