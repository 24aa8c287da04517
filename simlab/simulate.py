"""A request-level simulator of an SGLang EAGLE-3 server, with the truth behind its log.

    >>> from simlab.simulate import SCENARIOS, simulate
    >>> run = simulate(SCENARIOS["reference"], seed=1)
    >>> run.write("server.log")               # an SGLang v0.5.10-style log
    >>> run.truth.metrics().speedup           # what an estimator of that log should find

The model and the definitions of every true quantity are in docs/simulation.md.  In short:

* **Server.** A closed-loop benchmark (a client sends its next request when the previous one
  finished, after a think time) against SGLang's non-overlap scheduler loop
  (``Scheduler.event_loop_normal``): each loop iteration runs one prefill batch when requests are
  waiting and fit (prefill first), else one decode iteration of every running request.  A
  speculative decode iteration is one EAGLE cycle: draft steps, target verify, draft re-extend,
  other overhead.
* **Acceptance.** A chain of k = ``num_steps`` drafts; position j is accepted, given the ones
  before were, with probability sigmoid(logit q_j + d_r + x_i): q_j the per-position curve, d_r
  the request's difficulty, x_i a latent AR(1) level shared by the whole server at decode
  iteration i.  A verify that accepts a drafts commits a + 1 tokens (the bonus), capped by what
  the request still has to produce.
* **Time.** draft(B, k) + verify(B, k) + re-extend(B) + other(B), with noise, warm-up and a scale;
  the baseline step b(B) comes from the same hardware model (``Hardware``).  A prefill batch costs
  p0 + p1 × new tokens between decode iterations; idle time passes with no line at all.
* **Log.** Every line in SGLang's documented formats (shared/formats/sglang.md, eagle3_prof.md),
  computed the way the v0.5.10 scheduler computes it (``observability/scheduler_metrics_mixin.py``
  and ``managers/scheduler_output_processor_mixin.py`` of that tag).

Everything is seeded: ``simulate(scenario, seed)`` returns the same text and truth every time.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import heapq
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Hardware", "Scenario", "TruthSums", "TruthMetrics", "Truth", "SimLog", "simulate",
           "baseline_log", "stated_steps", "baseline_map", "SCENARIOS", "ramp", "PAIRS"]

PHASES = ("Draft steps", "Target verify", "Draft re-extend", "Other overhead")
START = _dt.datetime(2026, 3, 2, 14, 0, 0)
HEADER = ("# SYNTHETIC LOG written by simlab.simulate (scenario {name!r}, seed {seed}); "
          "every line is invented.\n")


# ----------------------------------------------------------------------------- the model

@dataclass(frozen=True)
class Hardware:
    """Milliseconds of work on the target GPU(s) for a batch of B requests.

    A target forward over n tokens costs ``fwd0 + fwd1 × n`` (a memory-bound floor plus a slope):
    the baseline step is a forward over B tokens plus ``other``; a verify is a forward over
    B × (k + 1) tokens.  Defaults: an 8B model on two GPUs (b(1) = 10.1 ms, b(8) = 11.1 ms,
    b(32) = 14.5 ms).
    """

    fwd0: float = 9.5          # floor of one target forward
    fwd1: float = 0.12         # per token in the forward
    draft0: float = 0.45       # per draft step
    draft1: float = 0.02       # per draft step and request
    extend0: float = 0.40      # draft re-extend
    extend1: float = 0.02      # per request
    extend_tok: float = 0.0    # per token committed in the iteration (re-extend runs over them)
    other0: float = 0.50       # scheduling, batch preparation, result processing
    other1: float = 0.02       # per request
    prefill0: float = 6.0      # per prefill batch (target + draft prefill)
    prefill1: float = 0.03     # per new prompt token (33k tokens/s)
    noise: tuple[float, float, float, float] = (0.01, 0.01, 0.01, 0.05)   # relative σ per phase

    def step_ms(self, b) -> np.ndarray:
        """b(B): one non-speculative decode step of B requests, noise-free."""
        b = np.asarray(b, dtype=float)
        return self.fwd0 + self.fwd1 * b + self.other0 + self.other1 * b

    def phases_ms(self, b: float, k: int) -> tuple[float, float, float, float]:
        """Noise-free (draft, verify, re-extend, other) of one cycle at batch size b."""
        return (k * (self.draft0 + self.draft1 * b), self.fwd0 + self.fwd1 * b * (k + 1),
                self.extend0 + self.extend1 * b, self.other0 + self.other1 * b)

    def cycle_ms(self, b: float, k: int) -> float:
        return float(sum(self.phases_ms(b, k)))


@dataclass(frozen=True)
class ConvexVerify(Hardware):
    """The same hardware with a verify that grows faster than linearly in the tokens it
    checks: + fwd2 ms × (batch × (k + 1))² (attention over the verified tokens, the compute
    roof coming near) — a shape the linear cost models of whatif do not have."""

    fwd2: float = 0.004

    def phases_ms(self, b: float, k: int) -> tuple[float, float, float, float]:
        d, v, e, o = super().phases_ms(b, k)
        return d, v + self.fwd2 * (b * (k + 1)) ** 2, e, o


@dataclass(frozen=True)
class TiledVerify(Hardware):
    """The same hardware with a target forward that costs by tiles of ``tile_tokens`` tokens:
    flat up to the first tile's end, + ``tile_ms`` for each tile begun after it (a kernel
    that pads to its tile) — a step no polynomial in the batch size follows."""

    tile_tokens: int = 64
    tile_ms: float = 5.0

    def _tiles(self, n) -> np.ndarray:
        return np.floor((np.maximum(np.asarray(n, dtype=float), 1) - 1) / self.tile_tokens)

    def step_ms(self, b) -> np.ndarray:
        b = np.asarray(b, dtype=float)
        return self.fwd0 + self.tile_ms * self._tiles(b) + self.other0 + self.other1 * b

    def phases_ms(self, b: float, k: int) -> tuple[float, float, float, float]:
        d, _, e, o = super().phases_ms(b, k)
        return d, float(self.fwd0 + self.tile_ms * self._tiles(b * (k + 1))), e, o


def ramp(lo: int, hi: int, duration_s: float, steps: int | None = None) -> tuple:
    """A client schedule growing from lo to hi clients in equal time steps."""
    levels = list(range(lo, hi + 1)) if steps is None else \
        sorted({int(round(x)) for x in np.linspace(lo, hi, steps)})
    return tuple((duration_s * i / len(levels), n) for i, n in enumerate(levels))


@dataclass(frozen=True)
class Scenario:
    """Everything a simulated run depends on besides its seed (docs/simulation.md)."""

    name: str = "custom"
    about: str = ""
    duration_s: float = 900.0
    start_idle_s: float = 1.0          # scheduler start → first request (inside window 1)
    # --- traffic: closed loop
    clients: tuple = ((0.0, 8),)       # (from second, number of clients), a step function
    random_clients: tuple | None = None   # (every_s, lo, hi): a new random level every every_s
    think_s: float = 0.0               # mean think time (exponential) after a reply
    client_latency_ms: float = 3.0     # HTTP + tokenisation before the scheduler sees it
    drain: bool = False                # after duration_s: finish running requests, else stop
    max_iters: int | None = None       # stop after this many decode iterations
    prompt_median: float = 400.0
    prompt_sigma: float = 0.6
    prompt_max: int = 8000
    output_median: float = 400.0
    output_sigma: float = 0.6
    output_alpha: float | None = None  # Pareto outputs: output_median is the least, this the
                                       # tail index (the same normal draw, through Φ)
    max_new_tokens: int = 2048
    cached_prefix: int = 0             # prefix-cache hits per request (after the first)
    max_running_requests: int = 48
    max_prefill_tokens: int = 16384
    kv_capacity: int = 400_000         # max_total_num_tokens: the token-usage denominator
    # --- speculation
    num_steps: int = 3
    accept_probs: tuple = (0.72,)      # P(position j accepted | all before accepted), j = 1..k
    adaptive_steps: tuple | None = None   # SGLang adaptive speculation: num_steps switches at
                                       # run time among these (num_steps is the first); each
                                       # configuration holds for an exponential number of
                                       # decode windows of mean adaptive_every
    adaptive_every: float = 10.0
    difficulty_sd: float = 0.4         # per request, logit scale
    drift_sd: float = 0.2              # stationary σ of the shared latent level, logit scale
    drift_rho: float = 0.3             # its correlation from one decode window to the next
    # --- time
    hw: Hardware = Hardware()
    cycle_scale: float = 1.0           # × every decode cycle (a slower or faster build)
    warmup_amp: float = 0.0            # cycle i × (1 + amp · exp(−i / warmup_iters))
    warmup_iters: float = 0.0
    outside_prof_ms: float = 0.0       # cycle time the profiler's phases do not see
    # --- the log
    decode_log_interval: int = 40
    tp_size: int = 2
    log_ms: bool = True                # SGLANG_LOG_MS=1: milliseconds in the prefix
    wrapper: str | None = None         # "docker": each line as `docker logs --timestamps` shows
                                       # it, RFC 3339 UTC with nanoseconds in front of the prefix
    wrapper_delay_ms: float = 0.3      # the wrapper stamps a line this long (mean, exponential)
                                       # after SGLang wrote it, never before the line before
    log_requests: bool = True          # Finish: lines
    lines: str = "all"                 # all | prof: the log holds the EAGLE3_PROF blocks and
                                       # nothing else (a profile pasted on its own); the truth
                                       # then covers the profiled cycles (docs/simulation.md §3)
    version: str = "0.5.10"            # line formats: "0.5.10" or "0.5.8"
    overlap: bool = False              # overlap scheduler; changes the log only with "0.5.8"
    # (≤ v0.5.8 print a Prefill line when it is scheduled, before the previous decode line;
    # v0.5.9 → print it after its forward, where it belongs: docs/simulation.md §1)
    cuda_graph_max_bs: int = 32
    prof_every: int = 0                # EAGLE3_PROF block every N cycles (0: none)
    prof_blocks: int | None = None     # stop profiling after this many blocks
    prof_prefix: bool = False          # blocks through the logger (prefixed) or print()
    prof_accept: str = "request0"      # request0 | request0_drafts | batch (docs/simulation.md)
    phase_means: tuple | None = None   # fixed (draft, verify, extend, other) ms, noise-free
    untrimmed_finish_drafts: bool = False   # v0.5.10's Finish-line draft count (see docs)
    model_path: str = "/models/llama-3.1-8b-instruct"
    draft_model_path: str = "/models/llama-3.1-8b-eagle3"
    # --- judgement
    target_speedup: float | None = None   # scale the stated baseline so the truth is this
    baseline: str = "toks"             # toks (one rate) | map (rate per batch size) | log
    baseline_toks: float | None = None  # a stated rate that is NOT the exact one (a mistake)
    baseline_clients: tuple | None = None   # client schedule of the baseline log
    truth_basis: str = "all"           # all | steady (warm-up left out of the truth)

    @property
    def k(self) -> int:
        return int(self.num_steps)

    @property
    def k_max(self) -> int:
        return max([self.k, *(self.adaptive_steps or ())])

    def accept_curve(self) -> np.ndarray:
        """P(position j accepted | all before it), j = 1 … k_max."""
        q = list(self.accept_probs)[:self.k_max]
        q += [q[-1]] * (self.k_max - len(q))
        return np.clip(np.asarray(q, dtype=float), 1e-6, 1 - 1e-6)

    def replace(self, **kw) -> "Scenario":
        return dataclasses.replace(self, **kw)


# ----------------------------------------------------------------------------- the truth

@dataclass(frozen=True)
class TruthMetrics:
    """True values of one run (or a pool of runs) against a per-batch-size baseline step."""

    iterations: int
    req_steps: float
    tau: float                  # Σ T_i / Σ B_i: tokens per request-verify, bonus included
    cycle_ms: float             # Σ B_i c_i / Σ B_i: pure decode cycle, request-step weighted
    cycle_ms_iter: float        # Σ c_i / n: per iteration (what EAGLE3_PROF TOTAL averages)
    step_ms: float              # Σ B_i s(B_i) / Σ B_i: baseline step, request-step weighted
    rate_spec: float            # 1000 Σ T_i / Σ B_i c_i: tok/s one request stream gets
    rate_base: float            # 1000 Σ B_i / Σ B_i s(B_i): the same without speculation
    speedup: float              # rate_spec / rate_base = tau × step_ms / cycle_ms
    breakeven_accept_len: float  # cycle_ms / step_ms

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class TruthSums:
    """Sums over decode iterations by batch size b (index b = 0 … max): iterations n_b, tokens
    committed Σ T_i, and Σ c_i.  Request-steps are b × n_b.  Sums of runs add (``+``)."""

    iters: np.ndarray
    tokens: np.ndarray
    cycle_ms: np.ndarray

    def __add__(self, other: "TruthSums") -> "TruthSums":
        n = max(len(self.iters), len(other.iters))

        def pad(a):
            return np.pad(a, (0, n - len(a)))
        return TruthSums(pad(self.iters) + pad(other.iters), pad(self.tokens) + pad(other.tokens),
                         pad(self.cycle_ms) + pad(other.cycle_ms))

    @property
    def sizes(self) -> np.ndarray:
        return np.arange(len(self.iters), dtype=float)

    def shares(self) -> dict[int, float]:
        """Request-step share of each batch size."""
        rs = self.sizes * self.iters
        tot = rs.sum()
        return {int(b): float(rs[b] / tot) for b in np.flatnonzero(rs)} if tot else {}

    def metrics(self, step_ms: np.ndarray | Callable | None = None,
                sizes: set | None = None) -> TruthMetrics:
        """The true values; ``step_ms`` is the baseline step per batch size (an array indexed
        by b, or a function of b; default: none, speedup NaN); ``sizes`` restricts to those
        batch sizes."""
        b = self.sizes
        keep = np.ones(len(b), dtype=bool) if sizes is None else np.isin(b, list(sizes))
        n, tok, cyc = self.iters * keep, self.tokens * keep, self.cycle_ms * keep
        rs = float(np.sum(b * n))
        if step_ms is None:
            s = np.full(len(b), np.nan)
        elif callable(step_ms):
            s = np.asarray(step_ms(b), dtype=float)
        else:
            s = np.pad(np.asarray(step_ms, dtype=float), (0, max(0, len(b) - len(step_ms))),
                       constant_values=np.nan)[:len(b)]
        with np.errstate(invalid="ignore", divide="ignore"):
            used = n > 0
            bs = float(np.sum((b * n * s)[used]))
            tau = float(tok.sum() / rs) if rs else math.nan
            cyc_rs = float(np.sum(b * cyc) / rs) if rs else math.nan
            step = bs / rs if rs else math.nan
            rate_spec = 1000.0 * float(tok.sum()) / float(np.sum(b * cyc)) if rs else math.nan
            rate_base = 1000.0 * rs / bs if rs else math.nan
        return TruthMetrics(int(n.sum()), rs, tau, cyc_rs,
                            float(cyc.sum() / n.sum()) if n.sum() else math.nan, step,
                            rate_spec, rate_base, rate_spec / rate_base, cyc_rs / step)

    def by_bucket(self, step_ms=None, pow2: bool | None = None) -> dict[str, tuple]:
        """{label: (TruthMetrics, request-step share)} per batch-size bucket: each size when
        there are at most 16 (or pow2=False), else powers of two ('4–7'), the labels of
        eaglelog's ``bucket_labels``.  The truth buckets iterations by their own batch size;
        a log's windows can only be bucketed by the #running-req of their last iteration."""
        sizes = [int(b) for b in np.flatnonzero(self.iters) if b > 0]
        if pow2 is None:
            pow2 = len(sizes) > 16
        groups: dict[str, set] = {}
        for b in sizes:
            lo = 1 << (b.bit_length() - 1) if pow2 else b
            label = str(lo) if not pow2 or lo == 1 else f"{lo}–{2 * lo - 1}"
            groups.setdefault(label, set()).add(b)
        shares = self.shares()
        return {lab: (self.metrics(step_ms, g), sum(shares[b] for b in g))
                for lab, g in groups.items()}

    def conditional(self, pop: "TruthSums") -> "TruthSums":
        """This run's batch-size mix with the population's per-batch-size values (τ_b and the
        mean cycle c̄_b of ``pop``): the estimand of a run whose occupancy is its own but whose
        acceptance and timing noise are not (docs/simulation.md, 'which truth').  A batch size
        the population lacks (one seen only in a warm-up left out of it) keeps this run's own
        values."""
        n = len(self.iters)
        p = pop + TruthSums(np.zeros(n), np.zeros(n), np.zeros(n))
        have = p.iters[:n] > 0
        its = np.maximum(np.where(have, p.iters[:n], self.iters), 1)
        per_tok = np.where(have, p.tokens[:n], self.tokens) / its
        per_cyc = np.where(have, p.cycle_ms[:n], self.cycle_ms) / its
        return TruthSums(self.iters.copy(), self.iters * per_tok, self.iters * per_cyc)


