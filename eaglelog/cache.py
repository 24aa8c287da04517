"""Caches under ``$XDG_CACHE_HOME/eaglelog`` (``~/.cache/eaglelog``), off with ``--no-cache``.

* **results**: the exact output (stdout, stderr, exit code) of an analysis command, keyed by the
  command, its options and the state of every input file.  A repeated ``eaglelog summary`` of an
  unchanged log prints from here without importing pandas.  (EAGLELOG_NO_RESULT_CACHE=1 skips
  this layer alone, for benchmarks.)
* **tables**: the parsed tables of a local log (parquet) with the scanner's state at the last
  safe point, keyed by the file's path; valid while the file's size, modification time and
  content fingerprints match.  A log that grew is parsed only from where the cache stopped.

A file's state is (absolute path, size, mtime in ns, inode) plus SHA-1 fingerprints of its first
and last 64 KiB, so an edited or replaced file of the same size is not mistaken for the old one.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile

VERSION = 1           # bump when the cached formats or the parsers' output change
FP_BYTES = 64 << 10


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


def prefix_crc(path: str, n: int) -> int:
    """CRC-32 of the first n bytes (zlib's, a few GB/s): a resumed parse needs the whole part
    it does not read again to be unchanged, not only its ends."""
    import zlib
    crc = 0
    with open(path, "rb") as f:
        left = n
        while left > 0:
            block = f.read(min(left, 8 << 20))
            if not block:
                break
            crc = zlib.crc32(block, crc)
            left -= len(block)
    return crc


def file_state(path: str) -> dict | None:
    """The state of a local regular file, or None (stdin, remote, missing, not a file)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    try:
        head = fingerprint(path, 0)
        tail = fingerprint(path, st.st_size - FP_BYTES)
    except OSError:
        return None
    return {"path": os.path.abspath(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "ino": st.st_ino, "head": head, "tail": tail}


def _atomic_write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------------ results

def result_key(command: str, params: dict, files: list[str]) -> str | None:
    states = []
    for f in files:
        s = file_state(f)
        if s is None:
            return None
        states.append(s)
    from . import __version__
    blob = json.dumps({"v": VERSION, "eaglelog": __version__, "code": code_version(),
                       "command": command,
                       "params": params, "files": states}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def load_result(key: str) -> dict | None:
    try:
        with open(os.path.join(root(), "results", key + ".json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def store_result(key: str, stdout: str, stderr: str, code: int) -> None:
    try:
        _atomic_write(os.path.join(root(), "results", key + ".json"),
                      json.dumps({"stdout": stdout, "stderr": stderr, "code": code}).encode())
    except OSError:
        pass      # a cache that cannot be written is no error


# ------------------------------------------------------------------------------------ tables

def table_dir(path: str, engine: str, base_date) -> str:
    key = hashlib.sha256(json.dumps([VERSION, code_version(), os.path.abspath(path), engine,
                                     str(base_date)]).encode()).hexdigest()[:40]
    return os.path.join(root(), "tables", key)


def load_tables_meta(d: str) -> dict | None:
    try:
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return None
    return meta if meta.get("version") == VERSION else None


def store_tables(d: str, meta: dict, frames: dict) -> None:
    try:
        os.makedirs(d, exist_ok=True)
        for name, df in frames.items():
            tmp = os.path.join(d, f".{name}.parquet.tmp")
            df.to_parquet(tmp, index=False)
            os.replace(tmp, os.path.join(d, f"{name}.parquet"))
        _atomic_write(os.path.join(d, "meta.json"),
                      json.dumps({**meta, "version": VERSION}, default=str).encode())
    except (OSError, ValueError, ImportError):
        pass
