"""``--follow``: keep reading a growing log (like ``tail -F``) and refresh a view of it.

Local files are polled: new bytes are read as they are appended, at most READ_CHUNK bytes at a
time (an existing large file is read in chunks, never at once); when the path is replaced
(rotation: a new inode) the rest of the old file is read first, then the new file from its
start; when the file shrinks or its head changes (truncation, copytruncate) it is read again
from its start.  Only a regular file is followed (a FIFO is refused).  Remote files are followed
with ``tail -n +1 -F`` on the host, through the same awk reduction as a normal remote read; a
remote glob is refused (a usage error): follow each file with its own ``eaglelog --follow``.
Line numbers count from the start of following, across rotations.

Ctrl-C (SIGINT) or SIGTERM ends following: the signal only sets a flag that the loop checks
between reads (it never interrupts a read or a refresh half way), the view is printed once more,
and the exit code is 0.  Further signals while the final view is made are ignored, so a second
Ctrl-C does not lose it.
"""
from __future__ import annotations

import os
import select
import shlex
import signal
import stat
import subprocess
import threading
import time
from typing import Callable

from ..api import ParsedLog, SourceInfo
from ..errors import InputError
from ..parsers import choose_engine
from .remote import (SEP, RemoteOptions, RemoteSpecError, _quote_path, awk_program, is_glob,
                     parse_remote, printable, split_numbered)

READ_CHUNK = 8 << 20      # bytes read from a local file per poll at most
POLL = 0.2                # seconds between polls when nothing new arrived


class LocalTail:
    def __init__(self, path: str, chunk: int = READ_CHUNK) -> None:
        self.path = path
        self.chunk = chunk
        self.f = None
        self.old = None          # a rotated-away file still being read to its end
        self.ino = None
        self.pos = 0
        self.head = b""
        self.rotations = 0
        self.ended_nl = True     # the last byte handed out was a newline (or none was)
        self._open()

    def _open(self) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.f = None
            return
        except PermissionError:
            raise InputError(f"{self.path}: permission denied") from None
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{self.path}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{self.path}: not a regular file (a FIFO, socket or device: "
                             "--follow reads log files)")
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            self.f = None
            return
        except PermissionError:
            raise InputError(f"{self.path}: permission denied") from None
        fs = os.fstat(f.fileno())
        self.f = f
        self.ino = (fs.st_dev, fs.st_ino)
        self.pos = 0
        self.head = b""

    def _out(self, data: bytes) -> bytes:
        if data:
            self.ended_nl = data.endswith(b"\n")
        return data

    def read(self) -> bytes:
        """The next bytes (at most ``chunk``, plus a newline that ends a line cut by rotation)."""
        if self.old is not None:
            data = self.old.read(self.chunk)
            if data:
                return self._out(data)
            self.old.close()
            self.old = None
            if not self.ended_nl:        # the old file's last line had no newline: end it
                return self._out(b"\n")
        if self.f is None:
            self._open()
            if self.f is None:
                return b""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None                   # rotated away; the new file will appear
        if st is not None and (st.st_dev, st.st_ino) != self.ino:
            # rotation: what the old file got before it was renamed, then the new file
            self.old, self.f = self.f, None
            self.rotations += 1
            self._open()
            return self.read()
        if st is not None and self._truncated(st.st_size):
            # truncated in place (copytruncate), perhaps already written again: start over,
            # before reading anything of the new content from the old position
            self.rotations += 1
            self.f.seek(0)
            self.pos = 0
            self.head = b""
            if not self.ended_nl:
                return self._out(b"\n")
        data = self.f.read(self.chunk)
        self.pos += len(data)
        if len(self.head) < 4096 and data:
            self.head = (self.head + data)[:4096]
        return self._out(data)

    def _truncated(self, size: int) -> bool:
        if size < self.pos:
            return True
        if not self.head:
            return False
        with open(self.path, "rb") as g:
            return g.read(len(self.head)) != self.head

    def close(self) -> None:
        for f in (self.f, self.old):
            if f:
                f.close()


