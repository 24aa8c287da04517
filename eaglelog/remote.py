"""Logs on other machines: ``[user@]host:/path`` and ``ssh://[user@]host[:port]/path``.

Access goes through the system OpenSSH client, so ~/.ssh/config, agents, jump hosts and
ControlMaster work as users expect.  ``EAGLELOG_SSH`` replaces the ssh command (like
``GIT_SSH_COMMAND``); ``--ssh-option OPT`` adds ``-o OPT``.  Every connection has
``BatchMode=yes`` (never a password prompt) and a connect timeout.

Two ways to read a remote log:

* **reduce** (default): a POSIX sh + awk script runs on the remote host.  It expands the path
  (globs expand remotely), decompresses .gz/.xz/.bz2/.zst there when the tool is installed, and
  sends only the lines that carry a marker of a known family (plus the lines after an
  EAGLE3_PROF header, for the block), each with its original line number, and the file's total
  line count.  Locally the lines are put back at their numbers (the dropped lines become empty
  lines), so records carry the same line numbers as a local parse.
* **fetch** (``--fetch``): the whole file is copied (``ssh cat``) into a cache keyed by host,
  path, size and modification time; an unchanged file is not transferred again.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .errors import InputError

MAX_PARALLEL = 8
SEP = b"\x1eEAGLELOG "
AWK_MARKERS = (r'EAGLE3_PROF|Decode batch|Prefil|server_args=|Finish: obj=|"request\.finished"'
               r'|#running-req: |new fill batch\. '
               # vLLM (eaglelog/parsers/vllm.py)
               r'|SpecDecoding metrics: |Speculative metrics: |SpecDecodeWorker stage times: '
               r'|Avg prompt throughput: |Prefix cache hit rate: GPU: |iteration elapsed time: ')
BLOCK_CONTEXT = 40   # lines kept after an EAGLE3_PROF header (interleaved ranks need more)
_SAFE_GLOB = re.compile(r"^[A-Za-z0-9_./*?\[\]~+=,:@%-]+$")
_HOSTPATH = re.compile(r"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@/:\s\[\]]+)"
                       r":(?P<path>.+)$")
_URL = re.compile(r"^ssh://(?:(?P<user>[^@/\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@/:\s\[\]]+)"
                  r"(?::(?P<port>\d+))?(?P<path>/.*)$")


@dataclass(frozen=True)
class RemoteSpec:
    text: str
    user: str | None
    host: str
    port: int | None
    path: str

    @property
    def target(self) -> str:
        host = self.host.strip("[]")
        return f"{self.user}@{host}" if self.user else host

    def name(self, path: str) -> str:
        """The label of one remote file: the spec's own spelling when it names one file."""
        if path == self.path:
            return self.text
        if self.text.startswith("ssh://"):
            port = f":{self.port}" if self.port else ""
            user = f"{self.user}@" if self.user else ""
            return f"ssh://{user}{self.host}{port}{path}"
        user = f"{self.user}@" if self.user else ""
        return f"{user}{self.host}:{path}"


def parse_remote(spec: str) -> RemoteSpec | None:
    """A remote spec, or None for a local path (rsync-style: a local path of that name wins)."""
    if spec == "-" or os.path.exists(spec):
        return None
    m = _URL.match(spec)
    if m:
        return RemoteSpec(spec, m.group("user"), m.group("host"),
                          int(m.group("port")) if m.group("port") else None, m.group("path"))
    m = _HOSTPATH.match(spec)
    if m and not spec.startswith(("/", "./", "../")):
        return RemoteSpec(spec, m.group("user"), m.group("host"), None, m.group("path"))
    return None


@dataclass
class RemoteOptions:
    ssh_options: tuple[str, ...] = ()
    connect_timeout: int = 10
    fetch: bool = False
    cache_dir: str | None = None
    progress: bool = False
    use_cache: bool = True      # --no-cache: fetched copies go to a temporary folder

    def ssh_command(self, spec: RemoteSpec) -> list[str]:
        cmd = shlex.split(os.environ.get("EAGLELOG_SSH", "ssh"))
        cmd += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout}"]
        for opt in self.ssh_options:
            cmd += ["-o", opt]
        if spec.port:
            cmd += ["-p", str(spec.port)]
        return cmd + [spec.target]


