"""Commands that draw: `plot` (a figure) and `report` (the self-contained HTML page)."""
from __future__ import annotations


import click


from ._base import (PLOT_SUFFIXES, baseline_option, emit, finish, input_options, main,
                    make_baseline, picture_output, read_logs, said_wrote, save_picture,
                    selection_options, warmup_of)
from .analyses import (compare_of)


# the kinds of eaglelog.report.plot.KINDS (a test keeps them in step; importing the module here
# would import pandas before any command runs)
PLOT_KINDS = ("timeline", "phases", "breakeven", "sweep", "compare", "requests")


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
    from ..report import plot

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
    from ..report.html import PLOT_EXTRA, plot_available, report_html

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
