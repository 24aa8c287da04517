"""Per-batch-size speculation schedules as the engines load them: writers, and the engines' own
validation and lookup rules, transcribed from their source (docs/dev/schedule-engines.md has
every rule with its citation).

vLLM, dynamic speculative decoding (PR 32374, merge 4ef4492e9b7a, 2026-06-14):
``speculative_config.num_speculative_tokens_per_batch_size``, a list of inclusive
``[range_start, range_end, K]`` triples (``vllm/config/speculative.py``), checked by
``validate_and_normalize_dynamic_sd_schedule`` and looked up by
``build_dynamic_sd_schedule_lookup`` (``vllm/v1/spec_decode/dynamic/utils.py``).

SGLang, adaptive speculation (v0.5.13 → per-batch-size slots, commit 6b180959a88f; K = 0 from
v0.5.14, e068355831fe): ``--speculative-adaptive --speculative-adaptive-config FILE``, a JSON
object whose digit keys are batch-size slots with ``candidate_steps``
(``python/sglang/srt/speculative/adaptive_spec_params.py``: ``_load_adaptive_config``,
``AdaptiveSpeculativeParams._route``; the launch check ``_init_adaptive_speculative_params``).
"""
from __future__ import annotations

import bisect


class EngineConfigError(ValueError):
    """What the engine would raise for this config (its own message)."""


# ----------------------------------------------------------------------------- vLLM

def vllm_validate(schedule, num_speculative_tokens: int = 1,
                  max_num_seqs: int = 256) -> list[tuple[int, int, int]]:
    """vLLM's checks, in its order: the pydantic field (``list[tuple[int, int, int]]``, lax
    mode: integral floats and numeric strings coerce, fractions do not) and then
    ``validate_and_normalize_dynamic_sd_schedule``.  Returns the entries sorted by start, as
    vLLM normalises them."""
    if schedule is None:
        raise EngineConfigError("num_speculative_tokens_per_batch_size is required for dynamic "
                                "speculative decoding.")
    if not isinstance(schedule, (list, tuple)):
        raise EngineConfigError("num_speculative_tokens_per_batch_size: Input should be a valid "
                                "list [type=list_type]")
    if not schedule:
        raise EngineConfigError("num_speculative_tokens_per_batch_size must not be empty.")
    rows = []
    for entry in schedule:
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise EngineConfigError("Each num_speculative_tokens_per_batch_size entry must be a "
                                    "3-item sequence: (range_start, range_end, "
                                    "num_speculative_tokens).")
        vals = []
        for v in entry:
            if isinstance(v, float) and v != int(v):
                raise EngineConfigError("Input should be a valid integer, got a number with a "
                                        "fractional part [type=int_from_float]")
            try:
                vals.append(int(v))
            except (TypeError, ValueError):
                raise EngineConfigError("Input should be a valid integer [type=int_parsing]") \
                    from None
        s, e, k = vals
        if s <= 0 or e <= 0:
            raise EngineConfigError(f"Batch-size range ({s}, {e}) must be positive.")
        if s > e:
            raise EngineConfigError(f"Batch-size range start must be <= end for ({s}, {e}, {k}).")
        if k < 0:
            raise EngineConfigError("num_speculative_tokens_per_batch_size values must be >= 0.")
        rows.append((s, e, k))
    rows.sort()
    for (_, pe, _), (s, _, _) in zip(rows, rows[1:]):
        if s <= pe:
            raise EngineConfigError("Batch-size ranges must be non-overlapping and sorted.")
    if rows[0][0] != 1:
        raise EngineConfigError("The first batch-size range must start at 1 so every runtime "
                                "batch size has a defined schedule.")
    if max_num_seqs <= 0:
        raise EngineConfigError("vllm_max_batch_size must be > 0.")
    if num_speculative_tokens <= 0:
        raise EngineConfigError("vllm_num_speculative_tokens must be > 0.")
    return rows


def vllm_lookup(schedule, num_speculative_tokens: int, max_num_seqs: int) -> list[int]:
    """vLLM's dense table (index = batch size, 1 … max_num_seqs): K clamped to
    num_speculative_tokens, a gap takes the previous range's K, above the last range its K."""
    rows = vllm_validate(schedule, num_speculative_tokens, max_num_seqs)
    dense = [0] * (max_num_seqs + 1)
    k_prev = None
    i = 0
    for b in range(1, max_num_seqs + 1):
        while i < len(rows) and rows[i][1] < b:
            k_prev = rows[i][2]
            i += 1
        if i < len(rows) and rows[i][0] <= b <= rows[i][1]:
            k = rows[i][2]
        else:
            k = k_prev if k_prev is not None else rows[0][2]
        dense[b] = min(num_speculative_tokens, k)
    return dense


