"""`eaglelog whatif`: the predictions as a human block and their rounded rows for -f markdown
(docs/whatif.md).  The numbers are those of analysis.whatif; nothing is recomputed here."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .requests import _with_ci, tabulate

if TYPE_CHECKING:
    from ..analysis.whatif import WhatifResult

def _basis(text: str) -> str:
    parts = []
    for p in text.split("; "):
        if p == "measured positions":
            parts.append("positions measured")
        elif p.startswith("extrapolated"):
            parts.append("positions extrapolated")
        elif p.startswith("verify beyond"):
            parts.append("verify extrapolated")
        elif p.startswith("tree approximation"):
            parts.append("tree approx." + (": τ ≥" if "at least" in p else ": τ ≤"
                                           if "at most" in p else ""))
    return ", ".join(parts)


def _poly(m) -> str:
    """v0 + v1 × K (+ v2 × K²), signs written as such."""
    out = f"{m.v0:.4g}"
    for c, t in ((m.v1, "K"), (m.v2, "K²")):
        if c or t == "K":
            out += f" {'−' if c < 0 else '+'} {abs(c):.3g} × {t}"
    return out


def prediction_rows(w: "WhatifResult") -> list[dict]:
    rows = []
    tree = any(p.draft_tokens for p in w.predictions)
    for p in w.predictions:
        row = {"steps": p.steps}
        if tree:
            row["draft tokens"] = p.draft_tokens or p.steps + 1
        row |= {"accept len": _with_ci(p.accept_len, 3),
               "cycle ms": _with_ci(p.cycle_ms, 4), "eff tok/s": _with_ci(p.eff_tok_s, 4)}
        if p.speedup is not None:
            row["speedup"] = _with_ci(p.speedup, 3)
        row["measured tok/s"] = (f"{p.measured_eff_tok_s.estimate:.4g}"
                                 + ("†" if p.other_mix else "")) \
            if p.measured_eff_tok_s is not None else ""
        row["basis"] = _basis(p.basis)
        rows.append(row)
    return rows


def check_rows(w: "WhatifResult") -> list[dict]:
    return [{"run": c.run, "steps": c.steps, "predicted tok/s": _with_ci(c.predicted, 4),
             "measured tok/s": f"{c.measured.estimate:.4g}", "error": f"{100 * c.error:+.1f}%",
             "inside": ("yes" if c.inside else "NO") if c.comparable else "other mix"}
            for c in w.checks]


def batch_rows(w: "WhatifResult") -> list[dict]:
    """One row per #running-req bucket of the anchor with an interval: its share, its measured
    rate, each candidate's predicted rate, and the best candidate with its interval (and its
    speedup, with a baseline)."""
    rows = []
    for r in w.by_batch:
        if not r.measured.sufficient:
            continue
        row = {"running_req": r.batch, "share": f"{100 * r.share:.1f}%",
               "measured tok/s": f"{r.measured.estimate:.4g}"}
        for p in r.predictions:
            key = f"S{p.steps}" + (f"/{p.draft_tokens}" if any(
                q.draft_tokens for q in w.predictions) else "")
            row[key] = (f"{p.eff_tok_s.estimate:.4g}" + ("*" if p.beyond else "")
                        if p.eff_tok_s.sufficient else "–")
        b = r.best
        row["best"] = b.steps if b else ""
        row["best tok/s"] = _with_ci(b.eff_tok_s, 4) if b else ""
        if b is not None and b.speedup is not None:
            row["speedup"] = _with_ci(b.speedup, 3)
        rows.append(row)
    return rows


def batch_check_rows(w: "WhatifResult") -> list[dict]:
    return [{"run": c.run, "steps": c.steps, "running_req": c.batch,
             "predicted tok/s": _with_ci(c.predicted, 4),
             "measured tok/s": f"{c.measured.estimate:.4g}", "error": f"{100 * c.error:+.1f}%",
             "inside": "yes" if c.inside else "NO"} for c in w.batch_checks]


def _batch_lines(w: "WhatifResult") -> list[str]:
    rows = batch_rows(w)
    if not rows:
        return []
    left = sum(1 for r in w.by_batch if not r.measured.sufficient)
    lines = ["", "by batch size: each #running-req bucket of the anchor run, its measured rate "
             "× the accept-length ratio / the cycle ratio there",
             f"  cost model  {w.batch_model}",
             tabulate([list(r.values()) for r in rows], list(rows[0]), disable_numparse=True,
                      colalign=["left" if "[" in str(v) else "right" for v in rows[0].values()])]
    if any(p.beyond for r in w.by_batch for p in r.predictions if r.measured.sufficient):
        lines.append("  * batch × K beyond the measured range: the verify model extrapolated")
    if left:
        lines.append(f"  ({left} bucket(s) with too few windows for an interval left out)")
    if w.batch_residuals:
        rel = [100 * (v - f) / f for *_, v, f in w.batch_residuals if f]
        worst = max(w.batch_residuals, key=lambda x: abs(x[3] - x[4]) / x[4] if x[4] else 0)
        lines.append(f"  verify fit residuals (measured − fitted) over {len(rel)} cells: "
                     f"{min(rel):+.2f} % to {max(rel):+.2f} %, the largest at batch "
                     f"{worst[1]:.3g}, K {worst[2]} ({worst[3] - worst[4]:+.3f} ms)")
    if w.batch_checks:
        inside = sum(c.inside for c in w.batch_checks)
        lines += ["", f"leave-one-run-out by batch size ({inside} of {len(w.batch_checks)} "
                      "inside their intervals)"]
        rows = batch_check_rows(w)
        lines.append(tabulate([list(r.values()) for r in rows], list(rows[0])))
    return lines


def whatif_block(w: "WhatifResult") -> str:
    m = w.model
    derived = not hasattr(m, "v0")
    lines = [f"what if: predictions from {', '.join(w.runs)}   "
             f"({w.confidence:.0%} prediction intervals: what a run like these would measure)",
             f"  cost model  {m.slope_from}" if derived else
             f"  cost model  cycle = {m.d:.3g} ms × steps + verify(K = "
             f"{'draft tokens' if any(p.draft_tokens for p in w.predictions) else 'steps + 1'}) + "
             f"{m.rest:.3g} ms;  verify = {_poly(m)} ms  ({m.slope_from})",
             ""]
    rows = prediction_rows(w)
    lines.append(tabulate([list(r.values()) for r in rows], list(rows[0])))
    if any(p.other_mix for p in w.predictions):
        lines.append("  † measured at another batch mix than the anchor's: not the same "
                     "quantity (the leave-one-run-out below compares at the run's own mix)")
    if derived:
        rel = [100 * (v - f) / f for *_, v, f in m.residuals if f]
        lines += ["", f"  cycle fit residuals (measured − fitted) over {len(rel)} cells: "
                      f"{min(rel):+.2f} % to {max(rel):+.2f} %"]
    elif len(m.residuals) > 1 and m.slope_from.startswith("fit"):
        lines += ["", "  verify fit residuals (measured − fitted): " + ", ".join(
            f"K {k}: {v - f:+.3f} ms" for _, k, v, f in m.residuals)]
    if w.checks:
        counted = [c for c in w.checks if c.comparable]
        inside = sum(c.inside for c in counted)
        lines += ["", f"leave-one-run-out: each run predicted from the others "
                      f"({inside} of {len(counted)} inside their intervals)"]
        rows = check_rows(w)
        lines.append(tabulate([list(r.values()) for r in rows], list(rows[0])))
    lines += _batch_lines(w)
    for n in w.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines) + "\n"
