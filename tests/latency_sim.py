"""A simulator of `vllm bench serve --save-result --save-detailed` runs with a KNOWN truth, for
`eaglelog latency` (docs/latency.md §5).  Synthetic: no server ran.

Per load point λ (req/s) and arm, every request draws independently
  TTFT ~ lognormal, median m_ttft(λ), log-σ s_ttft
  TPOT ~ lognormal, median m_tpot(λ), log-σ s_tpot
  output length ~ uniform integer [out_lo, out_hi]; a request fails with probability p_fail
and streams its output tokens after the first in chunks — one token a chunk for the baseline,
for speculation a chunk ends after each token with probability 1/2.5 (2.5 tokens a chunk on
average) — whose gaps are proportional to the chunk's tokens × lognormal(0, 0.2) jitter,
scaled so that (e2el − ttft) / (output − 1) is exactly the request's TPOT.  A run's duration
is n / λ.

    baseline  m_tpot = 30 e^{0.05 λ} ms (σ 0.25)   m_ttft = 120 e^{0.20 λ} ms (σ 0.5)
    spec      m_tpot = 17 e^{0.17 λ} ms (σ 0.30)   m_ttft = 140 e^{0.22 λ} ms (σ 0.5)

so speculation's per-stream rate (∝ 1 / median TPOT) is (30/17) e^{−0.12 λ} × the baseline's:
1.09× at 4 req/s, 0.97× at 5, 0.86× at 6 — the true crossover is 5 req/s (first load with a
ratio below 1; goodput under ttft=2s,tpot=50ms never falls below the baseline's earlier).
The truth of TTFT and TPOT quantiles is closed-form; ITL's (a mixture over requests and
chunks) is a Monte-Carlo quantile of 40,000 simulated requests.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache

import numpy as np
from scipy.stats import norm

LOADS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
SLO = {"ttft": 2000.0, "tpot": 50.0}
PARAMS = {
    "baseline": dict(tpot=(30.0, 0.05, 0.25), ttft=(120.0, 0.20, 0.5), chunk_p=1.0),
    "spec": dict(tpot=(17.0, 0.17, 0.30), ttft=(140.0, 0.22, 0.5), chunk_p=1 / 2.5),
}
JITTER = 0.2


def median(arm: str, metric: str, load: float) -> float:
    m0, k, _ = PARAMS[arm][metric]
    return m0 * math.exp(k * load)


def true_quantile(arm: str, metric: str, load: float, q: float) -> float:
    if metric == "itl":
        return itl_truth(arm, load)[q]
    _, _, s = PARAMS[arm][metric]
    return median(arm, metric, load) * math.exp(s * norm.ppf(q))


def true_share(arm: str, load: float, slo=SLO, p_fail: float = 0.0) -> float:
    """P(completed and TTFT ≤ slo and TPOT ≤ slo)."""
    out = 1.0 - p_fail
    for m in ("ttft", "tpot"):
        if m in slo:
            s = PARAMS[arm][m][2]
            out *= norm.cdf(math.log(slo[m] / median(arm, m, load)) / s)
    return out


def true_crossover(slo=SLO, loads=LOADS) -> float:
    for x in loads:
        ratio = median("baseline", "tpot", x) / median("spec", "tpot", x)
        if ratio < 1 or true_share("spec", x, slo) * x < true_share("baseline", x, slo) * x:
            return x
    return math.nan


def requests(arm: str, load: float, n: int, rng: np.random.Generator, out_lo: int = 16,
             out_hi: int = 48, p_fail: float = 0.0):
    """Arrays of one run: ttft (s), output lengths, the flat gaps (s) with their request, and
    the failed mask."""
    P = PARAMS[arm]
    ttft = median(arm, "ttft", load) * np.exp(P["ttft"][2] * rng.standard_normal(n)) / 1000
    tpot = median(arm, "tpot", load) * np.exp(P["tpot"][2] * rng.standard_normal(n)) / 1000
    out = rng.integers(out_lo, out_hi + 1, size=n)
    failed = rng.random(n) < p_fail
    # tokens after the first, flat; a chunk closes after a token w.p. chunk_p and at the end
    ntok = out - 1
    owner = np.repeat(np.arange(n), ntok)
    close = rng.random(len(owner)) < P["chunk_p"]
    ends = np.cumsum(ntok) - 1
    close[ends[ntok > 0]] = True
    # chunk id of every token: chunks are the runs of tokens up to a closing one
    starts = np.r_[0, np.flatnonzero(close)[:-1] + 1]
    sizes = np.flatnonzero(close) - starts + 1
    chunk_owner = owner[starts]
    w = sizes * np.exp(JITTER * rng.standard_normal(len(sizes)))
    wsum = np.bincount(chunk_owner, weights=w, minlength=n)
    gaps = w / wsum[chunk_owner] * (tpot * ntok)[chunk_owner]
    return ttft, out, gaps, chunk_owner, failed


@lru_cache(maxsize=None)
def itl_truth(arm: str, load: float) -> dict:
    rng = np.random.default_rng(12345 + int(load * 100) + (7 if arm == "spec" else 0))
    _, _, gaps, _, _ = requests(arm, load, 40_000, rng)
    ms = gaps * 1000
    return {q: float(np.quantile(ms, q)) for q in (0.5, 0.9, 0.99)}


def result(arm: str, load: float, n: int, rng: np.random.Generator, **kw) -> dict:
    """One `vllm bench serve --save-result --save-detailed` result object (serve.py:1318–1340,
    2306–2335), its summary numbers computed as vLLM computes them."""
    ttft, out, gaps, owner, failed = requests(arm, load, n, rng, **kw)
    splits = np.cumsum(np.bincount(owner, minlength=n))[:-1]
    itls = [g.tolist() for g in np.split(gaps, splits)]
    lat = ttft + np.bincount(owner, weights=gaps, minlength=n)
    ok = ~failed
    duration = n / load
    out_ok = np.where(ok, out, 0)
    tp = (lat - ttft)[ok] / (out[ok] - 1)
    pooled = np.concatenate([gaps[owner == i] for i in np.flatnonzero(ok)]) if ok.any() else \
        np.zeros(1)
    obj = {"date": "20260101-000000", "endpoint_type": "openai", "backend": "openai",
           "label": f"synthetic-{arm}", "model_id": "synthetic/model",
           "tokenizer_id": "synthetic/model", "num_prompts": n, "request_rate": load,
           "burstiness": 1.0, "max_concurrency": None,
           "duration": duration, "completed": int(ok.sum()), "failed": int(failed.sum()),
           "total_input_tokens": int(ok.sum()) * 512, "total_output_tokens": int(out_ok.sum()),
           "request_throughput": ok.sum() / duration, "request_goodput": None,
           "output_throughput": out_ok.sum() / duration,
           "total_token_throughput": (out_ok.sum() + 512 * ok.sum()) / duration,
           "input_lens": [512] * n, "output_lens": out_ok.tolist(),
           "ttfts": np.where(ok, ttft, 0.0).tolist(),
           "itls": [g if o else [] for g, o in zip(itls, ok)],
           "latencies": np.where(ok, lat, 0.0).tolist(),
           "start_times": (np.arange(n) / load).tolist(),
           "errors": ["" if o else "HTTP 503: Service Unavailable" for o in ok],
           "max_output_tokens_per_s": float(out_ok.sum() / duration * 1.5),
           "max_concurrent_requests": 8, "rtfx": 0.0}
    for m, vals in (("ttft", ttft[ok]), ("tpot", tp), ("itl", pooled), ("e2el", lat[ok])):
        ms = vals * 1000
        obj[f"mean_{m}_ms"] = float(np.mean(ms))
        obj[f"median_{m}_ms"] = float(np.median(ms))
        obj[f"std_{m}_ms"] = float(np.std(ms))
        obj[f"p99_{m}_ms"] = float(np.percentile(ms, 99))
    if arm == "spec":
        obj["spec_decode_acceptance_length"] = 2.5
    return obj


def run_of(arm: str, load: float, n: int, rng: np.random.Generator, p_fail: float = 0.0,
           **kw):
    """The LoadRun that eaglelog.parsers.loadtest reads from ``result(...)``'s file, built
    from the arrays directly (the calibration runs thousands; tests check that both agree)."""
    from eaglelog.parsers.loadtest import LoadRun, frame
    from eaglelog.schema import LOAD_REQUESTS

    ttft, out, gaps, owner, failed = requests(arm, load, n, rng, p_fail=p_fail, **kw)
    ok = ~failed
    spent = np.bincount(owner, weights=gaps, minlength=n) * 1000
    chunks = np.bincount(owner, minlength=n)
    req = frame(LOAD_REQUESTS, {
        "source": [f"{arm}-{load:g}.json"] * n, "line_no": np.ones(n, dtype=np.int64),
        "run": [f"synthetic-{arm}"] * n, "load": np.full(n, load),
        "request": np.arange(n), "ok": ok, "ttft_ms": np.where(ok, ttft * 1000, np.nan),
        "tpot_ms": np.where(ok, spent / (out - 1), np.nan),
        "itl_mean_ms": np.where(ok, spent / chunks, np.nan),
        "itl_chunks": np.where(ok, chunks, 0), "e2el_ms": np.where(ok, ttft * 1000 + spent,
                                                                   np.nan),
        "output_tokens": np.where(ok, out, 0), "prompt_tokens": np.full(n, 512),
        "error": [None] * n})
    keep = ok[owner]
    duration = n / load
    run = {"source": f"{arm}-{load:g}.json", "line_no": 1, "run": f"synthetic-{arm}",
           "load": load, "load_kind": "rate", "request_rate": load, "max_concurrency": None,
           "duration_s": duration, "completed": int(ok.sum()), "failed": int(failed.sum()),
           "num_prompts": n, "total_output_tokens": float(out[ok].sum()),
           "output_tok_s": float(out[ok].sum()) / duration, "detailed": True}
    return LoadRun(run["source"], 1, run, req, gaps[keep] * 1000, owner[keep])


def write(path, objs) -> None:
    """vLLM's way: json.dump of each object, '\\n' between them (--append-result)."""
    with open(path, "w", encoding="utf-8") as fh:
        for i, o in enumerate(objs):
            if i:
                fh.write("\n")
            json.dump(o, fh)


