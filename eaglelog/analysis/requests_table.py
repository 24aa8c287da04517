"""The request table of ``eaglelog requests`` and ``compare --paired`` (docs/requests.md §1–2):
one row per finished request of every input (REQUEST_COLUMNS) from SGLang ``Finish:`` lines and
the per-request rows of benchmark outputs, each request's accept length τ_r = step_tokens /
steps, the groups of ``--by`` and the per-workload rows benchmark files report.

The bottom of the per-request analyses: requests.py (the distribution), requests_flags.py (the
outliers) and requests_paired.py (the paired A/B) read it; requests.py re-exports its names."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from ..errors import EaglelogError
from ..schema import REQUEST_COLUMNS

GROUPINGS = ("category", "finish", "prompt-len", "output-len", "label")

REQUEST_COLUMN_NAMES = tuple(c.name for c in REQUEST_COLUMNS)
_ORIGIN = {"spec-bench": "spec-bench", "eagle": "eagle", "vllm.response": "vllm",
           "sglang.response": "sglang-response", "llama.cpp.response": "llamacpp-response"}
# ids a server gave (rid matching)
SERVER_ORIGINS = ("sglang", "vllm", "sglang-response", "llamacpp-response")


def _load(logs, engine: str = "auto", keep_going: bool = False, base_date=None):
    from ..api import ParsedLog, parse

    if isinstance(logs, ParsedLog):
        return logs
    return parse(logs, engine=engine, keep_going=keep_going, base_date=base_date)


def _labels_text(s: pd.Series) -> tuple[list, list]:
    """custom_labels JSON -> ('k=v, …', the value of a 'category' label)."""
    text, cat = [], []
    for v in s.tolist():
        d = None
        if isinstance(v, str):
            try:
                d = json.loads(v)
            except ValueError:
                d = None
        if isinstance(d, dict) and d:
            text.append(", ".join(f"{k}={d[k]}" for k in sorted(d)))
            cat.append(d.get("category"))
        else:
            text.append(None)
            cat.append(None)
    return text, cat


def _col(df: pd.DataFrame, name: str, n: int):
    return df[name] if name in df.columns else pd.Series([pd.NA] * n, index=df.index,
                                                         dtype=object)


def request_table(log) -> pd.DataFrame:
    """One row per finished request of every input (REQUEST_COLUMNS), in input order."""
    log = _load(log)
    parts = []
    req = log.requests
    if len(req):
        n = len(req)
        comp = req["completion_tokens"].astype("Float64")
        ver = req["verify_ct"].astype("Float64")
        text, cat = _labels_text(_col(req, "custom_labels", n))
        parts.append(pd.DataFrame({
            "source": req["source"].astype(str), "line_no": req["line_no"],
            "startup": req["startup"], "origin": "sglang", "id": req["rid"],
            "category": cat, "label": text, "finish_reason": req["finish_reason"].astype(object),
            "prompt_tokens": req["prompt_tokens"], "output_tokens": req["completion_tokens"],
            "steps": req["verify_ct"],
            "step_tokens": (comp - 1).where(ver.notna() & comp.notna()).astype("Int64"),
            "tau_printed": req["spec_accept_length"],
            "e2e_latency": req["e2e_latency"],
            "prompt_hash": _col(req, "prompt_hash", n), "timestamp": req["timestamp"]}))
    b = log.bench
    if len(b):
        b = b[(b["scope"] == "request").to_numpy(dtype=bool, na_value=False)]
    if len(b):
        n = len(b)
        tool = b["tool"].astype(str)
        parts.append(pd.DataFrame({
            "source": b["source"].astype(str), "line_no": b["line_no"],
            "startup": b["startup"], "origin": tool.map(lambda t: _ORIGIN.get(t, t)),
            "id": _col(b, "label", n), "category": _col(b, "category", n), "label": None,
            "finish_reason": _col(b, "finish_reason", n).astype(object),
            "prompt_tokens": _col(b, "prompt_tokens", n),
            "output_tokens": _col(b, "output_tokens", n),
            "steps": _col(b, "steps", n), "step_tokens": _col(b, "step_tokens", n),
            # the bench table holds only the columns its rows fill: a file of saved vLLM
            # responses alone has no duration_s (no latency in a response)
            "tau_printed": _col(b, "accept_len", n), "e2e_latency": _col(b, "duration_s", n),
            "prompt_hash": None, "timestamp": pd.NaT}))
    if not parts:
        return _typed(pd.DataFrame(columns=list(REQUEST_COLUMN_NAMES)))
    df = pd.concat(parts, ignore_index=True)
    order = {s.name: i for i, s in enumerate(log.sources)}
    df["_o"] = df["source"].map(order).fillna(len(order))
    df = df.sort_values(["_o", "line_no"], kind="stable").drop(columns="_o")
    steps = pd.to_numeric(df["steps"], errors="coerce").astype("float64")
    tok = pd.to_numeric(df["step_tokens"], errors="coerce").astype("float64")
    df["tau"] = np.where(steps > 0, tok / steps.where(steps > 0), np.nan)
    df["run"] = _run_labels(df)
    return _typed(df[list(REQUEST_COLUMN_NAMES)].reset_index(drop=True))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    out = {}
    for c in REQUEST_COLUMNS:
        s = df[c.name] if c.name in df.columns else pd.Series([None] * len(df), dtype=object)
        if c.dtype == "string":
            s = s.astype(object).where(s.notna(), None).astype("string")
        elif c.dtype == "category":
            s = s.astype(object).where(s.notna(), None).astype("category")
        elif c.dtype in ("Int64", "Int32"):
            s = pd.to_numeric(s, errors="coerce").astype(c.dtype)
        elif c.dtype == "float64":
            s = pd.to_numeric(s, errors="coerce").astype("float64")
        elif c.dtype.startswith("datetime"):
            s = pd.to_datetime(s, errors="coerce").astype("datetime64[us]")
        out[c.name] = s.reset_index(drop=True)
    return pd.DataFrame(out)


def _run_labels(df: pd.DataFrame) -> list[str]:
    """'source', or 'source [start-up k]' for inputs with requests in several start-ups."""
    st = pd.to_numeric(df["startup"], errors="coerce").fillna(0).astype(int)
    several = st.groupby(df["source"]).nunique()
    return [f"{s} [start-up {k}]" if several.get(s, 1) > 1 else s
            for s, k in zip(df["source"], st)]


def _pow2_bucket(v) -> str:
    if v is None or v is pd.NA or not np.isfinite(v):
        return "unknown"
    v = int(v)
    if v < 64:
        return "<64"
    lo = 1 << (v.bit_length() - 1)
    return f"{lo}–{2 * lo - 1}"


def group_keys(df: pd.DataFrame, by: str | None) -> pd.Series:
    """The group of every request for ``--by`` (one group 'all' without it)."""
    if by is None:
        return pd.Series(["all"] * len(df), index=df.index, dtype=object)
    if by == "category":
        s = df["category"]
    elif by == "finish":
        s = df["finish_reason"].astype(object)
    elif by == "label":
        s = df["label"]
    elif by in ("prompt-len", "output-len"):
        col = "prompt_tokens" if by == "prompt-len" else "output_tokens"
        v = pd.to_numeric(df[col], errors="coerce").astype("float64")
        return pd.Series([_pow2_bucket(x) for x in v], index=df.index, dtype=object)
    else:
        raise EaglelogError(f"--by {by!r}: choose from {', '.join(GROUPINGS)}")
    return s.astype(object).where(s.notna(), "unknown")


def auto_by(log) -> str | None:
    """The grouping a picture uses unasked: category when a request has one, else the custom
    labels, else the finish reason when there are several, else none."""
    t = request_table(log)
    if t["category"].notna().any():
        return "category"
    if t["label"].notna().any():
        return "label"
    if t["finish_reason"].nunique(dropna=True) > 1:
        return "finish"
    return None


def _group_order(keys: pd.Series, by: str | None) -> list[str]:
    if by in ("prompt-len", "output-len"):
        def lo(k):
            if k == "unknown":
                return math.inf
            if k == "<64":
                return 0
            return int(k.split("–")[0])
        return sorted(keys.unique(), key=lo)
    uniq = list(dict.fromkeys(keys.tolist()))
    return sorted(uniq, key=lambda k: (k == "unknown", str(k)))


# ----------------------------------------------------------------------------- values for to_dict

def _f(v):
    if v is None:
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _int(v):
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) \
        else int(v)


def _str(v):
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) \
        else str(v)


# ------------------------------------------------------------------------ what else a log holds

def _workloads(log) -> tuple[dict, ...]:
    b = log.bench
    if not len(b):
        return ()
    m = (b["scope"] == "task").to_numpy(dtype=bool, na_value=False)
    out = []
    for r in b[m].to_dict("records"):
        out.append({"source": str(r["source"]), "line_no": _int(r["line_no"]),
                    "tool": _str(r["tool"]), "workload": _str(r.get("category")) or
                    _str(r.get("label")), "label": _str(r.get("label")),
                    "accept_len": _f(r.get("accept_len")),
                    "accept_len_def": _str(r.get("accept_len_def")),
                    "requests": _int(r.get("requests")),
                    "spec_steps": _int(r.get("spec_steps")),
                    "spec_topk": _int(r.get("spec_topk")),
                    "spec_draft_tokens": _int(r.get("spec_draft_tokens")),
                    "batch_size": _int(r.get("batch_size")),
                    "output_tok_s": _f(r.get("output_tok_s")),
                    "speedup": _f(r.get("speedup"))})
    return tuple(out)


def _no_request(log) -> str:
    """Why an input gives no request row: what it does hold, and what would give rows."""
    names = ", ".join(s.name for s in log.sources)
    msg = (f"{names}: no finished request to analyse: SGLang logs need --log-requests (Finish: "
           "lines); benchmark outputs need per-question records (Spec-Bench / EAGLE answer "
           "files, saved vLLM responses with --per-request-spec-decode-metrics)")
    b = log.bench
    if len(b):
        runs = b[(b["scope"] == "run").to_numpy(dtype=bool, na_value=False)]
        if len(runs):
            r = runs.iloc[0]
            tools = ", ".join(dict.fromkeys(runs["tool"].astype(str)))
            al = _f(r.get("accept_len"))
            what = (f"accept length {al:.4g} ({_str(r.get('accept_len_def')) or 'pooled'})"
                    if al is not None else "no accept length")
            msg += (f"; it holds {len(runs)} whole-run result(s) of {tools} (line "
                    f"{_int(r['line_no'])}: {what}), which keep no per-request acceptance "
                    "(bench_serving --output-details saves lengths and latencies per request, "
                    "no verify counts): see `eaglelog parse`")
    return msg

