"""The command line: parse arguments, call the library, render, echo.  Nothing else lives here.

Every EaglelogError becomes one line on stderr (``eaglelog: error: …``) and its exit code, in
``EaglelogGroup.invoke``; ``-v`` shows the traceback instead.
"""
from __future__ import annotations

import functools
import os
import sys
from collections import OrderedDict
from typing import TYPE_CHECKING

import click

from . import __version__
from .errors import EaglelogError, printable
from .schema import FORMATS, TABLES, cli_name, table_from_cli

if TYPE_CHECKING:
    from .api import ParsedLog

# the engines of eaglelog.parsers.ENGINES (a test keeps them in step; importing the parsers here
# would import pandas before any command runs)
ENGINE_CHOICES = ("auto", "sglang", "vllm", "llamacpp", "trtllm", "bench")


def render_frame(*args, **kwargs):
    from .report import render_frame as _render
    return _render(*args, **kwargs)


def render_object(*args, **kwargs):
    from .report import render_object as _render
    return _render(*args, **kwargs)


# options every analysis command shares (input_options, selection_options, metrics_options)
# and the output ones: a command's help lists its own options first, then these
SHARED_OPTIONS = ("engine", "keep_going", "base_date", "ssh_options", "connect_timeout", "fetch",
                  "no_cache", "cmd_quiet", "cmd_verbose", "since", "until", "startup",
                  "skip_warmup", "match", "step", "scrape_for", "follow", "interval")
OUTPUT_OPTIONS = ("fmt", "output")


class EaglelogCommand(click.Command):
    def get_params(self, ctx: click.Context):
        params = super().get_params(ctx)
        rank = {n: 1 for n in SHARED_OPTIONS} | {n: 2 for n in OUTPUT_OPTIONS}
        help_names = set(ctx.help_option_names)
        return sorted(params, key=lambda p: 3 if help_names & set(getattr(p, "opts", ()))
                      else rank.get(p.name, 0))


class EaglelogGroup(click.Group):
    command_class = EaglelogCommand

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except EaglelogError as e:
            if ctx.obj and ctx.obj.get("verbose"):
                raise
            click.echo(printable(f"eaglelog: error: {e}"), err=True)
            ctx.exit(e.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            raise
        except MemoryError:     # not a bug: the input is too large for this machine
            if ctx.obj and ctx.obj.get("verbose"):
                raise
        except Exception as e:  # a bug: say so in one line; -v shows the traceback
            if ctx.obj and ctx.obj.get("verbose"):
                raise
            if not _out_of_threads(e):
                click.echo(printable(internal_message(e, (ctx.obj or {}).get("inputs"))),
                           err=True)
                ctx.exit(1)
        # only a MemoryError gets here, outside its except clause: its traceback, and the
        # frames holding the memory, are freed before the message is made
        from .errors import out_of_memory_message
        click.echo(printable("eaglelog: error: " + out_of_memory_message(
            (ctx.obj or {}).get("inputs"))), err=True)
        ctx.exit(1)


def _out_of_threads(e: Exception) -> bool:
    """A thread the process could not start (under an address-space limit, its stack is the
    allocation that fails): out of memory, said as such."""
    return isinstance(e, RuntimeError) and "can't start new thread" in str(e)


def internal_message(e: Exception, inputs) -> str:
    """The one line of an unexpected exception.  numpy's LinAlgError is no bug of ours to
    report but a least-squares system these numbers leave without a solution (a degenerate
    window set: constant or non-finite columns): said so, naming the inputs."""
    import numpy as np
    if isinstance(e, np.linalg.LinAlgError):
        names = ", ".join(str(x) for x in inputs or ()) or "the input"
        return (f"eaglelog: error: {names}: the rate model's least-squares fit has no "
                f"solution on these numbers ({e}); a degenerate set of decode windows — check "
                "the lines with `eaglelog parse --table decode`, or select a part with "
                "--since/--until")
    return (f"eaglelog: internal error: {type(e).__name__}: {e} (run with -v for the "
            "traceback and please report it)")


@click.group(cls=EaglelogGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="eaglelog")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks and every warning.")
@click.option("-q", "--quiet", is_flag=True, help="No warnings or notes on stderr (errors only).")
@click.option("--no-cache", is_flag=True,
              help="Neither read nor write the caches in $XDG_CACHE_HOME/eaglelog.")
@click.pass_context
def main(ctx: click.Context, verbose: bool, quiet: bool, no_cache: bool) -> None:
    """Answers about speculative decoding (EAGLE-3, MTP, n-gram) from LLM serving logs.

    \b
    Examples:
      eaglelog summary --baseline-toks 90 server.log     where the cycle goes, and the verdict
      eaglelog breakeven --baseline-log base.log --by batch server.log
      eaglelog reconcile server.log                      profiler vs SGLang accept length
      eaglelog compare before.log after.log --fail-on-regression
      eaglelog sweep --baseline-toks 90 steps*.log       which config wins
      eaglelog whatif --baseline-toks 90 steps5.log      what other num_steps would give
      eaglelog schedule --baseline-log base.log -f vllm steps*.log   K per batch size
      eaglelog summary gpu7:/var/log/sglang/server.log   over ssh
      eaglelog parse --table decode -f csv -o decode.csv server.log.gz
    """
    ctx.ensure_object(dict)
    ctx.obj.update(verbose=verbose, quiet=quiet, no_cache=no_cache)


def input_options(f):
    """Options shared by every command that reads logs."""
    @click.argument("logs", nargs=-1, required=True, metavar="LOG...")
    @click.option("--engine", type=click.Choice(ENGINE_CHOICES), default="auto", show_default=True,
                  help="Log family; 'auto' sniffs it from the first lines.")
    @click.option("--keep-going", is_flag=True,
                  help="An input that fails (missing, corrupt, no records) is reported and the "
                       "others are still used; records read before a corruption are kept. The "
                       "exit code is still 1.")
    @click.option("--date", "base_date", type=click.DateTime(formats=["%Y-%m-%d"]), default=None,
                  help="Date of the first line, for old logs whose prefixes have only a time "
                       "of day (default: from the file's modification time).")
    @click.option("--ssh-option", "ssh_options", multiple=True, metavar="OPT",
                  help="Extra ssh option for remote logs, as -o OPT (repeatable), e.g. "
                       "'ProxyJump=bastion'.")
    @click.option("--connect-timeout", type=click.IntRange(1, 600), default=10,
                  show_default=True, help="Seconds to wait for a remote host to answer.")
    @click.option("--fetch", is_flag=True,
                  help="Copy whole remote files into the cache ($XDG_CACHE_HOME/eaglelog) "
                       "instead of filtering them on the remote host; an unchanged file is not "
                       "transferred again.")
    @click.option("--no-cache", is_flag=True,
                  help="Neither read nor write the caches in $XDG_CACHE_HOME/eaglelog.")
    @click.option("-q", "--quiet", "cmd_quiet", is_flag=True,
                  help="No warnings or notes on stderr (errors only).")
    @click.option("-v", "--verbose", "cmd_verbose", is_flag=True,
                  help="Show tracebacks and every warning.")
    @functools.wraps(f)
    def wrapper(*args, cmd_quiet=False, cmd_verbose=False, ssh_options=(), connect_timeout=10,
                fetch=False, no_cache=False, **kwargs):
        from .remote import RemoteOptions

        ctx = click.get_current_context()
        ctx.ensure_object(dict)
        ctx.obj["inputs"] = tuple(kwargs.get("logs") or ())     # for an out-of-memory message
        ctx.obj["no_cache"] = no_cache or ctx.obj.get("no_cache", False) or \
            bool(os.environ.get("EAGLELOG_NO_CACHE"))
        if cmd_quiet:
            ctx.obj["quiet"] = True
        if cmd_verbose:
            ctx.obj["verbose"] = True
        ctx.obj["remote"] = RemoteOptions(tuple(ssh_options), connect_timeout, fetch,
                                          progress=sys.stderr.isatty() and not ctx.obj["quiet"]
                                          and not os.environ.get("NO_COLOR"),
                                          use_cache=not ctx.obj["no_cache"])
        return cached_result(ctx, lambda: f(*args, **kwargs))
    return wrapper


def selection_options(f):
    """What of the logs an analysis looks at: a time span, one start-up, the warm-up."""
    @click.option("--skip-warmup", "skip_warmup", default="auto", show_default=True,
                  metavar="auto|N",
                  help="Leading decode windows to leave out: 'auto' (a start unlike the rest, "
                       "found by MSER-5 and a test, said in a note), N windows, or 0.")
    @span_options
    @functools.wraps(f)
    def wrapper(*args, skip_warmup="auto", **kwargs):
        ctx = click.get_current_context()
        if skip_warmup != "auto" and not (skip_warmup.isdigit()):
            raise click.BadParameter(f"{skip_warmup!r}: 'auto' or a number of windows",
                                     param_hint="--skip-warmup")
        ctx.obj["warmup"] = "auto" if skip_warmup == "auto" else int(skip_warmup)
        return f(*args, **kwargs)
    return wrapper


def span_options(f):
    """What of the logs an analysis looks at: a time span, one start-up (the analyses of
    requests and positions, which have no decode windows to leave out, take only these)."""
    @click.option("--since", metavar="TIME", default=None,
                  help="Only what the logs printed from TIME on: 'YYYY-MM-DD HH:MM[:SS]', "
                       "'HH:MM[:SS]' (on the first line's date) or '+N[s|m|h]' after the first "
                       "line.")
    @click.option("--until", metavar="TIME", default=None, help="Only up to TIME (as --since).")
    @click.option("--startup", type=click.IntRange(0), default=None, metavar="N",
                  help="Only server start-up N of each log (1: after its first server_args "
                       "line; 0: before it).")
    @functools.wraps(f)
    def wrapper(*args, since=None, until=None, startup=None, **kwargs):
        ctx = click.get_current_context()
        ctx.ensure_object(dict)
        ctx.obj["select"] = {"since": since, "until": until, "startup": startup}
        return f(*args, **kwargs)
    return wrapper


def warmup_of(ctx: click.Context):
    return (ctx.obj or {}).get("warmup", "auto")


def run_workers() -> int:
    """Processes for the per-run analyses of many inputs: EAGLELOG_WORKERS, else the cores
    (at most 8), as for the scan."""
    from .api import _workers
    return _workers()


# ---- metrics sources (issue 19: eaglelog/metrics.py, prom.py) --------------------------------
def metrics_options(f):
    """--match/--step/--duration for http(s)://…/metrics and prom+http(s)://… inputs; they ride
    in each such input's query (metrics.with_params).  A bare duration given to --since
    (selection_options: '6h', '30m') is a Prometheus input's look-back."""
    @click.option("--match", "match", multiple=True, metavar="SELECTOR",
                  help="prom+http://… inputs: label matchers of the series to read, e.g. "
                       "'job=\"sglang\"' (repeatable: their union); with --since 6h (a "
                       "duration: how far back; default 1h).")
    @click.option("--step", metavar="DURATION", default=None,
                  help="http://…/metrics inputs: seconds between scrapes (default 5s); "
                       "prom+http://…: at most one sample per step (default: every scrape).")
    @click.option("--duration", "scrape_for", metavar="DURATION", default=None,
                  help="http://…/metrics inputs: how long to scrape them (default 30s).")
    @functools.wraps(f)
    def wrapper(*args, match=(), step=None, scrape_for=None, **kwargs):
        logs = kwargs.get("logs") or ()
        from .metrics import is_metrics_source
        if any(is_metrics_source(s) for s in logs):
            import re
            from .metrics import with_params
            ctx = click.get_current_context()
            sel = (ctx.obj or {}).get("select") or {}
            since = sel.get("since")
            if since and re.fullmatch(r"\d+(\.\d+)?(ms|s|m|h|d|w)", since.strip()):
                sel["since"] = None            # a look-back, not a selection
            else:
                since = None
            kwargs["logs"] = tuple(
                with_params(s, match=list(match), since=since, step=step)
                if s.startswith("prom+") else
                with_params(s, step=step, duration=scrape_for) if is_metrics_source(s) else s
                for s in logs)
        return f(*args, **kwargs)
    return wrapper


def cached_result(ctx: click.Context, body):
    """Run a command, or print its output from the result cache when the command, its options
    and every input file are unchanged (eaglelog/cache.py)."""
    import contextlib
    import io

    p = ctx.params
    logs = list(p.get("logs") or ()) + ([p["baseline_log"]] if p.get("baseline_log") else [])
    if ctx.obj.get("no_cache") or p.get("output") or p.get("follow") or \
            ctx.command.name == "export" or not logs or os.environ.get("EAGLELOG_NO_RESULT_CACHE"):
        return body()
    from .cache import load_result, result_key, store_result

    params = {k: v for k, v in p.items()}
    params.update(quiet=ctx.obj.get("quiet"), verbose=ctx.obj.get("verbose"))
    key = result_key(ctx.command.name, params, logs)
    if key is None:
        return body()
    hit = load_result(key)
    if hit is not None:
        sys.stdout.write(hit["stdout"])
        sys.stderr.write(hit["stderr"])
        sys.stdout.flush()
        ctx.exit(hit["code"])
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            body()
    except click.exceptions.Exit as e:
        code = e.exit_code
    finally:
        sys.stdout.write(out.getvalue())
        sys.stderr.write(err.getvalue())
        sys.stdout.flush()
    if code in (0, 3):
        store_result(key, out.getvalue(), err.getvalue(), code)
    if code:
        ctx.exit(code)


def follow_options(f):
    @click.option("--follow", is_flag=True,
                  help="Keep reading the (one) log as it grows, like tail -F (survives "
                       "rotation), and refresh the view; Ctrl-C prints it once more and exits 0.")
    @click.option("--interval", type=click.FloatRange(0.1, 3600), default=5.0, show_default=True,
                  help="Seconds between refreshes with --follow.")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


def run_follow(ctx, logs, base_date, render, final_render=None, output=None):
    """Follow one log; refreshes go to stdout (the screen is cleared on a terminal)."""
    from .follow import follow, screen_view

    if len(logs) != 1:
        raise click.UsageError("--follow reads one log")
    # the refreshes are a text view for people: with -f json/csv/… on stdout they go to stderr,
    # so that stdout holds only the final result in that format
    to_err = ctx.params.get("fmt", "table") != "table" and not output
    stream = sys.stderr if to_err else sys.stdout
    emit_view = screen_view(None if final_render is not None else (lambda t: emit(t, output)),
                            to_err, stream.isatty() and (to_err or not output))

    def final(log):       # inside follow(): a second Ctrl-C cannot cut the final view short
        report_diagnostics(log, ctx.obj["verbose"], ctx.obj["quiet"], False)
        if final_render is not None:
            final_render(log)

    follow(logs[0], render, emit_view, base_date=base_date.date() if base_date else None,
           remote=ctx.obj.get("remote"), interval=ctx.params.get("interval", 5.0),
           stop_after=float(os.environ["EAGLELOG_FOLLOW_STOP_AFTER"])
           if os.environ.get("EAGLELOG_FOLLOW_STOP_AFTER") else None, final=final)


def output_options(f):
    """-f/--format and -o/--output, the same on every command."""
    @click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), default="table",
                  show_default=True, help="Output format; parquet needs -o.")
    @click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
                  help="Write to this file instead of stdout.")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


