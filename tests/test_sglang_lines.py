"""Line parsers on hand-checked examples of each shape (values asserted one by one)."""
import json
import math

import pytest

from eaglelog.parsers.sglang import (parse_decode_line, parse_finish_line, parse_prefill_line,
                                     parse_request_json_line, parse_server_args,
                                     parse_server_args_line)


def test_decode_current_with_everything():
    line = ("[2026-07-28 09:14:05.332 DP2 TP2 EP2] Decode batch, #running-req: 24, #token: 98304, "
            "token usage: 0.35, accept len: 2.41, accept rate: 0.47, pre-allocated usage: 0.06, "
            "#prealloc-req: 0, #transfer-req: 2, #retracted-req: 0, cuda graph: True, "
            "gen throughput (token/s): 1577.90, #queue-req: 0, est. decode TFLOPS/s (per GPU): "
            "41.27, est. read BW (GB/s per GPU): 2890.55, est. write BW (GB/s per GPU): 12.08, "
            "fwd occupancy: 88.40%")
    r = parse_decode_line(line)
    assert r.problems == []
    rec = r.record
    assert rec["_date"] == "2026-07-28" and rec["_time"] == "09:14:05.332"
    assert rec["ranks"] == "DP2 TP2 EP2" and rec["dp"] == 2 and rec["tp"] == 2 and rec["ep"] == 2
    assert rec["running_req"] == 24 and rec["num_tokens"] == 98304 and rec["token_usage"] == 0.35
    assert rec["accept_len"] == 2.41 and rec["accept_rate"] == 0.47
    assert rec["pre_allocated_usage"] == 0.06 and rec["transfer_req"] == 2
    assert rec["graph_backend"] == "cuda graph" and rec["graph"] is True
    assert rec["gen_throughput"] == 1577.90 and rec["queue_req"] == 0
    assert rec["est_decode_tflops"] == 41.27 and rec["est_read_bw"] == 2890.55
    assert rec["est_write_bw"] == 12.08 and rec["fwd_occupancy"] == 88.40
    assert rec["header"] == "," and rec["trailing_comma"] is False and rec["extra"] is None


def test_decode_old_trailing_comma_and_largest_len():
    line = ("[2025-03-07 06:51:29 TP0] Decode batch. #running-req: 16, #token: 10384, token usage: "
            "0.05, accept len: 2.93, gen throughput (token/s): 1102.56, largest-len: 0, "
            "#queue-req: 1, ")
    rec = parse_decode_line(line).record
    assert rec["header"] == "." and rec["trailing_comma"] is True
    assert rec["largest_len"] == 0 and rec["queue_req"] == 1 and rec["accept_len"] == 2.93
    assert "accept_rate" not in rec


def test_decode_iter_header_gpu_tag_and_legacy():
    rec = parse_decode_line("[2025-10-24 21:15:09 TP0] Decode batch [5120], #running-req: 8, "
                            "#token: 6904, token usage: 0.03, cuda graph: True, gen throughput "
                            "(token/s): 689.31, #queue-req: 0, ").record
    assert rec["iter"] == 5120 and rec["header"] == "[N],"
    rec = parse_decode_line("[gpu=3] Decode batch. #running-req: 48, #token: 30872, token usage: "
                            "0.27, gen throughput (token/s): 1904.66, #queue-req: 9").record
    assert rec["gpu"] == 3 and rec["ranks"] is None and rec["_time"] is None
    rec = parse_decode_line("#running-req: 7, #token: 3702, token usage: 0.03, gen throughput "
                            "(token/s): 512.88, #queue-req: 2").record
    assert rec["header"] == "none" and rec["running_req"] == 7 and rec["gen_throughput"] == 512.88