QS = ((0.5, "p50"), (0.9, "p90"), (0.99, "p99"))


def calibrate(runs: int = 200, n: int = 200, resamples: int = 1000, seed: int = 0,
              loads=LOADS, confidence: float = 0.95, p_fail: float = 0.0) -> dict:
    """Simulate ``runs`` spec/baseline load tests (n requests a point), analyse each with
    eaglelog.analysis.latency, and count: per metric and quantile, how often the interval
    holds the truth and its mean width relative to the truth; how often the crossover is
    found within one load step of the true one (and exactly)."""
    from eaglelog.analysis.latency import latency
    rng = np.random.default_rng(seed)
    truth = {(a, m, x, q): true_quantile(a, m, x, q) for a in PARAMS
             for m in ("ttft", "tpot", "itl") for x in loads for q, _ in QS}
    cover = {(m, qn): [] for m in ("ttft", "tpot", "itl") for _, qn in QS}
    width = {k: [] for k in cover}
    true_x = true_crossover(loads=loads)
    step = loads[1] - loads[0]
    hit = exact = 0
    found = []
    for i in range(runs):
        spec = [run_of("spec", x, n, rng, p_fail=p_fail) for x in loads]
        base = [run_of("baseline", x, n, rng, p_fail=p_fail) for x in loads]
        r = latency(spec, base, slo=SLO, resamples=resamples, seed=seed * 100_003 + i,
                    confidence=confidence)
        for p in r.points:
            for a in (p.spec, p.baseline):
                for m in ("ttft", "tpot", "itl"):
                    for q, qn in QS:
                        e = a.quantiles[m][qn]
                        t = truth[(a.arm, m, p.load, q)]
                        lo = -np.inf if e.ci_low is None else e.ci_low
                        hi = np.inf if e.ci_high is None else e.ci_high
                        cover[(m, qn)].append(lo <= t <= hi)
                        width[(m, qn)].append((hi - lo) / t)
        c = r.crossover["overall"]
        found.append(c)
        if c is not None and abs(c - true_x) <= step + 1e-9:
            hit += 1
        if c is not None and abs(c - true_x) < 1e-9:
            exact += 1
    return {"runs": runs, "n": n, "resamples": resamples, "confidence": confidence,
            "coverage": {k: float(np.mean(v)) for k, v in cover.items()},
            "width": {k: float(np.mean(v)) for k, v in width.items()},
            "samples": len(next(iter(cover.values()))),
            "true_crossover": true_x, "crossover_within_one_step": hit / runs,
            "crossover_exact": exact / runs,
            "crossover_found": {str(k): found.count(k) for k in sorted(set(found), key=str)}}


