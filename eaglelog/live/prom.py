"""A Prometheus server as a source: every instance it scrapes, one run each (and per model).

``prom+http(s)://host:9090[/prefix]`` with a selector (``match``: label matchers such as
``job="sglang"``, repeatable, their union) and a range (``since``: a duration back from
``until``, default now).  The HTTP API's answers become the same samples a /metrics scrape
gives (eaglelog/live/metrics.py), so both sources make the same tables.

What is asked: one instant query per selector at ``until`` of the **raw samples** of eaglelog's
families over the range, ``{__name__=~"sglang:…|vllm:…", <match>}[<since>]`` (``/api/v1/query``
with a range selector).  Not ``rate()`` or ``query_range``: ``rate()`` extrapolates each window
to its edges and ``query_range`` resamples every series at its step points, so neither gives the
counter's increments between two scrapes nor the scrapes' times; the raw samples do, exactly
(docs/formats-metrics.md §4).  ``step`` coarsens the windows (at most one sample per step kept,
counts stay exact).  The PromQL ``rate()`` forms are what ``eaglelog export --prometheus-rules``
writes for alerting (eaglelog/live/rules.py).
"""
from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse

from ..errors import EaglelogError
from .metrics import (NAME_REGEX, Recorder, _http_get, cell, current_limits, http_error,
                      parse_duration)

DEFAULT_SINCE = 3600.0
# one instant query of a range selector returns every raw sample: above this many seconds the
# range is read in pieces, so that one answer stays a few MB per instance
PIECE_S = 6 * 3600.0

_MATCHER = r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"\s*'


def selector(match: str | None) -> str:
    """The selector of eaglelog's families restricted by ``match`` (label matchers, with or
    without braces)."""
    import re
    inner = ""
    if match:
        m = match.strip()
        if m.startswith("{") and m.endswith("}"):
            m = m[1:-1]
        parts = [p for p in _split_matchers(m) if p.strip()]
        for p in parts:
            if not re.fullmatch(_MATCHER, p):
                raise EaglelogError(f"--match {match!r}: {p.strip()!r} is not a label matcher "
                                    "(write e.g. job=\"sglang\" or instance=~\"gpu.*\")")
            if p.split("=")[0].split("!")[0].strip() == "__name__":
                raise EaglelogError(f"--match {match!r}: eaglelog chooses the metric names; "
                                    "match on labels only")
        inner = "," + ",".join(p.strip() for p in parts) if parts else ""
    return '{__name__=~"' + NAME_REGEX.replace("\\", "\\\\") + '"' + inner + "}"


def _split_matchers(text: str) -> list[str]:
    out, cur, quoted, esc = [], [], False, False
    for ch in text:
        if esc:
            cur.append(ch)
            esc = False
            continue
        if ch == "\\":
            esc = True
            cur.append(ch)
            continue
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


class PromError(EaglelogError):
    """Prometheus did not answer, or answered with an error."""


# the errorType values of Prometheus' HTTP API (web/api/v1/api.go): the only words of an error
# answer that are repeated (its ``error`` text, like any body, never is)
ERROR_TYPES = {"timeout", "canceled", "execution", "bad_data", "internal", "unavailable",
               "not_found", "not_acceptable"}


def api_get(base: str, path: str, params: dict, timeout: float | None = None,
            budget: list | None = None) -> dict:
    """GET base + path with params; the decoded ``data`` of a success, else PromError with one
    line (the status, and Prometheus' errorType when it is one of the API's; nothing else of
    the body).  ``budget``: [bytes left] shared by the requests of one source (--max-body)."""
    url = base.rstrip("/") + path + "?" + urllib.parse.urlencode(params)
    left = budget[0] if budget is not None else None
    try:
        body = _http_get(url, timeout, accept="application/json", budget=left)
    except urllib.error.HTTPError as e:
        etype = _error_type(e)
        raise PromError(f"Prometheus answered {e.code}: {etype}" if etype else
                        http_error(url, e)) from None
    except Exception as e:                           # noqa: BLE001 - one line
        raise PromError(http_error(url, e)) from None
    if budget is not None:
        budget[0] -= len(body)
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        raise PromError("the answer is not JSON: is this the Prometheus server's address?") \
            from None
    del body
    if not isinstance(obj, dict):
        raise PromError("the answer is not a Prometheus API answer (not a JSON object)")
    if obj.get("status") != "success":
        etype = obj.get("errorType")
        raise PromError(f"Prometheus answered {etype}" if etype in ERROR_TYPES else
                        "the answer is not a Prometheus API answer (no status 'success')")
    data = obj.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PromError("the answer is not a Prometheus API answer (its data is not an object)")
    warns = obj.get("warnings") or []
    data["_warnings"] = [cell(w) for w in warns[:20]] if isinstance(warns, list) else \
        [cell(warns)]
    return data


