"""Per-request and per-workload records of benchmark outputs for `eaglelog requests`
(docs/requests.md): a saved vLLM API response carrying per-request speculative metrics, and
SpecForge's ``bench_eagle3.py`` results file.  Pure functions that never raise; rows go to the
``bench`` table.  (The identity of an SGLang request, its prompt hash and custom labels, is read
by ``request_identity.py``.)

Sources (checked in the tools' code):

* vLLM ``--per-request-spec-decode-metrics summary|detailed`` (PR #48915, 2026-08): the API
  response (and the last stream chunk) carries ``metrics.speculative_decoding`` =
  ``{mean_acceptance_length, draft_acceptance_rate, acceptance_histogram, num_spec_steps,
  num_accepted_draft_tokens, num_draft_tokens, num_spec_tokens}`` with
  ``num_spec_steps = Σ histogram``, ``num_accepted_draft_tokens = Σ i·histogram[i]`` and
  ``mean_acceptance_length = 1 + accepted / num_spec_steps`` (vLLM's test
  ``test_per_request_spec_decode_metrics``).  No vLLM release prints per-request acceptance in
  its server log; a client that saves its responses one per line (or the ``data: {…}`` stream
  lines) gives one row per request.
* SGLang's OpenAI-compatible responses (0.5.19 →, ``return_spec_tokens_details``): the
  response's ``sglext.spec_tokens_details`` = ``{spec_accept_rate, spec_accept_length,
  spec_cap_length, spec_block_accept_length, spec_num_correct_drafts,
  spec_num_proposed_drafts, spec_verify_ct, spec_correct_drafts_histogram,
  spec_cap_lens_histogram}`` (sglang 0.5.23 srt/entrypoints/openai/protocol.py:456–481, one
  object or one per choice; filled from the request's meta_info by
  ``spec_tokens_details_from_meta_info``, utils.py:313–342).  A verify commits its correct
  drafts and one bonus token (UNO: two, uno_worker_v2.py:407, not separated here), so the
  per-step accept length is 1 + correct / verify_ct; SGLang's own ``spec_accept_length`` is
  completion / verify_ct (the prefill's first token included) and is kept in ``stats``.
* llama-server's responses (native ``/completion`` and the OpenAI-compatible ones): ``timings``
  = ``{cache_n, prompt_n, prompt_ms, …, predicted_n, predicted_ms, …}`` and, when the request
  drafted, ``draft_n`` and ``draft_n_accepted`` (llama.cpp tools/server/server-task.cpp,
  ``result_timings::to_json``).  The first generated token comes from the prompt's pass and
  every later step commits its accepted drafts and one more, so the request's verify steps are
  predicted_n − 1 − draft_n_accepted and τ_r = (predicted_n − 1) / steps; the steps count the
  ones that drafted nothing too, as llama.cpp's own mean length does not.
* SpecForge ``benchmarks/bench_eagle3.py`` (sgl-project/SpecForge a6b6b023, 2026-08):
  ``json.dump(results, f, indent=4)`` of ``{"model": draft path, "<benchmark>": [{"batch_size",
  "steps", "topk", "num_draft_tokens", "metrics": [BenchmarkMetrics as a dict, one per run],
  "num_samples"}, …]}``; ``benchmarker/utils.py`` ``compute_metrics``: ``accept_length =
  Σ completion_tokens / Σ spec_verify_ct`` over the benchmark's questions (first token
  included), 1.0 when the server reports no verify count; ``categorical_performance`` is an
  optional dict of per-category metrics.  Per-workload numbers only: SpecForge keeps no
  per-question acceptance.
"""
from __future__ import annotations

import json
import re
from collections import Counter

from ._common import Block, Parsed, base, derive, dump_json, json_obj
from .numbers import Reader, to_float, to_int, to_int32

def _response(line: str, who: str, key: str) -> tuple[dict | None, Parsed | None]:
    """(the response object — a stream line's 'data: {…}' unwrapped where ``key`` is not at the
    top — or None and the Parsed to return: a line cut short)."""
    obj = json_obj(line)
    if obj is None:
        return None, Parsed(None, [f"{who} response line is not a JSON object (cut short?)"])
    if isinstance(obj.get("data"), dict) and key not in obj:
        obj = obj["data"]
    return obj, None


def _response_fields(obj: dict, r: Reader) -> dict:
    """What every saved API response says of its request: its id, token counts (``usage``)
    and the first choice's finish reason."""
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
    choices = obj.get("choices") if isinstance(obj.get("choices"), list) else []
    fr = choices[0].get("finish_reason") if choices and isinstance(choices[0], dict) else None
    return {"label": str(obj["id"])[:200] if obj.get("id") is not None else None,
            "output_tokens": r(usage.get("completion_tokens"), to_int, "completion_tokens"),
            "prompt_tokens": r(usage.get("prompt_tokens"), to_int, "prompt_tokens"),
            "finish_reason": str(fr)[:40] if fr is not None else None}