# vLLM 0.34.0's built-in methods (vllm/config/speculative.py:53–97, ``SpeculativeMethod``; an
# unknown one raises 'Unknown speculative method' in ``_validate_method``, :1624–1634)
VLLM_METHODS = frozenset({
    "ngram", "draft_model", "suffix", "eagle", "eagle3", "extract_hidden_states", "dflash",
    "ngram_gpu", "dspark", "mtp"})
# SGLang's algorithm -> vLLM's method of the same kind; None: vLLM has none
SGLANG_TO_VLLM = {"eagle": "eagle", "eagle3": "eagle3", "standalone": "draft_model",
                  "nextn": "mtp", "mtp": "mtp", "ngram": "ngram", "dflash": "dflash",
                  "dspark": "dspark", "uno": None, "frozen_kv_mtp": None}


def vllm_method(algorithm: str) -> str:
    """vLLM's ``speculative_config.method`` for a run's algorithm (SGLang's name or vLLM's
    own): SGLang's STANDALONE is vLLM's draft_model, NEXTN and MTP heads vLLM's mtp (vLLM
    reads a model's own '*_mtp' type as mtp too, :1375), never 'eagle'.  EngineConfigError
    (one line) for an algorithm vLLM has no method for (UNO, FROZEN_KV_MTP)."""
    a = str(algorithm).strip("'\"").lower()
    if a in SGLANG_TO_VLLM:
        m = SGLANG_TO_VLLM[a]
        if m is None:
            raise EngineConfigError(f"vLLM has no speculative method for SGLang's "
                                    f"{algorithm.upper()}: no vLLM config can load this "
                                    "schedule")
        return m
    if a in VLLM_METHODS or a.endswith("_mtp"):
        return a
    raise EngineConfigError(f"vLLM has no built-in speculative method {algorithm!r} "
                            f"(it accepts {', '.join(sorted(VLLM_METHODS))} and model '*_mtp' "
                            "types)")


def sglang_spec_graph_bs(max_bs: int) -> list[int]:
    """SGLang's default decode CUDA-graph batch sizes under speculative decoding: 1–8, 10–32
    by 2, 40–64 by 4, 72–256 by 8, then by 16, and max_bs (sglang 0.5.23
    srt/arg_groups/cuda_graph_hook.py:500–532)."""
    bs = (list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 65, 4))
          + list(range(72, 257, 8)) + list(range(272, max_bs + 1, 16)))
    bs = [b for b in bs if b <= max_bs]
    if max_bs not in bs:
        bs.append(max_bs)
    return sorted(bs)


def sglang_padding_changes(slots: list[tuple[int, int]], max_bs: int,
                           last: int) -> list[tuple[int, int, int]]:
    """(batch size, intended K, K SGLang runs) for each batch size 1 … ``last`` whose K
    changes when SGLang routes it as ``AdaptiveSpeculativeParams._route`` does: padded up to
    the next CUDA-graph size, then the slot whose key is the largest at or below it (sglang
    0.5.23 srt/speculative/adaptive_spec_params.py:342–358); above max_bs no padding."""
    keys = [k for k, _ in slots]
    ks = dict(slots)
    graph = sglang_spec_graph_bs(max_bs)

    def slot_k(b: int) -> int:
        i = bisect.bisect_right(keys, b) - 1
        return ks[keys[max(0, i)]]
    out = []
    for b in range(1, last + 1):
        j = bisect.bisect_left(graph, b)
        padded = graph[j] if j < len(graph) else b
        want, got = slot_k(b), slot_k(padded)
        if want != got:
            out.append((b, want, got))
    return out


def sglang_ignores(cfg: dict) -> str | None:
    """Why SGLang would switch adaptive speculation off (with only a warning) for a server
    configured like ``cfg``, or None: sglang 0.5.23 srt/speculative/adaptive_spec_params.py:56–90
    ``adaptive_unsupported_reason`` (an algorithm other than EAGLE/EAGLE3, topk other than 1,
    attention DP, multi-layer EAGLE, two-batch overlap, PD multiplexing), applied by
    speculative_hook.py:261–262 and 1374–1390 (0.5.18 the same rules)."""
    algo = str(cfg.get("speculative_algorithm") or "").strip("'\"").upper()
    if algo not in ("EAGLE", "EAGLE3"):
        return f"speculative_algorithm={algo or None} (only EAGLE/EAGLE3 are supported)"
    topk = cfg.get("speculative_eagle_topk")
    if isinstance(topk, int) and not isinstance(topk, bool) and topk != 1:
        return f"speculative_eagle_topk={topk} (only topk=1 is supported)"
    w = cfg.get("attn_dp_size")
    if cfg.get("enable_dp_attention") is True or (isinstance(w, int) and w > 1):
        return "attention DP is not supported"
    for flag in ("enable_multi_layer_eagle", "enable_two_batch_overlap", "enable_pdmux"):
        if cfg.get(flag) is True:
            return f"{flag}=True is not supported"
    return None


