"""llama.cpp (parsers/llamacpp.py; docs/formats-others.md §1): every form of llama-server's
per-request line, the per-position trace line, the statistics line, the llama-speculative-simple
summary; bad numbers and cut lines (issue 13).

Formats as printed by ggml-org/llama.cpp (checked in the source):
* tools/server/server-context.cpp ``server_slot::print_timings`` (commit 001d906a):
  ``SLT_INF("draft acceptance = %0.5f (%5d accepted / %5d generated), mean len = %5.2f\\n")``
  with mean len = 1 + n_draft_accepted / n_draft_verif_steps, then
  ``SLT_TRC("     acc per pos = (%s)\\n")``, each value n_accepted_per_pos[i] /
  n_draft_verif_steps;
* PR #24536 (2026-06): ``…, mean acceptance length = %5.2f, acceptance rate per position =
  (…)``;
* before it: ``draft acceptance = %0.5f (%5d accepted / %5d generated)`` (SLT_INF) and, in older
  builds, ``draft acceptance rate = %0.5f (%5d accepted / %5d generated)`` (SLT_CNT, or after an
  SLT_INF "\\n": a line of its own); n_draft_total counts draft tokens ("generated" = drafted);
* SLT_INF's prefix ``slot %12.*s: id %2d | task %d | ``; a router forwards its children's lines
  as ``LOG("[%5d] %s", port, …)`` (tools/server/server-models.cpp);
* common/speculative.cpp ``common_speculative_print_stats`` (001d906a): ``statistics %16s:
  #calls(b,g,a) = %4zu %6zu %6zu, #gen drafts = %6zu, #acc drafts = %5zu, #gen tokens = %6zu,
  #acc tokens = %5zu`` + ``, #mean acc len = %.2f, #acc rate/pos = (…)`` (mean = 1 + n_acc_tokens
  / n_call_accept) + ``, dur(b,g,a) = %.3f, %.3f, %.3f ms``, behind ``spec common_specu: ``.
All lines below are synthetic, written in those forms.
"""
import json
import math
import re

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import eaglelog
from eaglelog.parsers import llamacpp, others
from conftest import FIXTURES
from others_mutations import (check_block_substitutions, check_scan_truncations,
                              check_substitutions, check_truncations, scan)

OTHERS = FIXTURES / "others"
KINDS = others.FAMILY_KINDS["llamacpp"]
OLD = "draft acceptance rate = 0.75000 (   30 accepted /    40 generated)"
NEW = "draft acceptance = 0.50000 (   10 accepted /    20 generated), mean len =  2.00"
PREFIXES = ["", "slot print_timing: id  3 | task 17 | ", "[ 5003] ",
            "[ 5003] slot print_timing: id  3 | task 17 | ",
            "[ 5003] 0.05.001.002 I slot print_timing: id  3 | task 17 | "]


def _rows(text):
    rows, diags = scan(text, KINDS)
    return rows["bench"], diags


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_per_request_lines_of_the_issue_become_rows(prefix):
    """Both forms of issue 13, behind the slot prefix and behind a router's port prefix: one
    per-request row each; 'generated' is drafted tokens, 'mean len' τ with the bonus."""
    rows, diags = _rows(prefix + OLD + "\n" + prefix + NEW + "\n")
    assert diags == []
    got = [(r["scope"], r["acceptance_rate"], r["accepted_tokens"], r["draft_tokens"],
            r.get("accept_len"), r.get("accept_len_def")) for r in rows]
    assert got == [("request", 0.75, 30, 40, None, None),
                   ("request", 0.5, 10, 20, 2.0, "per-draft")]


def test_every_request_form_in_one_log():
    log = eaglelog.parse(OTHERS / "llama_request_forms.log")
    b = log.bench
    got = list(zip(b["line_no"], b["end_line"], b["accepted_tokens"], b["draft_tokens"],
                   b["accept_len"].fillna(-1), b["per_position"].fillna("-")))
    assert got == [(3, 3, 30, 40, -1, "-"), (5, 5, 25, 40, -1, "-"), (6, 6, 9, 20, -1, "-"),
                   (7, 8, 10, 20, 2.0, "[0.6, 0.4]"), (10, 11, 25, 40, 2.25, "[0.75, 0.5]"),
                   (12, 12, 84, 120, 3.1, "-")]
    assert log.diagnostics == [] and log.sources[0].engine == "llamacpp"
    # 'mean len' = 1 + accepted / verification steps: 25 accepted at 2.25 → 20 steps of
    # 40 / 20 = 2 draft tokens; the per-position values add up to mean len − 1
    r = b[b["line_no"] == 10].iloc[0]
    assert r["accepted_tokens"] / (r["accept_len"] - 1) == 20
    assert sum(json.loads(r["per_position"])) == pytest.approx(r["accept_len"] - 1)


