"""The plain tables of the summary's screen, drawn without tabulate.

tabulate 0.10 asks ``importlib.metadata`` for its own version when it is imported: with
``email`` and ``html`` that is 30–40 ms of a 0.3 s summary on this machine, for tables of a
few rows.  ``simple_table`` draws what ``tabulate(rows, headers, tablefmt="simple",
disable_numparse=True)`` draws — a column as wide as its widest cell and at least its header
and two, cells stripped (headers not) and left-aligned, two spaces between columns, a line of
dashes under the headers, no trailing blanks — for cells that are text, ints or None on one
line, and hands anything else to tabulate itself (tests/test_table_text.py holds the two to
the same text).
"""
from __future__ import annotations

MIN_PADDING = 2          # tabulate's: a header is padded by this much at least


def simple_table(rows, headers) -> str:
    heads = [h if type(h) is str else None for h in headers]
    cells = [[_text(v) for v in row] for row in rows]
    if None in heads or any(len(r) != len(heads) or None in r for r in cells):
        return _by_tabulate(rows, headers)
    if any(not _plain(h) for h in heads):        # (headers are not stripped: tabulate's)
        return _by_tabulate(rows, headers)
    widths = [max([len(h) + MIN_PADDING] + [len(r[i]) for r in cells])
              for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    return "\n".join(lines)


def draw(rows, headers, tablefmt: str = "simple") -> str:
    """tabulate(rows, headers, tablefmt, disable_numparse=True): the simple format drawn here,
    the others (github: markdown) by tabulate."""
    if tablefmt == "simple":
        return simple_table(rows, headers)
    from tabulate import tabulate
    return tabulate(rows, headers=headers, tablefmt=tablefmt, disable_numparse=True)


def _text(v) -> str | None:
    """A cell as tabulate shows it (None: not a kind this draws)."""
    if v is None:
        return ""
    if type(v) is int:
        return str(v)
    if type(v) is not str:
        return None
    v = v.strip()
    return v if _plain(v) else None


def _plain(s: str) -> bool:
    """One line, no escape sequence, every character one column wide in tabulate's measure
    (its len(), unless wcwidth is installed: then only ASCII is taken as plain)."""
    if "\n" in s or "\r" in s or "\x1b" in s:
        return False
    return s.isascii() or not _WIDE


def _by_tabulate(rows, headers) -> str:
    from tabulate import tabulate
    return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def _wide_chars_mode() -> bool:
    """Whether tabulate would measure with wcwidth (installed): decided as tabulate decides,
    without importing tabulate."""
    import importlib.util
    return importlib.util.find_spec("wcwidth") is not None


_WIDE = _wide_chars_mode()
