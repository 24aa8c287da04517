"""The byte-range parallel scan gives the same tables as the sequential one, to the row."""
import pandas as pd
import pytest

import eaglelog
from eaglelog.io import parallel
from conftest import mixed_log


def seq_and_par(path, monkeypatch, workers, **kw):
    """The log parsed by one worker and by ``workers``; they must give the same tables."""
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    seq = eaglelog.parse(path, **kw)
    monkeypatch.setenv("EAGLELOG_WORKERS", str(workers))
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 1)
    par = eaglelog.parse(path, **kw)
    same(seq, par)
    return seq, par


def same(a, b):
    for t in eaglelog.TABLES:
        pd.testing.assert_frame_equal(a.table(t), b.table(t), check_categorical=False,
                                      obj=t)
    assert [(d.line_no, d.kind, d.message) for d in a.diagnostics] == \
        [(d.line_no, d.kind, d.message) for d in b.diagnostics]


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_parallel_equals_sequential(tmp_path, monkeypatch, workers):
    path = mixed_log(tmp_path)
    seq, par = seq_and_par(path, monkeypatch, workers, chunk_size=1 << 16)
    assert len(parallel.ranges(str(path), workers)) == workers
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
    _, par = seq_and_par(path, monkeypatch, 6)
    assert len(par.prof) == 800 and par.prof["complete"].all()


def test_ranges_whose_labels_and_columns_differ(tmp_path, monkeypatch):
    """Each range's C scanner numbers its rank labels in the order it meets them and stores a
    column only once a line prints it: the merge recodes and pads (FastRows.merge)."""
    def dec(ranks, extra=""):
        return (f"[2026-03-02 14:07:11 {ranks}] Decode batch. #running-req: 3, #token: 900, "
                f"token usage: 0.10, accept len: 2.50, accept rate: 0.50, {extra}"
                "cuda graph: True, gen throughput (token/s): 80.00, #queue-req: 0, \n")
    first = [dec("DP0 TP0"), dec("DP1 TP0")] * 300
    second = [dec("DP2 TP0", "#retracted-req: 1, "), dec("DP1 TP0", "#retracted-req: 2, "),
              dec("DP0 TP0", "#retracted-req: 3, ")] * 200
    path = tmp_path / "labels.log"
    path.write_text("".join(first + second))
    seq, par = seq_and_par(path, monkeypatch, 2)
    d = par.decode
    assert list(d["ranks"].astype(str)[:2]) == ["DP0 TP0", "DP1 TP0"]
    assert list(d["ranks"].astype(str)[600:603]) == ["DP2 TP0", "DP1 TP0", "DP0 TP0"]
    assert list(d["dp"][600:603]) == [2, 1, 0]
    extra = [c for c in d.columns if c not in seq.decode.columns]
    assert not extra
    col = next(c for c in d.columns if "retract" in c)
    assert d[col][:600].isna().all() and list(d[col][600:603]) == [1, 2, 3]


def test_lines_longer_than_a_chunk(tmp_path, monkeypatch):
    """Chunks end at line ends whatever the chunk size: a 300 KB line among records, read
    with 4 KB chunks (the reused buffer grows for it and shrinks back)."""
    from conftest import SAMPLES
    body = (SAMPLES / "eagle3_5step.log").read_bytes()
    path = tmp_path / "long.log"
    path.write_bytes(body + b"x" * 300_000 + b"\n" + body + b"y" * 5000 + b"\n" + body)
    seq, par = seq_and_par(path, monkeypatch, 3, chunk_size=4096)
    assert len(par.decode) == 3 * 106 and par.sources[0].lines == seq.sources[0].lines


@pytest.mark.parametrize("seed", range(6))
def test_ordered_concat_interleaves_parts(seed, monkeypatch):
    """concat_frames(order_by=...) equals concatenating and sorting (stable), for every
    dtype, whether the parts hardly interleave (a run per part) or thoroughly (the sort)."""
    import numpy as np
    from eaglelog.schema import TABLES
    from eaglelog import tables
    rng = np.random.default_rng(seed)
    n = 3000
    full = pd.DataFrame({
        "source": pd.Categorical(["a.log"] * n),
        "line_no": pd.array(np.arange(1, n + 1) * 2, dtype="Int64"),
        "startup": pd.array(np.zeros(n, dtype=int), dtype="Int32"),
        "timestamp": pd.to_datetime(1_700_000_000 + np.arange(n), unit="s").astype(
            "datetime64[us]"),
        "ranks": pd.Categorical(rng.choice(["TP0", "TP1", "DP1 TP0"], n)),
        "running_req": pd.array(rng.integers(0, 9, n), dtype="Int32"),
        "accept_len": rng.random(n),
        "graph": pd.array(rng.random(n) > 0.5, dtype="boolean"),
        "extra": pd.array(rng.choice(["x", None], n), dtype="string"),
    })
    few = rng.choice(n, size=int(rng.integers(1, 40)), replace=False)
    big = full.drop(index=few).reset_index(drop=True)
    cut = int(rng.integers(1, len(big)))
    parts = [big[:cut].reset_index(drop=True), big[cut:].reset_index(drop=True),
             full.iloc[np.sort(few)].reset_index(drop=True)]
    for p in parts:     # each part's own category order
        p["ranks"] = p["ranks"].cat.reorder_categories(
            list(rng.permutation(list(p["ranks"].cat.categories))))
    if seed % 2:
        monkeypatch.setattr(tables, "MAX_SEGMENTS", 4)     # too many runs: it sorts instead
    got = tables.concat_frames(TABLES["decode"], [p.copy() for p in parts], consume=True,
                               order_by="line_no")
    want = full[[c for c in got.columns]]
    pd.testing.assert_frame_equal(got, want, check_categorical=False)
    assert got["ranks"].astype(str).tolist() == full["ranks"].astype(str).tolist()