def emit(text: str | None, output: str | None) -> None:
    if text is None:
        return
    if output and output != "-":
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise EaglelogError(f"{output}: cannot write: {e.strerror or e}") from None
    else:
        click.echo(text, nl=False)


def report_diagnostics(log: "ParsedLog", verbose: bool, quiet: bool,
                       skipped_note: bool = True) -> None:
    """Warnings and errors on stderr: one line per (input, kind), with a count of the rest."""
    groups: "OrderedDict[tuple[str, str], list]" = OrderedDict()
    for d in log.diagnostics:
        groups.setdefault((d.source, d.kind), []).append(d)
    for (source, kind), ds in groups.items():
        if quiet and ds[0].severity != "error":
            continue
        listed = [d for d in ds if not d.more]
        unlisted = sum(d.more for d in ds)      # counted by the scanner, not kept
        shown = listed if verbose or kind == "transfer" else listed[:1]
        for d in shown:
            click.echo(f"eaglelog: {d.severity}: {d}", err=True)
        more = len(listed) - len(shown) + unlisted
        if more:
            hint = (f"-v shows the first {len(listed):,}" if unlisted else "-v shows all") \
                if not verbose else "not kept"
            click.echo(f"eaglelog:   … and {more:,} more like it in {source} ({hint})",
                       err=True)
    if quiet or not skipped_note:
        return
    for info in log.sources:
        if info.skipped:
            click.echo(f"eaglelog: note: {info.name}: {info.skipped:,} "
                       f"line{'s' if info.skipped != 1 else ''} without a record "
                       f"skipped (first at line {info.first_skipped})", err=True)