# ------------------------------------------------------------------ vLLM API responses
VLLM_RESPONSE_MARKER = rb"\"num_spec_steps\":"


def parse_vllm_response(line: str) -> Parsed:
    """A saved vLLM response (or 'data: {…}' stream chunk) with metrics.speculative_decoding."""
    obj, bad = _response(line, "vLLM", "metrics")
    if bad is not None:
        return bad
    metrics = obj.get("metrics")
    sd = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    if not isinstance(sd, dict):
        return Parsed(None)          # "num_spec_steps" in some other JSON: not this record
    r = Reader()
    steps = r(sd.get("num_spec_steps"), to_int, "num_spec_steps")
    acc = r(sd.get("num_accepted_draft_tokens"), to_int, "num_accepted_draft_tokens")
    hist = sd.get("acceptance_histogram")
    rec = base("vllm.response", "vllm", "request", "jsonl", **_response_fields(obj, r),
               accept_len=r(sd.get("mean_acceptance_length"), to_float,
                            "mean_acceptance_length"),
               acceptance_rate=r(sd.get("draft_acceptance_rate"), to_float,
                                 "draft_acceptance_rate"),
               drafts=steps, accepted_tokens=acc,
               draft_tokens=r(sd.get("num_draft_tokens"), to_int, "num_draft_tokens"),
               max_draft_len=r(sd.get("num_spec_tokens"), to_int32, "num_spec_tokens"),
               steps=steps,
               step_tokens=steps + acc if steps is not None and acc is not None else None,
               stats=None)
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "request-steps"
    derive(rec)
    problems = []
    st = {"acceptance_histogram": hist} if isinstance(hist, list) else {}
    st.update(_per_step(sd, steps, problems))
    rec["stats"] = dump_json(st) if st else None
    if isinstance(hist, list) and all(isinstance(x, int) and not isinstance(x, bool)
                                      for x in hist):
        if steps is not None and sum(hist) != steps:
            problems.append(f"acceptance_histogram sums to {sum(hist)}, not num_spec_steps "
                            f"{steps}")
        if acc is not None and sum(i * x for i, x in enumerate(hist)) != acc:
            problems.append(f"acceptance_histogram implies {sum(i * x for i, x in enumerate(hist))}"
                            f" accepted draft tokens, not {acc}")
    al = rec.get("accept_len")
    if al is not None and steps and acc is not None and abs(al - (1 + acc / steps)) > 1e-6:
        problems.append(f"mean_acceptance_length {al} ≠ 1 + {acc} / {steps}")
    return Parsed(rec, problems, r.bad)


MAX_POSITIONS = 64       # a per-step count beyond any engine's k is no draft to count by position


def _per_step(sd: dict, steps: int | None, problems: list[str]) -> dict:
    """``--per-request-spec-decode-metrics detailed`` (vllm 0.34.0 v1/metrics/stats.py:350–422):
    ``per_step_accepted`` / ``per_step_drafted`` hold each verify step's accepted and proposed
    draft counts, so under dynamic speculative decoding (a K per step) a position can be
    counted among the steps that drafted it.  Kept as per-position counts, never the lists
    (their length is the request's, not bounded): ``drafted_ge[i − 1]`` = steps that drafted
    ≥ i tokens, ``cond_base[i − 1]`` = steps that drafted ≥ i and accepted ≥ i − 1 (the
    conditional rate's denominator)."""
    acc, dr = sd.get("per_step_accepted"), sd.get("per_step_drafted")
    if acc is None and dr is None:
        return {}
    ints = (lambda v: isinstance(v, list) and all(
        isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_POSITIONS for x in v))
    if not (ints(acc) and ints(dr)):
        problems.append(f"per_step_accepted / per_step_drafted are not lists of counts "
                        f"0–{MAX_POSITIONS}: left out")
        return {}
    if len(acc) != len(dr) or (steps is not None and len(acc) != steps):
        problems.append(f"per_step_accepted ({len(acc)}) and per_step_drafted ({len(dr)}) do not "
                        f"both hold num_spec_steps ({steps}) steps: left out")
        return {}
    if any(a > d for a, d in zip(acc, dr)):
        problems.append("a step accepted more drafts than it proposed (per_step_accepted > "
                        "per_step_drafted): left out")
        return {}
    # position i (1-based) was drafted when d ≥ i, and reached when a ≥ i − 1 as well
    k = max(dr, default=0)
    return {"drafted_ge": _at_least(Counter(dr), k),
            "cond_base": _at_least(Counter(min(d, a + 1) for a, d in zip(acc, dr)), k)}


