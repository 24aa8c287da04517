"""Reading live sources into a ParsedLog: ``http(s)://…/metrics`` endpoints (metrics.py) and
``prom+http(s)://…`` Prometheus servers (prom.py), beside logs (``api.parse`` hands them here).
Above both readers, so that neither imports the other (issue 38)."""
from __future__ import annotations

from .metrics import (DEFAULT_DURATION, DEFAULT_STEP, Recorder, _spec_params,
                      is_metrics_source, parse_duration, parsed_log, read_endpoints)


def parse_sources(specs: list[str], *, keep_going: bool = True):
    """A ParsedLog of metrics sources (``http(s)://…/metrics`` endpoints, scraped for their
    ``duration`` every ``step``; ``prom+http(s)://…`` Prometheus servers, read over ``since``).
    eaglelog's options ride in each spec's query: ``?step=5s&duration=60s`` or
    ``?match=job%3D%22sglang%22&since=6h``."""
    from . import prom

    endpoints: dict[str, dict] = {}
    proms: list[tuple[str, dict]] = []
    for spec in specs:
        url, params = _spec_params(str(spec))
        if url.startswith("prom+"):
            proms.append((url, params))
        else:
            endpoints[url] = params
    rec = Recorder()
    diags: list = []
    names = []
    if endpoints:
        steps = {parse_duration(p.get("step", DEFAULT_STEP), "--step") for p in endpoints.values()}
        durs = {parse_duration(p.get("duration", DEFAULT_DURATION), "--duration")
                for p in endpoints.values()}
        read_endpoints(list(endpoints), step=min(steps), duration=max(durs), recorder=rec)
        names += list(endpoints)
    for url, params in proms:
        prom.read_into(rec, url, match=params.get("match") or (), since=params.get("since"),
                       until=params.get("until"), step=params.get("step"), diags=diags)
        names.append(url)
    return parsed_log(rec, names, diags)


def parse_with(paths, parse, **kwargs):
    """``api.parse`` of a mix: the metrics sources here, the logs by ``parse``; one ParsedLog."""
    import os

    specs = [os.fspath(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
    mine = [s for s in specs if is_metrics_source(s)]
    logs = [s for s in specs if not is_metrics_source(s)]
    log = parse_sources(mine, keep_going=kwargs.get("keep_going", True))
    if not logs:
        return log
    other = parse(logs, **kwargs)
    from ..model import ParsedLog
    from ..schema import TABLES
    from ..tables import concat_frames
    tables = {t: concat_frames(TABLES[t], [log.tables[t], other.tables[t]]) for t in TABLES}
    tables.update({t: df for t, df in log.tables.items() if t not in TABLES})  # latency_hist
    return ParsedLog(tables, log.sources + other.sources, log.diagnostics + other.diagnostics)