def vllm_ignores(cfg: dict) -> str | None:
    """Why vLLM would drop the per-batch-size schedule (with only a warning) and run its
    static num_speculative_tokens: data parallelism (vllm 0.34.0 config/vllm.py:1031–1048,
    ``_maybe_disable_dynamic_sd_for_data_parallel``)."""
    dp = cfg.get("dp_size")
    if isinstance(dp, int) and not isinstance(dp, bool) and dp > 1:
        return (f"data parallel size {dp}: vLLM drops num_speculative_tokens_per_batch_size and "
                "falls back to the static num_speculative_tokens")
    return None


def vllm_config(schedule: list[tuple[int, int, int]], method: str, draft: str | None) -> dict:
    """The ``--speculative-config`` object of a schedule (validated)."""
    k_max = max(k for _, _, k in schedule)
    cfg = {"method": method, **({"model": draft} if draft else {}),
           "num_speculative_tokens": k_max,
           "num_speculative_tokens_per_batch_size": [list(r) for r in schedule]}
    vllm_validate(cfg["num_speculative_tokens_per_batch_size"], k_max)
    return cfg


# ----------------------------------------------------------------------------- SGLang

def sglang_validate(cfg, num_steps: int | None = None, version: tuple = (0, 5, 14)) -> dict:
    """SGLang's ``_load_adaptive_config`` (v0.5.13 →) and the launch check that
    ``--speculative-num-steps`` is among the slots' candidates.  Returns {slot: steps}."""
    if not isinstance(cfg, dict):
        raise EngineConfigError(f"AttributeError: '{type(cfg).__name__}' object has no attribute "
                                "'items'")
    nonneg = version >= (0, 5, 14)
    slots = {}
    for key, entry in cfg.items():
        if not str(key).isdigit():
            continue
        if not isinstance(entry, dict):
            raise EngineConfigError(f"AttributeError: '{type(entry).__name__}' object has no "
                                    "attribute 'get'")
        steps = entry.get("candidate_steps")
        ok = isinstance(steps, list) and steps and all(
            isinstance(v, int) and (v >= 0 if nonneg else v > 0) for v in steps)
        if not ok:
            raise EngineConfigError(f"BS {key}: candidate_steps must be a list of "
                                    f"{'non-negative' if nonneg else 'positive'} ints, got "
                                    f"{steps!r}")
        slots[int(key)] = sorted(set(steps))
    if not slots:
        raise EngineConfigError('speculative_adaptive_config must contain at least one '
                                'integer-string BS key, e.g. {"1": {"candidate_steps": '
                                f'[1,3,7]}}}}. Got keys: {list(cfg)}')
    union = sorted({s for v in slots.values() for s in v})
    if num_steps is not None and num_steps not in union:
        raise EngineConfigError(f"--speculative-num-steps={num_steps} is not in the adaptive "
                                f"config candidate_steps {union}. Pass one of those values.")
    return slots


def sglang_route(slots, batch: int, cuda_graph_bs: list[int] | None = None) -> int:
    """The slot a batch uses (``_route``): the batch padded up to the next CUDA-graph size
    (unchanged above the largest, or without graphs), then the largest key ≤ it, clamped to
    the smallest key."""
    keys = sorted(slots)
    b = batch
    if cuda_graph_bs:
        g = sorted(cuda_graph_bs)
        i = bisect.bisect_left(g, batch)
        if i < len(g):
            b = g[i]
    i = bisect.bisect_right(keys, b) - 1
    return keys[max(i, 0)]


def sglang_config(slots: list[tuple[int, int]]) -> dict:
    """The ``--speculative-adaptive-config`` object of (lower bound, steps) slots: one
    candidate per slot, so no slot switches steps on its own (a fixed schedule)."""
    cfg = {str(lo): {"candidate_steps": [steps]} for lo, steps in slots}
    sglang_validate(cfg)
    return cfg