def _at_least(counts: Counter, k: int) -> list[int]:
    """[#values ≥ 1, #values ≥ 2, …, #values ≥ k] of a Counter of small counts."""
    out, run = [0] * k, 0
    for i in range(k, 0, -1):
        run += counts.get(i, 0)
        out[i - 1] = run
    return out


# ------------------------------------------------------------------ SGLang API responses
SGLANG_RESPONSE_MARKER = rb"\"spec_tokens_details\":"


def parse_sglang_response(line: str) -> Parsed:
    """A saved SGLang OpenAI-compatible response (or 'data: {…}' chunk) whose ``sglext`` holds
    ``spec_tokens_details``: one row per choice."""
    obj, bad = _response(line, "SGLang", "sglext")
    if bad is not None:
        return bad
    ext = obj.get("sglext")
    sd = ext.get("spec_tokens_details") if isinstance(ext, dict) else None
    if isinstance(sd, list):
        sd = sd[0] if len(sd) == 1 and isinstance(sd[0], dict) else sd
    if isinstance(sd, list):
        return Parsed(None, [f"SGLang response with {len(sd)} choices' spec_tokens_details: "
                             "one request per response is read"])
    if not isinstance(sd, dict):
        return Parsed(None)       # "spec_tokens_details" in some other JSON: not this record
    r = Reader()
    steps = r(sd.get("spec_verify_ct"), to_int, "spec_verify_ct")
    acc = r(sd.get("spec_num_correct_drafts"), to_int, "spec_num_correct_drafts")
    hist = sd.get("spec_correct_drafts_histogram")
    rec = base("sglang.response", "sglang", "request", "jsonl", **_response_fields(obj, r),
               accept_len=1 + acc / steps if steps and acc is not None else None,
               acceptance_rate=r(sd.get("spec_accept_rate"), to_float, "spec_accept_rate"),
               drafts=steps, accepted_tokens=acc,
               draft_tokens=r(sd.get("spec_num_proposed_drafts"), to_int,
                              "spec_num_proposed_drafts"),
               steps=steps,
               step_tokens=steps + acc if steps is not None and acc is not None else None,
               stats=dump_json({"acceptance_histogram": hist,
                                "spec_accept_length": sd.get("spec_accept_length")})
               if isinstance(hist, list) else None)
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "request-steps"
    derive(rec)
    problems = []
    if isinstance(hist, list) and hist and all(isinstance(x, int) and not isinstance(x, bool)
                                               for x in hist):
        if steps is not None and sum(hist) != steps:
            problems.append(f"spec_correct_drafts_histogram sums to {sum(hist)}, not "
                            f"spec_verify_ct {steps}")
        implied = sum(i * x for i, x in enumerate(hist))
        if acc is not None and implied != acc:
            problems.append(f"spec_correct_drafts_histogram implies {implied} correct drafts, "
                            f"not {acc}")
    return Parsed(rec, problems, r.bad)


# ------------------------------------------------------------------ llama-server responses
LLAMA_RESPONSE_MARKER = rb"\"draft_n_accepted\":"


def parse_llama_response(line: str) -> Parsed:
    """A saved llama-server response (or 'data: {…}' chunk) whose ``timings`` hold
    ``draft_n`` and ``draft_n_accepted``."""
    obj, bad = _response(line, "llama-server", "timings")
    if bad is not None:
        return bad
    t = obj.get("timings")
    if not isinstance(t, dict) or "draft_n_accepted" not in t:
        return Parsed(None)
    r = Reader()
    n = r(t.get("predicted_n"), to_int, "predicted_n")
    drafted = r(t.get("draft_n"), to_int, "draft_n")
    acc = r(t.get("draft_n_accepted"), to_int, "draft_n_accepted")
    problems = []
    steps = n - 1 - acc if n is not None and acc is not None else None
    if steps is not None and steps <= 0:
        problems.append(f"predicted_n {n} leaves no verify step beside {acc} accepted drafts")
        steps = None
    if drafted is not None and acc is not None and acc > drafted:
        problems.append(f"draft_n_accepted {acc} > draft_n {drafted}")
    choices = obj.get("choices") if isinstance(obj.get("choices"), list) else []
    fr = choices[0].get("finish_reason") if choices and isinstance(choices[0], dict) else \
        obj.get("stop_type")
    label = obj.get("id", obj.get("id_slot"))
    rec = base("llama.cpp.response", "llama.cpp", "request", "jsonl",
               label=str(label)[:200] if label is not None else None,
               accept_len=(n - 1) / steps if steps else None,
               acceptance_rate=acc / drafted if drafted and acc is not None else None,
               drafts=steps, accepted_tokens=acc, draft_tokens=drafted,
               output_tokens=n, prompt_tokens=r(t.get("prompt_n"), to_int, "prompt_n"),
               finish_reason=str(fr)[:40] if fr is not None else None,
               steps=steps, step_tokens=n - 1 if steps else None,
               duration_s=r(t.get("predicted_ms"), to_float, "predicted_ms") / 1000.0
               if isinstance(t.get("predicted_ms"), (int, float)) else None)
    if rec.get("accept_len") is not None:
        rec["accept_len_def"] = "request-steps"
    derive(rec)
    return Parsed(rec, problems, r.bad)


