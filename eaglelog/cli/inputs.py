"""Commands that read and keep the records: `parse`, `export` (and `export --prometheus-rules`),
`cache`."""
from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING

import click

from ..errors import EaglelogError
from ..schema import TABLES, cli_name, table_from_cli

if TYPE_CHECKING:
    from ..api import ParsedLog
from ._base import (emit, finish, follow_options, input_options, main, metrics_options,
                    output_options, read_logs, render_frame, render_object, run_follow, said_wrote,
                    selection_options)


class TableName(click.Choice):
    """A table's name: listed once, kebab-case; the schema's snake_case spelling is the same."""

    def convert(self, value, param, ctx):
        return super().convert(cli_name(value) if isinstance(value, str) else value, param, ctx)


@main.command("parse")
@input_options
@metrics_options
@follow_options
@click.option("--table", "table", type=TableName([cli_name(t) for t in TABLES]),
              default=None, help="Print this table instead of the overview (prof-phases and "
                                 "prof_phases are the same).")
@output_options
@click.pass_context
def parse_cmd(ctx, logs, engine, keep_going, base_date, follow, interval, table, fmt, output):
    """Parse logs into tables; without --table, an overview of each input.

    LOG is a path, '-' for stdin, or a .gz/.xz/.bz2/.zst file. Tables: prof (one row per
    EAGLE3_PROF block), prof-phases (one row per phase line), decode, prefill, server-args,
    requests. Columns and units: docs/tables.md.

    \b
    Examples:
      eaglelog parse server.log
      eaglelog parse --table prof server.log
      eaglelog parse --table decode -f csv -o decode.csv server-*.log.gz
      grep -h 'Decode batch' *.log | eaglelog parse --table decode -f jsonl -
      eaglelog parse --follow gpu7:/data/logs/server.log
    """
    if fmt == "parquet" and not output:
        raise click.UsageError("-f parquet writes a binary file: give it with -o FILE.parquet")
    if follow:
        from ..overview import overview, render_overview

        def final(log):
            show_parsed(log, table, fmt, output)
        run_follow(ctx, logs, base_date, lambda log: render_overview(overview(log)), final,
                   output)
        return
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=table is not None,
                    every_column=True)
    show_parsed(log, table, fmt, output)
    finish(ctx, log)


def show_parsed(log: "ParsedLog", table, fmt, output) -> None:
    if table is None:
        from ..overview import overview, overview_rows, render_overview

        items = overview(log)
        if fmt == "json":
            emit(render_object(items, fmt), output)
        elif fmt == "jsonl":
            emit("".join(render_object(i, "jsonl") for i in items), output)
        elif fmt == "table":
            emit(render_overview(items), output)
        else:
            import pandas as pd
            emit(render_frame(pd.DataFrame(overview_rows(items)).convert_dtypes(), fmt, output),
                 output)
    else:
        emit(render_frame(log.table(table_from_cli(table)), fmt, output), output)


