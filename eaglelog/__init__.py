"""eaglelog: answers about speculative decoding (EAGLE-3, MTP, n-gram) from LLM serving logs.

    >>> import eaglelog
    >>> eaglelog.breakeven("server.log", baseline_toks=90).speedup
    Estimate(estimate=0.931, ci_low=0.913, ci_high=0.949, ...)
    >>> s = eaglelog.summarize("server.log")            # config, cycle breakdown, accept lengths
    >>> eaglelog.compare(["before.log", "after.log"]).to_frame()
    >>> log = eaglelog.parse("server.log")              # the tables themselves
    >>> log.decode[["timestamp", "running_req", "accept_len", "gen_throughput"]]

Every analysis takes a path, a list of paths or a ParsedLog and plain keyword arguments, and
returns a result with ``.to_dict()`` (the CLI's JSON) and ``.to_frame()`` (docs/api.md).
"""
from .errors import EaglelogError, InputError, NoRecordsError
from .schema import TABLES

__version__ = "0.1.0"


def __getattr__(name: str):
    # pandas is imported on first use, so that `eaglelog --version` and cached results start
    # fast
    if name in ("parse", "ParsedLog", "SourceInfo"):
        from . import api
        return getattr(api, name)
    if name in _ANALYSES:
        from . import library
        return getattr(library, name)
    if name == "Baseline":
        from .baseline import Baseline
        return Baseline
    raise AttributeError(name)


_ANALYSES = ("summarize", "summary", "breakeven", "reconcile", "compare", "sweep", "Runs",
             "requests", "compare_paired", "compare_by_batch", "acceptance", "whatif",
             "schedule", "latency")

__all__ = ["parse", "ParsedLog", "SourceInfo", "summarize", "summary", "breakeven",
           "reconcile", "compare", "sweep", "requests", "compare_paired", "compare_by_batch",
           "acceptance", "whatif", "schedule", "latency",
           "Runs", "Baseline", "TABLES", "EaglelogError",
           "InputError", "NoRecordsError", "__version__"]
