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
import re
import stat
import sys
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

from ..errors import InputError

CHUNK_SIZE = 8 << 20
READ_SIZE = 1 << 20
LINE_STEP = 1 << 16           # bytes read at a time to find where a chunk's last line ends

_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"BZh", "bzip2"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)


RAW_PIECE = 64 << 10          # compressed bytes fed to a decompressor at a time
MAX_LINE = 16 << 20           # a longer line is not a log line: skipped and reported

# What the system tools print of a damaged member before their error, which is what is kept:
# gzip -dc writes its 32 KiB window each time it fills (gzip 1.12 inflate.c, WSIZE) and drops
# the part not yet written on a format error (not on a CRC or length error, found after the
# whole member was written); bzip2 -dc writes what each BZ2_bzRead call returns, 5,000 bytes a
# time from each stream's start (bzip2 1.0.8 bzip2.c), and a call that fails returns nothing;
# xz -dc writes everything liblzma decoded (xz 5.4 coder.c).  zstd -dc drops the output of its
# failing ZSTD_decompressStream call (up to one 128 KiB block decoded before the damage,
# depending on how its reads fell); eaglelog keeps every block decoded before the damage.
# Known differences: zlib stops at a back-reference before the start of the data (damage in a
# member's first 32 KiB), which gzip's own inflate decodes on as garbage; on a cut deflate
# stream zlib may decode a last byte that gzip does not; libzstd versions differ in the garbage
# they decode from damaged blocks before noticing.
_UNIT = {"gzip": 32 << 10, "bzip2": 5000}
_GZIP_TRAILER = ("incorrect data check", "incorrect length check")
REPLAY_KEEP = 16 << 20        # unseekable input: compressed bytes of a member kept for a replay
_NOT_ZERO = re.compile(rb"[^\x00]")


class _Damage(Exception):
    """Damaged or cut compressed data (cause None: cut), at compressed byte ``offset``, with the
    decoded bytes ``out`` still to be written before it."""

    def __init__(self, cause: Exception | None, offset: int | None = None,
                 out: bytes = b"") -> None:
        self.cause, self.offset, self.out = cause, offset, out


