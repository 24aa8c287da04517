"""Log families and the registry used by ``--engine``.

A family says how to sniff its logs and how to scan them:

* ``sglang``: SGLang's scheduler and request lines and, when the EAGLE-3 profiler patch is in,
  EAGLE3_PROF blocks (eagle3_prof.md);
* ``vllm``: vLLM's stat-logger, spec-decoding, stage-time and iteration lines (vllm.md);
* ``llamacpp``, ``trtllm`` and ``bench``: the other engines' outputs and the benchmark scripts of
  others.md (parsers/others.py), into the ``bench`` and ``bench_iters`` tables.

``--engine auto`` sniffs the first MiB: one family found -> its scanner; several -> one scan that
splits the input by family, named by joining the names with '+': the others.md lines are claimed
first, by their own markers; SGLang and vLLM server lines are then split the same way
(parsers/vllm.py's MixedScanner), so no family misreads another's lines.  The sniffing does not
stop at the head (``SniffingScanner``): when the first MiB holds no family's lines, every later
chunk is sniffed until one does, and the family is chosen there (line numbers unchanged, the
lines before it counted as skipped); once chosen, later chunks are watched for the lines of the
server family not chosen (SGLang or vLLM, a cheap literal search), which are reported with their
first line and the ``--engine`` that reads them.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable


from .._lazy import np
from .scan import MARKERS, ScanStats, Scanner, _fastscan, count_blank
from . import others
from . import vllm as _vllm

@functools.lru_cache(maxsize=None)
def _kind_pattern(kind: str) -> re.Pattern:
    return others.markers((kind,))


def _found(pattern: re.Pattern, literals: tuple[bytes, ...], head: bytes,
           one_line: bool = False) -> bool:
    """pattern.search(head), skipped when the head holds none of the literals (one of which
    every match contains): a literal find is ~30× faster than these regexes on a 1 MiB head."""
    return _first(pattern, literals, head, one_line) is not None


def _first(pattern: re.Pattern, literals: tuple[bytes, ...], text: bytes,
           one_line: bool = False) -> re.Match | None:
    """pattern.search(text) (see _found).  With ``one_line`` (no match spans lines), the regex
    starts at the line of the first literal: on megabytes of other lines before it, the
    regex never runs over them."""
    if not literals:
        return pattern.search(text)
    at = _earliest(text, literals)
    if at < 0:
        return None
    return pattern.search(text, text.rfind(b"\n", 0, at) + 1 if one_line else 0)


def _earliest(text: bytes, literals: tuple[bytes, ...]) -> int:
    """The offset of the earliest of ``literals`` in ``text`` (−1: none): one pass for all
    of them (first_any) where a find per literal made as many passes over a head that holds
    none of them — the usual case, each family's sniff on every other family's log."""
    if len(literals) <= 64 and all(len(lit) >= 2 for lit in literals):
        return first_any(text, literals)[0]
    hits = [i for i in (text.find(lit) for lit in literals) if i >= 0]
    return min(hits) if hits else -1


@functools.lru_cache(maxsize=None)
def _kinds_literals(kinds: tuple[str, ...]) -> tuple[bytes, ...]:
    """Every literal of ``kinds``: one of a kind's is in every match of its regex
    (others.KIND_LITERALS, tested on every fixture), so a head holding none of them holds
    none of the kinds."""
    return tuple(dict.fromkeys(lit for k in kinds for lit in others.KIND_LITERALS[k]))


SGLANG_TABLES = ("prof", "prof_phases", "decode", "prefill", "server_args", "requests",
                 "spec_params")


@dataclass(frozen=True)
class Engine:
    name: str
    description: str
    kinds: tuple[str, ...] = ()           # marker groups of parsers/others.py (others.md families)
    markers: re.Pattern = MARKERS         # a server-log family's markers
    make: Callable = Scanner              # its scanner class
    tables: tuple[str, ...] | None = SGLANG_TABLES   # what its logs fill (None: every table)
    literals: tuple[bytes, ...] = ()      # one of them is in every marker match (sniffing)

    @property
    def pattern(self) -> re.Pattern:
        return others.markers(self.kinds) if self.kinds else self.markers

    def sniff(self, head: bytes) -> bool:
        if self.kinds:   # one pattern per kind: 30× faster than their alternation on a 1 MiB head
            if _earliest(head, _kinds_literals(self.kinds)) < 0:
                return False          # (none of the kinds' literals: one pass said so)
            return any(_found(_kind_pattern(k), others.SNIFF_LITERALS.get(k, ()), head)
                       for k in self.kinds)
        return _found(self.pattern, self.literals, head, one_line=True)

    def first_match(self, text: bytes) -> re.Match | None:
        """The first marker of this family in ``text`` (None: none)."""
        if self.kinds:
            return self.pattern.search(text)
        return _first(self.pattern, self.literals, text, one_line=True)

    def scanner(self, source: str, base_date=None, columns=None):
        if self.kinds:
            return others.OthersScanner(source, base_date, self.kinds)
        return self.make(source, base_date, columns=columns)


# the alternatives of scan.MARKERS: every SGLang marker is one of them, on one line
SGLANG_LITERALS = (b"EAGLE3_PROF", b"Decode batch", b"Prefil", b"server_args=", b"Finish: obj=",
                   b'"request.finished"', b"new fill batch. ", b"#running-req: ",
                   b"Adaptive spec params updated: ")

ENGINES: dict[str, Engine] = {
    "sglang": Engine("sglang", "SGLang server logs: 'Decode batch' / 'Prefill batch' lines, "
                     "'server_args=', 'Finish:' request lines, EAGLE3_PROF blocks",
                     literals=SGLANG_LITERALS),
    "vllm": Engine("vllm", "vLLM server logs: 'Speculative metrics:' / 'SpecDecoding metrics:', "
                   "'Avg prompt throughput:', 'SpecDecodeWorker stage times:', 'Iteration(N):' "
                   "lines, start-up 'non-default args:' / 'with config:' lines",
                   markers=_vllm.MARKERS, make=_vllm.VllmScanner,
                   tables=_vllm.OWN_TABLES, literals=_vllm.SNIFF_LITERALS),
    "llamacpp": Engine("llamacpp", "llama.cpp: 'draft acceptance =' and 'statistics … #gen "
                       "drafts' lines, llama-speculative-simple's n_drafted/n_accept summary",
                       others.FAMILY_KINDS["llamacpp"], tables=others.TABLES_HERE),
    "trtllm": Engine("trtllm", "TensorRT-LLM: trtllm-bench 'DECODING STATISTICS', per-iteration "
                     "'host_step_time' lines, specDecodingStats records",
                     others.FAMILY_KINDS["trtllm"], tables=others.TABLES_HERE),
    "bench": Engine("bench", "benchmark scripts: SGLang bench_serving / bench_one_batch_server / "
                    "bench_speculative / mtbench / send_one / adaptive bench / run_eval, vllm "
                    "bench serve 'Speculative Decoding', vLLM's offline spec_decode example, "
                    "Spec-Bench and EAGLE outputs", others.FAMILY_KINDS["bench"],
                    tables=others.TABLES_HERE),
}
# SGLang and vLLM server lines in one log (chosen by --engine auto, or named 'sglang+vllm')
SERVERS_MIXED = Engine("sglang+vllm", "SGLang and vLLM lines in one log", markers=MARKERS,
                       make=_vllm.MixedScanner, tables=None)


@dataclass(frozen=True)
class MixedEngine:
    """Several families in one input: the others.md families (``claim``) take their lines
    first; ``rest`` (a server-log family, or SGLang and vLLM together) reads the remaining
    lines, or None."""

    name: str
    claim: tuple[str, ...]
    rest: str | None

    @property
    def description(self) -> str:
        return " + ".join(ENGINES[n].description for n in self.name.split("+"))

    @property
    def tables(self) -> tuple[str, ...] | None:
        if self.rest is not None and engine_named(self.rest).tables is None:
            return None
        parts = [t for n in self.name.split("+") for t in ENGINES[n].tables]
        return tuple(dict.fromkeys(parts))

    def scanner(self, source: str, base_date=None, columns=None):
        kinds = tuple(k for n in self.claim for k in ENGINES[n].kinds)
        sc = others.OthersScanner(source, base_date, kinds)
        if self.rest is None:
            return sc
        return MixedScanner(sc, engine_named(self.rest).scanner(source, base_date, columns))


def engine_named(name: str):
    """An engine of ENGINES, or a combined one ('sglang+vllm', 'sglang+bench') as choose_engine
    names them (the table cache stores the name)."""
    if name in ENGINES:
        return ENGINES[name]
    if name == SERVERS_MIXED.name:
        return SERVERS_MIXED
    parts = name.split("+")
    unknown = [p for p in parts if p not in ENGINES]
    if unknown:
        raise KeyError(name)
    claim = tuple(p for p in parts if ENGINES[p].kinds)
    servers = [p for p in parts if not ENGINES[p].kinds]
    if not claim:
        return SERVERS_MIXED if len(servers) > 1 else ENGINES[servers[0]]
    rest = SERVERS_MIXED.name if len(servers) > 1 else servers[0] if servers else None
    return MixedEngine(name, claim, rest)


get_engine = engine_named


def family_tables(name: str | None) -> tuple[str, ...] | None:
    """The tables an engine's logs fill (None: unknown engine, every table)."""
    try:
        return engine_named(name).tables if name else None
    except KeyError:
        return None


