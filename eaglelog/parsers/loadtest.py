"""Load-test results for `eaglelog latency` (docs/latency.md): ``vllm bench serve --save-result``
JSON, one run per file (or one per line with ``--append-result``), read into the
``load_requests`` table (one row per request, when the file has the per-request lists of
``--save-detailed``) and the ``load_runs`` table (one row per run: the file's own numbers).

The format, checked in vLLM's released source (vllm 0.34.0 wheel, vllm/benchmarks/serve.py):

* ``benchmark()`` builds the result dict at serve.py:1318–1340: ``duration`` (s),
  ``completed``, ``failed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``request_goodput``, ``output_throughput`` (tok/s), and the
  per-request lists ``input_lens``, ``output_lens`` (0 for a failed request, serve.py:667),
  ``ttfts`` (s), ``itls`` (a list of gaps in s per request: one gap per streamed chunk after
  the first, lib/endpoint_request_func.py:293), ``latencies`` (s; = ttft + Σ itl,
  endpoint_request_func.py:313), ``start_times``, ``errors`` ('' for a success).
* ``process_one_metric`` (serve.py:1400–1432) adds ``mean_/median_/std_<m>_ms`` and
  ``p<P>_<m>_ms`` for m in ttft, tpot, itl (generation) and e2el, P from
  ``--metric-percentiles`` (default "99"; ``p99.9`` keeps its decimal, serve.py:1430).
* main adds ``date``, ``backend``, ``label``, ``model_id``, ``num_prompts``, ``request_rate``
  (a number, or the string "inf", serve.py:2326), ``burstiness``, ``max_concurrency`` (null
  when unset), ramp-up fields when ramping (serve.py:2306–2335); without ``--save-detailed``
  the per-request lists but ``latencies`` are deleted (serve.py:2428–2445); the file is
  ``json.dump(result_json, outfile)`` (one line, NaN/Infinity allowed), and ``--append-result``
  appends "\\n" and another (serve.py:2449–2457).
* TPOT of a request = (latency − ttft) / (output_len − 1), only for output_len > 1
  (serve.py:655–657); vLLM's ITL percentiles pool every gap of every request.  Older releases
  saved no ``latencies``: then e2el = ttft + Σ itl, the same number.

Not the line-based family machinery of parsers/others.py: those sniff markers line by line and
write the ``bench`` table, while a saved result is one JSON document whose per-request lists
make a single line of megabytes (and a pretty-printed copy, ``jq .``, spans many lines).  So
`latency` has this reader of its own: a file is read whole, as one JSON value (an object, or a
list of objects) or else as JSON lines; every problem is one ``EaglelogError`` naming the file
and, where it applies, the line.

SGLang ``python -m sglang.bench_serving --output-file X.jsonl`` (checked in the sglang 0.5.23
wheel: bench_serving.py re-exports sglang/benchmark/serving.py) writes the same kind of object
with other names, one a line (appended, serving.py:1961–1966): ``tag`` for the label,
``*_e2e_latency_ms`` for e2el, ``accept_length`` (the server's ``avg_spec_accept_length``,
serving.py:1645–1662), no ``failed``, no ``latencies``; with ``--output-details`` the lists
``input_lens``, ``output_lens`` (0 for a failure, serving.py:1190), ``ttfts``, ``itls``,
``generated_texts``, ``errors`` (serving.py:1945–1952).  ``sglang_to_vllm`` renames it and the
vLLM path reads it.  ai-dynamo aiperf's ``profile_export_aiperf.json`` summary and its
``profile_export.jsonl`` records are read by parsers/aiperf.py, paired here by their names.
NVIDIA specdec_bench / SPEED-Bench run directories (``timing.json``, ``acceptance_rate.json``,
``configuration.json``) are read by parsers/specdec_bench.py, paired here by their directory:
run-level statistics only (no per-request times), the per-request accept lengths in
``LoadRun.accept``.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import EaglelogError, InputError
from ..schema import LOAD_REQUESTS, LOAD_RUNS, Table
from . import aiperf, specdec_bench

METRICS = ("ttft", "tpot", "itl", "e2el")
LISTS = ("ttfts", "itls", "input_lens", "output_lens", "errors", "latencies")
NOT_YET = ("the TTFT/TPOT histograms of /metrics are read by fleet and watch, not here; "
           "SGLang's --rust-client results and aiperf's raw and timeslice exports are not read")
KNOWN = ("none of the load-test results eaglelog reads: vllm bench serve --save-result (an object "
         "with 'duration', 'completed' and '*_e2el_ms'), SGLang bench_serving --output-file "
         "('duration', 'completed', '*_e2e_latency_ms'), aiperf profile_export_aiperf.json "
         "(metric objects such as 'request_latency': {'unit', 'avg', …}) or profile_export.jsonl "
         "('metadata' and 'metrics' a line), specdec_bench timing.json ('Output TPS', "
         "'TTFT Time') or acceptance_rate.json ('Request_AL'); " + NOT_YET)
HINT = {"vllm": "run vllm bench serve with --save-detailed",
        "sglang": "run sglang bench_serving with --output-details",
        "aiperf": "keep aiperf's profile_export.jsonl (--export-level records) beside the "
                  "summary"}


@dataclass
class LoadRun:
    """One benchmark run: its ``load_runs`` row, its ``load_requests`` frame (empty without
    --save-detailed) and the pooled inter-token gaps (ms) with the request each belongs to."""
    source: str
    line_no: int
    run: dict
    requests: pd.DataFrame
    itl_ms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    itl_owner: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    notes: list = field(default_factory=list)
    key: str | None = None          # one run read from two files (aiperf's pair): read once
    # per-request accept lengths that cannot be paired with the requests' times (specdec_bench:
    # acceptance_rate.json's Request_AL) and what one of them is; aiperf's are in requests
    accept: np.ndarray | None = None
    accept_unit: str | None = None

    @property
    def load(self) -> float:
        return self.run["load"]

    @property
    def detailed(self) -> bool:
        return bool(self.run["detailed"])


def frame(table: Table, cols: dict) -> pd.DataFrame:
    """A typed frame with the schema's columns in order: core ones always (NA when not given),
    the others when given."""
    n = len(next(iter(cols.values()))) if cols else 0
    out = {}
    for c in table.columns:
        if c.name not in cols and not c.core:
            continue
        v = cols.get(c.name, [None] * n)
        if c.dtype == "float64":
            out[c.name] = v.astype(float) if isinstance(v, np.ndarray) else \
                np.array([np.nan if x is None else x for x in v], dtype=float)
        else:
            out[c.name] = pd.array(v if isinstance(v, np.ndarray) else list(v), dtype=c.dtype)
    return pd.DataFrame(out, index=pd.RangeIndex(n))


# ------------------------------------------------------------------ the file

def read_values(path: str) -> list[tuple[object, int]]:
    """The JSON values of a file with their first line: one document (an object or a list of
    objects) or JSON lines.  An error names the file and line."""
    from ..io.sources import read_whole
    data = read_whole(path)          # (gz/xz/bz2/zst by magic bytes, one-line errors)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start}); a load-test result is "
                         "JSON") from None
    if not text.strip():
        raise InputError(f"{path}: empty file")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        whole = e
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply") from None
    else:
        return [(v, 1) for v in doc] if isinstance(doc, list) else [(doc, 1)]
    # JSON lines (--append-result) when the first non-blank line is a JSON value on its own
    lines = [(i, ln) for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    out = []
    for i, line in lines:
        try:
            out.append((json.loads(line), i))
        except (json.JSONDecodeError, RecursionError) as e:
            if not out:
                break
            msg = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            raise InputError(f"{path}:{i}: invalid JSON ({msg}); a load-test result file of "
                             "JSON lines holds one JSON object per line") from None
    else:
        return out
    raise InputError(f"{path}:{whole.lineno}: invalid JSON ({whole.msg} at column "
                     f"{whole.colno}); not a load-test result (vllm bench serve, SGLang "
                     "bench_serving, aiperf profile_export)?")


def read_runs(path: str) -> list[LoadRun]:
    """Every run of one file: vLLM and SGLang results (one a line, or one document), an
    aiperf summary (with the records beside it when they are there) or aiperf records (with
    the summary beside them, which says the load point and duration).  A directory is an
    aiperf artifact directory: its profile_export_aiperf.json."""
    if os.path.isdir(path):
        summary = os.path.join(path, "profile_export_aiperf.json")
        if os.path.isfile(summary):
            path = summary
        elif os.path.isfile(os.path.join(path, specdec_bench.TIMING)):
            return [_specdec_run(path)]
        else:
            raise InputError(f"{path}: is a directory without profile_export_aiperf.json (an "
                             "aiperf artifact directory) or timing.json (a specdec_bench run "
                             "directory); give the result files")
    values = read_values(path)
    sk = specdec_bench.kind(values[0][0])
    if sk is not None:
        return [_specdec_run(os.path.dirname(path) or ".", path, sk, values)]
    if aiperf.is_record(values[0][0]):
        return [_aiperf_from_records(path, values)]
    return [_aiperf_from_summary(path, obj, line, len(values)) if aiperf.is_summary(obj)
            else from_result(obj, path, line) for obj, line in values]


def aiperf_pair(path: str) -> str | None:
    """The other file of an aiperf run: profile_export.jsonl ↔ profile_export_aiperf.json, or
    <prefix>.jsonl ↔ <prefix>.json (--profile-export-prefix, aiperf config/artifacts.py:281–318)."""
    d, name = os.path.split(path)
    if name.endswith(".jsonl"):
        stem = name[:-len(".jsonl")]
        return os.path.join(d, "profile_export_aiperf.json" if stem == "profile_export"
                            else stem + ".json")
    if name.endswith(".json"):
        stem = name[:-len(".json")]
        return os.path.join(d, "profile_export.jsonl" if stem == "profile_export_aiperf"
                            else stem + ".jsonl")
    return None


def _aiperf_from_records(path: str, values: list) -> LoadRun:
    spath = aiperf_pair(path)
    if spath is None or not os.path.isfile(spath):
        raise InputError(f"{path}: aiperf per-request records carry no load point or duration; "
                         f"its summary {os.path.basename(spath or 'profile_export_aiperf.json')}"
                         " is not beside it — give the run's artifact directory as aiperf "
                         "wrote it")
    summ = read_values(spath)
    if len(summ) != 1 or not aiperf.is_summary(summ[0][0]):
        raise InputError(f"{spath}: not an aiperf summary (profile_export_aiperf.json), which "
                         f"{os.path.basename(path)} needs for its load point")
    return from_aiperf(summ[0][0], f"{spath}:1", values, path, path,
                       key=os.path.realpath(spath))


def _aiperf_from_summary(path: str, obj: dict, line: int, count: int) -> LoadRun:
    rpath = aiperf_pair(path) if count == 1 else None
    recs = None
    if rpath is not None and os.path.isfile(rpath):
        recs = read_values(rpath)
        if not aiperf.is_record(recs[0][0]):
            raise InputError(f"{rpath}:{recs[0][1]}: not an aiperf record (an object with "
                             f"'metadata' and 'metrics'), beside the summary {path}")
    return from_aiperf(obj, f"{path}:{line}", recs, rpath, path, line,
                       key=os.path.realpath(path))


def from_aiperf(summary: dict, where: str, recs=None, rec_source: str | None = None,
                source: str | None = None, line_no: int = 1, key: str | None = None) -> LoadRun:
    """One aiperf run: its summary object (``where`` names it) and, when given, the values
    [(record, line)] of its records file."""
    source = source or where.rsplit(":", 1)[0]
    cfg = summary.get("input_config")
    rate, conc = aiperf.load_point(cfg, where)
    fields = aiperf.summary_fields(summary, where)
    extra = fields.pop("extra", None)
    info = summary.get("run_info") if isinstance(summary.get("run_info"), dict) else {}
    label = info.get("run_label")
    run = {"source": source, "line_no": line_no, "tool": "aiperf",
           "run": None if label is None else str(label)[:200],
           "load": rate if rate is not None else conc,
           "load_kind": "rate" if rate is not None else "concurrency",
           "request_rate": rate, "max_concurrency": conc, "num_prompts": None,
           "model": aiperf.model_name(cfg), **fields}
    if extra:
        run["extra"] = json.dumps(extra, sort_keys=True)
    if recs is None:
        run["detailed"] = False
        return LoadRun(source, line_no, run, frame(LOAD_REQUESTS, {}), key=key,
                       notes=[f"{where}: no per-request records ({HINT['aiperf']}): only the "
                              "file's own percentiles, no intervals"])
    c = aiperf.records(recs, rec_source)
    n, ok, notes = c["n"], c["ok"], list(c["notes"])
    ttft, e2el, outl = c["ttft_ms"], c["e2el_ms"], c["output_tokens"]
    gaps, owner, chunks, itl_sum = [], [], np.zeros(n), np.full(n, np.nan)
    for i, g in enumerate(c["itl"]):
        if g is None or not ok[i]:
            continue
        if not np.all(np.isfinite(g) & (g >= 0)):
            ok[i] = False
            notes.append(f"{rec_source}: request {i}: a non-finite or negative gap in "
                         "'inter_chunk_latency'; the request is left out")
            continue
        gaps.append(g)
        owner.append(np.full(len(g), i, dtype=np.int64))
        chunks[i], itl_sum[i] = len(g), float(g.sum())
    bad = ok & ~(np.isfinite(ttft) & (ttft >= 0) & np.isfinite(e2el) & (e2el >= ttft - 1e-6))
    if bad.any():
        notes.append(f"{rec_source}: {int(bad.sum())} completed request(s) with an unusable "
                     f"time_to_first_token or request_latency (first: request "
                     f"{int(np.flatnonzero(bad)[0])}); left out")
        ok &= ~bad
    if run["completed"] is None:
        run["completed"] = int(ok.sum())
    elif ok.sum() != run["completed"]:
        notes.append(f"{rec_source}: {int(ok.sum())} completed requests in the records, the "
                     f"summary's request_count says {run['completed']}")
    if c["pooled_accept_len"] is not None:
        run["accept_len"] = c["pooled_accept_len"]
    run["detailed"] = True
    with np.errstate(invalid="ignore", divide="ignore"):
        itl_mean = np.where(chunks > 0, itl_sum / np.maximum(chunks, 1), np.nan)
    if gaps:
        keep = ok[np.concatenate(owner)]
        itl_ms, itl_owner = np.concatenate(gaps)[keep], np.concatenate(owner)[keep]
    else:
        itl_ms, itl_owner = np.zeros(0), np.zeros(0, dtype=np.int64)
    cols = {"source": [rec_source] * n, "line_no": [line_no] * n, "run": [run["run"]] * n,
            "load": np.full(n, run["load"]), "request": np.arange(n), "ok": ok,
            "ttft_ms": np.where(ok, ttft, np.nan), "tpot_ms": np.where(ok, c["tpot_ms"], np.nan),
            "itl_mean_ms": np.where(ok, itl_mean, np.nan), "itl_chunks": np.where(ok, chunks, 0),
            "e2el_ms": np.where(ok, e2el, np.nan),
            "output_tokens": np.where(np.isfinite(outl), outl, 0).astype(np.int64),
            "prompt_tokens": pd.array([None if not math.isfinite(x) else int(x)
                                       for x in c["prompt_tokens"]], dtype="Int64"),
            "error": c["error"]}
    if np.isfinite(c["accept_len"]).any():
        cols["accept_len"] = np.where(ok, c["accept_len"], np.nan)
    return LoadRun(source, line_no, run, frame(LOAD_REQUESTS, cols), itl_ms, itl_owner, notes,
                   key=key)


def is_result_dir(path: str) -> bool:
    """Whether a directory is a load-test result: an aiperf artifact directory or a
    specdec_bench run directory."""
    return os.path.isdir(path) and any(os.path.isfile(os.path.join(path, f)) for f in (
        "profile_export_aiperf.json", specdec_bench.TIMING))


def _specdec_entries(path: str, want: str, values=None) -> list[tuple[dict, str]]:
    """The entries [(object, where)] of one specdec_bench file, each of kind ``want``."""
    values = read_values(path) if values is None else values
    out = []
    for i, (obj, line) in enumerate(values):
        where = path if len(values) == 1 else f"{path}:{line} (run {i + 1} of {len(values)})"
        k = specdec_bench.kind(obj)
        if k != want:
            what = {"timing": "a timing object ('Output TPS', 'TTFT Time', …)",
                    "acceptance": "an acceptance object ('Request_AL', 'Average_AL', …)",
                    "configuration": "a configuration object ('concurrency', 'engine', "
                                     "'speculative_algorithm', …)"}[want]
            raise InputError(f"{where}: not {what} of specdec_bench, in its "
                             f"{os.path.basename(path)}")
        out.append((obj, where))
    return out


def _specdec_run(d: str, given: str | None = None, given_kind: str | None = None,
                 given_values=None) -> LoadRun:
    """One specdec_bench run from its directory: timing.json, acceptance_rate.json and
    configuration.json (any of them may be the file the user gave; docs/latency.md §1.4)."""
    S = specdec_bench
    paths = {"timing": os.path.join(d, S.TIMING), "acceptance": os.path.join(d, S.ACCEPTANCE),
             "configuration": os.path.join(d, S.CONFIGURATION)}
    if given_kind in paths:
        paths[given_kind] = given
    named = given or d
    if not os.path.isfile(paths["timing"]):
        raise InputError(f"{named}: no timing.json beside it: a specdec_bench run directory "
                         "holds timing.json, acceptance_rate.json and configuration.json "
                         "(run.py:200–216); give the run's directory as specdec_bench wrote it")
    tpath = paths["timing"]
    if not os.path.isfile(paths["acceptance"]):
        raise InputError(f"{tpath}: acceptance_rate.json is not beside it; specdec_bench writes "
                         "it in every run (run.py:200–208): give the run's directory as "
                         "specdec_bench wrote it")
    if not os.path.isfile(paths["configuration"]):
        raise InputError(f"{tpath}: no configuration.json beside it, so no load point "
                         "(--concurrency); specdec_bench writes one since NVIDIA/Model-Optimizer"
                         "#1531 (run.py:210–216) — for an older run add configuration.json "
                         '{"concurrency": N, "engine": "...", "speculative_algorithm": "..."}')
    vals = {k: given_values if k == given_kind else None for k in paths}
    timing = _specdec_entries(tpath, "timing", vals["timing"])
    acc = _specdec_entries(paths["acceptance"], "acceptance", vals["acceptance"])
    cfg = _specdec_entries(paths["configuration"], "configuration", vals["configuration"])
    notes = []
    if len(timing) > 1:
        notes.append(f"{tpath}: {len(timing)} runs (specdec_bench appends one a run to a reused "
                     "--save_dir, metrics/base.py:36–48); configuration.json describes the last "
                     "only, which is read")
    (tobj, twhere), (aobj, awhere), (cobj, cwhere) = timing[-1], acc[-1], cfg[-1]
    fields, extra = S.timing_fields(tobj, twhere)
    a = S.acceptance(aobj, awhere)
    conc = S.load_point(cobj, cwhere)
    info = S.describe(cobj)
    n = a["calls"] if a["calls"] is not None else len(a["samples"])
    total = duration = None
    if a["calls"] is not None and "mean_output_tokens" in extra:
        total = extra["mean_output_tokens"] * a["calls"]
        duration = total / fields["output_tok_s"]
    if a["calls"] is None:
        notes.append(f"{awhere}: requests counted with their turns together (specdec_bench's "
                     "MTBench/SpecBench acceptance pools a request's turns): n counts requests, "
                     "not generate calls, and the run's duration is not known")
    if duration is not None and not duration > 0:
        duration = None
    extra["speculative_algorithm"] = info["speculative_algorithm"]
    extra["engine"] = info["engine"]
    if a["average"] is not None:
        extra["average_accept_len"] = a["average"]
    run = {"source": tpath, "line_no": 1, "tool": "specdec_bench",
           "run": os.path.basename(os.path.abspath(d))[:200] or None, "load": conc,
           "load_kind": "concurrency", "request_rate": None, "max_concurrency": conc,
           "duration_s": math.nan if duration is None else duration, "completed": n,
           "failed": 0, "num_prompts": info["num_requests"], "total_output_tokens": total,
           "request_throughput": None if duration is None else n / duration,
           "accept_len": a["pooled"], "model": info["model"], "detailed": False, **fields,
           "extra": json.dumps(extra, sort_keys=True)}
    notes.append(f"{tpath}: specdec_bench saves no per-request times (each metric's mean, "
                 "quartiles and extremes only): TTFT and TPOT p50 without intervals, no p90/p99,"
                 " no goodput")
    return LoadRun(tpath, 1, run, frame(LOAD_REQUESTS, {}), notes=notes,
                   key=os.path.realpath(tpath), accept=a["samples"], accept_unit=a["unit"])


def sglang_to_vllm(obj: dict, where: str) -> dict:
    """An SGLang bench_serving result object in vLLM's names (serving.py:1855–1952): ``tag`` →
    label, ``*_e2e_latency_ms`` → ``*_e2el_ms``, ``accept_length`` →
    ``spec_decode_acceptance_length``, ``failed`` = the lists' length − completed."""
    if obj.get("request_rate") == "trace":
        raise EaglelogError(f"{where}: a trace replay (request_rate 'trace', "
                            "--use-trace-timestamps) has no single load point")
    out = {(k[:-len("_e2e_latency_ms")] + "_e2el_ms" if k.endswith("_e2e_latency_ms") else k): v
           for k, v in obj.items()}
    out["label"] = obj.get("tag")
    acc = obj.get("accept_length")
    out["spec_decode_acceptance_length"] = acc if acc else None
    out.pop("latencies", None)
    if isinstance(obj.get("ttfts"), list) and isinstance(obj.get("completed"), int):
        out["failed"] = max(len(obj["ttfts"]) - obj["completed"], 0)
    return out