@dataclass
class Fetched:
    """One remote file, now readable locally."""

    name: str
    local_path: str
    size: int | None            # remote file size in bytes
    transferred: int            # bytes that crossed the network for it
    seconds: float
    mode: str                   # 'reduce', 'fetch', 'cache'
    filtered_lines: int = 0     # lines the remote filter did not send
    total_lines: int | None = None
    notes: list = field(default_factory=list)
    mtime: float | None = None  # the remote file's modification time (dates of time-only logs)
    blank_filtered: int = 0     # blank lines among those not sent
    first_filtered: int | None = None   # the first non-blank line not sent


def _quote_path(path: str) -> str:
    """Quote a remote path for sh, keeping glob characters live."""
    if any(c in path for c in "*?["):
        if not _SAFE_GLOB.match(path):
            raise InputError(f"{path}: a remote glob may only use letters, digits and "
                             "_ . / - * ? [ ] ~ + = , : @ %")
        return path.replace("~", "$HOME", 1) if path.startswith("~") else path
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def _script(pattern: str, mode: str, zipped: bool = False) -> str:
    """The remote sh script: per file, a header, then the reduced lines (or the raw bytes).

    A compressed file is announced as ZFILE and read by a second call (``zipped``), whose output
    is the reduced lines compressed again (zstd -3 or gzip -3): what was small on disk stays small on
    the wire."""
    # the lines not sent are counted: blank ones, and the first other one (skipped-line report)
    awk = ("awk -v ctx=%d 'BEGIN{a=0;b=0;f=0} /%s/ {print NR \":\" $0; a=0; "
           "if (index($0, \"EAGLE3_PROF\")) a=ctx; next} a>0 {print NR \"-\" $0; a--; next} "
           "{ if ($0 ~ /^[ \\t\\r]*$/) b++; else if (!f) f=NR } "
           "END {printf \"\\036EAGLELOG END %%d %%d %%d\\n\", NR, b, f}'"
           % (BLOCK_CONTEXT, AWK_MARKERS.replace("/", "\\/")))
    body_reduce = f"""
  case "$m" in
    1f8b*) d="gzip -dc";; fd377a58*) d="xz -dc";; 425a68*) d="bzip2 -dc";;
    28b52ffd*) d="zstd -dc";; *) d="cat";;
  esac
  t=${{d%% *}}
  if [ "$d" != cat ] && [ -z "$Z" ] && command -v "$t" >/dev/null 2>&1 && command -v gzip >/dev/null 2>&1; then
    printf '\036EAGLELOG ZFILE %s %s %s\n' "$s" "$t0" "$f"
  elif command -v "$t" >/dev/null 2>&1; then
    printf '\\036EAGLELOG FILE %s %s %s\\n' "$s" "$t0" "$f"
    $d < "$f" | {awk}
  else
    printf '\\036EAGLELOG RAW %s %s %s\\n' "$s" "$t0" "$f"
    cat "$f"
    printf '\\036EAGLELOG RAWEND\\n'
  fi"""
    body = {"reduce": body_reduce,
            "stat": "\n  printf '\\036EAGLELOG STAT %s %s %s\\n' \"$s\" \"$t0\" \"$f\"",
            "cat": "\n  printf '\\036EAGLELOG RAW %s %s %s\\n' \"$s\" \"$t0\" \"$f\"\n"
                   "  cat \"$f\"\n  printf '\\036EAGLELOG RAWEND\\n'"}[mode]
    if zipped:
        return f"""LC_ALL=C; export LC_ALL; f={_quote_path(pattern)}
m=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \\n')
case "$m" in
  1f8b*) d="gzip -dc";; fd377a58*) d="xz -dc";; 425a68*) d="bzip2 -dc";; 28b52ffd*) d="zstd -dc";;
  *) d="cat";;
esac
if command -v zstd >/dev/null 2>&1; then z="zstd -q -3 -c"; else z="gzip -3 -c"; fi
$d < "$f" | {awk} | $z
"""
    return f"""LC_ALL=C; export LC_ALL; Z={'1' if mode != 'reduce' else ''}
for f in {_quote_path(pattern)}; do
  if [ ! -e "$f" ]; then printf '\\036EAGLELOG ERR nofile %s\\n' "$f"; continue; fi
  if [ -d "$f" ]; then printf '\\036EAGLELOG ERR dir %s\\n' "$f"; continue; fi
  if [ ! -r "$f" ]; then printf '\\036EAGLELOG ERR perm %s\\n' "$f"; continue; fi
  s=$(wc -c < "$f" | tr -d ' ')
  t0=$(stat -c %Y "$f" 2>/dev/null || stat -f %m "$f" 2>/dev/null || echo 0)
  m=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \\n'){body}
done
"""