@dataclass
class Truth:
    """What really happened in a simulated run (docs/simulation.md).

    ``sums`` cover the decode iterations of the printed windows (the log says nothing about the
    tail after the last ``Decode batch`` line), or with ``lines="prof"`` the profiled cycles
    (the iterations inside the EAGLE3_PROF blocks); ``steady`` the same without the warm-up.
    ``windows`` has one row per printed decode line; ``blocks`` one per EAGLE3_PROF block;
    ``iterations`` (kept with ``keep_arrays``) one per decode iteration."""

    scenario: str
    seed: int
    k: int
    interval: int
    sums: TruthSums
    steady: TruthSums
    hw_step_ms: np.ndarray            # b(B) of the hardware model, index B
    windows: dict[str, np.ndarray]
    blocks: dict[str, np.ndarray]
    requests: int                     # Finish lines printed
    warmup_end: int                   # first steady decode iteration
    iterations: dict[str, np.ndarray] | None = field(default=None, repr=False)
    by_k: dict[int, TruthSums] | None = None   # adaptive runs: ``sums`` of each num_steps

    def metrics(self, mu: float = 1.0, steady: bool = False,
                sizes: set | None = None) -> TruthMetrics:
        """True values against the hardware baseline sped up by ``mu`` (stated step
        b(B) / mu; 1: the hardware's own)."""
        return (self.steady if steady else self.sums).metrics(self.hw_step_ms / mu, sizes)

    @property
    def tau(self) -> float:
        return self.sums.metrics().tau


