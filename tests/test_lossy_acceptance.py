"""Issue 35, item 5: forced or lossy acceptance flags every verdict on the run.  SGLang's
``speculative_accept_threshold_single`` / ``_acc`` below 1 (sglang 0.5.23
srt/arg_groups/fields/spec.py:109–116; default 1.0) and vLLM's ``rejection_sample_method``
'synthetic' or 'fly' (vllm 0.34.0 config/speculative.py:610–617; default 'standard') make the
accept length the setting's, not the draft model's under exact verification."""
from __future__ import annotations

from pathlib import Path

import pytest

import eaglelog
from eaglelog.analysis.engines import lossy_acceptance

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


@pytest.mark.parametrize("cfg, flagged", [
    ({"speculative_accept_threshold_single": 1.0, "speculative_accept_threshold_acc": 1.0}, None),
    ({"speculative_accept_threshold_single": 0.7}, "speculative_accept_threshold_single=0.7"),
    ({"speculative_accept_threshold_acc": 0.5}, "speculative_accept_threshold_acc=0.5"),
    ({"speculative_rejection_sample_method": "synthetic"}, "rejection_sample_method=synthetic"),
    ({"speculative_rejection_sample_method": "fly"}, "rejection_sample_method=fly"),
    ({"speculative_rejection_sample_method": "standard"}, None),
    ({"speculative_rejection_sample_method": "block"}, None),   # exact (block verification)
    ({}, None),
])
def test_which_settings_are_lossy(cfg, flagged):
    note = lossy_acceptance(cfg)
    assert (note is None) == (flagged is None)
    if flagged:
        assert note.startswith(f"forced or lossy acceptance ({flagged})")


def test_every_verdict_on_such_a_run_says_so(tmp_path):
    text = (SAMPLES / "eagle3_5step.log").read_text()
    assert "speculative_accept_threshold_single=1.0" in text
    p = tmp_path / "lossy.log"
    p.write_text(text.replace("speculative_accept_threshold_single=1.0",
                              "speculative_accept_threshold_single=0.7", 1))
    r = eaglelog.breakeven(str(p), baseline_toks=90)
    assert any(n.startswith("forced or lossy acceptance") for n in r.notes)
    s = eaglelog.summarize(str(p))
    assert any(n.startswith("forced or lossy acceptance") for n in s.notes)
    clean = eaglelog.breakeven(str(SAMPLES / "eagle3_5step.log"), baseline_toks=90)
    assert not any("lossy" in n for n in clean.notes)


def test_vllm_synthetic_rejection_is_read_from_the_speculative_config(tmp_path):
    p = tmp_path / "vllm_synth.log"
    p.write_text("INFO 11-20 09:00:00 [api_server.py:1043] non-default args: {'model': "
                 "'org/Target-8B', 'speculative_config': {'method': 'eagle3', 'model': "
                 "'org/EAGLE3-8B', 'num_speculative_tokens': 3, 'rejection_sample_method': "
                 "'synthetic', 'synthetic_acceptance_length': 2.5}}\n")
    cfg = eaglelog.parse(str(p), base_date="2026-11-20").config(str(p))
    assert cfg["speculative_rejection_sample_method"] == "synthetic"
    assert "rejection_sample_method=synthetic" in lossy_acceptance(cfg)