def test_pr_24536_form_keeps_its_per_position_list():
    rows, diags = _rows("slot print_timing: id  1 | task 0 | draft acceptance = 0.60000 (  "
                        "150 accepted /   250 generated), mean acceptance length =  2.50, "
                        "acceptance rate per position = (0.800, 0.500, 0.200)\n")
    assert diags == []
    assert (rows[0]["accept_len"], rows[0]["per_position"]) == (2.5, "[0.8, 0.5, 0.2]")


def test_per_position_line_of_another_slot_is_not_attached():
    rows, diags = _rows("slot print_timing: id  0 | task 3 | " + NEW + "\n"
                        "slot print_timing: id  1 | task 4 |      acc per pos = (0.600, 0.400)\n")
    assert len(rows) == 1 and rows[0].get("per_position") is None
    assert [(d.line_no, d.kind) for d in diags] == [(2, "malformed")]
    assert "without the 'draft acceptance" in diags[0].message
    # a different router port is another process
    rows, diags = _rows("[ 5001] slot print_timing: id  0 | task 3 | " + NEW + "\n"
                        "[ 5002] slot print_timing: id  0 | task 3 |      acc per pos = (0.600, "
                        "0.400)\n")
    assert rows[0].get("per_position") is None and [d.kind for d in diags] == ["malformed"]


def test_statistics_line_forms():
    b = eaglelog.parse(OTHERS / "llama_statistics_forms.log").bench
    cols = ["label", "drafts", "accepted_drafts", "draft_tokens", "accepted_tokens",
            "calls_b", "calls_g", "calls_a", "dur_g_ms"]
    assert [tuple(r) for r in b[cols].itertuples(index=False)] == [
        ("draft-eagle3", 50, 41, 150, 90, 1, 50, 50, 198.22),
        ("ngram-mod", 30, 12, 240, 37, 1, 30, 30, 1.204),
        ("draft-eagle3", 20, 14, 60, 31, 1, 20, 20, 80.113)]
    # builds before PR 24536 print no mean: τ comes from the counts alone, 1 + 37 / 30
    assert math.isnan(b["accept_len"][1])
    assert b["accept_len_derived"][1] == pytest.approx(1 + 37 / 30)
    assert b["accept_len"].tolist()[::2] == [2.8, 2.55]
    assert json.loads(b["per_position"][0]) == [0.82, 0.56, 0.42]


def test_statistics_mean_is_per_accept_call():
    """The source divides by n_call_accept (#calls a), not by #gen drafts: no warning when
    they differ and the mean follows #calls a."""
    line = ("statistics     draft-eagle3: #calls(b,g,a) =    1     40     50, #gen drafts =   "
            "  40, #acc drafts =    30, #gen tokens =    120, #acc tokens =    75, #mean acc len "
            "= 2.50, "
            "#acc rate/pos = (0.600, 0.500, 0.400), dur(b,g,a) = 0.001, 2.000, 0.100 ms\n")
    rows, diags = _rows(line)
    assert diags == []
    assert rows[0]["accept_len"] == 2.5 and rows[0]["accept_len_derived"] == 1 + 75 / 40


def test_broken_identities_are_warned_and_the_rows_kept(write):
    p = write("bad.log", "statistics     draft-eagle3: #calls(b,g,a) = 1, 66, 66, #gen drafts = "
              "66, #acc drafts = 55, #gen tokens = 168, #acc tokens = 120, #mean acc len = 3.50, "
              "#acc rate/pos = (0.833, 0.606, 0.379), dur(b,g,a) = 0.004, 241.870, 0.093 ms\n")
    log = eaglelog.parse(p)
    assert len(log.bench) == 1 and log.bench["accept_len"][0] == 3.5
    kinds = [d.message for d in log.diagnostics if d.kind == "identity"]
    assert kinds and "#mean acc len 3.50" in kinds[0]


