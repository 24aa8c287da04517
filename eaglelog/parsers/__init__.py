"""Log families and the registry used by ``--engine``.

A family says how to sniff its logs and how to scan them.  Today there is one engine, ``sglang``,
whose logs carry SGLang's scheduler and request lines and, when the EAGLE-3 profiler patch is in,
EAGLE3_PROF blocks (eagle3_prof.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from .scan import MARKERS, Scanner


@dataclass(frozen=True)
class Engine:
    name: str
    description: str

    def sniff(self, head: bytes) -> bool:
        return MARKERS.search(head) is not None

    def scanner(self, source: str, base_date=None, columns=None) -> Scanner:
        return Scanner(source, base_date, columns=columns)


ENGINES: dict[str, Engine] = {
    "sglang": Engine("sglang", "SGLang server logs: 'Decode batch' / 'Prefill batch' lines, "
                     "'server_args=', 'Finish:' request lines, EAGLE3_PROF blocks"),
}


def choose_engine(name: str, head: bytes) -> Engine:
    """``auto`` picks the first engine whose markers appear in the first chunk; with none, the
    first engine is used (and an input with no records is reported, naming every family)."""
    if name != "auto":
        return ENGINES[name]
    for eng in ENGINES.values():
        if eng.sniff(head):
            return eng
    return next(iter(ENGINES.values()))
