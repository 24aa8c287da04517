"""How many cores eaglelog's threads and processes use: ``EAGLELOG_WORKERS``, else the
machine's cores, at most 8.  The scan's byte ranges, the fit's long passes (rate.py's C passes)
and the per-run analyses of many inputs read it; every answer is the same for every count."""
from __future__ import annotations

import os


def workers() -> int:
    env = os.environ.get("EAGLELOG_WORKERS")
    if env and env.isdigit():
        return max(1, int(env))
    return min(os.cpu_count() or 1, 8)
