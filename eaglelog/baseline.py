"""What a speculative run is compared with (a light module: the CLI builds it before the scan).

``Baseline`` is re-exported by ``eaglelog.analysis.breakeven``, ``parse_plus_minus`` by
``eaglelog.stats``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .parsers.numbers import to_float, to_int32

if TYPE_CHECKING:
    from .api import ParsedLog


@dataclass(frozen=True)
class Baseline:
    """What the run is compared with: a stated per-stream rate (``tok_s`` ± ``sd``, at one
    batch size), a stated rate per batch size (``per_batch``: ((batch size, tok/s), …), exact),
    or a baseline log."""

    tok_s: float | None = None
    sd: float | None = None
    log: ParsedLog | None = None
    per_batch: tuple[tuple[int, float], ...] | None = None

    @property
    def label(self) -> str:
        if self.log is not None:
            return self.log.sources[0].name
        if self.per_batch:
            return ("running_req " + ", ".join(f"{b}: {v:g}" for b, v in self.per_batch)
                    + " tok/s")
        return f"{self.tok_s:g}" + (f"±{self.sd:g}" if self.sd else "") + " tok/s"

    @classmethod
    def from_text(cls, text: str) -> "Baseline":
        """'90', '90±3' (σ of the rate) or '1:90,8:70,32:40' (a rate per batch size); raises
        ValueError with a message naming what is wrong."""
        t = text.strip()
        if ":" in t:
            pairs = []
            for part in t.split(","):
                b, sep, v = part.partition(":")
                if not sep:
                    raise ValueError(f"{part.strip()!r} is not BATCH:TOK_S")
                try:
                    size, rate = to_int32(b.strip()), to_float(v.strip())
                except ValueError:
                    raise ValueError(f"{part.strip()!r} is not BATCH:TOK_S (an integer batch "
                                     "size and a rate)") from None
                if size < 1 or not math.isfinite(rate) or rate <= 0:
                    raise ValueError(f"{part.strip()!r}: the batch size must be ≥ 1 and the "
                                     "rate a finite number > 0")
                pairs.append((size, rate))
            if len({b for b, _ in pairs}) != len(pairs):
                raise ValueError("a batch size is given twice")
            return cls(per_batch=tuple(sorted(pairs)))
        try:
            value, sd = parse_plus_minus(t)
        except ValueError as e:
            raise ValueError("not a rate like 90, 90±3 or 1:90,8:70" +
                             (f" ({e})" if "uncertainty" in str(e) else "")) from None
        if not math.isfinite(value) or value <= 0 or (sd is not None and not math.isfinite(sd)):
            raise ValueError("the rate must be a finite number > 0 (and its ± a finite number)")
        return cls(tok_s=value, sd=sd)


def parse_plus_minus(text: str) -> tuple[float, float | None]:
    """'90' -> (90, None); '90±3' or '90+-3' -> (90, 3)."""
    t = text.replace("+-", "±").replace("+/-", "±").strip()
    if "±" in t:
        a, b = t.split("±", 1)
        value, sd = to_float(a.strip()), to_float(b.strip())
        if sd < 0:
            raise ValueError("the uncertainty after ± must be ≥ 0")
        return value, sd
    return to_float(t), None


def make_baseline(baseline_toks=None, baseline_log=None, *, engine: str = "auto",
                  base_date=None, required: bool = True):
    """The baseline of ``baseline_toks`` (90, '90±3', '1:90,8:70' or {1: 90, 8: 70}) or
    ``baseline_log`` (a path or a ParsedLog of a run without speculation); None when neither
    is given and ``required`` is false.  ValueError says what is wrong with a rate."""
    from .api import load

    if baseline_toks is not None and baseline_log is not None:
        raise ValueError("give baseline_toks or baseline_log, not both")
    if isinstance(baseline_toks, Baseline):
        return baseline_toks
    if baseline_toks is not None:
        if isinstance(baseline_toks, dict):
            baseline_toks = ",".join(f"{b}:{v}" for b, v in baseline_toks.items())
        return Baseline.from_text(str(baseline_toks))
    if baseline_log is not None:
        return Baseline(log=load(baseline_log, engine=engine, base_date=base_date))
    if required:
        raise ValueError("give the baseline: baseline_toks=90 (tokens/s of one request stream "
                         "without speculation) or baseline_log='base.log'")
    return None