def rules_options(f):
    """export --prometheus-rules (issue 19, eaglelog/live/rules.py): the rules need no log."""
    for p in getattr(f, "__click_params__", ()):
        if isinstance(p, click.Argument) and p.name == "logs":
            p.required = False

    @click.option("--prometheus-rules", is_flag=True,
                  help="Write Prometheus recording and alerting rules (YAML, to -o) and a "
                       "Grafana dashboard (JSON, beside it: NAME.grafana.json) computing accept "
                       "length, per-stream rate, speedup and break-even from the engines' "
                       "counters; needs --baseline-toks, reads no log.")
    @click.option("--baseline-toks", "rules_baseline", type=float, default=None, metavar="TOK_S",
                  help="With --prometheus-rules: the per-stream rate without speculation.")
    @click.option("--rules-match", metavar="SELECTOR", default=None,
                  help="With --prometheus-rules: label matchers the rules select, e.g. "
                       "'job=\"sglang\"'.")
    @click.option("--rules-window", metavar="DURATION", default="5m", show_default=True,
                  help="With --prometheus-rules: the rate() window.")
    @click.option("--rules-for", metavar="DURATION", default="10m", show_default=True,
                  help="With --prometheus-rules: how long a condition holds before it alerts.")
    @click.option("--accept-floor", type=float, default=1.5, show_default=True,
                  help="With --prometheus-rules: the accept length EagleAcceptLengthLow alerts "
                       "under.")
    @functools.wraps(f)
    def wrapper(*args, prometheus_rules=False, rules_baseline=None, rules_match=None,
                rules_window="5m", rules_for="10m", accept_floor=1.5, **kwargs):
        if not prometheus_rules:
            if not kwargs.get("logs"):
                raise click.UsageError("Missing argument 'LOG...'.")
            return f(*args, **kwargs)
        import json as _json
        import math as _math
        from ..live.rules import grafana_dashboard, rules_yaml
        if kwargs.get("logs"):
            raise click.UsageError("--prometheus-rules reads no log: give only -o FILE and "
                                   "--baseline-toks")
        if not rules_baseline or rules_baseline <= 0 or not _math.isfinite(rules_baseline):
            raise click.UsageError("--prometheus-rules needs --baseline-toks TOK_S (the "
                                   "per-stream rate without speculation, e.g. 90)")
        out = kwargs["output"]
        emit(rules_yaml(rules_baseline, window=rules_window, hold=rules_for,
                        accept_floor=accept_floor, match=rules_match), out)
        dash = os.path.splitext(out)[0] + ".grafana.json"
        emit(_json.dumps(grafana_dashboard(rules_baseline, match=rules_match), indent=1) + "\n",
             dash)
        if not (click.get_current_context().obj or {}).get("quiet"):
            click.echo(f"eaglelog: wrote {out} (rules) and {dash} (Grafana dashboard)", err=True)
    return wrapper


@main.command("export")
@rules_options
@input_options
@selection_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), required=True,
              help="The JSON file to write.")
@click.pass_context
def export_cmd(ctx, logs, engine, keep_going, base_date, output):
    """Save a run's metric windows as JSON, to compare with later logs.

    The file holds, per metric, the window means and weights `compare` needs, the server_args
    and the batch sizes: small, and enough to be a reference in `eaglelog compare`. One run per
    file: a log that holds several server start-ups is refused.

    \b
    Examples:
      eaglelog export server.log -o baseline-2026-11-29.json
      eaglelog compare baseline-2026-11-29.json today.log
    """
    import json as _json

    from ..analysis.compare import runs_from_log

    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False)
    runs = runs_from_log(log, engine, None, 0.95)
    if len(runs) != 1:
        raise EaglelogError(f"export writes one run; these inputs hold {len(runs)} (server "
                            "start-ups count as runs): give one log with one start-up")
    from ..report import finite
    emit(_json.dumps(finite(runs[0].to_export()), default=str, allow_nan=False) + "\n", output)
    if output and output != "-":
        said_wrote(output)
    finish(ctx, log)


@main.group("cache")
def cache_cmd() -> None:
    """The caches of parsed tables, results and fetched copies ($XDG_CACHE_HOME/eaglelog).

    They hold at most EAGLELOG_CACHE_MAX bytes (default 2G; e.g. 500M, 1.5GiB, or 'none'):
    after each write the least recently used entries are deleted. --no-cache (before or after
    the command) or EAGLELOG_NO_CACHE=1 leaves them alone.

    \b
    Examples:
      eaglelog cache info
      eaglelog cache clear
      EAGLELOG_CACHE_MAX=500M eaglelog summary server.log
    """


@cache_cmd.command("info")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
def cache_info_cmd(fmt: str) -> None:
    """The cache's folder, its entries and their size, and the size limit.

    \b
    Example:
      eaglelog cache info -f json
    """
    import json
    from ..io import cache
    got = cache.info()
    click.echo(json.dumps(got, indent=2, ensure_ascii=False) if fmt == "json"
               else cache.info_text(got).rstrip("\n"))


@cache_cmd.command("clear")
@click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Output format.")
def cache_clear_cmd(fmt: str) -> None:
    """Delete every cache entry and say how much was freed (writes in progress are left
    alone).

    \b
    Example:
      eaglelog cache clear
    """
    import json
    from ..io import cache
    got = cache.clear()
    click.echo(json.dumps(got, indent=2, ensure_ascii=False) if fmt == "json"
               else cache.clear_text(got).rstrip("\n"))
