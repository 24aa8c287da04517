"""Range-checked number converters shared by the parsers (issue 13, items 3 and 4).

A number printed by a logger or a benchmark script is ASCII digits.  Python's ``int()`` and
``float()`` also take Arabic-Indic and full-width digits, ``1_000``, ``inf``, ``nan``, and
``1e400`` (which becomes infinity); no engine prints those, so here they are not numbers.  Every
converter takes the printed text (or a value json.loads made of it) and returns the number, or
raises ValueError: the caller then reports a bad value and keeps the record with that value NA,
or, when the value is essential to the record, reports the line.  Nothing else is raised.

* ``to_int``: an integer within 64 bits (the Int64 columns); an integral float from JSON
  (``16384.0``) is accepted, a fractional one is not;
* ``to_int32``: a count small by nature (batch size, ranks, steps): 0 … MAX_COUNT (10^6; a
  column of 32 bits holds it);
* ``to_float``: a finite float (an exponent allowed);
* ``to_measure``: what a logger measures (a rate, a length, a time, a share): finite, 0 …
  MAX_MEASURE (10^12; ``gen throughput: 1e308`` is no rate, and would overflow the models);
* ``to_floats``: a printed tuple or list of floats, ``(0.833, 0.606, 0.379)`` or ``0.1 0.2``;
* ``Reader``: converts the captured texts of one record, collecting what it could not read.
"""
from __future__ import annotations

import math
import re

I64 = 1 << 63
I32 = 1 << 31
# physically absurd beyond these (issue 36, item 8): no server runs a batch of 10^6 requests,
# 10^6 ranks or draft steps, and no logged rate, length or time reaches 10^12 — such a value
# is a damaged line, reported at its line, not a number for the rate model (where
# '#running-req: 2147483647' had sized arrays of exbibytes).  _fastscan.c holds the same bounds.
MAX_COUNT = 1_000_000
MAX_MEASURE = 1e12
INT_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)
FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_BLANKS = " \t"


def to_int(v) -> int:
    """An integer as printed (or read from JSON): ASCII digits, within 64 bits."""
    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, float):
        if not math.isfinite(v) or v != int(v):
            raise ValueError(v)
        v = int(v)
    elif not isinstance(v, int):
        if not isinstance(v, str):
            raise ValueError(v)
        t = v.strip(_BLANKS)
        if len(t) > 40 or not INT_TEXT.fullmatch(t):
            raise ValueError(v)
        v = int(t)
    if not -I64 <= v < I64:
        raise ValueError(v)
    return v


def to_int32(v) -> int:
    """A count small by nature (a batch size, a rank, a number of steps): 0 … MAX_COUNT."""
    x = to_int(v)
    if not 0 <= x <= MAX_COUNT:
        raise ValueError(v)
    return x


def to_float(v) -> float:
    """A finite number: ASCII digits, an optional exponent; inf, nan and texts that overflow to
    infinity (1e400) are not numbers."""
    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, (int, float)):
        try:
            x = float(v)
        except OverflowError:        # a JSON integer of 400 digits
            raise ValueError(v) from None
    elif isinstance(v, str):
        t = v.strip(_BLANKS)
        if len(t) > 400 or not FLOAT_TEXT.fullmatch(t):
            raise ValueError(v)
        x = float(t)
    else:
        raise ValueError(v)
    if not math.isfinite(x):
        raise ValueError(v)
    return x


# server_args keys that are counts: the analyses size arrays and models from them (whatif a
# position per draft step, schedule a K per step), so a value must be a whole number in range
MAX_DRAFT = 1024          # draft steps, topk, draft tokens: no drafter runs a thousand
CONFIG_COUNTS = {"speculative_num_steps": MAX_DRAFT, "speculative_eagle_topk": MAX_DRAFT,
                 "speculative_num_draft_tokens": MAX_DRAFT, "tp_size": MAX_COUNT,
                 "dp_size": MAX_COUNT, "pp_size": MAX_COUNT, "ep_size": MAX_COUNT}


