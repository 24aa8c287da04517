"""The fast paths of the per-log parse (issue 37): each gives what the general path gives.

* a Finish: line's request record (sglang._request_record: plain values taken as they are,
  json.dumps of the histogram as a join; parse_finish_line: no prompt-identity pass when obj
  names no text/input_ids/custom_labels) against the reader it replaced, kept here as the
  oracle, on tricky lines: escaped quotes, unicode, nested values, missing fields, values of
  the wrong type or out of range, lines cut short;
* the accept histogram read back without json.loads (sglang._histogram);
* server_args reprs of plain literals read by one findall (sglang._plain_args) against the
  ast reader (sglang._read_args), which still reads every other shape.
"""
import json
import math
import random

import pytest
from hypothesis import given, settings, strategies as st

from eaglelog.parsers import sglang
from eaglelog.parsers.numbers import literal_eval, to_int, to_measure
from eaglelog.parsers.request_identity import identity_from_text
from eaglelog.parsers.sglang import (_histogram, _plain_args, _read_args, _request_record,
                                     parse_finish_line, parse_server_args)


# ------------------------------------------------------------------ the oracle: the reader before

def _old_request_record(meta: dict):
    rec, problems = {}, []
    for col, keys in sglang._REQ_KEYS.items():
        for k in keys:
            if k in meta and meta[k] is not None:
                v = meta[k]
                try:
                    if col in sglang._INT_COLS:
                        v = to_int(v)
                    elif col in sglang._FLOAT_COLS:
                        v = to_measure(v)
                    elif col == "accept_histogram":
                        if not isinstance(v, (list, tuple)):
                            raise ValueError(v)
                        v = json.dumps([to_int(x) for x in v])
                    else:
                        v = str(v)
                except (TypeError, ValueError):
                    problems.append(f"bad value for {k!r}: {v!r}")
                    v = None
                rec[col] = v
                break
    fr = meta.get("finish_reason")
    if isinstance(fr, dict) and fr.get("type") is not None:
        rec["finish_reason"] = str(fr["type"])
    elif isinstance(fr, str):
        rec["finish_reason"] = fr
    return rec, problems


def _old_finish(line: str):
    """parse_finish_line as it was: literal_eval for the out part, the identity pass always."""
    idx = line.find("Finish: obj=")
    if idx < 0:
        return None, []
    o = line.rfind(", out={")
    if o < idx:
        return None, ["Finish line has no 'out={' part: cut short?"]
    out_text = line[o + len(", out="):].rstrip()
    try:
        out = literal_eval(out_text)
        meta = out.get("meta_info", out) if isinstance(out, dict) else {}
        if not isinstance(meta, dict):
            meta = {}
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        meta = sglang._meta_by_regex(out_text)
        if not meta:
            return None, ["Finish line's out={…} could not be read"]
    rec, problems = _old_request_record(meta)
    import re
    if "rid" not in rec:
        m = re.search(r"rid=['\"]([^'\"]+)['\"]", line[idx:o])
        if m:
            rec["rid"] = m.group(1)
    rec.update(sglang.prefix_columns(line[:idx]))
    for k in ("ranks", "dp", "pp", "attn_cp", "moe_dp", "tp", "ep"):
        rec.pop(k, None)
    rec.update(identity_from_text(line[idx + len("Finish: obj="):o]))
    rec["format"] = "text"
    return rec, problems


