"""Logs on other machines: ``[user@]host:/path`` and ``ssh://[user@]host[:port]/path``.

Access goes through the system OpenSSH client, so ~/.ssh/config, agents, jump hosts and
ControlMaster work as users expect.  ``EAGLELOG_SSH`` replaces the ssh command (like
``GIT_SSH_COMMAND``); ``--ssh-option OPT`` adds ``-o OPT``.  Every connection has
``BatchMode=yes`` (never a password prompt), a connect timeout, keep-alives
(``ServerAliveInterval`` = the connect timeout, 3 missed answers end it) and ``--`` before the
destination; a host or user that starts with ``-`` is refused before ssh runs.

Two ways to read a remote log, each **one ssh connection and one remote script per spec**,
however many files a remote glob matches:

* **reduce** (default): a POSIX sh + awk script runs on the remote host.  It expands the path
  (globs expand remotely), decompresses .gz/.xz/.bz2/.zst there when the tool is installed, and
  sends only the lines that carry a marker of a known family (plus the lines after an
  EAGLE3_PROF header, for the block), each with its original line number, and the file's total
  line count.  The whole stream is compressed for the wire (zstd -3, else gzip -3, when the host
  has one).  Locally the lines are put back at their numbers (the dropped lines become empty
  lines), so records carry the same line numbers as a local parse.  A decompressor that fails
  on the host (a cut or damaged file) fails that input with the documented one-line error.
* **fetch** (``--fetch``): the script lists the files (size, modification time); the files not
  already in the cache (keyed by host, path, size and mtime) are then copied whole over the same
  connection.

The protocol: every control line starts with ``\\x1eEAGLELOG `` and names a file last, as
``=name`` (plain) or ``x<hex>`` (any other byte, a newline or a space included), so no file name
can forge a control line.  Only regular files are opened (a FIFO, socket or device is reported
as not a regular file).  A watchdog bounds the steps: the script must say HELLO within
``handshake_timeout`` (3 x the connect timeout: TCP connect, SSH handshake, login), after which
ssh's keep-alives end a connection whose peer stopped answering.
"""
from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from ..errors import EaglelogError, InputError

MAX_PARALLEL = 8
SEP = b"\x1eEAGLELOG "
AWK_MARKERS = (r'EAGLE3_PROF|Decode batch|Prefil|server_args=|Finish: obj=|"request\.finished"'
               r'|#running-req: |new fill batch\. '
               # vLLM (eaglelog/parsers/vllm.py)
               r'|SpecDecoding metrics: |Speculative metrics: |SpecDecodeWorker stage times: '
               r'|Avg prompt throughput: |Prefix cache hit rate: GPU: |iteration elapsed time: ')
BLOCK_CONTEXT = 40   # lines kept after an EAGLE3_PROF header (interleaved ranks need more)
HANDSHAKE_FACTOR = 3  # connect + key exchange + login, each allowed --connect-timeout seconds
_SAFE_GLOB = re.compile(r"^[A-Za-z0-9_./*?\[\]~+=,:@%-]+$")
_HOSTPATH = re.compile(r"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@/:\s\[\]]+)"
                       r":(?P<path>.+)$", re.S)
_URL = re.compile(r"^ssh://(?:(?P<user>[^@/:\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@/:\s\[\]]+)"
                  r"(?::(?P<port>\d{1,5}))?(?P<path>/.*)$", re.S)
_SSH_OPTION = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:=|[ \t]+)[^\n\r\x00]*$")
_NUMBERED = re.compile(rb"(\d+)[:-]")


class RemoteSpecError(EaglelogError):
    """A remote spec or ssh option that cannot be used as given (a usage error: exit code 2)."""

    exit_code = 2


