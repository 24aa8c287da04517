"""Log families and the registry used by ``--engine``.

A family says how to sniff its logs and how to scan them:

* ``sglang``: SGLang's scheduler and request lines and, when the EAGLE-3 profiler patch is in,
  EAGLE3_PROF blocks (eagle3_prof.md);
* ``vllm``: vLLM's stat-logger, spec-decoding, stage-time and iteration lines (vllm.md);
* ``llamacpp``, ``trtllm`` and ``bench``: the other engines' outputs and the benchmark scripts of
  others.md (parsers/others.py), into the ``bench`` and ``bench_iters`` tables.

``--engine auto`` sniffs the first chunk (1 MiB): one family found -> its scanner; several -> one
scan that splits the input by family, named by joining the names with '+': the others.md lines are
claimed first, by their own markers; SGLang and vLLM server lines are then split the same way
(parsers/vllm.py's MixedScanner), so no family misreads another's lines.  A family whose first
line comes after the first MiB is not looked for: name it with ``--engine``.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Callable


from .._lazy import np
from .scan import MARKERS, ScanStats, Scanner
from . import others
from . import vllm as _vllm

@functools.lru_cache(maxsize=None)
def _kind_pattern(kind: str) -> re.Pattern:
    return others.markers((kind,))


def _found(pattern: re.Pattern, literals: tuple[bytes, ...], head: bytes) -> bool:
    """pattern.search(head), skipped when the head holds none of the literals (one of which
    every match contains): a literal find is ~30× faster than these regexes on a 1 MiB head."""
    if literals and not any(lit in head for lit in literals):
        return False
    return pattern.search(head) is not None


SGLANG_TABLES = ("prof", "prof_phases", "decode", "prefill", "server_args", "requests")


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
            return any(_found(_kind_pattern(k), others.SNIFF_LITERALS.get(k, ()), head)
                       for k in self.kinds)
        return _found(self.pattern, self.literals, head)

    def scanner(self, source: str, base_date=None, columns=None):
        if self.kinds:
            return others.OthersScanner(source, base_date, self.kinds)
        return self.make(source, base_date, columns=columns)


ENGINES: dict[str, Engine] = {
    "sglang": Engine("sglang", "SGLang server logs: 'Decode batch' / 'Prefill batch' lines, "
                     "'server_args=', 'Finish:' request lines, EAGLE3_PROF blocks"),
    "vllm": Engine("vllm", "vLLM server logs: 'Speculative metrics:' / 'SpecDecoding metrics:', "
                   "'Avg prompt throughput:', 'SpecDecodeWorker stage times:', 'Iteration(N):' "
                   "lines", markers=_vllm.MARKERS, make=_vllm.VllmScanner,
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


def choose_engine(name: str, head: bytes):
    """``auto`` picks the engines whose markers appear in the first chunk (several: one scan
    split by family); with none, the first engine is used (and an input with no records is
    reported, naming every family)."""
    if name != "auto":
        return engine_named(name)
    found = [e.name for e in ENGINES.values() if e.sniff(head)]
    if not found:
        return next(iter(ENGINES.values()))
    if len(found) == 1:
        return ENGINES[found[0]]
    servers = [n for n in found if not ENGINES[n].kinds]
    return engine_named("+".join(servers + [n for n in found if ENGINES[n].kinds]))


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
