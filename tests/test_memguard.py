"""Out of memory under an address-space limit (RLIMIT_AS, `ulimit -v`): one line, at every
limit, never a hang, never another program's exit (eaglelog/_memguard.c, _memory.keep_reserve).

Before the reserve, a summary of a 24 MiB log with some limits between 8 and 96 MiB above the
imports ended otherwise than in the one line (2026-12-07, this 2-core VM, one try per limit):
- 24.5-26 MiB: it hung for ever (CPython 3.11's unwinding needs an int object per handler and
  retries the handler when that allocation fails: CPython gh-132508);
- 28 MiB: "Exception ignored in: <generator object iter_chunks …>" above the line (the chunk
  generator, let go with no memory left, could not be closed);
- 56-72 MiB: "OpenBLAS error: Memory allocation still failed after 10 retries, giving up." and
  exit 1 (OpenBLAS maps 32 MiB at its first LAPACK call, the fit's solve).
With the reserve, every limit from 8 to 99.5 MiB by 0.5 MiB ended in the line (to 91 MiB) or
the summary.  A 48 MiB log scanned by two threads, limits 8 to 136 MiB by 4, twice each: all
in the line or the summary, once the reserve went back a quarter at a time and two more
messages of out of memory were known as such (a SystemError, an ImportError: see the tests).
"""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import SAMPLES

memguard = pytest.importorskip("eaglelog._memguard")

_LIMITED = textwrap.dedent("""
    import resource, sys
    import numpy, pandas                        # what any analysis imports, before the limit
    from eaglelog.cli import main
    import eaglelog.analysis.summary, eaglelog.report.blocks, eaglelog.library
    from eaglelog._memory import address_space
    limit = address_space() + int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    main(sys.argv[2:], prog_name="eaglelog")
""")


def _sample_log(tmp_path_factory, mib: int):
    data = (SAMPLES / "eagle3_2step.log").read_bytes()
    path = tmp_path_factory.mktemp("oom") / f"big{mib}.log"
    path.write_bytes(data * (mib * 2**20 // len(data)))
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return _sample_log(tmp_path_factory, 24)


@pytest.fixture(scope="module")
def big48(tmp_path_factory):
    return _sample_log(tmp_path_factory, 48)


# the limits above the imports at which one or the other failure was seen before (see above),
# and others between: every one ends in the one line, or in the summary
@pytest.mark.parametrize("mib", [12, 25.5, 26, 28, 36, 56, 64, 68, 72])
def test_every_limit_ends_in_one_line(big, mib):
    _one_line_or_summary(big, mib, workers=1)


# a 48 MiB log is scanned by two threads: at 38 and 92 MiB one of them once raised CPython's
# "SystemError: error return without exception set", at 112 and 113 the process hung with a
# reserve given back at once (the scanning thread took it)
@pytest.mark.parametrize("mib", [38, 92, 112])
def test_every_limit_ends_in_one_line_with_two_scan_threads(big48, mib):
    _one_line_or_summary(big48, mib, workers=2)


def _one_line_or_summary(big, mib, workers):
    env = dict(os.environ, EAGLELOG_WORKERS=str(workers), EAGLELOG_NO_CACHE="1")
    p = subprocess.run([sys.executable, "-c", _LIMITED, str(int(mib * 2**20)), "--no-cache",
                        "summary", str(big)], capture_output=True, text=True, env=env,
                       timeout=120)
    size = big.stat().st_size / 2**20
    if p.returncode == 0:
        assert "eaglelog: error" not in p.stderr and "Cycle" in p.stdout, p.stderr
        return
    assert p.returncode == 1 and p.stdout == "", p.stderr
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith(f"eaglelog: error: out of memory analysing {size:.1f} MiB of "
                               "input: analyse a part of it (--since/--until"), p.stderr


_TAKE = textwrap.dedent("""
    import json, resource, sys
    from eaglelog import _memguard
    from eaglelog._memory import address_space
    out = {"unlimited": _memguard.take(1 << 20), "state0": _memguard.state()}
    limit = address_space() + (64 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    out["taken"] = _memguard.take(4 << 20)
    out["again"] = _memguard.take(4 << 20)
    out["soft_taken"] = resource.getrlimit(resource.RLIMIT_AS)[0] - limit
    keep, n = [], 0
    try:
        while True:
            keep.append(bytearray(1 << 20)); n += 1
    except MemoryError:
        pass
    out["soft_after"] = resource.getrlimit(resource.RLIMIT_AS)[0] - limit
    out["state1"] = _memguard.state()
    out["mib"] = n
    keep.clear()
    out["given"] = _memguard.give_back()
    out["soft_given"] = resource.getrlimit(resource.RLIMIT_AS)[0] - limit
    out["given_again"] = _memguard.give_back()
    out["retaken"] = _memguard.take(4 << 20)
    out["state2"] = _memguard.state()
    print(json.dumps(out))
""")


def test_the_reserve_is_kept_back_and_given_back_at_the_first_failure():
    """take(n): nothing without a limit; with one, the soft limit n bytes lower (the hard limit
    as it was), a quarter of n given back when an allocation fails (that allocation still
    fails: the MemoryError is raised); give_back() the rest; taken again after that."""
    import json
    p = subprocess.run([sys.executable, "-c", _TAKE], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["unlimited"] is False
    assert out["state0"] == {"taken": False, "released": False, "left": 0, "failed": False}
    assert out["taken"] is True and out["again"] is False
    assert out["soft_taken"] == -(4 << 20)
    assert out["soft_after"] == -(3 << 20)
    assert out["state1"] == {"taken": True, "released": True, "left": 3, "failed": True}
    assert 40 <= out["mib"] <= 64          # (64 MiB of room, less the reserve and the rest)
    assert out["given"] is True and out["soft_given"] == 0 and out["given_again"] is False
    assert out["retaken"] is True
    assert out["state2"] == {"taken": True, "released": False, "left": 4, "failed": False}


def test_keep_reserve_does_nothing_without_a_limit():
    code = ("from eaglelog._memory import keep_reserve; from eaglelog import _memguard;"
            "print(keep_reserve(), _memguard.state())")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.split(None, 1) == [
        "False", "{'taken': False, 'released': False, 'left': 0, 'failed': False}\n"]


def test_a_system_error_without_exception_is_out_of_memory_only_after_a_failure(monkeypatch):
    """CPython 3.11's SystemError of a return without an exception (a scan thread's first
    frames that found no memory: seen at 38 and 92 MiB above the imports with two scan
    threads) is out of memory once an allocation has failed (_memory.ran_out), else a bug."""
    import eaglelog._memory as memory
    from eaglelog.cli._base import _out_of_memory
    e = SystemError("error return without exception set")
    monkeypatch.setattr(memory, "ran_out", lambda: False)
    assert not _out_of_memory(e)
    monkeypatch.setattr(memory, "ran_out", lambda: True)
    assert _out_of_memory(e)
    assert not _out_of_memory(SystemError("another"))


def test_a_shared_object_the_loader_could_not_map_is_out_of_memory():
    """dlopen's ENOMEM (seen at 12 MiB above the imports with two scan threads: a module first
    imported late, _multiprocessing) is out of memory; another ImportError is a bug."""
    from eaglelog.cli._base import _out_of_memory
    assert _out_of_memory(ImportError(
        "/usr/lib/python3.11/lib-dynload/_multiprocessing.cpython-311-x86_64-linux-gnu.so: "
        "failed to map segment from shared object"))
    assert not _out_of_memory(ImportError("No module named 'x'"))