def found_families(text: bytes) -> list[str]:
    """The families whose markers appear in ``text``, in ENGINES order."""
    return [e.name for e in ENGINES.values() if e.sniff(text)]


def _combined(found: list[str]):
    """The engine that reads the families ``found`` (one, or one scan split by family)."""
    if len(found) == 1:
        return ENGINES[found[0]]
    servers = [n for n in found if not ENGINES[n].kinds]
    return engine_named("+".join(servers + [n for n in found if ENGINES[n].kinds]))


def choose_engine(name: str, head: bytes):
    """``auto`` picks the engines whose markers appear in ``head`` (several: one scan split by
    family); with none, the first engine is used.  A scan of a whole input chooses with
    ``sniffing_scanner``, which looks further than the head."""
    if name != "auto":
        return engine_named(name)
    found = found_families(head)
    if not found:
        return next(iter(ENGINES.values()))
    return _combined(found)


# The families a scan does not read, watched beyond the head (the families are chosen from the
# first MiB), by literals one of which every line worth reporting holds: the servers' and the
# benchmark and llama.cpp / TensorRT-LLM families' (all at once per chunk: watched); the
# family's markers confirm a hit.
WATCH_LITERALS = {"sglang": (b"Decode batch", b"Prefill batch", b"server_args=", b"EAGLE3_PROF"),
                  "vllm": _vllm.WATCH_LITERALS, **others.WATCH_LITERALS}
