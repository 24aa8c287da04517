"""Issue 35, item 6 (in part): what a schedule's vLLM config says and needs.  vLLM's method
names (vllm 0.34.0 config/speculative.py:53–97 ``SpeculativeMethod``; an unknown one raises
'Unknown speculative method', :1624–1634): SGLang's STANDALONE is vLLM's draft_model, NEXTN /
MTP heads are mtp, never eagle; UNO and FROZEN_KV_MTP have no vLLM method and are refused in
one line.  The field ``num_speculative_tokens_per_batch_size`` first ships in vLLM 0.24.0
(config/speculative.py:162); 0.23.0's ``@config`` forbids a field it does not know
(config/utils.py, ``ConfigDict(extra="forbid")``)."""
from __future__ import annotations

import pytest

from eaglelog.engine_schedules import EngineConfigError, vllm_method


@pytest.mark.parametrize("algo, method", [
    ("EAGLE3", "eagle3"), ("EAGLE", "eagle"), ("STANDALONE", "draft_model"), ("NEXTN", "mtp"),
    ("MTP", "mtp"), ("NGRAM", "ngram"), ("DFLASH", "dflash"), ("eagle3", "eagle3"),
    ("deepseek_mtp", "deepseek_mtp"), ("draft_model", "draft_model"), ("suffix", "suffix")])
def test_method_names_vllm_accepts(algo, method):
    assert vllm_method(algo) == method


@pytest.mark.parametrize("algo", ["UNO", "FROZEN_KV_MTP"])
def test_algorithms_vllm_has_no_method_for_are_refused(algo):
    with pytest.raises(EngineConfigError, match=f"vLLM has no speculative method for SGLang's "
                                                f"{algo}"):
        vllm_method(algo)
    with pytest.raises(EngineConfigError, match="no built-in speculative method 'lookahead'"):
        vllm_method("lookahead")


def test_the_schedule_says_the_vllm_version_it_needs(run):
    from conftest import ROOT
    s = ROOT / "sample_logs" / "schedule"
    r = run("schedule", "--baseline-log", str(ROOT / "sample_logs" / "batch_baseline.log"),
            *sorted(str(p) for p in s.glob("steps*.log")))
    assert r.exit_code == 0, r.output
    assert "vLLM 0.24.0 or later" in r.output
    assert "0.23.0 rejects a field it does not know at start-up" in r.output