def test_decode_hybrid_spellings_and_unknown_fields():
    rec = parse_decode_line("[2025-06-30 09:58:40 TP0] Decode batch. #running-req: 5, #token: "
                            "full=6120, swa=2048, token usage: full=0.03, swa=0.08, accept len: "
                            "2.36, cuda graph: True, gen throughput (token/s): 415.09, "
                            "#queue-req: 0").record
    assert (rec["full_token"], rec["swa_token"]) == (6120, 2048)
    assert (rec["full_token_usage"], rec["swa_token_usage"]) == (0.03, 0.08)
    assert "num_tokens" not in rec and rec["extra"] is None
    rec = parse_decode_line("[2026-02-24 12:30:18 TP0] Decode batch, #running-req: 6, #token: "
                            "5012, token usage: 0.03, cuda graph: True, gen throughput (token/s): "
                            "512.40, #queue-req: 0, #cache_miss: 3").record
    assert rec["extra"] == "#cache_miss: 3" and rec["queue_req"] == 0


def test_decode_not_a_record_and_cut_short():
    assert parse_decode_line("Decode batch size 8 exceeds the captured graphs").record is None
    # a line cut short keeps the fields before the last separator (the last may be cut inside
    # its value: '#token: 50' of '#token: 5012') and says so
    r = parse_decode_line("[2026-02-24 12:30:18 TP0] Decode batch, #running-req: 6, #token: 50")
    assert r.record["running_req"] == 6 and "num_tokens" not in r.record
    assert r.problems == ["cut short (no '#queue-req' field): the fields before '#token: 50' "
                          "are kept"]
    r = parse_decode_line("[2026-02-24 12:30:18 TP0] Decode batch, #running-req: 6, #token: 5012, "
                          "token usage: 0.03, accept len: 2.31, gen throughput (token/s): 51")
    assert (r.record["num_tokens"], r.record["accept_len"]) == (5012, 2.31)
    assert "gen_throughput" not in r.record and len(r.problems) == 1
    r = parse_decode_line("[2026-02-24 12:30:18 TP0] Decode batch, #runn")
    assert r.record is None and r.problems == ["cut short before its first field"]
    r = parse_prefill_line("[2026-02-24 12:30:18] Prefill batch. #new-seq: 1, #new-token: 512, "
                           "#cached-token: 0, token usage: 0.01, #running-req: 0, #queue-r")
    assert (r.record["new_token"], r.record["running_req"]) == (512, 0)
    assert r.problems == ["cut short (no '#queue-req' field): the fields before '#queue-r' "
                          "are kept"]


def test_decode_line_with_a_call_site_suffix_is_whole():
    """A logger format that appends the call site (another engine reusing SGLang's header):
    the line is whole, not cut short, with or without '#queue-req'."""
    r = parse_decode_line("[2026-02-24 12:30:18] Decode batch. #running-req: 2, #token: 100, "
                          "token usage: 0.01, accept len: 2.00, gen throughput (token/s): 80.0 "
                          "(scheduler_metrics_mixin.py:200)")
    assert r.problems == [] and r.record["gen_throughput"] == 80.0 and r.record["extra"] is None
    r = parse_decode_line("[2026-02-24 12:30:18] Decode batch. #running-req: 2, #token: 100, "
                          "token usage: 0.01, gen throughput (token/s): 80.0, #queue-req: 3 "
                          "(scheduler.py:1234)")
    assert r.problems == [] and r.record["queue_req"] == 3