def ssh_error(spec: RemoteSpec, code: int, stderr: str, timeout: int) -> InputError:
    """One line naming the input and the reason, from ssh's exit status and stderr."""
    text = stderr.strip()
    last = text.splitlines()[-1] if text else ""
    low = text.lower()
    if "could not resolve hostname" in low or "name or service not known" in low:
        why = f"cannot resolve host {spec.host!r} (DNS)"
    elif "connection refused" in low:
        why = f"connection refused by {spec.host}{':' + str(spec.port) if spec.port else ''}"
    elif "timed out" in low or "timeout" in low:
        why = f"no answer from {spec.host} within {timeout} s"
    elif "permission denied" in low and ("publickey" in low or "password" in low):
        why = f"authentication failed for {spec.target} (no usable key; BatchMode=yes)"
    elif "host key verification failed" in low:
        why = f"host key verification failed for {spec.host} (check ~/.ssh/known_hosts)"
    elif "no route to host" in low or "network is unreachable" in low:
        why = f"no route to {spec.host}"
    else:
        why = f"ssh failed (exit {code}): {last or 'no message'}"
    return InputError(f"{spec.text}: {why}")


class _Progress:
    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled, self.label, self.t0, self.last = enabled, label, time.monotonic(), 0.0

    def update(self, n: int) -> None:
        now = time.monotonic()
        if self.enabled and now - self.last > 0.5:
            self.last = now
            rate = n / max(now - self.t0, 1e-9) / 1e6
            sys.stderr.write(f"\r{self.label}: {n / 1e6:.1f} MB, {rate:.1f} MB/s ")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\r" + " " * 70 + "\r")
            sys.stderr.flush()


def _run_ssh(spec: RemoteSpec, opts: RemoteOptions, script: str, out, progress: _Progress):
    """Run the script on the host; stream stdout into ``out`` (a file); return stderr text."""
    cmd = opts.ssh_command(spec) + ["sh -c " + shlex.quote(script)]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise InputError(f"{spec.text}: the ssh command {cmd[0]!r} is not installed "
                         "(or set EAGLELOG_SSH)") from None
    err: list[bytes] = []
    t = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    t.start()
    n = 0
    while True:
        block = proc.stdout.read(1 << 20)
        if not block:
            break
        out.write(block)
        n += len(block)
        progress.update(n)
    code = proc.wait()
    t.join()
    progress.done()
    return code, (err[0] if err else b"").decode("utf-8", "replace"), n


