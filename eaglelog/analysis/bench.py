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
    runs: tuple[dict, ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"runs": list(self.runs), "notes": list(self.notes)}


def summarize_bench(log: ParsedLog) -> BenchSummary:
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
    return BenchSummary(runs, tuple(notes))