def test_a_26_digit_count_is_a_bad_value_not_a_crash(write):
    """Issue 13 item 3: raised KeyError: 'drafts'."""
    p = write("big.log", "statistics     draft-eagle3: #calls(b,g,a) = 1, 66, 66, #gen drafts = "
              "12345678901234567890123456, #acc drafts = 55, #gen tokens = 168, #acc tokens = "
              "120, "
              "#mean acc len = 2.82, #acc rate/pos = (0.833, 0.606, 0.379), dur(b,g,a) = 0.004, "
              "241.870, 0.093 ms\n")
    log = eaglelog.parse(p)
    b = log.bench
    assert val(b, "drafts", 0) is None
    assert (b["accepted_tokens"][0], b["accept_len"][0]) == (120, 2.82)
    assert [(d.line_no, d.kind) for d in log.diagnostics] == [(1, "bad_value")]
    assert "'12345678901234567890123456' for #gen drafts" in log.diagnostics[0].message


def val(df, col, i):
    """df[col][i], None when NA or when the column was not printed at all."""
    if col not in df:
        return None
    v = df[col].iloc[i]
    return None if pd.isna(v) else v


def test_damaged_and_cut_lines(write):
    log = eaglelog.parse(OTHERS / "llama_cut.log")
    got = [(d.line_no, d.kind) for d in log.diagnostics]
    assert got == [(1, "incomplete_block"), (2, "incomplete_block"), (3, "bad_value"),
                   (4, "bad_value"), (5, "malformed"), (6, "bad_value"), (7, "incomplete_block")]
    msgs = [d.message for d in log.diagnostics]
    assert "'١٠' for accepted" in msgs[2] and "'inf' for mean acceptance length" in msgs[5]
    assert "no 'N generated)'" in msgs[0] and "no '#acc tokens' field" in msgs[1]
    b = log.bench
    assert b["complete"].tolist() == [False, False, True, True, True, False]
    assert [val(b, "accepted_tokens", i) for i in range(3)] == [120, None, None]


def test_non_finite_and_foreign_digits_never_reach_a_row():
    """Issue 13 item 4: 'inf' in the per-position list was skipped (two values kept), Arabic-
    Indic digits were read as 120."""
    rows, diags = _rows("draft acceptance = 0.71429 (  120 accepted /   168 generated), mean "
                        "acceptance length =  2.82, acceptance rate per position = (0.833, inf, "
                        "0.379)\n"
                        "draft acceptance = 0.71429 (  \u0661\u0662\u0660 accepted /   168 "
                        "generated), mean acceptance length =  2.82\n")
    assert rows[0].get("per_position") is None and rows[1].get("accepted_tokens") is None
    assert [d.kind for d in diags] == ["bad_value", "bad_value"]


def test_speculative_simple_summary_with_bad_values():
    text = "n_draft   = 6\nn_predict = 2.2.0\nn_drafted = 0\nn_accept  = 0\naccept    = -nan%\n"
    rows, diags = _rows(text)
    r = rows[0]
    assert (r["max_draft_len"], r.get("output_tokens"), r["draft_tokens"],
            r.get("acceptance_rate"), r["complete"]) == (6, None, 0, None, True)
    assert [(d.line_no, d.kind) for d in diags] == [(2, "bad_value"), (5, "bad_value")]
    # nothing readable: reported, no row
    rows, diags = _rows("n_drafted = \u0663\nn_accept = x\n")
    assert rows == [] and [d.kind for d in diags] == ["malformed"]


def test_speculative_simple_behind_the_log_prefix():
    text = "".join(f"0.12.004.{551 + i} I {k} = {v}\n" for i, (k, v) in enumerate(
        [("n_draft", 4), ("n_predict", 128), ("n_drafted", 96), ("n_accept", 60),
         ("accept", "62.500%")]))
    rows, diags = _rows(text)
    assert diags == [] and rows[0]["acceptance_rate"] == 0.625 and rows[0]["end_line"] == 5


