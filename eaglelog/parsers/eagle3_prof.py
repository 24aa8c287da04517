"""EAGLE3_PROF per-phase profile blocks (eagle3_prof.md).

A block is a header line followed by indented lines: phases (any label), TOTAL, Accept len and
Eff tok/s.  ``BlockAssembler`` is fed every line that follows a header, in file order, and groups
lines by the rank key of their logger prefix so that blocks of interleaved ranks are kept apart.
A block ends at the first non-indented line of its own rank key (any line for print() blocks), a
blank line (print() blocks), a new header of the same rank, or the end of input.  A block that
lacks TOTAL, Accept len or Eff tok/s is emitted with complete=False; nothing is merged or dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .prefix import Prefix, split_tags

# ASCII digits (re.ASCII below), at most 40 characters as the C accelerator reads them: a longer
# number (or inf/nan) is no number of the patch's printf and its line is reported
_NUM = r"[-+]?(?:\d{1,30}(?:\.\d{0,30})?|\.\d{1,30})"
# the mode is everything between the comma and ')', stripped by parse_header (a lazy mode
# between two \s* was quadratic in the spaces of a header cut before its ')')
HEADER_RX = re.compile(r"EAGLE3_PROF\s*\(\s*(?P<cycles>\d+)\s+cycles?\s*,\s*(?P<tokens>\d+)\s+tok"
                       r"(?:ens)?\s*(?:,(?P<mode>[^)]*))?\)", re.ASCII)
# the label runs to the first colon (stripped by _add): greedy, so that a long line without a
# colon fails in linear time (a lazy label followed by [ \t]* was quadratic in the line's
# spaces: a 300 KB padded line took minutes, issue 13's fuzz); no control character (NUL, ESC,
# NEL …: a damaged line, reported, never a phase name echoed to a terminal)
_CTL = "\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f"
PHASE_RX = re.compile(r"^[ \t]+(?P<label>[^\s:" + _CTL + r"][^:" + _CTL + r"]*):[ \t]*(?P<ms>"
                      + _NUM + r")[ \t]*ms/cyc(?:le)?(?:[ \t]*\([ \t]*(?P<pct>" + _NUM +
                      r")[ \t]*%[ \t]*\))?[ \t]*$", re.ASCII)
VALUE_RX = re.compile(r"^[ \t]+(?P<label>Accept len|Eff tok/s)[ \t]*:[ \t]*(?P<v>" + _NUM +
                      r")[ \t]*$", re.ASCII)


def half_ulp(text: str) -> float:
    """Half a unit in the last printed place: the rounding error of a printed number."""
    dot = text.find(".")
    return 0.5 * 10.0 ** -(len(text) - dot - 1) if dot >= 0 else 0.5


@dataclass
class Block:
    line_no: int
    prefix: Prefix
    cycles: int
    tokens: int
    mode: str | None
    phases: list[tuple[int, str, float, float | None, str, str | None]] = field(
        default_factory=list)
    total: tuple[float, str] | None = None
    accept: tuple[float, str] | None = None
    eff: tuple[float, str] | None = None
    end_line: int = 0
    startup: int = 0

    @property
    def complete(self) -> bool:
        return self.total is not None and self.accept is not None and self.eff is not None

    def identity_problems(self) -> list[str]:
        """Checks eagle3_prof.md's identities with the rounding tolerance of the printed digits."""
        out: list[str] = []
        if not self.complete:
            return out
        total, t_txt = self.total
        h_t = half_ulp(t_txt)
        if self.phases:
            s = sum(p[2] for p in self.phases)
            tol = h_t + sum(half_ulp(p[4]) for p in self.phases) + 1e-9
            if abs(s - total) > tol:
                out.append(f"TOTAL {t_txt} ms/cyc != sum of phases {s:.4g} ms/cyc")
            if total > 0:
                for _, label, ms, pct, ms_txt, pct_txt in self.phases:
                    if pct is None:
                        continue
                    want = 100.0 * ms / total
                    tol = half_ulp(pct_txt) + 100.0 * (half_ulp(ms_txt) / total +
                                                       ms * h_t / total ** 2) + 1e-9
                    if abs(pct - want) > tol:
                        out.append(f"{label}: {pct_txt}% != 100*{ms_txt}/{t_txt} = {want:.3g}%")
        accept, a_txt = self.accept
        if self.cycles > 0:
            want = self.tokens / self.cycles
            if abs(accept - want) > half_ulp(a_txt) + 1e-9:
                out.append(f"Accept len {a_txt} != {self.tokens} tok / {self.cycles} cycles "
                           f"= {want:.4g}")
        eff, e_txt = self.eff
        if total > 0:
            want = 1000.0 * accept / total
            tol = half_ulp(e_txt) + 1000.0 * (half_ulp(a_txt) / total +
                                              accept * h_t / total ** 2) + 1e-9
            if abs(eff - want) > tol:
                out.append(f"Eff tok/s {e_txt} != 1000*{a_txt}/{t_txt} = {want:.4g}")
        return out

    def record(self) -> dict:
        rec = {
            "_date": self.prefix.date, "_time": self.prefix.time, "ranks": self.prefix.tags,
            "mode": self.mode, "cycles": self.cycles, "tokens": self.tokens,
            "total_ms": self.total[0] if self.total else None,
            "accept_len": self.accept[0] if self.accept else None,
            "eff_tok_s": self.eff[0] if self.eff else None,
            "complete": self.complete, "n_phases": len(self.phases),
            # Scanner.finish rounds the column to 9 decimals (a sum of printed numbers, not a
            # float-noise artefact), for the C accelerator's rows too
            "phase_sum_ms": sum(p[2] for p in self.phases) if self.phases else None,
            "end_line": self.end_line,
        }
        rec.update(split_tags(self.prefix.tags))
        return rec

    def phase_records(self) -> list[dict]:
        return [{"line_no": ln, "block": self.line_no, "phase": label, "ms_per_cycle": ms,
                 "pct": pct} for ln, label, ms, pct, _, _ in self.phases]