# ------------------------------------------------------------------ SpecForge results
SPECFORGE_MARKER = rb"^    \"model\": (?:\"|null)"
_ACCEPT_LINE = re.compile(r"^\s*\"accept_length\":")


class SpecForgeBlock(Block):
    """SpecForge bench_eagle3.py's results file: ``json.dump(results, f, indent=4)``.  The block
    opens at the ``    "model":`` line (the ``{`` before it is a line of its own) and ends at
    the closing ``}`` at column 0; one row per benchmark × configuration × run, and one per
    category of ``categorical_performance``."""

    kind = "specforge"
    name = "SpecForge results file"

    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.lines: list[str] = []
        self.accept_lines: list[int] = []
        self.closed = False

    def blank(self) -> bool:
        return True

    def take(self, line: str) -> str:
        if not self.lines:                   # the marker line itself
            self.lines.append(line)
            return "take"
        self.lines.append(line)
        if _ACCEPT_LINE.match(line):
            self.accept_lines.append(self.end_line)
        if line.rstrip() == "}":
            self.closed = True
            return "end"
        return "take"

    def incomplete(self) -> str | None:
        return None if self.closed else "no closing '}'"

    def unread(self) -> str | None:
        return "the JSON document could not be read" if self.closed else \
            "cut short before its closing '}'"

    def records(self):
        if not self.closed:
            return []
        try:
            doc = json.loads("{\n" + "\n".join(self.lines))
        except (ValueError, RecursionError):
            return []
        if not isinstance(doc, dict):
            return []
        model = doc.get("model")
        out = []
        lines = iter(self.accept_lines)
        for bench_name, entries in doc.items():
            if bench_name == "model" or not isinstance(entries, list):
                continue
            for entry in entries:
                if not isinstance(entry, dict) or not isinstance(entry.get("metrics"), list):
                    continue
                for run, m in enumerate(entry["metrics"]):
                    if not isinstance(m, dict):
                        continue
                    ln = next(lines, self.end_line)
                    out.append((ln, ln, self._row(bench_name, bench_name, entry, m, run,
                                                   model)))
                    cats = m.get("categorical_performance")
                    if isinstance(cats, dict):
                        for cat, cm in cats.items():
                            if isinstance(cm, dict):
                                ln = next(lines, self.end_line)
                                out.append((ln, ln, self._row(f"{bench_name}/{cat}", str(cat),
                                                              entry, cm, run, model)))
        return out

    def _row(self, label, category, entry, m, run, model) -> dict:
        r = Reader()
        rec = base("specforge.bench_eagle3", "sglang", "task", "block", label=label[:200],
                   category=category[:200],
                   accept_len=r(m.get("accept_length"), to_float, "accept_length"),
                   requests=r(m.get("num_questions"), to_int, "num_questions"),
                   duration_s=r(m.get("latency"), to_float, "latency"),
                   output_tok_s=r(m.get("output_throughput"), to_float, "output_throughput"),
                   batch_size=r(entry.get("batch_size"), to_int, "batch_size"),
                   spec_steps=r(entry.get("steps"), to_int, "steps"),
                   spec_topk=r(entry.get("topk"), to_int, "topk"),
                   spec_draft_tokens=r(entry.get("num_draft_tokens"), to_int, "num_draft_tokens"),
                   extra=dump_json({k: v for k, v in (("model", model), ("run", run),
                                                      ("accuracy", m.get("accuracy")),
                                                      ("num_samples", entry.get("num_samples")))
                                    if v is not None}))
        if rec.get("accept_len") is not None:
            rec["accept_len_def"] = "pooled-with-first-token"
        for b in r.bad:
            self.bad.append((self.line_no, b))
        return rec