def read_logs(ctx: click.Context, logs, engine, keep_going, base_date,
              skipped_note: bool = True, every_column: bool = False,
              preload: tuple[str, ...] = (), select: bool = True) -> "ParsedLog":
    """Parse the inputs; the analyses ask for the columns they read (schema.ANALYSIS_COLUMNS)
    of the large tables, `parse` for every column.  The modules named in ``preload`` (the
    command's analysis) and pandas are imported by a second thread meanwhile: the C scan of a
    large log runs without the GIL, so the 0.3–0.5 s of imports overlap it."""
    out = ctx.params.get("output")
    if out and out != "-" and os.path.exists(out):
        for spec in logs:
            if spec != "-" and os.path.exists(spec) and os.path.samefile(out, spec):
                raise click.UsageError(f"-o {out} is also an input: refusing to overwrite it")
    from .api import parse

    from .schema import ANALYSIS_COLUMNS
    from .sources import export_refusal, looks_like_export
    for spec in logs:
        if looks_like_export(spec):
            raise EaglelogError(export_refusal(spec, ctx.command.name))

    _preload(("pandas",) + tuple(preload))
    log = parse(list(logs), engine=engine, keep_going=keep_going,
                base_date=base_date.date() if base_date else None, remote=ctx.obj.get("remote"),
                cache=not ctx.obj.get("no_cache"),
                columns=None if every_column else ANALYSIS_COLUMNS)
    report_diagnostics(log, ctx.obj["verbose"], ctx.obj["quiet"], skipped_note)
    sel = ctx.obj.get("select") if select else None
    if sel and any(v is not None for v in sel.values()):
        log = log.select(**sel)
    return log


def _preload(modules: tuple[str, ...]) -> None:
    """Import these modules in a daemon thread (an import that fails is left to the main
    thread, which imports them again and reports it).  Only where the scan runs in threads:
    a process pool forked while a thread holds an import lock could deadlock."""
    import threading

    from .parsers.scan import fast_available
    if not fast_available():
        return

    def work():
        import importlib
        for m in modules:
            try:
                importlib.import_module(m)
            except BaseException:      # noqa: BLE001 - the main thread's import reports it
                return
    threading.Thread(target=work, name="eaglelog-preload", daemon=True).start()


def finish(ctx: click.Context, log: "ParsedLog") -> None:
    """Exit 1 after the output when an input failed under --keep-going."""
    if log.errors:
        ctx.exit(1)


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
        from .overview import overview, render_overview

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
        from .overview import overview, overview_rows, render_overview

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


def gate_options(what: str):
    """--check and --allow-insufficient: the one gate of breakeven and fleet (gate_check)."""
    def deco(f):
        f = click.option("--allow-insufficient", is_flag=True,
                         help=f"With --check: let {what} without a verdict pass.")(f)
        return click.option("--check", is_flag=True,
                            help=f"Exit with code 3 when {what}'s verdict is 'below', "
                                 "'partial', 'mixed', 'invalid baseline', or there is none "
                                 "('insufficient data', 'needs accept length') (a CI gate)."
                            )(f)
    return deco


def baseline_option(f):
    @click.option("--baseline-toks", metavar="TOK_S[±σ] | B:TOK_S,…", default=None,
                  help="Decode rate of the same model without speculation, tokens/s per request "
                       "stream: one rate at the run's batch size, e.g. 90 or '90±3' (σ: the "
                       "standard uncertainty of that rate), or one per batch size, "
                       "'1:90,8:70,32:40' (matched to the run's batch sizes; linear between "
                       "them, nothing outside).")
    @click.option("--baseline-log", type=click.Path(dir_okay=False), default=None,
                  help="A log of the same model without speculation; its step time is matched "
                       "to the run on batch size (#running-req).")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


def make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=True):
    from .baseline import Baseline

    if baseline_toks and baseline_log:
        raise click.UsageError("give --baseline-toks or --baseline-log, not both")
    if baseline_toks:
        try:
            return Baseline.from_text(baseline_toks)
        except ValueError as e:
            raise click.BadParameter(f"{baseline_toks!r}: {e}",
                                     param_hint="--baseline-toks") from None
    if baseline_log:
        return Baseline(log=read_logs(ctx, [baseline_log], engine, False, base_date,
                                      skipped_note=False, select=False))
    if required:
        raise click.UsageError("give the baseline: --baseline-toks 90 (tokens/s without "
                               "speculation) or --baseline-log BASE.log")
    return None




def show_run_errors(log: "ParsedLog", result):
    """The runs an analysis could not answer (library.each_run): one line each on stderr, and
    exit 1 at the end (finish).  Returns the result with every error in its ``errors``: those
    inputs that could not be read (--keep-going: said when they were read) first, so that a
    JSON reader sees every input that gave no answer."""
    import dataclasses

    from .parsers.scan import Diagnostic

    for msg in result.errors:
        d = Diagnostic(msg.split(": ", 1)[0], None, "input_error", msg.split(": ", 1)[-1],
                       "error")
        log.diagnostics.append(d)
        click.echo(f"eaglelog: error: {d}", err=True)
    unread = tuple(i.error if i.error.startswith(i.name + ":") else f"{i.name}: {i.error}"
                   for i in log.sources if i.error)
    return dataclasses.replace(result, errors=unread + tuple(result.errors)) if unread \
        else result


def results_output(result, fmt, output, block):
    """One human block per run, or the result's JSON (one shape: {"command", "confidence",
    "runs": [...], "errors"}), one JSON line per run, or its flat table (csv/markdown)."""
    if fmt == "json":
        emit(render_object(result.to_dict(), "json"), output)
    elif fmt == "jsonl":
        emit("".join(render_object(r.to_dict(), "jsonl") for r in result.runs), output)
    elif fmt == "table" and block is not None:
        emit("\n".join(block(r) for r in result.runs), output)
    elif fmt == "markdown" and block is not None:       # the human block, to paste
        from .report.blocks import fenced
        emit("\n".join(fenced(block(r)) for r in result.runs), output)
    else:
        emit(render_frame(result.to_frame(), fmt, output), output)


def save_picture(fig, path: str, fmt: str | None = None) -> None:
    """Write a figure (report.plot.save_figure) and say so; a path that cannot be written is
    one line."""
    from .report.plot import save_figure
    try:
        save_figure(fig, path, fmt)
    except OSError as e:
        raise EaglelogError(f"{path}: cannot write: {e.strerror or e}") from None
    said_wrote(path)


def said_wrote(path: str) -> None:
    """``eaglelog: wrote PATH (size)`` on stderr, unless -q: every command that writes a file
    the user named says so (a file written to stdout is not said)."""
    ctx = click.get_current_context()
    if not (ctx.obj or {}).get("quiet"):
        from .units import fmt_bytes
        click.echo(printable(f"eaglelog: wrote {path} ({fmt_bytes(os.path.getsize(path))})"),
                   err=True)


def render_result(result, fmt, output, block, markdown_tables) -> None:
    """The result of an analysis with its own human block: -f json its JSON, table the block,
    markdown its rounded tables (``markdown_tables(result)``: lists of rows, one table each),
    csv/jsonl/parquet its raw frame."""
    if fmt == "json":
        emit(render_object(result.to_dict(), "json"), output)
    elif fmt == "table":
        emit(block(result), output)
    elif fmt == "markdown":
        import pandas as pd
        emit("\n".join(render_frame(pd.DataFrame(rows), fmt, output)
                       for rows in markdown_tables(result) if rows), output)
    else:
        emit(render_frame(result.to_frame(), fmt, output), output)


adaptive_config_option = click.option(
    "--adaptive-config", "adaptive_config", type=click.Path(dir_okay=False), default=None,
    metavar="FILE",
    help="An SGLang adaptive run's --speculative-adaptive-config file (e.g. the one `eaglelog "
         "schedule -f sglang` wrote): each #running-req bucket says the K it ran (SGLang's "
         "slots switch silently; docs/engines.md §9).")


@main.command("breakeven")
@input_options
@selection_options
@metrics_options
@baseline_option
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@click.option("--by", "by", type=click.Choice(["batch"]), default=None,
              help="Also per #running-req bucket (with a baseline per batch size: "
                   "--baseline-log or --baseline-toks 1:90,8:70,…).")
@click.option("--cycle-from", type=click.Choice(["auto", "prof", "decode"]), default="auto",
              show_default=True, help="Cycle time derived from the decode lines (prefill time "
                                      "removed) or from EAGLE3_PROF blocks (no-sync only); "
                                      "auto: derived when the log carries it without bias, "
                                      "else the blocks.")