def config_count_problem(key: str, v) -> str | None:
    """Why a server_args value cannot be the count its key names ('speculative_num_steps=2.5',
    '=inf', '=-1', '=9223372036854775807'), or None when it can (or the key is no count, or the
    value is None).  The caller reports the problem and leaves the value out."""
    top = CONFIG_COUNTS.get(key)
    if top is None or v is None:
        return None
    x = v
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and math.isfinite(v) and v == int(v):
            x = int(v)
        else:
            return f"bad value for {key}: {str(v)[:40]!r} is not a whole number"
    if not 0 <= x <= top:
        return f"bad value for {key}: {str(v)[:40]} is out of range 0 … {top}"
    return None


def to_measure(v) -> float:
    """A measured quantity as a logger prints it (a rate, an accept length, a time, a usage):
    finite, not negative, at most MAX_MEASURE."""
    x = to_float(v)
    if not 0.0 <= x <= MAX_MEASURE:          # (-0.0 passes, as 0)
        raise ValueError(v)
    return x


_SPLIT = re.compile(r"[,\s]+", re.ASCII)


def to_floats(text: str) -> list[float]:
    """The numbers of a printed tuple, ``(a, b, c)`` or ``a b c`` (brackets optional; empty
    gives []); one unreadable element raises ValueError."""
    t = text.strip().strip("()[]").strip()
    if not t:
        return []
    return [to_float(p) for p in _SPLIT.split(t) if p]


def is_number_text(text: str) -> bool:
    """Whether a printed cell reads as a number (the same rule as to_float)."""
    try:
        to_float(text)
    except ValueError:
        return False
    return True


class Reader:
    """Converts the captured values of one record; what it cannot read is noted in ``bad``
    (one message each, for a bad_value report) and comes back as None."""

    __slots__ = ("bad",)

    def __init__(self) -> None:
        self.bad: list[str] = []

    def __call__(self, value, conv, name: str):
        if value is None:
            return None
        try:
            return conv(value)
        except ValueError:
            self.bad.append(f"bad value {_show(value)} for {name}")
            return None

    def floats(self, text: str | None, name: str) -> list[float] | None:
        if text is None:
            return None
        try:
            return to_floats(text)
        except ValueError:
            self.bad.append(f"bad value {_show(text)} for {name}")
            return None


def _show(value) -> str:
    t = value if isinstance(value, str) else repr(value)
    return repr(t[:30] + ("…" if len(t) > 30 else ""))


# CPython 3.11's AST constructor keeps its recursion depth in per-interpreter state: two threads
# compiling at once (the parallel scan's) can raise "SystemError: AST constructor recursion
# depth mismatch".  Every parse of Python literal text goes through here, one at a time.
import ast as _ast
import json as _json
import threading as _threading

_AST_LOCK = _threading.Lock()


def literal_eval(node_or_text):
    """ast.literal_eval, serialised across threads."""
    with _AST_LOCK:
        return _ast.literal_eval(node_or_text)


_PY_TOKEN = re.compile(r"'[^'\\\"]*'|\b(?:None|True|False)\b")
_JSON_WORD = {"None": "null", "True": "true", "False": "false"}


def _to_json(m) -> str:
    t = m.group(0)
    return '"' + t[1:-1] + '"' if t[0] == "'" else _JSON_WORD[t]


def literal_eval_fast(text: str):
    """literal_eval of a Python literal, through json when the text is plain enough that the
    two read it alike: no backslash and no double quote anywhere (so every string is a
    single-quoted run without escapes), None/True/False as words outside strings.  Anything
    json refuses (tuples, int keys, inf, a cut-short text) goes to literal_eval."""
    if "\\" not in text and '"' not in text:
        # (every quote then opens or closes a string: without a word to rename, the quotes
        # alone change — one str.replace, not a callback per string of a Finish line)
        plain = "None" not in text and "True" not in text and "False" not in text
        try:
            return _JSON.decode(text.replace("'", '"') if plain else
                                _PY_TOKEN.sub(_to_json, text))
        except ValueError:
            pass
    return literal_eval(text)


def _not_python(word: str):
    raise ValueError(f"{word} is JSON, not a Python literal")    # NaN, Infinity: no fast path


# json.loads(text, parse_constant=_not_python) is this decoder's decode(text), but for a
# decoder made per call (and a BOM refused by name: ValueError either way)
_JSON = _json.JSONDecoder(parse_constant=_not_python)


def parse_expr(text: str):
    """ast.parse(text, mode='eval'), serialised across threads."""
    with _AST_LOCK:
        return _ast.parse(text, mode="eval")
