"""The others.md registry and scanner (parsers/others.py): grep counts per fixture, family
sniffing, the accept-length arithmetic across families, what every fixture's reports promise,
robustness and the CLI on benchmark outputs.  The golden rows are in tests/test_fixtures.py; each
family's formats in tests/test_llamacpp.py, test_trtllm.py and test_bench.py."""
import json
import math
import re

import pytest
from hypothesis import given, settings, strategies as st

import eaglelog
from eaglelog.parsers import ENGINES, choose_engine, others
from conftest import FIXTURES

OTHERS = FIXTURES / "others"
# fixture -> [(marker regex, table, column, value)]: the lines grep finds for the marker are
# exactly the rows of that table whose column has that value
MARKERS = {
    "llama_request": [("draft acceptance =", "bench", "scope", "request")],
    "llama_statistics": [("#gen drafts", "bench", "scope", "aggregate")],
    "llama_simple": [(r"^n_draft\s*=", "bench", "tool", "llama-speculative-simple")],
    "trtllm_bench": [("DECODING STATISTICS", "bench", "tool", "trtllm-bench")],
    "trtllm_bench_cut": [("DECODING STATISTICS", "bench", "tool", "trtllm-bench")],
    "trtllm_iter_log": [("host_step_time", "bench_iters", "format", "iter_log")],
    "trtllm_iter_stats": [("specDecodingStats", "bench_iters", "format", "iter_stats")],
    "bench_serving": [("Serving Benchmark Result", "bench", "tool", "sglang.bench_serving")],
    "bench_one_batch_server": [(r"^\|\s+\d", "bench", "format", "table"),
                               ("acc_length: ", "bench", "format", "line")],
    "bench_speculative": [("Finish i=", "bench", "format", "line"),
                          ('"acc_length":', "bench", "format", "jsonl")],
    "mtbench": [("#questions:", "bench", "format", "line"),
                ('"accept_length":', "bench", "format", "jsonl")],
    "send_one_lines": [("acc_length=", "bench", "tool", "sglang.send_one")],
    "send_one_table": [(r"^\|\s+[\d.]", "bench", "tool", "sglang.send_one")],
    "adaptive": [("Avg accept_len:", "bench", "format", "line"),
                 (r"^\w+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", "bench", "format", "table")],
    "run_eval": [("Speculative accept length", "bench", "tool", "sglang.run_eval")],
    "vllm_bench_serve": [("Serving Benchmark Result", "bench", "tool", "vllm.bench_serve")],
    "vllm_section_standalone": [("Speculative Decoding", "bench", "tool", "vllm.bench_serve")],
    "vllm_offline": [("total_num_output_tokens:", "bench", "tool", "vllm.spec_decode_example")],
    "specbench": [("Task:", "bench", "scope", "task")],
    "specbench_answers": [('"accept_lengths"', "bench", "tool", "spec-bench")],
    "eagle_answers": [('"idxs"', "bench", "tool", "eagle")],
    "llama_request_forms": [("draft acceptance", "bench", "scope", "request")],
    "llama_statistics_forms": [("#gen drafts", "bench", "scope", "aggregate")],
    "llama_cut": [("draft acceptance", "bench", "scope", "request"),
                  ("#gen drafts", "bench", "scope", "aggregate")],
    # three runs of the example, each starting where its first key is printed
    "vllm_offline_versions": [(r"^(?:mean acceptance length: 2\.(?:41|50)|total_num_output_"
                               r"tokens: 12800)$",
                               "bench", "tool", "vllm.spec_decode_example")],
    "trtllm_iter_bad": [("host_step_time", "bench_iters", "format", "iter_log"),
                        ("specDecodingStats", "bench_iters", "format", "iter_stats")],
    "bench_speculative_bad": [("Finish i=", "bench", "format", "line"),
                              ('"acc_length":', "bench", "format", "jsonl")],
    "mtbench_cut": [("#questions:", "bench", "format", "line")],
    "mixed_sglang_bench": [("Serving Benchmark Result", "bench", "tool", "sglang.bench_serving"),
                           ("Decode batch", "decode", "source", None)],
}
ENGINE_OF = {"llama": "llamacpp", "trtllm": "trtllm", "mixed": "sglang+bench"}


