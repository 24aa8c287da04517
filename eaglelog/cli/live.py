"""Commands on live servers: `watch` (a live view and alerts from /metrics) and `fleet` (every
replica's verdict from Prometheus)."""
from __future__ import annotations

import os
import sys

import click

from ..errors import EaglelogError

from ._base import (baseline_option, emit, finish, gate_options, main, make_baseline,
                    output_options, render_frame, render_object, report_diagnostics)
from .analyses import (gate_check)


def _seconds(text, what):
    from ..live.metrics import parse_duration
    try:
        return parse_duration(text, what)
    except EaglelogError as e:
        raise click.BadParameter(str(e), param_hint=what) from None


def net_options(f):
    """--timeout, --max-body, --follow-redirects of watch and fleet (eaglelog/metrics.Limits)."""
    f = click.option("--follow-redirects", is_flag=True,
                     help="Follow a redirect to the same scheme, host and port (never one "
                          "elsewhere; by default none is followed).")(f)
    f = click.option("--max-body", default="64MiB", show_default=True, metavar="SIZE",
                     help="The most read from one source's answer (a /metrics scrape; the "
                          "answers of a Prometheus source).")(f)
    f = click.option("--timeout", "req_timeout", default="10s", show_default=True,
                     metavar="DURATION",
                     help="The deadline of each request, however slowly the server sends "
                          "(a /metrics scrape: at most the --interval or --step, at least 1s).")(f)
    return f


def _limits(req_timeout, max_body, follow_redirects):
    from ..live.metrics import limits, parse_size
    try:
        size = parse_size(max_body)
    except EaglelogError as e:
        raise click.BadParameter(str(e), param_hint="--max-body") from None
    return limits(timeout=_seconds(req_timeout, "--timeout"), max_body=size,
                  follow_redirects=follow_redirects)


@main.command("watch")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@baseline_option
@click.option("--interval", default="15s", show_default=True, metavar="DURATION",
              help="Time between refreshes (and scrapes of http://…/metrics sources).")
@click.option("--window", default="10m", show_default=True, metavar="DURATION",
              help="The view's span: the windows of the last DURATION of each instance (a "
                   "speedup interval needs 30 windows: 10m of 15s scrapes holds 40).")
@click.option("--alert", "alerts", multiple=True, metavar="COND",
              help="A condition METRIC OP VALUE, e.g. 'speedup<1', 'accept_len<1.5', "
                   "'tpot_p99>50ms' (metrics: accept_len, accept_rate, speedup, rate, "
                   "throughput; ttft_p50/p90/p99 and tpot_p50/p90/p99 from the engines' "
                   "histograms, in ms or s, checked on speculating instances); repeatable. When "
                   "one holds over --for, a line 'ALERT …' is printed and watch exits 3. A "
                   "latency quantile is known only to its histogram bucket: it fires when the "
                   "whole bucket is past the SLO; with the SLO inside the bucket a line "
                   "'ALERT? … possibly holds' is printed instead (no exit 3).")
@click.option("--for", "alert_for", default=None, metavar="DURATION",
              help="The span an alert's condition is computed over (default: one --interval).")
@click.option("--keep-watching", is_flag=True,
              help="With --alert: print one line per firing and keep watching (exit 3 at the "
                   "end when any fired).")
@click.option("--count", type=click.IntRange(1), default=None, metavar="N",
              help="Stop after N refreshes (exit 0 when no alert fired).")
@click.option("--match", "match", multiple=True, metavar="SELECTOR",
              help="prom+http://… sources: label matchers of the series, e.g. 'job=\"sglang\"'.")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of the speedup interval.")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table",
              show_default=True, help="The view as a table, or one JSON object per refresh.")
@net_options
@click.pass_context
def watch_cmd(ctx, sources, baseline_toks, baseline_log, interval, window, alerts, alert_for,
              keep_watching, count, match, confidence, fmt, req_timeout, max_body,
              follow_redirects):
    """A live view per instance of SGLang/vLLM /metrics endpoints or a Prometheus server.

    Accept length, per-position acceptance (vLLM), the rate one request stream gets and, with a
    baseline, the speedup with its interval, and TTFT and TPOT p99 from the engines'
    histograms (each with the bucket it lies in), over the last --window; refreshed every
    --interval. With --alert the views go to stderr and stdout carries only the ALERT lines:
    for cron and CI (exit 3 when a condition held; exit 1 when no source answered).

    \b
    Examples:
      eaglelog watch --baseline-toks 90 http://gpu7:30000/metrics
      eaglelog watch --match 'job="sglang"' --baseline-toks 90 prom+http://prometheus:9090
      eaglelog watch --alert 'speedup<1' --alert 'accept_len<1.5' --for 5m --count 1 \\
          --baseline-toks 90 prom+http://prometheus:9090
      eaglelog watch --alert 'tpot_p99>50ms' --for 5m --count 1 prom+http://prometheus:9090
    """
    with _limits(req_timeout, max_body, follow_redirects):
        _watch(ctx, sources, baseline_toks, baseline_log, interval, window, alerts, alert_for,
               keep_watching, count, match, confidence, fmt)