class _Decoder:
    """Incremental decompression across concatenated members/frames/streams that writes what
    the system tool writes before damage or truncation (see _UNIT above).

    Decoding goes 64 KiB of compressed bytes at a time; when a piece fails, the failing member
    is decoded again up to the piece (from the file, or from the member's bytes kept in memory
    for an unseekable input) and the piece a byte at a time, so that the bytes decoded before
    the damage are known exactly (a failing decompress call returns nothing of what it
    decoded)."""

    def __init__(self, kind: str, raw=None) -> None:
        self.kind = kind
        self.raw = raw
        try:
            self.seekable = bool(raw is not None and raw.seekable())
        except (OSError, ValueError):
            self.seekable = False
        self.unit = _UNIT.get(kind)
        self.obj = None                 # the current member's decompressor; None between them
        self.start = 0                  # compressed offset of the current member
        self.pos = 0                    # compressed bytes fed so far
        self.out = 0                    # bytes decoded from the current member
        self.held = bytearray()         # of those, the ones the tool has not written yet
        self.kept: list[bytes] | None = []   # unseekable input: the member's compressed bytes
        self.kept_bytes = 0

    def _new(self):
        if self.kind == "gzip":
            return zlib.decompressobj(wbits=31)
        if self.kind == "xz":
            return lzma.LZMADecompressor()
        if self.kind == "bzip2":
            return bz2.BZ2Decompressor()
        import zstandard
        return zstandard.ZstdDecompressor().decompressobj()

    def _take(self, got: bytes, out: list) -> None:
        """Account for decoded bytes; append to ``out`` what the tool would have written."""
        if not got:
            return
        self.out += len(got)
        if self.unit is None:
            out.append(got)
            return
        rest = self.out % self.unit           # bytes after the last whole unit
        if len(self.held) + len(got) <= rest:
            self.held += got
            return
        if self.held:
            out.append(bytes(self.held))
        out.append(memoryview(got)[:len(got) - rest] if rest else got)
        self.held = bytearray(got[len(got) - rest:]) if rest else bytearray()

    def _end(self, out: list) -> None:
        if self.held:
            out.append(bytes(self.held))
        self.obj, self.out, self.held, self.kept, self.kept_bytes = None, 0, bytearray(), [], 0

    def feed(self, data: bytes) -> bytes:
        """The bytes the tool would write after reading ``data``; raises _Damage."""
        out: list = []
        i, n = 0, len(data)
        while i < n:
            if self.obj is None:
                m = _NOT_ZERO.search(data, i)       # zero padding between/after members
                if m is None:
                    break
                i = m.start()
                self.obj, self.start = self._new(), self.pos + i
            part = data[i:] if i else data
            try:
                got = self.obj.decompress(part)
            except Exception as e:  # zlib.error, LZMAError, OSError, zstd errors, EOFError
                raise self._recover(part, self.pos + i, e, out) from None
            self._take(got, out)
            if self.obj.eof:
                used = len(part) - len(self.obj.unused_data)
                i += used
                self._end(out)
            else:
                self._keep(part)
                i = n
        self.pos += n
        return b"".join(out)

    def _keep(self, part: bytes) -> None:
        if self.seekable or self.kept is None:
            return
        self.kept.append(part)
        self.kept_bytes += len(part)
        if self.kept_bytes > REPLAY_KEEP:
            self.kept = None                # too long to keep: a failing piece is lost

    def close(self) -> tuple[bytes, bool]:
        """At the end of the input: (what the tool writes of a cut member, whether the input
        ended between members)."""
        if self.obj is None:
            return b"", True
        # a cut member: gzip and xz write what they decoded, bzip2's last call fails
        tail = bytes(self.held) if self.kind == "gzip" else b""
        self.held = bytearray()
        return tail, False

    # ------------------------------------------------------------------ damage: replay exactly

    def _member_before(self, at: int):
        """A new decompressor fed the current member's bytes before compressed offset ``at``,
        or None when they cannot be read again."""
        obj = self._new()
        if at <= self.start:
            return obj
        if self.seekable:
            back = self.raw.tell()
            try:
                self.raw.seek(self.start)
                left = at - self.start
                while left > 0:
                    block = self.raw.read(min(left, 1 << 20))
                    if not block:
                        return None
                    obj.decompress(block)
                    left -= len(block)
            finally:
                self.raw.seek(back)
            return obj
        if self.kept is None:
            return None
        for block in self.kept:
            obj.decompress(block)
        return obj

    def _fine(self, obj, part: bytes, out: list):
        """Feed ``part`` a byte at a time, taking every decoded byte (output limited so that
        nothing the tool would have written is lost with a failing call); returns (the error,
        its index in part), or (None, bytes fed) when the member ended or part ran out."""
        kind, unit = self.kind, self.unit
        buf = bytearray()

        def limit() -> int:     # xz: a byte a time; gzip, bzip2: up to the next unit boundary
            return 1 if unit is None else unit - (self.out + len(buf)) % unit
        err, k = None, len(part)
        for i in range(len(part)):
            data = part[i:i + 1]
            try:
                if kind == "zstd":
                    buf += obj.decompress(data)
                elif kind == "gzip":
                    while True:
                        got = obj.decompress(data, limit())
                        buf += got
                        data = obj.unconsumed_tail
                        if obj.eof or not got:
                            break
                else:
                    buf += obj.decompress(data, limit())
                    while not obj.needs_input and not obj.eof:
                        buf += obj.decompress(b"", limit())
            except Exception as e:  # the damage, found again
                err, k = e, i
                break
            if obj.eof:
                k = i + 1
                break
        self._take(bytes(buf), out)
        return err, k

    def _recover(self, part: bytes, at: int, cause: Exception, out: list) -> _Damage:
        """The failing member again, exactly: what the tool writes before the damage."""
        try:
            obj = self._member_before(at)
        except Exception:
            obj = None
        offset = at + len(part)
        if obj is not None:
            # the bytes decoded before this piece were taken already; self.out counts them
            try:
                err, k = self._fine(obj, part, out)
            except Exception:       # never expected: report the failure as it came
                err, k = None, 0
            if err is not None:
                cause, offset = err, at + k
        if self.kind == "gzip" and any(m in str(cause) for m in _GZIP_TRAILER):
            if self.held:
                out.append(bytes(self.held))     # gzip wrote the member before its trailer
        self.held = bytearray()
        return _Damage(cause, offset, b"".join(out))


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


