"""Engine- and version-specific accounting that the analyses correct for (docs/engines.md).

One rule lives here: SGLang v0.5.3.post2 – v0.5.3.post3 with ``enable_beta_spec=True`` (the spec-v2
worker) logs ``accept len`` one token high.  The worker's accept lengths already include the
bonus token (``speculative/eagle_info_v2.py``: ``accept_length.add_(1)``) and the scheduler adds
``+ bs`` again when it updates the window counters (``managers/scheduler_output_processor_mixin.py``
→ ``scheduler_metrics_mixin.py`` ``update_spec_metrics``, tag v0.5.3.post2); the same sum feeds
``num_generated_tokens``, so ``gen throughput`` is one token per request-step high too.  Fixed by
#11823 (commit f7b1d8c5ab, 2025-10-20), first in v0.5.4 (sglang.md §3.7b).

``apply(log, source)`` returns the log with those decode lines corrected — accept len − 1, gen
throughput × (L − 1) / L, accept rate × (L − 1) / L (the v0.5.3.post2 rate is L / (S + 1)) — and
the notes that say so.  The derived cycle, 1000 × L × B / g, is the same before and after: both
factors were one token high.  The other rules of docs/engines.md are handled where the numbers
are made (rate.decode_windows, parsers/vllm.py, api.ParsedLog.units).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..frame import is_value
from .sums import picked_sum

MIN_REQUESTS = 20      # Finish lines needed before they may confirm or contradict the rule
AGREE = 0.5            # |decode − Finish| accept length below this: the decode lines are right
ONE_HIGH = (0.6, 1.4)  # … within this: one token high


@dataclass(frozen=True)
class BetaSpec:
    """What the log says about the double-counted bonus of v0.5.3.post2 – post3 spec v2."""

    lines: int                 # decode lines of the affected release family with accept len
    flag: bool | None          # server_args enable_beta_spec (None: not printed)
    above_max: int             # lines with accept len > num_steps + 1 (impossible unless high)
    below_two: int             # lines with accept len < 2 (impossible if high)
    decode_accept: float       # request-step weighted accept len of those lines
    finish_accept: float       # (completion_tokens − 1) / spec_verify_ct pooled, NaN if none
    requests: int
    inflated: bool
    why: str


def _rows(log, source: str):
    dec = log.decode
    if "header" not in dec.columns or "accept_rate" not in dec.columns:
        return np.zeros(len(dec), dtype=bool)
    # 'Decode batch. ' with accept rate: v0.5.3.post2 – v0.5.3.post3 only (sglang.md §11)
    rate = dec["accept_rate"].notna().to_numpy(dtype=bool)
    if not rate.any():                 # (the usual case: later versions print no accept rate)
        return rate
    m = np.zeros(len(dec), dtype=bool)
    m[log.positions(source, "decode")] = True
    fam = (dec["header"] == ".").fillna(False).to_numpy(dtype=bool) & rate & \
        dec["accept_len"].notna().to_numpy(dtype=bool)
    if "engine" in dec.columns:
        fam &= ~is_value(dec["engine"], "vllm")
    return m & fam


def beta_spec(log, source: str) -> BetaSpec | None:
    """The evidence for the rule on one input (None: no decode line of the affected family)."""
    rows = _rows(log, source)
    if not rows.any():
        return None
    # (the two columns' rows, not a copy of the table's: every row of a long log of the
    # affected releases is one)
    dec = log.decode
    cfg = log.config(source)
    flag = cfg.get("enable_beta_spec")
    flag = flag if isinstance(flag, bool) else None
    # (every row's arrays, the rows picked in the sums: no copies of a long log's columns)
    a = dec["accept_len"].to_numpy(dtype=float)
    w = dec["running_req"].to_numpy(dtype=float, na_value=np.nan)
    w = np.where(np.isfinite(w) & (w > 0), w, 1.0)
    s = cfg.get("speculative_num_steps")
    above = int(np.count_nonzero(rows & (a > s + 1 + 0.005))) if isinstance(s, int) and \
        not isinstance(s, bool) and s > 0 else 0
    below = int(np.count_nonzero(rows & (a < 2 - 0.005)))
    dacc = picked_sum(a, rows, w) / picked_sum(w, rows)
    req = log.requests
    req = req[(req["source"] == source).to_numpy(dtype=bool)] if len(req) else req
    n_req, facc = 0, math.nan
    if len(req):
        v = req["verify_ct"].to_numpy(dtype=float, na_value=np.nan)
        c = req["completion_tokens"].to_numpy(dtype=float, na_value=np.nan)
        ok = np.isfinite(v) & np.isfinite(c) & (v > 0)
        n_req = int(ok.sum())
        if n_req:
            facc = float((c[ok] - 1).sum() / v[ok].sum())
    diff = dacc - facc
    finish = n_req >= MIN_REQUESTS and math.isfinite(diff)
    if below:
        inflated, why = False, (f"{below} decode line(s) print accept len below 2, which a "
                                "doubled bonus cannot give")
    elif flag is False:
        inflated, why = False, "enable_beta_spec=False: the spec-v1 worker counts right"
    elif finish and abs(diff) < AGREE:
        inflated, why = False, (f"the Finish lines give {facc:.2f} tokens per verify, the decode "
                                f"lines {dacc:.2f}: they agree")
    elif flag is True:
        inflated, why = True, "enable_beta_spec=True in server_args"
    elif above or (finish and ONE_HIGH[0] < diff < ONE_HIGH[1]):
        inflated, why = True, "no enable_beta_spec in the log, but the numbers say so"
    else:
        inflated, why = False, "enable_beta_spec not printed and no evidence in the numbers"
    return BetaSpec(int(rows.sum()), flag, above, below, dacc, facc, n_req, inflated, why)


def _evidence(b: BetaSpec) -> str:
    parts = [b.why]
    if b.above_max:
        parts.append(f"{b.above_max} line(s) above num_steps + 1")
    if b.requests >= MIN_REQUESTS and math.isfinite(b.finish_accept) and b.inflated:
        parts.append(f"Finish lines {b.finish_accept:.2f} vs decode lines {b.decode_accept:.2f} "
                     "tokens per verify")
    return "; ".join(parts)


def correct_beta_spec(decode, rows: np.ndarray):
    """The decode table with the rows' accept len one lower and throughput and rate scaled."""
    dec = decode.copy()
    a = dec.loc[rows, "accept_len"].to_numpy(dtype=float)
    f = (a - 1.0) / a
    dec.loc[rows, "accept_len"] = a - 1.0
    for col in ("gen_throughput", "accept_rate"):
        if col in dec.columns:
            dec.loc[rows, col] = dec.loc[rows, col].to_numpy(dtype=float) * f
    return dec