@adaptive_config_option
@gate_options("a run")
@output_options
@click.pass_context
def breakeven_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log,
                  confidence, by, cycle_from, adaptive_config, check, allow_insufficient, fmt,
                  output):
    """Is speculation paying off? Break-even accept length and projected speedup.

    \b
      breakeven_accept_len = cycle_ms / baseline_step_ms   (baseline_step_ms = 1000 / TOK_S)
      speedup              = accept_len × baseline_step_ms / cycle_ms

    Both are per request stream: the cycle weighted by request-steps, with prefill time
    estimated and removed, and the baseline taken at the run's own batch sizes. Verdict:
    'above' / 'below' when the speedup interval is entirely above / below 1, 'inconclusive'
    when it contains 1 (or when the cycle is only an upper bound), 'needs accept length' for
    EAGLE3_PROF blocks without a per-batch accept length (the break-even accept length is
    still given), 'insufficient data' with fewer than 2 windows or blocks, 'partial' when the
    baseline covers too few of the run's batch sizes, 'mixed' when some batch sizes are above
    break-even and others below (the per-batch table follows), 'invalid baseline' when the
    break-even exceeds what a cycle can commit or the baseline covers none of the run's batch
    sizes. Intervals from 2 windows up; short runs take each window as its own unit with a
    stated allowance for their correlation. The statistical model: docs/statistics.md.

    \b
    Examples:
      eaglelog breakeven --baseline-toks 90 server.log
      eaglelog breakeven --baseline-toks '90±3' --confidence 0.9 -f json server.log
      eaglelog breakeven --baseline-log base.log --by batch spec.log
      eaglelog breakeven --baseline-log base.log --adaptive-config sched.json adaptive.log
      eaglelog breakeven --baseline-toks 90 --check server.log || echo "speculation is slower"
    """
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date)
    from . import library
    from .errors import UsageProblem
    try:
        exported = library.exports_in(list(logs), confidence, "breakeven")
    except UsageProblem as e:
        raise click.UsageError(str(e)) from None
    if exported:                   # eaglelog exports: from their estimates (no per-batch table)
        from .report.blocks import breakeven_block
        if by or adaptive_config:
            raise click.UsageError("--by batch and --adaptive-config need the log: an export "
                                   "keeps the run's batch mix, not its windows")
        result = library.breakeven(list(logs), baseline=baseline, confidence=confidence)
        results_output(result, fmt, output, breakeven_block)
        if check:
            gate_check(ctx, [(r.source, r.verdict, r.verdict_reason) for r in result.runs],
                       allow_insufficient)
        return
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.breakeven", "eaglelog.report.blocks"))
    from .report.blocks import breakeven_block

    result = library.breakeven(log, baseline=baseline, confidence=confidence,
                               by_batch=by == "batch", cycle_from=cycle_from,
                               skip_warmup=warmup_of(ctx), workers=run_workers(),
                               adaptive_config=adaptive_config)
    result = show_run_errors(log, result)
    results_output(result, fmt, output, breakeven_block)
    if check:
        gate_check(ctx, [(r.source, r.verdict, r.verdict_reason) for r in result.runs],
                   allow_insufficient)
    finish(ctx, log)


def gate_check(ctx, runs, allow_insufficient: bool) -> None:
    """The one --check of breakeven and fleet (analysis.breakeven.gate_fails): exit 3 with a
    line naming each failing run, when any fails."""
    from .analysis.breakeven import NO_VERDICT, gate_fails, gate_message
    failing = [(s, v, r) for s, v, r in runs if gate_fails(v, allow_insufficient)]
    if not failing:
        return
    if not ctx.obj["quiet"]:
        click.echo(printable("eaglelog: check failed: " + "; ".join(
            gate_message(s, v, r) for s, v, r in failing) +
            ("" if all(v not in NO_VERDICT for _, v, _ in failing)
             else " (--allow-insufficient lets a run without a verdict pass)")), err=True)
    ctx.exit(3)


@main.command("summary")
@input_options
@selection_options
@metrics_options
@follow_options
@baseline_option
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@output_options
@click.pass_context
def summary_cmd(ctx, logs, engine, keep_going, base_date, follow, interval, baseline_toks,
                baseline_log, confidence, fmt, output):
    """One screen per log: config, cycle breakdown, accept length, throughput, verdict.

    The cycle breakdown comes from no-sync EAGLE3_PROF blocks (cycle-weighted), the accept
    length from SGLang's decode lines (request-step weighted) and from the profiler; with a
    baseline, the break-even verdict of `eaglelog breakeven`.

    \b
    Examples:
      eaglelog summary server.log
      eaglelog summary --baseline-toks 90 server.log
      eaglelog summary --baseline-log base.log -f json spec.log
      eaglelog summary --follow --baseline-toks 90 gpu7:/data/logs/server.log
    """
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=False)
    if follow:
        def results_of(log):
            from . import library
            return library.summarize(log, baseline=baseline, confidence=confidence,
                                     skip_warmup=warmup_of(ctx))

        def view(log):
            from .report.blocks import summary_block
            return "\n".join(summary_block(r) for r in results_of(log).runs)

        def final(log):
            from .report.blocks import summary_block
            results_output(results_of(log), fmt, output, summary_block)
        run_follow(ctx, logs, base_date, view, final, output)
        return
    from . import library
    from .errors import UsageProblem
    try:
        if library.exports_in(list(logs)):         # eaglelog exports: their own block
            from .report.blocks import export_summary_block
            results_output(library.summarize(list(logs), baseline=baseline,
                                             confidence=confidence),
                           fmt, output, export_summary_block)
            return
    except UsageProblem as e:
        raise click.UsageError(str(e)) from None
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.summary", "eaglelog.report.blocks"))
    from . import library
    from .report.blocks import summary_block

    from .analysis.llamacpp import served
    if len(log.bench) and log.decode.empty and log.prof.empty and not served(log):
        bench_summary_output(ctx, log, fmt, output, confidence)   # benchmark outputs only
        finish(ctx, log)
        return
    result = library.summarize(log, baseline=baseline, confidence=confidence,
                               skip_warmup=warmup_of(ctx), workers=run_workers())
    result = show_run_errors(log, result)
    results_output(result, fmt, output, summary_block)
    finish(ctx, log)


def bench_summary_output(ctx, log, fmt, output, confidence=0.95) -> None:
    """Benchmark outputs and other engines' statistics: one row per reported result (JSON: the
    summary's documented shape, BenchSummary.to_dict)."""
    import dataclasses

    import pandas as pd

    from .analysis.bench import summarize_bench

    result = summarize_bench(log, confidence)
    result = dataclasses.replace(result, errors=tuple(
        i.error if i.error.startswith(i.name + ":") else f"{i.name}: {i.error}"
        for i in log.sources if i.error))
    if fmt == "json":
        emit(render_object(result.to_dict(), "json"), output)
    elif fmt == "jsonl":
        emit("".join(render_object(r, "jsonl") for r in result.run_dicts()), output)
    else:
        text = render_frame(pd.DataFrame(list(result.runs)), fmt, output)
        emit(text + "\n" if fmt == "table" and text and not text.endswith("\n") else text,
             output)
    if not ctx.obj["quiet"]:
        for n in result.notes:
            click.echo(printable(f"eaglelog: warning: {n}"), err=True)


@main.command("reconcile")
@input_options
@selection_options
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@output_options
@click.pass_context
def reconcile_cmd(ctx, logs, engine, keep_going, base_date, confidence, fmt, output):
    """Why the profiler's accept length differs from SGLang's `accept len`.

    Aligns EAGLE3_PROF blocks with the decode lines of the same period, reports both accept
    lengths with intervals and their ratio, tests each explanation the log can speak to (bonus
    token, batch size, num_continuous_decode_steps, prefill dilution, sync mode, per-request
    bias) and says which value belongs in the break-even formula.

    \b
    Examples:
      eaglelog reconcile server.log
      eaglelog reconcile -f json server.log
    """
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.reconcile", "eaglelog.report.blocks"))
    from . import library
    from .report.blocks import reconcile_block

    result = library.reconcile(log, confidence=confidence, skip_warmup=warmup_of(ctx),
                               workers=run_workers())
    result = show_run_errors(log, result)
    results_output(result, fmt, output, reconcile_block)
    finish(ctx, log)


def _p_is(p, name: str = "p") -> str:
    from .report.blocks import p_is
    return p_is(p, name)


def compare_of(ctx, logs, engine, keep_going, base_date, baseline, confidence, **kw):
    """library.compare of logs and eaglelog exports in the order given (the logs read once,
    their diagnostics on stderr): (the result, the ParsedLog of the logs or None)."""
    from . import library
    from .errors import UsageProblem

    got = {}

    def read(paths):
        got["log"] = read_logs(ctx, paths, engine, keep_going, base_date, skipped_note=False)
        return got["log"]
    try:
        result = library.compare(list(logs), baseline=baseline, confidence=confidence,
                                 skip_warmup=warmup_of(ctx), engine=engine, reader=read, **kw)
    except UsageProblem as e:
        raise click.UsageError(str(e)) from None
    return result, got.get("log")


# ---- requests and compare --paired (issue 18: eaglelog/analysis/requests.py) ----------------
# the choices of analysis.requests.GROUPINGS and MATCHES (tests/test_requests.py keeps them in
# step; importing the module here would import pandas before any command runs)
REQUEST_GROUPINGS = ("category", "finish", "prompt-len", "output-len", "label")
PAIR_BY = ("auto", "question", "prompt", "rid")


@main.command("requests")
@input_options
@span_options
@baseline_option
@click.option("--by", type=click.Choice(REQUEST_GROUPINGS), default=None,
              help="Also per group: the question's category (benchmark files; SGLang: the "
                   "custom label 'category'), the finish reason, the prompt or output length "
                   "(powers of two), or the custom labels.")
@click.option("--breakeven", type=click.FloatRange(0, min_open=True), default=None,
              metavar="ACCEPT_LEN", help="Break-even accept length: show the share of requests "
                                         "below it (a baseline instead computes it as "
                                         "`eaglelog breakeven` does).")
