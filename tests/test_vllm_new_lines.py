"""vLLM 0.26 →'s per-iteration line (issue 35, item 4): the frontend logs every DP engine's
iterations as 'Engine NNN: Iteration(N): …', with ' (dummy)' for an idle engine's step and the
KV usage after the elapsed time (vllm 0.34.0: v1/metrics/loggers.py:176–213).  The engine index
keeps DP engines apart; a dummy iteration is flagged.  Lines written here in that format."""
from __future__ import annotations

import eaglelog

LINES = [
    "(APIServer pid=90) INFO 11-20 10:00:00 [loggers.py:199] Engine 000: Iteration(10): 0 "
    "context requests, 0 context tokens, 8 generation requests, 32 generation tokens, iteration "
    "elapsed time: 21.50 ms, GPU KV cache usage: 3.5%",
    "(APIServer pid=90) INFO 11-20 10:00:00 [loggers.py:199] Engine 001: Iteration(10): 0 "
    "context requests, 0 context tokens, 0 generation requests, 0 generation tokens, iteration "
    "elapsed time: 2.10 ms (dummy), GPU KV cache usage: 0.0%",
    "(APIServer pid=90) INFO 11-20 10:00:01 [loggers.py:199] Engine 000: Iteration(11): 1 "
    "context requests, 512 context tokens, 7 generation requests, 28 generation tokens, "
    "iteration elapsed time: 48.00 ms, GPU KV cache usage: 4.0%",
    "(APIServer pid=90) INFO 11-20 10:00:01 [loggers.py:199] Engine 001: Iteration(11): wrong",
]


def test_engine_index_dummy_and_kv_usage(tmp_path):
    p = tmp_path / "vllm_iter.log"
    p.write_text("\n".join(LINES) + "\n")
    log = eaglelog.parse(str(p), base_date="2026-11-20")
    it = log.table("vllm_iterations")
    assert it["dp"].tolist() == [0, 1, 0]                   # engines kept apart
    assert it["iteration"].tolist() == [10, 10, 11]
    assert it["dummy"].tolist() == [False, True, False]
    assert it["kv_cache_usage"].tolist() == [0.035, 0.0, 0.04]
    assert it["iter_ms"].tolist() == [21.5, 2.1, 48.0]
    bad = [d for d in log.diagnostics if d.line_no == 4]
    assert len(bad) == 1 and "iteration line not understood" in bad[0].message