def _error_type(e) -> str | None:
    """The errorType of an HTTP error's JSON body (its first few KB), if the API's."""
    try:
        obj = json.loads(getattr(e, "head", b""))
    except Exception:                                # noqa: BLE001 - no JSON: no type
        return None
    t = obj.get("errorType") if isinstance(obj, dict) else None
    return t if t in ERROR_TYPES else None


def _matrix(data: dict, budget_series: int) -> list:
    """The series of a matrix answer, each checked: {"metric": {str: str}, "values": list}."""
    if data.get("resultType") != "matrix":
        rt = data.get("resultType")
        raise PromError("expected a matrix, Prometheus answered "
                        + (f"a {rt!r}" if isinstance(rt, str) and len(rt) < 20 and
                           rt.isidentifier() else "something else"))
    result = data.get("result")
    if result is None:
        return []
    if not isinstance(result, list):
        raise PromError("the answer's result is not a list of series")
    if len(result) > budget_series:
        raise PromError(f"more than {current_limits().max_series:,} series in the answer (the "
                        "series limit): narrow --match, or ask for a shorter --since")
    for i, s in enumerate(result):
        if not isinstance(s, dict):
            raise PromError(f"the answer's result[{i}] is a {type(s).__name__}, not a series")
        m, v = s.get("metric", {}), s.get("values", [])
        if not isinstance(m, dict) or not all(isinstance(k, str) and isinstance(x, str)
                                              for k, x in m.items()):
            raise PromError(f"the answer's result[{i}] has no labels (its metric is not an "
                            "object of strings)")
        if not isinstance(v, list):
            raise PromError(f"the answer's result[{i}] has no list of values")
    return result


def raw_samples(base: str, match: str | None, start: float, end: float) -> tuple[list, list]:
    """(series, warnings): every raw sample of eaglelog's families in (start, end], as the API's
    matrix: [{"metric": {...}, "values": [[t, "v"], ...]}, ...]."""
    sel = selector(match)
    series: dict[tuple, dict] = {}
    warnings: list[str] = []
    budget = [current_limits().max_body]
    t = start
    while t < end:
        hi = min(end, t + PIECE_S)
        data = api_get(base, "/api/v1/query",
                       {"query": f"{sel}[{max(1, int(round(hi - t)))}s]", "time": f"{hi:.3f}"},
                       budget=budget)
        warnings += data.get("_warnings", [])
        for s in _matrix(data, current_limits().max_series - len(series)):
            key = tuple(sorted(s.get("metric", {}).items()))
            got = series.setdefault(key, {"metric": s.get("metric", {}), "values": []})
            got["values"].extend(s.get("values", []))
        t = hi
    for s in series.values():                       # pieces overlap at their edge
        seen, vals = set(), []
        for tv in sorted(s["values"], key=_time_key):
            k = _time_key(tv)
            if k not in seen:
                seen.add(k)
                vals.append(tv)
        s["values"] = vals
    return list(series.values()), warnings


def _time_key(tv) -> float:
    """The sample time of a [t, "v"] pair for sorting (an odd pair sorts first, is dropped
    later as a sample without a time)."""
    try:
        t = float(tv[0])
        return t if t == t else -math.inf
    except (TypeError, ValueError, IndexError, KeyError, OverflowError):
        return -math.inf


