"""The command line's shell: the `eaglelog` group, its error handling (every EaglelogError one
line on stderr, ``-v`` the traceback), the options every command shares, reading the inputs,
rendering and writing results, and the console entry ``run``.  The commands live in the
modules beside it, one per family (cli/__init__.py imports them)."""
from __future__ import annotations

import functools
import os
import sys
from collections import OrderedDict
from typing import TYPE_CHECKING

import click

from .. import __version__
from ..errors import EaglelogError, printable
from ..schema import FORMATS

if TYPE_CHECKING:
    from ..api import ParsedLog


# the engines of eaglelog.parsers.ENGINES (a test keeps them in step; importing the parsers here
# would import pandas before any command runs)
ENGINE_CHOICES = ("auto", "sglang", "vllm", "llamacpp", "trtllm", "bench")


def render_frame(*args, **kwargs):
    from ..report import render_frame as _render
    return _render(*args, **kwargs)


def render_object(*args, **kwargs):
    from ..report import render_object as _render
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
            if not _out_of_memory(e):
                click.echo(printable(internal_message(e, (ctx.obj or {}).get("inputs"))),
                           err=True)
                ctx.exit(1)
        # only a MemoryError gets here, outside its except clause: its traceback, and the
        # frames holding the memory, are freed before the message is made
        from ..errors import out_of_memory_message
        click.echo(printable("eaglelog: error: " + out_of_memory_message(
            (ctx.obj or {}).get("inputs"))), err=True)
        ctx.exit(1)


def _out_of_memory(e: Exception) -> bool:
    """Out of memory, said as such, though not a MemoryError: a thread the process could not
    start (under an address-space limit, its stack is the allocation that fails), a system
    call that found no memory (ENOMEM: removing the scan's temporary folder, opening a file),
    a module whose shared object the loader could not map (dlopen: "failed to map segment
    from shared object", a module first imported late), or CPython's SystemError of a return
    without an exception once an allocation has failed (a scan thread's first frames, in 3.11:
    _memory.ran_out)."""
    import errno
    if isinstance(e, SystemError) and "without exception set" in str(e):
        from .._memory import ran_out
        return ran_out()
    if isinstance(e, ImportError) and "failed to map segment from shared object" in str(e):
        return True
    return isinstance(e, RuntimeError) and "can't start new thread" in str(e) or \
        isinstance(e, OSError) and e.errno == errno.ENOMEM


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
    from .._memory import keep_reserve
    keep_reserve()          # (under an address-space limit: for the report of running out)


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
        from ..io.remote import RemoteOptions

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
    from .._cores import workers
    return workers()


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
        from ..io.sources import is_metrics_source
        if any(is_metrics_source(s) for s in logs):
            import re
            from ..live.metrics import with_params
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
    and every input file are unchanged (eaglelog/io/cache.py)."""
    import contextlib
    import io

    p = ctx.params
    logs = list(p.get("logs") or ()) + ([p["baseline_log"]] if p.get("baseline_log") else [])
    if ctx.obj.get("no_cache") or p.get("output") or p.get("follow") or \
            ctx.command.name == "export" or not logs or os.environ.get("EAGLELOG_NO_RESULT_CACHE"):
        return body()
    from ..io.cache import load_result, result_key, store_result

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
    from ..io.follow import follow, screen_view

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
              preload: tuple[str, ...] = (), select: bool = True,
              light: bool = False) -> "ParsedLog":
    """Parse the inputs; the analyses ask for the columns they read (schema.ANALYSIS_COLUMNS)
    of the large tables, `parse` for every column.  The modules named in ``preload`` (the
    command's analysis) and pandas are imported by a second thread meanwhile: the C scan of a
    large log runs without the GIL, so the 0.3–0.5 s of imports overlap it.  ``light``: the
    log is read once, by this command (summary, breakeven): without the table cache its
    tables are pandas-free Frames (api.parse), and pandas is not imported at all."""
    out = ctx.params.get("output")
    if out and out != "-" and os.path.exists(out):
        for spec in logs:
            if spec != "-" and os.path.exists(spec) and os.path.samefile(out, spec):
                raise click.UsageError(f"-o {out} is also an input: refusing to overwrite it")
    from ..api import parse

    from ..schema import ANALYSIS_COLUMNS
    from ..io.sources import export_refusal, looks_like_export
    for spec in logs:
        if looks_like_export(spec):
            raise EaglelogError(export_refusal(spec, ctx.command.name))

    cache = not ctx.obj.get("no_cache")
    light = light and not cache
    _preload(tuple(preload) if light else ("pandas",) + tuple(preload))
    log = parse(list(logs), engine=engine, keep_going=keep_going,
                base_date=base_date.date() if base_date else None, remote=ctx.obj.get("remote"),
                cache=cache, columns=None if every_column else ANALYSIS_COLUMNS, light=light)
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

    from ..parsers.scan import fast_available
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
    from ..baseline import Baseline

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

    from ..parsers.scan import Diagnostic

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
        from ..report.blocks import fenced
        emit("\n".join(fenced(block(r)) for r in result.runs), output)
    else:
        emit(render_frame(result.to_frame(), fmt, output), output)


def table_output(result, fmt, output, block, items) -> None:
    """A result whose human block is a table (compare, compare --by batch, sweep): -f json its
    JSON, jsonl one line per item of ``items(result)``, table and markdown the block (simple or
    github tables), csv/parquet its frame."""
    if fmt == "json":
        emit(render_object(result.to_dict(), "json"), output)
    elif fmt == "jsonl":
        emit("".join(render_object(x.to_dict(), "jsonl") for x in items(result)), output)
    elif fmt in ("table", "markdown"):
        emit(block(result, "github" if fmt == "markdown" else "simple"), output)
    else:
        emit(render_frame(result.to_frame(), fmt, output), output)


def save_picture(fig, path: str, fmt: str | None = None) -> None:
    """Write a figure (report.plot.save_figure) and say so; a path that cannot be written is
    one line."""
    from ..report.plot import save_figure
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
        from ..units import fmt_bytes
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


PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def picture_output(output: str, suffixes: tuple[str, ...], what: str) -> str:
    """The format a file name's suffix asks for, or a usage error."""
    ext = os.path.splitext(output)[1].lower()
    if ext not in suffixes:
        raise click.BadParameter(f"{output!r}: {what} are written as "
                                 f"{', '.join(suffixes)} (the suffix chooses the format)",
                                 param_hint="-o/--output")
    return ext.lstrip(".")


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
    from .._memory import tune
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


def split_baseline(args) -> tuple[list[str], list[str], bool]:
    """(inputs, baseline load tests, whether --baseline was given) of the arguments of a command
    that passes unknown options through: every argument after --baseline is a baseline run; any
    other option-like argument is a usage error, as click would say."""
    inputs, base, seen = [], [], False
    for a in args:
        if a == "--baseline" or a.startswith("--baseline="):
            seen = True
            if a.startswith("--baseline="):
                base.append(a.split("=", 1)[1])
        elif a.startswith("-") and a != "-":
            raise click.NoSuchOption(a.split("=", 1)[0])
        else:
            (base if seen else inputs).append(a)
    return inputs, base, seen


def _exit_now(code: int) -> None:
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):     # a closed pipe: nothing more to say
            pass
    os._exit(code)