def test_numbers_are_ascii_finite_and_in_range():
    """int()/float() take 'inf', 'nan', '1_000', Arabic-Indic and full-width digits: a logger
    prints none of them, so each is a bad value (reported), never a number."""
    base = ("[2026-02-24 12:30:18] Decode batch. #running-req: 2, #token: 100, token usage: 0.01, "
            "accept len: {}, gen throughput (token/s): {}, #queue-req: {}")
    for al, tput, q in (("inf", "80.0", "0"), ("nan", "80.0", "0"), ("2.0", "1_000.0", "0"),
                        ("2.0", "8\u0660.0", "0"), ("2.0", "80.0", "\uff11"),
                        ("2.0", "9" * 400 + ".0", "0"), ("2.0", "80.0", "9223372036854775808"),
                        ("1e400", "80.0", "0"), ("2.0", "-inf", "0")):
        r = parse_decode_line(base.format(al, tput, q))
        assert r.record is not None and len(r.problems) == 1, (al, tput, q, r)
        assert r.problems[0].startswith("bad value in")
        assert all(not isinstance(v, float) or v == v and abs(v) != float("inf")
                   for v in r.record.values())
    r = parse_decode_line("[2026-02-24 12:30:18] Decode batch. #running-req: \u0661, #token: 1, "
                          "token usage: 0.01, gen throughput (token/s): 80.0, #queue-req: 0")
    assert "running_req" not in r.record and r.problems == ["bad value in '#running-req: \u0661'"]


def test_decode_bad_value_is_reported_not_guessed():
    r = parse_decode_line("[2026-02-24 12:30:18] Decode batch, #running-req: six, #token: 5012, "
                          "token usage: 0.03, gen throughput (token/s): 512.40, #queue-req: 0")
    assert "running_req" not in r.record and r.problems == ["bad value in '#running-req: six'"]


def test_prefill_shapes():
    rec = parse_prefill_line("[10:41:07 TP0] Prefill batch(mixed #running-req: 6). #new-seq: 1, "
                             "#new-token: 256, #cached-token: 0, cache hit rate: 0.00%, token "
                             "usage: 0.02, #queue-req: 1").record
    assert rec["mixed_running_req"] == 6 and rec["cache_hit_rate"] == 0.0
    assert rec["_date"] is None and rec["_time"] == "10:41:07" and rec["tp"] == 0
    rec = parse_prefill_line("[2025-06-20 08:03:41 DP0 TP0] Prefill batch. #new-seq: 1, "
                             "#new-token: 3840, #cached-token: 0, token usage: 0.03, "
                             "#unbootstrapped-req: 0, #queue-req: 2, #transferring-req: 1, input "
                             "throughput (token/s): 35512.44 ").record
    assert rec["transferring_req"] == 1 and rec["input_throughput"] == 35512.44
    assert rec["trailing_comma"] is False
    rec = parse_prefill_line("[gpu_id=0] Prefil batch. #new-seq: 1, #new-token: 412, "
                             "#cached-token: 18, cache hit rate: 4.19%, #running-req: 0, "
                             "#queue-req: 0").record
    assert rec["gpu"] == 0 and rec["new_token"] == 412 and rec["cache_hit_rate"] == 4.19
    rec = parse_prefill_line("new fill batch. #seq: 4. #cached_token: 96. #new_token: 1804. "
                             "#remaining_req: 11. #running_req: 0. tree_cache_hit_rate: 5.05%.")\
        .record
    assert (rec["new_seq"], rec["cached_token"], rec["new_token"], rec["queue_req"],
            rec["running_req"], rec["cache_hit_rate"]) == (4, 96, 1804, 11, 0, 5.05)
    rec = parse_prefill_line("[2025-12-02 11:36:51 DP1 TP1] Prefill batch, #new-seq: 2, "
                             "#new-token: 6144, #cached-token: 0, token usage: 0.03, "
                             "#running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 2, "
                             "input throughput (token/s): 24110.72, ").record
    assert rec["bootstrap_req"] == 0 and rec["inflight_req"] == 2 and rec["trailing_comma"]


