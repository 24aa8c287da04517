"""Commands that draw: `plot` (a figure) and `report` (the self-contained HTML page)."""
from __future__ import annotations

import os

import click

from ..errors import printable
from ._base import (PLOT_SUFFIXES, baseline_option, emit, finish, input_options, main,
                    split_baseline,
                    make_baseline, picture_output, read_logs, said_wrote, save_picture,
                    selection_options, warmup_of)
from .analyses import (compare_of)


# the kinds of eaglelog.report.plot.KINDS (a test keeps them in step; importing the module here
# would import pandas before any command runs)
PLOT_KINDS = ("timeline", "phases", "breakeven", "sweep", "compare", "requests", "latency")
LOAD_TESTS = ("load-test results (vllm bench serve --save-result JSON, SGLang bench_serving "
              "JSONL, aiperf profile_export files)")
# plot and report take `--baseline BASE...` after their inputs as `eaglelog latency` does: the
# baseline runs of a load test (click has no option with any number of values, and a shell glob
# after --baseline must not spill into the inputs)
LATENCY_METAVAR = "LOG... | SPEC.json... --baseline BASE.json..."


def looks_like_load_test(path: str) -> bool:
    """Whether an input is a load-test result rather than a log, from its first bytes: an aiperf
    artifact directory or a specdec_bench run directory, or a (gzipped) file whose text starts
    with a JSON object or array.  An input that cannot be opened is not one (its reader says
    why)."""
    if path == "-":
        return False
    if os.path.isdir(path):
        return any(os.path.isfile(os.path.join(path, f))
                   for f in ("profile_export_aiperf.json", "timing.json"))
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    if head[:2] == b"\x1f\x8b":
        import zlib
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 4096)
        except zlib.error:
            return False
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    # (an eaglelog export is JSON too: its reader says where it is read)
    return head[:1] in (b"{", b"[") and b'"eaglelog_export"' not in head


def _latency_of(spec: list[str], base: list[str], slo, confidence: float, what: str):
    """analysis.latency of the load tests, a usage error in one line when they are not."""
    if not spec:
        raise click.UsageError(f"{what} needs the speculative load-test files (SPEC.json... "
                               "--baseline BASE.json...)")
    if not base:
        raise click.UsageError(f"{what} needs the baseline's load-test files after --baseline "
                               "(SPEC.json... --baseline BASE.json...)")
    for f in spec + base:
        if os.path.exists(f) and not looks_like_load_test(f):
            raise click.UsageError(f"{f} is not one of the {LOAD_TESTS} that {what} draws")
    from .. import library
    return library.latency(spec, base, slo=slo, confidence=confidence)


@main.command("plot", context_settings={"ignore_unknown_options": True})
@input_options
@selection_options
@baseline_option
@click.option("--kind", type=click.Choice(PLOT_KINDS), default="timeline", show_default=True,
              help="timeline: accept length, throughput, running requests and profile cycle "
                   "time over time; phases: cycle breakdown per run; breakeven: accept length "
                   "against the break-even band (per batch size with --baseline-log); sweep: "
                   "effective tok/s against the varying config key; compare: ratio of each "
                   "metric to the first run; requests: the accept length of every request per "
                   "group and against its output length; latency: TTFT/TPOT p50 and p99 and "
                   "goodput against the load of SPEC load tests and the BASE ones after "
                   "--baseline, the crossover load marked.")
@click.option("--slo", default=None, metavar="KEY=VALUE,...",
              help="--kind latency: the service-level objective of goodput, e.g. "
                   "ttft=2s,tpot=50ms (as eaglelog latency; without it the lower panel is "
                   "per-stream tok/s).")
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
             slo, confidence, output):
    """Draw a picture of the analysis: a timeline, the phases, the break-even, a sweep, a
    compare, the requests, or latency under load.

    Needs matplotlib (pip install 'eaglelog[plot]'). The numbers are those the text commands
    print; the same logs give the same file. --kind latency reads load-test results, not logs:
    the speculative runs, then --baseline and the baseline runs, as `eaglelog latency` does
    (docs/latency.md).

    \b
    Examples:
      eaglelog plot -o timeline.png server.log
      eaglelog plot --kind phases -o phases.svg before.log after.log
      eaglelog plot --kind breakeven --baseline-log base.log -o breakeven.png spec.log
      eaglelog plot --kind sweep --baseline-toks 90 -o sweep.pdf steps-*.log
      eaglelog plot --kind compare -o compare.png before.log after.log
      eaglelog plot --kind requests --baseline-toks 90 -o requests.png server.log
      eaglelog plot --kind latency -o latency.png spec-*qps.json --baseline base-*qps.json \\
          --slo ttft=2s,tpot=50ms
    """
    from ..report import plot

    fmt = picture_output(output, PLOT_SUFFIXES, "plots")
    logs, base_runs, with_base = split_baseline(logs)
    if kind == "latency":
        if baseline_toks or baseline_log:
            raise click.UsageError("--kind latency takes its baseline load tests after "
                                   "--baseline, not --baseline-toks or --baseline-log")
        if keys:
            raise click.UsageError("--key is for --kind sweep")
        plot._mpl()
        ctx.obj["inputs"] = tuple(logs) + tuple(base_runs)
        fig = plot.latency_figure(_latency_of(logs, base_runs, slo, confidence,
                                              "--kind latency"))
        save_picture(fig, output, fmt)
        return
    if with_base:
        raise click.UsageError(f"--baseline BASE... is for --kind latency (load tests); --kind "
                               f"{kind} takes --baseline-toks or --baseline-log")
    if slo:
        raise click.UsageError("--slo is for --kind latency")
    if not logs:
        raise click.UsageError("Missing argument 'LOG...'.")
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
            from .. import library
            fig = plot.phases_figure(list(library.summarize(log, confidence=confidence).runs))
        elif kind == "breakeven":
            from .. import library
            fig = plot.breakeven_figure(list(library.breakeven(
                log, baseline=baseline, confidence=confidence,
                by_batch=baseline.log is not None).runs))
        elif kind == "requests":       # issue 18: grouped by category, labels or finish
            from .. import library
            from ..analysis.requests import auto_by
            fig = plot.requests_figure(library.requests(log, by=auto_by(log),
                                                        baseline=baseline,
                                                        confidence=confidence))
        else:
            from .. import library
            fig = plot.sweep_figure(library.sweep(log, keys=list(keys), baseline=baseline,
                                                  confidence=confidence,
                                                  keep_going=keep_going))
    save_picture(fig, output, fmt)
    if log is not None:
        finish(ctx, log)