def test_every_fixture_has_markers():
    assert sorted(p.stem for p in OTHERS.glob("*.log")) == sorted(MARKERS)


@pytest.mark.parametrize("name", sorted(MARKERS))
def test_record_count_equals_grep_count(name):
    """Nothing is lost: the lines grep finds are the rows, plus the lines reported as not read."""
    path = OTHERS / f"{name}.log"
    log = eaglelog.parse(path)
    lines = path.read_bytes().decode().split("\n")
    reported = {d.line_no for d in log.diagnostics if d.kind in ("malformed", "truncated")}
    for marker, table, col, value in MARKERS[name]:
        pat = re.compile(marker if marker.startswith("^") else re.escape(marker))
        want = [i for i, ln in enumerate(lines, 1) if pat.search(ln)]
        df = log.table(table)
        if value is not None:
            df = df[df[col] == value]
        got = sorted(df["line_no"].tolist() + [i for i in want if i in reported])
        assert got == want, (marker, want)


@pytest.mark.parametrize("name", sorted(MARKERS))
def test_auto_picks_the_family(name):
    head = (OTHERS / f"{name}.log").read_bytes()
    want = next((e for k, e in ENGINE_OF.items() if name.startswith(k)), "bench")
    if name == "vllm_offline":       # its interleaved vLLM logger line is the vllm family's
        want = "vllm+bench"
    assert choose_engine("auto", head).name == want
    assert eaglelog.parse(OTHERS / f"{name}.log").sources[0].engine == want


def test_auto_still_picks_sglang_on_server_logs():
    for p in sorted((FIXTURES / "sglang").glob("*.log"))[:20]:
        assert choose_engine("auto", p.read_bytes()).name == "sglang", p


def test_a_mixed_log_is_split_by_family():
    log = eaglelog.parse(OTHERS / "mixed_sglang_bench.log")
    # the decode line printed inside the result block is a decode row, not a row of the block
    assert log.decode["line_no"].tolist() == [2, 6, 11]
    b = log.bench.iloc[0]
    assert (b["line_no"], b["end_line"], b["accept_len"], b["requests"]) == (3, 10, 2.79, 64)
    assert json.loads(b["extra"]) == {"Backend": "sglang"}
    assert b["startup"] == 1 and log.sources[0].skipped == 0


def test_an_engine_reads_only_its_family():
    with pytest.raises(eaglelog.NoRecordsError) as e:
        eaglelog.parse(OTHERS / "bench_serving.log", engine="trtllm")
    # only the family asked for was tried; the message points at the one the file holds, from
    # its first record line (the watch: 'Serving Benchmark Result', line 4)
    assert str(e.value).endswith("families tried: trtllm; it holds bench (from line 4) lines: "
                                 "drop --engine (auto) or pass --engine bench")