def _demux(spec: RemoteSpec, stream_path: str, workdir: str, mode: str) -> list[Fetched]:
    """Split the protocol stream of one ssh call into one local file per remote file."""
    out: list[Fetched] = []
    with open(stream_path, "rb") as f:
        cur = None          # (Fetched, file handle)
        expect = 0          # next original line number
        while True:
            line = f.readline()
            if not line:
                break
            if line.startswith(SEP):
                parts = line[len(SEP):].rstrip(b"\n").split(b" ", 3)
                kind = parts[0].decode()
                if kind == "ERR":
                    what, path = parts[1].decode(), parts[2].decode("utf-8", "replace")
                    why = {"nofile": "no such file", "perm": "permission denied",
                           "dir": "is a directory"}.get(what, what)
                    out.append(Fetched(spec.name(path), "", None, 0, 0.0, "error",
                                       notes=[why]))
                    continue
                if kind == "ZFILE":
                    size, mtime = int(parts[1]), int(parts[2])
                    path = parts[3].decode("utf-8", "replace")
                    item = Fetched(spec.name(path), "", size, 0, 0.0, "zreduce", mtime=mtime)
                    item.notes += [("mtime", mtime), ("path", path)]
                    out.append(item)
                    continue
                if kind in ("FILE", "RAW", "STAT"):
                    size, mtime = int(parts[1]), int(parts[2])
                    path = parts[3].decode("utf-8", "replace") if len(parts) > 3 else ""
                    fd, local = tempfile.mkstemp(dir=workdir, suffix=".log")
                    fh = os.fdopen(fd, "wb")
                    item = Fetched(spec.name(path), local, size, 0, 0.0,
                                   "reduce" if kind == "FILE" else "fetch", mtime=mtime)
                    item.notes.append(("mtime", mtime))
                    item.notes.append(("path", path))
                    cur = (item, fh)
                    out.append(item)
                    expect = 1
                    if kind == "RAW":      # exactly `size` bytes follow, then RAWEND
                        left = size
                        while left > 0:
                            block = f.read(min(left, 1 << 20))
                            if not block:
                                break
                            fh.write(block)
                            left -= len(block)
                            item.transferred += len(block)
                        if left:
                            item.notes.append("the transfer ended early (connection lost?)")
                    if kind in ("STAT", "RAW"):
                        fh.close()
                        cur = None
                    continue
                if kind == "END" and cur:
                    item, fh = cur
                    total = int(parts[1])
                    if total >= expect:
                        fh.write(b"\n" * (total - expect + 1))
                        item.filtered_lines += total - expect + 1
                    item.total_lines = total
                    if len(parts) >= 4:
                        item.blank_filtered = int(parts[2])
                        item.first_filtered = int(parts[3]) or None
                    fh.close()
                    cur = None
                    continue
                if kind == "RAWEND":
                    continue
            if cur is None:
                continue
            item, fh = cur
            item.transferred += len(line)
            got = split_numbered(line)
            if got is None:
                continue
            n, text = got
            if n > expect:
                fh.write(b"\n" * (n - expect))
                item.filtered_lines += n - expect
            fh.write(text)
            expect = n + 1
        if cur:
            cur[1].close()
            cur[0].notes.append("the transfer ended early (connection lost?)")
    return out


def split_numbered(line: bytes) -> tuple[int, bytes] | None:
    """'N:text' (a marker line) or 'N-text' (context after a block header) -> (N, text)."""
    i = 0
    while i < len(line) and 48 <= line[i] <= 57:
        i += 1
    if i == 0 or i >= len(line) or line[i] not in (58, 45):
        return None
    return int(line[:i]), line[i + 1:]


def _cache_dir(opts: RemoteOptions, workdir: str) -> str:
    if not opts.use_cache:
        return workdir
    base = opts.cache_dir or os.environ.get("XDG_CACHE_HOME") or \
        os.path.join(os.path.expanduser("~"), ".cache")
    d = os.path.join(base, "eaglelog", "remote")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise InputError(f"the cache folder {d} cannot be made ({e.strerror or e}); set "
                         "XDG_CACHE_HOME to a folder or use --no-cache") from None
    return d


def fetch_one(spec: RemoteSpec, opts: RemoteOptions, workdir: str) -> list[Fetched]:
    """Read one remote spec (which may be a glob) into local files."""
    t0 = time.monotonic()
    stream = os.path.join(workdir, hashlib.sha1(spec.text.encode()).hexdigest() + ".stream")
    progress = _Progress(opts.progress, spec.text)
    mode = "stat" if opts.fetch else "reduce"
    with open(stream, "wb") as out:
        code, err, n = _run_ssh(spec, opts, _script(spec.path, mode), out, progress)
    if code != 0 and n == 0:
        raise ssh_error(spec, code, err, opts.connect_timeout)
    items = _demux(spec, stream, workdir, mode)
    os.unlink(stream)
    if not items:
        raise InputError(f"{spec.text}: no such file (the remote pattern matched nothing)")
    if opts.fetch:
        items = [_fetch_cached(spec, opts, it, workdir) if it.mode != "error" else it
                 for it in items]
    items = [_reduce_zipped(spec, opts, it, workdir) if it.mode == "zreduce" else it
             for it in items]
    dt = time.monotonic() - t0
    for it in items:
        if not it.seconds:
            it.seconds = dt
    return items