@dataclass
class SimLog:
    scenario: Scenario
    seed: int
    lines: list[str]
    truth: Truth
    speculative: bool = True

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def write(self, path) -> str:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.writelines(self.lines)
        return str(path)


# ----------------------------------------------------------------------------- the engine

class _Req:
    __slots__ = ("rid", "client", "arrive", "prompt", "cached", "out_len", "stop", "diff",
                 "start", "n", "end", "tok", "araw")


class _Sim:
    """One run.  Per decode iteration i (global arrays): B[i] requests, T[i] tokens committed,
    C[i] cycle ms, KV[i] KV slots in use after it, TEND[i] its end time, Q[i] queue length."""

    def __init__(self, sc: Scenario, seed: int, speculative: bool, noise: bool, step_scale: float,
                 keep_arrays: bool):
        self.sc, self.seed, self.spec, self.noise_on = sc, seed, speculative, noise
        self.step_scale = step_scale
        self.keep = keep_arrays
        ss = np.random.SeedSequence([seed, _name_key(sc.name)])
        # separate streams: a knob that changes one (think time) leaves the others alone
        # (a sixth stream for the wrapper's delays: the first five are what they were)
        r_lat, r_noise, r_req, r_acc, r_cli, self.r_wrap, self.r_ada = (
            np.random.default_rng(s) for s in ss.spawn(7))
        self.r_req, self.r_acc, self.r_cli, self.r_noise, self.r_lat = r_req, r_acc, r_cli, \
            r_noise, r_lat
        self.k = sc.k_max if speculative else 0     # the trajectories' columns
        self.K = sc.k + 1
        self.adaptive = bool(speculative and sc.adaptive_steps)
        self.ada_left = 0                           # iterations left in the current config
        self.interval = int(sc.decode_log_interval)
        self.logit_q = np.log(sc.accept_curve() / (1 - sc.accept_curve()))
        self.cap = 0
        self.phase_cache: dict[int, np.ndarray] = {}
        self.Z: list[float] = []
        self.z_at = 0
        self.n_rid = 0
        self.rid_key = _name_key(sc.name) ^ (seed * 0x2545F491)
        iters = int(sc.duration_s * 1000 / max(self._min_cycle(), 1e-3) * 1.2)
        if sc.max_iters is not None:
            iters = min(iters, sc.max_iters)
        self._grow(iters + 4 * self.interval + sc.max_new_tokens + 64)
        self.lines: list[str] = []
        self._stamp_sec = -1
        self._stamp_txt = ""
        self._wrap_last = -math.inf            # the wrapper's last stamp (ms)
        self.tags = " TP0" if sc.tp_size > 1 else ""
        # window bookkeeping (per printed decode line)
        self.win: dict[str, list] = {k: [] for k in (
            "line_no", "end_iter", "running_req", "tokens", "req_steps", "wall_ms", "decode_ms",
            "prefill_ms", "idle_ms", "new_tokens", "accept_len", "gen_throughput")}
        self.blk: dict[str, list] = {k: [] for k in (
            "line_no", "end_iter", "cycles", "tok", "total_ms", "tokens", "req_steps")}
        self.pre_ms: dict[int, float] = {}     # window index -> prefill ms inside it
        self.idle_ms: dict[int, float] = {}
        self.pre_lines: dict[int, int] = {}    # window index (by line position) -> lines
        self.pre_tok: dict[int, int] = {}
        self.pre_n: dict[int, int] = {}        # window index -> prefill batches inside it
        self.finished = 0
        self.prof_done = 0
        self.prof_text: list[list[str]] = []   # each block's lines, as written

    # ----------------------------------------------------------------- arrays
    def _min_cycle(self) -> float:
        sc = self.sc
        if not self.spec:
            return float(sc.hw.step_ms(1)) / self.step_scale
        return sc.hw.cycle_ms(1, sc.k) * sc.cycle_scale * 0.9

    def _grow(self, need: int) -> None:
        if need <= self.cap:
            return
        new = max(need, 2 * self.cap)
        old = self.cap
        sc = self.sc
        # the latent acceptance level: AR(1), correlation drift_rho from one window to the next
        phi = sc.drift_rho ** (1.0 / self.interval) if sc.drift_rho > 0 else 0.0
        prev = float(self.x[old - 1]) if old else self.r_lat.standard_normal() * sc.drift_sd
        x = _ar1(self.r_lat.standard_normal(new - old) * sc.drift_sd * math.sqrt(1 - phi * phi),
                 phi, prev) if phi > 0 else self.r_lat.standard_normal(new - old) * sc.drift_sd
        # per-phase cycle noise, pre-multiplied by its σ (rows: draft, verify, extend, other)
        nz = sc.hw.noise if (self.noise_on and sc.phase_means is None) else (0.0,) * 4
        noise = self.r_noise.standard_normal((4, new - old)) * np.asarray(nz, dtype=float)[:, None]
        # one uniform per verify (its accepted drafts by inversion) and per request draws
        self.U = np.concatenate([self.U[self.u_at:], self.r_acc.random(new - old + 4096)]) \
            if old else self.r_acc.random(new + 4096)
        self.u_at = 0
        def ext(name, dtype, fill=0):
            a = np.full(new, fill, dtype=dtype)
            if old:
                a[:old] = getattr(self, name)
            setattr(self, name, a)
        for name, dtype in (("B", np.int32), ("T", np.int64), ("KV", np.int64), ("C", float),
                            ("TEND", float), ("Q", np.int32), ("R0", np.int64)):
            ext(name, dtype)
        ext("KP", np.int32, self.sc.k if self.spec else 0)
        if self.adaptive:               # the configuration path, drawn ahead of the traffic
            kp = self.KP
            at = old
            cur = int(kp[old - 1]) if old else self.sc.k
            while at < new:
                if self.ada_left <= 0:
                    if at:
                        cur = int(self.r_ada.choice([k for k in self.sc.adaptive_steps
                                                     if k != cur]))
                    self.ada_left = max(1, int(round(self.r_ada.exponential(
                        self.sc.adaptive_every * self.interval))))
                n = min(self.ada_left, new - at)
                kp[at:at + n] = cur
                at += n
                self.ada_left -= n
        if self.sc.prof_every:
            for name in ("PD", "PV", "PE", "PO"):
                ext(name, float)
        self.x = np.concatenate([self.x[:old], x]) if old else x
        self.N = np.concatenate([self.N[:, :old], noise], axis=1) if old else noise
        self.cap = new

    def uniforms(self, n: int) -> np.ndarray:
        if self.u_at + n > len(self.U):
            self.U = np.concatenate([self.U[self.u_at:], self.r_acc.random(max(n, 1 << 16))])
            self.u_at = 0
        u = self.U[self.u_at:self.u_at + n]
        self.u_at += n
        return u

    def normals(self) -> float:
        if self.z_at >= len(self.Z):
            self.Z = self.r_req.standard_normal(4096).tolist()
            self.z_at = 0
        self.z_at += 1
        return self.Z[self.z_at - 1]

    # ----------------------------------------------------------------- lines
    def stamp(self, t_ms: float, tags: str | None = None) -> str:
        sec = int(t_ms // 1000)
        if sec != self._stamp_sec:
            self._stamp_sec = sec
            self._stamp_txt = (START + _dt.timedelta(seconds=sec)).strftime("%Y-%m-%d %H:%M:%S")
        ms = f".{int(t_ms - sec * 1000):03d}" if self.sc.log_ms else ""
        return f"[{self._stamp_txt}{ms}{self.tags if tags is None else tags}] "

    def emit(self, t_ms: float, msg: str, tags: str | None = None) -> int:
        self.lines.append(self.wrap(t_ms, self.stamp(t_ms, tags) + msg + "\n"))
        return len(self.lines)

    def wrap(self, t_ms: float, line: str) -> str:
        """``line`` as the wrapper shows it (``Scenario.wrapper``), written at ``t_ms``."""
        if self.sc.wrapper != "docker":
            return line
        # read from the container's stdout after a short delay, in order; UTC (the simulated
        # host's clock is UTC+1): only differences of these stamps mean anything
        w = max(self._wrap_last, t_ms + self.r_wrap.exponential(self.sc.wrapper_delay_ms))
        self._wrap_last = w
        at = START - _dt.timedelta(hours=1) + _dt.timedelta(milliseconds=w)
        ns = int(w * 1e6) % 1000                  # below the microsecond
        return at.strftime("%Y-%m-%dT%H:%M:%S.%f") + f"{ns:03d}Z " + line

    # ----------------------------------------------------------------- requests
    def new_request(self, client: int, arrive: float, n: int) -> _Req:
        sc = self.sc
        r = _Req()
        self.n_rid += 1
        h = (self.rid_key * 0x9E3779B97F4A7C15 + self.n_rid * 0xBF58476D1CE4E5B9) % (1 << 64)
        r.rid = f"{h:016x}"
        r.client, r.arrive = client, arrive
        r.prompt = min(max(int(round(sc.prompt_median * math.exp(sc.prompt_sigma *
                                                                  self.normals()))), 16),
                       sc.prompt_max)
        z = self.normals()
        if sc.output_alpha:
            u = 0.5 * math.erfc(-z / math.sqrt(2))            # Φ(z), uniform on (0, 1)
            want = int(round(sc.output_median * (1 - u) ** (-1 / sc.output_alpha))) \
                if u < 1 else sc.max_new_tokens
        else:
            want = int(round(sc.output_median * math.exp(sc.output_sigma * z)))
        r.stop = want < sc.max_new_tokens
        r.out_len = min(max(want, 2), sc.max_new_tokens)
        r.cached = min(sc.cached_prefix, r.prompt - 1) if n > 0 else 0
        r.diff = self.normals() * sc.difficulty_sd
        return r

    def trajectory(self, r: _Req, s: int) -> None:
        """Accepted drafts and committed tokens of every verify of r, which runs in every decode
        iteration from s until it has its out_len tokens (the first came from the prefill)."""
        need = r.out_len - 1
        self._grow(s + need + 2)
        if self.k == 0:
            a = np.zeros(need, dtype=np.int64)
        else:
            guess = min(need, int(need / 2.0) + 16)
            while True:
                # P(a ≥ j) = Π_{i ≤ j} p_i: one uniform per verify, a = #{j : u < P(a ≥ j)}
                z = self.x[s:s + guess] + r.diff
                surv = np.cumprod(1.0 / (1.0 + np.exp(-(z[:, None] + self.logit_q))), axis=1)
                a = (self.uniforms(guess)[:, None] < surv).sum(axis=1)
                if self.adaptive:            # (u < P(a ≥ j) is monotone in j: capping the count
                    a = np.minimum(a, self.KP[s:s + guess])   # at k(i) drafts only k(i))
                if guess >= need or a.sum() + guess >= need:
                    break
                guess = min(need, guess * 2)
        cum = np.cumsum(a + 1)
        n = int(cum.searchsorted(need)) + 1
        tok = a[:n] + 1
        tok[-1] -= int(cum[n - 1]) - need
        r.start, r.n, r.end = s, n, s + n - 1
        r.tok, r.araw = tok, a[:n]
        self.B[s:s + n] += 1
        self.T[s:s + n] += tok
        if n > 1:   # released in the iteration that finishes it (before the decode line)
            self.KV[s:s + n - 1] += cum[:n - 1] + (r.prompt + 1)

    # ----------------------------------------------------------------- time
    def cycles(self, it: int, m: int, b: int) -> np.ndarray:
        sc = self.sc
        sl = slice(it, it + m)
        if not self.spec:
            return np.full(m, float(sc.hw.step_ms(b)) / self.step_scale)
        if self.adaptive:
            ks = self.KP[sl]
            ph = np.stack([self._phases(b, int(k)) for k in ks], axis=1)   # (4, m)
        else:
            ph = self._phases(b, sc.k)
        warm = None
        if sc.warmup_amp and sc.warmup_iters and it < 40 * sc.warmup_iters:
            warm = sc.cycle_scale * (1 + sc.warmup_amp *
                                     np.exp(-np.arange(it, it + m) / sc.warmup_iters))
        if sc.prof_every or sc.hw.extend_tok or ph.ndim == 2:
            N = self.N[:, sl]
            parts = (ph if ph.ndim == 2 else ph[:, None]) * (1.0 + N)
            if sc.hw.extend_tok:
                parts[2] += sc.hw.extend_tok * self.T[sl] * (1.0 + N[2])
            parts *= sc.cycle_scale if warm is None else warm
            if sc.prof_every:
                self.PD[sl], self.PV[sl], self.PE[sl], self.PO[sl] = parts
            return parts.sum(axis=0) + sc.outside_prof_ms
        c = ph.sum() + ph @ self.N[:, sl]
        c *= sc.cycle_scale if warm is None else warm
        if sc.outside_prof_ms:
            c += sc.outside_prof_ms
        return c

    def _phases(self, b: int, k: int) -> np.ndarray:
        ph = self.phase_cache.get((b, k))
        if ph is None:
            ph = self.phase_cache[(b, k)] = np.asarray(
                self.sc.phase_means or self.sc.hw.phases_ms(b, k), dtype=float)
        return ph

    # ----------------------------------------------------------------- the loop
    def run(self) -> None:
        sc = self.sc
        self.emit(0.0, "Launching the server (synthetic, simlab.simulate).", "")
        self.emit(0.0, server_args_line(sc, self.spec), "")
        if self.spec and sc.k > 0:
            self.emit(0.0, "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 "
                           "when speculative_eagle_topk == 1", "")
        self.emit(0.0, "The server is fired up and ready to roll!", "")
        end_ms = sc.duration_s * 1000.0
        t0 = sc.start_idle_s * 1000.0
        sched = self.schedule()
        heap: list = []
        seq = 0
        for ts, n in sched:
            heapq.heappush(heap, (ts * 1000.0 + t0, seq, "activate", n))
            seq += 1
        busy: set[int] = set()
        level = 0
        waiting: deque[_Req] = deque()
        running: list[_Req] = []
        pending_fin = 0          # finished in the last decode, not yet filtered
        kv_pending = 0           # KV of requests prefilled since the last decode iteration
        n_req = 0
        next_end = 1 << 62       # the first iteration in which a running request finishes
        t, it = 0.0, 0
        self.last_log_t = 0.0    # scheduler init: last_decode_stats_tic
        self.last_pre_t = 0.0
        self.last_pre_tok = 0
        self.last_decode_line = None   # (index in lines, iteration) of the newest decode line
        lat = sc.client_latency_ms

        def next_request(c, at):
            nonlocal seq
            if not sc.drain or at < end_ms:
                heapq.heappush(heap, (at, seq, "request", c))
                seq += 1
                busy.add(c)
            else:
                busy.discard(c)

        while True:
            while heap and heap[0][0] <= t:
                ta, _, kind, arg = heapq.heappop(heap)
                if kind == "activate":
                    level = arg
                    for c in range(level):
                        if c not in busy:
                            next_request(c, ta + lat)
                else:
                    waiting.append(self.new_request(arg, ta, n_req))
                    n_req += 1
            if (not sc.drain and t >= end_ms) or (sc.max_iters is not None and
                                                   it >= sc.max_iters):
                break
            if waiting and len(running) + pending_fin < sc.max_running_requests:
                room = sc.max_running_requests - len(running) - pending_fin
                admit, budget = [], sc.max_prefill_tokens
                while waiting and len(admit) < room:
                    new = waiting[0].prompt - waiting[0].cached
                    if admit and new > budget:
                        break
                    admit.append(waiting.popleft())
                    budget -= new
                new_tok = sum(r.prompt - r.cached for r in admit)
                cost = sc.hw.prefill0 + sc.hw.prefill1 * new_tok
                w = it // self.interval
                kv_before = (int(self.KV[it - 1]) if it > 0 else 0) + kv_pending
                kv_pending += sum(r.prompt + 1 for r in admit)
                at_sched = t
                t += cost
                self.pre_ms[w] = self.pre_ms.get(w, 0.0) + cost
                self.pre_n[w] = self.pre_n.get(w, 0) + 1
                self.pre_tok[w] = self.pre_tok.get(w, 0) + new_tok
                self.prefill_line(admit, new_tok, len(running) + pending_fin, len(waiting),
                                  kv_before, kv_before + sum(r.prompt + 1 for r in admit),
                                  at_sched, t, it)
                for r in admit:
                    self.trajectory(r, it)
                    next_end = min(next_end, r.end)
                running.extend(admit)
                continue
            if running:
                b = len(running)
                pending_fin = kv_pending = 0
                m = next_end - it + 1
                if sc.max_iters is not None:
                    m = min(m, sc.max_iters - it)
                c = self.cycles(it, m, b)
                cum = t + np.cumsum(c)
                limit = min(heap[0][0] if heap else math.inf, math.inf if sc.drain else end_ms)
                if cum[-1] >= limit:
                    m = int(np.searchsorted(cum, limit)) + 1
                    c, cum = c[:m], cum[:m]
                sl = slice(it, it + m)
                self.C[sl], self.TEND[sl], self.Q[sl] = c, cum, len(waiting)
                if sc.prof_every:
                    r0 = running[0]
                    if sc.prof_accept == "request0":
                        self.R0[sl] = r0.tok[it - r0.start:it - r0.start + m]
                    elif sc.prof_accept == "request0_drafts":
                        self.R0[sl] = r0.tok[it - r0.start:it - r0.start + m] - 1
                    else:
                        self.R0[sl] = self.T[sl]
                self.decode_lines(it, it + m)
                t = float(cum[-1])
                it += m
                done = [r for r in running if r.end == it - 1] if next_end == it - 1 else None
                if done:
                    running = [r for r in running if r.end != it - 1]
                    next_end = min((r.end for r in running), default=1 << 62)
                    pending_fin = len(done)
                    for r in done:
                        self.finish_line(r, t)
                        think = self.r_cli.exponential(sc.think_s) * 1000.0 if sc.think_s else 0.0
                        if r.client < level:
                            next_request(r.client, t + lat + think)
                        else:
                            busy.discard(r.client)
                continue
            pending_fin = 0          # an idle loop filters the finished requests out
            nxt = heap[0][0] if heap else math.inf
            stop = math.inf if sc.drain else end_ms
            if not math.isfinite(nxt) or nxt >= stop:
                if not sc.drain and t < end_ms:
                    self.idle_ms[it // self.interval] = self.idle_ms.get(it // self.interval,
                                                                         0.0) + end_ms - t
                break
            w = it // self.interval
            self.idle_ms[w] = self.idle_ms.get(w, 0.0) + nxt - t
            t = nxt
        self.n_iter = it

    def schedule(self) -> list[tuple[float, int]]:
        sc = self.sc
        if sc.random_clients is None:
            return [(float(a), int(b)) for a, b in sc.clients]
        every, lo, hi = sc.random_clients
        n = int(math.ceil(sc.duration_s / every))
        levels = self.r_cli.integers(lo, hi + 1, size=n)
        return [(i * every, int(v)) for i, v in enumerate(levels)]

    # ----------------------------------------------------------------- line writers
    def prefill_line(self, admit, new_tok, running, queue, kv_before, kv_after, t_sched, t_end,
                     it) -> None:
        sc = self.sc
        cached = sum(r.cached for r in admit)
        head = (f"Prefill batch, #new-seq: {len(admit)}, #new-token: {new_tok}, "
                f"#cached-token: {cached}, ")
        if sc.version == "0.5.8":      # printed when scheduled (get_new_batch_prefill)
            msg = (head + f"token usage: {kv_before / sc.kv_capacity:.2f}, #running-req: "
                   f"{running}, #queue-req: {queue}, ")
            at = t_sched
        else:                          # v0.5.9 →: printed after the forward
            gap = (t_end - self.last_pre_t) / 1000.0
            thr = self.last_pre_tok / gap if gap > 0 else 0.0
            self.last_pre_t, self.last_pre_tok = t_end, new_tok
            msg = (head + f"token usage: {kv_after / sc.kv_capacity:.2f}, #running-req: "
                   f"{running}, #queue-req: {queue}, cuda graph: False, input throughput "
                   f"(token/s): {thr:.2f}")
            at = t_end
        line = self.wrap(at, self.stamp(at) + msg + "\n")
        last = self.last_decode_line
        if sc.overlap and sc.version == "0.5.8" and last is not None and last[1] == it - 1:
            # overlap, ≤ v0.5.8: the prefill is scheduled (and its line printed) before the
            # previous decode batch's result is processed (and its decode line printed); its
            # GPU time comes after that decode line, in the next window
            pos = last[0]
            self.lines.insert(pos, line)
            self.last_decode_line = (pos + 1, last[1], last[2])
            self.win["line_no"][last[2]] += 1     # the moved decode line (nothing else moves:
            # the Finish lines after it point nowhere in the truth)
            w_line = (it // self.interval) - 1
        else:
            self.lines.append(line)
            w_line = it // self.interval
        self.pre_lines[w_line] = self.pre_lines.get(w_line, 0) + 1

    def decode_lines(self, lo: int, hi: int) -> None:
        sc, I = self.sc, self.interval
        first = ((lo // I) + 1) * I - 1        # the first logging iteration ≥ lo
        pe = sc.prof_every
        events = []
        if pe and (sc.prof_blocks is None or self.prof_done < sc.prof_blocks):
            j = ((lo // pe) + 1) * pe - 1
            while j < hi:
                events.append((j, 0))
                j += pe
        j = first
        while j < hi:
            events.append((j, 1))
            j += I
        if self.adaptive:
            kp = self.KP
            for j in np.flatnonzero(kp[max(lo, 1):hi] != kp[max(lo, 1) - 1:hi - 1]) + max(lo, 1):
                events.append((int(j), -1))
        events.sort()
        for i, kind in events:
            if kind == -1:
                self.spec_params_line(i)
                continue
            if kind == 0:
                if sc.prof_blocks is not None and self.prof_done >= sc.prof_blocks:
                    continue
                self.prof_block(i)
            else:
                self.decode_line(i)

    def spec_params_line(self, i: int) -> None:
        """SGLang's 'Adaptive spec params updated: steps A -> B (ema_accept_len=X)' (v0.5.11 →,
        speculative/adaptive_spec_params.py), printed when iteration i is the first with the
        new steps (at the end of the one before it)."""
        lo = max(0, i - self.interval)
        ema = float(self.T[lo:i].sum()) / max(float(self.B[lo:i].sum()), 1.0)
        at = float(self.TEND[i - 1])
        self.emit(at, f"Adaptive spec params updated: steps {int(self.KP[i - 1])} -> "
                      f"{int(self.KP[i])} (ema_accept_len={ema:.2f})")

    def decode_line(self, i: int) -> None:
        sc, I = self.sc, self.interval
        sl = slice(i - I + 1, i + 1)
        tok = int(self.T[sl].sum())
        rs = int(self.B[sl].sum())
        t = float(self.TEND[i])
        wall = t - self.last_log_t
        self.last_log_t = t
        gen = tok / (wall / 1000.0)
        b = int(self.B[i])
        kv = int(self.KV[i])
        msg = (f"Decode batch, #running-req: {b}, #token: {kv}, "
               f"token usage: {kv / sc.kv_capacity:.2f}, ")
        al = math.nan
        if self.spec:
            al = tok / rs
            K = int(self.KP[i]) + 1 if self.adaptive else self.K   # (v0.5.13 →: the running K)
            msg += f"accept len: {al:.2f}, accept rate: {tok / (rs * K):.2f}, "
        msg += (f"cuda graph: {b <= sc.cuda_graph_max_bs}, gen throughput (token/s): {gen:.2f}, "
                f"#queue-req: {int(self.Q[i])}")
        if sc.version == "0.5.8":
            msg += ", "
        no = self.emit(t, msg)
        w = i // I
        win = self.win
        self.last_decode_line = (no - 1, i, len(win["line_no"]))
        win["line_no"].append(no)
        win["end_iter"].append(i)
        win["running_req"].append(b)
        win["tokens"].append(tok)
        win["req_steps"].append(rs)
        win["wall_ms"].append(wall)
        win["decode_ms"].append(float(self.C[sl].sum()))
        win["prefill_ms"].append(self.pre_ms.get(w, 0.0))
        win["idle_ms"].append(self.idle_ms.get(w, 0.0))
        win["new_tokens"].append(self.pre_tok.get(w, 0))
        win["accept_len"].append(al)
        win["gen_throughput"].append(gen)

    def prof_block(self, i: int) -> None:
        sc = self.sc
        n = sc.prof_every
        sl = slice(i - n + 1, i + 1)
        ph = [float(a[sl].mean()) for a in (self.PD, self.PV, self.PE, self.PO)]
        total = sum(ph)
        tok = int(self.R0[sl].sum())
        acc = tok / n
        tot_p = round(total, 2)
        block = [f"EAGLE3_PROF ({n} cycles, {tok} tok, no sync)"]
        for label, v in zip(PHASES, ph):
            block.append(f"  {label + ':':<18}{v:6.2f} ms/cyc  ({100 * v / total:5.1f}%)")
        block += [f"  {'TOTAL:':<18}{tot_p:6.2f} ms/cyc", f"  Accept len:      {acc:.2f}",
                  f"  Eff tok/s:       {1000 * acc / total:.1f}"]
        at = float(self.TEND[i])
        pre = self.stamp(at) if sc.prof_prefix else ""
        text = [self.wrap(at, pre + x + "\n") for x in block]
        if not sc.prof_prefix:
            text.append(self.wrap(at, "\n"))
        self.lines.extend(text)
        self.prof_text.append(text)
        self.prof_done += 1
        blk = self.blk
        blk["line_no"].append(len(self.lines) - len(block) - (0 if sc.prof_prefix else 1) + 1)
        blk["end_iter"].append(i)
        blk["cycles"].append(n)
        blk["tok"].append(tok)
        blk["total_ms"].append(total)
        blk["tokens"].append(int(self.T[sl].sum()))
        blk["req_steps"].append(int(self.B[sl].sum()))

    def finish_line(self, r: _Req, t: float) -> None:
        self.finished += 1
        if not self.sc.log_requests:
            return
        sc = self.sc
        fr = ("{'type': 'stop', 'matched': 128009}" if r.stop else
              f"{{'type': 'length', 'length': {sc.max_new_tokens}}}")
        meta = (f"{{'id': '{r.rid}', 'finish_reason': {fr}, 'prompt_tokens': {r.prompt}, "
                f"'weight_version': 'default', 'total_retractions': 0, "
                f"'completion_tokens': {r.out_len}, 'cached_tokens': {r.cached}, "
                f"'e2e_latency': {(t - r.arrive) / 1000.0!r}")
        if self.spec:
            v = r.n
            drafts = r.araw if sc.untrimmed_finish_drafts else r.tok - 1
            acc = int(drafts.sum())
            prop = int(self.KP[r.start:r.end + 1].sum()) if self.adaptive else v * (self.K - 1)
            meta += (f", 'spec_accept_rate': {acc / prop!r}, 'spec_accept_length': "
                     f"{r.out_len / v!r}, 'spec_accept_token_num': {acc}, "
                     f"'spec_draft_token_num': {prop}, 'spec_verify_ct': {v}")
            if sc.version != "0.5.8":
                hist = np.bincount(drafts, minlength=1).tolist()
                meta += f", 'spec_accept_histogram': {hist}"
        # v0.5.8 – v0.5.11: the request logger prints no prefix (sglang.md §7.2)
        self.lines.append(self.wrap(t, f"Finish: obj=GenerateReqInput(rid='{r.rid}', "
                                       f"stream=False), out={{'meta_info': {meta}}}}}\n"))

    # ----------------------------------------------------------------- the truth
    def truth(self) -> Truth:
        sc, I = self.sc, self.interval
        nwin = len(self.win["line_no"])
        prof_only = sc.lines == "prof"
        ncov = self.n_iter if prof_only else nwin * I   # iterations the log speaks of
        B, T, C = self.B[:ncov], self.T[:ncov], self.C[:ncov]
        size = max(int(B.max()) if ncov else 0, 1) + 1

        def sums(mask=None):
            b, tk, cc = (B, T, C) if mask is None else (B[mask], T[mask], C[mask])
            return TruthSums(np.bincount(b, minlength=size).astype(float),
                             np.bincount(b, weights=tk, minlength=size).astype(float),
                             np.bincount(b, weights=cc, minlength=size))
        if sc.warmup_amp and sc.warmup_iters:
            wend = int(math.ceil(sc.warmup_iters * math.log(max(sc.warmup_amp, 1e-12) / 1e-3)))
        else:
            wend = 0
        steady = np.arange(ncov) >= wend
        blocks = {k: np.asarray(v) for k, v in self.blk.items()}
        profiled = None
        if prof_only:
            # only the profiled cycles are in the log: the truth is theirs, no window printed
            profiled = np.zeros(ncov, dtype=bool)
            for end, n in zip(blocks["end_iter"], blocks["cycles"]):
                profiled[end - n + 1:end + 1] = True
            steady &= profiled
            sizes = [len(t) for t in self.prof_text]
            blocks["line_no"] = np.cumsum([1] + sizes[:-1]) if sizes else blocks["line_no"]
        hw = np.asarray(sc.hw.step_ms(np.arange(max(size, sc.max_running_requests + 1))),
                        dtype=float) / self.step_scale
        windows = {k: np.asarray(v) for k, v in self.win.items()}
        windows["prefill_lines"] = np.array([self.pre_lines.get(w, 0) for w in range(nwin)])
        windows["prefills"] = np.array([self.pre_n.get(w, 0) for w in range(nwin)])
        if prof_only:
            windows = {k: v[:0] for k, v in windows.items()}
        arrays = None
        if self.keep:
            n = self.n_iter
            arrays = {"B": self.B[:n].copy(), "T": self.T[:n].copy(), "C": self.C[:n].copy(),
                      "KV": self.KV[:n].copy(), "TEND": self.TEND[:n].copy(),
                      "x": self.x[:n].copy()}
        by_k = None
        if self.adaptive:
            kp = self.KP[:ncov]
            by_k = {int(k): sums(kp == k if profiled is None else (kp == k) & profiled)
                    for k in np.unique(kp)}
        return Truth(sc.name, self.seed, sc.k, I, sums(profiled),
                     sums(steady), hw, windows, blocks,
                     self.finished, wend, arrays, by_k)


def _ar1(e: np.ndarray, phi: float, prev: float) -> np.ndarray:
    """x_n = φ x_{n−1} + e_n from x_{−1} = prev, vectorised in blocks short enough that
    φ^−L stays below 10³ (x_n = φ^n (prev·φ + Σ_{j≤n} φ^−j e_j) within a block)."""
    out = np.empty(len(e))
    L = max(1, int(3 * math.log(10) / -math.log(phi))) if phi < 1 else len(e)
    for a in range(0, len(e), L):
        blk = e[a:a + L]
        pw = phi ** np.arange(len(blk))
        out[a:a + L] = pw * (prev * phi + np.cumsum(blk / pw))
        prev = out[a + len(blk) - 1]
    return out


def _name_key(name: str) -> int:
    return int.from_bytes(name.encode()[:8].ljust(8, b"\0"), "little") & 0x7FFFFFFF


def server_args_line(sc: Scenario, spec: bool) -> str:
    """The start-up line (sglang.md §6), the dataclass repr of ServerArgs, abbreviated."""
    if spec:
        s = (f"speculative_algorithm='EAGLE3', speculative_draft_model_path="
             f"{sc.draft_model_path!r}, speculative_num_steps={sc.k}, "
             f"speculative_eagle_topk=1, speculative_num_draft_tokens={sc.k + 1}")
        if sc.adaptive_steps:
            s += ", speculative_adaptive=True, speculative_adaptive_config=None"
    else:
        s = ("speculative_algorithm=None, speculative_draft_model_path=None, "
             "speculative_num_steps=None, speculative_eagle_topk=None, "
             "speculative_num_draft_tokens=None")
    overlap = sc.overlap if spec else True
    return (f"server_args=ServerArgs(model_path={sc.model_path!r}, tokenizer_path="
            f"{sc.model_path!r}, tokenizer_mode='auto', skip_tokenizer_init=False, "
            "load_format='auto', trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', "
            f"quantization=None, context_length=None, device='cuda', served_model_name="
            f"{sc.model_path!r}, chat_template=None, is_embedding=False, host='127.0.0.1', "
            f"port=30000, mem_fraction_static=0.82, max_running_requests="
            f"{sc.max_running_requests}, max_total_tokens=None, chunked_prefill_size=8192, "
            f"max_prefill_tokens={sc.max_prefill_tokens}, schedule_policy='fcfs', "
            "schedule_conservativeness=1.0, page_size=1, "
            f"tp_size={sc.tp_size}, dp_size=1, pp_size=1, ep_size=1, stream_interval=1, "
            "random_seed=1234, watchdog_timeout=300, log_level='info', log_level_http=None, "
            f"log_requests={sc.log_requests}, log_requests_level=2, "
            "log_requests_format='text', enable_metrics=False, "
            f"decode_log_interval={sc.decode_log_interval}, attention_backend='fa3', "
            f"sampling_backend='flashinfer', {s}, speculative_accept_threshold_single=1.0, "
            "speculative_accept_threshold_acc=1.0, speculative_token_map=None, "
            f"enable_dp_attention=False, disable_cuda_graph=False, cuda_graph_max_bs="
            f"{sc.cuda_graph_max_bs}, cuda_graph_bs=None, disable_overlap_schedule="
            f"{not overlap}, num_continuous_decode_steps=1, enable_torch_compile=False)")


# ----------------------------------------------------------------------------- entry points

def simulate(scenario: Scenario, seed: int = 0, *, speculative: bool = True, noise: bool = True,
             step_scale: float = 1.0, keep_arrays: bool = False, header: bool = True) -> SimLog:
    """Simulate one run of ``scenario``; its log lines and its truth.

    speculative=False runs the same traffic without speculation (one token per request and
    step, step time b(B) / step_scale): a baseline log.  noise=False takes the noise out of the
    cycle times.  keep_arrays keeps the per-iteration arrays in ``truth.iterations``."""
    sim = _Sim(scenario, seed, speculative, noise, step_scale, keep_arrays)
    sim.run()
    lines = sim.lines if scenario.lines != "prof" else [x for b in sim.prof_text for x in b]
    tr = sim.truth()
    if header:
        lines.insert(0, HEADER.format(name=scenario.name, seed=seed))
        for k in ("line_no",):
            tr.windows[k] = tr.windows[k] + 1
            if len(tr.blocks[k]):
                tr.blocks[k] = tr.blocks[k] + 1
    return SimLog(scenario, seed, lines, tr, speculative)


def stated_steps(truth_pop: TruthSums, scenario: Scenario, target: float | None = None,
                 steady: TruthSums | None = None) -> tuple[np.ndarray, float]:
    """The exact stated baseline step per batch size (ms, index B), and μ: the hardware's b(B)
    sped up by μ so that the population's true speedup is ``target`` (μ = 1 without one)."""
    hw = np.asarray(scenario.hw.step_ms(np.arange(scenario.max_running_requests + 1)),
                    dtype=float)
    target = scenario.target_speedup if target is None else target
    if not target:
        return hw, 1.0
    m = (steady or truth_pop).metrics(hw)
    if not m.speedup > 0:
        raise ValueError(f"{scenario.name}: no decode iteration to take the truth from (a "
                         "warm-up longer than the run leaves no steady state)")
    mu = m.speedup / target
    return hw / mu, mu


def baseline_map(steps: np.ndarray, sizes) -> str:
    """'1:98.6,2:97.4,…': the per-stream rate of every batch size in ``sizes`` (tok/s)."""
    return ",".join(f"{int(b)}:{1000.0 / steps[int(b)]:.6g}" for b in sorted(sizes) if b > 0)


def baseline_log(scenario: Scenario, mu: float = 1.0, seed: int = 10_000) -> SimLog:
    """A non-speculative, noise-free run of the scenario's traffic (``baseline_clients`` when
    set) in SGLang's format: a ``--baseline-log`` whose step is exactly b(B) / mu."""
    sc = scenario.replace(clients=scenario.baseline_clients or scenario.clients,
                          random_clients=None if scenario.baseline_clients
                          else scenario.random_clients, warmup_amp=0.0, prof_every=0,
                          name=scenario.name + "-baseline")
    return simulate(sc, seed, speculative=False, noise=False, step_scale=mu)


# ----------------------------------------------------------------------------- scenarios

_REF = Scenario(
    name="reference", duration_s=1200.0, clients=((0.0, 8),), output_median=900.0,
    output_sigma=0.5, max_new_tokens=4096, drift_rho=0.3, target_speedup=1.0,
    about="stationary: 8 clients, long outputs (about 1 completion per 3 windows), true "
          "speedup 1.00")

SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    _REF,
    _REF.replace(
        name="continuous", clients=((0.0, 16),), output_median=300.0, output_sigma=0.4,
        duration_s=900.0, target_speedup=1.03,
        about="continuous traffic: 16 clients, short outputs, a prefill in almost every "
              "window; true speedup 1.03"),
    _REF.replace(
        name="continuous_s", clients=((0.0, 16),), output_median=300.0, output_sigma=0.4,
        duration_s=900.0, target_speedup=1.03, log_ms=False,
        about="continuous traffic with whole-second timestamps (SGLang without "
              "SGLANG_LOG_MS=1): the mean batch inside a window is approximated; true 1.03"),
    _REF.replace(
        name="reference_s", log_ms=False,
        about="reference with whole-second timestamps: few joins and finishes inside a window; "
              "true 1.00"),
    _REF.replace(
        name="continuous_docker", clients=((0.0, 16),), output_median=300.0, output_sigma=0.4,
        duration_s=900.0, target_speedup=1.03, log_ms=False, wrapper="docker",
        about="continuous_s read through `docker logs --timestamps`: whole seconds in SGLang's "
              "prefix, the wrapper's nanosecond stamps (0.3 ms late on average) in front; "
              "true 1.03"),
    _REF.replace(
        name="few_think_s", clients=((0.0, 2),), think_s=0.5, log_ms=False,
        about="2 clients with a 0.5 s think time and whole-second timestamps: the batch moves "
              "between 0, 1 and 2 inside most windows; true 1.00"),
    _REF.replace(
        name="continuous_pause", clients=((0.0, 16), (420.0, 0), (480.0, 16)),
        output_median=300.0, output_sigma=0.4, duration_s=900.0, target_speedup=1.03,
        baseline="map",
        about="continuous traffic with one 60 s idle pause in the middle (the batch drains and "
              "refills: a baseline per batch size); true 1.03"),
    _REF.replace(
        name="growing", clients=ramp(1, 32, 1200.0), output_median=250.0, duration_s=1200.0,
        baseline="map",
        about="batch size growing 1→32 (clients added every 37.5 s); true speedup 1.00",
        target_speedup=1.0),
    _REF.replace(
        name="varying", clients=(), random_clients=(30.0, 1, 32), output_median=250.0,
        think_s=0.5, duration_s=1200.0, baseline="map", target_speedup=1.0,
        about="batch size varying at random (1–32 clients, a new level every 30 s); true 1.00"),
    _REF.replace(
        name="warmup", warmup_amp=0.7, warmup_iters=6000.0, truth_basis="steady",
        target_speedup=1.0,
        about="stationary with a warm-up (first cycles 1.7× slower, decaying over ~150 windows); "
              "true steady-state speedup 1.00"),
    Scenario(
        name="prof5", clients=((0.0, 1),), think_s=0.03, output_median=120.0, output_sigma=0.2,
        duration_s=120.0, max_iters=520, prof_every=100, prof_blocks=5, target_speedup=1.0,
        about="single stream with a short think time: 5 good EAGLE3_PROF blocks (500 "
              "cycles), 13 decode lines; true 1.00"),
    _REF.replace(
        name="baseline_batch1", clients=((0.0, 1), (566.0, 8), (787.0, 32)), duration_s=900.0,
        output_median=600.0, baseline="log", baseline_clients=((0.0, 1),), target_speedup=None,
        about="phases at 1, 8 and 32 clients; the baseline log ran at batch size 1 only "
              "(about 17 % of the request-steps); hardware truth"),
    _REF.replace(
        name="aggregate_baseline", clients=((0.0, 8),), baseline_toks=720.0,
        target_speedup=None,
        about="8 clients, k = 3, --baseline-toks 720 (the aggregate rate: 8 × 90) instead of "
              "the per-stream 90; hardware truth"),
    _REF.replace(
        name="ar09", drift_rho=0.9, drift_sd=0.5, duration_s=300.0, target_speedup=1.0,
        about="strong autocorrelation: the latent acceptance level is AR(1) with ρ = 0.9 "
              "window to window (σ 0.5 logit), about 450 windows; true 1.00"),
    _REF.replace(
        name="ar095", drift_rho=0.95, drift_sd=0.5, duration_s=300.0, target_speedup=1.0,
        about="stronger still: ρ = 0.95 window to window, about 450 windows; true 1.00"),
    _REF.replace(
        name="few_windows", duration_s=14.0, output_median=600.0, target_speedup=1.0,
        about="a short run: 15–20 decode windows; true 1.00"),
    # issue 15: runs for compare and sweep
    _REF.replace(
        name="compare_pair", duration_s=600.0, prof_every=100,
        about="the reference, 10 minutes, with EAGLE3_PROF blocks every 100 cycles (every "
              "metric compare knows); pairs of seeds have the same truth"),
    _REF.replace(
        name="sweep_equal", drift_rho=0.9, drift_sd=0.5, duration_s=300.0, target_speedup=None,
        about="sweep rows: ar09's runs (intervals of about ±5 %); two seeds are truly equal"),
    _REF.replace(
        name="sweep_slower9", drift_rho=0.9, drift_sd=0.5, duration_s=300.0,
        cycle_scale=1.0 / 0.91, target_speedup=None,
        about="sweep_equal with every cycle 1/0.91 longer: a per-stream rate truly 9 % lower"),
    _REF.replace(
        name="const_phase_a", duration_s=600.0, prof_every=100, target_speedup=1.0,
        phase_means=(0.1249, 13.0, 0.55, 0.66),
        about="EAGLE3_PROF with noise-free phases; Draft steps 0.1249 ms (printed 0.12)"),
    _REF.replace(
        name="const_phase_b", duration_s=600.0, prof_every=100, target_speedup=1.0,
        phase_means=(0.1251, 13.0, 0.55, 0.66),
        about="the same with Draft steps 0.1251 ms (printed 0.13): the same truth within 0.2 %"),
]}

# issue 33: the sizes real runs have.  One stream (a person trying speculation on one
# request at a time), outputs of about 120 tokens with a 30 ms think time, acceptance tuned so
# that a window's accept length moves by about 9 % (relative σ, window to window); a run is
# cut after a number of decode iterations (40 a window, 100 cycles a profiler block).
_STREAM = Scenario(
    name="stream", clients=((0.0, 1),), think_s=0.03, output_median=120.0, output_sigma=0.2,
    difficulty_sd=0.15, drift_sd=0.15, duration_s=3600.0, target_speedup=1.0,
    about="one stream, outputs of about 120 tokens, 30 ms think time; true 1.00")


def _short(name: str, windows: int = 0, blocks: int = 0, clients: int = 1,
           stamps: str = "ms") -> Scenario:
    """A short run: ``windows`` decode windows (0: a profile-only log of ``blocks`` blocks of
    100 cycles), ``blocks`` EAGLE3_PROF blocks every 100 cycles, millisecond ("ms") or
    whole-second ("s") stamps."""
    iters = 40 * windows if windows else 100 * blocks
    what = (f"{blocks} EAGLE3_PROF blocks of 100 cycles and nothing else" if not windows else
            f"{windows} decode windows" + (f" and {blocks} EAGLE3_PROF blocks" if blocks else ""))
    who = "one stream" if clients == 1 else f"{clients} clients"
    st = "" if not windows else (", millisecond stamps" if stamps == "ms" else
                                 ", whole-second stamps")
    return _STREAM.replace(
        name=name, clients=((0.0, clients),), max_iters=iters, log_ms=stamps == "ms",
        prof_every=100 if blocks else 0, prof_blocks=blocks or None,
        lines="all" if windows else "prof", about=f"{who}: {what}{st}; true 1.00")


SHORT = [_short("3blk_prof", blocks=3), _short("8blk_prof", blocks=8)] + [
    sc for w, b, c, base in ((30, 8, 1, "8blk_30w"), (15, 0, 1, "15w_stream"),
                             (30, 0, 1, "30w_stream"), (60, 0, 1, "60w_stream"),
                             (300, 0, 1, "300w_stream"), (60, 0, 4, "60w_4clients"))
    for sc in (_short(base, w, b, c, "ms"), _short(base + "_s", w, b, c, "s"))]
SCENARIOS.update({sc.name: sc for sc in SHORT})

# issue 34: where an interval was confidently wrong
SCENARIOS.update({sc.name: sc for sc in (
    _REF.replace(
        name="long_requests", clients=((0.0, 4),), output_median=100.0, output_alpha=1.2,
        max_new_tokens=16384, max_iters=4000, duration_s=3600.0, target_speedup=1.0,
        about="4 clients, output lengths Pareto α 1.2 from 100 tokens (a few requests span "
              "most of the run), 100 windows; true 1.00"),
    _REF.replace(
        name="long_requests_fin", clients=((0.0, 4),), output_median=100.0, output_alpha=1.2,
        max_new_tokens=16384, max_iters=4000, duration_s=3600.0, target_speedup=1.0,
        about="long_requests read with its Finish lines (--log-requests): each request's own "
              "accept length and life; true 1.00"),
    _REF.replace(
        name="sweep_ramp", clients=((0.0, 1), (60.0, 2), (120.0, 4), (180.0, 8), (240.0, 16)),
        duration_s=300.0, num_steps=5, hw=TiledVerify(tile_tokens=16, tile_ms=6.0),
        output_median=300.0, baseline="map", target_speedup=None,
        about="an ascending client sweep 1 → 2 → 4 → 8 → 16 (a minute each) on hardware whose "
              "forward costs by 16-token tiles (+6 ms a tile): a cost no quadratic in the batch "
              "follows; hardware truth, a baseline per batch size"),
    _REF.replace(
        name="moving_s", clients=(), random_clients=(10.0, 32, 64), max_running_requests=64,
        output_median=300.0, output_sigma=0.4, max_iters=20000, duration_s=3600.0,
        log_ms=False, target_speedup=1.0, baseline="map",
        about="moving load on whole-second stamps: 32–64 clients, a new random level every "
              "10 s (about 8 windows), 500 windows; a baseline per batch size; true 1.00"),
    _REF.replace(
        name="moving", clients=(), random_clients=(10.0, 32, 64), max_running_requests=64,
        output_median=300.0, output_sigma=0.4, max_iters=20000, duration_s=3600.0,
        target_speedup=1.0, baseline="map",
        about="moving_s with millisecond stamps; true 1.00"),
    _REF.replace(
        name="adaptive", num_steps=3, adaptive_steps=(2, 3, 5), adaptive_every=10.0,
        duration_s=300.0, target_speedup=1.0,
        about="SGLang adaptive speculation: num_steps switches among 2, 3 and 5 every ~10 "
              "windows (exponential), 'Adaptive spec params updated' lines, about 300 windows; "
              "true whole-run speedup 1.00"),
    _REF.replace(
        name="ar09_100", drift_rho=0.9, drift_sd=0.5, max_iters=4000, target_speedup=1.0,
        about="ar09's acceptance (latent AR(1) ρ 0.9 window to window) over 100 windows; "
              "true 1.00"),
)})

# scenario pairs for compare (issue 15): (reference, changed)
PAIRS = {"same_truth": ("compare_pair", "compare_pair"),
         "const_phase": ("const_phase_a", "const_phase_b"),
         "sweep_equal": ("sweep_equal", "sweep_equal"),
         "sweep_slower9": ("sweep_equal", "sweep_slower9")}