def _corrupt(src: Source, d: "_Damage", done: int, line: int) -> InputError:
    """A one-line error for damaged or cut compressed data, naming the line and the offsets."""
    where = ""
    if d.offset is not None:
        where = f" near compressed byte {d.offset:,}"
    if d.cause is None:
        return InputError(f"{src.name}:{line}: {src.compression} data ends early{where} (after "
                          f"{done:,} decompressed bytes): the file is truncated")
    e = d.cause
    return InputError(f"{src.name}:{line}: corrupt {src.compression} data{where} (after "
                      f"{done:,} decompressed bytes): {str(e) or type(e).__name__}")


def _pieces(src: Source):
    """Decompressed pieces of the input.  On damage or truncation, yields what the system tool
    would have printed, then raises _Damage (from which the caller builds the InputError)."""
    if src.compression is None:
        while True:
            block = src.raw.read(READ_SIZE)
            if not block:
                return
            yield block
    dec = _Decoder(src.compression, src.raw)
    while True:
        raw = src.raw.read(RAW_PIECE)
        if not raw:
            tail, complete = dec.close()
            if tail:
                yield tail
            if not complete:
                raise _Damage(None, dec.pos)
            return
        try:
            out = dec.feed(raw)
        except _Damage as d:
            if d.out:
                yield d.out
            raise _Damage(d.cause, d.offset) from None
        if out:
            yield out


def read_whole(spec: str) -> bytes:
    """The whole decompressed content of a small input (a JSON result file), with the same
    one-line errors as a log: missing, a directory, unreadable, damaged or cut compressed data
    (gz/xz/bz2/zst, by magic bytes)."""
    out: list[bytes] = []
    with open_source(spec) as src:
        try:
            for piece in _pieces(src):
                out.append(piece)
        except _Damage as d:
            data = b"".join(out)
            raise _corrupt(src, d, len(data), data.count(b"\n") + 1) from None
        except OSError as e:
            raise InputError(f"{spec}: cannot read: {e.strerror or e}") from None
    return b"".join(out)


