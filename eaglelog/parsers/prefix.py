"""SGLang's logger prefix and the wrappers collectors put in front of it (sglang.md §1).

``read_prefix(text)`` takes everything before a record's body and returns the timestamp parts and
rank tags of the LAST bracket that fits SGLang's grammar; earlier brackets and timestamps belong to
wrappers (collector, docker, Ray).  With no SGLang bracket, a wrapper's date-time is used when one
is there (host frameworks that re-format SGLang's records), but never the docker or Kubernetes
stamp at a line's start: that is the wrapper's own clock (UTC), kept as ``Prefix.wrapper`` only
(its sub-second time: the rate model's clock where SGLang's prints whole seconds).
"""
from __future__ import annotations

import datetime as _dt
import functools
import re
from dataclasses import dataclass

ANSI_RX = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# ASCII digits only (re.ASCII): a logger prints no other digits; a bracket of other digits is
# found by the loose form below and reported as a bad timestamp
BRACKET_RX = re.compile(
    r"\[(?:(?P<date>\d{4}-\d{2}-\d{2}) )?(?P<time>\d{2}:\d{2}:\d{2})(?:[.,](?P<ms>\d{3}))?"
    r"(?P<tags>(?: [A-Z][A-Z_]*\d{1,9})*)\]", re.ASCII)   # a rank of 10 digits is no SGLang rank
TAG_RX = re.compile(r"([A-Z][A-Z_]*?)(\d+)", re.ASCII)
WRAPPER_TIME_RX = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})[ T](?P<time>\d{2}:\d{2}:\d{2})"
                             r"(?:[.,](?P<frac>\d+))?", re.ASCII)
# the same shapes with any Unicode digit: a prefix printed with full-width or other digits
_LOOSE_RX = re.compile(r"\[(?:(?P<date>\d{4}-\d{2}-\d{2}) )?(?P<time>\d{2}:\d{2}:\d{2})"
                       r"(?:[.,]\d{3})?(?: [A-Z][A-Z_]*\d+)*\]|"
                       r"(?P<wdate>\d{4}-\d{2}-\d{2})[ T](?P<wtime>\d{2}:\d{2}:\d{2})")
# an SGLang bracket whose time is damaged (the date read, the rest not a time): reported
_GARBLED_RX = re.compile(r"\[(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2}) (?P<time>[^\]\s]{1,16})",
                         re.ASCII)
_TIME_TEXT = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]{1,6})?", re.ASCII)
_DATE_TEXT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", re.ASCII)


@functools.lru_cache(maxsize=4096)
def valid_datetime(date: str | None, time: str | None) -> bool:
    """Whether a prefix's date (YYYY-MM-DD, or None) and time (HH:MM:SS[.ffffff], or None) name
    a real instant: ASCII digits, a calendar date, hours < 24, minutes and seconds < 60 (the
    timestamp columns cannot hold '14:00:92' or '2026-02-30')."""
    if time is not None:
        m = _TIME_TEXT.fullmatch(time)
        if m is None or int(m.group(1)) > 23 or int(m.group(2)) > 59 or int(m.group(3)) > 59:
            return False
    if date is not None:
        m = _DATE_TEXT.fullmatch(date)
        if m is None:
            return False
        try:
            _dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return False
        if int(m.group(1)) < 1678 or int(m.group(1)) > 2261:   # what datetime64 can hold
            return False
    return True


@dataclass(frozen=True)
class Prefix:
    date: str | None  # YYYY-MM-DD, None for time-only prefixes
    time: str | None  # HH:MM:SS[.ffffff]
    tags: str | None  # e.g. "DP1 TP0"; None when the bracket has no tags or there is no bracket
    bracket: bool     # an SGLang bracket was found
    wrapper: str | None = None   # 'YYYY-MM-DD HH:MM:SS.ffffff' of a wrapper's sub-second time
                                 # in front of the SGLang bracket (docker logs --timestamps, a
                                 # Kubernetes log file, a collector), in the wrapper's own clock

    def rank_key(self) -> str | None:
        """Key that groups lines of one process: tags text, '' for an untagged bracket, None
        when the line has no SGLang bracket (print() output)."""
        if not self.bracket:
            return None
        return self.tags or ""