SERVER_LABEL = {"sglang": "SGLang", "vllm": "vLLM"}


def first_any(buf, literals: tuple[bytes, ...], start: int = 0) -> tuple[int, int]:
    """(offset, index) of the earliest occurrence at or after ``start`` of any of ``literals``
    (the lowest index among those starting there), or (-1, -1): the C accelerator's one pass
    for all of them (Wu–Manber, the GIL released), else a find per literal."""
    if _fastscan is not None and hasattr(_fastscan, "first_any"):
        return _fastscan.first_any(buf, literals, start)
    best, which = -1, -1
    for i, lit in enumerate(literals):
        j = buf.find(lit, start)
        if j >= 0 and (best < 0 or j < best):
            best, which = j, i
    return best, which


def watched(buf, watch: dict[str, tuple[bytes, ...]],
            start: int = 0) -> list[tuple[str, "re.Match"]]:
    """(family, its first marker match) of each family of ``watch`` (family → literals, one of
    which is in every line of it) whose records ``buf`` holds, in the order of their lines.
    One search for every family's literals at once; the family of the earliest literal found
    is then confirmed by its own regex from that line on (a literal in a line of another kind
    is not a record), and the search goes on for the others.  From offset ``start`` on."""
    fams, out = list(watch), []
    while fams:
        lits, owner = [], []
        for f in fams:
            lits += watch[f]
            owner += [f] * len(watch[f])
        pos, i = first_any(buf, tuple(lits), start)
        if pos < 0:
            break
        fam = owner[i]
        m = ENGINES[fam].pattern.search(buf, buf.rfind(b"\n", 0, pos) + 1)
        if m is not None:
            out.append((fam, m))
        fams.remove(fam)
        start = pos
    return sorted(out, key=lambda fm: fm[1].start())


