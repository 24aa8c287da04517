"""The K each batch size ran under SGLang's adaptive speculation (docs/engines.md §9).

SGLang (0.5.13 →) with ``--speculative-adaptive`` keeps one *slot* per batch-size key of its
``--speculative-adaptive-config`` file: a batch is padded up to the next CUDA-graph size, then
runs the slot whose key is the largest at or below it (sglang 0.5.23
srt/speculative/adaptive_spec_params.py:342–358, ``_route``).  A slot with one candidate never
changes its steps and logs nothing — the schedules ``eaglelog schedule -f sglang`` emits are
such files — so the log alone cannot say which K a window ran: the config file can.  A slot
with several candidates adapts on its own (an EMA of its accept lengths, lines 146–268) and
logs 'Adaptive spec params updated: steps A -> B' without naming the slot.

Without a file, ``speculative_adaptive_config`` unset means SGLang's default slots
(``DEFAULT_ADAPTIVE_CONFIG``, lines 28–53); set, the file is on the server and the K of each
bucket is unknown until it is given (``--adaptive-config``).  SGLang turns adaptive off (with
only a warning) for the configurations ``engine_schedules.sglang_ignores`` names; then every
batch runs the start-up num_steps.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from .. import engine_schedules as es
from ..engine_schedules import EngineConfigError
from ..errors import EaglelogError

# sglang 0.5.23 srt/speculative/adaptive_spec_params.py:28–53
DEFAULT_SLOTS = {1: (1, 3, 5, 7), 8: (0, 1, 3), 32: (0, 1), 64: (0,)}


@dataclass(frozen=True)
class SlotPlan:
    """Candidate steps per slot key, the CUDA-graph sizes a batch is padded to (None: no
    padding known or graphs off), where the slots came from, and what to say of them."""

    slots: dict
    graph: tuple | None
    origin: str
    notes: tuple = ()

    def candidates(self, batch: float) -> tuple:
        """The candidate steps of the slot a batch of ``batch`` requests runs (a window's
        mean batch is rounded to the nearest size)."""
        b = max(1, int(round(batch)))
        return self.slots[es.sglang_route(self.slots, b, list(self.graph) if self.graph else None)]

    def label(self, batches: np.ndarray) -> str | None:
        """The K of a bucket of windows: '3' (one fixed slot), '3/5' (the bucket spans fixed
        slots of different K, in batch order), 'adapts 1,3,5,7' (a slot that switches on its
        own)."""
        b = batches[np.isfinite(batches) & (batches > 0)]
        if not len(b):
            return None
        seen = list(dict.fromkeys(self.candidates(x) for x in np.unique(np.rint(b))))
        if all(len(c) == 1 for c in seen):
            return "/".join(str(c[0]) for c in seen)
        return "adapts " + ",".join(str(s) for s in sorted({s for c in seen for s in c}))

    def fixed(self, label: str | None) -> int | None:
        """The one K of a bucket label, or None when it is several or adapts."""
        return int(label) if label is not None and label.isdigit() else None


def load_file(path: str) -> dict:
    """A --speculative-adaptive-config file as SGLang loads it (``_load_adaptive_config``):
    {slot key: candidate steps}.  One-line errors naming the file."""
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except OSError as e:
        raise EaglelogError(f"{path}: cannot read the adaptive config ({e.strerror or e})") \
            from None
    except ValueError as e:
        raise EaglelogError(f"{path}: not a JSON adaptive config ({e})") from None
    try:
        return {k: tuple(v) for k, v in es.sglang_validate(cfg).items()}
    except EngineConfigError as e:
        raise EaglelogError(f"{path}: SGLang would refuse this adaptive config: {e}") from None


def _graph(cfg: dict) -> tuple | None:
    """The CUDA-graph batch sizes: the server's own list, else SGLang's default list for
    speculative decoding up to cuda_graph_max_bs; None with graphs off or no size known."""
    if cfg.get("disable_cuda_graph") is True:
        return None
    bs = cfg.get("cuda_graph_bs")
    if isinstance(bs, (list, tuple)) and bs and all(
            isinstance(x, int) and not isinstance(x, bool) and 0 < x < 1 << 20 for x in bs):
        return tuple(sorted(bs))
    m = cfg.get("cuda_graph_max_bs")
    if isinstance(m, int) and not isinstance(m, bool) and 0 < m < 1 << 16:
        return tuple(es.sglang_spec_graph_bs(m))
    return None


def plan(cfg: dict, config_file: str | None = None) -> SlotPlan | None:
    """The run's slots: from ``config_file`` when given, else SGLang's defaults when the run
    is adaptive without a file; None for a run that is not adaptive (and no file given), or
    whose file is on the server only (``unread`` says so)."""
    adaptive = cfg.get("speculative_adaptive") is True
    if config_file is None and not adaptive:
        return None
    notes = []
    if config_file is not None:
        slots, origin = load_file(config_file), f"--adaptive-config {config_file}"
        if not adaptive and cfg:
            notes.append(f"the run's server_args do not set speculative_adaptive: {config_file} "
                         "labels its batch sizes as if the server had loaded it")
    elif cfg.get("speculative_adaptive_config"):
        return None
    else:
        slots, origin = dict(DEFAULT_SLOTS), "SGLang's default slots (0.5.23)"
    why = es.sglang_ignores(cfg) if adaptive else None
    if why:
        k = cfg.get("speculative_num_steps")
        notes.append(f"SGLang turns adaptive speculation off for this server ({why}; sglang "
                     "0.5.23 adaptive_spec_params.py:56–100): every batch ran num_steps "
                     f"{k}, whatever the slots say")
        if isinstance(k, int) and not isinstance(k, bool):
            slots = {1: (k,)}
    graph = _graph(cfg)
    if graph is None and cfg.get("disable_cuda_graph") is not True:
        notes.append("no cuda_graph_max_bs in the server_args: batch sizes routed to their "
                     "slots without CUDA-graph padding (SGLang pads, e.g. 15 runs the 16 slot)")
    return SlotPlan(slots, graph, origin, tuple(notes))


def unread(cfg: dict, config_file: str | None) -> str | None:
    """The note for an adaptive run whose slots eaglelog cannot see, else None."""
    path = cfg.get("speculative_adaptive_config")
    if cfg.get("speculative_adaptive") is True and path and config_file is None:
        return (f"adaptive speculation with per-batch-size slots from {path} on the server: "
                "each batch size may run another K, and the log does not say which; pass "
                "--adaptive-config with that file to read the K of each #running-req bucket")
    return None


def over_k(label: str, steps: int | None, accept_len) -> str | None:
    """A bucket whose accept length (an Estimate) is more than its K allows (K + 1 tokens a
    verify), beyond its interval."""
    low = accept_len.ci_low if accept_len.ci_low is not None else accept_len.estimate
    if steps is None or not math.isfinite(low) or low <= steps + 1 + 1e-6:
        return None
    return (f"running_req {label}: accept length {accept_len.estimate:.3g} "
            f"[{accept_len.ci_low if accept_len.ci_low is not None else math.nan:.3g} …] is "
            f"more than num_steps "
            f"{steps} can commit ({steps + 1} tokens a verify): the adaptive config is not the "
            "one this server ran")


def label_buckets(buckets: tuple, r: np.ndarray, plan_: SlotPlan) -> tuple[tuple, list[str]]:
    """The buckets of a by-batch result (``breakeven.BucketResult``) with the K each ran
    (``steps``), and the notes: where the slots came from, and a bucket whose accept length is
    more than its K allows."""
    from dataclasses import replace
    from .rate import bucket_of

    codes, labels = bucket_of(r)
    out, notes = [], [f"K per #running-req bucket from {plan_.origin}, each batch routed as "
                      "SGLang routes it (padded to its CUDA-graph size, then the slot at or "
                      "below it: sglang 0.5.23 adaptive_spec_params.py:342–358)", *plan_.notes]
    for b in buckets:
        i = labels.index(b.batch) if b.batch in labels else -1
        lab = plan_.label(r[codes == i]) if i >= 0 else None
        out.append(replace(b, steps=lab))
        n = over_k(b.batch, plan_.fixed(lab), b.accept_len)
        if n:
            notes.append(n)
    return tuple(out), notes
