"""Benchmark scripts (parsers/bench.py; others.md §3–§5): vLLM's offline example in every print
order, bench_speculative / mtbench / run_eval / adaptive / send_one lines with values no script
prints, result blocks with non-finite values, cut lines (issue 13).

vLLM's examples/offline_inference/spec_decode.py, checked in the source: v0.8/0.9 (e.g. the
ekagra-ranjan/vllm fork of that time) prints '-' * 50, ``mean acceptance length: %.2f``, '-' * 50
and ``acceptance at token {i}:{x:.2f}`` (no space); later vllm-project/vllm (commit eb987dff)
prints ``total_num_output_tokens: N`` first, then ``num_drafts``, ``num_draft_tokens``,
``num_accepted_tokens``, ``mean acceptance length`` = 1 + accepted / drafts, '-' * 50 and
``acceptance at token {i}: {x:.2f}`` (accepted at position i / drafts); copies of it print
other lines (latency, throughput) between the keys.  Lines are synthetic.
"""
import json
import math

import pytest
from hypothesis import given, settings, strategies as st

import eaglelog
from eaglelog.parsers import bench, others
from conftest import FIXTURES
from others_mutations import (check_block_substitutions, check_substitutions,
                              check_truncations, scan)

OTHERS = FIXTURES / "others"
KINDS = others.FAMILY_KINDS["bench"]


def _bench(text):
    rows, diags = scan(text, KINDS)
    return rows["bench"], [(d.line_no, d.kind) for d in diags], diags


# ------------------------------------------------------------------ vLLM offline example
def test_offline_example_in_every_version():
    b = eaglelog.parse(OTHERS / "vllm_offline_versions.log").bench
    got = [(r.line_no, r.end_line, r.accept_len, None if pd_isna(r.drafts) else r.drafts,
            None if pd_isna(r.output_tokens) else r.output_tokens, json.loads(r.per_position))
           for r in b.itertuples()]
    assert got == [(2, 5, 2.41, None, None, [0.74, 0.67]),
                   (7, 15, 2.92, 500, 12800, [0.82, 0.62, 0.48]),
                   (16, 22, 2.5, 200, 5000, [0.9, 0.6])]
    assert b["complete"].all()


def pd_isna(v):
    import pandas as pd
    return pd.isna(v)


def test_offline_total_output_tokens_first_is_read():
    """Newer versions print total_num_output_tokens first: it was skipped and the record began
    at num_drafts; now it is output_tokens and the record's first line."""
    log = eaglelog.parse(OTHERS / "vllm_offline.log")
    r = log.bench.iloc[0]
    assert (r["line_no"], r["end_line"], r["output_tokens"], r["drafts"]) == (3, 12, 10240, 1203)


