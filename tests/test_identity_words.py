"""The identity warnings of EAGLE3_PROF blocks the C scan reads are worded when read
(parsers/scan.py: _IdentityWords, _IdentityDiagnostic): the same messages, counts and order
as wording them at once, and they compare, copy and pickle as plain Diagnostics."""
import copy
import dataclasses
import pickle

import pytest

from eaglelog import api
from eaglelog.parsers import scan
from eaglelog.parsers.scan import Diagnostic

BLOCK = ("EAGLE3_PROF (100 cycles, 103 tok, no sync)\n"
         "  Draft steps:        0.99 ms/cyc  (  3.6%)\n"
         "  Target verify:     26.10 ms/cyc  ( 95.2%)\n"
         "  Draft re-extend:    0.32 ms/cyc  (  1.2%)\n"
         "  TOTAL:             27.41 ms/cyc\n"
         "  Accept len:      1.19\n"
         "  Eff tok/s:       39.5\n\n")


def _log(tmp_path, blocks: int):
    path = tmp_path / "prof.log"
    path.write_text(BLOCK * blocks)
    return api.parse([str(path)], cache=False)


def test_messages_are_those_of_the_block(tmp_path):
    log = _log(tmp_path, 3)
    d = [x for x in log.diagnostics if x.kind == "identity"]
    # each block: accept len (103/100 = 1.03, printed 1.19) and eff tok/s (1000 × 1.19 / 27.41)
    assert [x.line_no for x in d] == [1, 1, 9, 9, 17, 17]
    assert d[0].message == ("EAGLE3_PROF block breaks an identity: Accept len 1.19 != 103 tok "
                            "/ 100 cycles = 1.03")
    assert d[1].message == ("EAGLE3_PROF block breaks an identity: Eff tok/s 39.5 != "
                            "1000*1.19/27.41 = 43.41")
    assert str(d[0]).endswith(":1: " + d[0].message)


def test_they_behave_as_plain_diagnostics(tmp_path):
    d = [x for x in _log(tmp_path, 2).diagnostics if x.kind == "identity"]
    plain = Diagnostic(d[0].source, d[0].line_no, "identity", d[0].message)
    assert d[0] == plain and plain == d[0] and d[0] != d[1]
    back = pickle.loads(pickle.dumps(d[0]))
    assert type(back) is Diagnostic and back == d[0]
    assert copy.deepcopy(d[1]) == d[1]
    moved = dataclasses.replace(d[2], source="other.log")
    assert (moved.source, moved.message, moved.line_no) == ("other.log", d[2].message, 9)
    assert dataclasses.asdict(d[3])["message"] == d[3].message
    with pytest.raises(TypeError):
        hash(d[0])                          # (as a Diagnostic: compared by value, unhashable)


def test_the_first_thousand_are_kept_and_the_rest_counted(tmp_path, monkeypatch):
    monkeypatch.setattr(scan, "MAX_KEPT", 5)     # 2 warnings a block: the 3rd block splits
    log = _log(tmp_path, 4)
    d = [x for x in log.diagnostics if x.kind == "identity" and not x.more]
    assert len(d) == 5 and d[-1].line_no == 17 and "Accept len" in d[-1].message
    more = [x for x in log.diagnostics if x.more]
    assert [(x.kind, x.more, x.message) for x in more] == [
        ("identity", 3, "3 more not listed (the first 5 are)")]
