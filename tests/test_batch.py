"""Small inputs typed together (eaglelog/io/batch.py) give the tables that typing each input on its
own gives: same rows, order, columns, dtypes and diagnostics."""
import pandas as pd
import pytest

import eaglelog
from eaglelog.schema import TABLES
from eaglelog.tables import concat_frames
from conftest import FIXTURES, SAMPLES


def one_by_one(paths, **kw):
    """What parse(paths) must equal: each input parsed alone (no batch), concatenated."""
    logs = [eaglelog.parse(p, **kw) for p in paths]
    tables = {t: concat_frames(TABLES[t], [lg.tables[t] for lg in logs]) for t in TABLES}
    return (tables, [d for lg in logs for d in lg.diagnostics],
            [i for lg in logs for i in lg.sources])


def assert_same_tables(got, want):
    for t in TABLES:
        a, b = got[t], want[t]
        assert list(a.columns) == list(b.columns), t
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                      check_categorical=False, obj=t)
        for c in a.columns:
            if isinstance(a[c].dtype, pd.CategoricalDtype):
                assert a[c].astype(object).tolist() == b[c].astype(object).tolist(), (t, c)


# every SGLang fixture with full dates (time-only prefixes are typed alone), the samples, and a
# vLLM and a benchmark input in between (typed alone: the batch is flushed before them)
SGLANG = sorted(p for p in (FIXTURES / "sglang").glob("*.log") if "time_only" not in p.name)
INPUTS = ([SAMPLES / "eagle3_5step.log"] + SGLANG[:30] + [SAMPLES / "vllm_v1.log"] +
          SGLANG[30:] + sorted((FIXTURES / "eagle3_prof").glob("*.log")) +
          [FIXTURES / "others" / "bench_serving.log", SAMPLES / "eagle3_2step.log"])


@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_batch_equals_the_inputs_typed_one_by_one(monkeypatch, pure):
    monkeypatch.setenv("EAGLELOG_PURE_PYTHON", pure)
    paths = [str(p) for p in INPUTS]
    got = eaglelog.parse(paths, base_date="2026-03-02")
    want, diags, infos = one_by_one(paths, base_date="2026-03-02")
    assert_same_tables(got.tables, want)
    assert [(d.source, d.line_no, d.kind, d.message) for d in got.diagnostics] == \
        [(d.source, d.line_no, d.kind, d.message) for d in diags]
    assert [(i.name, i.engine, i.counts, i.lines, i.skipped) for i in got.sources] == \
        [(i.name, i.engine, i.counts, i.lines, i.skipped) for i in infos]


def test_a_batch_with_the_analysis_projection_and_repeated_inputs():
    from eaglelog.schema import ANALYSIS_COLUMNS
    p = str(SAMPLES / "eagle3_5step.log")
    got = eaglelog.parse([p, p, str(SAMPLES / "eagle3_2step.log"), p], columns=ANALYSIS_COLUMNS)
    assert got.decode["source"].astype(str).drop_duplicates().tolist() == \
        [p, f"{p} (2)", str(SAMPLES / "eagle3_2step.log"), f"{p} (3)"]
    one = eaglelog.parse(p, columns=ANALYSIS_COLUMNS)
    for t in ("decode", "prof", "prefill"):
        sub = got.tables[t][got.tables[t]["source"] == f"{p} (2)"].reset_index(drop=True)
        mine = one.tables[t].copy()
        extra = [c for c in sub.columns if c not in mine.columns]   # other inputs' columns
        assert sub[extra].isna().all().all() and set(mine.columns) <= set(sub.columns)
        pd.testing.assert_frame_equal(sub[mine.columns].drop(columns="source"),
                                      mine.drop(columns="source"), check_categorical=False)


def test_summaries_of_many_inputs_are_those_of_each(run, tmp_path):
    """The analyses see the same rows: each input's summary as when it is given alone."""
    paths = []
    for i in range(12):
        p = tmp_path / f"s{i}.log"
        p.write_bytes((SAMPLES / ("eagle3_5step.log" if i % 2 else "eagle3_2step.log"))
                      .read_bytes())
        paths.append(p)
    many = run("-q", "summary", "--no-cache", "--baseline-toks", "90", "-f", "json", *paths)
    assert many.exit_code == 0
    import json
    got = json.loads(many.stdout)["runs"]
    assert len(got) == 12
    for p, g in zip(paths[:2], got[:2]):
        (alone,) = json.loads(run("-q", "summary", "--no-cache", "--baseline-toks", "90", "-f",
                                  "json", p).stdout)["runs"]
        assert g == alone
