"""Issue 35, item 5: fields SGLang 0.5.23 prints on its decode and prefill lines are columns,
not ``extra``: 'fwd+idle occupancy: X%' (metrics_reporter.py:222–225, with the device timer),
'#host-receive-req: N' (PD decode, metrics_reporter.py:1028) and '#replay-token: N' (prefill,
metrics_reporter.py:765) — the same with the C scanner and in pure Python."""
from __future__ import annotations

import pytest

import eaglelog

DECODE = ("[2026-11-02 10:00:00 TP0] Decode batch, #running-req: 4, #token: 900, token usage: "
          "0.01, accept len: 2.50, accept rate: 0.50, pre-allocated usage: 0.00, #prealloc-req: 0, "
          "#transfer-req: 0, #host-receive-req: 3, #retracted-req: 0, cuda graph: True, gen "
          "throughput (token/s): 400.00, #queue-req: 0, fwd occupancy: 45.20%, fwd+idle "
          "occupancy: 97.10%\n")
PREFILL = ("[2026-11-02 10:00:01 TP0] Prefill batch, #new-seq: 1, #new-token: 512, #cached-token: "
           "0, token usage: 0.01, #running-req: 3, #queue-req: 0, #pending-token: 0, "
           "#replay-token: 128, cuda graph: False, input throughput (token/s): 5000.00\n")


@pytest.mark.parametrize("pure", [False, True])
def test_new_fields_are_columns(tmp_path, monkeypatch, pure):
    from eaglelog.parsers import scan
    monkeypatch.setattr(scan, "_PURE", pure)
    monkeypatch.setenv("EAGLELOG_NO_CACHE", "1")
    p = tmp_path / "f.log"
    p.write_text(DECODE + PREFILL)
    log = eaglelog.parse(str(p))
    d, f = log.decode.iloc[0], log.prefill.iloc[0]
    assert (d["host_receive_req"], d["fwd_occupancy"], d["fwd_idle_occupancy"]) == (3, 45.2, 97.1)
    assert f["replay_token"] == 128
    for t in (log.decode, log.prefill):
        assert "extra" not in t.columns or t["extra"].isna().all()