next(p for p in plot_cmd.params if p.name == "logs").metavar = LATENCY_METAVAR


@main.command("report", context_settings={"ignore_unknown_options": True})
@input_options
@selection_options
@baseline_option
@click.option("--slo", default=None, metavar="KEY=VALUE,...",
              help="With load tests: the service-level objective of goodput, e.g. "
                   "ttft=2s,tpot=50ms (as eaglelog latency).")
@click.option("--confidence", type=click.FloatRange(0.5, 0.999), default=0.95, show_default=True,
              help="Confidence level of every interval.")
@click.option("--title", default=None, help="Title of the page (default: the logs' names).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), required=True,
              help="The HTML file to write (FILE.html).")
@click.pass_context
def report_cmd(ctx, logs, engine, keep_going, base_date, baseline_toks, baseline_log, slo,
               confidence, title, output):
    """One self-contained HTML page, answer first: conclusion, tables, then the pictures.

    The page opens with the answer in one paragraph (verdict, best config, bottleneck), then
    the tables (sweep, break-even, cycle breakdown, reconcile, compare, each run's detail,
    inputs), then the plots; numbers as the text commands print them. Inline CSS and SVG only
    (no scripts, nothing fetched from the network): it reads offline and prints. With several
    runs it compares them (the first is the reference), ranks them as a sweep and folds each
    run's detail away. The plots need matplotlib (pip install 'eaglelog[plot]'); without it
    the page holds the tables only, and says so.

    Load tests: inputs that are load-test results (vllm bench serve --save-result JSON,
    SGLang bench_serving JSONL, aiperf profile_export; told from logs by their JSON) are the
    speculative runs, and the files after --baseline their baseline runs, as `eaglelog
    latency` reads them: the page gets a "Latency under load" section with latency's table,
    its verdicts, and the percentiles and goodput (under --slo) against the load. Given with
    logs, the section follows the conclusion; given alone, the page is about them.

    \b
    Examples:
      eaglelog report -o report.html server.log
      eaglelog report --baseline-toks 90 -o report.html server.log
      eaglelog report --baseline-log base.log -o batch.html spec.log
      eaglelog report --baseline-toks 90 -o sweep.html steps-*.log
      eaglelog report -o latency.html spec-*qps.json --baseline base-*qps.json \\
          --slo ttft=2s,tpot=50ms
    """
    from ..report.html import PLOT_EXTRA, plot_available, report_html

    picture_output(output, (".html", ".htm"), "reports")
    inputs, base_runs, with_base = split_baseline(logs)
    spec_runs = [f for f in inputs if looks_like_load_test(f)]
    logs = [f for f in inputs if f not in spec_runs]
    latency = None
    if spec_runs or with_base:
        latency = _latency_of(spec_runs, base_runs, slo, confidence,
                              "the report's latency section")
    elif slo:
        raise click.UsageError("--slo is for load tests (SPEC.json... --baseline BASE.json...)")
    pictures = plot_available()
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=False)
    log = None
    if logs:
        log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                        preload=("eaglelog.report.html", "eaglelog.analysis.reconcile",
                                 "eaglelog.analysis.sweep"))
    elif baseline is not None:
        raise click.UsageError("--baseline-toks and --baseline-log are for logs; the load "
                               "tests' baseline runs go after --baseline")
    emit(report_html(log, baseline=baseline, confidence=confidence, title=title,
                     warmup=warmup_of(ctx), pictures=pictures, latency=latency), output)
    if latency is not None and not ctx.obj["quiet"]:
        for note in latency.notes:
            click.echo(printable(f"eaglelog: note: {note}"), err=True)
    if not pictures and not ctx.obj["quiet"]:
        click.echo(f"eaglelog: note: {output} has the tables but no pictures: they need "
                   f"matplotlib ({PLOT_EXTRA})", err=True)
    said_wrote(output)
    if log is not None:
        finish(ctx, log)


next(p for p in report_cmd.params if p.name == "logs").metavar = LATENCY_METAVAR