# ------------------------------------------------------------------ properties
VALID = [ln for name in ("llama_request", "llama_statistics", "llama_request_forms",
                         "llama_statistics_forms")
         for ln in (OTHERS / f"{name}.log").read_text().splitlines()
         if "draft acceptance" in ln or "#gen drafts" in ln]


def test_bad_numbers_in_every_valid_line():
    n = sum(check_substitutions(ln, KINDS) for ln in VALID)
    assert n > 400


def test_bad_numbers_in_a_simple_summary_and_a_per_position_line():
    lines = (OTHERS / "llama_simple.log").read_text().splitlines()[3:8]
    assert check_block_substitutions(lines, KINDS) > 40
    lines = (OTHERS / "llama_request_forms.log").read_text().splitlines()[6:8]
    assert check_block_substitutions(lines, KINDS) > 40


def test_every_truncation_of_every_valid_line():
    n = 0
    for ln in VALID:
        parse = llamacpp.parse_request if "draft acceptance" in ln else llamacpp.parse_stats
        kind = "llama_req" if "draft acceptance" in ln else "llama_stats"
        n += check_truncations(ln, parse, others.markers((kind,)))
    assert n > 1500
    n = sum(check_scan_truncations(ln, KINDS, step=7) for ln in VALID[:4])
    assert n > 50


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_parsers_never_raise(text):
    for fn in llamacpp.LINE_PARSERS.values():
        fn(text)
    scan("n_drafted = 3\n" + text + "\ndraft acceptance = 0.5 (" + text + "\n" + text, KINDS)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(VALID + ["", "n_draft = 4", "accept = 50.000%",
                                         "     acc per pos = (0.5)"]), max_size=6),
       st.integers(0, 400))
def test_valid_lines_cut_anywhere_in_a_log(lines, cut):
    text = "\n".join(lines)
    rows, diags = scan(text[:cut] if cut < len(text) else text, KINDS)
    for r in rows["bench"]:
        assert all(not (isinstance(v, float) and not math.isfinite(v)) for v in r.values())


def test_the_one_pass_statistics_pattern_reads_what_the_key_search_reads(monkeypatch):
    lines = [ln for ln in VALID if "#gen drafts" in ln]
    fast = [llamacpp.parse_stats(ln) for ln in lines]
    assert all(llamacpp._STATS_FULL.search(ln) for ln in lines)
    monkeypatch.setattr(llamacpp, "_STATS_FULL", re.compile(r"(?!)"))
    slow = [llamacpp.parse_stats(ln) for ln in lines]
    assert [(f.record, f.problems, f.bad, f.cut) for f in fast] == \
        [(s.record, s.problems, s.bad, s.cut) for s in slow]


def test_a_timing_line_without_its_numbers_is_reported_not_an_internal_error(run, tmp_path):
    """'prompt eval time = ms / 23 tokens': the marker's shape, no time (fuzz seed 50, case
    275: an AttributeError in TimingBlock); reported at its line, the other requests read."""
    log = tmp_path / "llama.log"
    log.write_text(" | prompt eval time = ms /    23 tokens \n")
    r = run("parse", log)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr == (f"eaglelog: error: {log}:1: no record could be read: llama-server "
                        "request timings not read: no 'N ms / M tokens' after 'prompt eval "
                        "time ='\n")


def test_a_task_id_no_column_holds_is_reported_and_the_request_kept(run, tmp_path):
    """A 21-digit task id (fuzz seed 54, case 184: an OverflowError building the table): the
    value is left empty and said at its line; the request's times are kept."""
    log = tmp_path / "llama.log"
    log.write_text("slot print_timing: id  2 | task 123401234567890123456 | prompt eval time ="
                   "  1.85 ms /    39 tokens (    0.05 ms per token, 21081.08 tokens per "
                   "second)\n")
    r = run("parse", "-f", "csv", "--table", "bench", log)
    assert r.exit_code == 0, r.stderr
    assert (f"{log}:1: task_id '123401234567890123456' is not a whole number this column "
            "holds (Int64); the record is kept without it") in r.stderr
    row = r.stdout.splitlines()[1].split(",")
    head = r.stdout.splitlines()[0].split(",")
    assert row[head.index("task_id")] == "" and row[head.index("prompt_ms")] == "1.85"
