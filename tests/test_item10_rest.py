"""Issue 36, item 10 (the rest): out of memory is one line with the input's size and the
remedies, not an internal error; `compare --paired` never prints nan; `summary -f json` of
benchmark-only inputs has the documented shape (README, "JSON shape")."""
import json
import math
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, SAMPLES
from eaglelog.cli import main

OTHERS = FIXTURES / "others"
REQ = FIXTURES / "requests"


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


# ------------------------------------------------------------------ summary -f json's shape
def _keys(d, depth=2):
    """The keys of a run object, and of its nested objects (accept_len, throughput)."""
    out = set(d)
    if depth > 1:
        for k, v in d.items():
            if isinstance(v, dict) and k in ("accept_len", "throughput"):
                out |= {f"{k}.{kk}" for kk in _keys(v, depth - 1)}
    return out


@pytest.mark.parametrize("bench", ["vllm_bench_serve.log", "llama_statistics.log",
                                   "bench_serving.log"])
def test_summary_json_shape_of_benchmark_only_inputs_is_a_logs(bench):
    log = _run("--no-cache", "summary", "-f", "json", SAMPLES / "eagle3_2step.log")
    assert log.exit_code == 0, log.stderr
    ref = json.loads(log.stdout)
    r = _run("--no-cache", "summary", "-f", "json", OTHERS / bench)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    # the documented top-level shape, for a log and a benchmark alike
    assert list(d) == list(ref) == ["command", "confidence", "runs", "errors"]
    assert d["command"] == "summary" and d["confidence"] == 0.95 and d["errors"] == []
    assert d["runs"]
    for run in d["runs"]:
        # every key of a log's run (and of its accept_len and throughput), null where a
        # benchmark says nothing; the benchmark's own row under "bench"
        assert _keys(ref["runs"][0]) <= _keys(run)
        assert run["cycle_ms"] is None and run["cycle_derived_ms"] is None
        assert run["breakeven"] is None and run["phases"] == []
        assert run["accept_len"]["sglang"] is None and run["accept_len"]["profiler"] is None
        printed = run["accept_len"]["benchmark"]
        assert (printed and printed["estimate"]) == run["bench"]["accept_len"]
        assert run["throughput"]["aggregate_tok_s"] == run["bench"]["output_tok_s"]
        assert run["source"] == str(OTHERS / bench)
        assert any("no cycle, phases or verdict" in n for n in run["notes"])
    # its numbers are the benchmark's (vLLM bench serve: 2.84 per draft, 1802.18 tok/s)
    if bench == "vllm_bench_serve.log":
        run = d["runs"][0]
        assert run["accept_len"]["benchmark"]["estimate"] == 2.84
        assert run["accept_len"]["benchmark"]["n"] == 1000
        assert run["throughput"]["aggregate_tok_s"] == 1802.18
        assert run["bench"]["tool"] == "vllm.bench_serve"
    # -f jsonl: the same run objects, one a line
    lines = _run("--no-cache", "summary", "-f", "jsonl", OTHERS / bench).stdout.splitlines()
    assert [json.loads(x) for x in lines] == d["runs"]


def test_summary_json_of_a_benchmark_names_unread_inputs_in_errors(tmp_path):
    r = _run("--no-cache", "summary", "-f", "json", "--keep-going",
             OTHERS / "vllm_bench_serve.log", tmp_path / "missing.log")
    assert r.exit_code == 1
    d = json.loads(r.stdout)
    assert list(d) == ["command", "confidence", "runs", "errors"]
    assert len(d["runs"]) == 1 and d["errors"] == [f"{tmp_path / 'missing.log'}: no such file"]


# ------------------------------------------------------------------ compare --paired, no nan
def _variant(path, out, first_completion):
    """The paired fixture with its first request's completion_tokens changed (0: one fewer
    step token than none; 1: no token from its verify steps)."""
    rows = [json.loads(x) for x in open(path, encoding="utf-8")]
    rows[0]["out"]["meta_info"]["completion_tokens"] = first_completion
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return out