def report_watched(sc, chunk, offset: int, line_no: int, watch: dict,
                   how: str) -> tuple[bytes, ...]:
    """From the line at ``offset`` (number ``line_no``) of ``chunk`` on: report the first line
    of each family of ``watch`` found there on ``sc`` (an 'other_family' diagnostic) and drop
    it from ``watch``; the literals still watched."""
    for fam, m in watched(chunk, watch, offset):
        del watch[fam]
        sc.diag(line_no + chunk.count(b"\n", offset, m.start()), "other_family",
                other_family_message(fam, how))
    return tuple(lit for v in watch.values() for lit in v)


def other_family_message(fam: str, how: str) -> str:
    """What an 'other_family' diagnostic says: whose lines are not read, and how to read them."""
    if fam in SERVER_LABEL:
        return (f"{SERVER_LABEL[fam]} lines from here on are not read ({how}): pass --engine "
                f"{fam} to read them")
    return (f"{others.FAMILY_LABEL[fam]} records from here on are not read ({how}; the families "
            f"are chosen from the first MiB): pass --engine {fam} to read them, or read that "
            "part of the file on its own")


def holds_any(buf, literals: tuple[bytes, ...]) -> bool:
    """Whether ``buf`` (bytes or bytearray) holds one of ``literals``: the C accelerator's
    memmem, which releases the GIL (five bytes.find held it for 1.4 ms per MiB, 21 % of a
    gigabyte scan's CPU, while the other scan threads waited); else bytes.find."""
    if _fastscan is not None:
        return _fastscan.find_any(buf, tuple(literals)) >= 0
    return any(lit in buf for lit in literals)


def _advance(sc, nl: int, lines: int, nbytes: int, blank: int, first: int | None) -> None:
    """Put a fresh scanner after ``nl`` newlines of input that holds none of its lines (as if it
    had read them: line numbers and counts unchanged)."""
    if isinstance(sc, MixedScanner):
        _advance(sc.claim, nl, lines, nbytes, blank, first)
        _advance(sc.rest, nl, lines, nbytes, blank, first)
        return
    if isinstance(sc, _vllm.MixedScanner):
        _advance(sc.sg, nl, lines, nbytes, blank, first)
        _advance(sc.vl, nl, lines, nbytes, blank, first)
        return
    sc._line += nl
    st = sc.stats
    st.lines += lines
    st.bytes += nbytes
    st.blank += blank
    if st.first_skipped is None:
        st.first_skipped = first


_NON_SPACE = re.compile(rb"\S")