# ------------------------------------------------------------------ the other harnesses' shapes
# The same draws as ``result`` (same rng, same arrays) written as SGLang bench_serving and as
# ai-dynamo aiperf write them, so that every format goes through one calibration path and
# gives the same numbers.  Synthetic: no server ran.

def _stats(ms: np.ndarray, pcts=(90, 95, 99)) -> dict:
    return {"mean": float(np.mean(ms)), "median": float(np.median(ms)),
            "std": float(np.std(ms)), **{f"p{p}": float(np.percentile(ms, p)) for p in pcts}}


def sglang_result(arm: str, load: float, n: int, rng: np.random.Generator,
                  details: bool = True, backend: str = "sglang-oai", **kw) -> dict:
    """One line of `python -m sglang.bench_serving --output-file X.jsonl [--output-details]`
    (sglang 0.5.23, sglang/benchmark/serving.py:1855–1966): the run's numbers as
    calculate_metrics computes them (serving.py:1132–1312: TPOT = (latency − ttft) /
    (output_len − 1) over successes, ITL the pooled gaps, e2e the latency) and, with
    details, input_lens, output_lens (0 for a failure), ttfts, itls, generated_texts, errors."""
    o = result(arm, load, n, rng, **kw)
    ok = np.array([not e for e in o["errors"]])
    ttft = np.array(o["ttfts"])[ok]
    lat = np.array(o["latencies"])[ok]
    outl = np.array(o["output_lens"])[ok]
    tp = ((lat - ttft) / np.maximum(outl - 1, 1))[outl > 1]
    gaps = np.concatenate([np.array(g) for g, k in zip(o["itls"], ok) if k] or [np.zeros(1)])
    dur = o["duration"]
    tot_out = int(np.sum(o["output_lens"]))
    res = {"tag": f"synthetic-{arm}", "backend": backend, "dataset_name": "random",
           "request_rate": load, "max_concurrency": None, "sharegpt_output_len": None,
           "random_input_len": 512, "random_output_len": 48, "random_range_ratio": 0.0,
           "server_info": None, "duration": dur, "completed": int(ok.sum()),
           "total_input_tokens": 512 * int(ok.sum()),
           "total_input_text_tokens": 512 * int(ok.sum()), "total_input_vision_tokens": 0,
           "total_output_tokens": tot_out, "total_output_tokens_retokenized": tot_out,
           "request_throughput": ok.sum() / dur, "input_throughput": 512 * ok.sum() / dur,
           "output_throughput": tot_out / dur,
           "total_throughput": (512 * ok.sum() + tot_out) / dur}
    for name, vals in (("e2e_latency", lat), ("ttft", ttft), ("tpot", tp), ("itl", gaps)):
        for k, v in _stats(vals * 1000).items():
            res[f"{k}_{name}_ms"] = v
    res.update({"concurrency": float(np.sum(lat) / dur),
                "accept_length": 2.5 if arm == "spec" else None,
                "max_output_tokens_per_s": float(tot_out / dur * 1.5),
                "max_concurrent_requests": 8})
    if details:
        res.update({"input_lens": o["input_lens"], "output_lens": o["output_lens"],
                    "ttfts": o["ttfts"], "itls": o["itls"],
                    "generated_texts": ["" if not k else "synthetic" for k in ok],
                    "errors": ["" if k else "Service Unavailable: synthetic overload"
                               for k in ok]})
    return res


