"""Issue 35, item 7 (in part): llama-server's responses carry the request's speculation in
``timings`` — ``draft_n`` and ``draft_n_accepted`` when it drafted (llama.cpp
tools/server/server-task.cpp, ``result_timings::to_json``).  A saved response a line is a
per-request source: the first token comes from the prompt's pass and every later step commits
its accepted drafts and one more, so steps = predicted_n − 1 − draft_n_accepted.  Responses
written in that shape with known counts."""
from __future__ import annotations

import json

import pytest

import eaglelog
from eaglelog.parsers.requests_bench import parse_llama_response


def response(i: int, n: int, drafted: int, accepted: int) -> str:
    return json.dumps({"id": f"chatcmpl-{i}", "object": "chat.completion",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": "…"}}],
                       "usage": {"completion_tokens": n, "prompt_tokens": 808},
                       "timings": {"cache_n": 804, "prompt_n": 4, "prompt_ms": 128.3,
                                   "predicted_n": n, "predicted_ms": 20629.2,
                                   "predicted_per_second": 32.2, "draft_n": drafted,
                                   "draft_n_accepted": accepted}})


def test_one_response_is_one_request():
    r = parse_llama_response(response(0, 665, 604, 515))
    rec = r.record
    assert r.problems == [] and rec["tool"] == "llama.cpp.response"
    assert rec["steps"] == 149 and rec["step_tokens"] == 664
    assert rec["accept_len"] == pytest.approx(664 / 149)
    assert rec["acceptance_rate"] == pytest.approx(515 / 604)
    assert rec["duration_s"] == pytest.approx(20.6292)


def test_impossible_counts_are_said():
    r = parse_llama_response(response(1, 10, 5, 9))
    assert r.record.get("steps") is None and r.record.get("accept_len") is None
    assert any("leaves no verify step" in p for p in r.problems)
    assert any("draft_n_accepted 9 > draft_n 5" in p for p in r.problems)
    # a response without drafting carries no draft counts: not a record of this kind
    assert parse_llama_response('{"timings": {"predicted_n": 5}}').record is None


def test_requests_reads_a_file_of_responses(tmp_path):
    rows = [(665, 604, 515), (200, 150, 120), (300, 240, 150), (120, 90, 60)]
    p = tmp_path / "llama.jsonl"
    p.write_text("\n".join(response(i, *r) for i, r in enumerate(rows)) + "\n")
    g = eaglelog.requests(str(p)).runs[0].overall
    tokens = sum(n - 1 for n, _, _ in rows)
    steps = sum(n - 1 - a for n, _, a in rows)
    assert g.requests == 4 and g.pooled.estimate == pytest.approx(tokens / steps)
