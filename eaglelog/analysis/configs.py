"""A run whose speculative configuration changed at run time, taken whole (SGLang adaptive
speculation: ``Adaptive spec params updated: steps A -> B`` lines; a vLLM k change).

Each configuration has its own cycle and accept length, and the run's mix of them is what it
was: the whole run's figures are conditional on its configuration path, as a run's are on its
batch path.  The rate model's prefill fit must not take the configurations' differences for
prefill work — a longer K finishes requests in fewer iterations, so it admits more of them a
window *and* has a longer cycle, and a pooled fit made the prefill cost per batch 86.6 ms
(simulated, adaptive seed 6) and the cycle 12 % short.  So each window's derived cycle, accept
length and prefill work are centred on its configuration's request-step-weighted mean and moved
to the run's (Frisch–Waugh–Lovell: the same β as a fit with a level per configuration; the
run's mean, β·x̄ and the accept length's mean are unchanged), and the configurations' levels
are not counted as noise.
"""
from __future__ import annotations

import numpy as np


def within_configs(win, codes: np.ndarray) -> None:
    """Centre ``win``'s y, x and a (in place) on each configuration ``codes`` (one per window)
    and move them to the run's request-step-weighted means."""
    w = np.asarray(win.w, dtype=float)
    x = win.x.dense()       # (stored by the windows holding prefill work: centring fills them)
    for arr, cols in ((win.y, None), (win.a, None), (x, range(x.shape[1]))):
        for c in (cols if cols is not None else (None,)):
            v = arr if c is None else arr[:, c]
            ok = np.isfinite(v) & np.isfinite(w) & (w > 0)
            if not ok.any():
                continue
            tot = float(np.dot(w[ok], v[ok]) / w[ok].sum())
            for g in np.unique(codes[ok]):
                m = ok & (codes == g)
                shift = float(np.dot(w[m], v[m]) / w[m].sum()) - tot
                if c is None:
                    arr[m] -= shift
                else:
                    arr[m, c] -= shift
    win.x = type(win.x)(x)