def tool_of(obj) -> str | None:
    """Which harness wrote this JSON value: "vllm", "sglang", "aiperf" (a summary),
    "aiperf-record", "specdec_bench" (an entry of one of its files), or None."""
    if not isinstance(obj, dict):
        return None
    if specdec_bench.kind(obj) is not None:
        return "specdec_bench"
    if aiperf.is_record(obj):
        return "aiperf-record"
    if aiperf.is_summary(obj):
        return "aiperf"
    if "duration" in obj and "completed" in obj:
        if any(k.endswith("_e2e_latency_ms") for k in obj) or "accept_length" in obj \
                or "server_info" in obj:
            return "sglang"
        return "vllm"
    return None


# ------------------------------------------------------------------ one result object

def _num(v, what: str, where: str, *, allow_none: bool = False, positive: bool = False):
    if v is None and allow_none:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 \
            or (positive and v == 0):
        raise EaglelogError(f"{where}: bad value {str(v)[:40]!r} for '{what}' (a "
                            f"{'positive' if positive else 'non-negative'} finite number)")
    return float(v)


def _load(obj: dict, where: str) -> tuple[float, str]:
    """(load, kind): the request rate when finite, else the concurrency cap."""
    if obj.get("ramp_up_strategy") is not None:
        raise EaglelogError(f"{where}: a ramp-up run ('ramp_up_strategy' "
                            f"{str(obj['ramp_up_strategy'])[:20]!r}) has no single load point; "
                            "run one request rate per file")
    rate = obj.get("request_rate")
    if isinstance(rate, str) and rate.strip().lower() in ("inf", "infinity"):
        rate = math.inf
    if rate is not None and not isinstance(rate, bool) and isinstance(rate, (int, float)) \
            and rate > 0 and math.isfinite(rate):
        return float(rate), "rate"
    if rate is not None and not (isinstance(rate, (int, float)) and not isinstance(rate, bool)
                                 and rate == math.inf):
        raise EaglelogError(f"{where}: bad value {str(rate)[:40]!r} for 'request_rate' (a "
                            "positive number or \"inf\")")
    conc = obj.get("max_concurrency")
    if conc is not None:
        return _num(conc, "max_concurrency", where, positive=True), "concurrency"
    if rate == math.inf:
        return math.inf, "rate"
    raise EaglelogError(f"{where}: neither 'request_rate' nor 'max_concurrency': no load point")


