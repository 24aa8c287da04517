"""Mutation checks shared by tests/test_llamacpp.py, test_trtllm.py and test_bench.py (issue 13,
items 3 and 4): a valid line with one number replaced by a value no engine prints, or cut at
any position, never makes a parser raise, and is either a row or a report; a value the parser
could not read never reaches a row silently."""
from __future__ import annotations

import math
import re

from eaglelog.parsers import others
from eaglelog.report import records

# what no engine prints where a number belongs (non-ASCII digits, non-finite, overflow, Python
# literal syntax, a second decimal point)
BAD_NUMBERS = ("\u0663", "\uff13\uff12", "inf", "nan", "-inf", "1e400", "1_000", "3.4.5",
               "Infinity", "NaN")
HUGE = "12345678901234567890123456"       # beyond 64 bits
BIG = "1.7e308"                           # a float whose sums and products overflow
VALID_BUT_EXTREME = (HUGE, BIG)
NUMBER = re.compile(r"(?<![\w.])-?[0-9]+(?:\.[0-9]+)?(?![\w.])")
REPORTS = {"bad_value", "malformed", "truncated", "incomplete_block"}


class RowScanner(others.OthersScanner):
    """The scanner without its pandas step: the rows as the parsers made them (thousands of
    mutated inputs are scanned; the typed frames are checked by the fixtures)."""

    def flush(self) -> None:
        pass

    def finish_rows(self) -> dict[str, list[dict]]:
        self._close_block()
        self._close_offline()
        self._report_unfinished()
        return self.rows


def scan(text: str, kinds=None, frames: bool = False):
    """Rows (NaN as None) per table and the diagnostics of one scan of ``text`` (``frames``:
    through the typed tables, as eaglelog.parse gives them)."""
    if frames:
        sc = others.OthersScanner("x", kinds=kinds)
        sc.feed(text.encode("utf-8", "replace"))
        out = sc.finish()
        rows = {t: [_plain(r) for r in records(out[t])] for t in others.TABLES_HERE}
        return rows, sc.diags
    sc = RowScanner("x", kinds=kinds)
    sc.feed(text.encode("utf-8", "replace"))
    rows = {t: [_plain({k: v for k, v in r.items() if k != "source"}) for r in rs]
            for t, rs in sc.finish_rows().items()}
    return rows, sc.diags


def _plain(r: dict) -> dict:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}


def finite(rows) -> bool:
    """No float of any row is infinite or NaN-but-not-None; no Int64 beyond 64 bits."""
    for rs in rows.values():
        for r in rs:
            for v in r.values():
                if isinstance(v, float) and not math.isfinite(v):
                    return False
                if isinstance(v, int) and not -(1 << 63) <= v < (1 << 63):
                    return False
    return True


def substitutions(line: str):
    """(position, mutated line) for every number token of the line and every bad number."""
    for m in NUMBER.finditer(line):
        for bad in BAD_NUMBERS + VALID_BUT_EXTREME:
            yield m.start(), bad, line[:m.start()] + bad + line[m.end():]


def _reports(diags) -> set:
    return {(d.line_no, d.kind, d.message) for d in diags if d.kind in REPORTS}


def check_substitutions(line: str, kinds=None) -> int:
    """check_block_substitutions of one line."""
    return check_block_substitutions([line], kinds)


def check_block_substitutions(lines: list[str], kinds=None) -> int:
    """Every bad-number substitution in every line of ``lines`` (scanned together): no
    exception, no non-finite value out, and either a new report or the rows of the clean text
    (the number was not a value, e.g. a slot id).  Returns the number of cases."""
    clean_rows, clean_diags = scan("\n".join(lines) + "\n", kinds)
    before = _reports(clean_diags)
    n = 0
    for i, line in enumerate(lines):
        for _, bad, mutated in substitutions(line):
            text = "\n".join(lines[:i] + [mutated] + lines[i + 1:]) + "\n"
            rows, diags = scan(text, kinds)
            n += 1
            assert finite(rows), (mutated, rows)
            if bad in VALID_BUT_EXTREME:   # a valid float: only finiteness and Int64 must hold
                continue
            if not _reports(diags) - before:
                assert _same(rows, clean_rows), (mutated, rows, clean_rows)
    return n


def _same(a, b) -> bool:
    strip = lambda rs: [{k: v for k, v in r.items() if k not in ("extra", "label")} for r in rs]
    return all(strip(a[t]) == strip(b[t]) for t in a)


def check_truncations(line: str, parse, marker) -> int:
    """The line cut at every position: the parser never raises, and a cut line that still
    holds the marker is a record or a report."""
    n = 0
    for i in range(len(line) + 1):
        cut = line[:i]
        res = parse(cut)
        n += 1
        if marker.search(cut.encode("utf-8", "replace")):
            assert res.record is not None or res.problems, repr(cut)
        if res.record is not None:
            for v in res.record.values():
                assert not (isinstance(v, float) and not math.isfinite(v)), (cut, res.record)
    return n


def check_scan_truncations(line: str, kinds=None, step: int = 1) -> int:
    """The same through the scanner, with and without the final newline: a row or a report."""
    n = 0
    marker = others.markers(kinds or others.KIND_FAMILY)
    for i in range(0, len(line) + 1, step):
        cut = line[:i]
        if not marker.search(cut.encode("utf-8", "replace")):
            continue
        for text in (cut + "\n", cut):
            rows, diags = scan(text, kinds)
            n += 1
            assert finite(rows)
            assert any(rows.values()) or diags, repr(text)
    return n