def parse_header(body: str) -> tuple[int, int, str | None] | None:
    m = HEADER_RX.search(body)
    if not m:
        return None
    mode = m.group("mode")
    if max(len(m.group("cycles")), len(m.group("tokens"))) > 18:   # beyond a 64-bit column
        return None
    mode = mode.strip() if mode else None
    if mode and not mode.isprintable():    # a control character: a damaged header, reported
        return None
    return int(m.group("cycles")), int(m.group("tokens")), mode or None


class BlockAssembler:
    """Stateful grouping of block lines; ``done`` collects finished blocks in closing order."""

    def __init__(self) -> None:
        self.open: dict[str | None, Block] = {}
        self.done: list[Block] = []

    def start(self, line_no: int, prefix: Prefix, header: tuple[int, int, str | None]) -> None:
        key = prefix.rank_key()
        if key in self.open:
            self._close(key)
        if key is not None and None in self.open:  # any non-block line ends a print() block
            self._close(None)
        cycles, tokens, mode = header
        self.open[key] = Block(line_no, prefix, cycles, tokens, mode, end_line=line_no)

    def feed(self, line_no: int, prefix: Prefix, body: str) -> str:
        """Offer a line that is not a header.  Returns 'block' when it belonged to an open block,
        'unknown' when it was an indented line of a block that matched no known shape (kept in
        the block, reported), or 'other' when it is not a block line (it may end blocks)."""
        key = prefix.rank_key()
        block = self.open.get(key)
        indented = body[:1] in (" ", "\t") and body.strip() != ""
        if block is not None and indented:
            block.end_line = line_no
            if not self._add(block, line_no, body):
                return "unknown"
            return "block"
        # a non-block line: ends the block of its own rank key, and any print() block
        if block is not None:
            self._close(key)
        if key is not None and None in self.open:
            self._close(None)
        return "other"

    def blank(self) -> None:
        if None in self.open:
            self._close(None)

    def finish(self) -> None:
        for key in list(self.open):
            self._close(key)

    def _close(self, key) -> None:
        self.done.append(self.open.pop(key))

    @staticmethod
    def _add(block: Block, line_no: int, body: str) -> bool:
        m = PHASE_RX.match(body)
        if m:
            label, ms_txt, pct_txt = m.group("label").strip(), m.group("ms"), m.group("pct")
            if label == "TOTAL":
                block.total = (float(ms_txt), ms_txt)
            else:
                block.phases.append((line_no, label, float(ms_txt),
                                     float(pct_txt) if pct_txt is not None else None,
                                     ms_txt, pct_txt))
            return True
        m = VALUE_RX.match(body)
        if m:
            v = (float(m.group("v")), m.group("v"))
            if m.group("label") == "Accept len":
                block.accept = v
            else:
                block.eff = v
            return True
        return False