def write_sglang(path, objs) -> None:
    """SGLang's way: json.dumps(result) + "\n", appended (serving.py:1961–1966)."""
    with open(path, "a", encoding="utf-8") as fh:
        for o in objs:
            fh.write(json.dumps(o) + "\n")


def _metric(unit: str, vals) -> dict:
    """aiperf's JsonMetricResult (export_models.py:25–67) of record values."""
    v = np.asarray(vals, dtype=float)
    out = {"unit": unit, "avg": float(np.mean(v))}
    for p in (1, 5, 10, 25, 50, 75, 90, 95, 99):
        out[f"p{p}"] = float(np.percentile(v, p))
    out.update({"min": float(np.min(v)), "max": float(np.max(v)), "std": float(np.std(v)),
                "count": int(len(v)), "sum": float(np.sum(v))})
    return out


T0_NS = 1_767_225_600_000_000_000          # 2026-01-01T00:00:00Z


def aiperf_run(arm: str, load: float, n: int, rng: np.random.Generator, kind: str = "rate",
               warmup: int = 0, **kw) -> tuple[dict, list]:
    """(profile_export_aiperf.json, the records of profile_export.jsonl) of one aiperf 0.13
    run (record_models.py:165–300, 1714–1745; spec_decode_models.py:19–101;
    export_models.py:281–377): per request metadata, metrics {value, unit} in ms/tokens,
    inter_chunk_latency the gaps, inter_token_latency the request's TPOT, and for speculation
    the request's acceptance (each chunk after the first one verify step)."""
    o = result(arm, load, n, rng, **kw)
    recs, acc_tot, steps_tot = [], 0, 0
    for i in range(-warmup, n):
        j = max(i, 0)
        ok = not o["errors"][j]
        start = T0_NS + int(o["start_times"][j] * 1e9)
        lat = o["latencies"][j]
        md = {"session_num": i + warmup, "x_request_id": f"synthetic-{i + warmup:05d}",
              "x_correlation_id": f"synthetic-c{i + warmup:05d}",
              "conversation_id": f"synthetic-d{j:05d}", "turn_index": 0,
              "request_start_ns": start, "request_ack_ns": start + 1_000_000,
              "request_end_ns": start + int((lat if ok else 0.001) * 1e9),
              "worker_id": "worker_synthetic", "record_processor_id": "record_processor_0",
              "benchmark_phase": "warmup" if i < 0 else "profiling", "was_cancelled": False}
        if not ok:
            recs.append({"metadata": md, "metrics": {"error_isl": {"value": 512,
                                                                   "unit": "tokens"}},
                         "error": {"code": 503, "type": "HTTPStatusError",
                                   "message": "Service Unavailable"}})
            continue
        ttft, out, gaps = o["ttfts"][j], o["output_lens"][j], o["itls"][j]
        m = {"input_sequence_length": {"value": 512, "unit": "tokens"},
             "time_to_first_token": {"value": ttft * 1000, "unit": "ms"},
             "request_latency": {"value": lat * 1000, "unit": "ms"},
             "inter_chunk_latency": {"value": [g * 1000 for g in gaps], "unit": "ms"},
             "output_sequence_length": {"value": out, "unit": "tokens"},
             "inter_token_latency": {"value": (lat - ttft) / (out - 1) * 1000, "unit": "ms"},
             "output_token_throughput_per_user": {"value": (out - 1) / (lat - ttft),
                                                  "unit": "tokens/sec/user"}}
        rec = {"metadata": md, "metrics": m}
        if arm == "spec":
            steps = len(gaps)                       # one verify step a chunk after the first
            accepted = (out - 1) - steps            # the tokens beyond one a step
            per = [accepted // steps + (1 if s < accepted % steps else 0) for s in range(steps)]
            hist = {str(k): per.count(k) for k in sorted(set(per))}
            mal = 1 + accepted / steps
            m["spec_decode_acceptance_length"] = {"value": mal, "unit": "ratio"}
            rec["spec_decode_acceptance"] = {
                "engine": "vllm", "mean_acceptance_length": mal,
                "draft_acceptance_rate": accepted / (3 * steps), "acceptance_histogram": hist,
                "num_accepted_draft_tokens": accepted, "num_draft_tokens": 3 * steps,
                "num_spec_steps": steps, "num_spec_tokens": 3, "completion_tokens": out}
            if i >= 0:
                acc_tot, steps_tot = acc_tot + accepted, steps_tot + steps
        recs.append(rec)
    prof = [r for r in recs if r["metadata"]["benchmark_phase"] == "profiling"]
    good = [r["metrics"] for r in prof if "error" not in r]
    dur = o["duration"]
    tot_out = sum(g["output_sequence_length"]["value"] for g in good)
    phase = ({"name": "profiling", "kind": "profiling", "type": "poisson", "rate": load,
              "requests": n} if kind == "rate" else
             {"name": "profiling", "kind": "profiling", "type": "concurrency",
              "concurrency": int(load), "requests": n})
    summ = {"schema_version": "1.4", "aiperf_version": "0.13.0",
            "benchmark_id": f"synthetic-{arm}-{load:g}",
            "request_throughput": {"unit": "requests/sec", "avg": len(good) / dur}}
    for tag in ("request_latency", "time_to_first_token", "inter_token_latency"):
        summ[tag] = _metric("ms", [g[tag]["value"] for g in good])
    summ["output_token_throughput"] = {"unit": "tokens/sec", "avg": tot_out / dur}
    summ["output_sequence_length"] = _metric("tokens", [g["output_sequence_length"]["value"]
                                                        for g in good])
    summ["input_sequence_length"] = _metric("tokens", [512] * len(good))
    summ["inter_chunk_latency"] = _metric("ms", [x for g in good
                                                 for x in g["inter_chunk_latency"]["value"]])
    summ.update({"total_output_tokens": {"unit": "tokens", "avg": tot_out},
                 "benchmark_duration": {"unit": "sec", "avg": dur},
                 "total_isl": {"unit": "tokens", "avg": 512.0 * len(good)},
                 "total_osl": {"unit": "tokens", "avg": float(tot_out)},
                 "request_count": {"unit": "requests", "avg": float(len(good))}})
    if len(prof) > len(good):
        summ["error_request_count"] = {"unit": "requests", "avg": float(len(prof) - len(good))}
    if steps_tot:
        summ["spec_decode_token_weighted_acceptance_length"] = {
            "unit": "ratio", "avg": 1 + acc_tot / steps_tot}
    summ["input_config"] = {"models": {"strategy": "round_robin",
                                       "items": [{"name": "synthetic/model"}]},
                            "phases": [phase]}
    summ["run_info"] = {"benchmark_id": summ["benchmark_id"], "run_label": f"synthetic-{arm}"}
    summ["was_cancelled"] = False
    summ["is_complete"] = True
    return summ, recs


def write_aiperf(directory, summary: dict, records: list) -> tuple:
    """An aiperf artifact directory: profile_export_aiperf.json (indented, as
    metrics_json_exporter.py:199–205) and profile_export.jsonl (one record a line)."""
    import pathlib
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "profile_export_aiperf.json").write_text(json.dumps(summary, indent=2),
                                                  encoding="utf-8")
    with open(d / "profile_export.jsonl", "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, separators=(",", ":")) + "\n")
    return d / "profile_export_aiperf.json", d / "profile_export.jsonl"


SAMPLE_LOADS = (2.0, 4.0, 6.0, 8.0)


def _rounded(obj: dict) -> dict:
    """Times to the microsecond, so the bundled samples stay small (vLLM writes full floats)."""
    out = dict(obj)
    for k in ("ttfts", "latencies", "start_times"):
        out[k] = [round(v, 6) for v in obj[k]]
    out["itls"] = [[round(g, 6) for g in r] for r in obj["itls"]]
    return out


def make_samples(directory, n: int = 400, seed: int = 39) -> list:
    """sample_logs/latency/: a speculative and a baseline run at 2, 4, 6 and 8 req/s, one
    file each, as `vllm bench serve --save-result --save-detailed --request-rate X` writes
    them (synthetic: this simulator, 1 % failed requests)."""
    import pathlib
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = []
    for arm, name in (("spec", "spec"), ("baseline", "base")):
        for x in SAMPLE_LOADS:
            p = d / f"{name}-{x:g}qps.json"
            write(p, [_rounded(result(arm, x, n, rng, p_fail=0.01))])
            paths.append(p)
    return paths


FIXTURE_LOADS = (2.0, 6.0)


def _round_tree(x, nd: int):
    if isinstance(x, float):
        return round(x, nd)
    if isinstance(x, list):
        return [_round_tree(v, nd) for v in x]
    if isinstance(x, dict):
        return {k: _round_tree(v, nd) for k, v in x.items()}
    return x


def make_format_fixtures(directory, n: int = 50, seed: int = 41) -> list:
    """tests/fixtures/loadtest/: SGLang bench_serving --output-details JSONL (a spec and a
    baseline file, the runs at 2 and 6 req/s appended in each, as SGLang appends) and aiperf
    artifact directories (summary and records, 2 warmup records each) of the same shape,
    5 % failed requests.  Synthetic (this simulator); times rounded to the microsecond."""
    import pathlib
    d = pathlib.Path(directory)
    rng = np.random.default_rng(seed)
    paths = []
    for arm, name in (("spec", "spec"), ("baseline", "base")):
        p = d / "sglang" / f"{name}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.unlink(missing_ok=True)
        for x in FIXTURE_LOADS:
            o = sglang_result(arm, x, n, rng, p_fail=0.05)
            o["ttfts"] = [round(v, 6) for v in o["ttfts"]]
            o["itls"] = [[round(g, 6) for g in r] for r in o["itls"]]
            write_sglang(p, [o])
        paths.append(p)
        for x in FIXTURE_LOADS:
            summ, recs = aiperf_run(arm, x, n, rng, p_fail=0.05, warmup=2)
            paths.extend(write_aiperf(d / "aiperf" / f"{name}-{x:g}qps", _round_tree(summ, 6),
                                      _round_tree(recs, 3)))
    return paths


if __name__ == "__main__":
    import sys
    if sys.argv[1:2] == ["--fixtures"]:
        for p in make_format_fixtures(sys.argv[2] if len(sys.argv) > 2 else
                                      "tests/fixtures/loadtest"):
            print(p)
        sys.exit()
    for p in make_samples(sys.argv[1] if len(sys.argv) > 1 else "sample_logs/latency"):
        print(p)
