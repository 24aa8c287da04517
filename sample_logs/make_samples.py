#!/usr/bin/env python3
"""Write the synthetic sample logs in this folder (deterministic; run it to regenerate them).

Every line is invented: a small discrete-event simulation of one SGLang v0.5.10-style server
(tp_size=2, SGLANG_LOG_MS=1, --log-requests) serving a single-stream benchmark, with the
EAGLE-3 profiler patch printing an EAGLE3_PROF block every 100 cycles.

    python sample_logs/make_samples.py    # rewrites every *.log next to this file

The simulation is the ground truth the tests rely on:
- a decode iteration (one draft+verify cycle, or one plain step for the baseline) takes
  ``cycle_ms`` ± 1 % (normal); a 'Decode batch' line is printed every 40 iterations;
- per cycle and request, the number of accepted drafts a is drawn from ``accept_dist``
  (P(a = 0), P(a = 1), …; a chain of S drafts, T = 1, K = S + 1); accept len = mean of a + 1;
- requests arrive one at a time after an idle gap of 0.1 – 0.6 s and start with a prefill of
  30 – 90 ms, so windows that straddle a request boundary show a lower gen throughput;
- the profiler's block covers 100 consecutive cycles: phases are the simulated mean times; its
  token count is drawn around ``prof_accept`` (the known case this reproduces: the patch's
  'Accept len' is 1.14 while SGLang's 'accept len' is 2.0 – 2.6).
"""
from __future__ import annotations

import datetime as dt
import itertools
import math
import operator
import os
import sys
import random

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = ("# SYNTHETIC LOG written by sample_logs/make_samples.py for eaglelog's examples and "
          "tests; every line is invented.\n")


def server_args(spec: dict | None, port: int) -> str:
    s = spec or {}
    alg = repr(s["algorithm"]) if spec else "None"
    draft = repr(s["draft"]) if spec else "None"
    steps, topk, k = (s["steps"], 1, s["steps"] + 1) if spec else (None, None, None)
    return ("server_args=ServerArgs(model_path='/models/llama-3.1-8b-instruct', "
            "tokenizer_path='/models/llama-3.1-8b-instruct', tokenizer_mode='auto', "
            "skip_tokenizer_init=False, load_format='auto', trust_remote_code=False, "
            "dtype='auto', kv_cache_dtype='auto', quantization=None, context_length=None, "
            "device='cuda', served_model_name='/models/llama-3.1-8b-instruct', "
            f"chat_template=None, is_embedding=False, host='127.0.0.1', port={port}, "
            "mem_fraction_static=0.82, max_running_requests=48, max_total_tokens=None, "
            "chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', "
            "schedule_conservativeness=1.0, cpu_offload_gb=0, page_size=1, tp_size=2, "
            "dp_size=1, pp_size=1, ep_size=1, stream_interval=1, stream_output=False, "
            "random_seed=1234, watchdog_timeout=300, log_level='info', log_level_http=None, "
            "log_requests=True, log_requests_level=2, log_requests_format='text', "
            "enable_metrics=False, decode_log_interval=40, api_key=None, "
            "attention_backend='fa3', sampling_backend='flashinfer', "
            f"speculative_algorithm={alg}, speculative_draft_model_path={draft}, "
            f"speculative_num_steps={steps}, speculative_eagle_topk={topk}, "
            f"speculative_num_draft_tokens={k}, speculative_accept_threshold_single=1.0, "
            "speculative_accept_threshold_acc=1.0, speculative_token_map=None, "
            "enable_dp_attention=False, disable_cuda_graph=False, cuda_graph_max_bs=16, "
            "cuda_graph_bs=None, disable_overlap_schedule=" + ("True" if spec else "False") +
            ", num_continuous_decode_steps=1, enable_torch_compile=False, "
            "lora_paths=None, max_loras_per_batch=8)")


