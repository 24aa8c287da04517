"""Issue 35, item 5: SGLang's OpenAI-compatible responses carry per-request speculation
metrics in ``sglext.spec_tokens_details`` (0.5.19 →, ``return_spec_tokens_details``; sglang
0.5.23 srt/entrypoints/openai/protocol.py:456–481, utils.py:313–342): a saved response a line
is a per-request source for ``eaglelog requests``.  The responses here are written in that
shape, with a known truth."""
from __future__ import annotations

import json

import pytest

import eaglelog
from eaglelog.parsers.requests_bench import parse_sglang_response


def response(i: int, hist: list[int], **over) -> str:
    steps = sum(hist)
    acc = sum(j * x for j, x in enumerate(hist))
    comp = steps + acc + 1
    d = {"spec_accept_rate": acc / (3 * steps), "spec_accept_length": comp / steps,
         "spec_cap_length": 0.0, "spec_block_accept_length": 0.0,
         "spec_num_correct_drafts": acc, "spec_num_proposed_drafts": 3 * steps,
         "spec_verify_ct": steps, "spec_correct_drafts_histogram": hist,
         "spec_cap_lens_histogram": []}
    d.update(over)
    return json.dumps({"id": f"chatcmpl-{i}", "object": "chat.completion", "model": "m",
                       "choices": [{"index": 0, "message": {"role": "assistant",
                                                            "content": "…"},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 50, "completion_tokens": comp},
                       "sglext": {"spec_tokens_details": d}})


def test_one_response_is_one_request():
    r = parse_sglang_response(response(0, [10, 20, 30, 40]))
    rec = r.record
    assert r.problems == []
    assert (rec["tool"], rec["scope"], rec["steps"], rec["accepted_tokens"]) == \
        ("sglang.response", "request", 100, 200)
    assert rec["accept_len"] == 3.0 and rec["step_tokens"] == 300
    assert rec["output_tokens"] == 301 and rec["label"] == "chatcmpl-0"


def test_a_histogram_that_disagrees_is_said():
    r = parse_sglang_response(response(1, [10, 20, 30, 40], spec_verify_ct=99))
    assert any("sums to 100, not spec_verify_ct 99" in p for p in r.problems)
    assert parse_sglang_response('{"spec_tokens_details": 1}').record is None


def test_requests_reads_a_file_of_responses(tmp_path):
    hists = [[5, 10, 15, 20], [20, 15, 10, 5], [10, 10, 10, 10], [1, 2, 3, 40]]
    p = tmp_path / "responses.jsonl"
    p.write_text("\n".join(response(i, h) for i, h in enumerate(hists)) + "\n")
    r = eaglelog.requests(str(p))
    g = r.runs[0].overall
    steps = sum(sum(h) for h in hists)
    acc = sum(sum(j * x for j, x in enumerate(h)) for h in hists)
    assert g.requests == 4
    assert g.pooled.estimate == pytest.approx(1 + acc / steps)
