"""SGLang's logger prefix and the wrappers collectors put in front of it (sglang.md §1).

``read_prefix(text)`` takes everything before a record's body and returns the timestamp parts and
rank tags of the LAST bracket that fits SGLang's grammar; earlier brackets and timestamps belong to
wrappers (collector, docker, Ray).  With no SGLang bracket, a wrapper's date-time is used when one
is there (host frameworks that re-format SGLang's records).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

ANSI_RX = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BRACKET_RX = re.compile(
    r"\[(?:(?P<date>\d{4}-\d{2}-\d{2}) )?(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3}))?"
    r"(?P<tags>(?: [A-Z][A-Z_]*\d{1,9})*)\]")   # a rank of 10 digits is no SGLang rank
TAG_RX = re.compile(r"([A-Z][A-Z_]*?)(\d+)")
WRAPPER_TIME_RX = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})"
                             r"(?:[.,](?P<frac>\d+))?")


@dataclass(frozen=True)
class Prefix:
    date: str | None  # YYYY-MM-DD, None for time-only prefixes
    time: str | None  # HH:MM:SS[.ffffff]
    tags: str | None  # e.g. "DP1 TP0"; None when the bracket has no tags or there is no bracket
    bracket: bool     # an SGLang bracket was found

    def rank_key(self) -> str | None:
        """Key that groups lines of one process: tags text, '' for an untagged bracket, None
        when the line has no SGLang bracket (print() output)."""
        if not self.bracket:
            return None
        return self.tags or ""


NO_PREFIX = Prefix(None, None, None, False)


def strip_ansi(text: str) -> str:
    return ANSI_RX.sub("", text) if "\x1b" in text else text


_ONLY_BRACKET = re.compile(BRACKET_RX.pattern + r" ?")
_PREFIX_CACHE: dict[str, Prefix] = {}


def read_prefix(text: str) -> Prefix:
    # the common case, a lone SGLang bracket: one anchored match; its result is memoised
    # (many lines share the same second and tags)
    hit = _PREFIX_CACHE.get(text)
    if hit is not None:
        return hit
    m = _ONLY_BRACKET.fullmatch(text)
    if m is not None:
        t = m.group("time")
        if m.group("ms"):
            t += "." + m.group("ms")
        p = Prefix(m.group("date"), t, m.group("tags").strip() or None, True)
        if len(_PREFIX_CACHE) > 4096:
            _PREFIX_CACHE.clear()
        _PREFIX_CACHE[text] = p
        return p
    last = None
    if "[" in text:
        for last in BRACKET_RX.finditer(text):
            pass
    if last is not None:
        t = last.group("time")
        if last.group("ms"):
            t += "." + last.group("ms")
        tags = last.group("tags").strip() or None
        return Prefix(last.group("date"), t, tags, True)
    w = WRAPPER_TIME_RX.search(text)
    if w:
        t = w.group("time")
        if w.group("frac"):
            t += "." + w.group("frac")[:6]
        return Prefix(w.group("date"), t, None, False)
    return NO_PREFIX


def split_tags(tags: str | None) -> dict[str, int]:
    """'DP1 TP0' -> {'dp': 1, 'tp': 0}; unknown tag names are kept under their lower-case name."""
    if not tags:
        return {}
    return {name.lower(): int(num) for name, num in TAG_RX.findall(tags)}


def split_bracketed(line: str) -> tuple[Prefix, str]:
    """For lines without a known marker (EAGLE3_PROF continuation lines): the prefix and the body
    after the last SGLang bracket and its single following space."""
    last = None
    if "[" in line:
        for last in BRACKET_RX.finditer(line):
            pass
    if last is None:
        return NO_PREFIX, line
    body = line[last.end():]
    if body.startswith(" "):
        body = body[1:]
    return read_prefix(line[:last.end()]), body