# ------------------------------------------------------------------ the accept-length arithmetic
def test_accept_length_conversions_worked_out():
    rows = eaglelog.parse(OTHERS / "llama_statistics.log").bench
    # 66 drafts, 120 accepted tokens: τ = 1 + 120/66 = 2.8181…, printed 2.82 (bonus included)
    assert rows["accept_len_derived"][0] == pytest.approx(1 + 120 / 66) == \
        pytest.approx(2.818181818)
    assert rows["accept_len"][0] == 2.82
    # Σ per-position = τ − 1: 0.833 + 0.606 + 0.379 = 1.818
    assert sum(json.loads(rows["per_position"][0])) == pytest.approx(2.82 - 1, abs=0.005)
    # mean draft length 168/66 = 2.545 below the maximum 3; accept rate 120/168 = 0.714
    assert rows["mean_draft_len"][0] == pytest.approx(168 / 66)
    assert rows["accept_rate_derived"][0] == pytest.approx(120 / 168)
    v = eaglelog.parse(OTHERS / "vllm_bench_serve.log").bench.iloc[0]
    # vLLM: 1 + 18810/10234 = 2.838 (printed 2.84); 18810/30702 = 61.27 % -> 0.6127 as a fraction
    assert v["accept_len_derived"] == pytest.approx(2.83799101)
    assert (v["accept_len"], v["acceptance_rate"]) == (2.84, pytest.approx(0.6127))
    assert json.loads(v["per_position"]) == [0.7812, 0.6005, 0.4563]
    it = eaglelog.parse(OTHERS / "trtllm_iter_stats.log").bench_iters
    # TRT-LLM: (accepted + requests) / requests = (29 + 16) / 16 = 2.8125, (10 + 4) / 4 = 3.5
    assert it["accept_len_derived"].tolist() == [2.8125, 3.5] == it["accept_len"].tolist()
    e = eaglelog.parse(OTHERS / "eagle_answers.log").bench.iloc[0]
    # EAGLE answer file: Σ new_tokens / Σ (idx + 1) = (201 + 139) / (60 + 42) = 3.333
    assert e["accept_len"] == pytest.approx(340 / 102)
    s = eaglelog.parse(OTHERS / "llama_simple.log").bench.iloc[0]
    # no draft count printed: no τ; accept 53.889 % = 97/180
    assert math.isnan(s["accept_len"]) and math.isnan(s["accept_len_derived"])
    assert s["acceptance_rate"] == pytest.approx(97 / 180, abs=5e-6)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_parsers_never_raise(text):
    for fn in others.LINE_PARSERS.values():
        res = fn(text)
        assert res.record is not None or isinstance(res.problems, list)
    sc = others.OthersScanner("x")
    sc.feed(("Serving Benchmark Result\n" + text + "\nDECODING STATISTICS\n" + text).encode(
        "utf-8", "replace"))
    sc.finish()


def _logs():
    return {p.stem: eaglelog.parse(p) for p in sorted(OTHERS.glob("*.log"))}


def test_every_incomplete_row_is_reported_and_only_those():
    """complete=False on a row ⇔ an incomplete_block report at its line (lines and blocks cut
    short keep what survived, and say so)."""
    n = 0
    for name, log in _logs().items():
        b = log.bench
        cut = sorted(b.loc[~b["complete"].astype(bool), "line_no"].tolist()) if len(b) else []
        said = sorted(d.line_no for d in log.diagnostics if d.kind == "incomplete_block" and
                      "never finished" not in d.message)
        assert cut == said, name
        n += len(cut)
    assert n == 7


def test_no_non_finite_value_in_any_table():
    for name, log in _logs().items():
        for t in others.TABLES_HERE:
            df = log.table(t)
            for c in df.columns:
                if df[c].dtype.kind == "f":
                    assert not df[c].isin([math.inf, -math.inf]).any(), (name, t, c)
                if c in ("extra", "stats", "per_position"):
                    for v in df[c].dropna():
                        json.loads(v, parse_constant=lambda x: pytest.fail(f"{name} {c}: {x}"))


@pytest.mark.parametrize("name", ["llama_cut", "trtllm_iter_bad", "bench_speculative_bad"])
def test_cli_json_is_strict_on_damaged_input(run, name):
    table = "bench-iters" if name.startswith("trtllm") else "bench"
    r = run("parse", "--table", table, "-f", "json", OTHERS / f"{name}.log")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout, parse_constant=lambda x: pytest.fail(f"non-finite {x}"))
    assert rows and "Traceback" not in r.stderr