class SniffingScanner:
    """The scanner of one whole input, chosen from what the input holds: ``requested`` (an
    engine name, or 'auto': the families found in ``head``, else those of the first later
    chunk that holds any family's lines).  Until then the chunks are only counted; the chosen
    scanner starts after them.  Afterwards, chunks are watched for the server family not
    chosen (WATCH_LITERALS): its first line is reported (kind 'other_family') with the
    --engine that reads it.  ``on_engine(name)`` is called when the engine is chosen."""

    def __init__(self, requested: str, head: bytes, source: str, base_date=None, columns=None,
                 on_engine: Callable[[str], None] | None = None) -> None:
        self.requested, self.source = requested, source
        self.base_date, self.columns = base_date, columns
        self.on_engine = on_engine
        self.inner = None
        self.engine_name: str | None = None
        self._nl = self._lines = self._bytes = self._blank = 0
        self._first: int | None = None
        self._watch: dict[str, tuple[bytes, ...]] = {}
        self._inner_watches = False
        self._overrun = False
        if requested != "auto":
            self._choose(engine_named(requested))
        else:
            found = found_families(head)
            if found:
                self._choose(_combined(found))

    # ------------------------------------------------------------------ choosing
    def _choose(self, eng, at_line: int | None = None, nowhere: bool = False) -> None:
        sc = eng.scanner(self.source, self.base_date, self.columns)
        if self._nl or self._bytes:
            _advance(sc, self._nl, self._lines, self._bytes, self._blank, self._first)
        sc.overrun = self._overrun
        self.inner, self.engine_name = sc, eng.name
        chosen = set(eng.name.split("+"))
        self._watch = {f: lit for f, lit in WATCH_LITERALS.items() if f not in chosen}
        # (a C-accelerated SGLang scan watches the lines it passes over; the others, each chunk)
        self._inner_watches = isinstance(sc, Scanner) and bool(self._watch) and \
            sc.watch_lines(tuple(lit for v in self._watch.values() for lit in v),
                           self._watch_hit)
        if at_line is not None:
            sc.diag(at_line, "engine", f"no family's lines in the first MiB: read as {eng.name}, "
                    f"whose first line this is", "note")
        elif nowhere:
            sc.diag(None, "engine", f"no family's lines in any of the {self._lines:,} lines",
                    "note")
        if self.on_engine is not None:
            self.on_engine(eng.name)

    def _count(self, chunk: bytes) -> None:
        """A chunk read before the family is known: its lines are counted (none is a record)."""
        nl = chunk.count(b"\n")
        if self._first is None:
            m = _NON_SPACE.search(chunk)
            if m is not None:
                self._first = self._nl + chunk.count(b"\n", 0, m.start()) + 1
        self._nl += nl
        self._lines += nl + (1 if chunk and not chunk.endswith(b"\n") else 0)
        self._bytes += len(chunk)
        self._blank += count_blank(chunk)

    def _line_of(self, chunk: bytes, family: str) -> int | None:
        m = ENGINES[family].first_match(chunk)
        return None if m is None else self._nl + chunk.count(b"\n", 0, m.start()) + 1

    def _how(self) -> str:
        return (f"--engine {self.requested}" if self.requested != "auto" else
                f"read as {self.engine_name}, the family of its first lines")

    def _watch_chunk(self, chunk: bytes) -> None:
        for fam, m in watched(chunk, self._watch):
            del self._watch[fam]
            self.inner.diag(self._nl + chunk.count(b"\n", 0, m.start()) + 1, "other_family",
                            other_family_message(fam, self._how()))

    def _watch_hit(self, chunk: bytes, offset: int, line_no: int) -> tuple[bytes, ...]:
        """The C scan found a watched literal in the line at ``offset`` (number ``line_no``)
        of ``chunk``: the rest of the chunk is checked here (Scanner.watch_lines)."""
        return report_watched(self.inner, chunk, offset, line_no, self._watch, self._how())

    # ------------------------------------------------------------------ the scanner interface
    def feed(self, chunk: bytes) -> None:
        if self.inner is None:
            found = found_families(chunk)
            if not found:
                self._count(chunk)
                return
            eng = _combined(found)
            lines = [ln for ln in (self._line_of(chunk, f) for f in found)
                     if ln is not None]
            self._choose(eng, min(lines) if lines else self._nl + 1)
        if self._watch and not self._inner_watches:
            self._watch_chunk(chunk)
        self.inner.feed(chunk)
        self._nl += chunk.count(b"\n")

    def _scanner(self):
        """The chosen scanner; at the end of an input that holds no family's lines, the
        first engine's (its tables empty, its counts those of the input)."""
        if self.inner is None:            # (only with 'auto': a name is chosen at once)
            self._choose(next(iter(ENGINES.values())), nowhere=True)
        return self.inner

    def finish(self, mtime=None):
        return self._scanner().finish(mtime)

    def frames_so_far(self):
        return self._scanner().frames_so_far()

    def checkpoint(self):
        return None if self.inner is None else self.inner.checkpoint()

    def restore(self, state) -> None:
        self._scanner().restore(state)

    def diag(self, *args, **kwargs) -> None:
        self._scanner().diag(*args, **kwargs)

    def overflow(self):
        return self._scanner().overflow()

    @property
    def stats(self) -> ScanStats:
        if self.inner is None:
            return ScanStats(self._lines, self._blank, 0, self._first, self._bytes)
        return self.inner.stats

    @property
    def diags(self):
        return [] if self.inner is None else self.inner.diags

    @property
    def dropped(self):
        return {} if self.inner is None else self.inner.dropped

    @property
    def _kept(self):
        return {} if self.inner is None else self.inner._kept

    @property
    def blocks(self):
        return _vllm._NoBlocks() if self.inner is None else self.inner.blocks

    @property
    def startup(self):
        return 0 if self.inner is None else self.inner.startup

    @property
    def time_only(self):
        return False if self.inner is None else self.inner.time_only

    @property
    def overrun(self):
        return self._overrun if self.inner is None else self.inner.overrun

    @overrun.setter
    def overrun(self, value):
        self._overrun = value
        if self.inner is not None:
            self.inner.overrun = value