def from_result(obj, source: str, line_no: int = 1) -> LoadRun:
    """One result object → a LoadRun: ``vllm bench serve``'s, SGLang bench_serving's (renamed
    by ``sglang_to_vllm``) or an aiperf summary's (without its records).  Raises
    EaglelogError naming ``source:line_no`` for anything that is none of them or carries an
    unusable value."""
    where = f"{source}:{line_no}"
    if not isinstance(obj, dict):
        raise EaglelogError(f"{where}: a JSON {type(obj).__name__}, not a load-test result "
                            "object")
    tool = tool_of(obj)
    if tool is None:
        raise EaglelogError(f"{where}: {KNOWN}")
    if tool == "aiperf":
        return from_aiperf(obj, where, source=source, line_no=line_no)
    if tool == "specdec_bench":
        raise EaglelogError(f"{where}: a specdec_bench {specdec_bench.kind(obj)} object: read "
                            "its run directory (timing.json, acceptance_rate.json and "
                            "configuration.json)")
    if tool == "aiperf-record":
        raise EaglelogError(f"{where}: an aiperf per-request record: read its file "
                            "(profile_export.jsonl), with the summary beside it")
    if tool == "sglang":
        obj = sglang_to_vllm(obj, where)
    duration = _num(obj["duration"], "duration", where, positive=True)
    completed = int(_num(obj["completed"], "completed", where))
    load, kind = _load(obj, where)
    label = obj.get("label") or obj.get("backend")
    run = {"source": source, "line_no": line_no, "tool": tool, "run": None if label is None
           else str(label)[:200], "load": load, "load_kind": kind,
           "request_rate": (math.inf if obj.get("request_rate") in ("inf", math.inf) else
                            _num(obj.get("request_rate"), "request_rate", where,
                                 allow_none=True)),
           "max_concurrency": _num(obj.get("max_concurrency"), "max_concurrency", where,
                                   allow_none=True),
           "duration_s": duration, "completed": completed,
           "failed": None if obj.get("failed") is None else
           int(_num(obj["failed"], "failed", where)),
           "num_prompts": obj.get("num_prompts") if isinstance(obj.get("num_prompts"), int)
           and not isinstance(obj.get("num_prompts"), bool) else None,
           "total_output_tokens": _num(obj.get("total_output_tokens"), "total_output_tokens",
                                       where, allow_none=True),
           "output_tok_s": _num(obj.get("output_throughput"), "output_throughput", where,
                                allow_none=True),
           "request_throughput": _num(obj.get("request_throughput"), "request_throughput",
                                      where, allow_none=True),
           "accept_len": _num(obj.get("spec_decode_acceptance_length"),
                              "spec_decode_acceptance_length", where, allow_none=True),
           "model": None if obj.get("model_id") is None else str(obj["model_id"])[:200]}
    extra = {}
    for m in METRICS:
        for stat in ("mean", "median", "std"):
            k = f"{stat}_{m}_ms"
            if k in obj:
                run[k if stat != "std" else k] = _num(obj[k], k, where, allow_none=True)
        for k, v in obj.items():
            if k.startswith("p") and k.endswith(f"_{m}_ms") and k[1:-len(m) - 4]:
                p = k[1:-len(m) - 4]
                try:
                    float(p)
                except ValueError:
                    continue
                if k in {c.name for c in LOAD_RUNS.columns}:
                    run[k] = _num(v, k, where, allow_none=True)
                else:
                    extra[k] = v
    if extra:
        run["extra"] = json.dumps(extra, sort_keys=True)
    has = [k for k in ("ttfts", "output_lens") if isinstance(obj.get(k), list)]
    run["detailed"] = len(has) == 2
    if not run["detailed"]:
        return LoadRun(source, line_no, run, frame(LOAD_REQUESTS, {}),
                       notes=[f"{where}: no per-request lists ({HINT[tool]}): only the "
                              "file's own percentiles, no intervals"])
    req, itl, owner, notes = _requests(obj, run, where)
    return LoadRun(source, line_no, run, req, itl, owner, notes)


