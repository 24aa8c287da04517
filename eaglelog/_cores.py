"""How many cores eaglelog's threads and processes use: ``EAGLELOG_WORKERS``, else the cores
this process may run on, at most 8.  The scan's byte ranges, the fit's long passes (rate.py's
C passes) and the per-run analyses of many inputs read it; every answer is the same for every
count, so it is a matter of speed alone.

"The cores it may run on": the CPUs of its affinity mask (a cpuset, ``taskset``), and no more
than a cgroup v2 CPU quota allows (``docker run --cpus 2``, a Kubernetes CPU limit: cpu.max's
quota ÷ period, rounded up).  A container on a 64-core host with a 2-CPU limit runs 2 workers,
not 8: threads beyond the quota only wait for each other."""
from __future__ import annotations

import math
import os

CPU_MAX = "/sys/fs/cgroup/cpu.max"      # cgroup v2: "<quota> <period>", or "max <period>"


def workers() -> int:
    env = os.environ.get("EAGLELOG_WORKERS")
    if env and env.isdigit():
        return max(1, int(env))
    return max(1, min(available(), 8))


def available(cpu_max: str = CPU_MAX) -> int:
    """The cores this process may use (at least 1)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):          # (not Linux)
        n = os.cpu_count() or 1
    quota = _quota(cpu_max)
    return max(1, min(n, quota) if quota else n)


def _quota(path: str) -> int | None:
    """cpu.max's limit in whole cores, rounded up (None: no limit, or no cgroup v2 file)."""
    try:
        with open(path) as f:
            parts = f.read().split()
        quota, period = int(parts[0]), int(parts[1])
    except (OSError, ValueError, IndexError):   # ('max': no limit; no such file)
        return None
    return max(1, math.ceil(quota / period)) if quota > 0 and period > 0 else None


def may_start_processes() -> bool:
    """Whether this process may start worker processes: fork is available, and it is not a
    daemonic process (a worker of the caller's own multiprocessing pool, which multiprocessing
    forbids children: an AssertionError).  Threads it may always start."""
    import multiprocessing as mp
    return "fork" in mp.get_all_start_methods() and not mp.current_process().daemon
