"""eaglelog: answers about speculative decoding (EAGLE-3, MTP, n-gram) from LLM serving logs.

    >>> import eaglelog
    >>> log = eaglelog.parse("server.log")
    >>> log.decode[["timestamp", "running_req", "accept_len", "gen_throughput"]]
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
    raise AttributeError(name)

__all__ = ["parse", "ParsedLog", "SourceInfo", "TABLES", "EaglelogError", "InputError",
           "NoRecordsError", "__version__"]