@click.option("--outliers", type=click.IntRange(0, 1000), default=5, show_default=True,
              help="How many of the lowest and of the highest requests to list.")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@output_options
@click.pass_context
def requests_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log, by,
                 breakeven, outliers, confidence, fmt, output):
    """Which requests benefit? The accept length of every finished request.

    Per request τ_r = (completion − 1) / verify steps (SGLang Finish lines, --log-requests:
    the first token comes from the prefill and needs no verify step), Σ accept_lengths /
    steps (Spec-Bench answers), Σ new_tokens / Σ (idx + 1) (EAGLE answers), 1 + accepted /
    spec steps (saved vLLM responses). Prints the pooled value Σ (completion − 1) / Σ verify
    (what SGLang's accept len pools) with its interval (requests as independent units), the
    quantiles, a histogram, the share below the break-even, the same per group, and outliers
    with their line numbers (lowest, highest, repetition-loop suspects). docs/requests.md.
    -f csv/jsonl/parquet: one row per request.

    \b
    Examples:
      eaglelog requests server.log
      eaglelog requests --by category --breakeven 2.4 answers.jsonl
      eaglelog requests --by finish --baseline-toks 90 server.log
      eaglelog requests -f csv -o requests.csv server.log
    """
    if breakeven is not None and (baseline_toks or baseline_log):
        raise click.UsageError("give --breakeven or a baseline, not both")
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=False)
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.requests", "eaglelog.report.requests"))
    from . import library
    from .report.requests import group_rows, requests_block

    result = library.requests(log, by=by, breakeven=breakeven, baseline=baseline,
                              confidence=confidence, outliers=outliers)
    render_result(result, fmt, output, requests_block, lambda res: [
        [{"run": r.run, **row} for r in res.runs for row in group_rows(r, by)]])
    finish(ctx, log)


@main.command("acceptance")
@input_options
@span_options
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@click.option("--plot", "plot_to", type=click.Path(dir_okay=False, writable=True), default=None,
              metavar="FILE", help="Also draw the curves: FILE.png, FILE.svg or FILE.pdf "
                                   "(needs matplotlib: pip install 'eaglelog[plot]').")
@output_options
@click.pass_context
def acceptance_cmd(ctx, logs, engine, keep_going, base_date, confidence, plot_to, fmt, output):
    """Acceptance by position: P(accept ≥ i) and P(accept ≥ i | accept ≥ i−1) with intervals.

    From SGLang Finish lines (spec_accept_histogram, --log-requests), vLLM 'Per-position
    acceptance rate' lines and /metrics counters, llama.cpp 'acceptance rate per position',
    vllm bench serve and the vLLM offline example. Requests are the independent units of
    per-request sources, windows (batch means sized from their autocorrelation) of vLLM's,
    and a whole-run total has no interval. Checks τ = 1 + Σ P(accept ≥ i) against the
    logged accept length; a mismatch is a note. docs/acceptance.md. -f csv/jsonl/parquet:
    one row per source and position.

    \b
    Examples:
      eaglelog acceptance server.log
      eaglelog acceptance --plot positions.png vllm.log
      eaglelog acceptance -f csv -o positions.csv server.log
    """
    if plot_to:
        from .report import plot as _plot
        picture_output(plot_to, PLOT_SUFFIXES, "plots")
        _plot._mpl()      # a missing matplotlib is said before any log is read
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.acceptance", "eaglelog.report.acceptance"))
    from . import library
    from .report.acceptance import acceptance_block, acceptance_figure, markdown_rows

    result = library.acceptance(log, confidence=confidence)
    render_result(result, fmt, output, acceptance_block, lambda r: [markdown_rows(r)])
    if plot_to:
        save_picture(acceptance_figure(result), plot_to)
    finish(ctx, log)


@main.command("whatif")
@input_options
@selection_options
@baseline_option
@click.option("--steps", "steps", default="1..8", show_default=True, metavar="LIST",
              help="The draft-step counts to predict: a range 1..8 or a list 1,2,3,7.")
@click.option("--draft-tokens", "draft_tokens", default=None, metavar="LIST",
              help="A tree's num_draft_tokens to predict (topk > 1 runs): 8,16,32 or 8..12; "
                   "default: the run's own.")
@click.option("--by", "by", type=click.Choice(["batch"]), default=None,
              help="Also predict per #running-req bucket of the anchor run (the verify grows "
                   "with batch × tokens verified).")
@click.option("--verify-slope", "verify_slope", type=click.FloatRange(0, 100), default=None,
              metavar="PCT",
              help="With one num_steps measured: the verify grows by PCT % of itself per extra "
                   "verified token of the batch, taken as known (default: the 0.8 % ± 0.8 % "
                   "prior, or the baseline's step growth).")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Level of every prediction interval.")
@output_options
@click.pass_context
def whatif_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log, steps,
               draft_tokens, by, verify_slope, confidence, fmt, output):
    """What if the server ran another number of draft steps? Predictions from measured runs.

    For each candidate num_steps S: the accept length from the runs'
    per-position acceptance (SGLang Finish lines' spec_accept_histogram, vLLM's per-position
    acceptance rates: measured for S up to the deepest run, extrapolated beyond, marked), the
    cycle from a cost model (EAGLE3_PROF phases: draft ∝ steps, verify against K = S + 1,
    fitted across runs with different K, else a memory-bound prior; without phases, fitted on
    the runs' derived cycles, which needs two or more num_steps), the per-stream rate and,
    with a baseline, the speedup — each with a prediction interval for what such a run would
    measure. --by batch predicts each #running-req bucket too. With several runs, each is
    also predicted from the others (leave-one-run-out) against what it measured. A tree run
    (topk > 1) is predicted for trees of its topk with --draft-tokens N verified tokens, as an
    approximation that says which way it errs. docs/whatif.md.

    \b
    Examples:
      eaglelog whatif --baseline-toks 90 steps5.log
      eaglelog whatif --steps 1,2,3,7 --baseline-toks 90 steps5.log
      eaglelog whatif --baseline-toks 90 steps-*.log          # a sweep: with its leave-one-out
      eaglelog whatif -f json steps5.log
      eaglelog whatif --steps 3..6 --draft-tokens 8,16 tree.log   # topk > 1: approximate
      eaglelog whatif --by batch --baseline-log base.log steps-*.log   # per batch size
      eaglelog whatif vllm-k1.log vllm-k3.log vllm-k5.log   # vLLM, no profiler: a sweep
    """
    from .errors import UsageProblem
    from .analysis.whatif import parse_steps, parse_tokens
    try:
        wanted = parse_steps(steps)
    except UsageProblem as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1], param_hint="--steps") from None
    try:
        tokens = parse_tokens(draft_tokens)
    except UsageProblem as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1],
                                 param_hint="--draft-tokens") from None
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=False)
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.whatif", "eaglelog.report.whatif"))
    from . import library
    from .report.whatif import batch_check_rows, batch_rows, check_rows, prediction_rows, \
        whatif_block

    result = library.whatif(log, steps=wanted, baseline=baseline, confidence=confidence,
                            skip_warmup=warmup_of(ctx), draft_tokens=tokens,
                            by_batch=by == "batch",
                            verify_slope=None if verify_slope is None else verify_slope / 100)
    render_result(result, fmt, output, whatif_block,
                  lambda r: [prediction_rows(r), check_rows(r), batch_rows(r),
                             batch_check_rows(r)])
    finish(ctx, log)


@main.command("schedule")
@input_options
@selection_options
@baseline_option
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval and of the ties.")
@click.option("--plot", "plot_to", type=click.Path(dir_okay=False, writable=True), default=None,
              metavar="FILE", help="Also draw rate against batch size per num_steps with the "
                                   "schedule: FILE.png, FILE.svg or FILE.pdf (needs matplotlib).")
@click.option("-f", "--format", "fmt",
              type=click.Choice(["table", "markdown", "csv", "json", "jsonl", "parquet", "vllm",
                                 "sglang"]),
              default="table", show_default=True,
              help="Output format; vllm: the --speculative-config JSON, sglang: the "
                   "--speculative-adaptive-config file; parquet needs -o.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write to this file instead of stdout.")
