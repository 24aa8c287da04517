"""Issue 35, item 7: llama.cpp's adaptive MTP drafter (``--spec-type draft-mtp-adaptive``) logs
each change of a sequence's draft depth at debug level: common/speculative.cpp (ggml-org/llama.cpp
001d906a), ``common_speculative_impl_draft_mtp::accept``:
``SPC_DBG("adaptive draft depth seq %d: %d -> %d (n_draft=%d, n_accepted=%d)\\n", …)`` behind
``"spec %12.*s: "`` with the function's name.  The lines are records ('depth' rows), and the
per-position rates of such a run (which divide by every verification step) are said to be
lower bounds at the deep positions.  Every line here is synthetic, in that format."""
from __future__ import annotations

import json

import eaglelog
from eaglelog.parsers.llamacpp import parse_depth

STATS = ("statistics draft-mtp-adaptive: #calls(b,g,a) =    1     40     40, #gen drafts =   "
         "  40, #acc drafts =    30, #gen tokens =    120, #acc tokens =    60, #mean acc len "
         "= 2.50, #acc rate/pos = (0.750, 0.500, 0.250), dur(b,g,a) = 0.001, 2.000, 0.100 ms\n")


def depth(seq, a, b, nd, na, prefix="0.01.234.567 D "):
    return (f"{prefix}spec       accept: adaptive draft depth seq {seq}: {a} -> {b} "
            f"(n_draft={nd}, n_accepted={na})\n")


def test_a_depth_line_is_a_record():
    r = parse_depth(depth(0, 3, 4, 3, 3).strip())
    assert r.problems == [] and r.cut is None
    rec = r.record
    assert (rec["scope"], rec["label"], rec["max_draft_len"], rec["draft_tokens"],
            rec["accepted_tokens"]) == ("depth", "seq 0", 4, 3, 3)
    assert json.loads(rec["stats"]) == {"depth_from": 3, "depth_to": 4}
    bad = parse_depth("spec       accept: adaptive draft depth seq 0: 3 -> 4 (n_draft=2, "
                      "n_accepted=5)")
    assert bad.record is not None and bad.problems == ["n_accepted 5 > n_draft 2"]
    cut = parse_depth("spec       accept: adaptive draft depth seq 0: 3 -> 4")
    assert cut.record["max_draft_len"] == 4 and cut.cut == "no (n_draft=…) part"


def test_the_depth_path_is_said_with_the_per_position_rates(tmp_path):
    p = tmp_path / "llama.log"
    p.write_text(depth(0, 3, 4, 3, 3) + depth(0, 4, 3, 4, 1) + depth(1, 3, 4, 3, 3,
                                                                       prefix="")
                 + STATS)
    log = eaglelog.parse(str(p))
    d = log.bench[log.bench["scope"] == "depth"]
    assert d["max_draft_len"].tolist() == [4, 3, 4] and log.diagnostics == []
    c = eaglelog.acceptance(log).curves
    assert len(c) == 1 and c[0].origin == "llamacpp-statistics"
    note = [n for n in c[0].notes if n.startswith("adaptive draft depth")]
    assert len(note) == 1
    assert "3 change(s) on 2 sequence(s), 2 up and 1 down, depth 3–4" in note[0]
    assert "lower bounds" in note[0]


def test_without_depth_lines_no_note(tmp_path):
    p = tmp_path / "llama.log"
    p.write_text(STATS)
    c = eaglelog.acceptance(str(p)).curves
    assert not [n for n in c[0].notes if n.startswith("adaptive draft depth")]