def read_into(rec: Recorder, url: str, match=(), since=None, until=None, step=None,
              diags: list | None = None) -> None:
    """Add every sample of a Prometheus source to ``rec``; a failure is recorded as the
    source's error (one line), never raised."""
    from ..parsers.scan import Diagnostic

    base = url[len("prom+"):] if url.startswith("prom+") else url
    try:
        end = _time(until) if until else time.time()
        span = parse_duration(since, "--since") if since else DEFAULT_SINCE
        step_s = parse_duration(step, "--step") if step else None
        matches = list(match) if match and not isinstance(match, str) else \
            ([match] if match else [None])
        got = []
        warns: list[str] = []
        for m in matches:
            s, w = raw_samples(base, m, end - span, end)
            got += s
            warns += w
    except EaglelogError as e:
        rec.errors[url] = str(e)
        return
    rec.answered.add(url)
    for w in warns:
        if diags is not None:
            diags.append(Diagnostic(url, None, "metrics", f"Prometheus warns: {w} (partial "
                                    "data: the answer may lack some series)", "warning"))
    for s in got:
        labels = dict(s["metric"])
        name = labels.pop("__name__", "")
        for tv in s["values"]:
            try:
                t, v = tv
                t, value = float(t), float(v)
            except (TypeError, ValueError, OverflowError):
                t, value = math.nan, math.nan   # (Recorder.add leaves it out, with a note)
            rec.add(url, name, labels, t, value)
    if step_s:
        _align(rec, url, step_s)
    _targets(rec, url, base, matches, end, partial=bool(warns))


def _targets(rec: Recorder, url: str, base: str, matches: list, end: float,
             partial: bool = False) -> None:
    """One error line per scraped target that gave no series: down (``up == 0``), or up
    without SGLang's or vLLM's families (SGLang without --enable-metrics, another exporter)."""
    have = {dict(rl).get("instance") for (src, _, rl) in rec.runs if src == url}
    for m in matches:
        inner = (m or "").strip().strip("{}")
        try:
            data = api_get(base, "/api/v1/query", {"query": "up" + ("{" + inner + "}" if inner
                                                                     else ""),
                                                   "time": f"{end:.3f}"})
        except EaglelogError:
            return                         # the samples were read: leave it at that
        result = data.get("result")
        for r in result[:current_limits().max_series] if isinstance(result, list) else ():
            metric = r.get("metric") if isinstance(r, dict) else None
            inst = metric.get("instance") if isinstance(metric, dict) else None
            if not inst or not isinstance(inst, str) or inst in have:
                continue
            name = f"{url} instance={inst}"
            if name in rec.extra_sources:
                continue
            val = r.get("value")
            up = val[1] if isinstance(val, list) and len(val) == 2 else None
            rec.extra_sources.append(name)
            rec.errors[name] = (
                "Prometheus cannot scrape it (up == 0): is the server up and its /metrics "
                "served (SGLang: --enable-metrics)?" if up in ("0", "0.0") else
                "scraped, but its series are missing from Prometheus' partial answer (see "
                "its warning): ask again, or ask the store that holds them" if partial else
                "scraped, but without SGLang's or vLLM's metric families (sglang:…, vllm:…): "
                "is it an SGLang server started without --enable-metrics, or another exporter?")


def _align(rec: Recorder, url: str, step: float) -> None:
    """With a step, every series keeps the first sample of each step (its families merged), so
    that the counters and gauges of one series stay one window."""
    for (source, _, _), run in rec.runs.items():
        if source != url:
            continue
        for s in run.series.values():
            keep: dict[float, dict] = {}
            last_b = None
            for t in s.t:
                b = int(t // step)
                if last_b == b:
                    continue
                last_b = b
                keep[t] = s.by_t[t]
            s.by_t = keep
            s._order = sorted(keep)


def _time(text) -> float:
    """An RFC 3339 time, a Unix time, or 'now'."""
    import datetime as _dt
    if isinstance(text, (int, float)):
        return float(text)
    if str(text) == "now":
        return time.time()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        d = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise EaglelogError(f"--until {text!r}: give a time (2026-03-02T14:00:00, a Unix "
                            "time or now)") from None
    return d.timestamp()


def instances(url: str, match: str | None = None, since: float = 300.0) -> list[dict]:
    """The instances Prometheus has eaglelog's series of in the last ``since`` seconds (their
    run labels), for ``fleet``: one cheap query of counts, not the samples."""
    base = url[len("prom+"):] if url.startswith("prom+") else url
    q = f"count by (job, instance, model_name) (last_over_time({selector(match)}[{int(since)}s]))"
    data = api_get(base, "/api/v1/query", {"query": q})
    result = data.get("result")
    return [r["metric"] for r in (result if isinstance(result, list) else ())
            if isinstance(r, dict) and isinstance(r.get("metric"), dict)]