def test_server_args_literal_and_non_literal_values():
    text = ("server_args=ServerArgs(model_path='/m/a, b=c', tp_size=2, speculative_algorithm="
            "'EAGLE3', speculative_num_steps=5, cuda_graph_bs=[1, 2, 4], json_model_override_args="
            "'{\"a\": 1}', lora_paths=[LoRARef(lora_id='ab', lora_name='x')], max_loras=None, "
            "ratio=inf, enable_x=True)")
    args, whole = parse_server_args(text)
    assert whole
    assert args["model_path"] == "/m/a, b=c" and args["tp_size"] == 2
    assert args["speculative_num_steps"] == 5 and args["cuda_graph_bs"] == [1, 2, 4]
    assert args["json_model_override_args"] == '{"a": 1}'
    assert args["lora_paths"] == "[LoRARef(lora_id='ab', lora_name='x')]"
    assert args["ratio"] == "inf" and args["max_loras"] is None and args["enable_x"] is True


def test_server_args_cut_short_recovers_keys():
    args, whole = parse_server_args("server_args=ServerArgs(model_path='/m', tp_size=4, "
                                    "speculative_num_steps=3, dp_si")
    assert not whole and args == {"model_path": "/m", "tp_size": 4, "speculative_num_steps": 3}
    r = parse_server_args_line("[2026-01-01 00:00:00] server_args=ServerArgs(model_path='/m', "
                               "tp_si")
    assert r.record["parse_ok"] is False and "cut short" in r.problems[0]


def test_server_args_never_evaluates_code():
    args, whole = parse_server_args("server_args=ServerArgs(x=__import__('os').system('false'))")
    assert whole and args == {"x": "__import__('os').system('false')"}


def test_finish_line_every_key_generation():
    r = parse_finish_line(
        "Finish: obj=GenerateReqInput(rid='d91b06e4', stream=True), out={'meta_info': {'id': "
        "'d91b06e4', 'finish_reason': {'type': 'stop', 'matched': 151645}, 'prompt_tokens': 212, "
        "'completion_tokens': 96, 'cached_tokens': 64, 'spec_accept_rate': 0.598, "
        "'spec_accept_length': 2.82, 'spec_accepted_drafts': 61, 'spec_proposed_drafts': 102, "
        "'spec_verify_ct': 34, 'spec_accept_histogram': [4, 10, 9, 11], 'e2e_latency': 0.61}}")
    rec = r.record
    assert rec["rid"] == "d91b06e4" and rec["finish_reason"] == "stop"
    assert (rec["completion_tokens"], rec["verify_ct"], rec["accepted_drafts"],
            rec["proposed_drafts"]) == (96, 34, 61, 102)
    assert json.loads(rec["accept_histogram"]) == [4, 10, 9, 11]
    assert rec["_time"] is None and rec["format"] == "text"
    rec = parse_finish_line(
        "[2025-12-01 10:00:00] Finish: obj=GenerateReqInput(rid='x1'), out={'meta_info': {'id': "
        "'x1', 'completion_tokens': 40, 'spec_verify_ct': 17, 'spec_accept_token_num': 22, "
        "'spec_draft_token_num': 51}}").record
    assert (rec["accepted_drafts"], rec["proposed_drafts"]) == (22, 51)
    assert rec["_date"] == "2025-12-01"


def test_finish_line_truncated_values_fall_back_to_regex():
    rec = parse_finish_line(
        "Finish: obj=GenerateReqInput(rid='t1'), out={'text': 'Once upon ... a time', "
        "'output_ids': [1, 2, ... 9], 'meta_info': {'id': 't1', 'completion_tokens': 13, "
        "'spec_verify_ct': 5, 'e2e_latency': 0.2}}").record
    assert rec["rid"] == "t1" and rec["completion_tokens"] == 13 and rec["verify_ct"] == 5
    assert math.isclose(rec["e2e_latency"], 0.2)


@pytest.mark.parametrize("event,expect", [("request.finished", True),
                                          ("request.received", False)])