def _list(obj: dict, key: str, n: int, where: str):
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, list):
        raise EaglelogError(f"{where}: '{key}' is a JSON {type(v).__name__}, not a list")
    if len(v) != n:
        raise EaglelogError(f"{where}: '{key}' holds {len(v)} entries, 'ttfts' {n}: the "
                            "per-request lists must be of one length")
    return v


def _seconds(values: list, key: str, where: str) -> np.ndarray:
    try:
        a = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    except (TypeError, ValueError):
        bad = next(v for v in values if not isinstance(v, (int, float, type(None))))
        raise EaglelogError(f"{where}: '{key}' holds {str(bad)[:40]!r}, not a number") from None
    return a


def _requests(obj: dict, run: dict, where: str):
    ttfts = obj["ttfts"]
    n = len(ttfts)
    out_lens = _list(obj, "output_lens", n, where)
    in_lens = _list(obj, "input_lens", n, where)
    errors = _list(obj, "errors", n, where)
    itls = _list(obj, "itls", n, where)
    lat = _list(obj, "latencies", n, where)
    notes: list[str] = []
    ttft = _seconds(ttfts, "ttfts", where) * 1000.0
    outl = _seconds(out_lens, "output_lens", where)
    if np.any(~np.isfinite(outl) | (outl < 0) | (outl != np.round(outl))):
        i = int(np.flatnonzero(~np.isfinite(outl) | (outl < 0) | (outl != np.round(outl)))[0])
        raise EaglelogError(f"{where}: request {i}: bad value {out_lens[i]!r} in 'output_lens' "
                            "(a whole number of tokens)")
    inl = _seconds(in_lens, "input_lens", where) if in_lens is not None else np.full(n, np.nan)
    err = np.array([bool(e) for e in errors]) if errors is not None else np.zeros(n, bool)
    ok = ~err & (outl > 0)
    # inter-token gaps, pooled, with their request
    gaps, owner, chunks, itl_sum = [], [], np.zeros(n), np.full(n, np.nan)
    if itls is not None:
        for i, g in enumerate(itls):
            if not isinstance(g, list):
                raise EaglelogError(f"{where}: request {i}: 'itls' entry is a JSON "
                                    f"{type(g).__name__}, not a list of gaps")
            if g:
                a = _seconds(g, "itls", where) * 1000.0
                if not np.all(np.isfinite(a) & (a >= 0)):
                    ok[i] = False
                    notes.append(f"{where}: request {i}: a non-finite or negative gap in "
                                 "'itls'; the request is left out")
                    continue
                gaps.append(a)
                owner.append(np.full(len(a), i, dtype=np.int64))
                chunks[i] = len(a)
                itl_sum[i] = float(a.sum())
            else:
                itl_sum[i] = 0.0
    if lat is not None:
        e2el = _seconds(lat, "latencies", where) * 1000.0
    else:
        e2el = ttft + itl_sum
    bad = ok & ~(np.isfinite(ttft) & (ttft >= 0) & np.isfinite(e2el) & (e2el >= ttft - 1e-6))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        notes.append(f"{where}: {int(bad.sum())} completed request(s) with an unusable ttft or "
                     f"latency (first: request {i}, ttft {ttfts[i]!r}); left out")
        ok &= ~bad
    tpot = np.where(ok & (outl > 1), (e2el - ttft) / np.maximum(outl - 1, 1), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        itl_mean = np.where(chunks > 0, itl_sum / np.maximum(chunks, 1), np.nan)
    if ok.sum() != run["completed"]:
        notes.append(f"{where}: {int(ok.sum())} completed requests in the lists, 'completed' "
                     f"says {run['completed']}")
    if gaps:
        keep = ok[np.concatenate(owner)]
        itl_ms, itl_owner = np.concatenate(gaps)[keep], np.concatenate(owner)[keep]
    else:
        itl_ms, itl_owner = np.zeros(0), np.zeros(0, dtype=np.int64)
    req = frame(LOAD_REQUESTS, {
        "source": [run["source"]] * n, "line_no": [run["line_no"]] * n,
        "run": [run["run"]] * n, "load": np.full(n, run["load"]),
        "request": np.arange(n), "ok": ok,
        "ttft_ms": np.where(ok, ttft, np.nan), "tpot_ms": tpot,
        "itl_mean_ms": np.where(ok, itl_mean, np.nan), "itl_chunks": np.where(ok, chunks, 0),
        "e2el_ms": np.where(ok, e2el, np.nan),
        "output_tokens": outl.astype(np.int64),
        "prompt_tokens": pd.array([None if not math.isfinite(x) else int(x) for x in inl],
                                  dtype="Int64"),
        "error": [str(e)[:200] if e else None for e in errors] if errors is not None
        else [None] * n})
    return req, itl_ms, itl_owner, notes


def runs_frame(runs: list[LoadRun]) -> pd.DataFrame:
    """The ``load_runs`` table of these runs."""
    rows = [r.run for r in runs]
    keys = dict.fromkeys(k for r in rows for k in r)
    return frame(LOAD_RUNS, {k: [r.get(k) for r in rows] for k in keys})


def read(paths) -> list[LoadRun]:
    """Every run of these files (a path or a list of them)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out, seen = [], {}
    for p in paths:
        for r in read_runs(os.fspath(p)):
            if r.key is not None and r.key in seen:
                seen[r.key].notes.append(
                    f"{os.fspath(p)}: one specdec_bench run with {seen[r.key].source} (its "
                    "files or directory given twice): read once"
                    if r.run.get("tool") == "specdec_bench" else
                    f"{r.source} and {seen[r.key].source} are one aiperf run (summary and "
                    "records): read once")
                continue
            if r.key is not None:
                seen[r.key] = r
            out.append(r)
    return out