def iter_chunks(src: Source, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
    """Yield chunks that end just after a newline; the final chunk may lack one.

    When compressed data turns out to be damaged or cut short, what the system tool (zcat,
    xzcat, bzcat; at least what zstd -dc) prints before its error is yielded first; then
    InputError is raised, naming the line and the byte offsets.  A line longer than MAX_LINE
    is replaced by an empty line and noted in ``src.notes``; an input whose first MAX_LINE
    bytes hold no line break is rejected.

    A plain regular file's chunks are one buffer, reused (a bytearray): a chunk is to be read,
    or copied, before the next is asked for.
    """
    fd = _regular_file(src)
    if fd is not None:
        yield from _file_chunks(src, fd, chunk_size)
    else:
        yield from _stream_chunks(src, chunk_size)


def _regular_file(src: Source) -> int | None:
    """The descriptor of an uncompressed regular file (None: a pipe, stdin, compressed)."""
    if src.compression is not None or not hasattr(os, "pread"):     # (pread: POSIX)
        return None
    try:
        fd = src.raw.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (AttributeError, OSError, ValueError):
        return None


def _file_chunks(src: Source, fd: int, chunk_size: int) -> Iterator[bytearray]:
    """iter_chunks of a regular file: each chunk read at its offset into one bytearray, resized
    in place to end at the line end after ``chunk_size`` bytes (io/parallel.py reads its ranges
    the same way).  Fresh memory is what a read pays most for (a page fault each 4 KiB): read
    in pieces, joined and cut at the last newline, every chunk was three new copies of itself.
    A line longer than MAX_LINE at a chunk's end hands the rest to the stream reader, which
    skips and notes it; the file's size is looked at again each chunk (a log still written)."""
    start = pos = src.raw.tell()
    buf = bytearray()
    while True:
        end = os.fstat(fd).st_size
        if pos >= end:
            break
        cut = _line_end(fd, pos + chunk_size, end)
        n = cut - pos
        if cut < 0 or n > MAX_LINE and _has_long_line_at(fd, pos, n):
            src.raw.seek(pos)
            yield from _stream_chunks(src, chunk_size, done=pos - start,
                                      lines=_newlines(fd, start, pos))
            return
        got = read_at(fd, buf, pos, n)
        if not got:
            break
        pos += got
        yield buf
    src.raw.seek(pos)


def _newlines(fd: int, start: int, end: int) -> int:
    """The newlines of the file from start to end (counted only when the stream reader takes
    over at a long line and its notes need the line number: the scanner counts them anyway)."""
    n = 0
    for at in range(start, end, READ_SIZE):
        n += os.pread(fd, min(READ_SIZE, end - at), at).count(b"\n")
    return n


def read_at(fd: int, buf: bytearray, pos: int, n: int) -> int:
    """buf, resized in place to n bytes (a bytearray keeps its allocation when it shrinks by
    less than half), filled from the file at ``pos``: the bytes read, buf cut to them (fewer
    than n: the file shrank meanwhile)."""
    if n < len(buf):
        del buf[n:]
    elif n > len(buf):
        buf.extend(bytes(n - len(buf)))
    if hasattr(os, "preadv"):
        got = os.preadv(fd, [buf], pos)
    else:                                   # (a POSIX system without it: a copy)
        piece = os.pread(fd, n, pos)
        got = len(piece)
        buf[:got] = piece
    if got < n:
        del buf[got:]
    return got


def _line_end(fd: int, at: int, end: int) -> int:
    """The offset just after the newline that ends the line holding byte ``at - 1`` (``end``
    when that is at or past ``end``, which is a line end); -1 when that line is longer than
    MAX_LINE (it is not read to its end)."""
    if at >= end:
        return end
    pos = at - 1
    while pos < end:
        if pos - at > MAX_LINE:
            return -1
        piece = os.pread(fd, min(LINE_STEP, end - pos), pos)
        if not piece:
            return end
        nl = piece.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(piece)
    return end


def _has_long_line(buf) -> bool:
    """Whether a line of buf (which starts at a line start) is longer than MAX_LINE bytes: one
    search per MAX_LINE bytes, not one per line."""
    p, n = 0, len(buf)
    while n - p > MAX_LINE:
        nl = buf.rfind(b"\n", p, p + MAX_LINE + 1)
        if nl < 0:
            return True
        p = nl + 1
    return False


def _has_long_line_at(fd: int, pos: int, n: int) -> bool:
    """_has_long_line of the n bytes of the file at pos (a chunk this long is rare: a long
    line ends it)."""
    return _has_long_line(os.pread(fd, n, pos))


def _stream_chunks(src: Source, chunk_size: int, done: int = 0,
                   lines: int = 0) -> Iterator[bytes]:
    """iter_chunks read in pieces (compressed data, a pipe; a regular file from a line longer
    than MAX_LINE on, ``done`` bytes and ``lines`` lines into it)."""
    buf: list[bytes] = []
    have = 0
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
            raise _corrupt(src, d, done, lines + 1) from None
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


# ----------------------------------------------------------------------------- eaglelog exports
# an eaglelog export (``eaglelog export``, analysis/compare.py Run.to_export) is one JSON object
# whose first key is this; the commands that read exports (analysis/from_export.py)
EXPORT_MARK = b'"eaglelog_export"'
READS_EXPORTS = ("summary", "compare", "sweep", "breakeven")


def is_metrics_source(spec: str) -> bool:
    """``http(s)://…`` (a server's /metrics) or ``prom+http(s)://…`` (a Prometheus server):
    an input live/metrics.py and live/prom.py read, not a log."""
    s = str(spec)
    return s.startswith(("http://", "https://", "prom+http://", "prom+https://"))


def looks_like_export(spec: str) -> bool:
    """A local file that begins as an eaglelog export does (its first 256 bytes)."""
    if spec == "-" or not os.path.isfile(spec):
        return False
    try:
        with open(spec, "rb") as f:
            head = f.read(256).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and EXPORT_MARK in head


def export_refusal(spec: str, command: str | None = None) -> str:
    """The one line for an export given where the log's lines are needed."""
    who = f"`eaglelog {command}`" if command else "this analysis"
    return (f"{spec}: an eaglelog export (one run's estimates, not its log lines): {who} needs "
            f"the log itself; exports are read by {', '.join(READS_EXPORTS)}")
