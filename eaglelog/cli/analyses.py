"""The analyses' commands: `summary`, `breakeven`, `reconcile`, `compare`, `sweep`, `requests`,
`acceptance`, `whatif`, `schedule`, `latency` — each a thin call of the library and a render."""
from __future__ import annotations

import functools
import os

import click

from ..errors import printable
from ._base import (PLOT_SUFFIXES, baseline_option, emit, finish, follow_options, gate_options,
                    split_baseline,
                    input_options, main, make_baseline, metrics_options, output_options,
                    picture_output, read_logs, render_frame, render_object, render_result,
                    results_output, run_follow, table_output, run_workers, said_wrote, save_picture,
                    selection_options, show_run_errors, span_options, warmup_of)


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
    from .. import library
    from ..errors import UsageProblem
    try:
        exported = library.exports_in(list(logs), confidence, "breakeven")
    except UsageProblem as e:
        raise click.UsageError(str(e)) from None
    if exported:                   # eaglelog exports: from their estimates (no per-batch table)
        from ..report.blocks import breakeven_block
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
                    preload=("eaglelog.analysis.breakeven", "eaglelog.report.blocks"),
                    light=True)
    from ..report.blocks import breakeven_block

    result = library.breakeven(log.mark_single_use(), baseline=baseline, confidence=confidence,
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
    from ..analysis.breakeven import NO_VERDICT, gate_fails, gate_message
    failing = [(s, v, r) for s, v, r in runs if gate_fails(v, allow_insufficient)]
    if not failing:
        return
    if not ctx.obj["quiet"]:
        click.echo(printable("eaglelog: check failed: " + "; ".join(
            gate_message(s, v, r) for s, v, r in failing) +
            ("" if all(v not in NO_VERDICT for _, v, _ in failing)
             else " (--allow-insufficient lets a run without a verdict pass)")), err=True)
    ctx.exit(3)


def _llama_served(log) -> bool:
    """llamacpp.served, imported only for a log of benchmark outputs alone (its module's
    patterns are ~8 ms of every summary's start otherwise)."""
    from ..analysis.llamacpp import served
    return served(log)


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
            from .. import library
            return library.summarize(log, baseline=baseline, confidence=confidence,
                                     skip_warmup=warmup_of(ctx))

        def view(log):
            from ..report.blocks import summary_block
            return "\n".join(summary_block(r) for r in results_of(log).runs)

        def final(log):
            from ..report.blocks import summary_block
            results_output(results_of(log), fmt, output, summary_block)
        run_follow(ctx, logs, base_date, view, final, output)
        return
    from .. import library
    from ..errors import UsageProblem
    try:
        if library.exports_in(list(logs)):         # eaglelog exports: their own block
            from ..report.blocks import export_summary_block
            results_output(library.summarize(list(logs), baseline=baseline,
                                             confidence=confidence),
                           fmt, output, export_summary_block)
            return
    except UsageProblem as e:
        raise click.UsageError(str(e)) from None
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.summary", "eaglelog.report.blocks",
                             "eaglelog.analysis.llamacpp"), light=True)
    from .. import library
    from ..report.blocks import summary_block

    if len(log.bench) and log.decode.empty and log.prof.empty and not _llama_served(log):
        bench_summary_output(ctx, log, fmt, output, confidence)   # benchmark outputs only
        finish(ctx, log)
        return
    result = library.summarize(log.mark_single_use(), baseline=baseline, confidence=confidence,
                               skip_warmup=warmup_of(ctx), workers=run_workers())
    result = show_run_errors(log, result)
    results_output(result, fmt, output, summary_block)
    finish(ctx, log)


def bench_summary_output(ctx, log, fmt, output, confidence=0.95) -> None:
    """Benchmark outputs and other engines' statistics: one row per reported result (JSON: the
    summary's documented shape, BenchSummary.to_dict)."""
    import dataclasses

    import pandas as pd

    from ..analysis.bench import summarize_bench

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
    from .. import library
    from ..report.blocks import reconcile_block

    result = library.reconcile(log, confidence=confidence, skip_warmup=warmup_of(ctx),
                               workers=run_workers())
    result = show_run_errors(log, result)
    results_output(result, fmt, output, reconcile_block)
    finish(ctx, log)


def _p_is(p, name: str = "p") -> str:
    from ..report.blocks import p_is
    return p_is(p, name)


def compare_of(ctx, logs, engine, keep_going, base_date, baseline, confidence, **kw):
    """library.compare of logs and eaglelog exports in the order given (the logs read once,
    their diagnostics on stderr): (the result, the ParsedLog of the logs or None)."""
    from .. import library
    from ..errors import UsageProblem

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
    from .. import library
    from ..report.requests import group_rows, requests_block

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
@click.option("--by", "by", type=click.Choice(["context"]), default=None,
              help="context: acceptance per context-length bucket (requests by prompt length, "
                   "SGLang decode windows by #token / #running-req) and its trend per doubling "
                   "of the context (docs/acceptance.md).")