NO_PREFIX = Prefix(None, None, None, False)


# a wrapper that stamps every line at its start: `docker logs --timestamps` (RFC 3339 with
# nanoseconds, then one space) and a Kubernetes (CRI) log file (the same, then the stream and
# a full/partial tag: 'stdout F '), sglang.md §1.3
_LEAD_RX = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}) "
                      r"(?:(?:stdout|stderr) (?P<tag>[FP]) )?", re.ASCII)


def cri_partial(line: str) -> bool:
    """Whether ``line`` is the first piece of a line a Kubernetes (CRI) log file split (at
    16 KiB: 'stdout P'); the pieces are not joined here (kubectl logs joins them)."""
    m = _LEAD_RX.match(line) if line[:1].isdigit() else None
    return m is not None and m.group("tag") == "P"


def strip_wrapper(line: str) -> str:
    """``line`` without a docker or Kubernetes stamp at its start: a print() line of an
    EAGLE3_PROF block ('  Draft steps: …', the blank line that ends it) is then what the block
    parser knows; a line without one is returned as it is."""
    if line[:1].isdigit():
        m = _LEAD_RX.match(line)
        if m:
            return line[m.end():]
    return line


def strip_ansi(text: str) -> str:
    return ANSI_RX.sub("", text) if "\x1b" in text else text


_ONLY_BRACKET = re.compile(BRACKET_RX.pattern + r" ?", re.ASCII)   # ASCII digits, as BRACKET_RX
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
        return Prefix(last.group("date"), t, tags, True, _wrapper_time(text[:last.start()]))
    # no SGLang bracket: a wrapper's date-time stands for it (a host framework that formats
    # SGLang's records itself) — but not a docker or Kubernetes stamp at the line's start,
    # which is the wrapper's own clock (UTC): such a line has no SGLang time, as without the
    # wrapper (a print()ed EAGLE3_PROF block, a request line); the stamp is kept as wrapper
    lead = _LEAD_RX.match(text) if text[:1].isdigit() else None
    w = WRAPPER_TIME_RX.search(text, lead.end() if lead else 0)
    if w:
        t = w.group("time")
        if w.group("frac"):
            t += "." + w.group("frac")[:6]
        return Prefix(w.group("date"), t, None, False)
    if lead is not None:
        return Prefix(None, None, None, False, _wrapper_time(text[:lead.end()]))
    if not text.isascii():
        loose = _LOOSE_RX.search(text)
        if loose is not None:        # a timestamp of other digits: kept as printed, reported
            if loose.group("time") is not None:
                return Prefix(loose.group("date"), loose.group("time"), None, True)
            return Prefix(loose.group("wdate"), loose.group("wtime"), None, False)
    if "[" in text:
        g = _GARBLED_RX.search(text)
        if g is not None:            # '[2026-03-02 14:02G20.472 TP0]': a damaged bracket
            return Prefix(g.group("date"), g.group("time"), None, True)
    return NO_PREFIX


def _wrapper_time(text: str) -> str | None:
    """A wrapper's date-time with a fraction of a second in ``text`` (what precedes the SGLang
    bracket), as 'YYYY-MM-DD HH:MM:SS.ffffff'; None when there is none, or it names no instant.
    Whole seconds are not kept: they say no more than SGLang's own bracket."""
    if len(text) < 21:
        return None
    w = WRAPPER_TIME_RX.search(text)
    if w is None or not w.group("frac"):
        return None
    t = f"{w.group('date')} {w.group('time')}.{w.group('frac')[:6]}"
    return t if valid_datetime(w.group("date"), t[11:]) else None


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
