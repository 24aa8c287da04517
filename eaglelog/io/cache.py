"""Caches under ``$XDG_CACHE_HOME/eaglelog`` (``~/.cache/eaglelog``), off with ``--no-cache``.

* **results**: the exact output (stdout, stderr, exit code) of an analysis command, keyed by the
  command, its options and the state of every input file.  A repeated ``eaglelog summary`` of an
  unchanged log prints from here without importing pandas.  (EAGLELOG_NO_RESULT_CACHE=1 skips
  this layer alone, for benchmarks.)
* **tables**: the parsed tables of a local log (parquet) with the scanner's state at the last
  safe point, keyed by the file's path; used while the file is unchanged (below).  A log that
  grew is parsed only from where the cache stopped.

**What "unchanged" guarantees.**  A file's state is taken (``fstat`` of the opened file, then its
bytes) before the file is read, and is: absolute path, device, inode, size, modification time
and inode change time (``st_ctime_ns``), plus SHA-1 digests of the first and the last 64 KiB and
of 16 blocks of 4 KiB spread evenly between them.  A cached result or table set is used only when
every one of these is equal again.

* The kernel sets a file's ctime to the current time on every change to its content or inode:
  write, truncate, ``utime``/``touch -d``, chmod, chown, rename, link; user space cannot set it.
  So an edit of any kind, anywhere in the file, also one that restores the size and the mtime
  (``cp -p``, ``rsync -t``, an editor that keeps the mtime, a file system with coarse mtimes), is
  seen, provided that the system clock is not set back and the file system keeps ctime (every
  local Linux file system does; some FUSE and network file systems do not).
* A change made within the same clock tick as the previous one leaves ctime equal (Linux
  stamps file times from a clock of a few ms; some file systems keep whole seconds).  So when a
  file's ctime is less than 2 s old at the time its state is taken (a "racy" state, as git
  calls it), the state also carries a CRC-32 of the whole content, and the cache is used only
  when the content's CRC-32 is equal again: content identity up to a CRC-32 collision (any
  change of at most 32 consecutive bits is always seen).  A racy file larger than 64 MiB (a
  big log being written) is not served from the caches at all (its tables are stored, for a
  resumed parse once it grew).
* Where ctime is not kept, an edit that restores size and mtime is still seen when it touches
  the first or the last 64 KiB or one of the sampled blocks; others are not: use --no-cache.

A log that grew (same path, device and inode, larger) is parsed from its cached safe point only
when the CRC-32 of every byte before that point and the SHA-1 of the 64 KiB before it are as
they were.

A cache entry that cannot be read back exactly as written (a truncated or foreign parquet file,
a directory or file in the wrong place, a meta or result file of the wrong shape, a checksum
that does not match) is deleted and the input parsed again; it is never an error and never
served.  Every write goes to a unique temporary name in the same directory and is renamed into
place, so a reader sees a whole entry or none.

**Size limit.**  The cache holds at most ``EAGLELOG_CACHE_MAX`` bytes (default 2 GiB; ``500M``,
``2G``, ``1.5GiB``: K/M/G/T and KiB/MiB/… are powers of 1024, kB/MB/GB/TB powers of 1000;
``none`` for no limit).  An entry is one file of ``results/``, one directory of ``tables/`` or
one fetched copy in ``remote/`` (the copies of ``--fetch``); its size is the length of its
files, and its last use is its modification time, set again on every hit (a remote copy is
also used when a table entry of it is).  After every write, the least recently used entries
are deleted until the total is within the limit, but never the entry just written, nor one
used in the last minute (another command may be reading it): the cache may exceed the limit by
those.  One process evicts at a time (a lock on ``.lock``; another writer skips its turn), and
an entry deleted under a reader is damage the reader already handles (parse again).
``eaglelog cache info`` shows the folder, entries, size and limit; ``eaglelog cache clear``
empties it.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import stat
import tempfile
import time
import zlib
from dataclasses import dataclass

from ..errors import EaglelogError

VERSION = 2           # bump when the cached formats or the parsers' output change
FP_BYTES = 64 << 10
SAMPLES = 16          # blocks sampled between the head and the tail
SAMPLE_BYTES = 4 << 10
RACY_NS = 2_000_000_000   # a ctime younger than this when the state is taken: check the content
RACY_CRC_MAX = 64 << 20   # a larger racy file (a live log) is not served from the caches
STALE_TMP_S = 3600    # temporary entries of killed runs older than this are removed


class CacheDamage(Exception):
    """A cache entry that is not what was written: drop it and recompute."""


_CODE = None


def code_version() -> str:
    """A fingerprint of eaglelog's own source: a cache written by other code is never read."""
    global _CODE
    if _CODE is None:
        h = hashlib.sha1()
        pkg = os.path.dirname(os.path.abspath(__file__))
        for dirpath, dirnames, filenames in os.walk(pkg):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".py"):
                    with open(os.path.join(dirpath, name), "rb") as f:
                        h.update(name.encode() + f.read())
        _CODE = h.hexdigest()
    return _CODE