def test_request_json_line(event, expect):
    line = ('{"timestamp": "2026-01-12T08:41:09.207114", "event": "%s", "rid": "a0c4", '
            '"obj": {"rid": "a0c4"}, "out": {"meta_info": {"id": "a0c4", "completion_tokens": '
            '40, "spec_verify_ct": 17}}}' % event)
    r = parse_request_json_line(line)
    if not expect:
        assert r.record is None and not r.problems
        return
    assert r.record["rid"] == "a0c4" and r.record["verify_ct"] == 17
    assert r.record["_date"] == "2026-01-12" and r.record["_time"] == "08:41:09.207114"


def test_the_fast_decode_path_equals_key_value_segmentation():
    """Every decode line of the samples and fixtures: the anchored fast match, when it applies,
    gives the same columns as the general key/value segmentation."""
    from conftest import FIXTURES, SAMPLES
    from eaglelog.parsers.sglang import DECODE_KEYS, _fast_decode, _segments
    seen = 0
    files = list(SAMPLES.glob("*.log")) + list(FIXTURES.glob("*/*.log"))
    for path in files:
        for line in path.read_text(errors="replace").splitlines():
            i = line.find("Decode batch")
            if i < 0:
                continue
            j = line.find("#running-req", i)
            rest = line[j:]
            fast, slow = {}, {}
            if _fast_decode(rest, fast):
                _segments(rest, DECODE_KEYS, slow, [])
                assert fast == slow, line
                seen += 1
    assert seen > 500


def test_a_rank_tag_too_long_for_a_rank(tmp_path):
    """A bracket whose rank has 10 or more digits is no SGLang prefix (the C accelerator reads
    at most 9): the record keeps its time, without ranks, instead of failing the parse."""
    import eaglelog
    body = ("Decode batch. #running-req: 8, #token: 53175, token usage: 0.38, accept len: 2.10, "
            "accept rate: 0.35, cuda graph: True, gen throughput (token/s): 92.96, "
            "#queue-req: 0, \n")
    path = tmp_path / "tags.log"
    path.write_text(f"[2026-01-20 10:00:00 TP99999999999999999999] {body}"
                    f"[2026-01-20 10:00:01 TP1234567890] {body}"
                    f"[2026-01-20 10:00:02 TP123456789] {body}")
    d = eaglelog.parse(path).decode
    assert len(d) == 3 and d["ranks"].isna().tolist() == [True, True, False]
    assert d["tp"].tolist()[2] == 123456789 and d["tp"].isna().tolist()[:2] == [True, True]
    assert d["timestamp"].astype(str).tolist()[0] == "2026-01-20 10:00:00"


def test_a_batch_size_beyond_a_million_is_a_bad_value(tmp_path):
    """running_req is a batch size: 0 … 10^6 (issue 36, item 8: '#running-req: 2147483647'
    passed the 32-bit check and sized the rate model's arrays); a larger count, or a negative
    one, keeps the record, without it, and says so at its line; the C accelerator leaves such a
    line to the Python parser."""
    import eaglelog
    from eaglelog.parsers import scan
    line = ("[2026-01-20 10:00:00 TP0] Decode batch. #running-req: {}, #token: 53175, token "
            "usage: 0.38, accept len: 2.10, accept rate: 0.35, cuda graph: True, gen throughput "
            "(token/s): 92.96, #queue-req: 0, \n")
    path = tmp_path / "big.log"
    path.write_text("".join(line.format(v) for v in (1000000, 2147483647, 8, -1, 1000001)))
    for pure in (False, True):
        scan._PURE = pure
        try:
            log = eaglelog.parse(path, cache=False)
        finally:
            scan._PURE = False
        d = log.decode
        assert str(d["running_req"].dtype) == "Int32"
        assert d["running_req"].tolist()[0] == 1000000 and d["running_req"].tolist()[2] == 8
        assert d["running_req"].isna().tolist() == [False, True, False, True, True]
        assert [(x.line_no, x.kind) for x in log.diagnostics] == [(2, "bad_value"),
                                                                    (4, "bad_value"),
                                                                    (5, "bad_value")]
        assert "2147483647" in log.diagnostics[0].message