def simulate(name: str, *, seed: int, spec: dict | None, cycle_ms: float, phases: dict | None,
             accept_dist: tuple[float, ...], prof_accept: float, requests: int,
             out_tokens: tuple[int, int], prof_prefix: bool, port: int,
             out_dir: str = HERE) -> None:
    rng = random.Random(seed)
    t = dt.datetime(2026, 3, 2, 14, 0, 0, 250000)
    lines: list[str] = [HEADER]

    def stamp(tags: str = " TP0") -> str:
        return f"[{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d}{tags}] "

    def log(msg: str, tags: str = " TP0") -> None:
        lines.append(stamp(tags) + msg + "\n")

    log("Launching the server (synthetic sample).", "")
    log(server_args(spec, port), "")
    log("Load weight begin. avail mem=78.42 GB")
    t += dt.timedelta(seconds=21.4)
    log("Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.10 GB")
    if spec:
        log("Capture draft cuda graph begin. This can take up to several minutes. "
            "avail mem=20.11 GB")
        t += dt.timedelta(seconds=6.2)
        log("Capture draft cuda graph end. Time elapsed: 6.20 s. mem usage=0.41 GB. "
            "avail mem=19.70 GB.")
    t += dt.timedelta(seconds=3.1)
    log("The server is fired up and ready to roll!", "")
    k = spec["steps"] + 1 if spec else None
    steps = spec["steps"] if spec else 0

    it = 0                       # decode iterations since start
    win_tok = win_steps = 0      # window counters (tokens incl. bonus, request-steps)
    last_line_t = t
    prof = {"n": 0, "tok": 0, "ms": 0.0}
    kv = 0
    for r in range(requests):
        t += dt.timedelta(seconds=rng.uniform(0.1, 0.6))         # idle: client think time
        rid = f"{rng.getrandbits(64):016x}"
        prompt = rng.randint(80, 900)
        prefill_ms = 30 + prompt * 0.065
        t += dt.timedelta(milliseconds=prefill_ms)
        kv = prompt
        log(f"Prefill batch, #new-seq: 1, #new-token: {prompt}, #cached-token: 0, "
            f"token usage: {kv / 180000:.2f}, #running-req: 0, #queue-req: 0, "
            f"cuda graph: False, input throughput (token/s): "
            f"{prompt / max((t - last_line_t).total_seconds(), 1e-3):.2f}")
        want = rng.randint(*out_tokens)
        done, verifies, drafts, hist = 1, 0, 0, [0] * (steps + 1)
        while done < want:
            c_ms = rng.gauss(cycle_ms, cycle_ms * 0.01)
            t += dt.timedelta(milliseconds=c_ms)
            it += 1
            a = rng.choices(range(len(accept_dist)), accept_dist)[0] if spec else 0
            a = min(a, want - done - 1)
            gained = a + 1
            done += gained
            kv += gained
            verifies += 1
            drafts += a
            hist[a] += 1
            win_tok += gained
            win_steps += 1
            if spec:
                prof["n"] += 1
                prof["ms"] += c_ms
                if prof["n"] == 100:
                    write_prof(lines, rng, prof, phases, prof_accept,
                               stamp(" TP0") if prof_prefix else "")
                    prof = {"n": 0, "tok": 0, "ms": 0.0}
            if it % 40 == 0:
                log(decode_line(1, kv, kv / 180000, win_tok, win_steps,
                                (t - last_line_t).total_seconds(), k if spec else None))
                last_line_t = t
                win_tok = win_steps = 0
        meta = {"id": rid, "finish_reason": {"type": "length", "length": want},
                "prompt_tokens": prompt, "weight_version": "default", "total_retractions": 0,
                "completion_tokens": done, "cached_tokens": 0}
        if spec:
            meta.update({"spec_accept_rate": drafts / (verifies * steps),
                         "spec_accept_length": done / verifies,
                         "spec_num_correct_drafts": drafts,
                         "spec_num_proposed_drafts": verifies * steps,
                         "spec_verify_ct": verifies, "spec_correct_drafts_histogram": hist,
                         "spec_accepted_drafts": drafts, "spec_proposed_drafts": verifies * steps,
                         "spec_accept_histogram": hist})
        meta["e2e_latency"] = round(prefill_ms / 1000 + verifies * cycle_ms / 1000, 4)
        log(f"Finish: obj=GenerateReqInput(rid='{rid}', stream=False), "
            f"out={{'meta_info': {meta!r}}}", "")
        log(f'INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK',
            "")
    path = os.path.join(out_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(lines)


def decode_line(running: int, tokens: int, usage: float, win_tok: int, win_steps: int,
                wall: float, k: int | None) -> str:
    """A v0.5.10 'Decode batch' line closing a window (k = K for speculative runs)."""
    spec_txt = ""
    if k is not None:
        al = win_tok / win_steps
        spec_txt = f"accept len: {al:.2f}, accept rate: {al / k:.2f}, "
    return (f"Decode batch, #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
            f"{spec_txt}cuda graph: True, gen throughput (token/s): {win_tok / wall:.2f}, "
            "#queue-req: 0")


def write_prof(lines, rng, prof, phases, prof_accept, prefix):
    total = prof["ms"] / prof["n"]
    scale = total / sum(phases.values())
    parts = {label: ms * scale for label, ms in phases.items()}
    tok = max(1, round(rng.gauss(prof_accept, 0.04) * 100))
    acc = tok / 100
    rounded = {label: round(v, 2) for label, v in parts.items()}
    tot = round(sum(rounded.values()), 2)
    block = [f"EAGLE3_PROF (100 cycles, {tok} tok, no sync)"]
    for label, v in rounded.items():
        block.append(f"  {label + ':':<18}{v:6.2f} ms/cyc  ({100 * v / tot:5.1f}%)")
    block += [f"  {'TOTAL:':<18}{tot:6.2f} ms/cyc", f"  Accept len:      {acc:.2f}",
              f"  Eff tok/s:       {1000 * acc / tot:.1f}"]
    lines.extend(prefix + b + "\n" for b in block)
    if not prefix:
        lines.append("\n")


def simulate_batches(name: str, *, seed: int, spec: dict | None, accept_dist, port: int,
                     batch_sizes=(1, 2, 4, 8, 16, 32), iters_per_batch: int = 2000,
                     cycle=None, phases=None) -> None:
    """Continuous batching at a fixed concurrency per phase (1, 2, 4, … requests), long requests
    replaced as they finish (each replacement is a prefill).  A decode iteration at batch size b
    takes cycle(b) ms ± 1 %; by default 27.28 + 1.9 (b − 1) ms with speculation and
    11.1 + 0.45 (b − 1) ms without: speculation's fixed cost grows faster with the batch than a
    plain step does.  ``phases(b)``: the cycle's phases at batch size b (ms) — then EAGLE3_PROF
    blocks every 100 cycles and a Finish line (with its spec_accept_histogram) for every request
    that completes are printed too, drawn from a second random stream, so the decode and
    prefill lines are those of the same seed without them."""
    rng = random.Random(seed)
    extra = random.Random(seed + 1000)     # the profiler blocks' and Finish lines' own draws
    prof = {"n": 0, "ms": 0.0, "tok": 0, "req": 0, "parts": {}}
    t = dt.datetime(2026, 3, 3, 9, 0, 0, 120000)
    lines = [HEADER]

    def log(msg, tags=" TP0"):
        lines.append(f"[{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d}{tags}] {msg}\n")

    log(server_args(spec, port), "")
    log("The server is fired up and ready to roll!", "")
    steps = spec["steps"] if spec else 0
    k = steps + 1
    it = 0
    win_tok = win_steps = 0
    def new_request():
        return {"rid": f"{extra.getrandbits(64):016x}", "done": 1, "verifies": 0,
                "hist": [0] * (steps + 1)}

    def finish(q):
        drafts = sum(i * n for i, n in enumerate(q["hist"]))
        meta = {"id": q["rid"], "finish_reason": {"type": "stop", "matched": 128009},
                "prompt_tokens": 512, "weight_version": "default", "total_retractions": 0,
                "completion_tokens": q["done"], "cached_tokens": 0,
                "spec_accept_rate": drafts / (q["verifies"] * steps),
                "spec_accept_length": q["done"] / q["verifies"],
                "spec_verify_ct": q["verifies"], "spec_accept_histogram": q["hist"]}
        log(f"Finish: obj=GenerateReqInput(rid='{q['rid']}', stream=False), "
            f"out={{'meta_info': {meta!r}}}", "")

    for b in batch_sizes:
        left = [rng.randint(1500, 2500) for _ in range(b)]
        reqs = [new_request() for _ in range(b)] if phases else []
        last_line_t = t
        t += dt.timedelta(seconds=2)      # the benchmark client switches concurrency
        for _ in range(b):
            t += dt.timedelta(milliseconds=40)
            log(f"Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: "
                f"0.01, #running-req: {b}, #queue-req: 0, cuda graph: False, input throughput "
                f"(token/s): 12800.00")
        win_tok = win_steps = 0
        last_line_t = t
        for i in range(iters_per_batch):
            base = cycle(b) if cycle is not None else \
                (27.28 + 1.9 * (b - 1)) if spec else (11.1 + 0.45 * (b - 1))
            c_ms = rng.gauss(base, base * 0.01)
            t += dt.timedelta(milliseconds=c_ms)
            it += 1
            cyc_tok = 0
            for r in range(b):
                a = rng.choices(range(len(accept_dist)), accept_dist)[0] if spec else 0
                win_tok += a + 1
                win_steps += 1
                cyc_tok += a + 1
                left[r] -= a + 1
                if phases:
                    q = reqs[r]
                    q["done"] += a + 1
                    q["verifies"] += 1
                    q["hist"][a] += 1
                if left[r] <= 0:                    # finished: a new request takes its place
                    if phases:
                        finish(reqs[r])
                        reqs[r] = new_request()
                    left[r] = rng.randint(1500, 2500)
                    t += dt.timedelta(milliseconds=40)
                    log(f"Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: 0, "
                        f"token usage: 0.01, #running-req: {b - 1}, #queue-req: 0, cuda graph: "
                        "False, input throughput (token/s): 12800.00")
            if phases:                              # the profiled cycle, as the patch sums it
                prof["n"] += 1
                prof["ms"] += c_ms
                prof["tok"] += cyc_tok
                prof["req"] += b
                ph = phases(b)
                for label, ms in ph.items():
                    prof["parts"][label] = prof["parts"].get(label, 0.0) + \
                        ms * c_ms / sum(ph.values())
                if prof["n"] == 100:
                    write_prof(lines, extra, prof, prof["parts"], prof["tok"] / prof["req"], "")
                    prof = {"n": 0, "ms": 0.0, "tok": 0, "req": 0, "parts": {}}
            if it % 40 == 0:
                log(decode_line(b, b * 2000, 0.02, win_tok, win_steps,
                                (t - last_line_t).total_seconds(), k if spec else None))
                last_line_t = t
                win_tok = win_steps = 0
    path = os.path.join(HERE, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(lines)


SWEEP_ACCEPT = (0.80, 0.70, 0.64, 0.60, 0.56, 0.53, 0.50)   # P(accept ≥ i | accept ≥ i − 1)


def schedule_cycle(steps: int):
    """The cycle (ms) at batch size b of the schedule samples: a verify of n = b (S + 1) tokens
    that is memory-bound at small n and grows faster than linearly (10.5 + 0.45 n (1 + n / 256)),
    S draft steps of 0.4 + 0.02 b ms, 0.5 + 0.02 b ms of other overhead.  Against the plain step
    11.1 + 0.45 (b − 1) of batch_baseline.log, more steps pay at small batches, fewer at large
    ones, none at 32."""
    def cycle(b: int) -> float:
        n = b * (steps + 1)
        return 10.5 + 0.45 * n * (1 + n / 256) + steps * (0.4 + 0.02 * b) + 0.5 + 0.02 * b
    return cycle


def schedule_phases(steps: int):
    """The phases of schedule_cycle at batch size b (ms): the EAGLE3_PROF blocks' split."""
    def phases(b: int) -> dict:
        n = b * (steps + 1)
        return {"Draft steps": steps * (0.4 + 0.02 * b),
                "Target verify": 10.5 + 0.45 * n * (1 + n / 256), "Draft re-extend": 0.0,
                "Other overhead": 0.5 + 0.02 * b}
    return phases


def accept_dist_of(steps: int) -> tuple[float, ...]:
    """P(a drafts accepted), a = 0 … S, from the conditional rates SWEEP_ACCEPT."""
    reach = list(itertools.accumulate(SWEEP_ACCEPT[:steps], operator.mul))
    return tuple([1 - reach[0]] + [reach[i] - reach[i + 1] for i in range(steps - 1)] +
                 [reach[-1]])


def main() -> None:
    five = {"Draft steps": 0.95, "Target verify": 26.04, "Draft re-extend": 0.29,
            "Other overhead": 0.0}
    simulate("eagle3_5step.log", seed=5, port=30000,
             spec={"algorithm": "EAGLE3", "draft": "/models/llama-3.1-8b-eagle3", "steps": 5},
             cycle_ms=27.28, phases=five, accept_dist=(0.2, 0.4, 0.3, 0.1), prof_accept=1.14,
             requests=40,
             out_tokens=(160, 320), prof_prefix=False)
    two = {"Draft steps": 0.40, "Target verify": 25.22, "Draft re-extend": 0.28,
           "Other overhead": 0.0}
    simulate("eagle3_2step.log", seed=2, port=30001,
             spec={"algorithm": "EAGLE3", "draft": "/models/llama-3.1-8b-eagle3", "steps": 2},
             cycle_ms=25.90, phases=two, accept_dist=(0.25, 0.5, 0.25), prof_accept=1.02,
             requests=40,
             out_tokens=(160, 320), prof_prefix=True)
    simulate("baseline.log", seed=9, port=30002, spec=None, cycle_ms=11.1, phases=None,
             accept_dist=(1.0,), prof_accept=0.0, requests=40, out_tokens=(160, 320),
             prof_prefix=False)
    # a sweep of speculative_num_steps from a physical model that is not whatif's formula:
    # a position is accepted with a probability that falls with its depth (conditional rates
    # SWEEP_ACCEPT, not geometric), each draft step costs a little more than the one before
    # (0.19 + 0.01 (j − 1) ms: its KV grows), and the verify of K = S + 1 tokens is convex in
    # K (25.0 + 0.12 K + 0.02 K² ms: memory-bound, with attention over the K tokens)
    for steps in (1, 2, 3, 5, 7):
        reach = list(itertools.accumulate(SWEEP_ACCEPT[:steps], operator.mul))  # P(≥ i)
        dist = accept_dist_of(steps)
        k = steps + 1
        phases = {"Draft steps": round(0.19 * steps + 0.005 * steps * (steps - 1), 4),
                  "Target verify": round(25.0 + 0.12 * k + 0.02 * k * k, 4),
                  "Draft re-extend": 0.28, "Other overhead": 0.0}
        simulate(f"sweep/steps{steps}.log", seed=100 + steps, port=31000 + steps,
                 spec={"algorithm": "EAGLE3", "draft": "/models/llama-3.1-8b-eagle3",
                       "steps": steps},
                 cycle_ms=sum(phases.values()), phases=phases, accept_dist=tuple(dist),
                 prof_accept=sum(reach), requests=60,
                 out_tokens=(160, 320), prof_prefix=False)
    better = (0.1, 0.2, 0.35, 0.2, 0.1, 0.05)   # a stronger draft: accept len ≈ 3.15
    simulate_batches("batch_eagle3.log", seed=11, port=30003, accept_dist=better,
                     spec={"algorithm": "EAGLE3", "draft": "/models/llama-3.1-8b-eagle3",
                           "steps": 5})
    simulate_batches("batch_baseline.log", seed=12, port=30004, spec=None, accept_dist=(1.0,))
    # the same model and server at 1, 3 and 5 draft steps, each at batch sizes 1 … 32: the
    # evidence of `eaglelog schedule` (against batch_baseline.log)
    for steps in (1, 3, 5):
        simulate_batches(f"schedule/steps{steps}.log", seed=40 + steps, port=32000 + steps,
                         accept_dist=accept_dist_of(steps), cycle=schedule_cycle(steps),
                         spec={"algorithm": "EAGLE3", "draft": "/models/llama-3.1-8b-eagle3",
                               "steps": steps}, iters_per_batch=2400,
                         phases=schedule_phases(steps))
    vllm_sample("vllm_v1.log")
    # a vLLM sweep of num_speculative_tokens at three concurrency levels: evidence of
    # `eaglelog whatif` without a profiler (docs/whatif.md)
    for k in (1, 2, 3, 5):
        vllm_sweep(f"vllm_sweep/k{k}.log", k, seed=60 + k)


# A vLLM V1 server (current log format, vllm.md §3) with EAGLE, k = 3, 8 concurrent requests and
# a 10 s stats interval: per window, the number of drafts and of accepted draft tokens.  Windows
# 0, 6 and 15 hold prefill work (prompt throughput > 0); the window after index 18 comes after a
# 60 s idle gap (its lines were at DEBUG).  tests/test_vllm.py works the summary and break-even
# numbers out by hand from these lists.
VLLM_DRAFTS = [1600, 2000, 2010, 1990, 2005, 1995, 1700, 2002, 1998, 2004, 1996, 2001, 1999,
               2003, 1997, 1750, 2000, 2006, 1994, 2000, 2008, 1992, 2001, 1999,
               2004, 1996, 2002, 1998, 2000, 2006, 1680, 1994, 2003, 1997, 2001, 1999, 2005,
               1995, 1720, 2000, 2002, 1998, 2004, 1996, 2000, 2001, 1999, 2003]
VLLM_ACCEPTED = [2000, 3300, 3350, 3250, 3310, 3290, 2700, 3305, 3280, 3320, 3275, 3300, 3290,
                 3310, 3285, 2800, 3300, 3320, 3270, 3300, 3330, 3260, 3305, 3295,
                 3315, 3285, 3300, 3290, 3310, 3325, 2750, 3270, 3305, 3295, 3300, 3290, 3320,
                 3280, 2790, 3300, 3310, 3290, 3315, 3285, 3300, 3305, 3295, 3310]
VLLM_PREFILL = {0: 2400.0, 6: 812.8, 15: 640.0, 30: 700.0, 38: 660.0}
VLLM_IDLE_BEFORE = 19


def vllm_sample(name: str) -> None:
    k, running, interval = 3, 8, 10
    t = dt.datetime(2026, 2, 10, 14, 0, 10)
    pre = "(APIServer pid=4242) INFO"
    lines = [HEADER.replace("make_samples.py", "make_samples.py (vllm_sample)")]
    for i, (d, a) in enumerate(zip(VLLM_DRAFTS, VLLM_ACCEPTED)):
        if i == VLLM_IDLE_BEFORE:
            t += dt.timedelta(seconds=50)
        stamp = t.strftime("%m-%d %H:%M:%S")
        gen = (d + a) / interval                     # emitted = accepted + one bonus per draft
        kv = 2.0 + 0.1 * (i % 7)
        lines.append(f"{pre} {stamp} [loggers.py:248] Engine 000: Avg prompt throughput: "
                     f"{VLLM_PREFILL.get(i, 0.0):.1f} tokens/s, Avg generation throughput: "
                     f"{gen:.1f} tokens/s, Running: {running} reqs, Waiting: 0 reqs, "
                     f"GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: 0.0%\n")
        r = a / d
        pos = ", ".join(f"{r * c:.3f}" for c in (0.45, 0.33, 0.22))
        lines.append(f"{pre} {stamp} [metrics.py:188] SpecDecoding metrics: Mean acceptance "
                     f"length: {1 + r:.2f}, Accepted throughput: {a / interval:.2f} tokens/s, "
                     f"Drafted throughput: {k * d / interval:.2f} tokens/s, Accepted: {a} "
                     f"tokens, Drafted: {k * d} tokens, Per-position acceptance rate: {pos}, "
                     f"Avg Draft acceptance rate: {100 * a / (k * d):.1f}%\n")
        t += dt.timedelta(seconds=interval)
    with open(os.path.join(HERE, name), "w") as f:
        f.write("".join(lines))


VLLM_SWEEP_ACCEPT = (0.78, 0.68, 0.62, 0.57, 0.53)   # P(accept ≥ i | accept ≥ i − 1)


def vllm_sweep(name: str, k: int, seed: int) -> None:
    """A vLLM V1 server with EAGLE-3 at num_speculative_tokens k, its concurrency stepping
    2 → 8 → 24 (50 windows of 10 s each): a decode step of b requests takes 9.8 + 0.6 b ms of
    target floor and overhead, k draft steps of 0.35 + 0.015 b ms and a verify of n = b (k + 1)
    tokens at 0.4 n (1 + n / 300) ms; position i is accepted with the conditional rates
    VLLM_SWEEP_ACCEPT (falling with depth), drawn per draft. A prefill of 512 tokens takes
    60 ms: the first window of a level admits all its requests, later windows 0 – 2 that
    replace finished ones (printed as prompt throughput). No line comes from a real server."""
    rng = random.Random(seed)
    interval = 10.0
    t = dt.datetime(2026, 3, 4, 10, 0, 0)
    pre = "(APIServer pid=5151) INFO"
    lines = [HEADER.replace("make_samples.py", f"make_samples.py (vllm_sweep, k = {k})")]
    lines.append(f"{pre} {t:%m-%d %H:%M:%S} [utils.py:233] non-default args: {{'model': "
                 "'/models/llama-3.1-8b-instruct', 'tensor_parallel_size': 2, "
                 "'speculative_config': {'method': 'eagle3', 'model': "
                 f"'/models/llama-3.1-8b-eagle3', 'num_speculative_tokens': {k}}}}}\n")
    t += dt.timedelta(seconds=30)
    for level in (2, 8, 24):
        for w in range(50):
            n = level * (k + 1)
            step_ms = 9.8 + 0.6 * level + k * (0.35 + 0.015 * level) + 0.4 * n * (1 + n / 300)
            # new requests' prefill: the level's first window admits all of them, later
            # windows the ones that replace finished requests (0 – 2, 60 ms each)
            new = level if w == 0 else rng.choice((0, 0, 1, 1, 2))
            busy = interval - 0.06 * new
            steps = int(busy * 1000 / rng.gauss(step_ms, 0.005 * step_ms))
            drafts = steps * level
            # drafts reaching each position: binomial thinning, position by position
            counts, prev = [], drafts
            for i in range(k):
                q = VLLM_SWEEP_ACCEPT[i]
                c = round(rng.gauss(prev * q, math.sqrt(max(prev * q * (1 - q), 1e-9))))
                c = min(max(c, 0), prev)
                counts.append(c)
                prev = c
            acc = sum(counts)
            stamp = t.strftime("%m-%d %H:%M:%S")
            prompt = 512 * new / interval
            lines.append(f"{pre} {stamp} [loggers.py:248] Engine 000: Avg prompt throughput: "
                         f"{prompt:.1f} tokens/s, Avg generation throughput: "
                         f"{(drafts + acc) / interval:.1f} tokens/s, Running: {level} reqs, "
                         "Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: "
                         "0.0%\n")
            pos = ", ".join(f"{c / drafts:.3f}" for c in counts)
            lines.append(f"{pre} {stamp} [metrics.py:188] SpecDecoding metrics: Mean acceptance "
                         f"length: {1 + acc / drafts:.2f}, Accepted throughput: "
                         f"{acc / interval:.2f} tokens/s, Drafted throughput: "
                         f"{k * drafts / interval:.2f} tokens/s, Accepted: {acc} tokens, "
                         f"Drafted: {k * drafts} tokens, Per-position acceptance rate: {pos}, "
                         f"Avg Draft acceptance rate: {100 * acc / (k * drafts):.1f}%\n")
            t += dt.timedelta(seconds=interval)
    path = os.path.join(HERE, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("".join(lines))


def prof_readout(source: str = "eagle3_5step.log", name: str = "eagle3_prof8.log",
                 blocks: int = 8) -> None:
    """The profiler readout alone: the first ``blocks`` EAGLE3_PROF blocks of ``source`` (what
    `grep -A 9 EAGLE3_PROF` shows), nothing else."""
    out = [HEADER.replace("make_samples.py", f"make_samples.py (prof_readout: the first "
                                             f"{blocks} blocks of {source})")]
    lines = open(os.path.join(HERE, source), encoding="utf-8").read().splitlines(keepends=True)
    i = n = 0
    while i < len(lines) and n < blocks:
        if lines[i].startswith("EAGLE3_PROF"):
            j = i + 1
            while j < len(lines) and lines[j].startswith("  "):
                j += 1
            out.extend(lines[i:j] + ["\n"])
            n, i = n + 1, j
        else:
            i += 1
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        f.write("".join(out))


# the SGLang samples as SGLang 0.5.19 → prints its start-up: ``server_args={…}``, the dict of
# ``ServerArgs.resolved_dict()`` (sglang 0.5.19 srt/entrypoints/engine.py:265; 0.5.23
# engine.py:173–174 and 311), with ``attn_dp_size`` beside the deprecated ``enable_dp_attention``
SGLANG_SAMPLES = ("eagle3_5step.log", "eagle3_2step.log", "baseline.log", "batch_eagle3.log",
                  "batch_baseline.log", "schedule/steps1.log", "schedule/steps3.log",
                  "schedule/steps5.log", "sweep/steps1.log", "sweep/steps2.log",
                  "sweep/steps3.log", "sweep/steps5.log", "sweep/steps7.log")
NEW_SHAPE = "sglang-0.5.23"


def new_shape() -> None:
    """sample_logs/sglang-0.5.23/: every SGLang sample with its ServerArgs(…) line as a dict;
    every other line as it is (tests/test_server_args_dict.py: the same answers from both)."""
    sys.path.insert(0, os.path.dirname(HERE))
    from eaglelog.parsers.sglang import parse_server_args
    for name in SGLANG_SAMPLES:
        out = []
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            for line in f:
                i = line.find("server_args=ServerArgs(")
                if i >= 0:
                    args, whole = parse_server_args(line[i:])
                    assert whole, name
                    args["attn_dp_size"] = 2 if args.get("enable_dp_attention") else 1
                    line = line[:i] + "server_args=" + repr(args) + "\n"
                elif line.startswith("# SYNTHETIC LOG"):
                    line = line.rstrip("\n") + (" Rewritten in SGLang 0.5.23's start-up shape "
                                                 "(the config as a dict) by new_shape().\n")
                out.append(line)
        dest = os.path.join(HERE, NEW_SHAPE, name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as f:
            f.write("".join(out))


if __name__ == "__main__":
    main()
    prof_readout()
    new_shape()