def root() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "eaglelog")


def fingerprint(path: str, offset: int, length: int = FP_BYTES) -> str:
    with open(path, "rb") as f:
        f.seek(max(offset, 0))
        return hashlib.sha1(f.read(length)).hexdigest()


def _crc(f, n: int | None) -> int:
    crc = 0
    left = n
    while left is None or left > 0:
        block = f.read(8 << 20 if left is None else min(left, 8 << 20))
        if not block:
            break
        crc = zlib.crc32(block, crc)
        if left is not None:
            left -= len(block)
    return crc


def prefix_crc(path: str, n: int) -> int:
    """CRC-32 of the first n bytes (zlib's, a few GB/s): a resumed parse needs the whole part
    it does not read again to be unchanged, not only its ends."""
    with open(path, "rb") as f:
        return _crc(f, n)


def _samples(f, size: int) -> str:
    h = hashlib.sha1()
    span = size - 2 * FP_BYTES - SAMPLE_BYTES
    if span > 0:
        for k in range(1, SAMPLES + 1):
            f.seek(FP_BYTES + span * k // (SAMPLES + 1))
            h.update(f.read(SAMPLE_BYTES))
    return h.hexdigest()


_STATES: dict = {}     # (path, stat identity) -> state, for this process


def file_state(path: str) -> dict | None:
    """The state of a local regular file (see the module docstring), or None (stdin, remote,
    missing, not a regular file, unreadable)."""
    try:
        # a FIFO is never opened here, not even without blocking: opening its read end lets a
        # writer waiting in open() go on, and closing it again makes that writer's first
        # write fail (EPIPE), after which the real read waits for a writer that is gone (a
        # test's writer thread hung the suite that way once, under load)
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        # O_NONBLOCK: a FIFO (or a device) swapped into the path's place since must not block
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            ident = (os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                     st.st_ctime_ns)
            if ident in _STATES:
                return dict(_STATES[ident])
            racy = st.st_ctime_ns > time.time_ns() - RACY_NS
            head = hashlib.sha1(f.read(FP_BYTES)).hexdigest()
            f.seek(max(st.st_size - FP_BYTES, 0))
            tail = hashlib.sha1(f.read(FP_BYTES)).hexdigest()
            samples = _samples(f, st.st_size)
            state = {"path": ident[0], "dev": st.st_dev, "ino": st.st_ino, "size": st.st_size,
                     "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "head": head,
                     "tail": tail, "samples": samples}
            if racy:
                state["racy"] = True
                if st.st_size <= RACY_CRC_MAX:
                    f.seek(0)
                    state["content"] = _crc(f, None)
    except OSError:
        return None
    if len(_STATES) > 64:
        _STATES.clear()
    _STATES[ident] = state
    return dict(state)


_IDENTITY = ("path", "dev", "ino", "size", "mtime_ns", "ctime_ns", "head", "tail", "samples")


def unchanged(old: dict, new: dict, path: str) -> bool:
    """Whether the file whose state is ``new`` now is the one cached with state ``old``."""
    if any(old.get(k) != new.get(k) for k in _IDENTITY):
        return False
    if not old.get("racy"):
        return True
    if old.get("content") is None:
        return False                    # racy and too large to check: never served
    if new.get("content") is not None:
        return new["content"] == old["content"]
    try:
        with open(path, "rb") as f:
            return _crc(f, None) == old["content"]
    except OSError:
        return False


def grew(old: dict, new: dict) -> bool:
    """The same file (path, device, inode), larger now: a candidate for a resumed parse."""
    return all(old.get(k) == new.get(k) for k in ("path", "dev", "ino")) and \
        new["size"] > old["size"] and (old["size"] < FP_BYTES or old["head"] == new["head"])


def drop(path: str) -> None:
    """Delete a cache entry (file or directory) of whatever it has become; never fails.  A
    directory is renamed away first, so no reader sees it half deleted."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            gone = f"{path}.old-{secrets.token_hex(6)}"
            os.replace(path, gone)
            shutil.rmtree(gone, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


def _sweep(d: str) -> None:
    """Remove the temporary names of runs that were killed while writing (older than an hour)."""
    try:
        now = time.time()
        with os.scandir(d) as it:
            for e in it:
                if (e.name.startswith(".tmp-") or ".old-" in e.name) and \
                        now - e.stat(follow_symlinks=False).st_mtime > STALE_TMP_S:
                    drop(e.path)
    except OSError:
        pass


def _make_dir(d: str) -> None:
    """mkdir -p, replacing a file (or anything) that is not a directory in its place."""
    if os.path.lexists(d) and not os.path.isdir(d):
        drop(d)
    os.makedirs(d, exist_ok=True)


def _atomic_write(path: str, data: bytes) -> None:
    d = os.path.dirname(path)
    _make_dir(d)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if os.path.isdir(path) and not os.path.islink(path):
            drop(path)                      # a directory in the file's place
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _load_json(path: str):
    """The JSON in path; None when there is none; raises CacheDamage when it is not JSON."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as e:   # a directory, not UTF-8, not JSON …
        raise CacheDamage(str(e)) from None


def _int(v, lo: int | None = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and (lo is None or v >= lo)


def _opt_int(v) -> bool:
    return v is None or _int(v)


# ------------------------------------------------------------------------------------ results

_CHECKS: dict[str, dict[str, int]] = {}   # result key -> {path: CRC-32} of its racy inputs


def result_key(command: str, params: dict, files: list[str]) -> str | None:
    """The key of a command's result, or None when an input is not a local regular file.  The
    content CRC-32 of a racy input is not part of the key: the entry stores it, and a hit
    needs it equal (so a key does not change when its files stop being racy)."""
    limit()                             # a bad EAGLELOG_CACHE_MAX: said before any work
    states = []
    checks = {}
    for f in files:
        s = file_state(f)
        if s is None:
            return None
        if s.pop("racy", False):
            crc = s.pop("content", None)
            if crc is None:
                return None             # changing now, too large to check: not cached
            checks[s["path"]] = crc
        states.append(s)
    from .. import __version__
    blob = json.dumps({"v": VERSION, "eaglelog": __version__, "code": code_version(),
                       "command": command,
                       "params": params, "files": states}, sort_keys=True, default=str)
    key = hashlib.sha256(blob.encode()).hexdigest()
    _CHECKS[key] = checks
    return key


def _result_path(key: str) -> str:
    return os.path.join(root(), "results", key + ".json")


def _content_crc(path: str) -> int | None:
    """The CRC-32 of the file's content now (read again: within a ctime tick the stat does not
    tell whether it changed since its state was taken)."""
    try:
        with open(path, "rb") as f:
            return _crc(f, None)
    except OSError:
        return None


def load_result(key: str) -> dict | None:
    """The stored output of the command with this key, or None.  An entry that is not exactly
    what store_result writes (for this key) is deleted."""
    path = _result_path(key)
    try:
        entry = _load_json(path)
    except CacheDamage:
        entry = False
    if entry is None:
        return None
    if not (isinstance(entry, dict) and
            set(entry) - {"checks"} == {"key", "stdout", "stderr", "code"} and
            entry["key"] == key and isinstance(entry["stdout"], str) and
            isinstance(entry["stderr"], str) and _int(entry["code"]) and
            entry["code"] in (0, 3) and
            isinstance(entry.get("checks", {}), dict) and
            all(isinstance(p, str) and _int(c) for p, c in entry.get("checks", {}).items())):
        drop(path)
        return None
    checks = entry.pop("checks", {})
    if any(_content_crc(p) != crc for p, crc in checks.items()):
        return None                     # a racy input changed within its ctime tick
    if checks and not _CHECKS.get(key):
        store_result(key, entry["stdout"], entry["stderr"], entry["code"])   # settled now
    else:
        touch(path)                     # a use: the LRU order of the size limit
    return entry


def store_result(key: str, stdout: str, stderr: str, code: int) -> None:
    entry = {"key": key, "stdout": stdout, "stderr": stderr, "code": code}
    if _CHECKS.get(key):
        entry["checks"] = _CHECKS[key]
    try:
        _atomic_write(_result_path(key), json.dumps(entry).encode())
    except (OSError, ValueError):
        return    # a cache that cannot be written is no error
    evict(keep=_result_path(key))


# ------------------------------------------------------------------------------------ tables

def table_dir(path: str, engine: str, base_date) -> str:
    limit()                             # a bad EAGLELOG_CACHE_MAX: said before any work
    key = hashlib.sha256(json.dumps([VERSION, code_version(), os.path.abspath(path), engine,
                                     str(base_date)]).encode()).hexdigest()[:40]
    return os.path.join(root(), "tables", key)


def _digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _valid_state(s) -> bool:
    return isinstance(s, dict) and isinstance(s.get("path"), str) and \
        all(_int(s.get(k), None) for k in ("dev", "ino", "size", "mtime_ns", "ctime_ns")) and \
        all(isinstance(s.get(k), str) for k in ("head", "tail", "samples")) and \
        _opt_int(s.get("content")) and s.get("racy", False) in (True, False)


def _known_engine(name) -> bool:
    from ..parsers import engine_named
    try:
        return isinstance(name, str) and engine_named(name) is not None
    except (KeyError, IndexError, ValueError):
        return False


def _valid_meta(meta, key: str) -> bool:
    """The shape and types of a meta.json as store_tables writes it."""
    from ..schema import TABLES
    if not isinstance(meta, dict) or meta.get("version") != VERSION or meta.get("key") != key:
        return False
    body = {k: v for k, v in meta.items() if k != "sum"}
    if meta.get("sum") != _digest(body):
        return False
    safe = meta.get("safe")
    if safe is not None and not (
            isinstance(safe, dict) and _int(safe.get("offset"), 1) and
            isinstance(safe.get("fp"), str) and _int(safe.get("crc")) and
            isinstance(safe.get("state"), dict) and _int(safe["state"].get("_line"))):
        return False
    cols = meta.get("columns")
    if cols is not None and not (
            isinstance(cols, dict) and all(t in TABLES and isinstance(c, list) and
                                           all(isinstance(x, str) for x in c)
                                           for t, c in cols.items())):
        return False
    info = meta.get("info")
    tables = meta.get("tables")
    diags = meta.get("diags")
    return (_valid_state(meta.get("state")) and
            meta.get("compression") in (None, "gzip", "xz", "bzip2", "zstd") and
            _known_engine(meta.get("engine")) and
            isinstance(info, list) and len(info) == 4 and all(_int(x) for x in info[:3]) and
            _opt_int(info[3]) and
            isinstance(tables, dict) and set(tables) == set(TABLES) and
            all(isinstance(v, dict) and set(v) == {"rows", "token"} and _int(v["rows"]) and
                isinstance(v["token"], str) for v in tables.values()) and
            isinstance(diags, list) and
            all(isinstance(d, list) and len(d) == 5 and _opt_int(d[0]) and
                isinstance(d[1], str) and isinstance(d[2], str) and
                d[3] in ("note", "warning", "error") and _int(d[4]) for d in diags))


def load_tables_meta(d: str) -> dict | None:
    """The meta of the table cache entry ``d``, or None.  An entry whose meta is missing,
    unreadable, of another shape or not matching its checksum is deleted."""
    try:
        meta = _load_json(os.path.join(d, "meta.json"))
    except CacheDamage:
        meta = False
    if meta is None and not os.path.lexists(d):
        return None
    if meta and _valid_meta(meta, os.path.basename(d)):
        touch(d)                        # a use: the LRU order of the size limit
        return meta
    drop(d)
    return None


def settle(d: str, meta: dict, state: dict) -> None:
    """After a hit on an entry stored with a racy state: store the state as it is now (no
    longer racy), so that later hits need not read the whole file again."""
    if state.get("racy") or not meta["state"].get("racy"):
        return
    body = {k: v for k, v in meta.items() if k != "sum"}
    body["state"] = state
    try:
        _atomic_write(os.path.join(d, "meta.json"),
                      json.dumps({**body, "sum": _digest(body)}).encode())
    except (OSError, ValueError):
        pass


def _arrow_fits(typ, dtype: str) -> bool:
    """Whether a parquet column of arrow type ``typ`` is what a column of schema dtype
    ``dtype`` is written as (null: a column of an empty or all-NA object frame)."""
    import pyarrow.types as pt
    text = pt.is_string(typ) or pt.is_large_string(typ)
    if pt.is_null(typ):
        return True
    if dtype == "category":
        return text or (pt.is_dictionary(typ) and (pt.is_string(typ.value_type) or
                                                   pt.is_large_string(typ.value_type)))
    if dtype == "string":
        return text
    if dtype.startswith("datetime64["):
        return pt.is_timestamp(typ) and typ.tz is None and typ.unit == dtype[11:-1]
    return {"Int64": pt.is_int64, "Int32": pt.is_int32, "float64": pt.is_float64,
            "boolean": pt.is_boolean}.get(dtype, lambda _: False)(typ)


def _all_null(pf, i: int) -> bool:
    """Whether column i of the parquet file holds no value (an all-NA column whose frame dtype
    was float, as an all-NA category can be), by its statistics."""
    md = pf.metadata
    try:
        return sum(md.row_group(g).column(i).statistics.null_count
                   for g in range(md.num_row_groups)) == md.num_rows
    except (AttributeError, TypeError):     # no statistics
        return False


_CONFIG_DTYPES = ("boolean", "Int64", "float64", "string")    # tables._config_column's


def check_table(pf, table, entry: dict, projection: dict | None) -> None:
    """Raise CacheDamage unless the open parquet file ``pf`` is the table ``table`` (a
    schema.Table) that store_tables wrote for this entry: its token and row count, every
    column of its schema dtype (or holding no value), no column the schema does not know
    (but server_args' config keys and private '_' columns), every core column the entry's
    projection kept."""
    schema = pf.schema_arrow
    if (schema.metadata or {}).get(TOKEN) != entry["token"].encode() or \
            pf.metadata.num_rows != entry["rows"]:
        raise CacheDamage(f"{table.name}: not the table this entry wrote")
    cols = {c.name: c for c in table.columns}
    for i, (name, typ) in enumerate(zip(schema.names, schema.types)):
        c = cols.get(name)
        if c is not None:
            ok = _arrow_fits(typ, c.dtype) or _all_null(pf, i)
        elif table.name == "server_args":
            ok = any(_arrow_fits(typ, dt) for dt in _CONFIG_DTYPES)
        else:
            ok = name.startswith("_")
        if not ok:
            raise CacheDamage(f"{table.name}.{name}: a column of type {typ}")
    kept = None if projection is None else projection.get(table.name)
    missing = [c.name for c in table.columns if c.core and c.name not in schema.names and
               (kept is None or c.name in kept)]
    if missing:
        raise CacheDamage(f"{table.name}: no column {missing[0]}")


TOKEN = b"eaglelog.io.cache"     # parquet key-value metadata: the entry's token for this table


def store_tables(d: str, meta: dict, frames: dict) -> None:
    """Write a table cache entry: every table and then meta.json into a new temporary
    directory next to ``d``, renamed to ``d`` when complete."""
    parent = os.path.dirname(d)
    tmp = None
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
        _make_dir(parent)
        _sweep(parent)
        tmp = tempfile.mkdtemp(dir=parent, prefix=".tmp-")
        tables = {}
        for name, df in frames.items():
            token = secrets.token_hex(8)
            table = pa.Table.from_pandas(df, preserve_index=False)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                   TOKEN: token.encode()})
            pq.write_table(table, os.path.join(tmp, f"{name}.parquet"),
                           write_page_checksum=True)
            del table
            tables[name] = {"rows": len(df), "token": token}
        body = json.loads(json.dumps({**meta, "version": VERSION, "key": os.path.basename(d),
                                      "tables": tables}, default=str))
        with open(os.path.join(tmp, "meta.json"), "wb") as f:
            f.write(json.dumps({**body, "sum": _digest(body)}).encode())
        if os.path.lexists(d):
            drop(d)
        os.rename(tmp, d)           # fails when another run put its entry there meanwhile
        tmp = None
    except Exception:               # OSError, ValueError, ImportError, ArrowException …
        return                      # a cache that cannot be written is no error
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    evict(keep=d)


