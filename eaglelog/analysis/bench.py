"""What `eaglelog summary` says about benchmark outputs and other engines' statistics (the
``bench`` table): one entry per reported result, its accept length with the definition it was
pooled by, and its throughput.  Accept lengths of different definitions (others.md §6) are
flagged as not comparable as they stand."""
from __future__ import annotations

from dataclasses import dataclass

from ..api import ParsedLog, _plain

FIELDS = ("source", "line_no", "tool", "engine", "scope", "label", "accept_len", "accept_len_def",
          "accept_len_derived", "acceptance_rate", "output_tok_s", "per_request_tok_s",
          "requests", "complete")


@dataclass(frozen=True)
class BenchSummary:
    runs: tuple[dict, ...]          # one row of FIELDS per reported result
    notes: tuple[str, ...]
    confidence: float = 0.95
    errors: tuple[str, ...] = ()    # inputs that could not be read (--keep-going)

    def run_dicts(self) -> list[dict]:
        """One object per reported result in the shape of a log's summary run
        (SummaryResult.to_dict: the same keys, null or empty where a benchmark says nothing),
        the benchmark's own numbers in ``accept_len.benchmark``, ``throughput`` and ``bench``
        (the row itself), the notes in each run's ``notes``."""
        return [_summary_run(r, self.confidence, self.notes) for r in self.runs]

    def to_dict(self) -> dict:
        """``eaglelog summary -f json``: the documented shape, as for a log (README, "JSON
        shape"): {"command", "confidence", "runs", "errors"}."""
        return {"command": "summary", "confidence": self.confidence, "runs": self.run_dicts(),
                "errors": list(self.errors)}


def _number(v, source: str, n) -> dict | None:
    """A benchmark's printed number as an estimate object (no interval: it prints none)."""
    if v is None:
        return None
    return {"estimate": v, "ci_low": None, "ci_high": None, "n": n, "source": source}


def _summary_run(row: dict, confidence: float, notes: tuple[str, ...]) -> dict:
    where = f"{row['tool']} result ({row['source']}:{row['line_no']})"
    accept = _number(row["accept_len"], where + (f", {row['accept_len_def']}"
                                                 if row["accept_len_def"] else ""),
                     row["requests"])
    return {"source": row["source"], "confidence": confidence, "config": None, "lines": None,
            "span_s": None, "cycle_ms": None, "blocks": None, "cycles": None, "phases": [],
            "phases_from": None, "bottleneck": None,
            "accept_len": {"sglang": None, "profiler": None, "benchmark": accept},
            "cycle_derived_ms": None, "cycle_kind": None,
            "throughput": {"aggregate_tok_s": row["output_tok_s"],
                           "per_stream_tok_s": _number(row["per_request_tok_s"], where,
                                                       row["requests"]),
                           "windows": None, "windows_used": None, "ranks": None,
                           "by_rank": []},
            "breakeven": None,
            "notes": ["a reported benchmark or statistics result: no decode lines or profiler "
                      "blocks, so no cycle, phases or verdict (they need the server's log)",
                      *notes],
            "bench": dict(row)}


def summarize_bench(log: ParsedLog, confidence: float = 0.95) -> BenchSummary:
    from .llamacpp import fold_statistics

    # llama.cpp's statistics lines count since the server started: one total per drafter
    b, notes = fold_statistics(log.bench)
    runs = tuple({k: _plain(row.get(k)) for k in FIELDS} for row in b.to_dict("records"))
    defs = sorted({r["accept_len_def"] for r in runs if r["accept_len_def"]})
    if len(defs) > 1:
        notes.append("accept lengths of different definitions (" + ", ".join(defs) + "): not "
                     "comparable as they stand (docs/tables.md, bench.accept_len_def)")
    engines = sorted({r["engine"] for r in runs if r["engine"]})
    if len(engines) > 1:
        notes.append(f"results of different engines ({', '.join(engines)}): compare with care")
    return BenchSummary(runs, tuple(notes), confidence)
