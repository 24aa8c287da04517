"""Log families and the registry used by ``--engine``.

A family says how to sniff its logs and how to scan them.  ``sglang`` logs carry SGLang's
scheduler and request lines and, when the EAGLE-3 profiler patch is in, EAGLE3_PROF blocks
(eagle3_prof.md); ``vllm`` logs carry vLLM's stat-logger, spec-decoding, stage-time and
iteration lines (vllm.md).

``--engine auto`` sniffs the first chunk (1 MiB): one family's markers pick that family; both
families' markers pick a scanner that runs both parsers (``sglang+vllm``), so each line lands in
its own family's tables.  A family whose first line comes after the first MiB is not looked for:
name it with ``--engine``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from .scan import MARKERS, Scanner
from . import vllm as _vllm


@dataclass(frozen=True)
class Engine:
    name: str
    description: str
    markers: re.Pattern = MARKERS
    make: Callable = Scanner
    tables: tuple[str, ...] | None = ("prof", "prof_phases", "decode", "prefill", "server_args",
                                      "requests")   # what its logs fill (None: every table)

    def sniff(self, head: bytes) -> bool:
        return self.markers.search(head) is not None

    def scanner(self, source: str, base_date=None, columns=None):
        return self.make(source, base_date, columns=columns)


ENGINES: dict[str, Engine] = {
    "sglang": Engine("sglang", "SGLang server logs: 'Decode batch' / 'Prefill batch' lines, "
                     "'server_args=', 'Finish:' request lines, EAGLE3_PROF blocks"),
    "vllm": Engine("vllm", "vLLM server logs: 'Speculative metrics:' / 'SpecDecoding metrics:', "
                   "'Avg prompt throughput:', 'SpecDecodeWorker stage times:', 'Iteration(N):' "
                   "lines", _vllm.MARKERS, _vllm.VllmScanner, _vllm.OWN_TABLES),
}
# both families in one input (chosen by --engine auto only)
MIXED = Engine("sglang+vllm", "SGLang and vLLM lines in one log", MARKERS, _vllm.MixedScanner,
               None)


def family_tables(name: str | None) -> tuple[str, ...] | None:
    """The tables an engine's logs fill (None: unknown engine, every table)."""
    try:
        return get_engine(name).tables if name else None
    except KeyError:
        return None


def get_engine(name: str) -> Engine:
    """A registered engine, or the mixed one, by name (the table cache stores the name)."""
    return MIXED if name == MIXED.name else ENGINES[name]


def choose_engine(name: str, head: bytes) -> Engine:
    """``auto`` picks the engine whose markers appear in the first chunk (both families: the
    mixed scanner); with none, the first engine is used (and an input with no records is
    reported, naming every family)."""
    if name != "auto":
        return get_engine(name)
    found = [eng for eng in ENGINES.values() if eng.sniff(head)]
    if len(found) > 1:
        return MIXED
    return found[0] if found else next(iter(ENGINES.values()))
