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


def test_kv_fetch_and_an_accelerator_kv_usage_are_columns(tmp_path, monkeypatch):
    """The throughput line of vLLM 0.3x: 'KV fetch: a waiting to start, b in progress, c
    completed waiting' with a KV connector, and '<device> KV cache usage' where the device is
    not a GPU ('NPU', 'XPU': kv_cache_device = device_type.upper(); vllm 0.34.0
    v1/metrics/loggers.py:117, 303–318)."""
    from eaglelog.parsers import scan
    lines = [
        "(APIServer pid=90) INFO 11-20 10:00:10 [loggers.py:330] Engine 000: Avg prompt "
        "throughput: 120.0 tokens/s, Avg generation throughput: 850.5 tokens/s, Running: 8 reqs, "
        "Waiting: 0 reqs, KV fetch: 2 waiting to start, 1 in progress, 0 completed waiting, "
        "NPU KV cache usage: 12.5%, Prefix cache hit rate: 40.0%",
        "(APIServer pid=90) INFO 11-20 10:00:20 [loggers.py:330] Engine 000: Avg prompt "
        "throughput: 0.0 tokens/s, Avg generation throughput: 900.0 tokens/s, Running: 8 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 13.0%, Prefix cache hit rate: 41.0%",
    ]
    p = tmp_path / "vllm_tput.log"
    p.write_text("\n".join(lines) + "\n")
    for pure in (False, True):
        monkeypatch.setattr(scan, "_PURE", pure)
        monkeypatch.setenv("EAGLELOG_NO_CACHE", "1")
        st = eaglelog.parse(str(p), base_date="2026-11-20").table("vllm_stats")
        assert st["gpu_kv_usage"].tolist() == [12.5, 13.0]
        assert st["kv_device"].astype(object).tolist()[0] == "NPU"
        assert st["kv_device"].isna().tolist()[1]
        assert st["kv_fetch_waiting"].tolist()[0] == 2
        assert st["kv_fetch_in_progress"].tolist()[0] == 1
        assert st["kv_fetch_completed"].tolist()[0] == 0
        assert "extra" not in st.columns or st["extra"].isna().all()