LOSSY_METHODS = ("synthetic", "fly")


def non_draft_tokens(cfg: dict) -> int:
    """Tokens a verify commits besides its correct drafts: 1 (the bonus token) for every
    algorithm but SGLang's UNO, whose verify commits 2 (``accept_lens = accepted_specs + 2``:
    sglang 0.5.23 srt/speculative/uno_worker_v2.py:407)."""
    algo = cfg.get("speculative_algorithm")
    return 2 if isinstance(algo, str) and algo.strip("'\"").upper() == "UNO" else 1


def lossy_acceptance(cfg: dict) -> str | None:
    """A note when the run's acceptance is forced or lossy, so that its accept length is not
    what the draft model earns under exact (lossless) verification: SGLang's
    ``speculative_accept_threshold_single`` / ``_acc`` below 1 (a draft token accepted when
    its target probability exceeds the threshold, or with min(1, p / threshold_acc): sglang
    0.5.23 srt/arg_groups/fields/spec.py:109–116), vLLM's ``rejection_sample_method``
    'synthetic' (acceptance drawn at set rates) or 'fly' (a lossy, entropy-gated window:
    vllm 0.34.0 config/speculative.py:610–617).  Every verdict on such a run carries it."""
    why = []
    for key in ("speculative_accept_threshold_single", "speculative_accept_threshold_acc"):
        v = cfg.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 1:
            why.append(f"{key}={v:g}")
    m = cfg.get("speculative_rejection_sample_method")
    if isinstance(m, str) and m.strip("'\"").lower() in LOSSY_METHODS:
        why.append(f"rejection_sample_method={m.strip(chr(39) + chr(34))}")
    if not why:
        return None
    return ("forced or lossy acceptance (" + ", ".join(why) + "): the accept length and the "
            "speedup are this setting's, not what the draft model earns under exact "
            "verification, and the outputs are not the target model's own; a verdict here says "
            "whether this setting pays, not whether lossless speculation would")


def apply(log, source: str | None = None):
    """(the log with every engine correction of docs/engines.md applied to ``source``'s rows,
    the notes that say what was done).  Idempotent: an adjusted log comes back as it is, with
    its notes; the result is remembered on ``log``."""
    source = source or log.sources[0].name
    done = log.__dict__.get("_engine_notes")
    if done is not None and source in done:
        return log, list(done[source])
    memo = log.__dict__.setdefault("_engine_memo", {})
    if source in memo:
        return memo[source]
    notes: list[str] = []
    out = log
    b = beta_spec(log, source)
    if b is not None and b.inflated:
        rows = _rows(log, source)
        tables = dict(log.tables)
        tables["decode"] = correct_beta_spec(log.decode, rows)
        out = type(log)(tables, log.sources, log.diagnostics)     # a ParsedLog (model.py)
        if "_config_path" in log.__dict__:
            out.__dict__["_config_path"] = log.__dict__["_config_path"]
        notes.append(f"accept len corrected by −1 on {b.lines} decode line(s): SGLang "
                     "v0.5.3.post2 – v0.5.3.post3 with enable_beta_spec counts the bonus token "
                     "twice (accept len and gen throughput one token per request-step high; "
                     f"fixed by #11823 in v0.5.4; docs/engines.md) — {_evidence(b)}; the cycle "
                     "is unaffected")
    elif b is not None and b.flag is True:
        notes.append(f"enable_beta_spec=True on a v0.5.3.post2 – post3 log, but accept len is "
                     f"not corrected: {b.why} (docs/engines.md)")
    lossy = lossy_acceptance(log.config(source))
    if lossy:
        notes.append(lossy)
    prev = dict(log.__dict__.get("_engine_notes") or {})
    prev[source] = tuple(notes)
    out.__dict__["_engine_notes"] = prev
    memo[source] = (out, list(notes))
    return out, list(notes)
