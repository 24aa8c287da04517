"""Property tests (hypothesis): parsers never raise; records formatted as log lines parse back
to themselves; noise between records changes nothing."""
import string

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eaglelog
from eaglelog.parsers.scan import Scanner
from eaglelog.parsers.sglang import (parse_decode_line, parse_finish_line, parse_prefill_line,
                                     parse_request_json_line, parse_server_args_line)
from conftest import SAMPLES

MARKER_BITS = ["Decode batch", "Decode batch. ", "Decode batch [3], ", "Prefill batch, ",
               "Prefil batch. ", "EAGLE3_PROF (", "server_args=ServerArgs(", "Finish: obj=",
               '"request.finished"', "#running-req: ", "new fill batch. ", "#queue-req: ",
               ", out={", "accept len: ", "cuda graph: ", ": ", ", ", "[", "]", "\r", "\x1b[0m",
               "ms/cyc", "  TOTAL:", "  Accept len:", "\n", "\t", "full=", "swa=", "%"]
messy_text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(MARKER_BITS)),
                      max_size=25).map("".join)
LINE_FUNCS = [parse_decode_line, parse_prefill_line, parse_server_args_line, parse_finish_line,
              parse_request_json_line]


@settings(max_examples=400, deadline=None)
@given(messy_text)
def test_line_parsers_never_raise(text):
    for fn in LINE_FUNCS:
        r = fn(text)
        assert r.record is None or isinstance(r.record, dict)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(messy_text, st.binary(max_size=40)), max_size=30))
def test_scanner_never_raises_on_arbitrary_input(parts):
    data = b"\n".join(p if isinstance(p, bytes) else p.encode("utf-8", "replace")
                      for p in parts)
    s = Scanner("x")
    s.feed(data)
    frames = s.finish()
    assert s.stats.consumed <= s.stats.lines
    assert set(frames) == set(eaglelog.TABLES)


# ------------------------------------------------------------------------------- round trip

def two_dp(lo, hi):
    return st.integers(int(lo * 100), int(hi * 100)).map(lambda v: v / 100)


tags_st = st.lists(st.sampled_from(["DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP"]), unique=True,
                   max_size=4).flatmap(
    lambda names: st.tuples(*[st.integers(0, 15) for _ in names]).map(
        lambda nums: list(zip(names, nums))))


@st.composite
def decode_records(draw):
    rec = {
        "date": draw(st.dates(min_value=pd.Timestamp("2024-10-17").date(),
                              max_value=pd.Timestamp("2026-12-31").date())),
        "time": draw(st.times()).replace(microsecond=0),
        "ms": draw(st.one_of(st.none(), st.integers(0, 999))),
        "tags": draw(tags_st),
        "header": draw(st.sampled_from([".", ",", "[N],"])),
        "iter": draw(st.integers(0, 10 ** 7)),
        "running_req": draw(st.integers(0, 4096)),
        "num_tokens": draw(st.integers(0, 10 ** 7)),
        "token_usage": draw(two_dp(0, 1)),
        "accept_len": draw(st.one_of(st.none(), two_dp(1, 9))),
        "accept_rate": draw(st.one_of(st.none(), two_dp(0, 1))),
        "graph": draw(st.one_of(st.none(), st.tuples(
            st.sampled_from(["cuda graph", "cpu graph", "npu graph", "musa graph"]),
            st.booleans()))),
        "gen_throughput": draw(two_dp(0, 99999)),
        "queue_req": draw(st.integers(0, 5000)),
        "trailing": draw(st.booleans()),
    }
    return rec


def format_decode(rec):
    ms = f".{rec['ms']:03d}" if rec["ms"] is not None else ""
    tags = "".join(f" {n}{v}" for n, v in rec["tags"])
    head = {".": "Decode batch. ", ",": "Decode batch, ",
            "[N],": f"Decode batch [{rec['iter']}], "}[rec["header"]]
    parts = [f"#running-req: {rec['running_req']}", f"#token: {rec['num_tokens']}",
             f"token usage: {rec['token_usage']:.2f}"]
    if rec["accept_len"] is not None:
        parts.append(f"accept len: {rec['accept_len']:.2f}")
        if rec["accept_rate"] is not None:
            parts.append(f"accept rate: {rec['accept_rate']:.2f}")
    if rec["graph"]:
        parts.append(f"{rec['graph'][0]}: {rec['graph'][1]}")
    parts += [f"gen throughput (token/s): {rec['gen_throughput']:.2f}",
              f"#queue-req: {rec['queue_req']}"]
    return (f"[{rec['date']} {rec['time']}{ms}{tags}] {head}" + ", ".join(parts) +
            (", " if rec["trailing"] else ""))


