"""eaglelog: answers about speculative decoding (EAGLE-3, MTP, n-gram) from LLM serving logs.

    >>> import eaglelog
    >>> log = eaglelog.parse("server.log")
    >>> log.decode[["timestamp", "running_req", "accept_len", "gen_throughput"]]
"""
from .api import ParsedLog, SourceInfo, parse
from .errors import EaglelogError, InputError, NoRecordsError
from .schema import TABLES

__version__ = "0.1.0"

__all__ = ["parse", "ParsedLog", "SourceInfo", "TABLES", "EaglelogError", "InputError",
           "NoRecordsError", "__version__"]