def _same(a, b) -> bool:
    """Equal, types and float signs included (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a != a and b != b) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


# ------------------------------------------------------------------ Finish: lines

HEAD = "[2026-03-02 14:00:34.749 DP1 TP0] Finish: obj=GenerateReqInput(rid='5bc8', stream=False)"
META = ("'id': '5bc8', 'finish_reason': {'type': 'length', 'length': 295}, 'prompt_tokens': 894, "
        "'total_retractions': 0, 'completion_tokens': 295, 'cached_tokens': 0, "
        "'spec_accept_rate': 0.2859504132231405, 'spec_accept_length': 2.43801652892562, "
        "'spec_num_correct_drafts': 173, 'spec_num_proposed_drafts': 605, 'spec_verify_ct': 121, "
        "'spec_correct_drafts_histogram': [21, 44, 39, 17, 0, 0], 'e2e_latency': 3.389")

FINISH_LINES = [
    f"{HEAD}, out={{'meta_info': {{{META}}}}}",
    # the JSON-format spelling of the values, and a meta without the meta_info level
    f"{HEAD}, out={{{META}}}",
    # escaped quotes, a double-quoted string, unicode, a backslash: literal_eval reads these
    f"{HEAD}, out={{'meta_info': {{'id': 'a\\'b', 'finish_reason': {{'type': \"stop\"}}, "
    f"'prompt_tokens': 3, 'weight_version': 'ünï 😀 \\\\'}}}}",
    f"{HEAD}, out={{'meta_info': {{'id': 'é—ü', 'prompt_tokens': 3, 'completion_tokens': 2}}}}",
    # nested values the record does not read, and None/True/False
    f"{HEAD}, out={{'text': 'x', 'meta_info': {{'id': 'q', 'nested': {{'a': [1, {{'b': None}}]}}, "
    f"'finish_reason': None, 'is_stream': True, 'cached_tokens': None, 'prompt_tokens': 7}}}}",
    # missing fields; the rid from obj
    f"{HEAD}, out={{'meta_info': {{'completion_tokens': 9}}}}",
    f"{HEAD}, out={{'meta_info': {{}}}}",
    # values of the wrong type or out of range: reported, NA
    f"{HEAD}, out={{'meta_info': {{'id': 12, 'prompt_tokens': 16384.0, 'completion_tokens': 1.5, "
    f"'cached_tokens': True, 'e2e_latency': 7, 'spec_accept_length': -0.5, "
    f"'spec_accept_rate': 1e13, 'spec_verify_ct': 99999999999999999999, "
    f"'spec_correct_drafts_histogram': [1, True, 2]}}}}",
    f"{HEAD}, out={{'meta_info': {{'spec_correct_drafts_histogram': (1, 2), 'spec_accept_histogram'"
    f": [3], 'e2e_latency': '2.5', 'prompt_tokens': '12', 'spec_accept_rate': -0.0}}}}",
    f"{HEAD}, out={{'meta_info': {{'spec_correct_drafts_histogram': [], 'spec_verify_ct': 0, "
    f"'spec_num_correct_drafts': [1], 'finish_reason': 'abort'}}}}",
    f"{HEAD}, out={{'meta_info': {{'spec_correct_drafts_histogram': [1.0, 2], 'e2e_latency': "
    f"float('nan'), 'prompt_tokens': -9223372036854775808}}}}",
    f"{HEAD}, out={{'meta_info': {{'spec_correct_drafts_histogram': [-1, 9223372036854775808]}}}}",
    f"{HEAD}, out={{'meta_info': {{'spec_correct_drafts_histogram': [0, -9223372036854775809]}}}}",
    f"{HEAD}, out={{'meta_info': {{'e2e_latency': NaN, 'prompt_tokens': Infinity}}}}",
    # cut short: the regex reader, or nothing
    f"{HEAD}, out={{'meta_info': {{'id': 'c1', 'prompt_tokens': 894, 'completion_toke",
    f"{HEAD}, out={{'meta_info': {{'id': 'c2', 'spec_correct_drafts_histogram': [21, 4",
    f"{HEAD}, out={{'meta_info",
    f"{HEAD}, out={{",
    "[2026-03-02 14:00:34] Finish: obj=GenerateReqInput(rid='5bc8', stream=",
    # the identity fields (prompt hash, labels) in obj
    "[2026-03-02 14:00:34] Finish: obj=GenerateReqInput(rid='r1', text='hello', "
    "custom_labels={'team': 'a'}), out={'meta_info': {'id': 'r1', 'prompt_tokens': 1}}",
    "[2026-03-02 14:00:34] Finish: obj=GenerateReqInput(rid='r2', input_ids=[1, 2, 3]), "
    "out={'meta_info': {'prompt_tokens': 3}}",
    "[2026-03-02 14:00:34] Finish: obj=GenerateReqInput(input_text='x', rid=\"r3\"), "
    "out={'meta_info': {'prompt_tokens': 3}}",
    # a time-only prefix, tags the request keeps, no prefix
    "[14:00:34 TP1 XY2] Finish: obj=GenerateReqInput(rid='r4'), out={'meta_info': {'id': 'r4'}}",
    "Finish: obj=GenerateReqInput(rid='r5'), out={'meta_info': {'id': 'r5'}}   ",
]


@pytest.mark.parametrize("line", FINISH_LINES)
def test_finish_line_record_is_the_general_readers(line):
    got = parse_finish_line(line)
    rec, problems = _old_finish(line)
    assert got.problems == problems
    assert _same(got.record, rec), (got.record, rec)


def test_finish_line_values():
    r = parse_finish_line(FINISH_LINES[0])
    assert r.problems == []
    rec = r.record
    assert rec["rid"] == "5bc8" and rec["finish_reason"] == "length"
    assert rec["prompt_tokens"] == 894 and rec["completion_tokens"] == 295
    assert rec["accept_histogram"] == "[21, 44, 39, 17, 0, 0]"
    assert rec["spec_accept_rate"] == 0.2859504132231405 and rec["e2e_latency"] == 3.389
    assert rec["_date"] == "2026-03-02" and rec["_time"] == "14:00:34.749"
    assert "tp" not in rec and "dp" not in rec and "ranks" not in rec
    assert "prompt_hash" not in rec and rec["format"] == "text"
    bad = parse_finish_line(FINISH_LINES[7])
    assert bad.record["prompt_tokens"] == 16384 and bad.record["completion_tokens"] is None
    assert bad.record["rid"] == "12" and bad.record["e2e_latency"] == 7.0
    assert bad.problems == ["bad value for 'completion_tokens': 1.5",
                            "bad value for 'cached_tokens': True",
                            "bad value for 'spec_verify_ct': 99999999999999999999",
                            "bad value for 'spec_correct_drafts_histogram': [1, True, 2]",
                            "bad value for 'spec_accept_length': -0.5",
                            "bad value for 'spec_accept_rate': 10000000000000.0"]
    ident = parse_finish_line(FINISH_LINES[19]).record
    assert len(ident["prompt_hash"]) == 16 and ident["custom_labels"] == '{"team": "a"}'


_values = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                    st.lists(st.one_of(st.integers(-2 ** 64, 2 ** 64), st.booleans(),
                                       st.floats(-5, 5)), max_size=6),
                    st.tuples(st.integers(0, 9)))
_keys = st.sampled_from([k for keys in sglang._REQ_KEYS.values() for k in keys] +
                        ["finish_reason", "weight_version"])


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=12))
def test_request_record_of_any_meta_is_the_converters(meta):
    got, old = _request_record(meta), _old_request_record(meta)
    assert got[1] == old[1]
    assert _same(got[0], old[0])


# ------------------------------------------------------------------ the histogram read back

@pytest.mark.parametrize("text", ["[]", "[0]", "[21, 44, 39, 17, 0, 0]", "[-3, 0, 12]",
                                  "[9223372036854775807, -9223372036854775808]",
                                  "[01, 2]", "[1,2]", "[1.5]", "[ 1]", "[-0]", "[1, -0, 3]"])
def test_histogram_is_json_loads(text):
    try:
        want = json.loads(text)
    except ValueError:
        with pytest.raises(ValueError):
            _histogram(text)
        return
    assert _same(_histogram(text), want)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), max_size=10))
def test_histogram_of_what_the_record_writes(hist):
    text = _request_record({"spec_correct_drafts_histogram": hist})[0]["accept_histogram"]
    assert text == json.dumps(hist)
    assert _histogram(text) == hist


# ------------------------------------------------------------------ server_args

def _general(expr: str):
    """_read_args on its own (the ast reader), for the same expression."""
    if expr.startswith("{"):
        return _read_args(expr, sglang._dict_pairs, "{", "}", sglang._dict_key)
    return _read_args(expr, sglang._call_pairs, "(", ")", sglang._call_key)


PLAIN = ("model_path='/models/llama-3.1-8b', tp_size=2, mem_fraction_static=0.82, "
         "quantization=None, trust_remote_code=False, log_requests=True, random_seed=-1234, "
         "speculative_eagle_topk=1, schedule_conservativeness=1.0, eps=1e-05, big=1E+20, "
         "lora_target_modules=['q_proj', 'k_proj'], cuda_graph_bs=[1, 2, 4, 8], empty=[], "
         "name='', quoted=\"it's\", unicode='ünï 😀', zero=-0.0, odd='\x85\u2028\ufeff'")

SERVER_ARGS = [
    f"ServerArgs({PLAIN})",
    "{'model_path': '/models/llama', 'tp_size': 2, 'mem_fraction_static': 0.82, 'quantization': "
    "None, 'log_requests': True, 'eps': 1e-05, 'cuda_graph_bs': [1, 2, 4], 'name': '', "
    "'zero': -0.0, \"dq\": \"it's\", 'unicode': 'ünï 😀'}",
    "{'model_path': '/m', \"tp_size\": 4, 'not an identifier': 1, 'a': 1, 'a': 2}",
    "ServerArgs(a=1, a=2)",                       # a repeated keyword: ast parses it
    # shapes the fast reader leaves to ast
    "ServerArgs(class=1, b=2)", "ServerArgs(__debug__=1)", "ServerArgs(a=01)", "ServerArgs(a=00)",
    "ServerArgs(a=01.5, b=01e5)", "ServerArgs(a=1_000)", "ServerArgs(a=inf, b=nan)",
    "ServerArgs(a=[015])", "ServerArgs(a=[1, [2]])", "ServerArgs(a={'window': 6})",
    "ServerArgs(a=(1, 2))", "ServerArgs(a=LoRARef(name='x'), b=1)", "ServerArgs(a='x\\ty')",
    "ServerArgs(a='x\x00y')", "ServerArgs(a='x\ty')", "ServerArgs(a='x\ud800')",
    "ServerArgs(a=1, b=2,)", "ServerArgs(a=1 , b=2)", "ServerArgs(a=1,b=2)", "ServerArgs()",
    "ServerArgs(a=b'x')", "ServerArgs(a='x' 'y')", "ServerArgs(a=+1)", "ServerArgs(a=- 1)",
    "ServerArgs(a=1.)", "ServerArgs(a=.5)", "ServerArgs(a=1e5j)", "ServerArgs(1, a=2)",
    "ServerArgs(a=1, b='cut", "ServerArgs(a=1, b=2) trailing", "Other(a=1)", "{}",
    "{1: 2, 'a': 3}", "{'a': 1, b: 2}", "{'a': null, 'b': true}", "ServerArgs(a=null)",
    "ServerArgs(a=" + "9" * 5000 + ")", "ServerArgs(a=" + "9" * 100 + ")",
    "ServerArgs(a=-9223372036854775809, b=1e400, c=-1e400)",
    "ServerArgs(tp_size=10000000000000000000000, speculative_num_steps=2.5)",
]


@pytest.mark.parametrize("expr", SERVER_ARGS)
def test_server_args_fast_reader_is_the_ast_readers(expr):
    got = parse_server_args("server_args=" + expr)
    want = _general(expr)
    assert got[1] == want[1]
    assert _same(got[0], want[0]), (got, want)


def test_server_args_fast_reader_reads_the_plain_shapes():
    inner = PLAIN
    args = _plain_args(inner, sglang._CALL_PAIR)
    assert args is not None
    assert args["tp_size"] == 2 and args["random_seed"] == -1234 and args["quantization"] is None
    assert args["lora_target_modules"] == ["q_proj", "k_proj"] and args["empty"] == []
    assert args["eps"] == 1e-05 and args["big"] == 1e20 and args["quoted"] == "it's"
    assert math.copysign(1, args["zero"]) == -1 and args["name"] == ""
    # what it leaves to ast
    for other in ("class=1", "a=01", "a={'w': 6}", "a=1,b=2", "a=inf", "a='x\\ty'"):
        assert _plain_args(other, sglang._CALL_PAIR) is None, other


_plain_values = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 80, 2 ** 80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12),
    st.lists(st.one_of(st.integers(-99, 99), st.text(max_size=4), st.none(),
                       st.floats(-1e3, 1e3)), max_size=4))
_arg_names = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_arg_names, _plain_values, min_size=1, max_size=10), st.booleans())
def test_server_args_of_any_repr_are_the_ast_readers(args, dict_form):
    """A ServerArgs repr (or resolved dict) of any values, as Python prints it: the same
    (args, parsed_whole) whichever reader takes it."""
    if dict_form:
        expr = repr(args)
    else:
        expr = "ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"
    got = parse_server_args("server_args=" + expr)
    want = _general(expr)
    assert got[1] == want[1]
    assert _same(got[0], want[0])


def test_sample_logs_server_args_take_the_fast_reader():
    """The sample logs' server_args lines are of the plain shapes (the reason for the reader)."""
    from pathlib import Path
    root = Path(__file__).resolve().parents[1] / "sample_logs"
    lines = [ln for p in sorted(root.rglob("*.log"))
             for ln in p.read_text(errors="replace").splitlines() if "server_args=" in ln]
    assert lines
    fast = 0
    for ln in lines:
        expr = ln[ln.find("server_args=") + len("server_args="):].strip()
        inner = expr[1:-1] if expr.startswith("{") else expr[len("ServerArgs("):-1]
        rx = sglang._DICT_PAIR if expr.startswith("{") else sglang._CALL_PAIR
        fast += _plain_args(inner, rx) is not None
        assert _same(parse_server_args(ln), _general(expr))
    assert fast >= len(lines) * 3 // 4


