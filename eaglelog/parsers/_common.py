"""What the parsers of others.md share (llamacpp.py, trtllm.py, bench.py): the result of a line
parser, the bench-table record helpers (one definition of the derived columns), JSON reading
and writing that never lets NaN/Infinity through, and the base class of multi-line blocks.

A line parser is a pure function of one line that never raises; it returns a ``Parsed``:

* ``record`` None and ``problems`` empty: the line only looked like a record;
* ``record`` None and ``problems``: a record line that cannot become a row (reported as
  malformed, the first problem named);
* ``record``: a row; ``bad`` lists values that could not be read (the row keeps them NA, each
  reported as a bad value), ``cut`` says what is missing when the line was cut short (the row
  keeps the fields that survived, complete=False, reported), ``problems`` lists broken
  identities (warned, the row kept as printed).

Numbers go through numbers.py: ASCII digits, finite, in range (issue 13, items 3 and 4).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from .numbers import FLOAT_TEXT, INT_TEXT, to_float, to_int
from .scan import MARKERS


@dataclass
class Parsed:
    record: dict | None
    problems: list[str] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    cut: str | None = None


def not_a_record(why: str | None = None) -> Parsed:
    return Parsed(None, [why] if why else [])


def base(tool, engine, scope, fmt, **kw) -> dict:
    rec = {"tool": tool, "engine": engine, "scope": scope, "format": fmt}
    rec.update({k: v for k, v in kw.items() if v is not None})
    return rec


def derive(rec: dict) -> dict:
    """The comparable columns every tool gets from its counts (one definition each)."""
    drafts, acc, dt = rec.get("drafts"), rec.get("accepted_tokens"), rec.get("draft_tokens")
    if drafts and acc is not None:
        rec["accept_len_derived"] = 1 + acc / drafts
    if dt and acc is not None:
        rec["accept_rate_derived"] = acc / dt
    if drafts and dt is not None:
        rec["mean_draft_len"] = dt / drafts
    return rec


def positions(values) -> str | None:
    return json.dumps([round(v, 6) for v in values]) if values else None


def close(a, b, tol) -> bool:
    return a is None or b is None or abs(a - b) <= tol


def ratio(a, b):
    return a / b if a is not None and b else None


def cell_value(text: str):
    """A printed cell for an 'extra' JSON object: an int or a finite float when it reads as one
    (ASCII digits), None for n/a, else the text as printed ('inf' stays text)."""
    t = text.strip()
    if t.lower() in ("n/a", "na", "none", "-", ""):
        return None
    m = re.fullmatch(r"(\S+?)\s*(?:%|s|ms|tok/s|token/s)?", t)
    if m:
        num = m.group(1)
        try:
            if INT_TEXT.fullmatch(num):
                return to_int(num)
            if FLOAT_TEXT.fullmatch(num):
                return to_float(num)
        except ValueError:
            pass
    return t


def json_obj(line: str, at: int = 0):
    """The JSON object starting at the first '{' at or after ``at``, or None (invalid JSON,
    too deeply nested, or not an object)."""
    i = line.find("{", at)
    if i < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(line[i:])
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    return v


def dump_json(obj) -> str | None:
    """Strict JSON text of an 'extra'/'stats' object: NaN and infinities (json.loads reads them
    from 'NaN' and '1e400') become null, so every output is valid JSON."""
    if not obj:
        return None
    try:
        return json.dumps(_finite(obj), allow_nan=False, default=str)
    except (ValueError, RecursionError):
        return json.dumps(str(obj)[:200])


def flat(v, depth: int = 0) -> list:
    """The numbers of a nested JSON list (bools are not numbers)."""
    if isinstance(v, list) and depth < 8:
        return [x for item in v for x in flat(item, depth + 1)]
    return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else []


# ------------------------------------------------------------------------------- blocks
# lines of a logger (SGLang/vLLM/TRT-LLM prefixes) interleaved with a printed block: never a row
# of the block, and they do not end it either (the server-log scanner may read them)
INTERLEAVED = re.compile(
    rb"^\s*\[\d{4}-\d{2}-\d{2}[ T]\d|^\s*\[\d\d:\d\d:\d\d|^\s*\[\d\d/\d\d/\d{4}-|"
    rb"^(?:INFO|WARNING|DEBUG|ERROR|CRITICAL) \d\d-\d\d \d|" + MARKERS.pattern)


class Block:
    """An open multi-line record.  ``take(line)`` answers 'take' (the line belongs; go on),
    'end' (it belongs and closes the block) or 'reject' (the block ended before it).  Values a
    block cannot read go to ``bad`` as (line number, message); ``end_line`` is the number of the
    line being taken."""

    kind = ""
    name = "block"          # how a report names it

    def __init__(self, line_no: int) -> None:
        self.line_no = line_no
        self.end_line = line_no
        self.problems: list[str] = []          # block_line reports
        self.bad: list[tuple[int, str]] = []
        self.unterminated = False              # its last line had no newline

    def blank(self) -> bool:
        """A blank line: True keeps the block open."""
        return False

    def records(self) -> list[tuple[int, int, dict]]:
        return []

    def incomplete(self) -> str | None:
        return None

    def identity_problems(self) -> list[str]:
        return []

    def unread(self) -> str | None:
        """Why a block that gives no record was a record all the same (reported as malformed),
        or None."""
        return None

    def read(self, value, conv, name: str):
        """conv(value), or None with the bad value noted at the current line."""
        if value is None:
            return None
        try:
            return conv(value)
        except ValueError:
            t = value if isinstance(value, str) else repr(value)
            self.bad.append((self.end_line, f"bad value {t.strip()[:30]!r} for {name}"))
            return None
