"""ai-dynamo aiperf's exports for `eaglelog latency` (docs/latency.md §1.3): the run's summary
``profile_export_aiperf.json`` and its per-request records ``profile_export.jsonl``.  Plain
functions over parsed JSON values; parsers/loadtest.py finds the files, pairs them and builds the
``load_runs`` / ``load_requests`` rows from what these return.

The format, checked in aiperf's released source (the aiperf 0.13.0 wheel):

* The records file (``--export-level records``, the default, config/artifacts.py:58, 68,
  313–318; ``<prefix>.jsonl`` with ``--profile-export-prefix``) holds one ``MetricRecordInfo``
  per request, one JSON object a line (post_processors/record_export_jsonl_writer.py:82–91,
  common/mixins/buffered_jsonl_writer_mixin.py: orjson, ``exclude_none``):
  ``metadata`` (``session_num``, ``request_start_ns``, ``request_end_ns``, ``benchmark_phase``
  "warmup" or "profiling", ``was_cancelled``, …; common/models/record_models.py:165–300),
  ``metrics`` — tag → ``{"value", "unit"}`` in display units (record_models.py:158–163,
  metrics/metric_dicts.py:138–190): ``time_to_first_token``, ``request_latency`` (ms),
  ``inter_token_latency`` (ms: (latency − ttft) / (osl − first-chunk tokens), i.e. the
  request's TPOT, metrics/types/inter_token_latency_metric.py:19–102), ``inter_chunk_latency``
  (a list of ms: the gaps between consecutive chunks, inter_chunk_latency_metric.py:31–36),
  ``output_sequence_length``, ``input_sequence_length`` (tokens),
  ``spec_decode_acceptance_length`` (1 + accepted / verify steps of the request,
  metrics/types/spec_decode_metrics.py:83–106) — ``spec_decode_acceptance`` (the request's
  ``SpecDecodeAcceptanceRecord``: ``mean_acceptance_length``, ``num_accepted_draft_tokens``,
  ``num_draft_tokens``, ``num_spec_steps``, common/models/spec_decode_models.py:19–101) and
  ``error`` (``code``, ``type``, ``message``; absent or null for a success,
  common/models/error_models.py:12–37).
* The summary (``JsonExportData``, common/models/export_models.py:281–377, written by
  exporters/metrics_json_exporter.py:199–205 with ``exclude_unset, exclude_none``, indented):
  metric tag → ``JsonMetricResult`` ``{"unit", "avg", "p1" … "p99", "min", "max", "std",
  "count", "sum"}`` (export_models.py:25–67) for the same tags, ``benchmark_duration`` (sec),
  ``request_count`` (valid requests), ``error_request_count``, ``output_token_throughput``,
  ``total_osl``, ``spec_decode_token_weighted_acceptance_length`` (1 + Σ accepted / Σ steps,
  spec_decode_metrics.py:258–289), and ``input_config``: in 0.13 a ``phases`` list
  (config/phases.py:68–560: ``name``, ``kind`` warmup/profiling, ``type`` concurrency /
  poisson / gamma / constant / user_centric / fixed_schedule, ``rate`` req/s,
  ``concurrency``, ``rate_ramp`` …); in earlier releases ``loadgen`` (``concurrency``,
  ``request_rate``, ``request_rate_mode``).  aiperf says ``input_config`` is not stable
  across versions; both shapes are read.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import EaglelogError

MS = {"ms": 1.0, "ns": 1e-6, "us": 1e-3, "µs": 1e-3, "sec": 1000.0, "s": 1000.0,
      "min": 60_000.0}
# aiperf tag → eaglelog's metric (load_runs' {stat}_{metric}_ms columns)
METRIC_TAGS = (("time_to_first_token", "ttft"), ("inter_token_latency", "tpot"),
               ("inter_chunk_latency", "itl"), ("request_latency", "e2el"))
SUMMARY_KEYS = ("benchmark_duration", "request_latency", "time_to_first_token",
                "request_count")
RAMPS = ("rate_ramp", "concurrency_ramp", "rate_series", "prefill_ramp",
         "request_rate_ramp_duration", "concurrency_ramp_duration")


def is_record(obj) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("metadata"), dict) and \
        "metrics" in obj


def is_summary(obj) -> bool:
    return isinstance(obj, dict) and not is_record(obj) and any(
        isinstance(obj.get(k), dict) and "unit" in obj[k] for k in SUMMARY_KEYS)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def stat(obj: dict, tag: str, key: str, where: str, *, time: bool = False):
    """``obj[tag][key]`` (ms when ``time``), None when absent."""
    m = obj.get(tag)
    if not isinstance(m, dict) or m.get(key) is None:
        return None
    v = m[key]
    if not _finite(v):
        raise EaglelogError(f"{where}: bad value {str(v)[:40]!r} for '{tag}.{key}' (a finite "
                            "number)")
    if time:
        return float(v) * _factor(m.get("unit"), tag, where)
    if tag == "benchmark_duration":
        return float(v) * _factor(m.get("unit", "sec"), tag, where) / 1000.0
    return float(v)


def _factor(unit, tag: str, where: str) -> float:
    f = MS.get(str(unit).strip().lower()) if unit is not None else 1.0
    if f is None:
        raise EaglelogError(f"{where}: unknown time unit {str(unit)[:20]!r} for '{tag}' "
                            f"(known: {', '.join(MS)})")
    return f


# ------------------------------------------------------------------ the load point

def load_point(cfg, where: str) -> tuple[float | None, float | None]:
    """(request_rate, concurrency) of the profiling phase, from ``input_config`` (0.13's
    ``phases`` or the earlier ``loadgen``).  A ramp, a rate series, a replayed schedule or
    several profiling phases have no single load point: an error."""
    if not isinstance(cfg, dict):
        raise EaglelogError(f"{where}: no 'input_config': the aiperf summary does not say the "
                            "request rate or concurrency of the run")
    phases = cfg.get("phases")
    if isinstance(phases, list):
        prof = [p for p in phases if isinstance(p, dict) and (
            p.get("kind") == "profiling" or (p.get("kind") is None and
                                             p.get("name") == "profiling"))]
        if len(prof) != 1:
            raise EaglelogError(f"{where}: {len(prof)} profiling phases in 'input_config."
                                "phases': no single load point; run one load point a run")
        p = prof[0]
        name = f"input_config.phases[{p.get('name', '?')}]"
    elif isinstance(cfg.get("loadgen"), dict):
        p, name = cfg["loadgen"], "input_config.loadgen"
    else:
        raise EaglelogError(f"{where}: neither 'input_config.phases' nor 'input_config.loadgen':"
                            " no load point in the aiperf summary")
    ramp = next((k for k in RAMPS if p.get(k) not in (None, 0, False)), None)
    if ramp is not None:
        raise EaglelogError(f"{where}: a ramped run ('{name}.{ramp}') has no single load "
                            "point; run one request rate or concurrency per run")
    kind = str(p.get("type") or p.get("request_rate_mode") or "").lower()
    if kind == "fixed_schedule" or p.get("fixed_schedule"):
        raise EaglelogError(f"{where}: a replayed schedule ('{name}' fixed_schedule) has no "
                            "single load point")
    rate = p.get("rate", p.get("request_rate"))
    conc = p.get("concurrency")
    if conc is None and kind == "concurrency":
        conc = 1                                   # ConcurrencyPhase's default (phases.py:518)
    for k, v in (("rate", rate), ("concurrency", conc)):
        if v is not None and not (_finite(v) and v > 0):
            raise EaglelogError(f"{where}: bad value {str(v)[:40]!r} for '{name}.{k}' (a "
                                "positive number)")
    if rate is None and conc is None:
        raise EaglelogError(f"{where}: '{name}' sets neither a rate nor a concurrency: no load "
                            "point")
    return (None if rate is None else float(rate)), (None if conc is None else float(conc))


def model_name(cfg) -> str | None:
    if not isinstance(cfg, dict):
        return None
    ep = cfg.get("endpoint")
    if isinstance(ep, dict) and isinstance(ep.get("model_names"), list) and ep["model_names"]:
        return str(ep["model_names"][0])[:200]
    models = cfg.get("models")
    if isinstance(models, dict) and isinstance(models.get("items"), list) and models["items"]:
        it = models["items"][0]
        return str(it.get("name") if isinstance(it, dict) else it)[:200]
    if isinstance(models, list) and models:
        return str(models[0])[:200]
    return None


# ------------------------------------------------------------------ the summary

def summary_fields(obj: dict, where: str) -> dict:
    """The run's own numbers from a summary: load_runs fields (load excluded)."""
    dur = stat(obj, "benchmark_duration", "avg", where)
    if dur is None or dur <= 0:
        raise EaglelogError(f"{where}: no positive 'benchmark_duration.avg' in the aiperf "
                            "summary")
    completed = stat(obj, "request_count", "avg", where)
    failed = stat(obj, "error_request_count", "avg", where)
    out = {"duration_s": dur, "completed": None if completed is None else int(completed),
           "failed": 0 if failed is None else int(failed),
           "total_output_tokens": stat(obj, "total_osl", "avg", where),
           "output_tok_s": stat(obj, "output_token_throughput", "avg", where),
           "request_throughput": stat(obj, "request_throughput", "avg", where),
           "accept_len": stat(obj, "spec_decode_token_weighted_acceptance_length", "avg",
                              where) or stat(obj, "spec_decode_acceptance_length", "avg",
                                             where)}
    extra = {}
    for tag, m in METRIC_TAGS:
        if not isinstance(obj.get(tag), dict):
            continue
        for key, col in (("avg", "mean"), ("p50", "median"), ("std", "std"), ("p90", "p90"),
                         ("p99", "p99")):
            v = stat(obj, tag, key, where, time=True)
            if v is not None:
                out[f"{col}_{m}_ms"] = v
        for key in ("p1", "p5", "p10", "p25", "p75", "p95", "min", "max"):
            v = stat(obj, tag, key, where, time=True)
            if v is not None:
                extra[f"{key}_{m}_ms"] = v
    if extra:
        out["extra"] = extra
    return out