# ------------------------------------------------------------------ many small logs

def test_many_small_logs_batched_are_each_logs_tables(tmp_path):
    """Small logs parsed together (the batch; the C scanner's column storage reused from one
    log to the next) give each log's own tables, rows and values."""
    import pandas as pd

    import eaglelog
    from pathlib import Path
    src = (Path(__file__).resolve().parents[1] / "sample_logs" / "eagle3_5step.log").read_text()
    lines = src.splitlines(keepends=True)
    rng = random.Random(37)
    paths = []
    for i in range(12):       # logs of different lengths: columns of different sizes
        p = tmp_path / f"log{i:02d}.log"
        p.write_text("".join(lines[:rng.randrange(40, len(lines))]))
        paths.append(str(p))
    together = eaglelog.parse(paths)
    for name, df in together.tables.items():
        parts = [eaglelog.parse(p).tables[name] for p in paths]
        parts = [f for f in parts if len(f)]
        if not parts:
            assert len(df) == 0
            continue
        one = pd.concat(parts, ignore_index=True)
        assert len(one) == len(df), name
        for col in one.columns:
            if col == "source":
                assert list(df[col].astype(str)) == list(one[col].astype(str))
                continue
            pd.testing.assert_series_equal(df[col].reset_index(drop=True),
                                           one[col].reset_index(drop=True),
                                           check_dtype=False, check_categorical=False,
                                           obj=f"{name}.{col}")