def sniffing_scanner(requested: str, head: bytes, source: str, base_date=None, columns=None,
                     on_engine: Callable[[str], None] | None = None) -> SniffingScanner:
    """The scanner of a whole input (see SniffingScanner)."""
    return SniffingScanner(requested, head, source, base_date, columns, on_engine)


def reported_families(diags) -> list[tuple[str, int | None]]:
    """(family, first line) of the server families a SniffingScanner found and did not read."""
    out = []
    for d in diags:
        if d.kind == "other_family":
            fam = d.message.rsplit("--engine ", 1)[-1].split()[0]
            if fam in ENGINES and fam not in [f for f, _ in out]:
                out.append((fam, d.line_no))
    return out


def chosen_where(diags) -> str:
    """How a SniffingScanner chose the family: 'head' (from the first MiB, or by name), 'later'
    (at a later line), 'nowhere' (no family's lines in the input)."""
    for d in diags:
        if d.kind == "engine":
            return "later" if d.line_no is not None else "nowhere"
    return "head"


class MixedScanner:
    """One input holding a server log and other outputs: the others scanner reads each chunk
    first; the lines it consumed are blanked before the server-log scanner reads the chunk
    (line numbers unchanged).  The counters are combined so that a line counts once."""

    def __init__(self, claim: "others.OthersScanner", rest) -> None:
        self.claim, self.rest = claim, rest
        self.source = rest.source
        self.stats = ScanStats()

    @property
    def diags(self):
        return self.claim.diags + self.rest.diags

    @property
    def blocks(self):
        return self.claim.blocks if self.claim.blocks.open else self.rest.blocks

    @property
    def overrun(self):
        return self.rest.overrun

    @overrun.setter
    def overrun(self, value):
        self.claim.overrun = self.rest.overrun = value

    @property
    def startup(self):
        return self.rest.startup

    @property
    def time_only(self):
        return self.rest.time_only

    @property
    def dropped(self):
        return self.rest.dropped

    @property
    def _kept(self):
        return self.rest._kept

    def diag(self, *args, **kwargs) -> None:
        self.rest.diag(*args, **kwargs)

    def overflow(self):
        return self.claim.overflow() + self.rest.overflow()

    def feed(self, chunk: bytes) -> None:
        self.claim.feed(chunk)
        if self.claim.claimed:
            parts, at = [], 0
            for a, b in self.claim.claimed:
                parts.append(chunk[at:a])
                at = b
            parts.append(chunk[at:])
            chunk = b"".join(parts)
        self.rest.feed(chunk)
        c, r, st = self.claim.stats, self.rest.stats, self.stats
        st.lines, st.bytes = c.lines, c.bytes
        st.consumed = c.consumed + r.consumed
        st.blank = r.blank - c.consumed      # the claimed lines looked blank to the rest
        st.first_skipped = r.first_skipped

    def checkpoint(self):
        return None      # no resume for a mixed input: it is scanned whole

    def restore(self, state) -> None:  # pragma: no cover - checkpoint() never gives a state
        raise NotImplementedError

    def _merge(self, a: dict, b: dict) -> dict:
        out = {t: (a[t] if t in others.TABLES_HERE else b[t]) for t in b}
        sa = b.get("server_args")
        if sa is not None and len(sa):
            starts = np.sort(sa["line_no"].to_numpy(dtype=np.int64))
            for t in others.TABLES_HERE:
                df = out[t]
                if len(df):
                    df["startup"] = np.searchsorted(starts, df["line_no"].to_numpy(
                        dtype=np.int64), side="right")
                    df["startup"] = df["startup"].astype("Int64")
        return out

    def frames_so_far(self):
        return self._merge(self.claim.frames_so_far(), self.rest.frames_so_far())

    def finish(self, mtime=None):
        return self._merge(self.claim.finish(mtime), self.rest.finish(mtime))
