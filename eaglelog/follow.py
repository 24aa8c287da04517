"""``--follow``: keep reading a growing log (like ``tail -F``) and refresh a view of it.

Local files are polled: new bytes are read as they are appended; when the path is replaced
(rotation: a new inode) or the file shrinks (truncation), the new file is read from its start.
Remote files are followed with ``tail -n +1 -F`` on the host, through the same awk reduction as
a normal remote read.  Line numbers count from the start of following, across rotations.
Ctrl-C (SIGINT) or SIGTERM ends following; the view is printed once more, and the exit code
is 0.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from typing import Callable

from .api import ParsedLog, SourceInfo
from .errors import InputError
from .parsers import choose_engine
from .remote import (AWK_MARKERS, BLOCK_CONTEXT, RemoteOptions, _quote_path, parse_remote,
                     split_numbered)


class LocalTail:
    def __init__(self, path: str) -> None:
        self.path = path
        self.f = None
        self.ino = None
        self.pos = 0
        self.rotations = 0
        self._open()

    def _open(self) -> None:
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            self.f = None
            return
        except PermissionError:
            raise InputError(f"{self.path}: permission denied") from None
        if self.f:
            self.f.close()
        self.f = f
        self.ino = os.fstat(f.fileno()).st_ino
        self.pos = 0
        self.head = b""

    def read(self) -> bytes:
        if self.f is None:
            self._open()
            if self.f is None:
                return b""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None                   # rotated away; the new file will appear
        if st is not None and st.st_ino != self.ino:
            # rotation: what the old file got before it was renamed, then the new file
            rest = self.f.read()
            self.rotations += 1
            self._open()
            return rest + (b"" if not rest or rest.endswith(b"\n") else b"\n")
        if st is not None and self._truncated(st.st_size):
            # truncated in place (copytruncate), perhaps already written again: start over,
            # before reading anything of the new content from the old position
            self.rotations += 1
            self.f.seek(0)
            self.pos = 0
            self.head = b""
        data = self.f.read()
        self.pos += len(data)
        if len(self.head) < 4096 and data:
            self.head = (self.head + data)[:4096]
        return data

    def _truncated(self, size: int) -> bool:
        if size < self.pos:
            return True
        if not self.head:
            return False
        with open(self.path, "rb") as g:
            return g.read(len(self.head)) != self.head

    def close(self) -> None:
        if self.f:
            self.f.close()


class RemoteTail:
    """tail -F on the host, reduced by the same awk filter; lines put back at their numbers."""

    def __init__(self, spec, opts: RemoteOptions) -> None:
        # mawk reads its input in blocks unless told -W interactive: a live stream would stall
        awk = ("$A -v ctx=%d 'BEGIN{a=0} /%s/ {print NR \":\" $0; fflush(); a=0; "
               "if (index($0, \"EAGLE3_PROF\")) a=ctx; next} a>0 {print NR \"-\" $0; "
               "fflush(); a--}'" % (BLOCK_CONTEXT, AWK_MARKERS.replace("/", "\\/")))
        f = _quote_path(spec.path)
        # the pipeline runs in the background; `cat` waits for our stdin to close (when eaglelog
        # stops, however it stops) and then `kill 0` ends tail and awk on the host too
        script = ("LC_ALL=C; export LC_ALL; A=awk; "
                  f"if [ ! -e {f} ]; then echo 'eaglelog: no such file' >&2; exit 3; fi; "
                  f"if [ ! -r {f} ]; then echo 'eaglelog: permission denied' >&2; exit 3; fi; "
                  "if awk -W version 2>&1 | grep -qi mawk; then A='awk -W interactive'; fi; "
                  f"( tail -n +1 -F {f} | {awk} ) & cat >/dev/null; kill 0")
        cmd = opts.ssh_command(spec) + ["sh -c " + shlex.quote(script)]
        self.timeout = opts.connect_timeout
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buf = b""
        self.expect = 1
        self.spec = spec
        self.rotations = 0

    def read(self) -> bytes:
        chunks = []
        fd = self.proc.stdout.fileno()
        while True:
            try:
                block = os.read(fd, 1 << 20)
            except BlockingIOError:
                break
            if not block:
                break
            chunks.append(block)
        data = b"".join(chunks) or None
        if data is None:
            if self.proc.poll() is not None and self.proc.returncode != 0:
                from .remote import ssh_error
                err = self.proc.stderr.read().decode("utf-8", "replace")
                if self.proc.returncode == 3 and "eaglelog: " in err:
                    raise InputError(f"{self.spec.text}: "
                                     f"{err.split('eaglelog: ', 1)[1].strip()}")
                raise ssh_error(self.spec, self.proc.returncode, err, self.timeout)
            return b""
        self.buf += data
        out = []
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            got = split_numbered(line)
            if got is None:
                continue
            n, text = got
            if n > self.expect:
                out.append(b"\n" * (n - self.expect))
            out.append(text + b"\n")
            self.expect = n + 1
        return b"".join(out)

    def close(self) -> None:
        try:
            self.proc.stdin.close()        # the remote `cat` ends: tail and awk are killed there
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()


def follow(spec: str, render: Callable[[ParsedLog], str], emit: Callable[[str, bool], None], *,
           base_date=None, remote: RemoteOptions | None = None, interval: float = 5.0,
           stop_after: float | None = None) -> ParsedLog:
    """Follow ``spec`` until SIGINT/SIGTERM (or ``stop_after`` seconds); call ``emit`` with a
    fresh rendering every ``interval`` seconds and a final one (``final=True``)."""
    r = parse_remote(spec)
    tail = RemoteTail(r, remote or RemoteOptions()) if r else LocalTail(spec)
    if not r and tail.f is None:
        raise InputError(f"{spec}: no such file")
    scanner = None        # the family is sniffed from the first lines read
    carry = b""
    stop = {"now": False}

    def on_term(*_):
        stop["now"] = True
    old = signal.signal(signal.SIGTERM, on_term)
    t0 = last = time.monotonic()
    shown = False
    try:
        while not stop["now"]:
            data = tail.read()
            if data:
                data = carry + data
                cut = data.rfind(b"\n")
                carry = data[cut + 1:]
                if cut >= 0:
                    if scanner is None:
                        scanner = choose_engine("auto", data[:1 << 20]).scanner(spec, base_date)
                    scanner.feed(data[:cut + 1])
            now = time.monotonic()
            if now - last >= interval and scanner is not None:
                last = now
                snap = snapshot(scanner)
                if snap is not None:
                    emit(render(snap), False)
                    shown = True
            if stop_after is not None and now - t0 >= stop_after:
                break
            if not data:
                time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, old)
        tail.close()
    if carry:
        if scanner is None:
            scanner = choose_engine("auto", carry).scanner(spec, base_date)
        scanner.feed(carry + b"\n")
    if scanner is None:
        raise InputError(f"{spec}: stopped before any speculative-decoding record was read")
    frames = scanner.finish()
    log = _as_log(spec, scanner, frames)
    if log is None:
        if not shown:
            raise InputError(f"{spec}: stopped before any speculative-decoding record was read")
        return None
    emit(render(log), True)
    return log


def _as_log(spec: str, scanner, frames) -> ParsedLog | None:
    from .schema import TABLES
    from .tables import concat_frames

    counts = {t: len(f) for t, f in frames.items()}
    if not any(counts.values()):
        return None
    st = scanner.stats
    info = SourceInfo(spec, getattr(scanner, "engine", "sglang"), None, None, st.bytes, st.lines, st.skipped,
                      st.first_skipped, counts)
    tables = {t: concat_frames(TABLES[t], [frames[t]]) for t in TABLES}
    return ParsedLog(tables, [info], scanner.diags + scanner.overflow())


def snapshot(scanner) -> ParsedLog | None:
    """The tables so far, without closing the blocks still open."""
    frames = scanner.frames_so_far()
    for t, f in frames.items():
        if "_time_only" in f.columns:
            frames[t] = f.drop(columns="_time_only")
    return _as_log(scanner.source, scanner, frames)
