"""The EAGLE3_PROF blocks of one input as numpy columns, in line order: what the cycle
breakdown (summary.py) and the profiler's cycle (breakeven.prof_cycle) read of them.  No
DataFrame is built: a small log's summary asked the prof table for a frame of its rows, a
filter of it and a sort of that, each costing more than the handful of blocks in it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import ParsedLog


@dataclass(frozen=True)
class ProfBlocks:
    line: np.ndarray           # int64 line of the block's header
    cycles: np.ndarray         # float (NaN: not printed)
    total_ms: np.ndarray       # TOTAL ms per cycle
    accept_len: np.ndarray
    complete: np.ndarray       # bool: every line of the block read
    sync: np.ndarray           # bool: sync mode (a block without a mode is not)
    no_mode: np.ndarray        # bool: the header prints no mode
    bad_total: np.ndarray      # bool: complete, but its TOTAL is 0 or less (a damaged value,
                               # which its identity warning names): no cycle to weigh

    @classmethod
    def of(cls, log: ParsedLog, source: str) -> "ProfBlocks":
        """The blocks of ``source``, read once per ParsedLog (the summary and its break-even
        both ask)."""
        memo = log.__dict__.setdefault("_prof_blocks", {})
        if source not in memo:
            memo[source] = cls._read(log, source)
        return memo[source]

    @classmethod
    def _read(cls, log: ParsedLog, source: str) -> "ProfBlocks":
        line = log.values(source, "prof", "line_no", np.int64, -1)
        order = np.argsort(line, kind="stable")
        mode = log.values(source, "prof", "mode", object)[order]
        no_mode = np.array([not isinstance(m, str) for m in mode], dtype=bool)
        total = log.values(source, "prof", "total_ms")[order]
        complete = log.values(source, "prof", "complete", bool, False)[order]
        with np.errstate(invalid="ignore"):
            bad_total = complete & ~(total > 0)
        out = cls(line[order], log.values(source, "prof", "cycles")[order], total,
                  log.values(source, "prof", "accept_len")[order], complete,
                  mode == "sync", no_mode, bad_total)
        for f in cls.__dataclass_fields__:      # (shared by every caller: read-only)
            getattr(out, f).setflags(write=False)
        return out

    def __len__(self) -> int:
        return len(self.line)

    def usable(self, sync: bool = False) -> np.ndarray:
        """The complete blocks of one mode (no sync, or ``sync``) whose TOTAL is a cycle."""
        return self.complete & (self.sync if sync else ~self.sync) & ~self.bad_total

    def bad_total_note(self) -> str | None:
        k = int(self.bad_total.sum())
        return None if not k else (f"{k} EAGLE3_PROF block(s) with a TOTAL of 0 ms/cyc or less "
                                   "left out (a damaged value: see its identity warning)")

    def take(self, keep: np.ndarray) -> "ProfBlocks":
        """The blocks where ``keep`` (a mask), in line order."""
        return ProfBlocks(*(getattr(self, f)[keep] for f in self.__dataclass_fields__))
