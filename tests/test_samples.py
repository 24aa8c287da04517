"""The bundled sample logs: every marker grep finds is a row, and the known case is reproduced."""
import pandas as pd
import pytest

import eaglelog
from conftest import SAMPLES, grep_count

# SGLang samples (vllm_*.log: tests/test_vllm.py)
SAMPLE_FILES = sorted(p.name for p in SAMPLES.glob("*.log") if not p.name.startswith("vllm"))
MARKERS = {"prof": "EAGLE3_PROF", "decode": "Decode batch", "prefill": "Prefill batch",
           "server_args": "server_args=", "requests": "Finish: obj="}


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_row_count_equals_grep_count(name):
    path = SAMPLES / name
    log = eaglelog.parse(path)
    for table, marker in MARKERS.items():
        assert len(log.table(table)) == grep_count(path, marker), (name, table)
    # four phase lines per block in these samples
    assert len(log.prof_phases) == 4 * grep_count(path, "EAGLE3_PROF")
    assert not [d for d in log.diagnostics if d.kind != "date"], log.diagnostics[:3]


def test_samples_say_they_are_synthetic():
    for name in SAMPLE_FILES:
        first = (SAMPLES / name).read_text().splitlines()[0]
        assert first.startswith("# SYNTHETIC LOG"), name
    assert "synthetic" in (SAMPLES / "README.md").read_text().lower()


def test_five_step_sample_reproduces_the_known_case():
    log = eaglelog.parse(SAMPLES / "eagle3_5step.log")
    prof = log.prof
    assert len(prof) == 42 and prof.complete.all() and (prof["mode"] == "no sync").all()
    assert prof.total_ms.mean() == pytest.approx(27.28, abs=0.02)
    assert prof.accept_len.mean() == pytest.approx(1.14, abs=0.01)
    ph = log.prof_phases.groupby("phase", observed=True).ms_per_cycle.mean()
    assert ph["Draft steps"] == pytest.approx(0.95, abs=0.01)
    assert ph["Target verify"] == pytest.approx(26.04, abs=0.03)
    assert ph["Draft re-extend"] == pytest.approx(0.29, abs=0.01)
    d = log.decode
    assert d.accept_len.min() >= 1.9 and d.accept_len.max() <= 2.65
    assert d.accept_len.mean() == pytest.approx(2.29, abs=0.02)
    assert d.gen_throughput.mean() == pytest.approx(75.5, abs=0.5)
    cfg = log.config()
    assert (cfg["speculative_algorithm"], cfg["speculative_num_steps"],
            cfg["speculative_eagle_topk"], cfg["speculative_num_draft_tokens"]) == ("EAGLE3", 5,
                                                                                    1, 6)
    # per-request identities hold: completion = 1 + accepted drafts + verifies
    r = log.requests
    assert (r.completion_tokens == 1 + r.accepted_drafts + r.verify_ct).all()
    assert d.timestamp.is_monotonic_increasing
    assert d.timestamp.iloc[0] == pd.Timestamp("2026-03-02 14:00:32.543")


def test_baseline_sample_has_no_spec_fields():
    log = eaglelog.parse(SAMPLES / "baseline.log")
    assert log.decode.accept_len.isna().all() and log.prof.empty
    assert log.config()["speculative_algorithm"] is None
    assert log.decode.gen_throughput.median() == pytest.approx(90.0, abs=0.5)