class RemoteTail:
    """tail -F on the host, reduced by the same awk filter; lines put back at their numbers.

    The script says HELLO once the file is found readable: until then a watchdog
    (RemoteOptions.handshake_timeout) bounds the wait, and ssh's keep-alives after it."""

    def __init__(self, spec, opts: RemoteOptions) -> None:
        # mawk reads its input in blocks unless told -W interactive: a live stream would stall
        f = _quote_path(spec.path)
        # the pipeline runs in the background; `cat` waits for our stdin to close (when eaglelog
        # stops, however it stops) and then `kill 0` ends tail and awk on the host too
        script = ("LC_ALL=C; export LC_ALL; A=awk; "
                  f"f={f}; case $f in -*) f=./$f;; esac; "
                  "if [ ! -e \"$f\" ]; then echo 'eaglelog: no such file' >&2; exit 3; fi; "
                  "if [ -d \"$f\" ]; then echo 'eaglelog: is a directory' >&2; exit 3; fi; "
                  "if [ ! -f \"$f\" ]; then echo 'eaglelog: not a regular file (a FIFO, socket "
                  "or device: not read)' >&2; exit 3; fi; "
                  "if [ ! -r \"$f\" ]; then echo 'eaglelog: permission denied' >&2; exit 3; fi; "
                  "if awk -W version 2>&1 | grep -qi mawk; then A='awk -W interactive'; fi; "
                  "printf '\\036EAGLELOG HELLO 2 none\\n'; "
                  f"( tail -n +1 -F \"$f\" | {awk_program(live=True)} ) & cat >/dev/null; kill 0")
        cmd = opts.ssh_command(spec) + ["sh -c " + shlex.quote(script)]
        self.timeout = opts.connect_timeout
        self.bound = opts.handshake_timeout
        self.t0 = time.monotonic()
        self.hello = False
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True)
        except FileNotFoundError:
            raise InputError(f"{spec.name(spec.path)}: the ssh command {cmd[0]!r} is not "
                             "installed (or set EAGLELOG_SSH)") from None
        os.set_blocking(self.proc.stdout.fileno(), False)
        self.buf = b""
        self.expect = 1
        self.spec = spec
        self.rotations = 0

    def read(self) -> bytes:
        chunks = []
        fd = self.proc.stdout.fileno()
        while sum(map(len, chunks)) < READ_CHUNK:
            try:
                block = os.read(fd, 1 << 20)
            except BlockingIOError:
                break
            if not block:
                break
            chunks.append(block)
        data = b"".join(chunks) or None
        if data is None:
            if self.proc.poll() is not None and (self.proc.returncode != 0 or not self.hello):
                from .remote import ssh_error
                err = self.proc.stderr.read().decode("utf-8", "replace")
                if self.proc.returncode == 3 and "eaglelog: " in err:
                    raise InputError(f"{self.spec.name(self.spec.path)}: "
                                     f"{err.split('eaglelog: ', 1)[1].strip()}")
                raise ssh_error(self.spec, self.proc.returncode, err, self.timeout)
            if not self.hello and time.monotonic() - self.t0 > self.bound:
                self._kill()
                raise InputError(f"{self.spec.name(self.spec.path)}: no answer from "
                                 f"{self.spec.host} within {self.bound} s (connected, but the "
                                 "ssh handshake or login did not finish; --connect-timeout "
                                 f"{self.timeout})")
            return b""
        self.buf += data
        out = []
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            if line.startswith(SEP):
                if line.startswith(SEP + b"HELLO "):
                    self.hello = True
                continue
            got = split_numbered(line)
            if got is None:
                continue
            n, text = got
            if n > self.expect:
                out.append(b"\n" * (n - self.expect))
            out.append(text + b"\n")
            self.expect = n + 1
        return b"".join(out)

    def _kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is not None:
            return
        if not self.hello:               # still connecting: nothing on the host to stop
            self._kill()
            return
        try:
            self.proc.stdin.close()        # the remote `cat` ends: tail and awk are killed there
        except OSError:
            pass
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._kill()


