"""Paired A/B on matched prompts: ``compare_paired`` (``eaglelog compare --paired REF NEW``;
docs/requests.md §5).

Statistical model (docs/requests.md §Statistics): a prompt is one independent sample.  The
paired comparison matches the same prompt in two runs (benchmark question id, SGLang prompt
hash or request id) and tests the mean of log(τ_new / τ_ref) over the prompts with a one-sample
t-test (n − 1 df; fewer than MIN_PAIRS prompts give no test); its ratio is the geometric mean of
the per-prompt ratios.  Groups are tested the same way, with Holm-adjusted p-values across
groups.  The request table it matches is requests_table.py's; requests.py re-exports these
names."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from .. import distributions as dist
from .. import stats
from ..errors import EaglelogError
from ..stats import Estimate, insufficient
from .estimators import _tq
from .requests_table import (GROUPINGS, REQUEST_COLUMN_NAMES, SERVER_ORIGINS, _f, _group_order,
                             _int, _load, group_keys, request_table)

MIN_PAIRS = 10          # fewer matched prompts give no paired test
TAU_WARN = 2.0          # a paired comparison warns from this autocorrelation time on
MATCHES = ("auto", "question", "prompt", "rid")


# ----------------------------------------------------------------------------- statistics


def paired_t(d: np.ndarray, confidence: float) -> dict:
    """One-sample t-test of the mean of d (log ratios, one per prompt) against 0 with n − 1
    degrees of freedom; the ratio exp(mean) with its interval.  Below MIN_PAIRS: no test."""
    n = len(d)
    out = {"n": n, "mean_log": float(np.mean(d)) if n else math.nan, "sd_log": None,
           "t": None, "df": None, "p_value": None,
           "ratio": Estimate(math.exp(float(np.mean(d))) if n else math.nan, None, None, n,
                             confidence, None, None, "geometric mean of per-prompt ratios")}
    if n < MIN_PAIRS:
        return out
    m = float(np.mean(d))
    sd = float(np.std(d, ddof=1))
    out.update(sd_log=sd, df=n - 1)
    if sd == 0:
        out.update(t=0.0 if m == 0 else math.copysign(math.inf, m), p_value=1.0 if m == 0 else 0.0)
        out["ratio"] = Estimate(math.exp(m), math.exp(m), math.exp(m), n, confidence, 0.0, n - 1,
                                out["ratio"].source)
        return out
    se = sd / math.sqrt(n)
    t = m / se
    tq = _tq(n - 1, confidence)
    out.update(t=t, p_value=float(2 * dist.stdtr(n - 1, -abs(t))))
    out["ratio"] = Estimate(math.exp(m), math.exp(m - tq * se), math.exp(m + tq * se), n,
                            confidence, se, n - 1, out["ratio"].source)
    return out


def welch_log(a: np.ndarray, b: np.ndarray, confidence: float) -> dict:
    """Unpaired contrast: Welch's t on log values of two samples (b / a), ratio of geometric
    means with its interval."""
    la, lb = np.log(a), np.log(b)
    na, nb = len(la), len(lb)
    diff = float(np.mean(lb) - np.mean(la)) if na and nb else math.nan
    src = "ratio of geometric means, unpaired (Welch)"
    if na < MIN_PAIRS or nb < MIN_PAIRS:
        return {"ratio": insufficient(math.exp(diff), min(na, nb), confidence, src),
                "p_value": None}
    va, vb = float(np.var(la, ddof=1)) / na, float(np.var(lb, ddof=1)) / nb
    se = math.sqrt(va + vb)
    if se == 0:
        return {"ratio": Estimate(math.exp(diff), math.exp(diff), math.exp(diff), na + nb,
                                  confidence, 0.0, None, src),
                "p_value": 1.0 if diff == 0 else 0.0}
    df = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1))
    t = diff / se
    tq = _tq(df, confidence)
    return {"ratio": Estimate(math.exp(diff), math.exp(diff - tq * se), math.exp(diff + tq * se),
                              na + nb, confidence, se, df, src),
            "p_value": float(2 * dist.stdtr(df, -abs(t)))}


def holm(p: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of the p-values that are not None."""
    idx = [i for i, v in enumerate(p) if v is not None]
    order = sorted(idx, key=lambda i: p[i])
    out: list[float | None] = [None] * len(p)
    m, run = len(order), 0.0
    for rank, i in enumerate(order):
        run = max(run, min(1.0, (m - rank) * p[i]))
        out[i] = run
    return out


