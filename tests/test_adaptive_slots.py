"""Issue 35, item 3 (SGLang): an adaptive run's per-batch-size slots switch K silently (a slot
with one candidate never logs a change: sglang 0.5.23 srt/speculative/adaptive_spec_params.py:
213–268), so the K of each #running-req bucket comes from the --speculative-adaptive-config
file, each batch routed as SGLang's ``_route`` does (padded to its CUDA-graph size, then the
slot at or below it, lines 342–358).  The logs are synthetic, in SGLang 0.5.23's start-up shape
(``server_args={…}``) with v0.5.10-style decode lines (shared/formats/sglang.md)."""
from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pytest
from click.testing import CliRunner

import eaglelog
from eaglelog.analysis import adaptive_slots
from eaglelog.cli import main

from shortlogs import HEADER, START, decode_line

SLOTS = {"1": {"candidate_steps": [5]}, "8": {"candidate_steps": [3]},
         "24": {"candidate_steps": [1]}}
ACCEPT = {5: 3.0, 3: 2.5, 1: 1.7}            # accept length a verify at each K


def cycle(b: int, k: int) -> float:
    return 10.0 + 1.0 * k + 0.4 * b * (k + 1)


def server_args(adaptive: bool, steps: int, max_bs: int = 32, path="/srv/sched.json") -> str:
    d = {"model_path": "/models/llama-3.1-8b-instruct", "tp_size": 1, "dp_size": 1,
         "decode_log_interval": 40, "speculative_algorithm": "EAGLE3",
         "speculative_draft_model_path": "/models/llama-3.1-8b-eagle3",
         "speculative_num_steps": steps, "speculative_eagle_topk": 1,
         "speculative_num_draft_tokens": steps + 1, "enable_dp_attention": False,
         "attn_dp_size": 1, "disable_cuda_graph": False, "cuda_graph_max_bs": max_bs,
         "cuda_graph_bs": None, "speculative_adaptive": adaptive,
         "speculative_adaptive_config": path if adaptive else None}
    return f"[{START:%Y-%m-%d %H:%M:%S}.000] server_args={d!r}\n"


def run_log(k_of, sizes, steps: int, adaptive: bool, seed: int = 0, **kw) -> str:
    rng = np.random.default_rng(seed)
    out, t = [HEADER, server_args(adaptive, steps, **kw)], START + dt.timedelta(seconds=1)
    for b in sizes:
        k = k_of(b)
        c = cycle(b, k) * (1 + 0.003 * rng.standard_normal())
        a = ACCEPT[k] * (1 + 0.01 * rng.standard_normal())
        out.append(decode_line(t, b, a, 1000 * a * b / c))
        t += dt.timedelta(milliseconds=40 * c)
    return "".join(out)


def slot_k(b: int) -> int:
    """The K SGLang runs at batch b for SLOTS with cuda_graph_max_bs 32 (graph sizes 1–8, then
    10–32 by 2): 23 pads to 24, the K-1 slot."""
    padded = b if b <= 8 else b + (b % 2)
    return 5 if padded < 8 else 3 if padded < 24 else 1


SIZES = [b for b in (1, 2, 4, 6, 12, 16, 23, 28) for _ in range(30)]


@pytest.fixture
def runs(tmp_path):
    cfg = tmp_path / "sched.json"
    cfg.write_text(json.dumps(SLOTS))
    ad = tmp_path / "adaptive.log"
    ad.write_text(run_log(slot_k, SIZES, steps=5, adaptive=True))
    fixed = tmp_path / "fixed3.log"
    fixed.write_text(run_log(lambda b: 3, SIZES, steps=3, adaptive=False, seed=1))
    return cfg, ad, fixed


def test_routing_pads_to_the_cuda_graph_size_first(runs):
    cfg, _, _ = runs
    p = adaptive_slots.plan({"speculative_adaptive": True, "speculative_algorithm": "EAGLE3",
                             "speculative_eagle_topk": 1, "cuda_graph_max_bs": 32}, str(cfg))
    assert [p.candidates(b)[0] for b in (1, 7, 8, 22, 23, 24, 40)] == [5, 5, 3, 3, 1, 1, 1]
    assert p.label(np.array([16.0, 22.0, 23.0])) == "3/1"
    # without the file: SGLang's default slots adapt on their own
    d = adaptive_slots.plan({"speculative_adaptive": True, "speculative_algorithm": "EAGLE3"})
    assert d.label(np.array([1.0, 2.0])) == "adapts 1,3,5,7" and d.label(np.array([64.0])) == "0"