@output_options
@click.pass_context
def acceptance_cmd(ctx, logs, engine, keep_going, base_date, confidence, plot_to, by, fmt,
                   output):
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
      eaglelog acceptance --by context server.log       # does acceptance fall with context?
    """
    if plot_to and by:
        raise click.UsageError("--plot draws the curves of the whole run: it goes without --by")
    if plot_to:
        from ..report import plot as _plot
        picture_output(plot_to, PLOT_SUFFIXES, "plots")
        _plot._mpl()      # a missing matplotlib is said before any log is read
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.acceptance", "eaglelog.report.acceptance"))
    from .. import library
    from ..report.acceptance import acceptance_block, acceptance_figure, markdown_rows

    if by == "context":
        from ..report.context import context_block, markdown_tables
        result = library.acceptance(log, confidence=confidence, by="context")
        render_result(result, fmt, output, context_block, markdown_tables)
        finish(ctx, log)
        return
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
    from ..errors import UsageProblem
    from ..analysis.whatif import parse_steps, parse_tokens
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
    from .. import library
    from ..report.whatif import batch_check_rows, batch_rows, check_rows, prediction_rows, \
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
        from ..report import plot as _plot
        picture_output(plot_to, PLOT_SUFFIXES, "plots")
        _plot._mpl()
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=True)
    log = read_logs(ctx, logs, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.schedule", "eaglelog.report.schedule"))
    from .. import library
    from ..report.schedule import engine_config, schedule_block, schedule_figure, slot_rows

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
    from .. import library
    from ..report.blocks import batch_compare_block

    r = library.compare_by_batch(ref, new, confidence=confidence,
                                 adaptive_config=adaptive_config)
    table_output(r, fmt, output, batch_compare_block, lambda res: res.buckets)
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
    from .. import library
    from ..report.requests import paired_block, paired_group_rows

    r = library.compare_paired(ref, new, match=pair_by, rid_map=rid_map, by=by,
                               confidence=confidence)
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
    from ..report.blocks import compare_block

    if fail_on and fail_on != "any" and os.path.exists(fail_on):
        raise click.BadParameter(f"took the log {fail_on!r} as its METRIC: name a metric "
                                 "(or 'any'), or put the option after the logs",
                                 param_hint="--fail-on-regression")
    baseline = make_baseline(ctx, baseline_toks, baseline_log, engine, base_date, required=False)
    result, log = compare_of(ctx, logs, engine, keep_going, base_date, baseline, confidence,
                             test=test, min_effect=min_effect / 100)
    table_output(result, fmt, output, compare_block, lambda res: res.metrics)
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
    from .. import library
    # eaglelog exports are rows of their own (last week's point beside today's logs)
    found = [library._export_at(s, confidence) for s in logs]
    rest = [s for s, e in zip(logs, found) if e is None]
    log = read_logs(ctx, rest, engine, keep_going, base_date, skipped_note=False,
                    preload=("eaglelog.analysis.sweep", "eaglelog.report.blocks")) \
        if rest else None
    from ..report.blocks import sweep_block

    result = library.sweep(log, keys=list(keys), baseline=baseline, confidence=confidence,
                           keep_going=keep_going, skip_warmup=warmup_of(ctx),
                           exports=[e for e in found if e is not None])
    table_output(result, fmt, output, sweep_block, lambda res: res.rows)
    if log is not None:
        finish(ctx, log)


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

    SPEC... and the BASE... files after --baseline are load-test results: `vllm bench serve
    --save-result --save-detailed` JSON (one run per file or per line), SGLang `bench_serving
    --output-file` JSONL (with --output-details), aiperf's profile_export_aiperf.json /
    profile_export.jsonl, or NVIDIA specdec_bench / SPEED-Bench run directories (timing.json,
    acceptance_rate.json, configuration.json: the run's p50s only) — a speculative and a
    baseline run at each request rate (or concurrency); spec and baseline may come from
    different tools. Per-request accept lengths (aiperf, specdec_bench) give the accept
    length's mean over requests and, with aiperf, its relation to TPOT. Per load point:
    p50/p90/p99 TTFT, TPOT
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
    spec, baseline, _ = split_baseline(files)
    if not spec:
        raise click.UsageError("no speculative run: give SPEC files before --baseline")
    if not baseline:
        raise click.UsageError("no baseline run: give --baseline BASE... after the SPEC files")
    ctx.obj["inputs"] = tuple(spec) + tuple(baseline)     # for an out-of-memory message
    from .. import library
    from ..report.latency import latency_block, markdown_rows

    result = library.latency(list(spec), list(baseline), slo=slo, attainment=attainment,
                             confidence=confidence, resamples=resamples)
    render_result(result, fmt, output, latency_block, markdown_rows)
    if not ctx.obj.get("quiet"):
        for note in result.notes:
            click.echo(printable(f"eaglelog: note: {note}"), err=True)
    if output and output != "-":
        said_wrote(output)
