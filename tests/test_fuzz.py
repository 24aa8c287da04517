"""Fuzz tests (issue 13): every command on mutated logs, through the console entry.

A fixed subset of benchmarks/fuzz.py's cases (the long run: ``python benchmarks/fuzz.py
--cases 3000 --jobs 2``).  Each case is rebuilt from (seed, index) by a seeded mutator over the
bundled synthetic logs; every invocation must end without an internal error or traceback, with
an exit code in {0, 1, 2, 3}, JSON that parses strictly, no nan/inf in tables or on screen and
one-line messages on stderr.  The differential scans SGLang inputs with the C accelerator and
the pure-Python parser, with small chunks and over several workers: the tables, the overview and
the diagnostics must be the same.  A failure prints the seed, the command line and where the
mutated input was saved, with its first differing line.
"""
import importlib.util
import json
import os
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES

_spec = importlib.util.spec_from_file_location("eaglelog_fuzz", ROOT / "benchmarks" / "fuzz.py")
fuzz = sys.modules.setdefault("eaglelog_fuzz", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(fuzz)

fuzz.STABLE = True                # the samples and the fixtures of STABLE_FIXTURES only
SEEDS = (13, 1013, 2013, 3013, 4013, 5013, 6013, 7013)    # fixed: the same cases in every run
TIMEOUT = 15                      # seconds per invocation (a hang is a finding, not a stall)
REPRO = Path(tempfile.gettempdir()) / "eaglelog-fuzz-repro"
DIFF_CASES = tuple(range(8))


@pytest.fixture(scope="module", autouse=True)
def _warm():
    fuzz.warm_up()


# ------------------------------------------------------------------- the harness itself

def test_mutator_is_deterministic_per_seed():
    def build(seed):
        r = fuzz.case_rng(seed, 3)
        return [fuzz.make_input(r, "a.log", big=False) for _ in range(5)]
    one, again, other = build(7), build(7), build(8)
    assert [i.data for i in one] == [i.data for i in again]
    assert [i.ops for i in one] == [i.ops for i in again]
    assert [i.data for i in one] != [i.data for i in other]


def test_mutations_cover_the_brief():
    """Every kind of damage the issue lists is produced by the mutator."""
    m = fuzz.Mutator(random.Random(1), big=False)
    line = b"[2026-03-02 14:00:32.543 TP0] Decode batch, #running-req: 1, accept len: 2.38\n"
    subs = {m._number_sub(b"2.38") for _ in range(3000)}
    for want in (b"inf", b"nan", b"1e400", b"12345678901234567890123456", b"-0", b"1_000",
                 b"3.4.5", "\u0662.\u0663\u0668".encode(), "\uff12.\uff13\uff18".encode()):
        assert want in subs, want
    dates = {m.date(line)[0][1:20] for _ in range(400)}
    assert b"2026-02-30 14:00:32" in dates and b"2026-03-02 14:00:92" in dates
    kinds = {m.compress(line * 50)[1].split()[0] for _ in range(200)}
    assert kinds == {"gzip", "zstd", "xz", "bzip2"}
    damaged = {" ".join(m.compress(line * 50)[1].split()[1:2]) for _ in range(200)}
    assert {"truncated", "bit", "+", "two", ""} <= damaged


def test_invoke_goes_through_the_console_entry():
    ok = fuzz.invoke(["parse", "-f", "json", str(SAMPLES / "eagle3_5step.log")])
    assert ok.code == 0 and ok.exc is None
    assert json.loads(ok.stdout)[0]["tables"]["prof"] == 42
    bad = fuzz.invoke(["parse", "--table", "nope", str(SAMPLES / "eagle3_5step.log")])
    assert bad.code == 2 and bad.stdout == ""
    assert bad.stderr.startswith("eaglelog: error: ") and bad.stderr.count("\n") == 1
    assert fuzz.check(ok, "json") == [] and fuzz.check(bad) == []


def _inv(stdout="", stderr="", code=0, argv=("summary", "x.log")):
    return fuzz.Invocation(list(argv), code, stdout, stderr)


@pytest.mark.parametrize("inv,fmt,table,kind", [
    (_inv('{"a": NaN}'), "json", None, "json-nonfinite"),
    (_inv('{"a": 1}\n{"a": -Infinity}\n'), "jsonl", None, "json-nonfinite"),
    (_inv('{"a": 1'), "json", None, "json-invalid"),
    (_inv("source,cycle_ms\nx.log,inf\n"), "csv", None, "nan-in-table"),
    (_inv("| source | cycle_ms |\n|---|---|\n| x | nan |\n"), "markdown", None, "nan-in-table"),
    (_inv("line_no    gen_throughput\n---------  ----------------\n3          inf\n",
          argv=("parse", "--table", "decode", "x.log")), "table", "decode", "nan-in-table"),
    (_inv("x.log\n  cycle           nan ms  [nan … nan]\n"), None, None, "nan-on-screen"),
    (_inv(stderr="eaglelog: internal error: KeyError: 'drafts' (run with -v …)\n", code=1),
     None, None, "internal-error"),
    (_inv(stderr="eaglelog: error: x.log: bad\nUnknown datetime string format\n", code=1),
     None, None, "stderr-format"),
    (_inv(stderr="eaglelog: warning: x.log:4: not understood: 'Accept l\u0085en: 1.3'\n"),
     None, None, "stderr-format"),
    (_inv(stderr="eaglelog: warning: x.log:4: not understood: '\x1b]0;title\x07'\n"),
     None, None, "stderr-control"),
    (_inv(code=4, stderr="eaglelog: error: x\n"), None, None, "exit-code"),
    (_inv(code=1), None, None, "silent-exit"),
])
def test_checks_catch_each_kind(inv, fmt, table, kind):
    assert kind in {f.kind for f in fuzz.check(inv, fmt, table)}


def test_checks_pass_na_and_words():
    """NA prints as an empty cell; words that contain 'inf' or 'nan' are not numbers."""
    assert fuzz.check(_inv("source,cycle_ms\nx.log,\n"), "csv") == []
    assert fuzz.check(_inv("  config   draft /models/inf-nan  · tp 2\n  note  info: "
                           "financial\n"), None) == []
    assert fuzz.check(_inv('{"a": null, "b": "NaN text"}'), "json") == []


def test_html_and_config_checks(tmp_path):
    """A report's cells and text are checked; server_args values as logged (SGLang prints
    float('inf') as inf) and quoted diagnostics are not."""
    page = ("<table><thead><tr><th>run</th><th>watchdog_timeout</th><th>cycle ms</th></tr>"
            "</thead><tbody><tr><td>a</td><td>inf</td><td>{}</td></tr></tbody></table>"
            "<pre>  cycle   27.28 ms\n  note: x.log:3: header not understood: (inf cycles)</pre>")
    keys = {"watchdog_timeout"}
    assert fuzz.html_token(page.format("27.28"), keys) is None
    assert fuzz.html_token(page.format("nan"), keys)[:2] == ("nan", "column 'cycle ms'")
    out = tmp_path / "r.html"
    out.write_text(page.format("27.28").replace("27.28 ms", "inf ms"))
    found = fuzz.check(_inv(argv=("report", "-o", str(out), "x.log")),
                       files={str(out): "html"}, config_keys=keys)
    assert [f.kind for f in found] == ["nan-in-report"]
    sweep = ("run    watchdog_timeout    cycle ms\n-----  ------------------  ----------\n"
             "a.log  inf                 27.28\n")
    assert fuzz.check(_inv(sweep, argv=("sweep", "a.log")), None, config_keys=keys) == []
    assert fuzz.check(_inv(sweep.replace("27.28", "nan  "), argv=("sweep", "a.log")), None,
                      config_keys=keys)[0].signature == "nan on screen: sweep: column 'cycle ms'"


def test_differential_compares_values_and_diagnostics(tmp_path):
    p = tmp_path / "a.log"
    p.write_bytes((SAMPLES / "eagle3_5step.log").read_bytes())
    ref = fuzz.snapshot(str(p))
    assert fuzz.compare_snapshots(ref, fuzz.snapshot(str(p), pure=True)) is None
    other = dict(ref, tables=dict(ref["tables"]))
    df = ref["tables"]["decode"].copy()
    df.loc[3, "accept_len"] = 9.0
    other["tables"]["decode"] = df
    aspect, detail = fuzz.compare_snapshots(ref, other)
    assert aspect == "values:decode" and "accept_len" in detail
    bad = fuzz.snapshot(str(ROOT / "tests" / "fixtures" / "sglang" / "decode_truncated.log"))
    assert bad["diagnostics"]
    fewer = dict(bad, diagnostics=bad["diagnostics"][1:])
    assert fuzz.compare_snapshots(bad, fewer)[0] == "diagnostics"


# ------------------------------------------------------------------------- the fuzz cases

def _keep(res, label):
    """A failing case's files, copied where pytest's temp-dir rotation will not remove them."""
    dest = REPRO / label
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(res.dir, dest, ignore=shutil.ignore_patterns("xdg"))
    for fd in res.findings:
        fd.argv = fuzz.retarget(fd.argv, res.dir, str(dest))
    res.dir = str(dest)
    return res.report()


def _run(tmp_path, seed, index, **kw):
    res = fuzz.run_case(seed, index, str(tmp_path), big=False, timeout=TIMEOUT, **kw)
    if res.findings:
        pytest.fail(_keep(res, f"{seed}-{index}-{'-'.join(kw.get('commands', []))}"),
                    pytrace=False)
    return res


_CODES: dict[tuple[str, int], list] = {}     # (command, seed) -> exit codes of its invocations


def _fuzz_command(tmp_path, command, seed):
    res = _run(tmp_path, seed, fuzz.COMMANDS.index(command), commands=[command], diff=False)
    codes = [code for c, _argv, code, *_ in res.invocations if c == command]
    assert codes and all(code in (0, 1, 2, 3) for code in codes)
    _CODES[command, seed] = codes
    return codes


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("command", fuzz.COMMANDS)
def test_fuzz_command(tmp_path, command, seed):
    _fuzz_command(tmp_path, command, seed)


def test_the_fuzz_cases_reach_every_command_s_work(tmp_path):
    """Not vacuous: across the seeds every command ends normally (exit 0, its output checked)
    on some mutated input and refuses some other one (a damaged file, no records …): the
    mutations reach past the argument checks into the parsers and the analyses.  The cases
    test_fuzz_command ran are not run again."""
    for command in fuzz.COMMANDS:
        for seed in SEEDS:
            if (command, seed) not in _CODES:
                _fuzz_command(tmp_path / f"{command}-{seed}", command, seed)
    for command in fuzz.COMMANDS:
        codes = [c for seed in SEEDS for c in _CODES[command, seed]]
        assert 0 in codes and set(codes) - {0}, (command, codes)


@pytest.mark.parametrize("index", DIFF_CASES)
def test_fuzz_differential(tmp_path, index):
    """C vs pure Python, default vs small chunks, 1 vs 2–3 workers (threshold lowered) on
    mutated SGLang inputs; one `parse -f json --table` through the CLI as well."""
    r = fuzz.case_rng(7, index)
    a = fuzz.make_input(r, "a.log", "sglang", big=False)
    path = tmp_path / "a.log"
    path.write_bytes(a.data)
    found = fuzz.differential(str(path), r, ("pure-python", "small-chunks",
                                             "workers-3" if index % 2 else "workers-2"), TIMEOUT)
    table = fuzz.SGLANG_TABLES[index % len(fuzz.SGLANG_TABLES)]
    cli = {}
    from eaglelog.parsers import scan
    for pure in (False, True):
        # EAGLELOG_PURE_PYTHON is read when eaglelog.parsers.scan is imported: in this process
        # the module's flag is what the variable would have set
        old, scan._PURE = scan._PURE, pure
        try:
            inv = fuzz.invoke(["parse", "-f", "json", "--table", table, str(path)],
                              {"EAGLELOG_PURE_PYTHON": "1" if pure else None})
        finally:
            scan._PURE = old
        found += fuzz.check(inv, "json", table)
        cli[pure] = (inv.code, inv.stdout)
    if cli[False] != cli[True]:
        found.append(fuzz.Finding("diff-pure-python", f"CLI parse --table {table} differs",
                                  ["parse", "-f", "json", "--table", table, str(path)],
                                  f"exit {cli[False][0]} vs {cli[True][0]}"))
    if found:
        res = fuzz.CaseResult(7, index, [a], [("differential", [], None, 0.0)], found,
                              str(tmp_path))
        pytest.fail(_keep(res, f"7-{index}-differential"), pytrace=False)


def test_fuzz_differential_large_log(tmp_path):
    """A log past the real parallel threshold (32 MiB): 1 vs 2 workers (3 and more: the long
    run, and tests/test_workers.py)."""
    from eaglelog.io import parallel

    r = fuzz.case_rng(7, 100)
    data = fuzz.large_input(r, parallel.MIN_PARALLEL + (1 << 20), mutated=1, fast=True)
    p = tmp_path / "large.log"
    p.write_bytes(data)
    ref = fuzz.snapshot(str(p), workers=1)
    assert "tables" in ref and len(ref["tables"]["decode"]) > 10_000
    assert fuzz.compare_snapshots(ref, fuzz.snapshot(str(p), workers=2)) is None


def test_fuzz_light_differential_of_two_large_logs_with_restarts(tmp_path, monkeypatch):
    """The large cases' second differential: two logs past the batch's size (8 MiB), with a
    start-up per sample, summarised over Frames and over pandas' tables: no finding on this
    tree; with model._take as it was before 2026-12-07 (an index set on a Frame), the
    internal error is found."""
    from eaglelog import model
    r = fuzz.case_rng(7, 0)
    assert fuzz.light_differential(r, tmp_path, 300) == []

    take = model.ParsedLog._take

    def old_take(df, at, renumber=False):
        out = take(df, at)
        if renumber:
            out.index = range(len(out))
        return out
    monkeypatch.setattr(model.ParsedLog, "_take", staticmethod(old_take))
    found = fuzz.light_differential(fuzz.case_rng(7, 0), tmp_path, 300)
    assert [f.kind for f in found] == ["internal-error"]
    assert "has no setter" in found[0].detail or "has no setter" in found[0].signature


# ------------------------------------------------- defects the long fuzz found (regressions)

def test_a_log_s_control_characters_reach_stderr_as_escapes(tmp_path):
    """Signature 'raw control character in stderr: export' (seed 3013, index 6): a block line
    holding NUL, ESC, VT, NEL, U+2028 was quoted raw in its warning (a terminal ran the ESC
    sequence; str.splitlines cut the message in two)."""
    text = (SAMPLES / "eagle3_5step.log").read_text()
    i = text.index("  Draft steps:")
    p = tmp_path / "ctl.log"
    p.write_text(text[:i] + "  Draft\x00 st\x1b]0;x\x07eps:\u2028\x0b\x85  " + text[i + 14:],
                 encoding="utf-8", newline="")
    inv = fuzz.invoke(["parse", str(p)])
    assert inv.code == 0 and fuzz.check(inv) == []
    warn = [ln for ln in inv.stderr.splitlines() if "not understood" in ln]
    assert len(warn) == 1 and "\\x00" in warn[0] and "\\x1b]0;x\\x07" in warn[0] and \
        "\\u2028\\x0b\\x85" in warn[0]


@pytest.mark.parametrize("pure", (False, True))
def test_long_padded_block_lines_parse_in_linear_time(tmp_path, pure):
    """Signature 'timeout @ eaglelog/parsers/eagle3_prof.py:_add' (seed 1, index 249): a phase
    line padded with 300 KB of spaces and no colon, and a header cut before its ')', took the
    phase and header regexes quadratic time (minutes; a bound here, not a benchmark)."""
    from eaglelog import api
    from eaglelog.parsers import scan

    text = (SAMPLES / "eagle3_5step.log").read_text()
    i = text.index("  Draft re-extend:")
    j = text.index("EAGLE3_PROF", i)
    pad = " " * 300_000
    p = tmp_path / "pad.log"
    p.write_text(text[:i] + "  Draft re-extend" + pad + "\n" + text[i:j] +
                 "EAGLE3_PROF (100 cycles, 187 tok, no sync" + pad + "\n" + text[j:])
    old, scan._PURE = scan._PURE, pure
    try:
        with fuzz.time_limit(30):
            log = api.parse([str(p)], cache=False)
    finally:
        scan._PURE = old
    ref = api.parse([str(SAMPLES / "eagle3_5step.log")], cache=False)
    assert len(log.prof) == len(ref.prof) == 42 and len(log.decode) == len(ref.decode)
    kinds = sorted(d.kind for d in log.diagnostics if d.line_no)
    assert kinds.count("block_line") == 1 and kinds.count("malformed") == 1


def test_a_rank_of_other_digits_is_no_rank(tmp_path):
    """Signature 'UserWarning leaks: report: Glyph N (FULLWIDTH DIGIT ZERO) missing' (seed 1,
    index 262): '[… TP\uff10]' was read as the rank 'TP\uff10' (the lone-bracket pattern had
    lost re.ASCII); the record keeps no rank, as the C accelerator reads it."""
    from eaglelog import api
    from eaglelog.parsers import scan

    line = ("[2026-03-02 14:00:0{} TP{}] Decode batch, #running-req: 1, #token: 977, token "
            "usage: 0.01, accept len: 2.38, accept rate: 0.59, cuda graph: True, gen throughput "
            "(token/s): 89.08, #queue-req: 0\n")
    p = tmp_path / "fw.log"
    p.write_text(line.format(0, "\uff10") + line.format(1, "0"), encoding="utf-8")
    got = {}
    for pure in (False, True):
        old, scan._PURE = scan._PURE, pure
        try:
            got[pure] = api.parse([str(p)], cache=False).decode
        finally:
            scan._PURE = old
    for d in got.values():
        assert d["ranks"].isna().tolist() == [True, False] and d["ranks"].iloc[1] == "TP0"
        assert d["accept_len"].tolist() == [2.38, 2.38]


def test_a_header_with_a_damaged_bracket_past_a_range_ends_its_block(tmp_path):
    """Signature 'workers-2 differs: diagnostics' (seed 2, case 962, reduced by the fuzz): a
    range reading past its end met a header whose bracket holds other digits; it looked the
    header's rank up with BRACKET_RX (no match), so the open block ran on and its cut last
    line was reported twice, once by each range."""
    p = tmp_path / "r.log"
    p.write_text("[2026-03-02 \uff11\uff14:00:00.810 TP0] EAGLE3_PROF (100 cycles, 100 tok, "
                 "no sync)\n" + "ate: 0.69, cuda graph: True, gen throughput (token/s): 53.86, "
                 "#queue-req\n" + "[2026-03-02 \uff11\uff14:00:00.903 TP0] EAGLE3_PROF (100 "
                 "cycles, 98 tok, no sync)\n" + "[2026-03-02 \uff11\uff14:00:00.903 TP0]   "
                 "Draft steps:        0", encoding="utf-8")
    ref = fuzz.snapshot(str(p))
    assert [k for (k, *_), n in ref["diagnostics"] for _ in range(n)].count("truncated") == 1
    for w in (2, 3):
        assert fuzz.compare_snapshots(ref, fuzz.snapshot(str(p), workers=w, min_parallel=0)) \
            is None, w


def test_control_characters_in_a_block_make_no_phase_and_no_mode(tmp_path):
    """Signature 'raw control character in stderr: compare' (seed 2, case 434): the Python
    parser took '\\x00no sync' as a mode and 'Draft\\x00 steps' as a phase name (the C
    accelerator declines both), and compare echoed them in a warning.  Such a header or phase
    line is a damaged line, reported at its line."""
    from eaglelog import api
    from eaglelog.parsers import scan

    text = (SAMPLES / "eagle3_5step.log").read_text()
    first = text.index("EAGLE3_PROF (")
    head_end = text.index("\n", first)
    i = text.index("  Draft steps:", text.index("EAGLE3_PROF (", head_end))   # 2nd block
    bad = (text[:first] + text[first:head_end].replace("no sync", "\x00no sync") +
           text[head_end:i] + "  Draft\x85 steps:" + text[i + 14:])
    p = tmp_path / "ctl.log"
    p.write_text(bad, encoding="utf-8", newline="")
    logs = {}
    for pure in (False, True):
        old, scan._PURE = scan._PURE, pure
        try:
            logs[pure] = api.parse([str(p)], cache=False)
        finally:
            scan._PURE = old
    for log in logs.values():
        assert set(log.prof["mode"].dropna()) == {"no sync"}
        assert all(lbl.isprintable() for lbl in log.table("prof_phases")["phase"].astype(str))
        kinds = {d.kind for d in log.diagnostics if d.line_no}
        assert {"malformed", "block_line"} <= kinds
    assert len(logs[False].prof) == len(logs[True].prof) == 41


# ------------------------------------------------- remote: --keep-going and a failed host tool

def _cut_gz(tmp_path, sshd):
    import gzip
    packed = gzip.compress((SAMPLES / "eagle3_5step.log").read_bytes())
    cut = packed[:len(packed) // 2]
    local = tmp_path / "half.log.gz"
    local.write_bytes(cut)
    return sshd.put("fuzz-kg/half.log.gz", cut), local


def _same_rows(a, b):
    import pandas as pd
    import eaglelog
    for t in eaglelog.TABLES:
        pd.testing.assert_frame_equal(a.table(t).drop(columns="source"),
                                      b.table(t).drop(columns="source"), check_categorical=False)


def test_remote_reduce_keeps_the_lines_before_a_failed_decompression(sshd, monkeypatch,
                                                                     tmp_path):
    """The host's gzip fails half way: the input fails (the host's message, the line a local
    read names), and the lines received before the failure stay in Fetched.partial, at their
    numbers: parsed, they are the records a local --keep-going read of the same file keeps."""
    import eaglelog
    from eaglelog.io.remote import RemoteOptions, fetch_one, parse_remote

    monkeypatch.setenv("EAGLELOG_SSH", sshd.ssh)
    path, local = _cut_gz(tmp_path, sshd)
    work = tmp_path / "work"
    work.mkdir()
    [item] = fetch_one(parse_remote(f"testhost:{path}"), RemoteOptions(), str(work))
    assert item.mode == "error" and item.local_path == ""
    here = eaglelog.parse(str(local), keep_going=True, cache=False)
    line = here.sources[0].error.split(f"{local}:", 1)[1].split(":", 1)[0]
    assert str(item.failed_line) == line
    assert item.notes[0].startswith(f"gzip data ends early at line {line} (the host's gzip -dc")
    assert os.path.getsize(item.partial) > 0
    kept = eaglelog.parse(item.partial, cache=False)
    assert len(kept.decode) == len(here.decode) == 39 and len(kept.prof) == len(here.prof) == 15
    _same_rows(kept, here)


def test_remote_keep_going_keeps_the_records_before_a_failed_decompression(sshd, monkeypatch,
                                                                           tmp_path):
    import eaglelog

    monkeypatch.setenv("EAGLELOG_SSH", sshd.ssh)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path, local = _cut_gz(tmp_path, sshd)
    remote = eaglelog.parse(f"testhost:{path}", keep_going=True)
    here = eaglelog.parse(str(local), keep_going=True, cache=False)
    assert remote.sources[0].error and "gzip data ends early" in remote.sources[0].error
    assert len(remote.decode) == len(here.decode) == 39
    _same_rows(remote, here)


# ------------------------------------- issue 36: absurd values through report, plot, schedule …
#
# The mutator above damages bytes; these cases put *values* into the numbers of the bundled
# samples: non-finite (inf, nan), out of range (-1, 0), absurd (1e308, 2^63 − 1) and a fraction
# where a count belongs (2.5), into one line, a third of them or every line of a field, and
# drive the commands the byte fuzz does not (schedule, whatif, requests) and the pictures
# (report, plot).  Each case is fixed by (seed, command).

VALUES = ("inf", "nan", "-1", "0", "1e308", "9223372036854775807", "2.5")
FIELDS = {          # field -> a regex whose group 1 is the printed number
    "running_req": r"#running-req: (-?[\d.]+)", "accept_len": r"accept len: (-?[\d.]+)",
    "gen_throughput": r"gen throughput \(token/s\): (-?[\d.]+)",
    "num_tokens": r"#token: (-?[\d.]+)", "new_token": r"#new-token: (-?[\d.]+)",
    "new_seq": r"#new-seq: (-?[\d.]+)", "num_steps": r"speculative_num_steps=(-?[\d.]+)",
    "topk": r"speculative_eagle_topk=(-?[\d.]+)",
    "draft_tokens": r"speculative_num_draft_tokens=(-?[\d.]+)", "tp_size": r"\btp_size=(-?[\d.]+)",
    "prof_cycles": r"EAGLE3_PROF \((-?[\d.]+) cycles", "prof_tok": r"cycles, (-?[\d.]+) tok",
    "prof_verify": r"Target verify: +(-?[\d.]+) ms", "prof_draft": r"Draft steps: +(-?[\d.]+) ms",
    "completion_tokens": r"'completion_tokens': (-?[\d.]+)",
    "prompt_tokens": r"'prompt_tokens': (-?[\d.]+)", "verify_ct": r"'spec_verify_ct': (-?[\d.]+)",
    "histogram": r"'spec_accept_histogram': \[(-?[\d.]+)", "e2e": r"'e2e_latency': (-?[\d.]+)",
    "v_running": r"Running: (-?[\d.]+) reqs", "v_gen": r"Avg generation throughput: (-?[\d.]+)",
    "v_mean_acc": r"Mean acceptance length: (-?[\d.]+)", "v_accepted": r"Accepted: (-?[\d.]+) tok",
    "v_drafted": r"Drafted: (-?[\d.]+) tok", "v_pos": r"Per-position acceptance rate: (-?[\d.]+)",
    "v_k": r"'num_speculative_tokens': (-?[\d.]+)",
}
_OUT = object()     # stands for the output file of a case
SCENARIOS = {       # command -> (inputs, argv with inputs as {0}, {1} …)
    "report": [(["eagle3_5step.log"], ["report", "--baseline-toks", "90", "-o", _OUT, "{0}"]),
               (["batch_eagle3.log", "batch_baseline.log"],
                ["report", "--baseline-log", "{1}", "-o", _OUT, "{0}"]),
               (["batch_eagle3.log"], ["report", "--baseline-toks", "90", "-o", _OUT, "{0}"]),
               (["vllm_v1.log"], ["report", "-o", _OUT, "{0}"])],
    "plot": [(["eagle3_5step.log"], ["plot", "--kind", "breakeven", "--baseline-toks", "90",
                                     "-o", _OUT, "{0}"]),
             (["batch_eagle3.log"], ["plot", "--kind", "breakeven", "--baseline-toks", "90",
                                     "-o", _OUT, "{0}"]),
             (["batch_eagle3.log", "batch_baseline.log"],
              ["plot", "--kind", "breakeven", "--baseline-log", "{1}", "-o", _OUT, "{0}"]),
             (["eagle3_5step.log"], ["plot", "--kind", "timeline", "-o", _OUT, "{0}"]),
             (["eagle3_5step.log"], ["plot", "--kind", "phases", "-o", _OUT, "{0}"])],
    "schedule": [([f"schedule/steps{k}.log" for k in (1, 3, 5)] + ["batch_baseline.log"],
                  ["schedule", "--baseline-log", "{3}", "{0}", "{1}", "{2}"])],
    "whatif": [(["eagle3_5step.log"], ["whatif", "--baseline-toks", "90", "{0}"]),
               (["sweep/steps2.log", "sweep/steps5.log"],
                ["whatif", "--baseline-toks", "90", "{0}", "{1}"]),
               (["vllm_sweep/k1.log", "vllm_sweep/k3.log"], ["whatif", "{0}", "{1}"]),
               (["schedule/steps3.log", "batch_baseline.log"],
                ["whatif", "--by", "batch", "--baseline-log", "{1}", "{0}"])],
    "requests": [(["eagle3_5step.log"], ["requests", "{0}"]),
                 (["schedule/steps3.log"], ["requests", "-f", "json", "{0}"])],
}
VALUE_SEEDS = range(36)     # 36 × 5 commands: ~180 invocations, ~35 s on one core
_VALUE_RESULTS: dict[str, list[tuple[int, str]]] = {}


def value_case(seed: int, command: str, d: Path):
    """The mutated inputs and the command line of case (seed, command), written under d:
    (argv, output format, the mutated file, the mutated lines' numbers)."""
    r = random.Random(f"value:{seed}:{command}")
    files, template = r.choice(SCENARIOS[command])
    texts = {f: (SAMPLES / f).read_text() for f in files}
    target, field = r.choice([(f, k) for f in files for k in FIELDS
                              if re.search(FIELDS[k], texts[f])])
    value, scope = r.choice(VALUES), r.choice(("one", "some", "all"))
    hits = list(re.finditer(FIELDS[field], texts[target]))
    pick = hits if scope == "all" else [r.choice(hits)] if scope == "one" else \
        r.sample(hits, max(1, len(hits) // 3))
    text, parts, at = texts[target], [], 0
    for m in sorted(pick, key=lambda m: m.start()):
        parts += [text[at:m.start(1)], value]
        at = m.end(1)
    texts[target] = "".join(parts) + text[at:]
    lines = sorted(text.count("\n", 0, m.start()) + 1 for m in pick)
    paths = []
    for f in files:
        p = d / f.replace("/", "_")
        p.write_text(texts[f])
        paths.append(str(p))
    if command == "schedule":
        fmt = r.choice((None, "vllm", "sglang", "json"))
        template = template[:-3] + (["-f", fmt] if fmt else []) + template[-3:]
    out = str(d / ("out.html" if command == "report" else "out.png"))
    argv = [out if a is _OUT else a.format(*paths) for a in template]
    fmt = argv[argv.index("-f") + 1] if "-f" in argv else None
    return argv, fmt, paths[files.index(target)], (field, value, scope, lines)


@pytest.mark.parametrize("command", tuple(SCENARIOS))
def test_fuzz_absurd_values(tmp_path, command):
    """No traceback, no internal error, no leaked warning, no nan/inf shown; an exit code the
    CLI documents (0 ok, 1 refused: 2 and 3 are usage errors and gates, which these command
    lines never are); a refusal is one 'eaglelog: error:' line that names an input."""
    found = []
    for seed in VALUE_SEEDS:
        d = tmp_path / str(seed)
        d.mkdir()
        argv, fmt, target, what = value_case(seed, command, d)
        inv = fuzz.invoke(argv, timeout=TIMEOUT)
        bad = fuzz.check(inv, fmt if fmt in TEXT_FMTS else None)
        if inv.code not in (0, 1):
            bad.append(f"exit {inv.code}")
        if inv.code == 1:
            errors = [ln for ln in inv.stderr.splitlines() if ln.startswith("eaglelog: error:")]
            if len(errors) != 1 or not any(p in errors[0] for p in argv[1:] if "/" in p):
                bad.append(f"not one error line naming an input: {errors}")
        _VALUE_RESULTS.setdefault(command, []).append((inv.code, inv.stderr))
        if bad:
            found.append(f"seed {seed} {what}: eaglelog {' '.join(argv)}\n    "
                         + "\n    ".join(map(str, bad)))
    assert not found, "\n".join(found)


TEXT_FMTS = ("table", "markdown", "csv", "json", "jsonl")


def test_fuzz_absurd_values_are_reported_at_their_lines(tmp_path):
    """Not vacuous: the cases reach past the parsers (some end with exit 0, some refuse), and
    a value that is no number for its field is reported at file:line."""
    for command in SCENARIOS:
        if command not in _VALUE_RESULTS:     # (not run in this process: pytest -k, xdist)
            (tmp_path / command).mkdir()
            test_fuzz_absurd_values(tmp_path / command, command)
    for command, res in _VALUE_RESULTS.items():
        codes = {c for c, _ in res}
        assert 0 in codes, command
    said = [e for res in _VALUE_RESULTS.values() for _, e in res]
    assert sum(bool(re.search(r"eaglelog: warning: \S+:\d+: .*bad value", e)) for e in said) \
        >= 20
    d = tmp_path / "one"
    d.mkdir()
    p = d / "a.log"
    text = (SAMPLES / "eagle3_5step.log").read_text()
    p.write_text(text.replace("#running-req: 1,", "#running-req: 9223372036854775807,", 1))
    n = text[:text.index("#running-req: 1,")].count("\n") + 1
    inv = fuzz.invoke(["report", "--baseline-toks", "90", "-o", str(d / "r.html"), str(p)])
    assert inv.code == 0 and f"{p}:{n}: " in inv.stderr and fuzz.check(inv) == []


def test_reconcile_of_blocks_without_cycles_prints_no_nan(tmp_path):
    """fuzz seed 74, case 148 (reduced): an EAGLE3_PROF block of 0 cycles weighs nothing, so
    the profiler gives no accept length; the bonus-token check says so (n/a), never 'nan'."""
    p = tmp_path / "a.log"
    p.write_text(
        "[2026-03-02 14:03:05.142 TP0] Decode batch, #running-req: 1, #token: 880, token usage: "
        "0.00, accept len: 2.85, accept rate: 0.71, cuda graph: True, gen throughput (token/s): "
        "71.38, #queue-req: 0\n"
        "[2026-03-02 14:03:06.210 TP0] Decode batch, #running-req: 1, #toke1, accept len: 2.85,"
        " accept ra\n"
        "EAGLE3_PROF (0 cycles, 171 tok, no sync)\n"
        "  TOTAL:             26.68 ms/cyc\n"
        "  Accept len:      1.71\n"
        "  Eff tok/s:       64.1\n")
    inv = fuzz.invoke(["reconcile", str(p)])
    assert inv.code == 0 and fuzz.check(inv) == []
    row = next(line for line in inv.stdout.splitlines() if "bonus token" in line)
    assert " n/a " in row and "no accept length" in row and "nan" not in inv.stdout