def test_breakeven_says_the_k_of_each_bucket(runs):
    cfg, ad, _ = runs
    r = eaglelog.breakeven(str(ad), baseline_toks="1:90,2:88,4:84,6:80,12:70,16:64,23:55,28:50",
                           adaptive_config=str(cfg))
    ks = {b.batch: b.steps for b in r.by_batch}
    assert ks == {"1": "5", "2": "5", "4": "5", "6": "5", "12": "3", "16": "3", "23": "1",
                  "28": "1"}
    acc = {b.batch: round(b.accept_len.estimate, 1) for b in r.by_batch}
    assert acc["1"] == 3.0 and acc["12"] == 2.5 and acc["23"] == 1.7
    assert any("K per #running-req bucket from --adaptive-config" in n for n in r.notes)
    assert not any("is not the one this server ran" in n for n in r.notes)


def test_the_wrong_config_is_caught_by_the_k_plus_1_bound(runs, tmp_path):
    _, ad, _ = runs
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"1": {"candidate_steps": [1]}, "8": {"candidate_steps": [3]}}))
    r = eaglelog.breakeven(str(ad), baseline_toks=90, adaptive_config=str(wrong))
    bad = [n for n in r.notes if "is not the one this server ran" in n]
    # batch 1–6 ran K 5 (accept 3.0 > 2 tokens a K-1 verify)
    assert len(bad) == 4 and bad[0].startswith("running_req 1: accept length 3.0")


def test_an_adaptive_run_without_its_file_says_so(runs):
    _, ad, _ = runs
    r = eaglelog.breakeven(str(ad), baseline_toks=90)
    note = [n for n in r.notes if "per-batch-size slots from /srv/sched.json" in n]
    assert len(note) == 1 and "--adaptive-config" in note[0]


def test_cli_table_and_bad_files(runs, tmp_path):
    cfg, ad, _ = runs
    res = CliRunner().invoke(main, ["breakeven", "--baseline-toks", "90", "--adaptive-config",
                                    str(cfg), str(ad)])
    assert res.exit_code == 0, res.output
    head = [ln for ln in res.output.splitlines() if ln.strip().startswith("running_req")]
    assert head and head[0].split()[:3] == ["running_req", "K", "windows"]
    row23 = [ln for ln in res.output.splitlines() if ln.strip().startswith("23 ")]
    assert row23 and row23[0].split()[1] == "1"
    bad = tmp_path / "bad.json"
    bad.write_text('{"1": {"candidate_steps": [-1]}}')
    res = CliRunner().invoke(main, ["breakeven", "--baseline-toks", "90", "--adaptive-config",
                                    str(bad), str(ad)])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert f"{bad}: SGLang would refuse this adaptive config" in res.output
    res = CliRunner().invoke(main, ["breakeven", "--baseline-toks", "90", "--adaptive-config",
                                    str(tmp_path / "missing.json"), str(ad)])
    assert res.exit_code != 0 and "cannot read the adaptive config" in res.output


def test_compare_by_batch_says_where_the_schedule_paid(runs):
    cfg, ad, fixed = runs
    c = eaglelog.compare_by_batch(str(fixed), str(ad), adaptive_config=str(cfg))
    got = {b.batch: (b.ref_steps, b.new_steps, b.verdict) for b in c.buckets}
    # truth: rate = accept / cycle(b, K); K 5 beats K 3 at batch 1–6 (3.0 / 18.4 vs 2.5 / 14.6
    # at batch 1), K 3 vs K 3 ties at 12 and 16, K 1 beats K 3 at 23 and 28
    for b in ("1", "2", "4", "6", "12", "16", "23", "28"):
        k = slot_k(int(b))
        truth = (ACCEPT[k] / cycle(int(b), k)) / (ACCEPT[3] / cycle(int(b), 3))
        bk = next(x for x in c.buckets if x.batch == b)
        assert bk.ratio.ci_low < truth < bk.ratio.ci_high, (b, truth, bk.ratio)
        assert got[b][:2] == ("3", str(k))
    assert got["1"][2] == ("faster" if ACCEPT[5] / cycle(1, 5) > ACCEPT[3] / cycle(1, 3)
                           else "slower")
    assert got["12"][2] == "no detectable difference"
    assert got["28"][2] == "faster"


def test_compare_by_batch_cli(runs):
    cfg, ad, fixed = runs
    res = CliRunner().invoke(main, ["compare", "--by", "batch", "--adaptive-config", str(cfg),
                                    str(fixed), str(ad)])
    assert res.exit_code == 0, res.output
    row = [ln.split() for ln in res.output.splitlines() if ln.strip().startswith("23 ")]
    assert row and row[0][1:3] == ["3", "1"] and row[0][-1] == "faster"
    res = CliRunner().invoke(main, ["compare", "--by", "batch", "-f", "json", str(fixed),
                                    str(ad)])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    # without the file the adaptive run's K per bucket is unknown, and a note says why
    assert all(b["new_steps"] is None for b in d["buckets"])
    assert any("per-batch-size slots from /srv/sched.json" in n for n in d["notes"])
    res = CliRunner().invoke(main, ["compare", "--by", "batch", "--baseline-toks", "90",
                                    str(fixed), str(ad)])
    assert res.exit_code == 2 and "takes none" in res.output