# ------------------------------------------------------------------------------------ size

DEFAULT_MAX = 2 << 30      # bytes: the limit when EAGLELOG_CACHE_MAX is not set
MAX_ENV = "EAGLELOG_CACHE_MAX"
IN_USE_S = 60              # an entry used this recently is not evicted (a command may read it)
KINDS = ("results", "tables", "remote")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class CacheConfigError(EaglelogError):
    """EAGLELOG_CACHE_MAX is not a size: a usage error."""

    exit_code = 2


def parse_size(text: str) -> int | None:
    """Bytes of a size as EAGLELOG_CACHE_MAX takes it: '500M', '2G', '1.5GiB', '2GB', '4096';
    K/M/G/T (with or without 'iB') count in 1024s, kB/MB/GB/TB in 1000s; 'none' or
    'unlimited': None (no limit).  Raises ValueError otherwise."""
    import re
    t = text.strip().lower()
    if t in ("none", "unlimited"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(ib|b)?", t)
    if m is None or (m.group(3) == "ib" and not m.group(2)):
        raise ValueError(text)
    num, unit, tail = m.groups()
    scale = 1000 ** "_kmgt".index(unit) if tail == "b" and unit else _UNITS[unit]
    return int(float(num) * scale)


def limit() -> tuple[int | None, str]:
    """The size limit in bytes (None: no limit) and where it comes from ('default' or the
    variable's name); raises CacheConfigError when EAGLELOG_CACHE_MAX is not a size."""
    raw = os.environ.get(MAX_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX, "default"
    try:
        return parse_size(raw), MAX_ENV
    except (ValueError, OverflowError):
        raise CacheConfigError(f"{MAX_ENV}={raw!r} is not a size: give bytes with an optional "
                               "unit (500M, 2G, 1.5GiB) or 'none' for no limit") from None


def fmt_size(n: int | None) -> str:
    """Bytes in the units EAGLELOG_CACHE_MAX takes (powers of 1024): '1.5 GiB', '512 B'."""
    if n is None:
        return "no limit"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


@dataclass
class Entry:
    kind: str        # results, tables or remote
    path: str
    bytes: int
    used: float      # last use (epoch seconds): the entry's modification time


def _temporary(kind: str, name: str) -> bool:
    if kind == "remote":
        return name.endswith(".part")                       # remote.py's transfers
    return name.startswith(".tmp-") or ".old-" in name      # _atomic_write, store_tables, drop


def _tree_bytes(path: str) -> int:
    """The length of every file under a directory (symbolic links not followed)."""
    total = 0
    try:
        with os.scandir(path) as it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        total += _tree_bytes(e.path)
                    else:
                        total += e.stat(follow_symlinks=False).st_size
                except OSError:
                    pass                 # deleted meanwhile
    except OSError:
        pass
    return total


def _scan(base: str) -> tuple[list[Entry], list[Entry]]:
    """The entries and the temporary files (of writes in progress or of killed runs) in the
    cache folder ``base`` (absolute paths).  Anything that vanishes while it is looked at is
    left out."""
    base = os.path.abspath(base)
    entries, temps = [], []
    for kind in KINDS:
        try:
            it = os.scandir(os.path.join(base, kind))
        except OSError:                  # no such folder (or a file in its place)
            continue
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                    is_dir = e.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                size = _tree_bytes(e.path) if is_dir else st.st_size
                item = Entry(kind, e.path, size, st.st_mtime)
                (temps if _temporary(kind, e.name) else entries).append(item)
    return entries, temps


def touch(path: str) -> None:
    """Record a use of the cache entry at ``path`` (its modification time: the LRU order).
    Never the input files themselves: that would change their ctime, and so their state."""
    try:
        os.utime(path)
    except OSError:
        pass


def _remote_use(entries: list[Entry]) -> None:
    """A remote copy is used whenever a table entry of it is (a hit on its tables does not
    read the copy's bytes but needs it in place): its last use is the later of the two."""
    copies = {e.path: e for e in entries if e.kind == "remote"}
    if not copies:
        return
    for e in entries:
        if e.kind != "tables":
            continue
        try:
            meta = _load_json(os.path.join(e.path, "meta.json"))
            copy = copies.get(meta["state"]["path"])
        except (CacheDamage, KeyError, TypeError):
            continue
        if copy is not None:
            copy.used = max(copy.used, e.used)


class _Lock:
    """An exclusive lock on ``base/.lock`` (flock): one eviction or clear at a time.  With
    ``wait`` False, ``held`` is False when another process holds it."""

    def __init__(self, base: str, wait: bool):
        self.fd = None
        self.held = False
        try:
            import fcntl
        except ImportError:              # no flock (Windows): unlocked
            self.held = True
            return
        try:
            self.fd = os.open(os.path.join(base, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(self.fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            self.held = True
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)            # closing the descriptor releases the lock


def _sweep_stale(temps: list[Entry], now: float) -> list[Entry]:
    """Remove the temporary files of killed runs (older than STALE_TMP_S); the others stay."""
    stale = [t for t in temps if now - t.used > STALE_TMP_S]
    for t in stale:
        drop(t.path)
    return stale


def evict(keep: str | None = None, now: float | None = None) -> list[Entry]:
    """Delete least recently used entries until the cache is within its limit, but never
    ``keep`` (the entry just written) nor an entry used in the last IN_USE_S seconds.
    Returns the entries deleted, oldest first.  Never fails; another process evicting at the
    same time makes this one skip its turn."""
    try:
        cap = limit()[0]
    except CacheConfigError:
        return []                        # said where the cache was first used
    base = root()
    if cap is None or not os.path.isdir(base):
        return []
    now = time.time() if now is None else now
    keep = os.path.abspath(keep) if keep else None
    gone: list[Entry] = []
    with _Lock(base, wait=False) as lock:
        if not lock.held:
            return []
        entries, temps = _scan(base)
        _sweep_stale(temps, now)
        total = sum(e.bytes for e in entries)
        if total <= cap:
            return []
        _remote_use(entries)
        for e in sorted(entries, key=lambda e: (e.used, e.path)):
            if total <= cap or now - e.used < IN_USE_S:
                break                    # within the limit, or the rest is in use
            if e.path == keep:
                continue
            drop(e.path)
            total -= e.bytes
            gone.append(e)
    return gone


def info() -> dict:
    """What ``eaglelog cache info`` shows: the folder, its entries (by kind) and their size,
    the temporary files, the limit and where it comes from, and whether caching is off."""
    cap, source = limit()
    base = os.path.abspath(root())
    entries, temps = _scan(base)
    kinds = {k: {"entries": sum(e.kind == k for e in entries),
                 "bytes": sum(e.bytes for e in entries if e.kind == k)} for k in KINDS}
    return {"path": base, "entries": len(entries), "bytes": sum(e.bytes for e in entries),
            "limit": cap, "limit_from": source, "kinds": kinds,
            "temporary": {"files": len(temps), "bytes": sum(t.bytes for t in temps)},
            "off": bool(os.environ.get("EAGLELOG_NO_CACHE"))}


def clear() -> dict:
    """Delete every entry (and the temporary files of killed runs; those of writes in
    progress stay).  Returns the folder, the count and the bytes freed."""
    base = os.path.abspath(root())
    entries, temps, stale = [], [], []
    if os.path.isdir(base):
        with _Lock(base, wait=True):     # not while an eviction runs
            entries, temps = _scan(base)
            for e in entries:
                drop(e.path)
            stale = _sweep_stale(temps, time.time())
    freed = sum(e.bytes for e in entries) + sum(t.bytes for t in stale)
    return {"path": base, "entries": len(entries), "bytes": freed,
            "in_progress": len(temps) - len(stale)}


_KIND_WORDS = {"results": "results", "tables": "table sets", "remote": "remote copies"}


def info_text(d: dict) -> str:
    """The human block of ``eaglelog cache info``."""
    kinds = ", ".join(f"{_KIND_WORDS[k]} {v['entries']:,} ({fmt_size(v['bytes'])})"
                      for k, v in d["kinds"].items() if v["entries"])
    if d["limit"] is None:
        cap = f"no limit ({d['limit_from']}=none)"
    else:
        cap = fmt_size(d["limit"]) + (f" (default; set {MAX_ENV}, e.g. 500M)"
                                      if d["limit_from"] == "default" else f" ({MAX_ENV})")
    lines = [("path", d["path"] + ("   (caching is off: EAGLELOG_NO_CACHE is set)"
                                   if d["off"] else "")),
             ("entries", f"{d['entries']:,}" + (f": {kinds}" if kinds else "")),
             ("size", f"{fmt_size(d['bytes'])} ({d['bytes']:,} bytes)"),
             ("limit", cap)]
    if d["temporary"]["files"]:
        t = d["temporary"]
        lines.append(("temporary", f"{t['files']:,} file{'s' if t['files'] != 1 else ''} "
                                   f"({fmt_size(t['bytes'])}) of writes in progress or "
                                   "killed runs"))
    return "".join(f"{k:<10} {v}\n" for k, v in lines)


def clear_text(d: dict) -> str:
    """The line of ``eaglelog cache clear``."""
    if not d["entries"] and not d["bytes"]:
        msg = f"the cache in {d['path']} is empty: nothing to remove"
    else:
        n = d["entries"]
        msg = (f"removed {n:,} entr{'ies' if n != 1 else 'y'} from {d['path']}: "
               f"{fmt_size(d['bytes'])} freed ({d['bytes']:,} bytes)")
    if d["in_progress"]:
        msg += f"; {d['in_progress']:,} file(s) of writes in progress left alone"
    return msg + "\n"