def _fetch_cached(spec: RemoteSpec, opts: RemoteOptions, item: Fetched, workdir: str) -> Fetched:
    mtime = dict(n for n in item.notes if isinstance(n, tuple))["mtime"]
    path = dict(n for n in item.notes if isinstance(n, tuple))["path"]
    key = hashlib.sha256(f"{spec.user}@{spec.host}:{spec.port}:{path}:{item.size}:{mtime}"
                         .encode()).hexdigest()[:32]
    cached = os.path.join(_cache_dir(opts, workdir), key)
    if os.path.exists(cached) and os.path.getsize(cached) == item.size:
        return Fetched(item.name, cached, item.size, 0, 0.0, "cache", mtime=mtime)
    one = RemoteSpec(spec.text, spec.user, spec.host, spec.port, path)
    stream = cached + ".part"
    t0 = time.monotonic()
    with open(stream, "wb") as out:
        code, err, n = _run_ssh(one, opts, _script(path, "cat"), out,
                                _Progress(opts.progress, item.name))
    if code != 0 and n == 0:
        raise ssh_error(spec, code, err, opts.connect_timeout)
    got = _demux(one, stream, workdir, "cat")
    os.unlink(stream)
    if not got or got[0].mode == "error":
        why = got[0].notes[0] if got else "nothing received"
        raise InputError(f"{item.name}: {why}")
    os.replace(got[0].local_path, cached)
    return Fetched(item.name, cached, item.size, got[0].transferred, time.monotonic() - t0,
                   "fetch", mtime=mtime)


def _reduce_zipped(spec: RemoteSpec, opts: RemoteOptions, item: Fetched,
                   workdir: str) -> Fetched:
    """A compressed remote file: decompress and reduce there, compress the result again for the
    wire (zstd -3 when the host has it, else gzip -3)."""
    from .sources import iter_chunks, open_source

    meta = dict(n for n in item.notes if isinstance(n, tuple))
    one = RemoteSpec(spec.text, spec.user, spec.host, spec.port, meta["path"])
    t0 = time.monotonic()
    zpath = os.path.join(workdir, hashlib.sha1(item.name.encode()).hexdigest() + ".gz")
    with open(zpath, "wb") as out:
        code, err, n = _run_ssh(one, opts, _script(meta["path"], "reduce", zipped=True), out,
                                _Progress(opts.progress, item.name))
    if code != 0 and n == 0:
        raise ssh_error(spec, code, err, opts.connect_timeout)
    stream = zpath + ".stream"
    with open(stream, "wb") as dst:
        dst.write(SEP + f"FILE {item.size} {meta['mtime']} {meta['path']}\n".encode())
        try:
            with open_source(zpath) as src:
                for block in iter_chunks(src):
                    dst.write(block)
        except InputError as e:
            raise InputError(f"{item.name}: the reduced stream arrived damaged "
                             f"({str(e).split(': ', 1)[-1]})") from None
    os.unlink(zpath)
    got = _demux(one, stream, workdir, "reduce")
    os.unlink(stream)
    got[0].transferred = n
    got[0].seconds = time.monotonic() - t0
    got[0].mtime = meta["mtime"]
    return got[0]


def fetch_all(specs: list[RemoteSpec], opts: RemoteOptions, workdir: str):
    """Fetch every remote spec, at most MAX_PARALLEL at once.  Returns, in order, a list per
    spec of Fetched items or the InputError that spec raised."""
    def one(spec):
        try:
            return fetch_one(spec, opts, workdir)
        except InputError as e:
            return e
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL, len(specs)))) as pool:
        return list(pool.map(one, specs))