# ------------------------------------------------------------------ the records

def records(values: list, source: str) -> dict:
    """The per-request columns of a records file's values [(obj, line)]: ok, ttft_ms,
    tpot_ms, e2el_ms, itl (a list of gap arrays, ms), output_tokens, prompt_tokens, error,
    accept_len, and the run's pooled acceptance (accepted, steps); warmup records left out
    and counted."""
    rows, warm, notes = [], 0, []
    for obj, line in values:
        where = f"{source}:{line}"
        if not is_record(obj):
            raise EaglelogError(f"{where}: not an aiperf record (an object with 'metadata' and "
                                "'metrics'), in a file of aiperf records")
        md = obj["metadata"]
        if str(md.get("benchmark_phase", "profiling")).lower() != "profiling":
            warm += 1
            continue
        mets = obj.get("metrics") or {}
        if not isinstance(mets, dict):
            raise EaglelogError(f"{where}: 'metrics' is a JSON {type(mets).__name__}, not an "
                                "object")
        rows.append((where, md, mets, obj.get("error"), obj.get("spec_decode_acceptance")))
    if warm:
        notes.append(f"{source}: {warm} warmup record(s) left out (benchmark_phase warmup)")
    n = len(rows)
    col = {k: np.full(n, np.nan) for k in ("ttft_ms", "tpot_ms", "e2el_ms", "output_tokens",
                                          "prompt_tokens", "accept_len")}
    ok = np.zeros(n, dtype=bool)
    errors, itl = [None] * n, [None] * n
    accepted = steps = 0
    for i, (where, md, mets, err, acc) in enumerate(rows):
        def val(tag, time=False, where=where, mets=mets):
            m = mets.get(tag)
            if not isinstance(m, dict) or m.get("value") is None:
                return None
            v = m["value"]
            f = _factor(m.get("unit"), tag, where) if time else 1.0
            if isinstance(v, list):
                try:
                    return np.asarray(v, dtype=float) * f
                except (TypeError, ValueError):
                    raise EaglelogError(f"{where}: '{tag}' holds a non-number") from None
            if not _finite(v):
                raise EaglelogError(f"{where}: bad value {str(v)[:40]!r} for '{tag}' (a "
                                    "finite number)")
            return float(v) * f
        if err:
            errors[i] = str(err.get("message") if isinstance(err, dict) else err)[:200]
            if isinstance(err, dict) and err.get("code") is not None:
                errors[i] = f"{err['code']}: {errors[i]}"[:200]
        ttft, lat = val("time_to_first_token", True), val("request_latency", True)
        osl = val("output_sequence_length")
        if osl is None:
            osl = val("output_token_count")
        isl = val("input_sequence_length")
        col["prompt_tokens"][i] = np.nan if isl is None else isl
        good = not err and not md.get("was_cancelled") and ttft is not None and \
            lat is not None and osl is not None and osl > 0
        if not good:
            col["output_tokens"][i] = 0 if err or osl is None else osl
            if not err and (ttft is None or lat is None) and osl:
                notes.append(f"{where}: a request without an error but without "
                             "time_to_first_token or request_latency; left out")
            continue
        ok[i] = True
        col["ttft_ms"][i], col["e2el_ms"][i], col["output_tokens"][i] = ttft, lat, osl
        tpot = val("inter_token_latency", True)
        if tpot is None and osl > 1:
            tpot = (lat - ttft) / (osl - 1)
        col["tpot_ms"][i] = np.nan if tpot is None or osl <= 1 else tpot
        gaps = val("inter_chunk_latency", True)
        if gaps is not None:
            itl[i] = np.atleast_1d(gaps)
        a = val("spec_decode_acceptance_length")
        if isinstance(acc, dict):
            if a is None and _finite(acc.get("mean_acceptance_length")):
                a = float(acc["mean_acceptance_length"])
            if _finite(acc.get("num_spec_steps")) and _finite(
                    acc.get("num_accepted_draft_tokens")):
                accepted += acc["num_accepted_draft_tokens"]
                steps += acc["num_spec_steps"]
        col["accept_len"][i] = np.nan if a is None else a
    col.update(ok=ok, error=errors, itl=itl, notes=notes, n=n,
               pooled_accept_len=(1.0 + accepted / steps) if steps else None)
    return col
