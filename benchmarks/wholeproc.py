"""Whole-process timing shared by the benchmarks in this folder (not a benchmark itself).

run(cmd) starts one shell command, discards its stdout through a pipe, and returns its wall time,
its CPU time and its peak RSS from os.wait4's rusage. On Linux that rusage covers the shell and
every child it waited for (a pipeline's grep and awk): CPU is their sum, the peak RSS the largest
single process among them. A command that fails or times out is returned as such, never raised.

The peak needs care: Linux starts a process's high-water RSS at that of the process it was
forked from, so every process this Python script starts reports at least the script's own peak
(13–14 MiB), far above a grep's 2 MiB. Where GNU time is installed the command runs under it, and
the peak is GNU time's report of its child (forked from a 1 MiB process); wall and CPU stay this
script's own wait4 figures (GNU time's own share is about a millisecond). Without GNU time the
peak is wait4's, and RSS_FLOOR says below what it cannot be told.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
GENLOG = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "bench", "genlog.py"))


def _gnu_time() -> str | None:
    path = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "GNU" in out.stdout + out.stderr else None


GNU_TIME = _gnu_time()
PEAK_METHOD = ("GNU time's maximum resident set size of the command" if GNU_TIME else
               "os.wait4's ru_maxrss (no GNU time here: at least this script's own peak)")


@dataclass(frozen=True)
class Run:
    """One finished process: wall and CPU (user + sys) in seconds, peak RSS in MiB, exit code
    (None when it was killed at the timeout), bytes written to stdout, the end of its stderr."""
    wall: float
    cpu: float
    rss_mib: float
    code: int | None
    out_bytes: int
    err: str

    @property
    def ok(self) -> bool:
        return self.code == 0

    def failure(self) -> str:
        """One line saying why the run failed ('' when it did not)."""
        if self.ok:
            return ""
        last = self.err.strip().splitlines()[-1][:120] if self.err.strip() else ""
        what = "killed at the timeout" if self.code is None else f"exit {self.code}"
        return f"{what}: {last}" if last else what


def run(cmd: str, timeout: float | None = None) -> Run:
    """Time ``/bin/sh -c cmd`` as a whole process; see the module docstring."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as peak:
        argv = ["/bin/sh", "-c", cmd]
        if GNU_TIME:
            argv = [GNU_TIME, "-f", "%M", "-o", peak.name] + argv
        t0 = time.perf_counter()
        # stdout is a pipe, not /dev/null: GNU grep stops at the first match when it sees
        # /dev/null. stderr goes to a file so that a chatty command cannot fill a pipe and block.
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        n = 0
        while chunk := proc.stdout.read1(1 << 20):
            n += len(chunk)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if timer:
            timer.cancel()
        proc.stdout.close()
        proc.returncode = os.waitstatus_to_exitcode(status)  # already reaped: keep Popen quiet
        err.seek(max(0, os.fstat(err.fileno()).st_size - 4096))
        tail = err.read().decode(errors="replace")
        rss_kib = ru.ru_maxrss
        reported = peak.read().split()        # "Command exited with …" lines, then %M
        if GNU_TIME and reported and reported[-1].isdigit():
            rss_kib = int(reported[-1])
    code = None if killed.is_set() else proc.returncode
    return Run(wall, ru.ru_utime + ru.ru_stime, rss_kib / 1024, code, n, tail)


def rss_floor() -> float:
    """The smallest peak RSS, MiB, that run() can report: that of `true`."""
    return run("true").rss_mib


def eaglelog_command() -> str:
    """The eaglelog to time: the installed script, else this interpreter's module."""
    return shutil.which("eaglelog") or f"{sys.executable} -m eaglelog"


def bytecode_as_installed() -> None:
    """Time eaglelog as an installed package runs: with its bytecode written once and reused.
    An environment that sets PYTHONDONTWRITEBYTECODE (this sandbox does) makes every process
    compile the package's modules again, about 0.12 s per start on this machine; a pip install
    writes the bytecode at install time.  --no-bytecode keeps the variable as it is."""
    if "--no-bytecode" in sys.argv:
        sys.argv.remove("--no-bytecode")
        return
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        print("(PYTHONDONTWRITEBYTECODE unset for the timed processes: eaglelog runs from its "
              "bytecode, as installed; --no-bytecode keeps it)", file=sys.stderr)
    import compileall
    compileall.compile_dir(os.path.join(HERE, "..", "eaglelog"), quiet=1)
