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
import zlib
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


def _read(src: Source, n: int, done: int) -> bytes:
    try:
        return src.stream.read(n)
    except (EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as e:
        where = ""
        try:
            where = f" near compressed byte {src.raw.tell():,}"
        except (OSError, ValueError):
            pass
        kind = src.compression or "input"
        reason = str(e) or type(e).__name__
        if isinstance(e, EOFError):
            reason = "the compressed stream ends early (file truncated?)"
        raise InputError(f"{src.name}: corrupt {kind} data{where}, after {done:,} decompressed "
                         f"bytes: {reason}") from None
    except Exception as e:  # zstandard.ZstdError and other decompressor errors
        raise InputError(f"{src.name}: corrupt {src.compression or 'input'} data after "
                         f"{done:,} decompressed bytes: {e}") from None


def iter_chunks(src: Source, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield chunks that end just after a newline; the final chunk may lack one.

    Raises InputError (with the decompressed byte offset) when compressed data is corrupt; the
    chunks yielded before that are complete and can be kept.
    """
    carry = b""
    done = 0
    while True:
        block = _read(src, chunk_size, done)
        if not block:
            if carry:
                yield carry
            return
        done += len(block)
        block = carry + block if carry else block
        cut = block.rfind(b"\n")
        if cut < 0:
            carry = block
            if len(carry) > 64 * chunk_size:
                raise InputError(f"{src.name}: no line break in the first {len(carry):,} bytes; "
                                 "not a line-oriented log")
            continue
        carry = block[cut + 1:]
        yield block[:cut + 1]
