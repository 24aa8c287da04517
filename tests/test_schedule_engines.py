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


def _runs(tmp_path, old: str, new: str) -> list[str]:
    from conftest import ROOT
    out = []
    for p in sorted((ROOT / "sample_logs" / "schedule").glob("steps*.log")):
        text = p.read_text()
        assert old in text
        q = tmp_path / p.name
        q.write_text(text.replace(old, new))
        out.append(str(q))
    return out


def test_what_sglang_and_vllm_would_ignore_is_refused(tmp_path, run):
    """SGLang 0.5.23 switches adaptive speculation off, with only a warning, under attention DP
    (adaptive_spec_params.py:56–90); vLLM 0.34.0 drops the per-batch-size schedule under data
    parallelism (config/vllm.py:1031–1048).  Neither config is emitted then, and -f says why."""
    from conftest import ROOT
    from eaglelog.engine_schedules import sglang_ignores, vllm_ignores
    assert sglang_ignores({"speculative_algorithm": "EAGLE3", "speculative_eagle_topk": 1}) is None
    assert "only topk=1" in sglang_ignores({"speculative_algorithm": "EAGLE3",
                                            "speculative_eagle_topk": 4})
    assert "only EAGLE/EAGLE3" in sglang_ignores({"speculative_algorithm": "NEXTN"})
    assert "attention DP" in sglang_ignores({"speculative_algorithm": "EAGLE",
                                             "attn_dp_size": 2})
    assert vllm_ignores({"dp_size": 1}) is None and "data parallel size 2" in \
        vllm_ignores({"dp_size": 2})
    base = str(ROOT / "sample_logs" / "batch_baseline.log")
    paths = _runs(tmp_path, "enable_dp_attention=False", "enable_dp_attention=True")
    r = run("schedule", "--baseline-log", base, *paths)
    assert r.exit_code == 0 and "SGLang: none (see the note)" in r.output
    assert "no SGLang config: SGLang switches adaptive speculation off" in r.output
    assert "vllm serve MODEL" in r.output
    f = run("schedule", "--baseline-log", base, "-f", "sglang", *paths)
    assert f.exit_code != 0 and "attention DP is not supported" in f.stderr
    (tmp_path / "dp").mkdir()
    paths = _runs(tmp_path / "dp", "dp_size=1", "dp_size=2")
    r = run("schedule", "--baseline-log", base, *paths)
    assert "vLLM: none (see the note)" in r.output and "data parallel size 2" in r.output


def test_sglang_pads_the_batch_before_it_picks_a_slot():
    """sglang 0.5.23: the default decode CUDA-graph sizes under speculation
    (cuda_graph_hook.py:500–532) and ``_route`` (adaptive_spec_params.py:342–358): batch 15
    pads to 16 and runs the 16 slot; 31 pads to 32; above cuda_graph_max_bs nothing pads."""
    from eaglelog.engine_schedules import sglang_padding_changes, sglang_spec_graph_bs
    assert sglang_spec_graph_bs(64)[:12] == [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16]
    assert sglang_spec_graph_bs(64)[-4:] == [52, 56, 60, 64] and sglang_spec_graph_bs(20)[-1] == 20
    slots = [(1, 5), (2, 3), (16, 1), (32, 0)]
    assert sglang_padding_changes(slots, 256, 40) == [(15, 3, 1), (31, 1, 0)]
    assert sglang_padding_changes(slots, 16, 40) == [(15, 3, 1)]      # 31: no graph, no pad


def test_the_schedule_says_where_padding_moves_k(run):
    from conftest import ROOT
    s = ROOT / "sample_logs" / "schedule"
    r = run("schedule", "--baseline-log", str(ROOT / "sample_logs" / "batch_baseline.log"),
            "-f", "json", *sorted(str(p) for p in s.glob("steps*.log")))
    import json
    obj = json.loads(r.output)
    assert obj["sglang_padded"] == [{"running_req": 15, "intended_steps": 3, "sglang_runs": 1}]
    assert any("running_req 15 runs K = 1, not 3" in n for n in obj["notes"])


def test_the_piecewise_override_is_said(run):
    """vllm 0.24.0 config/vllm.py:758–773 (_maybe_override_dynamic_sd_cudagraph_mode): dynamic
    speculative decoding turns full CUDA graphs into PIECEWISE; 0.34.0 has no such override."""
    from conftest import ROOT
    s = ROOT / "sample_logs" / "schedule"
    r = run("schedule", "--baseline-log", str(ROOT / "sample_logs" / "batch_baseline.log"),
            *sorted(str(p) for p in s.glob("steps*.log")))
    assert "vLLM 0.24.0 switches full CUDA graphs to PIECEWISE" in r.output


def test_a_config_for_the_engine_that_did_not_measure_says_so(run):
    from conftest import ROOT
    s = ROOT / "sample_logs" / "schedule"
    r = run("schedule", "--baseline-log", str(ROOT / "sample_logs" / "batch_baseline.log"),
            *sorted(str(p) for p in s.glob("steps*.log")))
    assert "the runs were measured on SGLang, not vLLM" in r.output
    assert "not SGLang:" not in r.output