def is_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def printable(text: str) -> str:
    """A file name as one line: control characters (a newline…) written as escapes."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


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
            return printable(self.text)
        if self.text.startswith("ssh://"):
            port = f":{self.port}" if self.port else ""
            user = f"{self.user}@" if self.user else ""
            return printable(f"ssh://{user}{self.host}{port}{path}")
        user = f"{self.user}@" if self.user else ""
        return printable(f"{user}{self.host}:{path}")


def _check_names(spec: str, user: str | None, host: str) -> None:
    """Refuse what ssh would read as an option, or what is no name at all."""
    for what, value in (("user", user), ("host", host)):
        if value is None:
            continue
        if value.startswith("-"):
            raise RemoteSpecError(f"{printable(spec)}: a remote {what} cannot start with '-' "
                                  "(ssh would read it as an option)")
        if not value.isprintable():
            raise RemoteSpecError(f"{printable(spec)}: the remote {what} holds a control "
                                  "character")


def parse_remote(spec: str) -> RemoteSpec | None:
    """A remote spec, or None for a local path (rsync-style: a local path of that name wins).

    Raises RemoteSpecError for a spec that cannot be used (a malformed ``ssh://`` URL, a host or
    user starting with ``-``)."""
    if spec == "-" or os.path.exists(spec):
        return None
    if spec.startswith("ssh://"):
        m = _URL.match(spec)
        if not m:
            raise RemoteSpecError(f"{printable(spec)}: not a valid ssh:// URL; expected "
                                  "ssh://[user@]host[:port]/path")
        port = int(m.group("port")) if m.group("port") else None
        if port is not None and not 1 <= port <= 65535:
            raise RemoteSpecError(f"{printable(spec)}: port {port} is out of range (1-65535)")
        _check_names(spec, m.group("user"), m.group("host"))
        return RemoteSpec(spec, m.group("user"), m.group("host"), port, m.group("path"))
    m = _HOSTPATH.match(spec)
    if m and not spec.startswith(("/", "./", "../")):
        _check_names(spec, m.group("user"), m.group("host"))
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

    def __post_init__(self) -> None:
        for opt in self.ssh_options:
            if not _SSH_OPTION.match(opt):
                raise RemoteSpecError(f"--ssh-option {printable(opt)!r}: expected OPTION=VALUE "
                                      "(an ssh_config keyword), e.g. ProxyJump=bastion")

    @property
    def handshake_timeout(self) -> int:
        """Seconds from starting ssh until the remote script must have answered."""
        return HANDSHAKE_FACTOR * self.connect_timeout

    def ssh_command(self, spec: RemoteSpec) -> list[str]:
        cmd = shlex.split(os.environ.get("EAGLELOG_SSH", "ssh"))
        # ssh keeps the first value of an option: BatchMode and the timeout cannot be undone,
        # the keep-alives can (after the user's options)
        cmd += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout}"]
        for opt in self.ssh_options:
            cmd += ["-o", opt]
        cmd += ["-o", f"ServerAliveInterval={self.connect_timeout}",
                "-o", "ServerAliveCountMax=3"]
        if spec.port:
            cmd += ["-p", str(spec.port)]
        return cmd + ["--", spec.target]


@dataclass
class Fetched:
    """One remote file, now readable locally."""

    name: str
    local_path: str
    size: int | None            # remote file size in bytes
    transferred: int            # bytes that crossed the network for it
    seconds: float
    mode: str                   # 'reduce', 'fetch', 'cache', 'error'
    filtered_lines: int = 0     # lines the remote filter did not send
    total_lines: int | None = None
    notes: list = field(default_factory=list)   # strings: warnings ('error': its reason first)
    mtime: float | None = None  # the remote file's modification time (dates of time-only logs)
    blank_filtered: int = 0     # blank lines among those not sent
    first_filtered: int | None = None   # the first non-blank line not sent
    path: str = ""              # the remote path
    unterminated: bool = False  # its last line has no newline
    # 'error' after the host's decompressor failed mid-file (reduce): the local copy of the
    # lines received before the failure, put back at their numbers, as a local read of the
    # same damaged file has them (what --keep-going keeps); "" otherwise
    partial: str = ""
    failed_line: int | None = None   # with partial: the line the host's tool stopped in


def _quote_path(path: str) -> str:
    """Quote a remote path for sh, keeping glob characters live."""
    if is_glob(path):
        if not _SAFE_GLOB.match(path):
            raise RemoteSpecError(f"{printable(path)}: a remote glob may only use letters, "
                                  "digits and _ . / - * ? [ ] ~ + = , : @ %")
        return path.replace("~", "$HOME", 1) if path.startswith("~") else path
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def awk_program(live: bool = False, eof: str = "") -> str:
    """The awk filter: marker lines as 'N:text', the lines after a block header as 'N-text'.

    With ``live`` (--follow) every line is flushed and nothing is counted.  Otherwise the input
    ends with a newline and the line ``\\036EAGLELOG EOF <eof>`` (written after the file or the
    decompressor's output): each line is handled when the next one is read, so that the empty
    line that newline adds is not taken for a line of the file, and the END line says whether
    the file's last line had a newline (its 4th field: 1 when it had none)."""
    markers = AWK_MARKERS.replace("/", "\\/")
    if live:
        return ("$A -v ctx=%d 'BEGIN{a=0} /%s/ {print NR \":\" $0; fflush(); a=0; "
                "if (index($0, \"EAGLE3_PROF\")) a=ctx; next} a>0 {print NR \"-\" $0; "
                "fflush(); a--}'" % (BLOCK_CONTEXT, markers))
    # the lines not sent are counted: blank ones, and the first other one (skipped-line report)
    return ("awk -v ctx=%d -v eof='\\036EAGLELOG EOF %s' '"
            "function out(s, i) { if (s ~ /%s/) { print i \":\" s; a = 0; "
            "if (index(s, \"EAGLE3_PROF\")) a = ctx; return } "
            "if (a > 0) { print i \"-\" s; a--; return } "
            "if (s ~ /^[ \\t\\r]*$/) b++; else if (!f) f = i } "
            "BEGIN {a = 0; b = 0; f = 0; t = 0; u = 0; e = 0} "
            "$0 == eof { if (p != \"\") { out(p, NR - 1); t = NR - 1; u = 1 } else t = NR - 2; "
            "e = 1; exit } "
            "NR > 1 { out(p, NR - 1) } { p = $0 } "
            "END { if (!e) { if (NR) out(p, NR); t = NR; u = 2 } "
            "printf \"\\036EAGLELOG END %%d %%d %%d %%d\\n\", t, b, f, u }'"
            % (BLOCK_CONTEXT, eof, markers))


# shell functions shared by both modes.  `check` sets g (the path, safe as an argument) and
# prints ERR for what is missing, a directory, not a regular file (never opened: a FIFO would
# block) or unreadable; `info` sets s (size), t0 (mtime) and m (first 4 bytes, hex); `name`
# sets n to the encoded name.
_PRELUDE = r"""LC_ALL=C; export LC_ALL
have() { command -v "$1" >/dev/null 2>&1; }
hex() { printf %s "$1" | head -c 4000 | od -An -tx1 | tr -d ' \n'; }
name() { case $1 in ''|*[!A-Za-z0-9._/+,:@%=~-]*) n=x$(hex "$1");; *) n="=$1";; esac; }
err() { name "$2"; printf '\036EAGLELOG ERR %s %s\n' "$1" "$n"; return 1; }
check() {
  g=$1; case $g in -*) g=./$g;; esac
  if [ ! -e "$g" ]; then err nofile "$1"; return; fi
  if [ -d "$g" ]; then err dir "$1"; return; fi
  if [ ! -f "$g" ]; then err notregular "$1"; return; fi
  if [ ! -r "$g" ]; then err perm "$1"; return; fi
}
info() {
  set -- $({ stat -c '%s %Y' "$g" || stat -f '%z %m' "$g" || echo "$(wc -c < "$g") 0"; } 2>/dev/null; od -An -tx1 -N4 "$g" 2>/dev/null)
  s=$1 t0=$2 m=$3$4$5$6
}
raw() {
  { head -c "$s" "$g"; head -c "$s" /dev/zero; } 2>/dev/null | head -c "$s"
  printf '\036EAGLELOG RAWEND %s\n' "$(wc -c < "$g" | tr -d ' ')"
}
"""  # noqa: E501 - a shell script: its lines stay whole


def _script(pattern: str, mode: str) -> str:
    """The remote sh script of one spec (``mode`` 'reduce' or 'fetch')."""
    pat = _quote_path(pattern)
    if mode == "fetch":
        return _PRELUDE + f"""main() {{
  set --
  for f in {pat}; do
    if check "$f"; then info; name "$f"; printf '\\036EAGLELOG STAT %s %s %s\\n' "$s" "$t0" "$n"; set -- "$@" "$f"; fi
  done
  printf '\\036EAGLELOG LISTED %s\\n' "$#"
  read -r w || w=
  for i in $w; do
    case $i in ''|*[!0-9]*) continue;; esac
    eval "f=\\${{$i}}"
    if check "$f"; then info; name "$f"; printf '\\036EAGLELOG RAW %s %s %s\\n' "$s" "$t0" "$n"; raw; fi
  done
  printf '\\036EAGLELOG DONE\\n'
}}
printf '\\036EAGLELOG HELLO 2 none\\n'
main
"""  # noqa: E501 - a shell script: its lines stay whole
    import secrets
    eof = secrets.token_hex(8)
    awk = awk_program(eof=eof)
    # the file (cat) or the decompressor's output, then the EOF line, goes to awk; the tool's
    # exit status and stderr come back through fd 3 (awk writes to the stream, fd 4): "$r" is
    # its messages, then "@<status>"
    return _PRELUDE + f"""red() {{
  check "$1" || return 0
  info; name "$1"
  case $m in
    1f8b*) d="gzip -dc";; fd377a58*) d="xz -dc";; 425a68*) d="bzip2 -dc";;
    28b52ffd*) d="zstd -dc";; *) d=cat;;
  esac
  if have "${{d%% *}}"; then
    printf '\\036EAGLELOG FILE %s %s %s\\n' "$s" "$t0" "$n"
    if r=$( {{ {{ $d < "$g" 2>&3; echo "@$?" >&3; printf '\\n\\036EAGLELOG EOF {eof}\\n'; }} | {awk} >&4; }} 3>&1 ); then
      rc=${{r##*@}}
      if [ "$rc" != 0 ]; then printf '\\036EAGLELOG STATUS %s x%s\\n' "$rc" "$(hex "$d: ${{r%@*}}")"; fi
    else
      rc=$?; printf '\\036EAGLELOG STATUS %s x%s\\n' "$rc" "$(hex "awk: exit $rc")"
    fi
  else
    printf '\\036EAGLELOG RAW %s %s %s\\n' "$s" "$t0" "$n"
    raw
  fi
}}
main() {{
  exec 4>&1
  for f in {pat}; do red "$f"; done
  printf '\\036EAGLELOG DONE\\n'
}}
if have zstd; then c=zstd; elif have gzip; then c=gzip; else c=none; fi
printf '\\036EAGLELOG HELLO 2 %s\\n' "$c"
case $c in zstd) main | zstd -q -3 -c;; gzip) main | gzip -3 -c;; *) main;; esac
"""  # noqa: E501 - a shell script: its lines stay whole


# --------------------------------------------------------------------------- errors

def _last(pattern: str, lines: list[str]):
    rx = re.compile(pattern)
    for line in reversed(lines):
        m = rx.search(line)
        if m:
            return m
    return None


def ssh_error(spec: RemoteSpec, code: int, stderr: str, timeout: int) -> EaglelogError:
    """One line naming the input and the reason, from ssh's exit status and stderr.  Only the
    messages OpenSSH itself prints are matched, whole (the remote side's stderr is mixed in)."""
    lines = [x.strip() for x in stderr.splitlines() if x.strip()]
    port = f":{spec.port}" if spec.port else ""
    m = _last(r"^(?:command-line|ssh):? line \d+: (.+)$", lines)
    if m and code == 255:
        return RemoteSpecError(f"{spec.name(spec.path)}: ssh rejected an option: "
                               f"{m.group(1).rstrip('.')} (check --ssh-option and EAGLELOG_SSH)")
    m = _last(r"^(\S+): line \d+: (Bad configuration option.*|.*\bunsupported.*)$", lines)
    if m and code == 255:
        why = f"ssh configuration error: {m.group(1)}: {m.group(2)}"
    elif _last(r"^ssh: Could not resolve hostname ", lines):
        why = f"cannot resolve host {spec.host!r} (DNS)"
    elif _last(r"^ssh: connect to host \S+ port \d+: Connection refused$", lines):
        why = f"connection refused by {spec.host}{port}"
    elif _last(r"^ssh: connect to host \S+ port \d+: (?:Connection|Operation) timed out$",
               lines) or _last(r"Connection timed out during banner exchange$", lines) or \
            _last(r"^banner exchange: Connection to \S+ port \d+: (?:Connection|Operation) "
                  r"timed out$", lines):
        why = f"no answer from {spec.host} within {timeout} s"
    elif _last(r"^ssh: connect to host \S+ port \d+: (?:No route to host|Network is "
               r"unreachable)$", lines):
        why = f"no route to {spec.host}"
    elif _last(r": Permission denied \([^)]*\)\.?$", lines):
        why = f"authentication failed for {spec.target} (no usable key; BatchMode=yes)"
    elif _last(r"^Host key verification failed\.?$", lines):
        why = f"host key verification failed for {spec.host} (check ~/.ssh/known_hosts)"
    elif _last(r"^Timeout, server \S+ not responding\.?$", lines):
        why = f"{spec.host} stopped answering (no reply to 3 keep-alives in {3 * timeout} s)"
    elif _last(r"^(?:kex_exchange_identification: )?Connection closed by |"
               r"^Connection reset by |^kex_exchange_identification: read: ", lines):
        why = f"{spec.host}{port} closed the connection during the ssh handshake"
    elif code == 255:
        why = f"ssh failed (exit 255): {lines[-1] if lines else 'no message'}"
    else:
        why = (f"the remote shell could not run eaglelog's script (exit {code}): "
               f"{lines[-1] if lines else 'no message'}")
    return InputError(f"{spec.name(spec.path)}: {why}")


# --------------------------------------------------------------------------- progress

class _Progress:
    """Bytes, files and rate of one connection on stderr, on a terminal only (RemoteOptions
    .progress), at most twice a second."""

    def __init__(self, enabled: bool, label: str) -> None:
        self.enabled, self.label, self.t0, self.last = enabled, printable(label), \
            time.monotonic(), 0.0

    def update(self, n: int, files: int = 0, of: int | None = None) -> None:
        now = time.monotonic()
        if self.enabled and now - self.last > 0.5:
            self.last = now
            rate = n / max(now - self.t0, 1e-9) / 1e6
            count = f"{files}/{of} files, " if of else (f"{files} files, " if files > 1 else "")
            sys.stderr.write(f"\r{self.label}: {count}{n / 1e6:.1f} MB, {rate:.1f} MB/s ")
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\r" + " " * min(200, len(self.label) + 60) + "\r")
            sys.stderr.flush()


# --------------------------------------------------------------------------- the stream

def _name_of(token: bytes) -> str:
    if token.startswith(b"="):
        return token[1:].decode("utf-8", "replace")
    try:
        return bytes.fromhex(token[1:].decode("ascii")).decode("utf-8", "replace")
    except ValueError:
        return token.decode("utf-8", "replace")


def _int(token: bytes, default: int | None = 0) -> int | None:
    try:
        return int(token)
    except ValueError:
        return default


def _decompression_failure(item: Fetched, rc: int, msg: str) -> None:
    """The host's decompressor (or cat, or awk) failed: the input fails like a local read of the
    same file, with the tool's own message."""
    tool, _, text = msg.partition(": ")
    name = tool.split()[0] if tool else ""
    text = " ".join(text.split())
    text = re.sub(r"^(?:\S+: )?(?:\(?stdin\)?: |/\*stdin\*\\?: )?", "", text)[:200] or f"exit {rc}"
    if name not in ("gzip", "xz", "bzip2", "zstd"):
        _fail(item, f"cannot read the file on the host ({tool}: {text})" if name == "cat" else
              f"the host's awk failed reading the file ({text})")
        return
    # the line the tool stopped in: after the last whole line, or the cut one
    line = (item.total_lines or 0) + (0 if item.unterminated else 1)
    low = text.lower()
    if name == "gzip" and rc == 2:          # gzip's warnings (trailing zeros, garbage)
        if "trailing zero" not in low:
            item.notes.append(f"{tool} on the host warned: {text}")
        return
    if any(w in low for w in ("unexpected end", "premature end", "ends unexpectedly",
                              "unexpected eof", "truncated", "end of input")):
        why = (f"{name} data ends early at line {line} (the host's {tool}: {text}): the file "
               "is truncated")
    else:
        why = f"corrupt {name} data at line {line} (the host's {tool}: {text})"
    keep = item.local_path if item.local_path and os.path.exists(item.local_path) else ""
    item.local_path = ""          # _fail must not remove the lines read before the failure
    _fail(item, why)
    item.partial, item.failed_line = keep, line


def _fail(item: Fetched, why: str) -> None:
    if item.local_path and os.path.exists(item.local_path):
        os.unlink(item.local_path)
    item.mode, item.local_path = "error", ""
    item.notes.insert(0, why)


class _Stream:
    """The protocol of one connection, parsed as it arrives; writes one local file per remote
    file (reduce: the lines put back at their numbers; fetch: the bytes, into the cache)."""

    def __init__(self, spec: RemoteSpec, opts: RemoteOptions, workdir: str, mode: str) -> None:
        self.spec, self.opts, self.workdir, self.mode = spec, opts, workdir, mode
        self.items: list[Fetched] = []
        self.hello = False
        self.done = False
        self.decomp = None
        self.wire = 0                # bytes received
        self.plain = 0               # protocol bytes after decompression
        self.buf = b""
        self.cur = None              # (item, file, next line number): a FILE section
        self.raw = None              # [item, file, bytes left, partial path]: a RAW section
        self.last = None             # the item a STATUS line refers to
        self.pending: list[Fetched] = []    # fetch: the items asked for, in order
        self.send = None             # fetch: writes the wanted list to the script's stdin
        self.listed = False          # fetch: the listing is complete, the copies follow
        self.stderr, self.code = "", 0
        self.progress = _Progress(opts.progress, spec.text)
        self.on_ready = None         # called with each item once it is whole (reduce mode)
        self._published = 0          # items handed to on_ready so far

    # -- bytes from ssh
    def feed_wire(self, data: bytes) -> None:
        self.wire += len(data)
        if not self.hello:
            # what a login shell prints before the script is skipped: HELLO starts a line
            buf = self.buf + data
            at = buf.find(SEP + b"HELLO ")
            while at > 0 and buf[at - 1:at] != b"\n":
                at = buf.find(SEP + b"HELLO ", at + 1)
            nl = buf.find(b"\n", at) if at >= 0 else -1
            if nl < 0:
                self.buf = buf[-4096:] if at < 0 else buf
                return
            words = buf[at + len(SEP):nl].split()
            comp = words[2] if len(words) > 2 else b"none"
            if comp == b"zstd":
                import zstandard
                self.decomp = zstandard.ZstdDecompressor().decompressobj()
            elif comp == b"gzip":
                import zlib
                self.decomp = zlib.decompressobj(wbits=31)
            self.hello = True
            data, self.buf = buf[nl + 1:], b""
            if not data:
                return
        if self.decomp is not None:
            data = self.decomp.decompress(data)
        self.plain += len(data)
        self._feed(data)
        self.progress.update(self.wire, len(self.items))

    def _feed(self, data: bytes) -> None:
        buf = self.buf + data if self.buf else data
        pos, n = 0, len(buf)
        while pos < n:
            if self.raw is not None and self.raw[2] > 0:
                item, fh, left, _ = self.raw
                take = min(left, n - pos)
                fh.write(buf[pos:pos + take])
                item.transferred += take
                self.raw[2] = left - take
                pos += take
                if self.raw[2]:
                    break
                continue
            if buf.startswith(SEP, pos):
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                self._control(buf[pos + len(SEP):nl])
                pos = nl + 1
                continue
            end = buf.find(b"\n" + SEP, pos)
            if end < 0:
                end = buf.rfind(b"\n", pos)
                if end < 0:
                    break
            self._lines(buf[pos:end + 1])
            pos = end + 1
        self.buf = buf[pos:]

    def _lines(self, block: bytes) -> None:
        """Numbered lines ('N:text', 'N-text') of the current FILE section."""
        if self.cur is None:
            return
        item, fh, expect = self.cur
        item.transferred += len(block)
        out = []
        match = _NUMBERED.match
        for line in block.split(b"\n")[:-1]:
            m = match(line)
            if m is None:
                continue
            k = int(m.group(1))
            if k > expect:
                out.append(b"\n" * (k - expect))
                item.filtered_lines += k - expect
            out.append(line[m.end():])
            out.append(b"\n")
            expect = k + 1
        fh.write(b"".join(out))
        self.cur = (item, fh, expect)

    # -- control lines
    def _new(self, path: str, size, mtime, mode: str) -> Fetched:
        item = Fetched(self.spec.name(path), "", size, 0, 0.0, mode, mtime=mtime, path=path)
        return item

    def _control(self, line: bytes) -> None:
        words = line.split(b" ")
        kind = words[0]
        if kind == b"FILE" and len(words) >= 4:
            self._close_file("the transfer ended early (connection lost?)")
            self._publish()
            item = self._new(_name_of(words[3]), _int(words[1]), _int(words[2]), "reduce")
            fd, item.local_path = tempfile.mkstemp(dir=self.workdir, suffix=".log")
            self.cur = (item, os.fdopen(fd, "wb"), 1)
            self.items.append(item)
            self.last = item
        elif kind == b"END" and self.cur is not None:
            item, fh, expect = self.cur
            total = _int(words[1]) if len(words) > 1 else expect - 1
            if total >= expect:
                fh.write(b"\n" * (total - expect + 1))
                item.filtered_lines += total - expect + 1
            item.total_lines = total
            if len(words) >= 4:
                item.blank_filtered = _int(words[2])
                item.first_filtered = _int(words[3]) or None
            item.unterminated = len(words) >= 5 and words[4] == b"1"
            if item.unterminated and expect == total + 1 and total:
                # the last line had no newline and was sent: the local copy ends as the file
                fh.seek(-1, os.SEEK_END)
                fh.truncate()
            fh.close()
            self.cur = None
        elif kind == b"STATUS" and len(words) >= 3:
            rc = _int(words[1], 1)
            msg = _name_of(words[2])
            if self.cur is not None:         # awk died before its END line
                self.cur[1].close()
                self.cur = None
            if self.last is not None and self.last.mode == "reduce":
                _decompression_failure(self.last, rc, msg)
        elif kind == b"RAW" and len(words) >= 4:
            self._close_file("the transfer ended early (connection lost?)")
            path, size, mtime = _name_of(words[3]), _int(words[1]), _int(words[2])
            if self.listed:
                item = self.pending.pop(0) if self.pending else self._new(path, size, mtime,
                                                                          "fetch")
                item.size, item.mtime, item.path, item.mode = size, mtime, path, "fetch"
                folder = _cache_dir(self.opts, self.workdir)
                fd, part = tempfile.mkstemp(dir=folder, suffix=".part")
                item.local_path = os.path.join(folder, _cache_key(self.spec, path, size, mtime))
            else:
                item = self._new(path, size, mtime, "fetch")
                fd, part = tempfile.mkstemp(dir=self.workdir, suffix=".log")
                item.local_path = part
                self.items.append(item)
            item.transferred = 0
            self.raw = [item, os.fdopen(fd, "wb"), size or 0, part]   # RAWEND follows
        elif kind == b"RAWEND":
            self._raw_end(_int(words[1], None) if len(words) > 1 else None)
        elif kind == b"ERR" and len(words) >= 3:
            what = words[1].decode("ascii", "replace")
            why = {"nofile": "no such file", "perm": "permission denied",
                   "dir": "is a directory",
                   "notregular": "not a regular file (a FIFO, socket or device: not read)"
                   }.get(what, what)
            path = _name_of(words[2])
            if self.listed:
                item = self.pending.pop(0)        # gone between the listing and the copy
                _fail(item, why)
            else:
                item = self._new(path, None, None, "error")
                item.notes.append(why)
                self.items.append(item)
        elif kind == b"STAT" and len(words) >= 4:
            path, size, mtime = _name_of(words[3]), _int(words[1]), _int(words[2])
            item = self._new(path, size, mtime, "stat")
            self.items.append(item)
        elif kind == b"LISTED":
            self._ask()
        elif kind == b"DONE":
            self._close_file("the transfer ended early (connection lost?)")
            self.done = True

    def _publish(self) -> None:
        """Hand the items before a new FILE section to on_ready: the previous file is closed
        and its STATUS line (a decompressor that failed) came before this one, so nothing
        that follows changes what it holds (only the transfer's figures, at the end)."""
        if self.on_ready is not None and self.mode == "reduce":
            for item in self.items[self._published:]:
                self.on_ready(item)
        self._published = len(self.items)

    def _raw_end(self, now: int | None) -> None:
        if self.raw is None:
            return
        item, fh, left, part = self.raw
        fh.close()
        self.raw = None
        if now is not None and item.size is not None and now < item.size:
            os.unlink(part)
            item.local_path = ""
            _fail(item, f"the file shrank from {item.size:,} to {now:,} bytes while it was "
                        "copied (rotated or truncated?): run again")
            return
        if part != item.local_path:
            os.replace(part, item.local_path)

    def _ask(self) -> None:
        """fetch: the listing is complete; ask for the files the cache does not hold (by their
        place in the script's list: the listed files, errors left out)."""
        self.listed = True
        listed = [it for it in self.items if it.mode == "stat"]
        wanted = []
        for i, item in enumerate(listed, 1):
            cached = os.path.join(_cache_dir(self.opts, self.workdir),
                                  _cache_key(self.spec, item.path, item.size, item.mtime))
            if self.opts.use_cache and os.path.exists(cached) and \
                    os.path.getsize(cached) == item.size:
                item.mode, item.local_path = "cache", cached
            else:
                wanted.append((i, item))
        self.pending = [item for _, item in wanted]
        if self.send is not None:
            self.send((" ".join(str(i) for i, _ in wanted) + "\n").encode())

    def _close_file(self, why: str) -> None:
        if self.cur is not None:
            item, fh, _ = self.cur
            fh.close()
            self.cur = None
            _fail(item, why)

    # -- the end
    def finish(self, lost: str) -> list[Fetched]:
        """The items; what did not arrive whole fails with ``lost`` (why the stream ended)."""
        self.progress.done()
        if self.raw is not None:
            item, fh, _, part = self.raw
            fh.close()
            os.unlink(part)
            self.raw = None
            _fail(item, lost)
        self._close_file(lost)
        for item in self.pending:
            _fail(item, lost)
        self.pending = []
        for item in self.items:
            if item.mode == "stat":        # listed, never sent
                _fail(item, lost)
        if self.decomp is not None and self.plain:
            # the stream was compressed as a whole: each file's share of the bytes received
            ratio = self.wire / self.plain
            for item in self.items:
                if item.mode != "error":
                    item.transferred = max(1, round(item.transferred * ratio))
        return self.items


class _Stderr:
    """The last 64 KiB of a process's stderr, read by a daemon thread."""

    def __init__(self, stream) -> None:
        self.data = b""
        self.t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.t.start()

    def _read(self, stream) -> None:
        try:
            while True:
                block = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
                if not block:
                    return
                self.data = (self.data + block)[-65536:]
        except (OSError, ValueError):
            return

    def text(self, wait: float = 2.0) -> str:
        # a ControlPersist master forked by ssh keeps stderr open: never wait for its EOF long
        self.t.join(timeout=wait)
        return self.data.decode("utf-8", "replace")


def _session(spec: RemoteSpec, opts: RemoteOptions, stream: _Stream, script: str) -> int:
    """Run one script over one ssh connection, feeding its output to ``stream``.  Raises the
    one-line error when the connection never got to the script."""
    import subprocess          # (here: a local log's command never loads it, nor hashlib,
    # secrets and concurrent.futures: ~12 ms of every command's start)
    cmd = opts.ssh_command(spec) + ["sh -c " + shlex.quote(script)]
    interactive = stream.mode == "fetch"
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if interactive else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise InputError(f"{spec.name(spec.path)}: the ssh command {cmd[0]!r} is not installed "
                         "(or set EAGLELOG_SSH)") from None
    err = _Stderr(proc.stderr)
    answered = threading.Event()
    late = {"killed": False}

    def watchdog() -> None:
        if not answered.wait(opts.handshake_timeout) and proc.poll() is None:
            late["killed"] = True
            proc.kill()
    threading.Thread(target=watchdog, daemon=True).start()
    if interactive:
        def send(data: bytes) -> None:
            try:
                proc.stdin.write(data)
                proc.stdin.close()
            except OSError:
                pass
        stream.send = send
    fd = proc.stdout.fileno()
    try:
        while True:
            block = os.read(fd, 1 << 20)
            if not block:
                break
            stream.feed_wire(block)
            if stream.hello:
                answered.set()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        answered.set()
        proc.stdout.close()
        if interactive and not proc.stdin.closed:
            try:
                proc.stdin.close()
            except OSError:
                pass
    try:
        code = proc.wait(timeout=10)       # stdout closed: ssh is exiting
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    text = err.text()
    if late["killed"]:
        raise InputError(f"{spec.name(spec.path)}: no answer from {spec.host} within "
                         f"{opts.handshake_timeout} s (connected, but the ssh handshake or "
                         f"login did not finish; --connect-timeout {opts.connect_timeout})")
    if not stream.hello:
        raise ssh_error(spec, code, text, opts.connect_timeout)
    stream.stderr, stream.code = text, code
    return code


def _lost(spec: RemoteSpec, code: int, stderr: str, timeout: int) -> str:
    """Why a stream that had started ended before its DONE line."""
    if code == 255:
        why = str(ssh_error(spec, code, stderr, timeout)).split(": ", 1)[-1]
    else:
        lines = [x.strip() for x in stderr.splitlines() if x.strip()]
        why = f"the remote script stopped (exit {code})" + (f": {lines[-1]}" if lines else "")
    return f"the connection ended during the transfer ({why})"


def _cache_key(spec: RemoteSpec, path: str, size, mtime) -> str:
    import hashlib
    return hashlib.sha256(f"{spec.user}@{spec.host}:{spec.port}:{path}:{size}:{mtime}"
                          .encode()).hexdigest()[:32]


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


def fetch_one(spec: RemoteSpec, opts: RemoteOptions, workdir: str,
              on_ready=None) -> list[Fetched]:
    """Read one remote spec (which may be a glob) into local files, over one connection.
    ``on_ready(item)``: called (from this thread) with each file as soon as it is whole
    (reduce mode; the returned list still holds every item, and only its transfer figures,
    ``transferred`` and ``seconds``, change after the call)."""
    t0 = time.monotonic()
    mode = "fetch" if opts.fetch else "reduce"
    script = _script(spec.path, mode)
    if opts.fetch:
        _cache_dir(opts, workdir)          # a cache folder that cannot be made: say so first
    stream = _Stream(spec, opts, workdir, mode)
    stream.on_ready = on_ready
    code = _session(spec, opts, stream, script)
    items = stream.finish(_lost(spec, code, stream.stderr, opts.connect_timeout)
                          if not stream.done else "the transfer ended early")
    if not items:
        if not stream.done:
            raise InputError(f"{spec.name(spec.path)}: "
                             f"{_lost(spec, code, stream.stderr, opts.connect_timeout)}")
        raise InputError(f"{spec.name(spec.path)}: no such file (the remote pattern matched "
                         "nothing)")
    dt = time.monotonic() - t0
    for it in items:
        it.seconds = dt
        if it.mode == "cache":
            it.transferred = 0
    return items


class Arrivals:
    """One remote spec's files as they arrive (fetch_progressive): iterate for each Fetched
    that is whole, in order, then ``result`` holds the spec's list of items (every one of
    them, the transfer figures final) or the EaglelogError it raised."""

    def __init__(self) -> None:
        import queue
        self.q = queue.Queue()
        self.result = None

    def __iter__(self):
        if self.result is not None:            # read before: every item again
            yield from ([] if isinstance(self.result, EaglelogError) else self.result)
            return
        n = 0
        while True:
            kind, value = self.q.get()
            if kind == "item":
                n += 1
                yield value
            elif kind == "raise":
                raise value
            else:
                self.result = value
                if not isinstance(value, EaglelogError):
                    # the items handed over as they came are the first n, in order; the rest
                    # (the last file, fetched copies, errors after the last file) follow
                    yield from value[n:]
                return


def fetch_progressive(specs: list[RemoteSpec], opts: RemoteOptions, workdir: str):
    """Fetch every remote spec, at most MAX_PARALLEL at once, each spec's files readable as
    they arrive: returns (an Arrivals per spec, in order; a function that waits for every
    transfer to end).  The parse of many small files over one connection overlaps their
    transfer (2,000 logs: the transfer had added about 9 s to the local parse, which started
    only after it)."""
    out = [Arrivals() for _ in specs]

    def one(spec, arr):
        try:
            arr.q.put(("done", fetch_one(spec, opts, workdir,
                                         on_ready=lambda it: arr.q.put(("item", it)))))
        except EaglelogError as e:
            arr.q.put(("done", e))
        except BaseException as e:            # a bug: raised in the reading thread
            arr.q.put(("raise", e))
    from concurrent.futures import ThreadPoolExecutor
    pool = ThreadPoolExecutor(max_workers=max(1, min(MAX_PARALLEL, len(specs))))
    for spec, arr in zip(specs, out):
        pool.submit(one, spec, arr)
    return out, lambda: pool.shutdown(wait=True)


def split_numbered(line: bytes) -> tuple[int, bytes] | None:
    """'N:text' (a marker line) or 'N-text' (context after a block header) -> (N, text)."""
    m = _NUMBERED.match(line)
    if m is None:
        return None
    return int(m.group(1)), line[m.end():]