@pytest.mark.parametrize("order", [
    [0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [1, 2, 3, 4, 0], [2, 0, 4, 1, 3]])
def test_offline_keys_in_any_order(order):
    keys = ["total_num_output_tokens: 4096", "num_drafts: 100", "num_draft_tokens: 300",
            "num_accepted_tokens: 150", "mean acceptance length: 2.50"]
    text = "\n".join(keys[i] for i in order) + "\nacceptance at token 0: 0.70\n" \
        "acceptance at token 1: 0.50\nacceptance at token 2: 0.30\n"
    rows, kinds, _ = _bench(text)
    assert kinds == [] and len(rows) == 1
    r = rows[0]
    assert (r["output_tokens"], r["drafts"], r["draft_tokens"], r["accepted_tokens"],
            r["accept_len"], r["per_position"], r["complete"]) == \
        (4096, 100, 300, 150, 2.5, "[0.7, 0.5, 0.3]", True)


def test_offline_two_runs_and_bad_values():
    run = ("num_drafts: {d}\nnum_draft_tokens: 300\nnum_accepted_tokens: 150\n"
           "mean acceptance length: {m}\nacceptance at token 0: 0.90\n"
           "acceptance at token 1: 0.60\n")
    rows, kinds, diags = _bench(run.format(d=100, m="2.50") + run.format(d="1e400", m="nan"))
    assert [r.get("drafts") for r in rows] == [100, None]
    assert [r.get("accept_len") for r in rows] == [2.5, None]
    assert [r["line_no"] for r in rows] == [1, 7]
    assert kinds == [(7, "bad_value"), (10, "bad_value")]


# ------------------------------------------------------------------ SGLang scripts
def test_bench_speculative_bad_values_and_cut_lines():
    """Issue 13 item 3: 'speed=3.4.5' raised ValueError."""
    log = eaglelog.parse(OTHERS / "bench_speculative_bad.log")
    b = log.bench
    assert b["line_no"].tolist() == [2, 4, 5]
    assert "per_request_tok_s" not in b           # the one value printed was unreadable
    assert b["complete"].tolist() == [True, False, True]
    assert b["step_time_ms"].tolist()[0] == 12.1 and math.isnan(b["step_time_ms"][1])
    assert [(d.line_no, d.kind) for d in log.diagnostics] == [
        (2, "bad_value"), (4, "incomplete_block"), (5, "bad_value"), (5, "bad_value"),
        (6, "malformed")]
    assert "'3.4.5' for speed" in log.diagnostics[0].message


def test_mtbench_cut_and_inf():
    log = eaglelog.parse(OTHERS / "mtbench_cut.log")
    b = log.bench
    assert b["requests"].tolist() == [80, 20, 10]
    assert b["output_tok_s"].tolist()[:2] == [412.07, 655.9] and math.isnan(b["output_tok_s"][2])
    assert b["complete"].tolist() == [True, False, True]


def test_a_cut_last_line_keeps_its_fields(write):
    p = write("cut.log", "#questions: 80, Throughput: 412.07 token/s, Acceptance length: 3.48\n"
              "#questions: 20, Throughput: 655.90 token/s, Accept")
    log = eaglelog.parse(p)
    assert log.bench["requests"].tolist() == [80, 20]
    assert log.bench["complete"].tolist() == [True, False]
    assert [(d.line_no, d.kind) for d in log.diagnostics] == [(2, "incomplete_block")]


@pytest.mark.parametrize("line,col,kind", [
    ("Speculative accept length (per-request, from meta_info): n=198 mean=2.7.431 min=1.5000 "
     "max=4.2500", "accept_len", "bad_value"),
    ("  Throughput: 812.4 tok/s | Avg latency: 3.2.14s | Avg accept_len: 2.63 | Errors: 0",
     "avg_latency_s", "bad_value"),
    ("  Throughput: 812.4 tok/s | Avg latency: 3.214s | Avg accept_len: \u0662.63 | Errors: 0",
     "accept_len", "bad_value"),
    ("Speculative accept length (per-request, from meta_info): n=198 mean=2.7431 min=1.5000",
     "accept_len_max", "incomplete_block"),
])
def test_script_lines_with_bad_values(line, col, kind):
    """Each raised ValueError (could not convert string to float) before."""
    rows, kinds, _ = _bench(line + "\n")
    assert len(rows) == 1 and rows[0].get(col) is None and kinds == [(1, kind)]


def test_send_one_lines_with_bad_values():
    rows, kinds, _ = _bench("acc_length=2.47\nspeed=1.2.3 token/s\n")
    assert rows[0]["accept_len"] == 2.47 and "per_request_tok_s" not in rows[0]
    assert kinds == [(2, "bad_value")]
    rows, kinds, _ = _bench("acc_length=2.4.7\n")
    assert rows == [] and kinds == [(1, "malformed")]


def test_json_records_with_nan_and_infinity():
    rows, kinds, _ = _bench('{"task": "mtbench", "accept_length": 3.482, "throughput": NaN, '
                            '"num_requests": 1e30, "note": Infinity}\n')
    r = rows[0]
    assert r["accept_len"] == 3.482 and "output_tok_s" not in r and "requests" not in r
    assert json.loads(r["extra"]) == {"note": None}     # strict JSON: no NaN/Infinity text
    assert kinds == [(1, "bad_value"), (1, "bad_value")]
    rows, kinds, _ = _bench('{"question_id": 1, "choices": [{"index": 0, "turns": ["a"], '
                            '"decoding_steps": [1e400], "new_tokens": [1e400], "wall_time": '
                            '[NaN], "accept_lengths": [1, Infinity]}]}\n')
    assert rows[0].get("accept_len") is None and rows[0].get("output_tokens") is None
    assert [k for _, k in kinds] == ["bad_value"] * 4


def test_result_block_with_bad_values():
    text = ("============ Serving Benchmark Result ============\n"
            "Backend:                                 sglang    \n"
            "Successful requests:                     1e30      \n"
            "Traffic request rate:                    inf       \n"
            "Accept length:                           inf       \n"
            "Concurrency:                             7.84      \n"
            "==================================================\n")
    rows, kinds, _ = _bench(text)
    r = rows[0]
    assert (r.get("requests"), r.get("accept_len"), r["concurrency"]) == (None, None, 7.84)
    assert json.loads(r["extra"]) == {"Backend": "sglang", "Traffic request rate": "inf"}
    assert kinds == [(3, "bad_value"), (5, "bad_value")]


def test_vllm_section_position_rows_are_never_dropped():
    text = ("---------------Speculative Decoding---------------\n"
            "Acceptance rate (%):                     61.27     \n"
            "Acceptance length:                       2.84      \n"
            "Drafts:                                  10234     \n"
            "Draft tokens:                            30702     \n"
            "Accepted tokens:                         18810     \n"
            "Per-position acceptance (%):\n"
            "  Position 0:                            78.12     \n"
            "  Position \u0661:                            60.05     \n")
    rows, kinds, _ = _bench(text)
    # a list with a hole would misplace positions: none, and the row is reported
    assert "per_position" not in rows[0] and rows[0]["drafts"] == 10234
    assert kinds == [(9, "bad_value")]


# ------------------------------------------------------------------ properties
SINGLE = {"bspec": "bench_speculative", "bspec_json": "bench_speculative", "mtbench": "mtbench",
          "mtbench_json": "mtbench", "adaptive": "adaptive", "run_eval": "run_eval",
          "obbs_line": "bench_one_batch_server", "sb_answer": "specbench_answers",
          "eagle_answer": "eagle_answers"}


def _valid_lines(kind):
    pat = others.markers((kind,))
    text = (OTHERS / f"{SINGLE[kind]}.log").read_text()
    return [ln for ln in text.splitlines() if pat.search(ln.encode())]


@pytest.mark.parametrize("kind", sorted(SINGLE))
def test_bad_numbers_in_every_valid_line(kind):
    lines = _valid_lines(kind)
    assert lines
    assert sum(check_substitutions(ln, KINDS) for ln in lines) >= 10


@pytest.mark.parametrize("kind", sorted(SINGLE))
def test_every_truncation_of_every_valid_line(kind):
    pat = others.markers((kind,))
    lines = _valid_lines(kind)
    n = sum(check_truncations(ln, bench.LINE_PARSERS[kind], pat) for ln in lines)
    assert n == sum(len(ln) + 1 for ln in lines) > 15


@pytest.mark.parametrize("name,first,last", [
    ("bench_serving", 4, 20), ("vllm_bench_serve", 3, 26), ("vllm_section_standalone", 1, 10),
    ("send_one_table", 1, 5), ("bench_one_batch_server", 2, 6), ("adaptive", 7, 9),
    ("specbench", 1, 10), ("send_one_lines", 2, 3), ("vllm_offline", 2, 12)])
def test_bad_numbers_in_every_block(name, first, last):
    lines = (OTHERS / f"{name}.log").read_text().splitlines()[first - 1:last]
    assert check_block_substitutions(lines, KINDS) > 10


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_parsers_never_raise(text):
    for fn in bench.LINE_PARSERS.values():
        fn(text)
    scan("Serving Benchmark Result\n" + text + "\n| acc length |\n" + text + "\n"
         "num_drafts: " + text + "\n= Task: x\n" + text + "\nPhase Throughput Avg Latency "
         "Accept Len\n" + text, KINDS)


ROW_ALPHABET = "ab :,=[]{}\t x1.%()-\u00a0\u2003"


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=ROW_ALPHABET, max_size=24))
def test_a_result_row_is_split_as_the_row_pattern_splits_it(line):
    """bench.row_parts (one pass) gives what the 'label: value' pattern it replaced matched:
    the pattern's lazy groups backtracked over every run of spaces (fuzz case 98:655)."""
    m = bench._ROW.match(line)
    assert bench.row_parts(line) == (None if m is None else
                                     (m.group("label").strip(), m.group("value")))


def test_a_row_of_300000_spaces_in_a_result_block_is_read_in_one_pass(tmp_path):
    """A result block whose row holds 300,000 spaces inside its label (the fuzzer's case
    98:655): a label the block does not know, its other rows kept, read in one pass (the
    pattern took minutes)."""
    lines = (OTHERS / "bench_serving.log").read_text().splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("Total input tokens"))
    lines[at] = "Total inpu" + " " * 300_000 + "t tokens:                      204800    "
    p = tmp_path / "spaced.log"
    p.write_text("\n".join(lines) + "\n")
    whole = eaglelog.parse(str(OTHERS / "bench_serving.log")).bench
    got = eaglelog.parse(str(p)).bench
    assert len(got) == len(whole) >= 1
    assert got["output_tok_s"].tolist() == whole["output_tok_s"].tolist()
    assert bench.row_parts(lines[at]) == ("Total inpu" + " " * 300_000 + "t tokens", "204800")
