"""Paired runs of the request-level simulator (simlab/simulate.py) on the same prompts, for the
issue-18 simulation test (tests/test_requests.py) and benchmarks/requests_power.py.

A benchmark sends the same questions to two servers (a reference and a changed draft model).
The simulator draws each request's prompt length, output length and difficulty itself; here a
subclass takes them from a fixed **prompt bank** instead (request n of a run is question n of
the bank, its rid the question id, as a benchmark that sets ``rid`` does), and the changed run
adds ``shift`` to every question's difficulty on the logit scale (a better draft model accepts
more on every prompt).  The rest of the simulation (acceptance draws, timing, the server's
latent level, the log lines) is the simulator's own, seeded by the run's seed.

The truth of a pair: per question the expected accept length of a verify, τ(d) = Σ_j Π_{l ≤ j}
sigmoid(logit q_l + d) + 1 (the server's latent level set to 0, the cap of the last verify
ignored); the paired estimand is the geometric mean over the questions of τ(d + shift) / τ(d).
``shift_for(ratio, …)`` finds the shift that makes it ``ratio``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simlab.simulate import Scenario, _Sim

# the paired scenario: 8 clients, outputs of about 300 tokens, questions that differ a lot in
# difficulty (σ 0.8 on the logit scale: per-question τ from about 1.3 to 3.7) and no
# server-wide latent level (drift_sd 0: a request's acceptance is a property of its prompt and
# its own draws, not of what else the server runs; benchmarks/requests_power.py measures what a
# shared level does to the test)
PAIRED = Scenario(
    name="paired", duration_s=40.0, clients=((0.0, 8),), output_median=300.0,
    output_sigma=0.5, max_new_tokens=2048, difficulty_sd=0.8, drift_sd=0.0, drift_rho=0.3,
    about="issue 18: a benchmark of fixed questions, 8 clients; acceptance set by the question")


@dataclass(frozen=True)
class Question:
    qid: str
    prompt: int
    out_len: int
    stop: bool
    diff: float


def prompt_bank(sc: Scenario, n: int, seed: int) -> list[Question]:
    """n questions drawn as the simulator draws requests (log-normal lengths, normal
    difficulty), from their own seed."""
    rng = np.random.default_rng([seed, 18])
    out = []
    for i in range(n):
        p = min(max(int(round(sc.prompt_median * math.exp(sc.prompt_sigma * rng.normal()))), 16),
                sc.prompt_max)
        want = int(round(sc.output_median * math.exp(sc.output_sigma * rng.normal())))
        out.append(Question(f"q{i:05d}", p, min(max(want, 2), sc.max_new_tokens),
                            want < sc.max_new_tokens, float(rng.normal() * sc.difficulty_sd)))
    return out


class _BankSim(_Sim):
    def __init__(self, sc: Scenario, seed: int, bank: list[Question], shift: float):
        super().__init__(sc, seed, True, True, 1.0, False)
        self.bank, self.shift = bank, shift

    def new_request(self, client, arrive, n):
        r = super().new_request(client, arrive, n)     # the simulator's draws, then replaced
        q = self.bank[n % len(self.bank)]
        r.prompt, r.out_len, r.stop = q.prompt, q.out_len, q.stop
        r.diff = q.diff + self.shift
        r.cached = 0
        r.rid = q.qid
        return r


def run_lines(sc: Scenario, seed: int, bank: list[Question], shift: float = 0.0) -> list[str]:
    """The log lines of one run over the bank (the simulator's formats)."""
    sim = _BankSim(sc, seed, bank, shift)
    sim.run()
    return sim.lines


def tau_of(d: np.ndarray, sc: Scenario) -> np.ndarray:
    """Expected tokens per verify of questions of difficulty d (latent level 0)."""
    lq = np.log(sc.accept_curve() / (1 - sc.accept_curve()))
    p = 1 / (1 + np.exp(-(np.asarray(d, dtype=float)[:, None] + lq)))
    return 1 + np.cumprod(p, axis=1).sum(axis=1)


def true_ratio(bank: list[Question], sc: Scenario, shift: float) -> float:
    d = np.array([q.diff for q in bank])
    return float(np.exp(np.mean(np.log(tau_of(d + shift, sc) / tau_of(d, sc)))))


def shift_for(ratio: float, bank: list[Question], sc: Scenario) -> float:
    """The logit shift whose true paired ratio over the bank is ``ratio`` (bisection)."""
    lo, hi = -3.0, 3.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if true_ratio(bank, sc, mid) < ratio:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def parsed(lines: list[str], name: str):
    """A ParsedLog of the run's Finish lines, read by eaglelog's own line parser (faster than
    writing and scanning the whole log; the decode lines are not needed here)."""
    from eaglelog.api import ParsedLog, SourceInfo
    from eaglelog.parsers.sglang import parse_finish_line
    from eaglelog.schema import TABLES
    from eaglelog.tables import build_frame

    rows = []
    for i, line in enumerate(lines, 1):
        if line.startswith("Finish: obj="):
            rec = parse_finish_line(line).record
            rec.update(source=name, line_no=i, startup=1)
            rows.append({k: v for k, v in rec.items() if not k.startswith("_")})
    tables = {t: build_frame(TABLES[t], rows if t == "requests" else []) for t in TABLES}
    return ParsedLog(tables, [SourceInfo(name)], [])


def decode_accept(lines: list[str]) -> np.ndarray:
    """The accept len of every Decode batch line (the windows an unpaired compare uses)."""
    out = []
    for line in lines:
        k = line.find("accept len: ")
        if k >= 0 and "Decode batch" in line:
            out.append(float(line[k + 12:line.index(",", k)]))
    return np.array(out)