@click.pass_context
def schedule_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log,
                 confidence, plot_to, fmt, output):
    """Which num_steps at which batch size? A per-batch-size schedule the engines can load.

    From runs of the same server at different num_steps, each over the batch sizes it met,
    against a baseline per batch size (--baseline-log, or --baseline-toks 1:90,8:70,32:40): per
    #running-req bucket the num_steps with the highest per-stream rate, the ones tied with it,
    and 0 where speculation does not pay; the batch size where it stops paying, with its
    interval. -f vllm writes the --speculative-config with num_speculative_tokens_per_batch_size
    (vLLM dynamic speculative decoding), -f sglang the --speculative-adaptive-config file
    (SGLang v0.5.13+ per-batch-size slots); both are checked against the engines' own
    validation rules. docs/schedule.md.

    \b
    Examples:
      eaglelog schedule --baseline-log base.log steps1.log steps3.log steps5.log
      eaglelog schedule --baseline-toks 1:90,8:70,32:40 -f vllm -o spec.json steps*.log
      eaglelog schedule --baseline-log base.log -f sglang -o adaptive.json steps*.log
      eaglelog schedule --baseline-log base.log --plot schedule.png steps*.log
    """
    if fmt == "parquet" and not output:
        raise click.UsageError("-f parquet needs -o FILE")
    if plot_to:
        from .report import plot as _plot
        picture_output(plot_to, PLOT_SUFFIXES, "plots")
        _plot._mpl()
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=True)
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.schedule", "eaglelog.report.schedule"))
    from . import library
    from .report.schedule import engine_config, schedule_block, schedule_figure, slot_rows

    result = library.schedule(log, baseline, confidence=confidence, skip_warmup=warmup_of(ctx))
    if fmt in ("vllm", "sglang"):
        emit(engine_config(result, fmt), output)
    else:
        render_result(result, fmt, output, schedule_block, lambda r: [slot_rows(r)])
    if fmt in ("vllm", "sglang") and not ctx.obj["quiet"]:
        for n in result.notes:
            click.echo(printable(f"eaglelog: note: {n}"), err=True)
    if plot_to:
        save_picture(schedule_figure(result), plot_to)
    finish(ctx, log)


def paired_options(f):
    """compare --paired: the same prompts in two runs (analysis.requests.compare_paired)."""
    @click.option("--paired", is_flag=True,
                  help="Compare the accept length of the same prompts in REF and NEW (two logs "
                       "or benchmark files): the per-prompt ratio with a paired t-test on the "
                       "log ratios, wins and losses per group, the prompts that got worse, the "
                       "unmatched share (docs/requests.md).")
    @click.option("--pair-by", type=click.Choice(PAIR_BY), default="auto", show_default=True,
                  help="--paired: match requests by benchmark question id, prompt hash (SGLang "
                       "--log-requests-level 2 or 3) or rid (the same rid in both runs, or "
                       "--rid-map); auto: the first of these the runs share.")
    @click.option("--rid-map", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                  help="--paired: the rid of each prompt in both runs, 'ref,new' one pair a "
                       "line (or a JSON object ref → new).")
    @click.option("--by", "paired_by", type=click.Choice(REQUEST_GROUPINGS + ("batch",)),
                  default=None,
                  help="batch: the two runs per #running-req bucket (the K each ran, the "
                       "per-stream rates and their ratio); with --paired: wins and losses per "
                       "group (default: category when the inputs have one).")
    @adaptive_config_option
    @functools.wraps(f)
    def wrapper(*args, paired=False, pair_by="auto", rid_map=None, paired_by=None,
                adaptive_config=None, **kwargs):
        if paired_by == "batch" and not paired:
            return batch_compare(click.get_current_context(), adaptive_config, **kwargs)
        if adaptive_config is not None:
            raise click.UsageError("--adaptive-config goes with --by batch")
        if not paired:
            if pair_by != "auto" or rid_map or paired_by:
                raise click.UsageError("--pair-by, --rid-map and --by go with --paired "
                                       "(--by batch without it)")
            return f(*args, **kwargs)
        if paired_by == "batch":
            raise click.UsageError("--paired compares prompts: --by batch goes without it")
        return paired_compare(click.get_current_context(), pair_by, rid_map, paired_by,
                              **kwargs)
    return wrapper


def batch_compare(ctx, adaptive_config, logs, engine, keep_going, base_date, baseline_toks,
                  baseline_log, confidence, fail_on, fmt, output, **_):
    """compare --by batch: two runs bucket by bucket (analysis/batch_compare.py)."""
    if len(logs) != 2:
        raise click.UsageError("--by batch compares two runs: REF NEW")
    if baseline_toks or baseline_log:
        raise click.UsageError("--by batch compares the runs' per-stream rates at each batch "
                               "size: the baseline step is the same for both, so it takes none")
    if fail_on is not None:
        raise click.UsageError("--fail-on-regression gates on the whole-run verdict: run "
                               "compare without --by batch")
    ref, new = (read_logs(ctx, [spec], engine, keep_going, base_date, skipped_note=False)
                for spec in logs)
    from . import library
    from .report.blocks import batch_compare_block

    r = library.compare_by_batch(ref, new, confidence=confidence,
                                 adaptive_config=adaptive_config)
    if fmt in ("table", "markdown"):
        emit(batch_compare_block(r, "github" if fmt == "markdown" else "simple"), output)
    elif fmt == "json":
        emit(render_object(r.to_dict(), "json"), output)
    elif fmt == "jsonl":
        emit("".join(render_object(b.to_dict(), "jsonl") for b in r.buckets), output)
    else:
        emit(render_frame(r.to_frame(), fmt, output), output)
    finish(ctx, ref)
    finish(ctx, new)


def paired_compare(ctx, pair_by, rid_map, by, logs, engine, keep_going, base_date,
                   baseline_toks, baseline_log, confidence, fail_on, fmt, output, **_):
    if len(logs) != 2:
        raise click.UsageError("--paired compares two runs: REF NEW")
    if baseline_toks or baseline_log:
        raise click.UsageError("--paired compares accept lengths prompt by prompt: it takes no "
                               "baseline")
    if any(v is not None for v in (ctx.obj.get("select") or {}).values()):
        raise click.UsageError("--since, --until and --startup do not apply to --paired")
    if fail_on not in (None, "primary"):
        raise click.UsageError("with --paired, --fail-on-regression takes no METRIC: it gates "
                               "on the paired verdict")
    ref, new = (read_logs(ctx, [spec], engine, keep_going, base_date, skipped_note=False,
                          select=False) for spec in logs)
    from . import library
    from .report.requests import paired_block, paired_group_rows

    r = library.compare_paired(ref, new, match=pair_by, rid_map=rid_map, by=by, confidence=confidence)
    render_result(r, fmt, output, paired_block, lambda res: [paired_group_rows(res)])
    if fail_on and r.verdict == "worse":
        if not ctx.obj["quiet"]:
            click.echo(f"eaglelog: regression: accept length per prompt {r.ratio.estimate:.4g}× "
                       f"the reference (paired t-test, {_p_is(r.p_value)})", err=True)
        ctx.exit(3)
    finish(ctx, ref)
    finish(ctx, new)


@main.command("compare")
@input_options
@paired_options
@selection_options
@metrics_options
@baseline_option
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval; a difference is significant when p < "
                   "1 − confidence.")
@click.option("--test", "test", type=click.Choice(["welch", "mannwhitney"]), default="welch",
              show_default=True, help="Welch's t-test on the log scale, or Mann-Whitney U on "
                                      "batch means.")
@click.option("--min-effect", type=click.FloatRange(0, 100), default=0.0, show_default=True,
              metavar="PCT", help="Smallest difference that matters in practice, in percent.")
@click.option("--fail-on-regression", "fail_on", is_flag=False, flag_value="primary",
              default=None, metavar="[METRIC]",
              help="Exit with code 3 when a changed run is significantly worse: on the primary "
                   "metric (the speedup with a baseline, else the per-stream rate) when no "
                   "value is given (the option last), on METRIC, or on any metric with 'any' "
                   "(secondary metrics by their Holm-adjusted p).")