@pytest.mark.parametrize("completion", [0, 1])
@pytest.mark.parametrize("side", ["ref", "new"])
def test_compare_paired_never_prints_nan(tmp_path, side, completion):
    """A matched prompt whose request has verify steps but no step tokens (τ ≤ 0) made the
    log ratio -inf or nan: `p nan`, `nan% lower` and an unpaired ratio of nan were printed.
    Such a prompt has no accept length: it is left out of the test, and said so."""
    good = REQ / "paired_ref.log"
    bad = _variant(good, tmp_path / "bad.log", completion)
    ref, new = (bad, good) if side == "ref" else (good, bad)
    r = _run("--no-cache", "compare", "--paired", ref, new)
    assert r.exit_code == 0, r.stderr
    assert "nan" not in r.stdout.lower() and "inf" not in r.stdout.lower()
    assert "11 matched prompts" not in r.stdout
    assert "1 matched prompts have no accept length in one run" in r.stdout
    # the other 11 prompts are the same in both runs: a ratio of exactly 1, p = 1
    assert "ratio 1.000 [1.000 … 1.000]   p 1.000" in r.stdout
    assert "ties 11" in r.stdout and "no detectable difference (p = 1.000" in r.stdout
    j = json.loads(_run("--no-cache", "compare", "--paired", "-f", "json", ref, new).stdout)
    assert j["counts"]["matched"] == 11 and j["counts"]["matched_without_accept_len"] == 1
    assert j["p_value"] == 1.0 and j["ratio"]["estimate"] == 1.0


def test_paired_report_says_na_for_a_non_finite_value():
    from eaglelog.report.requests import _change, _p
    from eaglelog.stats import Estimate
    assert _p(math.nan) == "n/a" and _p(None) == "n/a" and _p(0.5) == "0.500"
    assert _change(Estimate(math.nan, None, None, 0, 0.95, None, None, "x")) == "ratio n/a"


# ------------------------------------------------------------------ out of memory
def test_out_of_memory_is_one_line_with_the_size_and_remedies(tmp_path, monkeypatch):
    """A MemoryError in an analysis is not an internal error: one line on stderr naming the
    input's size (compressed said) and the remedies, exit code 1, no traceback."""
    import gzip
    import eaglelog.library as library

    def boom(*a, **k):
        raise MemoryError()
    monkeypatch.setattr(library, "summarize", boom)
    log = SAMPLES / "eagle3_2step.log"
    gz = tmp_path / "part.log.gz"
    gz.write_bytes(gzip.compress(log.read_bytes()))
    r = _run("--no-cache", "summary", log, gz)
    assert r.exit_code == 1
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    size = (log.stat().st_size + gz.stat().st_size) / 1024
    assert lines[0].startswith(f"eaglelog: error: out of memory analysing {size:.1f} KiB of "
                               "input in 2 files (1 of them compressed")
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    for remedy in ("--since/--until", "EAGLELOG_WORKERS=1", "more memory",
                   "eaglelog parse --table decode"):
        assert remedy in lines[0]
    # one uncompressed input
    r = _run("--no-cache", "summary", log)
    assert f"out of memory analysing {log.stat().st_size / 1024:.1f} KiB of input:" \
        in r.stderr
    # -v: the traceback, as for every error
    with pytest.raises(MemoryError):
        _run("--no-cache", "-v", "summary", log)


_UNDER_LIMIT = textwrap.dedent("""
    import resource, sys
    import numpy, pandas                        # what any analysis imports, before the limit
    from eaglelog.cli import main
    import eaglelog.analysis.summary, eaglelog.report.blocks, eaglelog.library
    from eaglelog._memory import address_space
    limit = address_space() + int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    main(sys.argv[2:], prog_name="eaglelog")
""")


def test_out_of_memory_under_an_address_space_limit(tmp_path):
    """A real MemoryError: summary of a sample repeated to 24 MiB, in a process allowed only
    24 MiB more address space than it has once imported (on 2026-12-07, with the reserve of
    _memory.keep_reserve, the summary ran out of memory at every limit from 8 to 91 MiB more
    and finished from 91.5 MiB; tests/test_memguard.py tries others)."""
    data = (SAMPLES / "eagle3_2step.log").read_bytes()
    big = tmp_path / "big.log"
    big.write_bytes(data * (24 * 2**20 // len(data)))
    env = dict(os.environ, EAGLELOG_WORKERS="1", EAGLELOG_NO_CACHE="1")
    p = subprocess.run([sys.executable, "-c", _UNDER_LIMIT, str(24 << 20), "--no-cache",
                        "summary", str(big)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 1, p.stderr
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    size = big.stat().st_size / 2**20
    assert lines[0].startswith(f"eaglelog: error: out of memory analysing {size:.1f} MiB of "
                               "input: analyse a part of it (--since/--until")


def test_a_system_call_out_of_memory_is_out_of_memory():
    """ENOMEM from a system call (under an address-space limit, removing the scan's temporary
    folder was once the call that failed) is out of memory, not an internal error; another
    OSError is not."""
    import errno
    from eaglelog.cli._base import _out_of_memory
    assert _out_of_memory(OSError(errno.ENOMEM, "Cannot allocate memory", "/tmp/eaglelog-x"))
    assert _out_of_memory(RuntimeError("can't start new thread"))
    assert not _out_of_memory(OSError(errno.ENOENT, "No such file or directory"))
    assert not _out_of_memory(ValueError("x"))
