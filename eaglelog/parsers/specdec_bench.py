"""NVIDIA specdec_bench / SPEED-Bench result directories for `eaglelog latency` (docs/latency.md
§1.4): ``timing.json``, ``acceptance_rate.json`` and ``configuration.json`` of one run.  Plain
functions over parsed JSON values; parsers/loadtest.py finds the files of a run directory, pairs
them and builds the ``load_runs`` row from what these return.

The format, checked in NVIDIA's source (github.com/NVIDIA/Model-Optimizer at a2fbac7b,
``examples/specdec_bench/``; the repository was called TensorRT-Model-Optimizer before):

* Every ``run.py`` run records ``Timing`` (metrics/timing.py) and exactly one acceptance metric:
  ``AcceptanceRate``, or its subclasses ``MTBench`` (``--mtbench``) and ``SpecBench``
  (``--specbench`` and ``--dataset speed``, SPEED-Bench), all named ``acceptance_rate``
  (run.py:200–208; acceptance_rate.py:26).  With ``--save_dir`` it first writes
  ``configuration.json`` (run.py:210–216; utils.py:276–324): ``vars(args)`` — ``concurrency``
  (the load point: an asyncio semaphore over the requests, run.py:96–101, 372–378),
  ``engine``, ``speculative_algorithm`` ("NONE" without speculation, run.py:303–310),
  ``model_dir``, ``num_requests``, … — plus ``serving_config``, versions and a timestamp,
  ``json.dump(indent=4)``, overwritten by each run.
* ``Metric.write`` (metrics/base.py:36–48) keeps ``<save_dir>/<name>.json`` as a JSON **list**,
  indented 4, one object a run: a second run into the same directory appends its object.
* ``timing.json`` (timing.py:29–59): ``"Output TPS"`` (Σ output tokens / (last chunk − first
  request start), tok/s), ``"Output TPS/gpu"``, and ``compute_statistics`` objects
  (timing.py:65–87: ``min``, ``max``, ``mean``, ``std`` and ``quantiles`` {"0.25", "0.5",
  "0.75"}, numpy's linear percentiles; every number a **string** with 4 decimals) of
  ``"E2E Request Time"`` (s: last chunk − request start), ``"TTFT Time"`` (s: first chunk −
  start), ``"Request Generation Step Time"`` (s: the gaps between consecutive timestamps of
  every request, pooled — the first of them is the request's TTFT), ``"Request Generation
  Tokens Per Second"`` (per request (tokens − 1) / (last chunk − first chunk), the reciprocal
  of vLLM's TPOT) and ``"Number of Output Tokens"`` (since 2802302, Feb 2026).  One sample is
  one generate call — one turn of a conversation (run.py:106–118, runners/simple.py:26–28);
  the timestamps are ``time.perf_counter()`` at the request's start and at each streamed
  chunk (models/vllm.py:184–200, trtllm_torch_api.py:60–82, sglang.py:116–124).  **No
  per-request value is saved.**
* ``acceptance_rate.json`` (acceptance_rate.py:28–84): per generate call the length of each
  streamed chunk (tokens per chunk: one verify step's accepted tokens + 1 when every step is
  its own chunk; the first chunk is the prefill's token).  ``"Request_AL"``: {request id:
  {turn id: mean chunk length}} (``AcceptanceRate``), or {request id: AL} with the turns'
  chunks pooled (``MTBench``, mtbench.py:37–44; ``SpecBench``, keyed by ``question_id``,
  specbench.py:47–53); ``"Average_AL"`` the mean of those values; ``"Acceptance_Length_
  Histogram"`` {chunk length: count} over every chunk of the run; ``"Conditional_Acceptance_
  Rate"``, ``"Joint_Acceptance_Rate"``; ``"Category_AL"`` (MTBench, SpecBench).  JSON makes
  every key a string.  Before a2c496a (NVIDIA/Model-Optimizer#1531, May 2026) the keys were
  spelled ``Request_AR``, ``Average_AR``, ``Category_AR`` and no configuration.json was
  written.  ``SpecBench`` also writes ``specbench_results.json`` (specbench.py:108–110): the
  same object, alone (not in a list).
* A failed request stops the run (run.py:135–139 re-raises it), so a written file has none.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import EaglelogError

TIMING = "timing.json"
ACCEPTANCE = "acceptance_rate.json"
CONFIGURATION = "configuration.json"
# the names specdec_bench gives its files in a run directory; any of them names the run
FILES = (TIMING, ACCEPTANCE, CONFIGURATION, "aa_timing.json", "specbench_results.json")
STATS = ("min", "max", "mean", "std")
QUARTILES = ("0.25", "0.5", "0.75")


def kind(obj) -> str | None:
    """Which specdec_bench file this JSON object is an entry of: "timing", "acceptance",
    "aa_timing", "configuration", or None."""
    if not isinstance(obj, dict):
        return None
    if "Output TPS" in obj and ("TTFT Time" in obj or "E2E Request Time" in obj):
        return "timing"
    if "AA Output TPS" in obj:
        return "aa_timing"
    if any(k in obj for k in ("Request_AL", "Request_AR")) and any(
            k in obj for k in ("Average_AL", "Average_AR", "Acceptance_Length_Histogram")):
        return "acceptance"
    if all(k in obj for k in ("concurrency", "engine", "speculative_algorithm")):
        return "configuration"
    return None


def _number(v, what: str, where: str, *, positive: bool = False) -> float:
    """A statistic as specdec_bench writes it: a string with 4 decimals (or a number)."""
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            x = math.nan
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        x = float(v)
    else:
        x = math.nan
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise EaglelogError(f"{where}: bad value {str(v)[:40]!r} for '{what}' (a "
                            f"{'positive' if positive else 'non-negative'} finite number)")
    return x


def statistics(obj: dict, key: str, where: str) -> dict | None:
    """``obj[key]``, a ``compute_statistics`` object, as {"min", "max", "mean", "std", "0.25",
    "0.5", "0.75": float}; None when absent."""
    s = obj.get(key)
    if s is None:
        return None
    if not isinstance(s, dict) or not isinstance(s.get("quantiles"), dict):
        raise EaglelogError(f"{where}: '{key}' is not a statistics object (min, max, mean, "
                            "std and quantiles, as specdec_bench's compute_statistics writes "
                            "it)")
    out = {k: _number(s.get(k), f"{key}.{k}", where) for k in STATS}
    for q in QUARTILES:
        out[q] = _number(s["quantiles"].get(q), f"{key}.quantiles.{q}", where)
    return out


def timing_fields(obj: dict, where: str) -> tuple[dict, dict]:
    """(load_runs fields, extra) of one ``timing.json`` entry: TTFT and e2el mean/median/std in
    ms, the p50 TPOT as 1000 / the median of the requests' generation tok/s, the aggregate
    output tok/s; the quartiles, extremes, step times and token counts in ``extra``."""
    tps = _number(obj.get("Output TPS"), "Output TPS", where, positive=True)
    out = {"output_tok_s": tps}
    extra: dict = {}
    if obj.get("Output TPS/gpu") is not None:
        extra["output_tok_s_per_gpu"] = _number(obj["Output TPS/gpu"], "Output TPS/gpu", where)
    found = False
    for key, m in (("TTFT Time", "ttft"), ("E2E Request Time", "e2el")):
        s = statistics(obj, key, where)
        if s is None:
            continue
        found = True
        out[f"mean_{m}_ms"], out[f"median_{m}_ms"] = s["mean"] * 1e3, s["0.5"] * 1e3
        out[f"std_{m}_ms"] = s["std"] * 1e3
        extra.update({f"p25_{m}_ms": s["0.25"] * 1e3, f"p75_{m}_ms": s["0.75"] * 1e3,
                      f"min_{m}_ms": s["min"] * 1e3, f"max_{m}_ms": s["max"] * 1e3})
    if not found:
        raise EaglelogError(f"{where}: neither 'TTFT Time' nor 'E2E Request Time' in the "
                            "specdec_bench timing")
    s = statistics(obj, "Request Generation Tokens Per Second", where)
    if s is not None:
        # TPOT = 1 / the request's generation rate: a decreasing map, so the quartiles swap
        inv = {k: (1e3 / s[k] if s[k] > 0 else math.inf) for k in ("min", "max", *QUARTILES)}
        out["median_tpot_ms"] = inv["0.5"]
        extra.update({"p25_tpot_ms": inv["0.75"], "p75_tpot_ms": inv["0.25"],
                      "min_tpot_ms": inv["max"], "max_tpot_ms": inv["min"],
                      "mean_stream_tok_s": s["mean"], "std_stream_tok_s": s["std"]})
    s = statistics(obj, "Request Generation Step Time", where)
    if s is not None:
        extra.update({f"{k if k in STATS else 'p' + str(round(float(k) * 100))}_step_ms":
                      v * 1e3 for k, v in s.items()})
    s = statistics(obj, "Number of Output Tokens", where)
    if s is not None:
        extra.update({f"{k if k in STATS else 'p' + str(round(float(k) * 100))}_output_tokens":
                      v for k, v in s.items()})
    return out, {k: v for k, v in extra.items() if math.isfinite(v)}


# ------------------------------------------------------------------ acceptance

def _key(k) -> object:
    """A JSON object key back to the int it was, when it was one."""
    try:
        return int(k)
    except (TypeError, ValueError):
        return k


def acceptance(obj: dict, where: str) -> dict:
    """One ``acceptance_rate.json`` entry: ``samples`` (the per-request accept lengths, an
    array), ``unit`` (what one sample is), ``calls`` (the generate calls behind them when
    the file says so, else None), ``pooled`` (Σ tokens / Σ chunks from the histogram, None
    without one), ``average`` (the file's Average_AL)."""
    req = obj.get("Request_AL", obj.get("Request_AR"))
    if not isinstance(req, dict) or not req:
        raise EaglelogError(f"{where}: 'Request_AL' is not an object of request → accept "
                            "length (specdec_bench's acceptance_rate.json)")
    nested = [isinstance(v, dict) for v in req.values()]
    if any(nested) and not all(nested):
        raise EaglelogError(f"{where}: 'Request_AL' mixes per-turn objects and numbers")
    vals, ids = [], []
    for rid, v in req.items():
        for tid, x in (v.items() if isinstance(v, dict) else [(None, v)]):
            what = f"Request_AL.{rid}" + ("" if tid is None else f".{tid}")
            vals.append(_number(x, what, where, positive=True))
            ids.append((_key(rid), None if tid is None else _key(tid)))
    samples = np.asarray(vals, dtype=float)
    if np.any(samples < 1):
        i = int(np.flatnonzero(samples < 1)[0])
        raise EaglelogError(f"{where}: accept length {samples[i]:g} below 1 for request "
                            f"{ids[i][0]} (a mean of tokens per chunk)")
    hist = obj.get("Acceptance_Length_Histogram")
    pooled = None
    if hist is not None:
        if not isinstance(hist, dict):
            raise EaglelogError(f"{where}: 'Acceptance_Length_Histogram' is not an object "
                                "{chunk length: count}")
        tokens = chunks = 0.0
        for k, c in hist.items():
            length = _number(k, f"Acceptance_Length_Histogram key {k!r}", where)
            count = _number(c, f"Acceptance_Length_Histogram.{k}", where)
            tokens += length * count
            chunks += count
        pooled = tokens / chunks if chunks > 0 else None
    avg = obj.get("Average_AL", obj.get("Average_AR"))
    return {"samples": samples, "ids": ids, "nested": all(nested),
            "unit": "request-turn" if all(nested) else "question, its turns pooled",
            "calls": len(samples) if all(nested) else None, "pooled": pooled,
            "average": None if avg is None else _number(avg, "Average_AL", where)}


# ------------------------------------------------------------------ configuration

def load_point(cfg: dict, where: str) -> float:
    """The run's load point: ``concurrency`` of configuration.json (run.py:372–378)."""
    c = cfg.get("concurrency")
    if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c) or c <= 0:
        raise EaglelogError(f"{where}: bad value {str(c)[:40]!r} for 'concurrency' (a positive "
                            "number: specdec_bench's --concurrency)")
    return float(c)


def describe(cfg: dict) -> dict:
    """The configuration's words for the run: model, engine, speculative algorithm."""
    alg = cfg.get("speculative_algorithm")
    return {"model": None if cfg.get("model_dir") is None else str(cfg["model_dir"])[:200],
            "engine": None if cfg.get("engine") is None else str(cfg["engine"])[:40],
            "speculative_algorithm": None if alg is None else str(alg)[:40],
            "num_requests": cfg.get("num_requests") if isinstance(cfg.get("num_requests"), int)
            and not isinstance(cfg.get("num_requests"), bool) else None}