def _watch(ctx, sources, baseline_toks, baseline_log, interval, window, alerts, alert_for,
           keep_watching, count, match, confidence, fmt):
    import time as _time

    from ..live.watch import Watcher, check_alert_metrics, parse_alerts

    every = _seconds(interval, "--interval")
    conds = parse_alerts(alerts)
    baseline = make_baseline(ctx, baseline_toks, baseline_log, "auto", None, required=False)
    check_alert_metrics(conds, baseline)
    w = Watcher(sources, baseline=baseline, window=_seconds(window, "--window"), alerts=conds,
                alert_for=_seconds(alert_for, "--for") if alert_for else None, interval=every,
                match=match, confidence=confidence)
    to_err = bool(conds)
    stream = sys.stderr if to_err else sys.stdout
    tty = stream.isatty()
    fired_any = False
    active: set = set()
    n = 0
    stop_after = float(os.environ["EAGLELOG_FOLLOW_STOP_AFTER"]) \
        if os.environ.get("EAGLELOG_FOLLOW_STOP_AFTER") else None
    started = _time.monotonic()
    try:
        while True:
            view = w.refresh()
            n += 1 if view.instances else 0      # the first scrape of an endpoint only primes it
            if view.instances:
                if fmt == "jsonl":
                    click.echo(render_object(view.to_dict(), "jsonl"), nl=False, err=to_err)
                else:
                    if tty:
                        click.echo("\x1b[H\x1b[2J", nl=False, err=to_err)
                    else:
                        import datetime as _dt
                        click.echo(f"--- {_dt.datetime.now():%H:%M:%S} (watching; Ctrl-C to "
                                   "stop) ---", err=to_err)
                    click.echo(view.text(), nl=False, err=to_err)
            now = {(f.source, f.alert, f.certain) for f in view.firings + view.possible}
            for f in view.firings + view.possible:
                if (f.source, f.alert, f.certain) not in active:
                    click.echo(f.line())
            active = now
            if view.firings:
                fired_any = True
                if not keep_watching:
                    ctx.exit(3)
            if count is not None and n >= count:
                break
            if stop_after is not None and _time.monotonic() - started >= stop_after:
                break
            _time.sleep(every)
    except KeyboardInterrupt:
        pass
    if fired_any:
        ctx.exit(3)
    if w.no_data():
        raise EaglelogError(w.no_data())


@main.command("fleet")
@click.argument("sources", nargs=-1, required=True, metavar="SOURCE...")
@baseline_option
@click.option("--match", "match", multiple=True, metavar="SELECTOR",
              help="Label matchers of the series, e.g. 'job=\"sglang\"' (repeatable).")
@click.option("--since", default="1h", show_default=True, metavar="DURATION",
              help="How far back to read (prom+http://… sources).")
@click.option("--step", default=None, metavar="DURATION",
              help="At most one sample per step (default: every scrape); http://…/metrics "
                   "sources: seconds between scrapes.")
@click.option("--duration", "scrape_for", default=None, metavar="DURATION",
              help="http://…/metrics sources: how long to scrape them (default 30s).")
@gate_options("an instance")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@output_options
@net_options
@click.pass_context
def fleet_cmd(ctx, sources, baseline_toks, baseline_log, match, since, step, scrape_for, check,
              allow_insufficient, confidence, fmt, output, req_timeout, max_body,
              follow_redirects):
    """One row per instance, ranked by speedup: the ones below break-even marked, outliers
    against the fleet named, and TTFT and TPOT p99 from the engines' histograms (with the
    bucket each lies in).

    Every instance (and model) a Prometheus server scrapes with SGLang's or vLLM's families is
    a run, analysed as `eaglelog breakeven` analyses a log. An instance that cannot be read is
    one error row; the others are still ranked.

    \b
    Examples:
      eaglelog fleet --baseline-toks 90 prom+http://prometheus:9090
      eaglelog fleet --match 'job="sglang"' --since 6h --baseline-toks 90 -f csv \\
          prom+http://prometheus:9090
    """
    from ..live.fleet import fleet
    from ..live.metrics import is_metrics_source, with_params

    bad = [s for s in sources if not is_metrics_source(s)]
    if bad:
        raise click.UsageError(f"{bad[0]}: fleet reads prom+http(s)://… Prometheus servers or "
                               "http(s)://…/metrics endpoints")
    _seconds(since, "--since")
    specs = [with_params(s, match=list(match), since=since, step=step) if s.startswith("prom+")
             else with_params(s, step=step, duration=scrape_for) for s in sources]
    baseline = make_baseline(ctx, baseline_toks, baseline_log, "auto", None, required=False)
    if check and baseline is None:
        raise click.UsageError("--check gates on the verdict against a baseline: give "
                               "--baseline-toks or --baseline-log")
    from ..api import parse
    with _limits(req_timeout, max_body, follow_redirects):
        log = parse(specs)
    report_diagnostics(log, ctx.obj["verbose"], ctx.obj["quiet"], False)
    res = fleet(specs, baseline=baseline, confidence=confidence, log=log)
    if fmt == "json":
        emit(render_object(res.to_dict(), "json"), output)
    elif fmt == "jsonl":
        emit("".join(render_object(r.to_dict(), "jsonl") for r in res.rows), output)
    elif fmt == "table":
        emit(res.text(), output)
    else:
        emit(render_frame(res.to_frame(), fmt, output), output)
    if check:
        # (an instance that could not be read has no verdict: a gate does not pass on no data)
        gate_check(ctx, [(r.instance, r.verdict, None) if not r.error else
                         (r.instance, "insufficient data", f"error: {r.error}")
                         for r in res.rows], allow_insufficient)
        if allow_insufficient:
            return        # (the gate let the instances without a verdict pass: exit 0)
    finish(ctx, log)