# ------------------------------------------------------------------ CLI
def test_cli_parse_table_bench(run):
    r = run("parse", "--table", "bench", "-f", "json", OTHERS / "vllm_bench_serve.log")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)
    assert rows[0]["tool"] == "vllm.bench_serve" and rows[0]["accept_len"] == 2.84
    r = run("parse", "--table", "bench-iters", OTHERS / "trtllm_iter_log.log")
    assert r.exit_code == 0 and "1530" in r.stdout


def test_cli_overview_names_the_bench_tables(run):
    r = run("parse", OTHERS / "trtllm_bench.log")
    assert r.exit_code == 0 and "bench 1" in r.stdout and "trtllm" in r.stdout


def test_cli_summary_on_a_benchmark_output(run):
    r = run("summary", OTHERS / "bench_serving.log")
    assert r.exit_code == 0, r.stderr
    assert "sglang.bench_serving" in r.stdout and "3.12" in r.stdout
    r = run("summary", "-f", "json", OTHERS / "llama_statistics.log")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["runs"][0]["accept_len"]["benchmark"]["estimate"] == 2.82
    assert d["runs"][0]["bench"]["accept_len"] == 2.82 and d["errors"] == []


def test_cli_no_records_names_every_family(run, write):
    p = write("none.log", "hello\nworld\n")
    r = run("parse", p)
    assert r.exit_code == 1
    assert f"families tried: {', '.join(ENGINES)} (looked for" in r.stderr


def test_sniff_literals_never_hide_a_marker():
    """Sniffing skips a kind's regex when the head holds none of its literals: on every fixture
    and sample the answer is the regex's own, and every match contains one of the literals."""
    from conftest import FIXTURES, SAMPLES
    from eaglelog.parsers import ENGINES, _found, _kind_pattern
    from eaglelog.parsers import others as oth
    heads = [p.read_bytes()[:1 << 20] for p in sorted(FIXTURES.glob("*/*.log")) +
             sorted(SAMPLES.glob("*.log"))]
    checks = [(_kind_pattern(k), oth.SNIFF_LITERALS.get(k, ())) for k in oth.KIND_FAMILY] + \
        [(e.pattern, e.literals) for e in ENGINES.values() if e.literals]
    hits = 0
    for pattern, lits in checks:
        for head in heads:
            assert _found(pattern, lits, head) == (pattern.search(head) is not None)
            for m in pattern.finditer(head):
                hits += 1
                if lits:
                    assert any(lit in m.group(0) for lit in lits), (pattern.pattern, m.group(0))
    assert hits > 50


def test_a_sglang_head_runs_no_other_familys_regex():
    """The literals of the kinds that have them are absent from every bundled SGLang server
    log, so sniffing one never runs those kinds' regexes over its head ('num_draft' was in
    every server_args line and 'accept' in every decode line: two regexes over each of 2,000
    small logs, 1.4 ms a log)."""
    from conftest import SAMPLES
    from eaglelog.parsers import others as oth
    heads = [p.read_bytes()[:1 << 20] for p in sorted(SAMPLES.glob("*.log"))
             if b"Decode batch" in p.read_bytes()]
    assert len(heads) >= 4
    for k, lits in oth.SNIFF_LITERALS.items():
        for head in heads:
            assert not any(lit in head for lit in lits), (k, [x for x in lits if x in head])


