"""Golden tests: every format variant of sglang.md, eagle3_prof.md and others.md has a fixture whose
expected rows were written by hand from the documents (tests/fixtures/README.md)."""
import json
import math

import pytest

import eaglelog
from eaglelog.report import records
from conftest import FIXTURES

# tests/fixtures/engines/ holds simulated runs checked against their truth.json by
# tests/test_engine_rules.py (no hand-written rows); every other fixture has its .expected.json
# tests/fixtures/acceptance/ likewise: tests/test_acceptance.py works their values by hand
OWN_TESTS = ("engines", "acceptance")
ENGINE_CASES = sorted(p for d in OWN_TESTS for p in (FIXTURES / d).glob("*.log"))
CASES = sorted(p for p in FIXTURES.glob("*/*.log") if p.parent.name not in OWN_TESTS)
RECORD_LOSS = {"malformed", "truncated"}


def load(case):
    return json.loads(case.with_suffix(".expected.json").read_text())


def same(got, want):
    if isinstance(got, list) and isinstance(want, str):  # JSON-list columns come back as lists
        want = json.loads(want)
    if want is None:
        return got is None or (isinstance(got, float) and math.isnan(got))
    if isinstance(want, float) and isinstance(got, (int, float)):
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)
    return got == want


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture(case):
    exp = load(case)
    log = eaglelog.parse(case, base_date=exp.get("base_date"))
    # tables the fixture does not list (added later, another family's) must be empty
    assert {t: len(df) for t, df in log.tables.items()} == \
        {t: exp["counts"].get(t, 0) for t in log.tables}
    for table, rows in exp["rows"].items():
        got = {r["line_no"]: r for r in records(log.table(table))}
        for want in rows:
            row = got[want["line_no"]]
            for col, value in want.items():
                assert same(row.get(col), value), (table, want["line_no"], col, row.get(col),
                                                   value)
    incomplete = sorted(d.line_no for d in log.diagnostics if d.kind == "incomplete_block")
    assert incomplete == sorted(exp.get("incomplete_blocks", []))
    lost = sorted(d.line_no for d in log.diagnostics if d.kind in RECORD_LOSS)
    assert lost == sorted(exp.get("reported_lines", []))


@pytest.mark.parametrize("case", CASES + ENGINE_CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_marker_line_is_a_record_or_reported(case):
    """Nothing is lost: each line grep finds becomes a row or is reported with its number."""
    exp = load(case) if case.parent.name not in OWN_TESTS else {"base_date": "2026-03-02"}
    log = eaglelog.parse(case, base_date=exp.get("base_date"))
    reported = {d.line_no for d in log.diagnostics if d.kind in RECORD_LOSS}
    for table, marker in (("decode", "Decode batch"), ("prefill", "Prefil"),
                          ("prof", "EAGLE3_PROF"), ("server_args", "server_args="),
                          ("requests", "Finish: obj="),
                          ("spec_params", "Adaptive spec params updated: ")):
        lines = {i for i, ln in enumerate(case.read_bytes().split(b"\n"), 1)
                 if marker.encode() in ln}
        got = set(log.table(table).line_no.tolist())
        assert lines <= got | reported, (table, sorted(lines - got - reported))