def test_parallel_without_the_accelerator(tmp_path, monkeypatch):
    """Built without a C compiler, the ranges are scanned by processes (the Python parser holds
    the GIL) and merged the same way."""
    from conftest import SAMPLES
    from eaglelog.parsers import scan
    monkeypatch.setattr(scan, "_fastscan", None)
    path = tmp_path / "nofast.log"
    path.write_bytes(b"".join(p.read_bytes() for p in sorted(SAMPLES.glob("eagle3_*.log"))) * 2)
    seq, par = seq_and_par(path, monkeypatch, 2)
    assert len(par.decode) == len(seq.decode) > 200 and len(par.prof) == len(seq.prof) > 80


BLOCK_SPANS_RANGES = (
    "EAGLE3_PROF (100 cycles, 187 tok, no sync)\n  Draft steps:        1.62 ms/cyc\n"
    "  Target verify:  x  22.45 ms/cyc  ( 91.5%)\n  Draft re-extend:    0.47 ms/cyc\n"
    "  Other overhead:     0.00 ms/cyc  (  0.0%)\n  TOTAL:             24.54 ms/cyc\n"
    "  Accept len:      1.87\n  Eff tok/s:       76.2\n")


@pytest.mark.parametrize("workers", [2, 3, 4, 6])
def test_a_block_longer_than_a_range_gives_the_same_overview(tmp_path, monkeypatch, workers):
    """A block read on past the next range and past the one after (issue 13's fuzz: the
    overview's first skipped line depended on the worker count)."""
    path = tmp_path / "long_block.log"
    path.write_text(BLOCK_SPANS_RANGES)
    monkeypatch.setenv("EAGLELOG_WORKERS", "1")
    seq = eaglelog.parse(path, cache=False)
    monkeypatch.setenv("EAGLELOG_WORKERS", str(workers))
    monkeypatch.setattr(parallel, "MIN_PARALLEL", 0)
    par = eaglelog.parse(path, cache=False)
    same(seq, par)
    a, b = seq.sources[0], par.sources[0]
    assert (a.skipped, a.first_skipped, a.lines) == (b.skipped, b.first_skipped, b.lines)
    assert len(par.prof) == 1 and par.prof["total_ms"].iloc[0] == 24.54


@pytest.mark.parametrize("workers", [2, 3])
def test_a_bench_family_past_the_head_is_reported_by_a_parallel_scan(tmp_path, monkeypatch,
                                                                     workers):
    """A benchmark script's summary in the middle of an SGLang log, past the first MiB: every
    worker count reports its first record line as the sequential scan does, once."""
    from conftest import FIXTURES, SAMPLES
    sg = (SAMPLES / "eagle3_5step.log").read_bytes()
    bench = b"".join(ln for ln in (FIXTURES / "others" / "vllm_offline.log").read_bytes()
                     .splitlines(keepends=True) if b"INFO" not in ln)
    path = tmp_path / "mixed_bench.log"
    head = sg * (2 * (1 << 20) // len(sg) + 1)
    path.write_bytes(head + bench + sg + bench + sg)
    seq, par = seq_and_par(path, monkeypatch, workers, cache=False)
    first = head.count(b"\n") + 1 + bench.split(b"\n").index(
        next(ln for ln in bench.split(b"\n") if ln.startswith(b"total_num_output_tokens:")))
    for log in (seq, par):
        other = [(d.line_no, d.message[:40]) for d in log.diagnostics if d.kind == "other_family"]
        assert other == [(first, "benchmark-script records from here on ar")]
        assert len(log.bench) == 0


@pytest.mark.parametrize("workers", [2, 3])
def test_another_family_s_lines_are_reported_by_a_parallel_scan(tmp_path, monkeypatch, workers):
    """vLLM lines in the middle of an SGLang log: the parallel scan reports their first line
    as the sequential one does (once, with the --engine that reads them)."""
    from conftest import SAMPLES
    sg = (SAMPLES / "eagle3_5step.log").read_bytes()
    vl = (SAMPLES / "vllm_v1.log").read_bytes().split(b"\n")[3] + b"\n"
    path = tmp_path / "mixed_families.log"
    head = sg * (2 * (1 << 20) // len(sg) + 1)      # past the first MiB the family is sniffed in
    path.write_bytes(head + vl + sg + vl + sg)
    seq, par = seq_and_par(path, monkeypatch, workers, cache=False)
    other = [d for d in par.diagnostics if d.kind == "other_family"]
    assert [(d.line_no, d.message) for d in other] == [
        (head.count(b"\n") + 1, "vLLM lines from here on are not read (read as sglang, the family "
                              "of its first lines): pass --engine vllm to read them")]
