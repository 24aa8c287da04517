"""The byte-range parallel scan gives the same tables as the sequential one, to the row."""
import pandas as pd
import pytest

import eaglelog
from eaglelog import parallel
from conftest import mixed_log


def same(a, b):
    for t in eaglelog.TABLES:
        pd.testing.assert_frame_equal(a.table(t), b.table(t), check_categorical=False,
                                      obj=t)
    assert [(d.line_no, d.kind, d.message) for d in a.diagnostics] == \
        [(d.line_no, d.kind, d.message) for d in b.diagnostics]


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_parallel_equals_sequential(tmp_path, monkeypatch, workers):
    path = mixed_log(tmp_path)
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    seq = eaglelog.parse(path, chunk_size=1 << 16)
    monkeypatch.setenv("EAGLELOG_WORKERS", str(workers))
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    par = eaglelog.parse(path, chunk_size=1 << 16)
    assert len(parallel.ranges(str(path), workers)) == workers
    same(seq, par)
    assert par.sources[0].lines == seq.sources[0].lines
    assert par.sources[0].skipped == seq.sources[0].skipped
    assert len(par.prof) > 300 and par.decode["startup"].max() == seq.decode["startup"].max()


def test_a_boundary_inside_interleaved_blocks(tmp_path, monkeypatch):
    from conftest import CANON
    lines = []
    for body in CANON.splitlines():
        for rank in ("TP0", "TP1"):
            lines.append(f"[2026-03-02 14:07:11 {rank}] {body}\n")
    block = "".join(lines)
    path = tmp_path / "inter.log"
    path.write_text(block * 400)
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    seq = eaglelog.parse(path)
    monkeypatch.setenv("EAGLELOG_WORKERS", "6")
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    par = eaglelog.parse(path)
    same(seq, par)
    assert len(par.prof) == 800 and par.prof["complete"].all()
