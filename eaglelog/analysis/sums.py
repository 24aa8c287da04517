"""Sums over the picked rows of a long run's arrays, numpy's to the bit, without copying the
picked values (_ratekern.masked_sum: numpy's pairwise sum over them in order).  The rate
model, the windows and the engine corrections read them."""
from __future__ import annotations

import numpy as np

try:
    from . import _ratekern as _kern
except ImportError:  # pragma: no cover - a build without a C compiler
    _kern = None

LONG = 1 << 16      # values from which the C pass is worth its call


def picked_sum(v: np.ndarray, mask: np.ndarray, w: np.ndarray | None = None) -> float:
    """float(v[mask].sum()) to the bit (with ``w``: float((v[mask] * w[mask]).sum())), without
    the copies of the picked values where v is every window's floats."""
    if _kern is not None and len(v) > LONG and v.dtype == np.float64 and \
            (w is None or w.dtype == np.float64):
        return _kern.masked_sum(np.ascontiguousarray(v), np.ascontiguousarray(mask, dtype=bool),
                                None if w is None else np.ascontiguousarray(w))
    return float(v[mask].sum() if w is None else (v[mask] * w[mask]).sum())