@output_options
@click.pass_context
def compare_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log,
                confidence, test, min_effect, fail_on, fmt, output):
    """Did the change help? Compare runs with the first one as the reference.

    One primary metric carries the verdict (better / worse / no detectable difference): the
    speedup with a baseline, otherwise the per-stream rate (1000 × accept length / cycle).
    The secondary metrics (accept length, cycle time, the profiler's accept length and phases)
    are one family: their p-values are Holm-adjusted, shown next to the raw ones. Each ratio
    comes with its interval; the test is Welch's t on the log ratio of the runs' estimates
    (the same estimates breakeven prints). Then the server_args keys that differ, and
    warnings when the runs are not comparable. A LOG may also be an eaglelog export (`eaglelog
    export LOG -o run.json`), so last week's run can be the reference.

    \b
    Examples:
      eaglelog compare before.log after.log
      eaglelog compare --min-effect 2 --fail-on-regression cycle_ms before.log nccl.log
      eaglelog compare before.log after.log --fail-on-regression
      eaglelog compare --test mannwhitney -f json last-week.json today.log
      eaglelog compare --by batch --adaptive-config sched.json fixed3.log adaptive.log
    """
    from .report.blocks import compare_block

    if fail_on and fail_on != "any" and os.path.exists(fail_on):
        raise click.BadParameter(f"took the log {fail_on!r} as its METRIC: name a metric "
                                 "(or 'any'), or put the option after the logs",
                                 param_hint="--fail-on-regression")
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=False)
    result, log = compare_of(ctx, logs, engine, keep_going, base_date, baseline, confidence,
                             test=test, min_effect=min_effect / 100)
    if fmt == "json":
        emit(render_object(result.to_dict(), "json"), output)
    elif fmt == "jsonl":
        emit("".join(render_object(m.to_dict(), "jsonl") for m in result.metrics), output)
    elif fmt in ("table", "markdown"):
        emit(compare_block(result, "github" if fmt == "markdown" else "simple"), output)
    else:
        emit(render_frame(result.to_frame(), fmt, output), output)
    shown = fmt in ("table", "markdown") and output is None      # the block printed them
    for w in result.warnings:
        if not ctx.obj["quiet"] and not shown:
            click.echo(printable(f"eaglelog: warning: {w}"), err=True)
    if fail_on:
        known = {m.metric for m in result.metrics}
        target = result.primary if fail_on == "primary" else fail_on
        if fail_on == "primary" and target is None:
            raise click.BadParameter("the runs have no primary metric in common (speedup or "
                                     "per-stream rate): name a METRIC or 'any'",
                                     param_hint="--fail-on-regression")
        if target != "any" and target not in known:
            raise click.BadParameter(f"{fail_on!r} is not a compared metric; these are: "
                                     f"{', '.join(sorted(known))}",
                                     param_hint="--fail-on-regression")
        worse = [m for m in result.metrics if m.worse and target in ("any", m.metric)]
        if worse:
            if not ctx.obj["quiet"]:
                click.echo("eaglelog: regression: " + "; ".join(
                    f"{m.run}: {m.metric} {m.reference_mean:.4g} → {m.mean:.4g} {m.unit} "
                    f"({m.verdict}; {_p_is(m.p_value)}" +
                    (f", {_p_is(m.p_adjusted, 'Holm-adjusted p')}" if m.p_adjusted is not None
                     else "") + ")" for m in worse), err=True)
            ctx.exit(3)
    if log is not None:
        finish(ctx, log)


@main.command("sweep")
@input_options
@selection_options
@metrics_options
@baseline_option
@click.option("--key", "keys", multiple=True, metavar="NAME",
              help="server_args key to show as a column (repeatable); default: every key whose "
                   "value differs between the runs.")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@output_options
@click.pass_context
def sweep_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log, keys,
              confidence, fmt, output):
    """Which config of a sweep wins? One row per run, sorted by effective tok/s.

    Columns: the config keys that vary, cycle ms, verify ms, accept length and effective tok/s
    (1000 × accept len / cycle) with intervals; with a baseline, break-even accept length,
    speedup and whether the config beats the baseline. The best row is marked; rows that a
    one-sided test cannot tell apart from it (Holm-adjusted across the rows: Hsu's comparisons
    with the best) are marked 'tied'.

    \b
    Examples:
      eaglelog sweep steps-*.log
      eaglelog sweep --key speculative_num_steps --baseline-toks 90 steps-*.log
      eaglelog sweep -f csv -o sweep.csv run-*.log
    """
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=False)
    from . import library
    # eaglelog exports are rows of their own (last week's point beside today's logs)
    found = [library._export_at(s, confidence) for s in logs]
    rest = [s for s, e in zip(logs, found) if e is None]
    log = read_logs(ctx, rest, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.sweep", "eaglelog.report.blocks")) \
        if rest else None
    from .report.blocks import sweep_block

    result = library.sweep(log, keys=list(keys), baseline=baseline, confidence=confidence,
                           keep_going=keep_going, skip_warmup=warmup_of(ctx),
                           exports=[e for e in found if e is not None])
    if fmt == "json":
        emit(render_object(result.to_dict(), "json"), output)
    elif fmt == "jsonl":
        emit("".join(render_object(r.to_dict(), "jsonl") for r in result.rows), output)
    elif fmt in ("table", "markdown"):
        emit(sweep_block(result, "github" if fmt == "markdown" else "simple"), output)
    else:
        emit(render_frame(result.to_frame(), fmt, output), output)
    if log is not None:
        finish(ctx, log)


def rules_options(f):
    """export --prometheus-rules (issue 19, eaglelog/rules.py): the rules need no log."""
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
        from .rules import grafana_dashboard, rules_yaml
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


@main.command("latency", context_settings={"ignore_unknown_options": True})
@click.argument("files", nargs=-1, required=True, metavar="SPEC... --baseline BASE...")
@click.option("--slo", default=None, metavar="KEY=VALUE,...",
              help="Service-level objective for goodput, e.g. ttft=2s,tpot=50ms (keys ttft, "
                   "tpot, e2el; s or ms, a bare number is ms as vLLM's --goodput).")
@click.option("--attainment", type=click.FloatRange(0, 1, min_open=True), default=0.9,
              show_default=True, help="Share of requests that must meet the SLO for a load "
                                      "point to meet it.")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@click.option("--resamples", type=click.IntRange(100, 100_000), default=2000, show_default=True,
              help="Bootstrap resamples B (ITL percentiles and the per-stream tok/s ratio).")
@click.option("-q", "--quiet", "cmd_quiet", is_flag=True,
              help="No warnings or notes on stderr (errors only).")
@click.option("-v", "--verbose", "cmd_verbose", is_flag=True,
              help="Show tracebacks and every warning.")
@output_options
@click.pass_context
def latency_cmd(ctx, files, slo, attainment, confidence, resamples, cmd_quiet, cmd_verbose, fmt,
                output):
    """Latency and goodput under load: speculation against its baseline, per load point.

    SPEC... and the BASE... files after --baseline are `vllm bench serve --save-result
    --save-detailed` JSON files (one run per file or per line), a speculative and a baseline
    run at each request rate (or --max-concurrency). Per load point: p50/p90/p99 TTFT, TPOT
    and ITL with intervals (one sample is a request), per-stream tok/s (1000 / p50 TPOT) and
    aggregate tok/s, goodput under --slo, the verdict in words, and the crossover load where
    speculation stops paying. docs/latency.md. -f csv/jsonl/parquet: one row per load point
    and arm.

    \b
    Examples:
      eaglelog latency spec-*qps.json --baseline base-*qps.json
      eaglelog latency sample_logs/latency/spec-*.json \\
          --baseline sample_logs/latency/base-*.json --slo ttft=2s,tpot=50ms
      eaglelog latency spec.json --baseline base.json -f json -o latency.json
    """
    ctx.obj["quiet"] = ctx.obj.get("quiet") or cmd_quiet
    ctx.obj["verbose"] = ctx.obj.get("verbose") or cmd_verbose
    spec, baseline, side = [], [], None
    for f in files:
        if f == "--baseline" or f.startswith("--baseline="):
            side = baseline
            if f.startswith("--baseline="):
                baseline.append(f.split("=", 1)[1])
        elif f.startswith("-") and f != "-":
            raise click.UsageError(f"no such option: {f}")
        else:
            (spec if side is None else baseline).append(f)
    if not spec:
        raise click.UsageError("no speculative run: give SPEC files before --baseline")
    if not baseline:
        raise click.UsageError("no baseline run: give --baseline BASE... after the SPEC files")
    ctx.obj["inputs"] = tuple(spec) + tuple(baseline)     # for an out-of-memory message
    from . import library
    from .report.latency import latency_block, markdown_rows

    result = library.latency(list(spec), list(baseline), slo=slo, attainment=attainment,
                             confidence=confidence, resamples=resamples)
    render_result(result, fmt, output, latency_block, markdown_rows)
    if not ctx.obj.get("quiet"):
        for note in result.notes:
            click.echo(printable(f"eaglelog: note: {note}"), err=True)
    if output and output != "-":
        said_wrote(output)


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

    from .analysis.compare import runs_from_log

    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False)
    runs = runs_from_log(log, engine, None, 0.95)
    if len(runs) != 1:
        raise EaglelogError(f"export writes one run; these inputs hold {len(runs)} (server "
                            "start-ups count as runs): give one log with one start-up")
    from .report import finite
    emit(_json.dumps(finite(runs[0].to_export()), default=str, allow_nan=False) + "\n", output)
    if output and output != "-":
        said_wrote(output)
    finish(ctx, log)


# the kinds of eaglelog.report.plot.KINDS (a test keeps them in step; importing the module here
# would import pandas before any command runs)
PLOT_KINDS = ("timeline", "phases", "breakeven", "sweep", "compare", "requests")
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def picture_output(output: str, suffixes: tuple[str, ...], what: str) -> str:
    """The format a file name's suffix asks for, or a usage error."""
    ext = os.path.splitext(output)[1].lower()
    if ext not in suffixes:
        raise click.BadParameter(f"{output!r}: {what} are written as "
                                 f"{', '.join(suffixes)} (the suffix chooses the format)",
                                 param_hint="-o/--output")
    return ext.lstrip(".")


