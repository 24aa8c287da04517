"""What a speculative run is compared with (a light module: the CLI builds it before the scan).

``Baseline`` is re-exported by ``eaglelog.analysis.breakeven``, ``parse_plus_minus`` by
``eaglelog.stats``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .api import ParsedLog


@dataclass(frozen=True)
class Baseline:
    """What the run is compared with: a stated rate (``tok_s`` ± ``sd``) or a baseline log."""

    tok_s: float | None = None
    sd: float | None = None
    log: ParsedLog | None = None

    @property
    def label(self) -> str:
        if self.log is not None:
            return self.log.sources[0].name
        return f"{self.tok_s:g}" + (f"±{self.sd:g}" if self.sd else "") + " tok/s"


def parse_plus_minus(text: str) -> tuple[float, float | None]:
    """'90' -> (90, None); '90±3' or '90+-3' -> (90, 3)."""
    t = text.replace("+-", "±").replace("+/-", "±").strip()
    if "±" in t:
        a, b = t.split("±", 1)
        value, sd = float(a), float(b)
        if sd < 0:
            raise ValueError("the uncertainty after ± must be ≥ 0")
        return value, sd
    return float(t), None