# ----------------------------------------------------------------------------- results

@dataclass(frozen=True)
class PairedGroup:
    group: str
    pairs: int
    wins: int
    losses: int
    ties: int
    ratio: Estimate
    p_value: float | None
    p_adjusted: float | None
    verdict: str

    def to_dict(self) -> dict:
        return {"group": self.group, "pairs": self.pairs, "wins": self.wins,
                "losses": self.losses, "ties": self.ties, "ratio": self.ratio.to_dict(),
                "p_value": self.p_value, "p_holm": self.p_adjusted, "verdict": self.verdict}


@dataclass(frozen=True)
class PairedResult:
    """``eaglelog.compare_paired(ref, new)``: the same prompts in two runs.

    >>> r = eaglelog.compare_paired("before.jsonl", "after.jsonl")
    >>> r.ratio.estimate, r.p_value, r.verdict, r.counts["unmatched_ref"]
    >>> r.to_frame().sort_values("log_ratio").head()   # the prompts that got worse
    """

    reference: str
    changed: str
    match: str                       # question | prompt | rid | rid-map
    counts: dict
    ratio: Estimate                  # geometric mean of τ_new / τ_ref over the matched prompts
    t: float | None
    df: float | None
    p_value: float | None
    autocorr_time: float | None      # τ of the log ratios in execution order (server logs)
    wins: int
    losses: int
    ties: int
    verdict: str
    pooled_ratio: Estimate           # Σ-pooled accept length new / ref on the matched prompts
    unpaired: dict                   # the same prompts compared without the pairing
    by: str | None
    groups: tuple[PairedGroup, ...]
    worse: tuple[dict, ...]          # the prompts that got worse, worst first
    confidence: float
    notes: tuple[str, ...]
    pairs: pd.DataFrame = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"command": "compare --paired", "reference": self.reference,
                "changed": self.changed, "match": self.match,
                "counts": dict(self.counts), "ratio": self.ratio.to_dict(), "t": _f(self.t),
                "df": _f(self.df), "p_value": self.p_value,
                "autocorr_time": _f(self.autocorr_time), "wins": self.wins,
                "losses": self.losses, "ties": self.ties, "verdict": self.verdict,
                "pooled_ratio": self.pooled_ratio.to_dict(),
                "unpaired": {"ratio": self.unpaired["ratio"].to_dict(),
                             "p_value": self.unpaired["p_value"]},
                "by": self.by, "groups": [g.to_dict() for g in self.groups],
                "worse": [dict(w) for w in self.worse], "confidence": self.confidence,
                "test": "one-sample t-test of log(τ_new / τ_ref) over the matched prompts "
                        "(n − 1 df; prompts as independent units); group p-values "
                        "Holm-adjusted",
                "notes": list(self.notes)}

    def to_frame(self) -> pd.DataFrame:
        return self.pairs.copy()


# ------------------------------------------------------------------------ matching, the test