@main.command("plot")
@input_options
@selection_options
@baseline_option
@click.option("--kind", type=click.Choice(PLOT_KINDS), default="timeline", show_default=True,
              help="timeline: accept length, throughput, running requests and profile cycle "
                   "time over time; phases: cycle breakdown per run; breakeven: accept length "
                   "against the break-even band (per batch size with --baseline-log); sweep: "
                   "effective tok/s against the varying config key; compare: ratio of each "
                   "metric to the first run; requests: the accept length of every request per "
                   "group and against its output length.")
@click.option("--key", "keys", multiple=True, metavar="NAME",
              help="--kind sweep: server_args key on the x axis (repeatable; default: the keys "
                   "that differ between the runs).")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), required=True,
              help="The picture to write: FILE.png, FILE.svg or FILE.pdf (the suffix chooses "
                   "the format).")
@click.pass_context
def plot_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log, kind, keys,
             confidence, output):
    """Draw a picture of the analysis: a timeline, the phases, the break-even, a sweep, a compare.

    Needs matplotlib (pip install 'eaglelog[plot]'). The numbers are those the text commands
    print; the same logs give the same file.

    \b
    Examples:
      eaglelog plot -o timeline.png server.log
      eaglelog plot --kind phases -o phases.svg before.log after.log
      eaglelog plot --kind breakeven --baseline-log base.log -o breakeven.png spec.log
      eaglelog plot --kind sweep --baseline-toks 90 -o sweep.pdf steps-*.log
      eaglelog plot --kind compare -o compare.png before.log after.log
      eaglelog plot --kind requests --baseline-toks 90 -o requests.png server.log
    """
    from .report import plot

    fmt = picture_output(output, PLOT_SUFFIXES, "plots")
    if (baseline_toks or baseline_log) and kind not in ("breakeven", "sweep", "compare",
                                                        "requests"):
        raise click.UsageError(f"--kind {kind} takes no baseline (breakeven, sweep, compare "
                               "and requests do)")
    if keys and kind != "sweep":
        raise click.UsageError("--key is for --kind sweep")
    plot._mpl()      # a missing matplotlib is said before any log is read
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date,
                             required=kind == "breakeven")
    log = None
    if kind == "compare":
        result, log = compare_of(ctx, logs, engine, keep_going, base_date, baseline,
                                 confidence)
        fig = plot.compare_figure(result)
    else:
        log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False)
        if kind == "timeline":
            fig = plot.timeline_figure(log)
        elif kind == "phases":
            from . import library
            fig = plot.phases_figure(list(library.summarize(log, confidence=confidence).runs))
        elif kind == "breakeven":
            from . import library
            fig = plot.breakeven_figure(list(library.breakeven(
                log, baseline=baseline, confidence=confidence,
                by_batch=baseline.log is not None).runs))
        elif kind == "requests":       # issue 18: grouped by category, labels or finish
            from . import library
            from .analysis.requests import auto_by
            fig = plot.requests_figure(library.requests(log, by=auto_by(log),
                                                        baseline=baseline,
                                                        confidence=confidence))
        else:
            from . import library
            fig = plot.sweep_figure(library.sweep(log, keys=list(keys), baseline=baseline,
                                                  confidence=confidence,
                                                  keep_going=keep_going))
    save_picture(fig, output, fmt)
    if log is not None:
        finish(ctx, log)


@main.command("report")
@input_options
@selection_options
@baseline_option
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@click.option("--title", default=None, help="Title of the page (default: the logs' names).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), required=True,
              help="The HTML file to write (FILE.html).")
@click.pass_context
def report_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log,
               confidence, title, output):
    """One self-contained HTML page, answer first: conclusion, tables, then the pictures.

    The page opens with the answer in one paragraph (verdict, best config, bottleneck), then
    the tables (sweep, break-even, cycle breakdown, reconcile, compare, each run's detail,
    inputs), then the plots; numbers as the text commands print them. Inline CSS and SVG only
    (no scripts, nothing fetched from the network): it reads offline and prints. With several
    runs it compares them (the first is the reference), ranks them as a sweep and folds each
    run's detail away. The plots need matplotlib (pip install 'eaglelog[plot]'); without it
    the page holds the tables only, and says so.

    \b
    Examples:
      eaglelog report -o report.html server.log
      eaglelog report --baseline-toks 90 -o report.html server.log
      eaglelog report --baseline-log base.log -o batch.html spec.log
      eaglelog report --baseline-toks 90 -o sweep.html steps-*.log
    """
    from .report.html import PLOT_EXTRA, plot_available, report_html

    picture_output(output, (".html", ".htm"), "reports")
    pictures = plot_available()
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=False)
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.report.html", "eaglelog.analysis.reconcile",
                             "eaglelog.analysis.sweep"))
    emit(report_html(log, baseline=baseline, confidence=confidence, title=title,
                     warmup=warmup_of(ctx), pictures=pictures), output)
    if not pictures and not ctx.obj["quiet"]:
        click.echo(f"eaglelog: note: {output} has the tables but no pictures: they need "
                   f"matplotlib ({PLOT_EXTRA})", err=True)
    said_wrote(output)
    finish(ctx, log)


# ---- watch and fleet (issue 19: eaglelog/watch.py, fleet.py) --------------------------------
def _seconds(text, what):
    from .metrics import parse_duration
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
    from .metrics import limits, parse_size
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
              help="A condition METRIC OP VALUE, e.g. 'speedup<1', 'accept_len<1.5' (metrics: "
                   "accept_len, accept_rate, speedup, rate, throughput); repeatable. When one "
                   "holds over --for, a line 'ALERT …' is printed and watch exits 3.")
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
    baseline, the speedup with its interval, over the last --window; refreshed every
    --interval. With --alert the views go to stderr and stdout carries only the ALERT lines:
    for cron and CI (exit 3 when a condition held; exit 1 when no source answered).

    \b
    Examples:
      eaglelog watch --baseline-toks 90 http://gpu7:30000/metrics
      eaglelog watch --match 'job="sglang"' --baseline-toks 90 prom+http://prometheus:9090
      eaglelog watch --alert 'speedup<1' --alert 'accept_len<1.5' --for 5m --count 1 \\
          --baseline-toks 90 prom+http://prometheus:9090
    """
    with _limits(req_timeout, max_body, follow_redirects):
        _watch(ctx, sources, baseline_toks, baseline_log, interval, window, alerts, alert_for,
               keep_watching, count, match, confidence, fmt)


def _watch(ctx, sources, baseline_toks, baseline_log, interval, window, alerts, alert_for,
           keep_watching, count, match, confidence, fmt):
    import time as _time

    from .watch import Watcher, check_alert_metrics, parse_alerts

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
            now = {(f.source, f.alert) for f in view.firings}
            for f in view.firings:
                if (f.source, f.alert) not in active:
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
    against the fleet named.

    Every instance (and model) a Prometheus server scrapes with SGLang's or vLLM's families is
    a run, analysed as `eaglelog breakeven` analyses a log. An instance that cannot be read is
    one error row; the others are still ranked.

    \b
    Examples:
      eaglelog fleet --baseline-toks 90 prom+http://prometheus:9090
      eaglelog fleet --match 'job="sglang"' --since 6h --baseline-toks 90 -f csv \\
          prom+http://prometheus:9090
    """
    from .fleet import fleet
    from .metrics import is_metrics_source, with_params

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
    from .api import parse
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
    from . import cache
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
    from . import cache
    got = cache.clear()
    click.echo(json.dumps(got, indent=2, ensure_ascii=False) if fmt == "json"
               else cache.clear_text(got).rstrip("\n"))


_NO_ARGS = getattr(click.exceptions, "NoArgsIsHelpError", ())   # click >= 8.2


def run() -> None:
    """Console entry point: a closed pipe (eaglelog … | head) ends quietly.

    Three things for speed, all about the process rather than the library: numpy's BLAS gets
    one thread (eaglelog does no linear algebra worth a thread pool, and idle BLAS threads spin
    on the cores the scan uses); large blocks are reused from the heap (_memory.tune); and the
    process ends without tearing down the interpreter (after a gigabyte log that teardown frees
    hundreds of MB object by object: 0.1–0.2 s).  Exit handlers still run and the output is
    flushed first."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from ._memory import tune
    tune()
    try:
        rv = main(prog_name="eaglelog", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0     # click returns an Exit's code
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        code = 0
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        code = 1
    except _NO_ARGS as e:              # `eaglelog` alone: the help, as click shows it
        e.show()
        code = e.exit_code
    except click.UsageError as e:      # one line, like every other error
        where = e.ctx.command_path if e.ctx is not None else "eaglelog"
        click.echo(printable(f"eaglelog: error: {e.format_message()} (see '{where} --help')"),
                   err=True)
        code = e.exit_code
    except click.ClickException as e:
        e.show()
        code = e.exit_code
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    _exit_now(code)


def _exit_now(code: int) -> None:
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):     # a closed pipe: nothing more to say
            pass
    os._exit(code)