class _StopSignals:
    """SIGINT and SIGTERM set a flag (and wake the poll) instead of raising: following stops
    between two reads, never inside a read, a snapshot or a refresh, and a signal that comes
    while the final view is made is ignored.  Only the main thread can install handlers; in
    another thread following stops on ``stop_after`` (or KeyboardInterrupt) only.

    The handler only sets an attribute and writes a byte to a pipe that the poll waits on with
    select(): it takes no lock (a threading.Event set from a handler deadlocks when the signal
    comes while the main thread is inside Event.wait holding the Event's lock)."""

    def __init__(self) -> None:
        self.requested = False
        self.old: dict[int, object] = {}
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)

    def __enter__(self) -> "_StopSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.old[sig] = signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum, frame) -> None:
        self.requested = True
        try:
            os.write(self.w, b"\0")
        except OSError:            # the pipe is full: the poll wakes anyway
            pass

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when a signal comes."""
        if not self.requested:
            select.select([self.r], [], [], seconds)

    def __exit__(self, *exc) -> None:
        for sig, old in self.old.items():
            signal.signal(sig, old)
        os.close(self.r)
        os.close(self.w)


def screen_view(write_final: Callable[[str], None] | None, to_err: bool,
                tty: bool) -> Callable[[str, bool], None]:
    """The ``emit`` of ``follow`` for a person watching: each refresh replaces the screen on a
    terminal (else a timestamped header, and nothing when nothing changed); the final view
    goes to ``write_final`` (None: the caller prints its own final result).  ``to_err``: the
    refreshes go to stderr (stdout keeps only the final result in a machine format)."""
    import click
    shown = {"text": None}

    def emit_view(text: str, final: bool) -> None:
        if final:
            if write_final is not None:
                write_final(text)
            return
        if not tty and text == shown["text"]:
            return                      # nothing new since the last refresh printed
        shown["text"] = text
        if tty:
            click.echo("\x1b[H\x1b[2J", nl=False, err=to_err)
        else:
            import datetime as _dt
            click.echo(f"--- {_dt.datetime.now():%H:%M:%S} (following; Ctrl-C to stop) ---",
                       err=to_err)
        click.echo(text, nl=False, err=to_err)
    return emit_view


def follow(spec: str, render: Callable[[ParsedLog], str], emit: Callable[[str, bool], None], *,
           base_date=None, remote: RemoteOptions | None = None, interval: float = 5.0,
           stop_after: float | None = None,
           final: Callable[[ParsedLog], None] | None = None) -> ParsedLog | None:
    """Follow ``spec`` until SIGINT/SIGTERM (or ``stop_after`` seconds); call ``emit`` with a
    fresh rendering every ``interval`` seconds and a final one (``final=True``), then
    ``final(log)`` if given, both before signals are handled normally again."""
    r = parse_remote(spec)
    if r is not None and is_glob(r.path):
        raise RemoteSpecError(f"{printable(spec)}: --follow reads one file, not a remote glob; "
                              "run one eaglelog --follow per file")
    with _StopSignals() as stop:
        return _follow(spec, r, render, emit, base_date, remote, interval, stop_after, final,
                       stop)


def _follow(spec, r, render, emit, base_date, remote, interval, stop_after, final, stop):
    tail = RemoteTail(r, remote or RemoteOptions()) if r else LocalTail(spec)
    if not r and tail.f is None:
        tail.close()
        raise InputError(f"{spec}: no such file")
    scanner = None        # the family is sniffed from the first lines read
    carry = b""
    t0 = last = time.monotonic()
    shown = False
    try:
        while not stop.requested:
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
                stop.wait(POLL)
    except KeyboardInterrupt:            # only where no handler could be installed
        pass
    finally:
        tail.close()
    if carry:
        if scanner is None:
            scanner = choose_engine("auto", carry).scanner(spec, base_date)
        scanner.feed(carry + b"\n")
    if scanner is None:
        if r is not None and not tail.hello:
            raise InputError(f"{r.name(r.path)}: stopped before {r.host} answered")
        raise InputError(f"{spec}: stopped before any speculative-decoding record was read")
    frames = scanner.finish()
    log = _as_log(spec, scanner, frames)
    if log is None:
        if not shown:
            raise InputError(f"{spec}: stopped before any speculative-decoding record was read")
        return None
    emit(render(log), True)
    if final is not None:
        final(log)
    return log


def _as_log(spec: str, scanner, frames) -> ParsedLog | None:
    from ..schema import TABLES
    from ..tables import concat_frames

    counts = {t: len(f) for t, f in frames.items()}
    if not any(counts.values()):
        return None
    st = scanner.stats
    info = SourceInfo(spec, getattr(scanner, "engine", "sglang"), None, None, st.bytes, st.lines,
                      st.skipped, st.first_skipped, counts)
    tables = {t: concat_frames(TABLES[t], [frames[t]]) for t in TABLES}
    return ParsedLog(tables, [info], scanner.diags + scanner.overflow())


def snapshot(scanner) -> ParsedLog | None:
    """The tables so far, without closing the blocks still open."""
    frames = scanner.frames_so_far()
    for t, f in frames.items():
        if "_time_only" in f.columns:
            frames[t] = f.drop(columns="_time_only")
    return _as_log(scanner.source, scanner, frames)
