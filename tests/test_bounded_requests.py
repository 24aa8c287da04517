"""Issue 36, item 1: one request line must not size the analysis's memory.  A Finish line with
``completion_tokens: 1000000000`` gave τ_r = 10⁸ and a histogram of 4 × 10⁸ quarter-wide bins
(2.98 GiB; at 10¹⁰ the OOM killer).  The histogram now takes at most HIST_MAX_BINS bins and the
chain fit at most CHAIN_MAX_K drafts; the run is checked under an address-space limit."""
from __future__ import annotations

import resource
import subprocess
import sys

import numpy as np

from eaglelog.analysis.requests import HIST_MAX_BINS, _histogram

LINE = ("[2026-11-20 10:00:0{i}] Finish: obj=GenerateReqInput(rid='r{i}', stream=False), "
        "out={{'meta_info': {{'id': 'r{i}', 'finish_reason': {{'type': 'stop', 'matched': 2}}, "
        "'prompt_tokens': 50, 'completion_tokens': {c}, 'cached_tokens': 0, 'spec_verify_ct': "
        "10, 'spec_num_correct_drafts': 20, 'spec_num_proposed_drafts': 30, "
        "'spec_correct_drafts_histogram': [1, 2, 3, 4]}}}}\n")


def test_the_histogram_is_bounded():
    h = _histogram(np.array([2.5, 3.0, 1e8, np.nan]))
    assert len(h) <= HIST_MAX_BINS + 1 and sum(c for _, _, c in h) == 3
    assert h[0][0] <= 2.5 and h[-1][1] > 1e8
    # an ordinary run keeps its quarter-wide bins
    h = _histogram(np.array([2.1, 2.6, 3.3]))
    assert [(a, b) for a, b, _ in h] == [(2.0, 2.25), (2.25, 2.5), (2.5, 2.75), (2.75, 3.0),
                                         (3.0, 3.25), (3.25, 3.5)]


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))


def test_a_billion_token_request_runs_in_bounded_memory(tmp_path):
    p = tmp_path / "bomb.log"
    p.write_text(LINE.format(i=1, c=1_000_000_000) + LINE.format(i=2, c=31)
                 + LINE.format(i=3, c=10 ** 10))
    r = subprocess.run([sys.executable, "-m", "eaglelog", "requests", str(p)],
                       capture_output=True, text=True, timeout=120, preexec_fn=_limited)
    assert r.returncode == 0, r.stderr[-800:]
    assert "internal error" not in r.stderr and "MemoryError" not in r.stderr
    assert "3 requests" in r.stdout
    assert "breaks an identity: completion_tokens 1000000000" in r.stderr