@settings(max_examples=300, deadline=None)
@given(decode_records())
def test_decode_line_round_trip(rec):
    r = parse_decode_line(format_decode(rec))
    assert r.problems == []
    out = r.record
    assert out["_date"] == str(rec["date"])
    assert out["_time"] == str(rec["time"]) + (f".{rec['ms']:03d}" if rec["ms"] is not None
                                               else "")
    assert out["ranks"] == (" ".join(f"{n}{v}" for n, v in rec["tags"]) or None)
    for name, value in rec["tags"]:
        assert out[name.lower()] == value
    assert out["header"] == rec["header"]
    assert out.get("iter") == (rec["iter"] if rec["header"] == "[N]," else None)
    for k in ("running_req", "num_tokens", "token_usage", "gen_throughput", "queue_req"):
        assert out[k] == rec[k], k
    assert out.get("accept_len") == rec["accept_len"]
    want_rate = rec["accept_rate"] if rec["accept_len"] is not None else None
    assert out.get("accept_rate") == want_rate
    if rec["graph"]:
        assert (out["graph_backend"], out["graph"]) == rec["graph"]
    else:
        assert "graph" not in out
    assert out["trailing_comma"] == rec["trailing"] and out["extra"] is None


label_st = st.text(alphabet=string.ascii_letters + " -", min_size=1, max_size=20).map(
    str.strip).filter(lambda s: s and s not in ("TOTAL", "Accept len", "Eff tok/s"))


@st.composite
def prof_blocks(draw):
    phases = draw(st.lists(st.tuples(label_st, two_dp(0, 500)), min_size=1, max_size=6,
                           unique_by=lambda p: p[0]))
    cycles = draw(st.integers(1, 10000))
    tokens = draw(st.integers(0, 10 * cycles))
    mode = draw(st.sampled_from(["no sync", "sync", None]))
    return phases, cycles, tokens, mode, draw(st.sampled_from(["", "[2026-03-02 14:07:11 TP3] "]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prof_blocks())
def test_prof_block_round_trip(block):
    phases, cycles, tokens, mode, prefix = block
    total = round(sum(ms for _, ms in phases), 2)
    accept = round(tokens / cycles, 2)
    eff = round(1000 * accept / total, 1) if total else 0.0
    lines = [f"EAGLE3_PROF ({cycles} cycles, {tokens} tok" + (f", {mode})" if mode else ")")]
    lines += [f"  {label}: {ms:.2f} ms/cyc" for label, ms in phases]
    lines += [f"  TOTAL: {total:.2f} ms/cyc", f"  Accept len: {accept:.2f}",
              f"  Eff tok/s: {eff:.1f}"]
    s = Scanner("x")
    s.feed(("".join(prefix + ln + "\n" for ln in lines)).encode())
    frames = s.finish()
    (row,) = frames["prof"].to_dict("records")
    assert (row["cycles"], row["tokens"]) == (cycles, tokens)
    assert (row["mode"] if mode else None) == mode and (mode or pd.isna(row["mode"]))
    assert (row["total_ms"], row["accept_len"], row["complete"]) == (total, accept, True)
    ph = frames["prof_phases"]
    assert list(zip(ph.phase.astype(str), ph.ms_per_cycle)) == phases
    assert (row["ranks"] if prefix else None) == ("TP3" if prefix else None)


NOISE = st.lists(st.text(alphabet=string.ascii_letters + string.digits + " :-[]().,=/'\"",
                         max_size=60).filter(lambda t: t.strip() and not t[0].isspace()),
                 min_size=1, max_size=3)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.data())
def test_noise_lines_between_records_change_nothing(tmp_path, data):
    src = (SAMPLES / "eagle3_2step.log").read_text().splitlines(keepends=True)
    base = eaglelog.parse(SAMPLES / "eagle3_2step.log")
    out = []
    for i, line in enumerate(src):
        out.append(line)
        nxt = src[i + 1] if i + 1 < len(src) else ""
        # only between records: never inside an EAGLE3_PROF block (its lines start with the
        # prefix and two spaces)
        if "TP0]   " not in nxt and data.draw(st.integers(0, 9)) == 0:
            out += [n + "\n" for n in data.draw(NOISE) if not eaglelog.parsers.MARKERS.search(
                n.encode())]
    p = tmp_path / "noisy.log"
    p.write_text("".join(out))
    noisy = eaglelog.parse(p)
    for name in eaglelog.TABLES:
        a = base.table(name).drop(columns=["source", "line_no", "end_line", "block"],
                                  errors="ignore")
        b = noisy.table(name).drop(columns=["source", "line_no", "end_line", "block"],
                                   errors="ignore")
        pd.testing.assert_frame_equal(a, b, check_categorical=False)