def read_rid_map(path: str) -> dict[str, str]:
    """A rid mapping file: JSON {"ref_rid": "new_rid", …}, or two columns (ref, new) separated
    by a comma, tab or spaces, one pair a line ('#' comments and a 'ref,new' header allowed)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        raise EaglelogError(f"{path}: cannot read the rid map: {e.strerror or e}") from None
    if text.lstrip().startswith("{"):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise EaglelogError(f"{path}: the rid map is not valid JSON ({e})") from None
        if not isinstance(obj, dict):
            raise EaglelogError(f"{path}: the rid map must be a JSON object ref rid -> new rid")
        return {str(k): str(v) for k, v in obj.items()}
    out: dict[str, str] = {}
    for i, line in enumerate(text.splitlines(), 1):
        t = line.strip()
        if not t or t.startswith("#"):
            continue
        parts = [p.strip() for p in (t.split(",") if "," in t else t.split())]
        if len(parts) != 2 or not all(parts):
            raise EaglelogError(f"{path}:{i}: a rid map line holds two rids (ref, new): {t[:60]!r}")
        if i == 1 and parts[0].lower() in ("ref", "reference", "ref_rid") and \
                parts[1].lower() in ("new", "changed", "new_rid"):
            continue
        if parts[0] in out:
            raise EaglelogError(f"{path}:{i}: rid {parts[0]!r} is mapped twice")
        out[parts[0]] = parts[1]
    if not out:
        raise EaglelogError(f"{path}: the rid map holds no pair")
    return out


def _keys(t: pd.DataFrame, match: str, rid_map: dict | None, side: str) -> pd.Series:
    if match == "question":
        ok = t["origin"].isin(["spec-bench", "eagle"]).to_numpy()
        v = t["id"].astype(object)
        return v.where(ok & t["id"].notna().to_numpy(), None)
    if match == "prompt":
        return t["prompt_hash"].astype(object).where(t["prompt_hash"].notna(), None)
    v = t["id"].astype(object).where(t["id"].notna(), None)
    v = v.where(t["origin"].isin(SERVER_ORIGINS).to_numpy(), None)
    if rid_map is not None and side == "new":
        inverse = {n: r for r, n in rid_map.items()}
        return v.map(lambda x: inverse.get(x) if x is not None else None)
    return v


def _auto_match(ref: pd.DataFrame, new: pd.DataFrame, rid_map) -> str:
    if rid_map is not None:
        return "rid"
    for m in ("question", "prompt", "rid"):
        a = set(_keys(ref, m, None, "ref").dropna())
        b = set(_keys(new, m, None, "new").dropna())
        if a & b:
            return m
    raise EaglelogError("cannot match the requests of the two runs: no common benchmark "
                        "question id, no common prompt hash (SGLang logs the prompt at "
                        "--log-requests-level 2 or 3) and no common request id (give each "
                        "prompt the same rid in both runs, or a mapping with --rid-map FILE)")


def _per_key(t: pd.DataFrame, keys: pd.Series, groups: pd.Series) -> pd.DataFrame:
    """One row per key (prompt): its requests pooled (Σ steps, Σ step tokens), τ when every
    one of its requests has a verify step, and where its first request was."""
    k = keys.to_numpy(dtype=object)
    has = np.array([v is not None and v is not pd.NA and v == v for v in k], dtype=bool)
    steps = pd.to_numeric(t["steps"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    tok = pd.to_numeric(t["step_tokens"], errors="coerce").to_numpy(dtype=float,
                                                                     na_value=np.nan)
    outs = pd.to_numeric(t["output_tokens"], errors="coerce").to_numpy(dtype=float,
                                                                       na_value=np.nan)
    idx = np.flatnonzero(has)
    codes, uniq = pd.factorize(pd.Series(k[idx], dtype=object), sort=False)
    m = len(uniq)
    # a verify step yields at least one token: a request with steps but no positive step
    # tokens (completion_tokens 0 or 1 with a verify count) has no accept length, and its
    # log ratio would be -inf or nan (issue 36)
    ok = (steps[idx] > 0) & np.isfinite(tok[idx]) & (tok[idx] > 0)
    first = np.full(m, -1, dtype=np.int64)
    seen = np.zeros(m, dtype=bool)
    for j, c in enumerate(codes):           # the first request of each key, in input order
        if not seen[c]:
            seen[c] = True
            first[c] = idx[j]
    n_req = np.bincount(codes, minlength=m)
    all_ok = np.bincount(codes, weights=ok.astype(float), minlength=m) == n_req
    ssum = np.bincount(codes, weights=np.nan_to_num(steps[idx]), minlength=m)
    tsum = np.bincount(codes, weights=np.nan_to_num(tok[idx]), minlength=m)
    osum = np.bincount(codes, weights=np.nan_to_num(outs[idx]), minlength=m)
    tau = np.where(all_ok & (ssum > 0), tsum / np.where(ssum > 0, ssum, 1), np.nan)
    return pd.DataFrame({
        "requests": n_req, "steps": ssum, "step_tokens": tsum, "ok": all_ok,
        "output_tokens": osum, "source": t["source"].astype(str).to_numpy()[first],
        "line_no": t["line_no"].to_numpy(dtype=float, na_value=np.nan)[first],
        "id": t["id"].astype(object).to_numpy()[first],
        "group": groups.to_numpy(dtype=object)[first], "tau": tau},
        index=pd.Index(list(uniq), dtype=object, name="key"))


def _table_of(x, engine: str) -> tuple[pd.DataFrame, str]:
    """The request table of a path / ParsedLog, or a table itself (RequestsResult.to_frame(),
    request_table()), and a name for it."""
    if isinstance(x, pd.DataFrame):
        missing = [c for c in REQUEST_COLUMN_NAMES if c not in x.columns]
        if missing:
            raise EaglelogError("a request table needs the columns of "
                                f"eaglelog.schema.REQUEST_COLUMNS; missing: "
                                f"{', '.join(missing)}")
        return x.reset_index(drop=True), ", ".join(dict.fromkeys(x["source"].astype(str)))
    log = _load(x, engine)
    return request_table(log), ", ".join(s.name for s in log.sources)


def compare_paired(ref, new, *, match: str = "auto", rid_map=None, by: str | None = None,
                   confidence: float = 0.95, worst: int = 10,
                   engine: str = "auto") -> PairedResult:
    """Paired A/B on matched prompts: the per-prompt accept-length ratio τ_new / τ_ref, tested
    with a one-sample t-test on the log ratios; per-group wins and losses (Holm-adjusted); the
    prompts that got worse; the unmatched share of each run, never dropped silently.

    ``match``: 'question' (benchmark question id), 'prompt' (SGLang prompt hash), 'rid' (the
    same request id, or ``rid_map``: a dict ref rid -> new rid or a file of pairs), 'auto'
    (the first of these the two runs share).  A prompt sent several times in one run is pooled
    (Σ step tokens / Σ steps over its requests).

    >>> r = eaglelog.compare_paired("ref.jsonl", "new.jsonl", by="category")
    >>> print(r.verdict, r.ratio.estimate, r.p_value)
    """
    if match not in MATCHES:
        raise EaglelogError(f"match={match!r}: choose from {', '.join(MATCHES)}")
    if by is not None and by not in GROUPINGS:
        raise EaglelogError(f"by={by!r}: choose from {', '.join(GROUPINGS)}")
    if isinstance(rid_map, (str, os.PathLike)):
        rid_map = read_rid_map(os.fspath(rid_map))
    if rid_map is not None and match not in ("auto", "rid"):
        raise EaglelogError("a rid map matches by rid: use match='rid' (--match rid)")
    a, ra = _table_of(ref, engine)
    b, rb = _table_of(new, engine)
    for t, name in ((a, ra), (b, rb)):
        if not len(t):
            raise EaglelogError(f"{name}: no finished request to compare (SGLang logs need "
                                "--log-requests; benchmark outputs need per-question records)")
    how = _auto_match(a, b, rid_map) if match == "auto" else match
    ka, kb = _keys(a, how, rid_map, "ref"), _keys(b, how, rid_map, "new")
    if by is None and (a["category"].notna().any() or b["category"].notna().any()):
        by = "category"
    ga, gb = group_keys(a, by), group_keys(b, by)
    pa, pb = _per_key(a, ka, ga), _per_key(b, kb, gb)
    common = pa.index.intersection(pb.index, sort=False)
    both = pa.loc[common].add_suffix("_ref").join(pb.loc[common].add_suffix("_new"))
    usable = both["tau_ref"].notna() & both["tau_new"].notna()
    pairs = both[usable]
    # execution order: the sum of the prompt's positions in the two runs (each run's requests
    # in input order, which is finishing order for a server log)
    pos_a = pd.Series(np.arange(len(pa)), index=pa.index)
    pos_b = pd.Series(np.arange(len(pb)), index=pb.index)
    when = (pos_a.reindex(pairs.index).to_numpy() + pos_b.reindex(pairs.index).to_numpy())
    pairs = pairs.iloc[np.argsort(when, kind="stable")]
    n_ref_keys, n_new_keys = len(pa), len(pb)
    counts = {"ref_requests": len(a), "new_requests": len(b),
              "ref_without_key": int(ka.isna().sum()), "new_without_key": int(kb.isna().sum()),
              "ref_prompts": n_ref_keys, "new_prompts": n_new_keys, "matched": int(len(pairs)),
              "matched_without_accept_len": int((~usable).sum()),
              "ref_only": int(n_ref_keys - len(common)), "new_only": int(n_new_keys - len(common)),
              "ref_repeated": int((pa["requests"] > 1).sum()),
              "new_repeated": int((pb["requests"] > 1).sum())}
    counts["unmatched_ref"] = _f(1 - len(pairs) / n_ref_keys) if n_ref_keys else None
    counts["unmatched_new"] = _f(1 - len(pairs) / n_new_keys) if n_new_keys else None
    if how == "rid" and rid_map is not None:
        how = "rid-map"
    notes = []
    if counts["ref_only"] or counts["new_only"] or counts["ref_without_key"] or \
            counts["new_without_key"]:
        notes.append(f"unmatched: {counts['ref_only']} of {n_ref_keys} reference prompts and "
                     f"{counts['new_only']} of {n_new_keys} changed prompts have no partner"
                     + (f"; {counts['ref_without_key']} + {counts['new_without_key']} requests "
                        f"carry no {how} key" if counts["ref_without_key"] or
                        counts["new_without_key"] else "")
                     + ": they are counted here and left out of the paired test")
    if counts["matched_without_accept_len"]:
        notes.append(f"{counts['matched_without_accept_len']} matched prompts have no accept "
                     "length in one run (no verify step, or no tokens from its verify steps): "
                     "left out of the test")
    if counts["ref_repeated"] or counts["new_repeated"]:
        notes.append(f"prompts sent several times are pooled per run ({counts['ref_repeated']} "
                     f"in the reference, {counts['new_repeated']} in the changed run)")
    tr = pairs["tau_ref"].to_numpy(dtype=float)
    tn = pairs["tau_new"].to_numpy(dtype=float)
    d = np.log(tn / tr) if len(pairs) else np.empty(0)
    test = paired_t(d, confidence)
    alpha = 1 - confidence
    verdict = _verdict(test["p_value"], test["mean_log"], len(d), alpha)
    pooled = _pooled_ratio(pairs, confidence)
    unpaired = welch_log(tr, tn, confidence)
    groups = ()
    if by is not None and len(pairs):
        names = _group_order(pairs["group_ref"].astype(object), by)
        tests = []
        for g in names:
            m = (pairs["group_ref"] == g).to_numpy()
            dg = d[m]
            tests.append((g, dg, paired_t(dg, confidence)))
        adj = holm([t["p_value"] for _, _, t in tests])
        groups = tuple(PairedGroup(str(g), len(dg), int((dg > 0).sum()), int((dg < 0).sum()),
                                   int((dg == 0).sum()), t["ratio"], t["p_value"], pa_,
                                   _verdict(pa_, t["mean_log"], len(dg), alpha))
                       for (g, dg, t), pa_ in zip(tests, adj))
    frame = pd.DataFrame({
        "key": pairs.index.astype(str), "group": pairs["group_ref"].astype(str).to_numpy(),
        "ref_source": pairs["source_ref"].to_numpy(), "ref_line": pairs["line_no_ref"]
        .astype("Int64").to_numpy(), "ref_id": pairs["id_ref"].to_numpy(),
        "new_source": pairs["source_new"].to_numpy(), "new_line": pairs["line_no_new"]
        .astype("Int64").to_numpy(), "new_id": pairs["id_new"].to_numpy(),
        "tau_ref": tr, "tau_new": tn, "ratio": tn / tr if len(tr) else tr, "log_ratio": d,
        "steps_ref": pairs["steps_ref"].to_numpy(), "steps_new": pairs["steps_new"].to_numpy(),
        "output_tokens_ref": pairs["output_tokens_ref"].to_numpy(),
        "output_tokens_new": pairs["output_tokens_new"].to_numpy()})
    worse_rows = frame[frame["log_ratio"] < 0].sort_values(["log_ratio", "key"],
                                                          kind="stable").head(worst)
    worse = tuple({"key": r["key"], "group": r["group"], "ref": f"{r['ref_source']}:"
                   f"{_int(r['ref_line'])}", "new": f"{r['new_source']}:{_int(r['new_line'])}",
                   "accept_len_ref": _f(r["tau_ref"]), "accept_len_new": _f(r["tau_new"]),
                   "ratio": _f(r["ratio"]), "output_tokens_ref": _int(r["output_tokens_ref"]),
                   "output_tokens_new": _int(r["output_tokens_new"])}
                  for r in worse_rows.to_dict("records"))
    if len(d) < MIN_PAIRS:
        notes.append(f"{len(d)} matched prompts: the paired test needs at least {MIN_PAIRS}")
    # the test takes the prompts as independent; prompts that ran at the same time on a server
    # may share its state: their log ratios, in execution order and less their group's mean,
    # would then be autocorrelated (docs/requests.md)
    tau = None
    server = a["origin"].isin(SERVER_ORIGINS).any() or b["origin"].isin(SERVER_ORIGINS).any()
    if server and len(d) >= MIN_PAIRS:
        resid = d - pd.Series(d).groupby(pairs["group_ref"].astype(str).to_numpy()) \
            .transform("mean").to_numpy()
        tau = stats.autocorr_time(resid)
        if tau >= TAU_WARN:
            notes.append(f"the log ratios of prompts that ran close together look correlated "
                         f"(autocorrelation time {tau:.1f} prompts): the test assumes "
                         "independent prompts, so its p-value may be too small; compare at "
                         "batch size 1, or repeat the runs")
    return PairedResult(ra, rb, how, counts, test["ratio"], _f(test["t"]) if test["t"] is not None
                        and math.isfinite(test["t"]) else test["t"], test["df"],
                        test["p_value"], tau, int((d > 0).sum()), int((d < 0).sum()),
                        int((d == 0).sum()), verdict, pooled, unpaired, by, groups, worse,
                        confidence, tuple(notes), frame)


def _verdict(p: float | None, mean_log: float, n: int, alpha: float) -> str:
    if p is None:
        return "insufficient data"
    if p < alpha and mean_log != 0:
        return "better" if mean_log > 0 else "worse"
    return "no detectable difference"


def _pooled_ratio(pairs: pd.DataFrame, confidence: float) -> Estimate:
    """(Σy_new / Σx_new) / (Σy_ref / Σx_ref) over the matched prompts, prompts as units
    (linearised log ratio, t on n − 1 df)."""
    src = "pooled accept length new / ref on the matched prompts"
    n = len(pairs)
    if not n:
        return insufficient(math.nan, 0, confidence, src)
    yr, xr = pairs["step_tokens_ref"].to_numpy(float), pairs["steps_ref"].to_numpy(float)
    yn, xn = pairs["step_tokens_new"].to_numpy(float), pairs["steps_new"].to_numpy(float)
    Yr, Xr, Yn, Xn = yr.sum(), xr.sum(), yn.sum(), xn.sum()
    r = (Yn / Xn) / (Yr / Xr)
    if n < MIN_PAIRS:
        return insufficient(r, n, confidence, src)
    z = n * (yn / Yn - xn / Xn - yr / Yr + xr / Xr)
    se = math.sqrt(float(np.sum(z * z)) / (n - 1)) / math.sqrt(n)
    t = _tq(n - 1, confidence)
    return Estimate(r, r * math.exp(-t * se), r * math.exp(t * se), n, confidence, se, n - 1,
                    src)