def _offline_summary_and_body():
    """A vLLM offline-example summary (its own lines, no server line) and over 1 MiB of SGLang
    decode lines."""
    from conftest import FIXTURES
    summary = [ln for ln in (FIXTURES / "others" / "vllm_offline.log").read_text().splitlines()
               if "INFO" not in ln]
    line = ("[2026-01-20 10:00:{s:02d} TP0] Decode batch. #running-req: 8, #token: 53175, "
            "token usage: 0.38, accept len: 2.10, accept rate: 0.35, cuda graph: True, "
            "gen throughput (token/s): 92.96, #queue-req: 0, \n")
    body = "".join(line.format(s=i % 60) for i in range(2 * (1 << 20) // len(line)))
    assert len(body) > 1 << 20
    return "\n".join(summary) + "\n", body


def test_a_bench_summary_in_the_first_mib_is_read(tmp_path):
    summary, body = _offline_summary_and_body()
    early = tmp_path / "early.log"
    early.write_text(body[:body.index("\n") + 1] + summary + body)
    log = eaglelog.parse(str(early))
    assert log.sources[0].engine == "sglang+bench"
    assert len(log.bench) == 1 and len(log.decode) > 10_000


@pytest.mark.parametrize("pure", [False, True])
def test_a_bench_summary_after_the_first_mib_is_reported(tmp_path, monkeypatch, pure):
    """Nothing is lost: the same summary after more than 1 MiB of SGLang lines (the families
    are chosen from the first MiB) is reported at its first record line, with what reads it —
    by the C accelerator's scan and by the Python parser alike (before: neither read nor
    reported; fuzz seed 43, case 43:167)."""
    from eaglelog.parsers import scan
    monkeypatch.setattr(scan, "_PURE", pure)
    summary, body = _offline_summary_and_body()
    late = tmp_path / "late.log"
    late.write_text(body + summary)
    log = eaglelog.parse(str(late))
    assert len(log.bench) == 0 and len(log.decode) == body.count("\n")
    first = body.count("\n") + 1 + next(i for i, ln in enumerate(summary.splitlines())
                                         if ln.startswith("total_num_output_tokens:"))
    assert [(d.line_no, d.message) for d in log.diagnostics if d.kind == "other_family"] == [
        (first, "benchmark-script records from here on are not read (read as sglang, the "
                "family of its first lines; the families are chosen from the first MiB): pass "
                "--engine bench to read them, or read that part of the file on its own")]


@pytest.mark.parametrize("pure", [False, True])
def test_a_record_of_another_family_that_ends_a_profiler_block_is_reported(
        tmp_path, monkeypatch, pure):
    """A benchmark-script record line after the first MiB that cuts an EAGLE3_PROF block short
    is reported as any such line is. The Python parser closes the block on it (the C scan
    hands such a block over), and that line was watched by neither (fuzz seed 100, case
    100:70: the pure-Python scan reported it, the accelerated one did not)."""
    from eaglelog.parsers import scan
    monkeypatch.setattr(scan, "_PURE", pure)
    _, body = _offline_summary_and_body()
    record = ('{"question_id": 81, "category": "writing", "answer_id": "e81", "model_id": '
              '"m", "choices": [{"index": 0, "turns": ["a", "b"], "idxs": [59, 41], '
              '"new_tokens": [201, 139], "wall_time": [1.0, 1.0]}], "tstamp": 1767225600.0}')
    log_path = tmp_path / "cut.log"
    log_path.write_text(body + "EAGLE3_PROF (100 cycles, 76 tok, no sync)\n" + record + "\n"
                        "  Draft steps:        0.19 ms/cyc  (  0.7%)\n" +
                        body[:body.index("\n", 2000) + 1])
    log = eaglelog.parse(str(log_path))
    at = body.count("\n") + 2
    other = [(d.line_no, d.message.split(" (")[0]) for d in log.diagnostics
             if d.kind == "other_family"]
    assert other == [(at, "benchmark-script records from here on are not read")]
    assert [(d.line_no, d.kind) for d in log.diagnostics if d.kind != "other_family"] == [
        (at - 1, "incomplete_block")]


def test_every_watch_literal_is_in_every_match_of_its_kind():
    """The watch (parsers.watched) looks for a family's literals before its regexes: each
    kind's literals (KIND_LITERALS) are in every match of the kind's regex on every fixture and
    sample, so a record line is never passed over."""
    from conftest import FIXTURES, SAMPLES
    from eaglelog.parsers import _kind_pattern
    from eaglelog.parsers import others as oth
    texts = [p.read_bytes() for p in sorted(FIXTURES.glob("*/*.log")) +
             sorted(SAMPLES.glob("*.log"))]
    hits = {}
    for k, lits in oth.KIND_LITERALS.items():
        assert lits, k
        for t in texts:
            for m in _kind_pattern(k).finditer(t):
                assert any(lit in m.group(0) for lit in lits), (k, m.group(0))
                hits[k] = hits.get(k, 0) + 1
    assert len(hits) >= 20


def test_server_logs_hold_no_other_familys_watch_literal():
    """Watching costs one pass a chunk while no literal of the families watched is found; a
    literal found runs the family's regex over the rest of the chunk.  The bundled SGLang and
    vLLM logs hold none of the other families' literals."""
    from conftest import SAMPLES
    from eaglelog.parsers import WATCH_LITERALS
    logs = [p.read_bytes() for p in sorted(SAMPLES.rglob("*.log"))]
    n = 0
    for t in logs:
        own = "sglang" if b"Decode batch" in t else "vllm" if b"Engine 000" in t else None
        if own is None:
            continue
        n += 1
        for fam, lits in WATCH_LITERALS.items():
            if fam not in (own, "sglang", "vllm"):
                assert not any(lit in t for lit in lits), (fam, [x for x in lits if x in t])
    assert n >= 6


@pytest.mark.parametrize("pure", [False, True])
def test_a_literal_in_another_line_does_not_end_the_watch(tmp_path, monkeypatch, pure):
    """A watched literal in a line that is not a record (a false alarm) is checked and the
    watch goes on: the family's first record, chunks later, is the line reported."""
    from eaglelog.parsers import scan
    monkeypatch.setattr(scan, "_PURE", pure)
    summary, body = _offline_summary_and_body()
    path = tmp_path / "alarm.log"
    path.write_text(body + "INFO: a word about num_drafts: in a sentence\n" + body + summary)
    log = eaglelog.parse(str(path), chunk_size=1 << 16)
    first = 2 * body.count("\n") + 2 + next(i for i, ln in enumerate(summary.splitlines())
                                            if ln.startswith("total_num_output_tokens:"))
    assert [d.line_no for d in log.diagnostics if d.kind == "other_family"] == [first]


@pytest.mark.parametrize("chunk_size", [4093, 1 << 16, 8 << 20])
def test_the_families_are_chosen_from_the_first_mib_whatever_the_chunk_size(tmp_path,
                                                                             chunk_size):
    """Chunks smaller than a MiB are read ahead for the sniff: a summary 800 KB into a gzipped
    SGLang log (decompressed a piece at a time: the first chunk of a small chunk size is far
    less than a MiB) is read at every chunk size; it was once reported instead, its family
    sniffed from the first chunk only (fuzz seed 43, case 43:167)."""
    import gzip
    import random
    summary, _ = _offline_summary_and_body()
    rng = random.Random(5)
    line = ("[2026-01-20 10:00:{s:02d} TP0] Decode batch. #running-req: {r}, #token: {t}, "
            "token usage: 0.{u:02d}, accept len: {a:.2f}, accept rate: 0.35, cuda graph: True, "
            "gen throughput (token/s): {g:.2f}, #queue-req: 0, \n")
    body = "".join(line.format(s=i % 60, r=rng.randint(1, 64), t=rng.randint(1, 99999),
                               u=rng.randint(0, 99), a=rng.uniform(1, 4), g=rng.uniform(10, 99))
                   for i in range(8000))
    cut = body.index("\n", 800_000) + 1
    path = tmp_path / "near.log.gz"
    path.write_bytes(gzip.compress((body[:cut] + summary + body[cut:]).encode()))
    log = eaglelog.parse(str(path), chunk_size=chunk_size)
    assert log.sources[0].engine == "sglang+bench"
    assert len(log.bench) == 1 and len(log.decode) == body.count("\n")
    assert not [d for d in log.diagnostics if d.kind == "other_family"]
