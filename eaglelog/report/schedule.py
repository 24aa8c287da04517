"""`eaglelog schedule`: the per-batch-size table as a human block, its rounded rows for
-f markdown, the engine configs as text, and the figure (docs/schedule.md).  The numbers are
those of analysis.schedule; nothing is recomputed here."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .requests import _with_ci, tabulate

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analysis.schedule import ScheduleResult


def slot_rows(r: "ScheduleResult") -> list[dict]:
    rows = []
    for s in r.slots:
        b = s.best
        rows.append({
            "running_req": s.batch,
            "num_steps": s.steps if s.candidates else "",
            "status": s.status,
            "best eff tok/s": _with_ci(b.eff_tok_s, 4) if b else "",
            "best speedup": _with_ci(b.speedup, 3) if b else "",
            "tied": ", ".join(str(c.steps) for c in s.candidates if c.tied),
            "others": ", ".join(f"{c.steps}: {c.eff_tok_s.estimate:.4g}"
                                for c in s.candidates[1:] if not c.tied)})
    return rows


def launch_lines(r: "ScheduleResult") -> list[str]:
    """How each engine loads the schedule (or why it would not)."""
    if r.vllm is None and r.sglang is None and not any(
            n.startswith(("no vLLM config: ", "no SGLang config: ")) for n in r.notes):
        return ["  no engine config: speculation pays at no measured batch size"]
    out = ["  vLLM 0.24.0 or later (dynamic speculative decoding, PR 32374):",
           f"    vllm serve MODEL --speculative-config '{json.dumps(r.vllm)}'"] \
        if r.vllm is not None else ["  vLLM: none (see the note)"]
    if r.sglang is None:
        return out + ["  SGLang: none (see the note)"]
    return out + [
        "  SGLang (v0.5.13+, per-batch-size adaptive slots; a slot's key is a lower bound of "
        "the batch",
        "    padded up to its CUDA-graph size): write the JSON below to a file,",
        "    --speculative-adaptive --speculative-adaptive-config schedule.json "
        f"--speculative-num-steps {r.sglang_num_steps}",
        f"    {json.dumps(r.sglang)}"]


def schedule_block(r: "ScheduleResult") -> str:
    runs = ", ".join(f"{run} (steps {s})" for run, s in r.runs)
    lines = [f"schedule from {runs}", f"  against {r.baseline}   ({r.confidence:.0%} intervals; "
             "per #running-req bucket: the num_steps with the highest per-stream rate, 0 where "
             "speculation does not pay)", ""]
    rows = slot_rows(r)
    lines.append(tabulate([list(x.values()) for x in rows], list(rows[0])))
    lines += ["", f"  crossover: {r.crossover.text}", ""]
    lines += launch_lines(r)
    for n in r.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines) + "\n"


def engine_config(r: "ScheduleResult", engine: str) -> str:
    """-f vllm: the --speculative-config JSON; -f sglang: the --speculative-adaptive-config
    file's JSON."""
    from ..errors import EaglelogError
    cfg = r.vllm if engine == "vllm" else r.sglang
    if cfg is None:
        head = "no vLLM config: " if engine == "vllm" else "no SGLang config: "
        why = next((n for n in r.notes if n.startswith(head)), None)
        if why:
            raise EaglelogError(why)
    if cfg is None:
        raise EaglelogError("speculation pays at no measured batch size: there is no schedule "
                            "to write (run without speculative decoding)")
    # one key a line, each value compact: a range or a slot reads on one line
    body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in cfg.items())
    return "{\n" + body + "\n}\n"


def schedule_figure(r: "ScheduleResult") -> "Figure":
    """Per-stream rate against batch size, one line per num_steps with its intervals, the
    baseline's rate, and the chosen schedule drawn over them (its num_steps over each point)."""
    from . import plot

    mpl = plot._mpl()
    with mpl.rc_context(plot._style()):
        fig = plot._new_figure(7.6, 4.6)
        ax = fig.subplots()
        steps = sorted({c.steps for s in r.slots for c in s.candidates})
        for i, k in enumerate(steps):
            pts = [(s.lo, c) for s in r.slots for c in s.candidates if c.steps == k]
            ys = [c.eff_tok_s.estimate for _, c in pts]
            err = [[c.eff_tok_s.estimate - c.eff_tok_s.ci_low for _, c in pts],
                   [c.eff_tok_s.ci_high - c.eff_tok_s.estimate for _, c in pts]]
            ax.errorbar([x for x, _ in pts], ys, yerr=err, marker="o", ms=4, lw=1.4, capsize=3,
                        label=f"num_steps {k}", **plot.line_style(i))
        base = [(s.lo, s.best.eff_tok_s.estimate / s.best.speedup.estimate) for s in r.slots
                if s.best is not None]
        ax.plot([x for x, _ in base], [y for _, y in base], color=plot.GREY, linestyle="--",
                label="baseline (no speculation)")
        chosen = []
        for s in r.slots:
            if s.best is None:
                continue
            c = next((c for c in s.candidates if c.steps == s.steps), None)
            chosen.append((s.lo, c.eff_tok_s.estimate if c else
                           s.best.eff_tok_s.estimate / s.best.speedup.estimate, s.steps))
        ax.plot([x for x, _, _ in chosen], [y for _, y, _ in chosen], color="black", lw=6,
                alpha=0.15, label="the schedule", zorder=0)
        for x, y, k in chosen:
            ax.annotate(str(k), (x, y), textcoords="offset points", xytext=(0, 9), ha="center",
                        fontsize=9, fontweight="bold")
        cr = r.crossover
        if cr.estimate is not None and cr.low is not None and cr.high is not None:
            ax.axvspan(cr.low, cr.high, color=plot.GREY, alpha=0.2,
                       label=f"speedup 1 at running_req ≈ {cr.estimate:.3g}")
        ax.set_xscale("log", base=2)
        xt = [s.lo for s in r.slots]
        ax.set_xticks(xt, [str(x) for x in xt])
        ax.set_xlabel("batch size (#running-req)")
        ax.set_ylabel("per-stream tok/s (1000 × accept len / cycle ms)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"per-stream rate by batch size and num_steps ({r.confidence:.0%} "
                     "intervals)\nthe number over each point: the schedule's num_steps")
        ax.legend(loc="upper right")
    return fig
