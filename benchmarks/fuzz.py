#!/usr/bin/env python3
"""Mutation fuzzing of every eaglelog command, and a C-vs-Python / 1-vs-N-workers differential.

    python benchmarks/fuzz.py --cases 300 --seed 1 --jobs 2 --out /tmp/eaglelog-fuzz
    python benchmarks/fuzz.py --seed 1 --only 249 --jobs 1 --out /tmp/fz-again   # one case again
    python benchmarks/fuzz.py --summarize --out /tmp/eaglelog-fuzz     # the summary, re-reduced

A case is one mutated input (and a second one for the commands that take two logs), made by a
seeded mutator from the bundled synthetic logs (sample_logs/, tests/fixtures/): byte flips, number
replacement (other digits, non-ASCII digits, inf/nan, 1e400, 26-digit numbers, -0, 1_000,
3.4.5 …), truncation (mid-line, mid-block), line duplication/deletion/swap, bad dates and times in
the prefixes, CR/NUL/ANSI insertion, very long lines, lines spliced from other log families, and
gzip/zstd/xz/bzip2 compression with and without damage.  Everything is deterministic per
(seed, case index): a case can be rebuilt from its two numbers.

Each case runs a few commands in-process, through the console entry (``eaglelog.cli.run``, with
click's CliRunner isolation), and checks every invocation: no internal error or traceback, an
exit code in {0, 1, 2, 3}, JSON that parses strictly (no NaN/Infinity), no nan/inf in table
cells or on the human screens, stderr made of one-line ``eaglelog: …`` messages, no Python
warning leaking to stderr, a non-zero exit that says why.  An SGLang input is also parsed with
the C accelerator and with the pure-Python parser, with small chunks, and split over 2–4 workers
(the parallel threshold lowered for the run), and every table, the overview and the diagnostics
must be the same.  Every --large-every'th case also compares 1 and 2–3 workers on a log past the
real threshold, and the single-use summary over Frames (--no-cache) with the one over pandas'
tables on two logs past the batch's size, with restarts.

The findings are grouped by signature (exception type and innermost eaglelog frame, or the check
that failed and where); the first case of each is saved under --out with its inputs, the command
line and a reduced input (lines removed while the same signature still appears).

tests/test_fuzz.py runs a fixed subset of the same cases in the normal suite.
"""
from __future__ import annotations

import argparse
import bz2
import collections
import contextlib
import csv
import dataclasses
import gzip
import io
import json
import lzma
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("NO_COLOR", "1")

# ------------------------------------------------------------------------------------ corpus

SGLANG_TABLES = ("prof", "prof-phases", "decode", "prefill", "server-args", "requests")
TEXT_FORMATS = ("table", "markdown", "csv", "json", "jsonl")
ALL_TABLES = ("prof", "prof-phases", "decode", "prefill", "server-args", "requests", "vllm-spec",
              "vllm-stats", "vllm-stages", "vllm-iterations", "bench", "bench-iters")
PLOT_KINDS = ("timeline", "phases", "breakeven", "sweep", "compare")
ENGINES = ("auto", "sglang", "vllm", "llamacpp", "trtllm", "bench")


# the fixture logs of commit ab98e81: tests/test_fuzz.py draws its cases from these and the
# samples only, so that fixtures added later do not change which cases it runs
STABLE_FIXTURES = """
    eagle3_prof/canonical.log eagle3_prof/cut_by_eof.log eagle3_prof/cut_by_new_header.log
    eagle3_prof/cut_by_traceback.log eagle3_prof/decimals.log eagle3_prof/logger_prefix.log
    eagle3_prof/missing_pct.log eagle3_prof/no_blank_separator.log eagle3_prof/no_mode.log
    eagle3_prof/other_phases.log eagle3_prof/several_blocks.log eagle3_prof/sync_mode.log
    eagle3_prof/tabs_spacing.log eagle3_prof/two_ranks_interleaved.log others/adaptive.log
    others/bench_one_batch_server.log others/bench_serving.log others/bench_speculative.log
    others/eagle_answers.log others/llama_request.log others/llama_simple.log
    others/llama_statistics.log others/mixed_sglang_bench.log others/mtbench.log
    others/run_eval.log others/send_one_lines.log others/send_one_table.log others/specbench.log
    others/specbench_answers.log others/trtllm_bench.log others/trtllm_bench_cut.log
    others/trtllm_iter_log.log others/trtllm_iter_stats.log others/vllm_bench_serve.log
    others/vllm_offline.log others/vllm_section_standalone.log sglang/decode_attn_cp_moe_dp.log
    sglang/decode_cached_token.log sglang/decode_comma_trailing.log sglang/decode_current.log
    sglang/decode_dot_trailing.log sglang/decode_dspark.log sglang/decode_first_spec.log
    sglang/decode_gpu_tag.log sglang/decode_graph_pd_hybrid.log sglang/decode_hisparse.log
    sglang/decode_iter.log sglang/decode_jax_lookalike.log sglang/decode_legacy.log
    sglang/decode_musa_graph.log sglang/decode_plain.log sglang/decode_time_only.log
    sglang/decode_timestamp_tail.log sglang/decode_truncated.log sglang/prefill_comma_trailing.log
    sglang/prefill_current.log sglang/prefill_dot.log sglang/prefill_hit_rate.log
    sglang/prefill_legacy.log sglang/prefill_mixed.log sglang/prefill_throughput_graph.log
    sglang/requests_accept_rate.log sglang/requests_accepted_drafts.log
    sglang/requests_correct_drafts.log sglang/requests_headers.log sglang/requests_json.log
    sglang/requests_token_num.log sglang/requests_verify_ct.log sglang/server_args_nonliteral.log
    sglang/server_args_old.log sglang/server_args_root_logger.log sglang/server_args_spec.log
    sglang/wrap_collector.log sglang/wrap_cr_fragment.log sglang/wrap_crlf.log
    sglang/wrap_docker.log sglang/wrap_host_framework.log sglang/wrap_ray_ansi.log
    vllm/malformed_truncated.log vllm/mixed_families.log vllm/v0_spec_a.log
    vllm/v0_spec_b_restart.log vllm/v0_stage_times.log vllm/v0_throughput_idle.log
    vllm/v1_iteration.log vllm/v1a_spec_t1.log vllm/v1b_spec_t3.log vllm/v1c_spec.log
    vllm/v1d_spec.log vllm/v1e_dp.log vllm/wrappers.log vllm/year_rollover.log
""".split()
STABLE = False        # tests/test_fuzz.py sets it
# samples added after that commit: left out of the stable corpus for the same reason
LATER_SAMPLES = ("eagle3_prof8.log",)


def corpus(stable: bool = False) -> list[Path]:
    """The bundled synthetic logs: the samples, the sweep, every fixture log (``stable``: the
    fixtures of STABLE_FIXTURES that still exist)."""
    files = sorted(p for p in (ROOT / "sample_logs").glob("*.log")
                   if not (stable and p.name in LATER_SAMPLES))
    files += sorted((ROOT / "sample_logs" / "sweep").glob("*.log"))
    fx = ROOT / "tests" / "fixtures"
    files += [fx / n for n in STABLE_FIXTURES if (fx / n).exists()] if stable else \
        sorted(fx.glob("**/*.log"))
    return files


def family(path: Path) -> str:
    rel = path.relative_to(ROOT).as_posix()
    if "vllm" in path.name or "/vllm/" in rel:
        return "vllm"
    if "/others/" in rel:
        return "others"
    return "sglang"        # the samples, fixtures/sglang, fixtures/eagle3_prof


_CORPUS: dict[bool, dict[str, tuple[bytes, str]]] = {}


def load_corpus() -> dict[str, tuple[bytes, str]]:
    if STABLE not in _CORPUS:
        _CORPUS[STABLE] = {p.relative_to(ROOT).as_posix(): (p.read_bytes(), family(p))
                           for p in corpus(STABLE)}
    return _CORPUS[STABLE]


# ----------------------------------------------------------------------------------- mutator

NUM_RE = re.compile(rb"\d+(?:\.\d+)?")
DATE_RE = re.compile(rb"\d{4}-\d{2}-\d{2}")
TIME_RE = re.compile(rb"\d{2}:\d{2}:\d{2}")
MONTH_DAY_RE = re.compile(rb"(?<![\d-])\d{2}-\d{2}(?= \d{2}:)")      # vLLM's 'INFO 02-10 14:00:10'
MARKER_RE = re.compile(rb"EAGLE3_PROF|Decode batch|Prefill batch|server_args=|Finish: obj=|"
                       rb"request\.finished|SpecDecoding|Engine \d+:|accept|throughput|ms/cyc|"
                       rb"statistics|draft|Accept|TOTAL|speed|#running-req")

DIGIT_BLOCKS = {           # Unicode decimal digit zeros: int() and float() accept them all
    "arabic-indic": 0x0660, "ext-arabic-indic": 0x06F0, "devanagari": 0x0966, "bengali": 0x09E6,
    "full-width": 0xFF10, "math-bold": 0x1D7CE, "thai": 0x0E50,
}
NUMBER_SUBS = (
    "inf", "-inf", "+inf", "INF", "Infinity", "nan", "NaN", "-nan", "1e400", "-1e400", "1e-400",
    "1e308", "1e20", "12345678901234567890123456", "9223372036854775808", "9223372036854775807",
    "2147483648", "4294967296", "-2147483649", "-0", "-0.0", "0", "0.00", "0.0", "-1", "-5.5",
    "1_000", "1_0.5", "3.4.5", "1..2", ".5", "5.", "1e", "e5", "0x1F", "1,000", "", " 5", "5 ",
    "\u22125", "\u00b2", "\u00b3", "\u2460", "\u0661.\u0665", "1e5", "007", "+3", "NA", "None",
)
CONTROL_BITS = (b"\r", b"\x00", b"\x1b[31m", b"\x1b[0m", b"\x1b[2K", b"\t", b"\xef\xbb\xbf",
                "\u2028".encode(), "\u0085".encode(), b"\x85", b"\x0c", b"\x0b", b"\xff\xfe",
                b"\r\n", b"\xc3(", b"\xed\xa0\x80", b"\x00\x00\x00\x00", b"\x1b]0;title\x07")
BAD_DATES = (b"2026-02-30", b"2026-13-01", b"2026-00-10", b"0000-01-01", b"9999-12-31",
             b"2026-02-29", b"1969-12-31", "\uff12\uff10\uff12\uff16-03-02".encode(),
             b"2026-03-32", b"2026-3-2", b"20260-03-02", b"2026-03-00")
BAD_TIMES = (b"14:00:92", b"25:00:00", b"14:60:00", b"24:00:00", b"23:59:60", b"99:99:99",
             b"14:00:0", "\uff11\uff14:00:00".encode(), b"00:00:00", b"14:0a:00", b"-1:00:00")
BAD_MONTH_DAYS = (b"02-30", b"13-01", b"00-00", b"02-29", b"12-32", b"99-99")


def transliterate(num: str, zero: int) -> str:
    return "".join(chr(zero + int(c)) if c.isdigit() else c for c in num)


class Mutator:
    """Deterministic mutations of log bytes (one random.Random drives every choice)."""

    def __init__(self, rng: random.Random, big: bool = True, only: tuple[str, ...] = ()) -> None:
        self.r = rng
        self.big = big           # allow the rare >16 MiB line (the long run only)
        self.ops = [
            (14, self.number), (6, self.number_column), (6, self.flip), (6, self.truncate),
            (7, self.lines), (6, self.date), (6, self.control), (3, self.long_line),
            (6, self.splice), (2, self.line_endings), (1, self.emptyish), (2, self.graft),
        ]
        if only:
            self.ops = [(w, op) for w, op in self.ops if op.__name__ in only]
        self.total = sum(w for w, _ in self.ops)

    # --- helpers
    def _pick_line(self, lines: list[bytes], prefer_records: bool = True) -> int | None:
        if not lines:
            return None
        if prefer_records and self.r.random() < 0.85:
            idx = [i for i, ln in enumerate(lines) if MARKER_RE.search(ln) or NUM_RE.search(ln)]
            if idx:
                return self.r.choice(idx)
        return self.r.randrange(len(lines))

    def _number_sub(self, num: bytes) -> bytes:
        r = self.r
        s = num.decode()
        k = r.random()
        if k < 0.18:                          # other ASCII digits, same or other length
            n = max(1, len(s.replace(".", "")) + r.choice((-1, 0, 0, 1, 3)))
            out = "".join(r.choice("0123456789") for _ in range(n))
            if "." in s and r.random() < 0.7:
                cut = r.randrange(1, len(out) + 1)
                out = out[:cut] + "." + out[cut:]
            return out.encode()
        if k < 0.34:                          # non-ASCII decimal digits (all or one of them)
            zero = DIGIT_BLOCKS[r.choice(sorted(DIGIT_BLOCKS))]
            if r.random() < 0.6:
                return transliterate(s, zero).encode()
            pos = [i for i, c in enumerate(s) if c.isdigit()]
            i = r.choice(pos)
            return (s[:i] + chr(zero + int(s[i])) + s[i + 1:]).encode()
        if k < 0.42:                          # the same number scaled far away
            try:
                v = float(s) * r.choice((1e3, 1e6, 1e-3, 1e12, -1))
            except ValueError:
                v = 0.0
            return repr(v).encode()
        return r.choice(NUMBER_SUBS).encode()

    # --- operations: each takes bytes and returns (bytes, description)
    def number(self, data: bytes):
        lines = data.split(b"\n")
        i = self._pick_line(lines)
        if i is None:
            return data, "number: no line"
        ms = list(NUM_RE.finditer(lines[i]))
        if not ms:
            return data, "number: no number"
        m = self.r.choice(ms)
        sub = self._number_sub(m.group())
        lines[i] = lines[i][:m.start()] + sub + lines[i][m.end():]
        return b"\n".join(lines), f"number L{i + 1}: {m.group()!r} -> {sub!r}"

    def number_column(self, data: bytes):
        """The same field of many lines (e.g. every 'gen throughput' value) made bad: analyses
        then see a whole column of zeros, infinities or NaN."""
        lines = data.split(b"\n")
        i = self._pick_line(lines)
        if i is None:
            return data, "column: no line"
        ms = list(NUM_RE.finditer(lines[i]))
        if not ms:
            return data, "column: no number"
        m = self.r.choice(ms)
        key = lines[i][max(0, m.start() - 14):m.start()]
        key = re.sub(rb"^[^A-Za-z#]*", b"", key)       # the field label before the number
        if len(key) < 3:
            return self.number(data)
        sub = self.r.choice((b"0", b"0.00", b"inf", b"nan", b"1e400", b"-1", b"-0",
                             b"12345678901234567890123456", None))
        pat = re.compile(re.escape(key) + rb"\s*" + NUM_RE.pattern)
        share = self.r.choice((1.0, 1.0, 0.5, 0.1))
        n = 0
        for j, ln in enumerate(lines):
            if pat.search(ln) and self.r.random() < share:
                s = sub if sub is not None else self._number_sub(b"1.5")
                lines[j] = pat.sub(lambda mm: mm.group()[:len(mm.group()) - len(
                    NUM_RE.search(mm.group()[len(key):]).group())] + s, ln, count=1)
                n += 1
        return b"\n".join(lines), f"column {key!r}: {n} lines -> {sub!r}"

    def flip(self, data: bytes):
        if not data:
            return data, "flip: empty"
        b = bytearray(data)
        k = self.r.choice((1, 1, 2, 4, 8))
        where = []
        for _ in range(k):
            p = self.r.randrange(len(b))
            if self.r.random() < 0.5:
                b[p] ^= 1 << self.r.randrange(8)
            else:
                b[p] = self.r.randrange(256)
            where.append(p)
        return bytes(b), f"flip {k} bytes at {where[:4]}"

    def truncate(self, data: bytes):
        if len(data) < 2:
            return data, "truncate: too short"
        r = self.r.random()
        if r < 0.3:                           # inside an EAGLE3_PROF block
            starts = [m.start() for m in re.finditer(rb"EAGLE3_PROF", data)]
            if starts:
                s = self.r.choice(starts)
                cut = min(len(data) - 1, s + self.r.randrange(1, 320))
                return data[:cut], f"truncate mid-block at byte {cut}"
        if r < 0.45 and data.endswith(b"\n"):
            return data[:-1], "drop the final newline"
        if r < 0.75:                          # mid-line, keeping most of the file
            lines = data.split(b"\n")
            i = self._pick_line(lines)
            if i is not None and lines[i]:
                cut = self.r.randrange(len(lines[i]))
                out = b"\n".join(lines[:i] + [lines[i][:cut]])
                return out, f"truncate L{i + 1} at column {cut}"
        cut = self.r.randrange(1, len(data))
        return data[:cut], f"truncate at byte {cut}"

    def lines(self, data: bytes):
        lines = data.split(b"\n")
        if len(lines) < 2:
            return data, "lines: too few"
        i = self._pick_line(lines)
        r = self.r.random()
        if r < 0.3:
            k = self.r.choice((1, 1, 2, 5, 50))
            lines[i + 1:i + 1] = [lines[i]] * k
            return b"\n".join(lines), f"duplicate L{i + 1} x{k}"
        if r < 0.55:
            k = self.r.choice((1, 1, 2, 3, 9))
            del lines[i:i + k]
            return b"\n".join(lines), f"delete L{i + 1}+{k}"
        if r < 0.8:
            j = self.r.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            return b"\n".join(lines), f"swap L{i + 1} L{j + 1}"
        k = self.r.randrange(1, min(40, len(lines)) + 1)
        block = lines[i:i + k]
        del lines[i:i + k]
        j = self.r.randrange(len(lines) + 1)
        lines[j:j] = block
        return b"\n".join(lines), f"move L{i + 1}+{k} to {j + 1}"

    def date(self, data: bytes):
        lines = data.split(b"\n")
        cands = [(i, m, kind) for i, ln in enumerate(lines[:5000])
                 for kind, rx in (("date", DATE_RE), ("time", TIME_RE), ("md", MONTH_DAY_RE))
                 for m in rx.finditer(ln[:80])]
        if not cands:
            return self.number(data)
        i, m, kind = self.r.choice(cands)
        sub = self.r.choice({"date": BAD_DATES, "time": BAD_TIMES, "md": BAD_MONTH_DAYS}[kind])
        every = self.r.random() < 0.2
        if every:
            rx = {"date": DATE_RE, "time": TIME_RE, "md": MONTH_DAY_RE}[kind]
            lines = [rx.sub(sub, ln[:80], count=1) + ln[80:] for ln in lines]
            return b"\n".join(lines), f"{kind} of every line -> {sub!r}"
        lines[i] = lines[i][:m.start()] + sub + lines[i][m.end():]
        return b"\n".join(lines), f"{kind} L{i + 1}: {m.group()!r} -> {sub!r}"

    def control(self, data: bytes):
        bit = self.r.choice(CONTROL_BITS)
        lines = data.split(b"\n")
        i = self._pick_line(lines)
        if i is None:
            return bit + data, f"control {bit!r} at start"
        ln = lines[i]
        where = self.r.choice(("start", "end", "mid", "mid"))
        p = 0 if where == "start" else len(ln) if where == "end" else self.r.randrange(len(ln) + 1)
        lines[i] = ln[:p] + bit + ln[p:]
        return b"\n".join(lines), f"control {bit!r} L{i + 1} col {p}"

    def long_line(self, data: bytes):
        lines = data.split(b"\n")
        i = self._pick_line(lines)
        if i is None:
            return data, "long: no line"
        size = self.r.choice((20_000, 70_000, 300_000, 1_200_000))
        if self.big and self.r.random() < 0.03:
            size = (16 << 20) + 4096          # past sources.MAX_LINE
        r = self.r.random()
        ln = lines[i] or b"x"
        if r < 0.4:                           # the record line itself, repeated on one line
            new = (ln + b" ") * (size // (len(ln) + 1) + 1)
        elif r < 0.7:                         # padding inside the record line
            cut = self.r.randrange(len(ln) + 1)
            new = ln[:cut] + b" " * size + ln[cut:]
        else:
            new = ln + b", accept len: 2.00" * (size // 18)
        lines[i] = new[:size + len(ln)]
        return b"\n".join(lines), f"long line L{i + 1}: {len(lines[i]):,} bytes"

    def _other_lines(self) -> tuple[str, list[bytes]]:
        corp = load_corpus()
        name = self.r.choice(sorted(corp))
        return name, corp[name][0].split(b"\n")

    def splice(self, data: bytes):
        lines = data.split(b"\n")
        name, other = self._other_lines()
        k = self.r.choice((1, 1, 3, 10))
        j = self.r.randrange(max(1, len(other) - k))
        piece = other[j:j + k]
        i = self.r.randrange(len(lines) + 1)
        lines[i:i] = piece
        return b"\n".join(lines), f"splice {k} lines of {name}:{j + 1} at L{i + 1}"

    def graft(self, data: bytes):
        lines = data.split(b"\n")
        i = self._pick_line(lines)
        name, other = self._other_lines()
        j = self.r.randrange(len(other))
        if i is None:
            return data, "graft: no line"
        a, b = lines[i], other[j]
        lines[i] = a[:self.r.randrange(len(a) + 1)] + b[self.r.randrange(len(b) + 1):]
        return b"\n".join(lines), f"graft L{i + 1} with {name}:{j + 1}"

    def line_endings(self, data: bytes):
        r = self.r.random()
        if r < 0.5:
            return data.replace(b"\n", b"\r\n"), "CRLF line endings"
        if r < 0.8:
            return data.replace(b"\n", b"\r"), "CR-only line endings"
        return data.replace(b"\n", b"\n\n"), "blank line after every line"

    def emptyish(self, data: bytes):
        return self.r.choice((b"", b"\n", b"\n\n\n", b" ", b"\x00" * 64,
                              b"\xef\xbb\xbf")), "emptyish"

    def mutate(self, data: bytes, n: int | None = None) -> tuple[bytes, list[str]]:
        n = n if n is not None else min(1 + int(self.r.expovariate(0.9)), 6)
        ops = []
        for _ in range(n):
            x = self.r.uniform(0, self.total)
            for w, op in self.ops:
                x -= w
                if x <= 0:
                    break
            data, what = op(data)
            ops.append(what)
        return data, ops

    # --- compression, the final step of some cases
    def compress(self, data: bytes) -> tuple[bytes, str]:
        kind = self.r.choice(("gzip", "zstd", "xz", "bzip2"))
        if kind == "gzip":
            z = gzip.compress(data, mtime=0)
        elif kind == "xz":
            z = lzma.compress(data)
        elif kind == "bzip2":
            z = bz2.compress(data)
        else:
            import zstandard
            z = zstandard.ZstdCompressor().compress(data)
        r = self.r.random()
        if r < 0.45 or len(z) < 16:
            return z, kind
        if r < 0.65:
            cut = self.r.randrange(len(z) // 4, len(z))
            return z[:cut], f"{kind} truncated at {cut}/{len(z)}"
        if r < 0.8:
            b = bytearray(z)
            p = self.r.randrange(10, len(b))
            b[p] ^= 1 << self.r.randrange(8)
            return bytes(b), f"{kind} bit flipped at {p}/{len(z)}"
        if r < 0.9:
            return z + bytes(self.r.randrange(256) for _ in range(self.r.choice((1, 7, 600)))), \
                f"{kind} + trailing garbage"
        return z + z, f"{kind} two members"


def decompress_any(data: bytes) -> bytes:
    """The plain text of a (possibly damaged) compressed input, as far as it decodes."""
    try:
        if data[:2] == b"\x1f\x8b":
            d = __import__("zlib").decompressobj(wbits=31)
            return d.decompress(data)
        if data[:6] == b"\xfd7zXZ\x00":
            return lzma.LZMADecompressor().decompress(data)
        if data[:3] == b"BZh":
            return bz2.BZ2Decompressor().decompress(data)
        if data[:4] == b"\x28\xb5\x2f\xfd":
            import zstandard
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except Exception:           # noqa: BLE001 - damage on purpose
        return b""
    return data


# ------------------------------------------------------------------------------------ inputs

@dataclasses.dataclass
class Input:
    name: str                 # file name in the case directory
    data: bytes               # the bytes written
    origin: str               # corpus file it came from
    base: bytes               # the origin's bytes (or slice) before mutation
    ops: list[str]
    family: str
    compressed: str | None = None

    @property
    def plain(self) -> bytes:
        return decompress_any(self.data) if self.compressed else self.data


def make_input(rng: random.Random, name: str, fam: str | None = None, mutate: bool = True,
               big: bool = True, compress_p: float = 0.12, sample_p: float = 0.5,
               window_p: float = 0.35, names: list[str] | None = None) -> Input:
    """One input: a corpus file of family ``fam`` (or one of ``names``), a window of it
    sometimes, mutated, compressed sometimes."""
    corp = load_corpus()
    if names is None:
        names = sorted(n for n, (_, f) in corp.items() if fam is None or f == fam)
    samples = [n for n in names if n.startswith("sample_logs/")]
    # the samples are long enough for every analysis; the fixtures hold the odd layouts
    origin = rng.choice(samples if samples and rng.random() < sample_p else names)
    base, f = corp[origin]
    if rng.random() < window_p:               # a window of the file: fewer records, edge cases
        lines = base.split(b"\n")
        if len(lines) > 40:
            a = rng.randrange(len(lines) - 20)
            b = rng.randrange(a + 20, min(len(lines), a + 400) + 1)
            base = b"\n".join(lines[a:b]) + b"\n"
    ops: list[str] = []
    data = base
    m = Mutator(rng, big=big)
    if mutate:
        data, ops = m.mutate(base)
    comp = None
    if rng.random() < compress_p:
        data, comp = m.compress(data)
        ops.append(comp)
    return Input(name, data, origin, base, ops, f, comp)


def first_difference(base: bytes, mutated: bytes) -> str:
    a, b = base.split(b"\n"), mutated.split(b"\n")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return (f"first differing line {i + 1}:\n    was: {short(x)}\n    now: {short(y)}")
    if len(a) != len(b):
        i = min(len(a), len(b))
        return (f"first differing line {i + 1}: the mutated input has {len(b)} lines, the "
                f"original {len(a)}")
    return "no line differs (the mutation is in the compression)"


def short(b: bytes, n: int = 220) -> str:
    t = repr(b)
    return t if len(t) <= n else t[:n] + f"… ({len(b):,} bytes)"


# ---------------------------------------------------------------------------- the invocation

class FuzzTimeout(BaseException):
    """A case ran past its time limit (BaseException: the CLI's `except Exception` must not
    swallow it)."""


class _Exited(BaseException):
    def __init__(self, code: int) -> None:
        self.code = code


@contextlib.contextmanager
def time_limit(seconds: float | None):
    if not seconds or not hasattr(signal, "setitimer") or \
            __import__("threading").current_thread() is not __import__("threading").main_thread():
        yield
        return

    def on_alarm(signum, frame):
        # where it was when the time ran out (a long C call, a regex say, ends first: the
        # alarm is handled at the next bytecode, so this is the call that took the time)
        stack = traceback.StackSummary.extract(traceback.walk_stack(frame))
        stack.reverse()
        where = "?"
        for f in reversed(stack):
            if f"{os.sep}eaglelog{os.sep}" in f.filename:
                i = f.filename.rfind(f"{os.sep}eaglelog{os.sep}")
                where = f"{f.filename[i + 1:]}:{f.name} (line {f.lineno})"
                break
        raise FuzzTimeout(f"no answer within {seconds:g} s (at {where})", where)
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclasses.dataclass
class Invocation:
    argv: list[str]
    code: int | None
    stdout: str
    stderr: str
    exc: BaseException | None = None
    tb: traceback.TracebackException | None = None
    warnings: list = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    @property
    def command(self) -> str:
        return next((a for a in self.argv if not a.startswith("-")), "?")


def warm_up() -> None:
    """Import what the commands import, once, before any invocation records warnings (a module
    imported inside warnings.catch_warnings would lose the filters it installs)."""
    import eaglelog.cli  # noqa: F401
    import eaglelog.api  # noqa: F401
    import eaglelog.analysis.breakeven, eaglelog.analysis.compare  # noqa: F401,E401
    import eaglelog.analysis.reconcile, eaglelog.analysis.summary  # noqa: F401,E401
    import eaglelog.analysis.sweep, eaglelog.analysis.bench  # noqa: F401,E401
    import eaglelog.overview, eaglelog.report.blocks, eaglelog.report.html  # noqa: F401,E401
    import eaglelog.report.plot  # noqa: F401
    import pandas, scipy.stats  # noqa: F401,E401
    try:
        import matplotlib.figure, matplotlib.backends.backend_agg  # noqa: F401,E401
        import matplotlib.backends.backend_svg  # noqa: F401
    except ImportError:
        pass


SHOWN_BY_DEFAULT = lambda w: not issubclass(w.category, (DeprecationWarning,  # noqa: E731
                                                         PendingDeprecationWarning,
                                                         ImportWarning, ResourceWarning))


def invoke(argv: list[str], env: dict | None = None, stdin: bytes | None = None,
           timeout: float | None = 120) -> Invocation:
    """One run of the console entry (eaglelog.cli.run) in this process, as `eaglelog ARGV`."""
    from click.testing import CliRunner

    import eaglelog.cli  # noqa: F401  (registers the commands)
    from eaglelog.cli import _base as cli      # run() and the _exit_now it ends in

    env = {"EAGLELOG_NO_CACHE": "1", "NO_COLOR": "1", "MPLBACKEND": "Agg", **(env or {})}
    runner = CliRunner()
    code, exc, tb = None, None, None
    old_argv, old_exit = sys.argv, cli._exit_now

    def exit_now(c):
        raise _Exited(c)
    t0 = time.perf_counter()
    with runner.isolation(input=stdin, env=env) as (out, err, _mixed):
        sys.argv = ["eaglelog", *argv]
        cli._exit_now = exit_now
        with warnings.catch_warnings(record=True) as wlist:
            try:
                with time_limit(timeout):
                    cli.run()
                code = 0          # run() always ends in _exit_now
            except _Exited as e:
                code = e.code
            except FuzzTimeout as e:
                exc = e
            except BaseException as e:          # noqa: BLE001 - what escaped the console entry
                exc = e
                tb = traceback.TracebackException.from_exception(e)
            finally:
                sys.argv = old_argv
                cli._exit_now = old_exit
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:       # noqa: BLE001
            pass
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
    return Invocation(list(argv), code, stdout, stderr, exc, tb,
                      [w for w in wlist if SHOWN_BY_DEFAULT(w)], time.perf_counter() - t0)


# ---------------------------------------------------------------------------------- checks

@dataclasses.dataclass
class Finding:
    kind: str
    signature: str
    argv: list[str]
    detail: str
    where: str = ""           # the part of the code (file:function) when known

    def __str__(self) -> str:
        return f"[{self.kind}] {self.signature}\n  eaglelog {' '.join(self.argv)}\n  {self.detail}"


def eaglelog_frame(tb: traceback.TracebackException) -> str:
    """The innermost frame in eaglelog's code: 'eaglelog/parsers/sglang.py:_int (line 88)'."""
    frames = [f for f in tb.stack if f"{os.sep}eaglelog{os.sep}" in f.filename]
    f = frames[-1] if frames else (tb.stack[-1] if tb.stack else None)
    if f is None:
        return "?"
    fn = f.filename
    i = fn.rfind(f"{os.sep}eaglelog{os.sep}")
    rel = fn[i + 1:] if i >= 0 else os.path.basename(fn)
    return f"{rel}:{f.name} (line {f.lineno})"


def _strip_line(where: str) -> str:
    return re.sub(r" \(line \d+\)$", "", where)


def norm(text: str, n: int = 70) -> str:
    """A message shape for a signature: paths, numbers and quoted values made generic."""
    t = re.sub(r"/\S*?/(case|fz)[^\s:]*", "FILE", text)
    t = re.sub(r"\S*/[\w.-]+\.(log|json|gz|zst|xz|bz2|html|png|svg)\b", "FILE", t)
    t = re.sub(r"'[^']*'", "'…'", t)
    t = re.sub(r"\d[\d,._]*", "N", t)
    return t[:n]


class _Reject(ValueError):
    pass


def _no_constant(name):
    raise _Reject(f"non-standard JSON constant {name}")


def strict_json(text: str):
    return json.loads(text, parse_constant=_no_constant)


BAD_CELL = re.compile(r"[-+\u2212]?(nan|inf|infinity|<na>|nat)", re.I)
BAD_TOKEN = re.compile(r"(?<![\w./'\"\\-])[-+\u2212]?(nan|inf|infinity)(?![\w/'\"\\-])", re.I)


def table_cells(text: str, fmt: str) -> list[tuple[str, str]]:
    """(column, cell) pairs of a table printed as csv, markdown (github) or table (simple)."""
    out = []
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        if not rows:
            return out
        head = rows[0]
        for row in rows[1:]:
            out += list(zip(head, row))
    elif fmt == "markdown":
        lines = [ln for ln in text.splitlines() if ln.startswith("|")]
        if len(lines) < 2:
            return out
        head = [c.strip() for c in lines[0].strip("|").split("|")]
        for ln in lines[2:]:
            out += list(zip(head, [c.strip() for c in ln.strip("|").split("|")]))
    else:
        lines = text.splitlines()
        if len(lines) < 2 or not set(lines[1]) <= {"-", " "} or "-" not in lines[1]:
            return out
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[1])]
        head = [lines[0][a:b].strip() for a, b in spans]
        for ln in lines[2:]:
            out += [(h, ln[a:b].strip()) for h, (a, b) in zip(head, spans)]
    return out


def is_config(col: str | None, config_keys) -> bool:
    """A column that shows a server_args value (sweep's key columns, summary's config_*, the
    overview's spec_*)."""
    return col is not None and (col in config_keys or col.startswith(("config_", "spec_")))


DIAGNOSTIC_LINE = re.compile(r"\b(warning|error|note):|not understood|not parsed|bad value")
CONFIG_LINE = re.compile(r"^\s*(config|spec config)\b|^\s*config:")


def screen_token(lines: list[str], config_keys=frozenset()):
    """The first nan/inf shown as a number on a human screen: (token, label, line) or None.
    Columns of a `simple` table are located by its dashes line; config lines (server_args
    values as logged) and quoted diagnostics are not numbers of eaglelog's."""
    head, spans = None, None
    for k, ln in enumerate(lines):
        if k and ln.startswith("-") and re.fullmatch(r"-+(  -+)*", ln.strip()):
            head = lines[k - 1]
            spans = [(m.start(), m.end()) for m in re.finditer(r"-+", ln)]
            continue
        if CONFIG_LINE.search(ln) or DIAGNOSTIC_LINE.search(ln):
            continue
        for mm in BAD_TOKEN.finditer(ln):
            col = None
            if spans:
                col = next((head[a:b].strip() for a, b in spans
                            if a <= mm.start() < b + 2), None)
            if is_config(col, config_keys):
                continue
            label = f"column {col!r}" if col is not None else \
                norm(re.sub(r"\s+", " ", ln[:mm.start()].strip())[-40:], 40)
            return mm.group().lower(), label, ln.strip()
    return None


def html_token(text: str, config_keys=frozenset()):
    """screen_token for an HTML report: the cells of its tables (by their <th> column) and
    the lines of its other text (<pre> blocks, paragraphs); SVG and CSS left out."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.skip = 0
            self.cell = None
            self.heads, self.col = [], 0
            self.cells, self.text = [], []

        def handle_starttag(self, tag, attrs):
            if tag in ("svg", "style", "script"):
                self.skip += 1
            elif tag == "tr":
                self.col = 0
            elif tag == "table":
                self.heads = []
            elif tag in ("td", "th"):
                self.cell = []

        def handle_endtag(self, tag):
            if tag in ("svg", "style", "script"):
                self.skip -= 1
            elif tag in ("td", "th") and self.cell is not None:
                value = "".join(self.cell).strip()
                if tag == "th":
                    self.heads.append(value)
                else:
                    name = self.heads[self.col] if self.col < len(self.heads) else None
                    self.cells.append((name, value))
                self.col += 1
                self.cell = None

        def handle_data(self, data):
            if self.skip:
                return
            (self.cell if self.cell is not None else self.text).append(data)

    p = P()
    p.feed(text)
    for col, value in p.cells:
        if is_config(col, config_keys) or DIAGNOSTIC_LINE.search(value):
            continue
        mm = BAD_TOKEN.search(value)
        if mm:
            return mm.group().lower(), f"column {col!r}", value
    return screen_token("".join(p.text).splitlines(), config_keys)


def _numeric_columns(table: str) -> set[str] | None:
    from eaglelog.schema import TABLES, table_from_cli
    t = TABLES[table_from_cli(table)]
    return {c.name for c in t.columns if c.dtype.startswith(("Int", "float", "int"))}


def check(inv: Invocation, fmt: str | None = None, table: str | None = None,
          files: dict[str, str] | None = None, config_keys=frozenset()) -> list[Finding]:
    """Every assertion on one invocation; ``fmt`` is the -f of the command (None: its default
    human output), ``table`` the --table of a parse, ``files`` output files to check
    ({path: 'json'|'png'|'svg'|'html'|'parquet'}), ``config_keys`` the server_args keys of the
    inputs (their values are echoed as the log wrote them: `watchdog_timeout=inf` is what
    SGLang prints for float('inf'); a non-finite *number* there is caught by the JSON check)."""
    f: list[Finding] = []
    argv, cmd = inv.argv, inv.command

    def add(kind, sig, detail, where=""):
        f.append(Finding(kind, sig, argv, detail, where))

    if isinstance(inv.exc, FuzzTimeout):
        where = inv.exc.args[1] if len(inv.exc.args) > 1 else "?"
        add("timeout", f"timeout @ {_strip_line(where)}", f"{cmd}: {inv.exc.args[0]}", where)
        return f
    if inv.exc is not None:
        where = eaglelog_frame(inv.tb) if inv.tb else "?"
        add("uncaught", f"uncaught {type(inv.exc).__name__} @ {_strip_line(where)}",
            f"{type(inv.exc).__name__}: {str(inv.exc)[:300]}", where)
        return f
    m = re.search(r"eaglelog: internal error: (\w+): (.*)", inv.stderr)
    if m:
        add("internal-error", f"internal {m.group(1)}: {cmd}: {norm(m.group(2), 50)}",
            m.group(0)[:400])
    if "Traceback (most recent call last)" in inv.stderr + inv.stdout:
        add("traceback", f"traceback: {cmd}", inv.stderr[-400:])
    if inv.code not in (0, 1, 2, 3):
        add("exit-code", f"exit code {inv.code}: {cmd}", f"exit {inv.code}")
    err_lines = [ln for ln in inv.stderr.splitlines() if ln.strip()]
    bad = [ln for ln in err_lines if not ln.startswith("eaglelog:")]
    if bad and not m:
        add("stderr-format", f"stderr line not 'eaglelog: …': {cmd}: {norm(bad[0], 50)}",
            "\n".join(short(b.encode(), 160) for b in bad[:3]))
    ctl = re.search(r"[\x00-\x08\x0e-\x1f\x7f]", inv.stderr)
    if ctl and not bad:          # ESC & co. echoed raw: a log can drive the terminal
        add("stderr-control", f"raw control character in stderr: {cmd}: {ctl.group()!r}",
            short(inv.stderr[max(0, ctl.start() - 80):ctl.end() + 40].encode(), 200))
    for w in inv.warnings[:1]:
        where = f"{os.path.relpath(w.filename, ROOT) if w.filename else '?'}:{w.lineno}"
        add("warning", f"{w.category.__name__} leaks: {cmd}: {norm(str(w.message), 50)}",
            f"{w.category.__name__}: {w.message} ({where})", where)
    if inv.code and not err_lines and not (inv.code == 3 and inv.stdout.strip()):
        add("silent-exit", f"exit {inv.code} without a message: {cmd}", "stderr is empty")
    if inv.code == 0 and re.search(r"^eaglelog: error:", inv.stderr, re.M):
        add("error-exit-0", f"an error reported but exit 0: {cmd}",
            re.search(r"^eaglelog: error:.*", inv.stderr, re.M).group(0)[:300])
    out = inv.stdout
    if fmt in ("json", "jsonl") and out.strip():
        docs = [out] if fmt == "json" else [ln for ln in out.splitlines() if ln.strip()]
        for d in docs:
            try:
                strict_json(d)
            except _Reject as e:
                tok = re.search(r"(NaN|-?Infinity)", d)
                ctx = d[max(0, tok.start() - 60):tok.end() + 10] if tok else ""
                key = re.findall(r'"(\w+)":\s*$', d[:tok.start()]) if tok else []
                key = re.search(r'"([^"]+)":\s*[-\w]*$', d[max(0, tok.start() - 80):tok.end()])
                add("json-nonfinite", f"{e.args[0].split()[-1]} in JSON: {cmd} "
                    f"{key.group(1) if key else '?'}", short(ctx.encode(), 200))
                break
            except ValueError as e:
                add("json-invalid", f"invalid JSON: {cmd}: {norm(str(e), 40)}", str(e)[:200])
                break
    elif fmt in ("csv", "markdown", "table") and out.strip() and (table or fmt != "table"):
        numeric = _numeric_columns(table) if table and table != "server-args" else None
        if table != "server-args":
            for col, cell in table_cells(out, fmt):
                if BAD_CELL.fullmatch(cell) and (numeric is None or col in numeric) and \
                        not is_config(col, config_keys):
                    add("nan-in-table", f"{cell.lower()} in a table cell: {cmd} -f {fmt} "
                        f"{table or ''} column {col}".replace("  ", " "), f"{col} = {cell!r}")
                    break
    elif out.strip() and fmt in (None, "table"):
        hit = screen_token(out.splitlines(), config_keys)
        if hit:
            tok, label, ln = hit
            add("nan-on-screen", f"{tok} on screen: {cmd}: {label}", ln[:200])
    for path, kind in (files or {}).items():
        if inv.code not in (0, 3):
            continue
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            add("missing-output", f"exit {inv.code} but no {kind} written: {cmd}", path)
            continue
        if kind == "json":
            try:
                strict_json(Path(path).read_text(encoding="utf-8"))
            except _Reject as e:
                add("json-nonfinite", f"{e.args[0].split()[-1]} in {cmd} -o FILE.json", path)
            except ValueError as e:
                add("json-invalid", f"invalid JSON file: {cmd}", str(e)[:200])
        elif kind == "html":
            hit = html_token(Path(path).read_text(encoding="utf-8", errors="replace"),
                             config_keys)
            if hit:
                tok, label, ln = hit
                add("nan-in-report", f"{tok} in the HTML report: {label}", ln[:200])
        elif kind == "parquet":
            import numpy as np
            import pandas as pd
            df = pd.read_parquet(path)
            for c in df.columns:
                if pd.api.types.is_float_dtype(df[c]) and np.isinf(df[c].to_numpy(
                        dtype=float, na_value=np.nan)).any():
                    add("nan-in-table", f"inf in a parquet column: {cmd} {table} column {c}",
                        path)
                    break
    return f


# --------------------------------------------------------------------------------- commands

@dataclasses.dataclass
class Step:
    argv: list[str]
    fmt: str | None = None
    table: str | None = None
    files: dict = dataclasses.field(default_factory=dict)
    stdin: bytes | None = None


def _common(r: random.Random, inp: Input | None = None) -> list[str]:
    opts = []
    if r.random() < 0.2:
        opts.append("--keep-going")
    if r.random() < 0.08:
        opts.append("-q")
    if r.random() < 0.12:
        opts += ["--engine", (inp.family if inp and inp.family != "others" and r.random() < 0.6
                              else r.choice(ENGINES))]
    if r.random() < 0.08:
        opts += ["--date", "2026-03-02"]
    return opts


def _baseline_toks(r: random.Random) -> str:
    return r.choice(("90", "90", "90", "90±3", "45", "200", "0.5", "1e6", "90±0", "nan",
                     "inf", "-5", "90±nan", "٩٠"))


def _fmt(r: random.Random, allow_default: bool = True) -> str | None:
    return r.choice(((None,) if allow_default else ()) + TEXT_FORMATS)


def _with_fmt(argv: list[str], fmt: str | None) -> list[str]:
    return argv + (["-f", fmt] if fmt else [])


def steps_for(command: str, r: random.Random, a: str, b: str, d: Path,
              inp: Input | None = None, base: str | None = None) -> list[Step]:
    """The command lines of one command on inputs a, b (paths) with outputs in d; ``base``
    is the --baseline-log (b when not given or now and then)."""
    c = _common(r, inp)
    bl = base if base and r.random() < 0.85 else b
    if command == "parse":
        fmt = r.choice(TEXT_FORMATS)
        if r.random() < 0.25:
            return [Step(["parse", *c, "-f", fmt, a], fmt)]
        t = r.choice(SGLANG_TABLES if inp is None or inp.family == "sglang" or r.random() < 0.3
                     else ALL_TABLES)
        if r.random() < 0.06:
            out = str(d / "t.parquet")
            return [Step(["parse", *c, "--table", t, "-f", "parquet", "-o", out, a], "parquet",
                         t, {out: "parquet"})]
        return [Step(["parse", *c, "--table", t, "-f", fmt, a], fmt, t)]
    if command == "summary":
        fmt = _fmt(r)
        base = r.choice(([], ["--baseline-toks", _baseline_toks(r)], ["--baseline-log", bl]))
        return [Step(_with_fmt(["summary", *c, *base], fmt) + [a], fmt)]
    if command == "breakeven":
        fmt = _fmt(r)
        if r.random() < 0.4:
            base = ["--baseline-log", bl] + (["--by", "batch"] if r.random() < 0.6 else [])
        else:
            base = ["--baseline-toks", _baseline_toks(r)]
        extra = (["--check"] if r.random() < 0.3 else []) + \
            (["--cycle-from", r.choice(("auto", "prof", "decode"))] if r.random() < 0.3 else [])
        return [Step(_with_fmt(["breakeven", *c, *base, *extra], fmt) + [a], fmt)]
    if command == "reconcile":
        fmt = _fmt(r)
        return [Step(_with_fmt(["reconcile", *c], fmt) + [a], fmt)]
    if command == "compare":
        fmt = _fmt(r)
        extra = (["--test", "mannwhitney"] if r.random() < 0.25 else []) + \
            (["--baseline-toks", "90"] if r.random() < 0.2 else []) + \
            (["--min-effect", "2"] if r.random() < 0.1 else [])
        gate = ["--fail-on-regression"] if r.random() < 0.35 else []
        return [Step(_with_fmt(["compare", *c, *extra], fmt) + [a, b] + gate, fmt)]
    if command == "sweep":
        fmt = _fmt(r)
        extra = ["--baseline-toks", "90"] if r.random() < 0.3 else []
        logs = [a, b] + ([str(ROOT / "sample_logs" / "sweep" / "steps3.log")]
                         if r.random() < 0.3 else [])
        return [Step(_with_fmt(["sweep", *c, *extra], fmt) + logs, fmt)]
    if command == "export":
        out = str(d / "export.json")
        fmt = _fmt(r)
        return [Step(["export", *c, a, "-o", out], None, None, {out: "json"}),
                Step(_with_fmt(["compare", *_common(r, inp)], fmt) + [out, b], fmt)]
    if command == "plot":
        kind = r.choice(PLOT_KINDS)
        out = str(d / ("plot." + r.choice(("png", "svg"))))
        base = (["--baseline-toks", "90"] if kind == "breakeven" and r.random() < 0.6 else
                ["--baseline-log", bl] if kind == "breakeven" else
                ["--baseline-toks", "90"] if kind in ("sweep", "compare") and r.random() < 0.3
                else [])
        logs = [a, b] if kind in ("sweep", "compare") or r.random() < 0.2 else [a]
        return [Step(["plot", *c, "--kind", kind, *base, "-o", out, *logs], None, None,
                     {out: "image"})]
    if command == "report":
        out = str(d / "report.html")
        base = r.choice(([], ["--baseline-toks", "90"], ["--baseline-log", bl]))
        logs = [a, b] if r.random() < 0.3 else [a]
        return [Step(["report", *c, *base, "-o", out, *logs], None, None, {out: "html"})]
    raise ValueError(command)


COMMANDS = ("parse", "summary", "breakeven", "reconcile", "compare", "sweep", "export", "plot",
            "report")
# how often each command is drawn in the long run (parse has 60 table x format variants)
WEIGHTS = {"parse": 4, "summary": 3, "breakeven": 3, "reconcile": 2, "compare": 2, "sweep": 1.5,
           "export": 1.5, "plot": 1.2, "report": 0.8}


def mutate_export(r: random.Random, path: str) -> str:
    """Damage an export file a little (a value made NaN/1e400/text, or the file cut)."""
    text = Path(path).read_text(encoding="utf-8")
    k = r.random()
    if k < 0.3:
        text = text[:r.randrange(1, len(text))]
    else:
        ms = list(re.finditer(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?", text))
        if ms:
            m = r.choice(ms)
            text = text[:m.start()] + r.choice(("NaN", "Infinity", "1e400", "-1", "0", '"x"',
                                               "null", "[]", "{}")) + text[m.end():]
    Path(path).write_text(text, encoding="utf-8")
    return "export file damaged"


# -------------------------------------------------------------------------------- differential

def snapshot(path: str, *, pure: bool = False, workers: int = 1, chunk: int | None = None,
             min_parallel: int | None = None) -> dict:
    """What `eaglelog parse -f json --table T` prints for every SGLang table, the overview JSON
    (counts of every reported kind) and the diagnostics, under one scan configuration."""
    from eaglelog import api
    from eaglelog.io import parallel
    from eaglelog.errors import EaglelogError
    from eaglelog.overview import overview
    from eaglelog.parsers import scan
    from eaglelog.report import render_object
    from eaglelog.schema import table_from_cli

    old = (scan._PURE, parallel.MIN_PARALLEL, os.environ.get("EAGLELOG_WORKERS"),
           os.environ.get("EAGLELOG_PURE_PYTHON"))
    scan._PURE = pure
    if min_parallel is not None:
        parallel.MIN_PARALLEL = min_parallel
    os.environ["EAGLELOG_WORKERS"] = str(workers)
    if pure:
        os.environ["EAGLELOG_PURE_PYTHON"] = "1"
    else:
        os.environ.pop("EAGLELOG_PURE_PYTHON", None)
    kw = {"chunk_size": chunk} if chunk else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            log = api.parse([path], cache=False, base_date="2026-03-02", **kw)
        out = {"tables": {t: log.table(table_from_cli(t)) for t in SGLANG_TABLES},
               "overview": render_object(overview(log), "json"),
               "diagnostics": sorted(collections.Counter(
                   (d.kind, d.severity, d.line_no or 0, d.more) for d in log.diagnostics).items()),
               "messages": sorted((d.line_no or 0, d.kind, d.message) for d in log.diagnostics)}
    except EaglelogError as e:
        out = {"error": str(e)}
    except Exception as e:          # noqa: BLE001 - reported as the variant's result
        tb = traceback.TracebackException.from_exception(e)
        out = {"exception": f"{type(e).__name__} @ {_strip_line(eaglelog_frame(tb))}: "
                            f"{str(e)[:200]}"}
    finally:
        scan._PURE, parallel.MIN_PARALLEL = old[0], old[1]
        for k, v in (("EAGLELOG_WORKERS", old[2]), ("EAGLELOG_PURE_PYTHON", old[3])):
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return out


def compare_snapshots(ref: dict, got: dict) -> tuple[str, str] | None:
    """(aspect, detail) of the first difference, or None."""
    if set(ref) != set(got) or "error" in ref or "exception" in ref:
        if ref == got:
            return None
        def said(o):
            return str(o.get('error') or o.get('exception') or 'tables')[:200]
        return "outcome", f"reference: {said(ref)}\n    variant:   {said(got)}"
    from eaglelog.report import render_frame

    for t in SGLANG_TABLES:
        fa, fb = ref["tables"][t], got["tables"][t]
        # dtypes by name: a categorical's unused categories (C: every known label, Python: the
        # ones seen) print nowhere
        da, db = [str(x) for x in fa.dtypes], [str(x) for x in fb.dtypes]
        if list(fa.columns) == list(fb.columns) and da == db and fa.equals(fb):
            continue                   # the same frame prints the same JSON
        a, b = render_frame(fa, "json"), render_frame(fb, "json")
        if a != b:
            ra, rb = json.loads(a), json.loads(b)
            if len(ra) != len(rb):
                la = {r.get("line_no") for r in ra}
                lb = {r.get("line_no") for r in rb}
                return f"rows:{t}", (f"{len(ra)} vs {len(rb)} rows; lines only in the reference "
                                     f"{sorted(la - lb)[:5]}, only in the variant "
                                     f"{sorted(lb - la)[:5]}")
            for x, y in zip(ra, rb):
                if x != y:
                    cols = [k for k in set(x) | set(y) if x.get(k) != y.get(k)]
                    return f"values:{t}", (f"line {x.get('line_no')}: " + "; ".join(
                        f"{k}: {x.get(k)!r} vs {y.get(k)!r}" for k in sorted(cols)[:4]))
            return f"table:{t}", "same rows, other JSON"
        if da != db:
            return f"dtypes:{t}", "; ".join(f"{c}: {x} vs {y}" for c, x, y in zip(
                fa.columns, da, db) if x != y)[:300]
    if ref["diagnostics"] != got["diagnostics"]:
        a, b = collections.Counter(dict(ref["diagnostics"])), \
            collections.Counter(dict(got["diagnostics"]))
        only_a, only_b = list((a - b).items())[:3], list((b - a).items())[:3]
        return "diagnostics", f"only in the reference {only_a}; only in the variant {only_b}"
    if ref["overview"] != got["overview"]:
        ra, rb = json.loads(ref["overview"]), json.loads(got["overview"])
        diff = [(k, ra[0].get(k), rb[0].get(k)) for k in ra[0] if ra[0].get(k) != rb[0].get(k)] \
            if ra and rb else [("overview", ra, rb)]
        return "overview", "; ".join(f"{k}: {x!r} vs {y!r}" for k, x, y in diff[:3])[:300]
    if ref["messages"] != got["messages"]:
        for x, y in zip(ref["messages"], got["messages"]):
            if x != y:
                return "message", f"{x!r}\n    vs {y!r}"
        return "message", "different number of messages"
    return None


VARIANTS = {
    "pure-python": dict(pure=True),
    "small-chunks": dict(chunk=None),            # chunk size drawn per case
    "workers-2": dict(workers=2, min_parallel=0),
    "workers-3": dict(workers=3, min_parallel=0),
}


def differential(path: str, r: random.Random, variants=("pure-python", "small-chunks",
                                                        "workers-2"),
                 timeout: float | None = None) -> list[Finding]:
    """Scan one input under several configurations; each must match the reference (C
    accelerator, sequential, default chunks)."""
    argv = ["parse", "-f", "json", path]      # a timeout: the command that scans it the same way
    try:
        with time_limit(timeout):
            ref = snapshot(path)
    except FuzzTimeout as e:
        where = e.args[1] if len(e.args) > 1 else "?"
        return [Finding("timeout", f"timeout @ {_strip_line(where)}", argv,
                        f"differential reference scan: {e.args[0]}", where)]
    found = []
    for name in variants:
        kw = dict(VARIANTS[name])
        if name == "small-chunks":
            kw["chunk"] = r.choice((1 << 10, 4093, 1 << 14, 65537))
        try:
            with time_limit(timeout):
                got = snapshot(path, **kw)
        except FuzzTimeout as e:
            where = e.args[1] if len(e.args) > 1 else "?"
            found.append(Finding("timeout", f"timeout @ {_strip_line(where)}", argv,
                                 f"differential {name} scan: {e.args[0]}", where))
            continue
        diff = compare_snapshots(ref, got)
        if diff:
            aspect, detail = diff
            label = name + (f"(chunk {kw['chunk']})" if name == "small-chunks" else "")
            sig_detail = norm(detail.split(";")[0].split(":")[0], 30) if \
                aspect in ("outcome", "message") else ""
            found.append(Finding(f"diff-{name}", f"{name} differs: {aspect}"
                                 + (f": {sig_detail}" if sig_detail else ""),
                                 ["parse", "-f", "json", "--table", "T", path],
                                 f"{label}: {detail}"))
    return found


LARGE_OPS = ("number", "number_column", "flip", "truncate", "lines", "date", "control", "splice")


def large_input(r: random.Random, size: int, mutated: int = 8, fast: bool = False) -> bytes:
    """An SGLang log of at least ``size`` bytes: the SGLang samples concatenated, ``mutated``
    of the copies damaged by line-level mutations (no long lines: the point is many records
    and parallel ranges whose cuts fall anywhere)."""
    corp = load_corpus()
    samples = sorted(n for n, (_, f) in corp.items() if n.startswith("sample_logs/") and
                     f == "sglang")
    if fast:      # eagle3_2step's prefixed EAGLE3_PROF headers take the Python parser: copies
        samples = [n for n in samples if "2step" not in n]  # of it make the merge slow
    # the lines the C accelerator reads (decode, prefill, EAGLE3_PROF blocks): Finish and
    # server_args lines take the Python parser, and a log made of them is slow to build, not
    # large in the sense that matters (many rows per range); the first copy keeps them all
    bodies = {}
    for name in samples:
        text = corp[name][0]
        bodies[name] = b"\n".join(ln for ln in text.split(b"\n") if b"Finish: obj=" not in ln
                                  and b"server_args=" not in ln)
    first = corp[r.choice(samples)][0]
    parts, n = [first], len(first)
    while n < size:
        p = bodies[r.choice(samples)]
        parts.append(p)
        n += len(p)
    for k in r.sample(range(len(parts)), min(mutated, len(parts))):
        data, _ops = Mutator(r, big=False, only=LARGE_OPS).mutate(parts[k])
        parts[k] = data if data.endswith(b"\n") else data + b"\n"
    return b"".join(parts)


# ------------------------------------------------------------------------------------- cases

_KEY_RX = re.compile(rb"[(,]\s*([A-Za-z_]\w*)=")


def config_keys_of(*datas: bytes) -> frozenset:
    """The server_args keys the inputs print (their columns echo the log's values)."""
    keys = set()
    for data in datas:
        for ln in data.split(b"\n"):
            if b"server_args=" in ln or b"ServerArgs(" in ln:
                keys.update(k.decode() for k in _KEY_RX.findall(ln))
    return frozenset(keys)


@dataclasses.dataclass
class CaseResult:
    seed: int
    index: int
    inputs: list[Input]
    invocations: list[tuple[str, list[str], int | None, float]]
    findings: list[Finding]
    dir: str

    def report(self) -> str:
        """What a failing test prints: the seed, the command lines, a reproduction."""
        cmds = {c for c, *_ in self.invocations if not c.startswith("differential")}
        only = f" --command {cmds.pop()} --no-diff" if len(cmds) == 1 else ""
        out = [f"fuzz case seed={self.seed} index={self.index} "
               f"(rebuild: python benchmarks/fuzz.py --seed {self.seed} --only {self.index}"
               f"{only}{' --stable' if STABLE else ''} --jobs 1 --out DIR)"]
        for inp in self.inputs:
            p = os.path.join(self.dir, inp.name)
            out.append(f"  input {p}  from {inp.origin}: {'; '.join(inp.ops) or 'unmutated'}")
            out.append("    " + first_difference(inp.base, inp.plain).replace("\n", "\n    "))
        for fd in self.findings:
            out.append("  " + str(fd).replace("\n", "\n  "))
        return "\n".join(out)


def case_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"eaglelog-fuzz:{seed}:{index}")


def run_case(seed: int, index: int, workdir: str, commands: list[str] | None = None,
             n_commands: int = 3, diff: bool = True, big: bool = True,
             timeout: float | None = 120, large: bool = False) -> CaseResult:
    """Build case (seed, index) in ``workdir`` and run its commands and the differential."""
    r = case_rng(seed, index)
    d = Path(workdir)
    d.mkdir(parents=True, exist_ok=True)
    if commands is None:
        names = list(WEIGHTS)
        commands = r.choices(names, weights=[WEIGHTS[n] for n in names], k=n_commands)
    # the analyses need runs long enough to analyse: mostly (mutated) samples; parse alone
    # takes the fixtures' odd layouts as often
    analysis = any(c != "parse" for c in commands)
    fam = r.choice(("sglang",) * (6 if analysis else 3) + ("vllm", "others", None))
    sample_p, window_p = (0.85, 0.2) if analysis else (0.5, 0.35)
    a = make_input(r, "a.log", fam, big=big, sample_p=sample_p, window_p=window_p)
    b = make_input(r, "b.log", a.family if r.random() < 0.8 else None,
                   mutate=r.random() < 0.7, big=False, compress_p=0.05, sample_p=sample_p,
                   window_p=window_p)
    # --baseline-log: a run without speculation (mutated or not)
    base = make_input(r, "base.log", mutate=r.random() < 0.6, big=False, compress_p=0.05,
                      window_p=0.1, names=["sample_logs/baseline.log",
                                           "sample_logs/batch_baseline.log"])
    inputs = [a, b, base]
    for inp in inputs:
        (d / inp.name).write_bytes(inp.data)
    env = {"XDG_CACHE_HOME": str(d / "xdg")}
    keys = config_keys_of(a.plain, b.plain, base.plain,
                          (ROOT / "sample_logs" / "sweep" / "steps3.log").read_bytes())
    invs, found = [], []
    for command in commands:
        steps = steps_for(command, r, str(d / "a.log"), str(d / "b.log"), d, a,
                          str(d / "base.log"))
        stdin_mode = command in ("parse", "summary", "reconcile") and r.random() < 0.05
        for k, st in enumerate(steps):
            if k == 1 and command == "export" and (d / "export.json").exists() and \
                    r.random() < 0.25:
                mutate_export(r, str(d / "export.json"))
            argv = st.argv
            stdin = None
            if stdin_mode:
                argv = [x if x != str(d / "a.log") else "-" for x in argv]
                stdin = a.data
            inv = invoke(argv, env, stdin, timeout)
            fs = check(inv, st.fmt, st.table, st.files, keys)
            for fd in fs:
                if fd.kind == "internal-error":        # the traceback, for its signature
                    again = invoke(["-v", *argv], env, stdin, timeout)
                    if again.tb is not None:
                        fd.where = eaglelog_frame(again.tb)
                        fd.signature = (f"internal {type(again.exc).__name__} @ "
                                        f"{_strip_line(fd.where)}")
                        fd.detail += "\n  " + "".join(again.tb.format()).strip().replace(
                            "\n", "\n  ")[-1500:]
            found += fs
            invs.append((command, argv, inv.code, inv.seconds,
                         next((ln for ln in inv.stderr.splitlines()
                               if ln.startswith("eaglelog: error")), "")[:200]))
            for p in st.files:
                if os.path.exists(p) and not p.endswith("export.json"):
                    os.remove(p)
            if inv.code not in (0, 3) and command == "export":
                break
    if diff and a.family == "sglang" or diff and r.random() < 0.15:
        t0 = time.perf_counter()
        # the reference, pure Python, and one of the chunk / worker variants
        found += differential(str(d / a.name), r,
                              ("pure-python", r.choice(("small-chunks", "workers-2",
                                                        "workers-2", "workers-3"))), timeout)
        invs.append(("differential", ["parse", "-f", "json", "--table", "T", a.name], None,
                     time.perf_counter() - t0))
    if large:
        from eaglelog.io import parallel
        data = large_input(r, parallel.MIN_PARALLEL + (1 << 20))
        p = d / "large.log"
        p.write_bytes(data)
        ref = snapshot(str(p), workers=1)
        for w in (2, 3):
            got = snapshot(str(p), workers=w)
            dd = compare_snapshots(ref, got)
            if dd:
                found.append(Finding(f"diff-workers-{w}-large", f"workers-{w} on a "
                             f"{len(data) >> 20} MiB log differs: {dd[0]}",
                             ["parse", "-f", "json", "--table", "T", str(p)], dd[1]))
        invs.append(("differential-large", ["parse", str(p)], None, 0.0))
        t0 = time.perf_counter()
        found += light_differential(r, d, timeout)
        invs.append(("differential-light-large", ["summary", "restarts-a.log",
                                                  "restarts-b.log"], None,
                     time.perf_counter() - t0))
        p.unlink()
    return CaseResult(seed, index, inputs, invs, found, str(d))


def restarts_input(r: random.Random, size: int) -> bytes:
    """An SGLang log of at least ``size`` bytes of whole sample logs, each with its server_args
    line: a server start-up per copy (a run per start-up)."""
    corp = load_corpus()
    samples = sorted(n for n, (_, f) in corp.items() if n.startswith("sample_logs/") and
                     f == "sglang" and b"server_args=" in corp[n][0])
    parts, n = [], 0
    while n < size:
        p = corp[r.choice(samples)][0]
        parts.append(p if p.endswith(b"\n") else p + b"\n")
        n += len(parts[-1])
    return b"".join(parts)


def light_differential(r: random.Random, d: Path, timeout: float | None) -> list[Finding]:
    """Two inputs above the batch's size, with restarts (a run is then one start-up of one
    input, cut from tables the inputs share) and unmutated (the decode table stays a Frame: a
    line that takes the Python parser makes it pandas'): the single-use summary over Frames
    (--no-cache) against the same over pandas' tables (a fresh table cache) — the same
    stdout, stderr and exit code.  (Two such logs once ended in an internal error,
    model._take.)"""
    from eaglelog.io.batch import SMALL
    paths = [d / "restarts-a.log", d / "restarts-b.log"]
    for q in paths:
        q.write_bytes(restarts_input(r, SMALL + (1 << 20)))
    argv = ["summary", "--baseline-toks", "90", *map(str, paths)]
    light = invoke(["--no-cache", *argv], timeout=timeout)
    heavy = invoke(argv, env={"EAGLELOG_NO_CACHE": "", "XDG_CACHE_HOME": str(d / "xdg-large")},
                   timeout=timeout)
    found = check(light) + check(heavy)
    if not found and (light.code, light.stdout, light.stderr) != \
            (heavy.code, heavy.stdout, heavy.stderr):
        what = "exit code" if light.code != heavy.code else \
            "stdout" if light.stdout != heavy.stdout else "stderr"
        a, b = (light.stdout, heavy.stdout) if what == "stdout" else \
            (light.stderr, heavy.stderr)
        found.append(Finding("diff-light-large", f"light summary differs in {what}",
                             ["--no-cache", *argv],
                             first_difference(b.encode(), a.encode()) if what != "exit code"
                             else f"{light.code} vs {heavy.code}"))
    for q in paths:
        q.unlink()
    return found


# ------------------------------------------------------------------------------- reduction

def still_fails(finding: Finding, workdir: Path, inputs: dict[str, bytes],
                timeout: float = 60) -> bool:
    if finding.kind == "timeout":
        timeout = min(timeout, REDUCE_TIMEOUT)
    for name, data in inputs.items():
        (workdir / name).write_bytes(data)
    if finding.kind.startswith("diff-"):
        variant = finding.kind[len("diff-"):]
        if variant.endswith("-large"):
            return False
        kw = dict(VARIANTS.get(variant, {}))
        if variant == "small-chunks":
            m = re.search(r"chunk (\d+)", finding.detail)
            kw["chunk"] = int(m.group(1)) if m else 4093
        ref = snapshot(str(workdir / "a.log"))
        dd = compare_snapshots(ref, snapshot(str(workdir / "a.log"), **kw))
        return dd is not None and finding.signature.startswith(f"{variant} differs: {dd[0]}")
    argv = finding.argv
    env = {"XDG_CACHE_HOME": str(workdir / "xdg")}
    inv = invoke(argv, env, None, timeout)
    fmt = argv[argv.index("-f") + 1] if "-f" in argv else None
    table = argv[argv.index("--table") + 1] if "--table" in argv else None
    files = {}
    if "-o" in argv:
        out = argv[argv.index("-o") + 1]
        files[out] = {"json": "json", "html": "html", "parquet": "parquet"}.get(
            out.rsplit(".", 1)[-1], "image")
    keys = config_keys_of(*[decompress_any(v) for v in inputs.values()],
                          (ROOT / "sample_logs" / "sweep" / "steps3.log").read_bytes())
    for fd in check(inv, fmt, table, files, keys):
        if fd.kind == finding.kind:
            if fd.kind == "internal-error":
                return True if finding.signature.startswith("internal") else False
            if fd.signature == finding.signature:
                return True
    return False


REDUCE_TIMEOUT = 8      # seconds: a candidate of a timeout finding that runs longer still hangs
REDUCE_TIMEOUT_RUNS = 24   # a run that still hangs costs REDUCE_TIMEOUT: fewer of them


def reduce_input(finding: Finding, workdir: Path, inputs: dict[str, bytes], name: str,
                 budget: int = 120) -> bytes:
    """ddmin over the lines of ``inputs[name]`` (then over the bytes of the longest remaining
    line) while ``finding`` still reproduces; at most ``budget`` runs."""
    if finding.kind == "timeout":
        budget = min(budget, REDUCE_TIMEOUT_RUNS)
    data = inputs[name]
    lines = data.split(b"\n")
    runs = 0

    def test(cand_lines):
        nonlocal runs
        runs += 1
        trial = dict(inputs)
        trial[name] = b"\n".join(cand_lines)
        return still_fails(finding, workdir, trial)

    n = 2
    while len(lines) >= 2 and runs < budget:
        chunk = max(1, len(lines) // n)
        reduced = False
        for i in range(0, len(lines), chunk):
            if runs >= budget:
                break
            cand = lines[:i] + lines[i + chunk:]
            if cand and test(cand):
                lines = cand
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(lines), n * 2)
    # shorten the longest line (long-line findings need its length: keep halves that still fail)
    if lines and runs < budget:
        k = max(range(len(lines)), key=lambda j: len(lines[j]))
        ln = lines[k]
        step = len(ln) // 2
        while step >= 4 and runs < budget:
            done = False
            for cut in range(0, len(ln), step):
                if runs >= budget:
                    break
                cand = ln[:cut] + ln[cut + step:]
                trial = lines[:k] + [cand] + lines[k + 1:]
                if test(trial):
                    ln, done = cand, True
                    lines = trial
                    break
            if not done:
                step //= 2
    for nm, dt in inputs.items():            # leave the case's files as they were
        (workdir / nm).write_bytes(dt)
    return b"\n".join(lines)


# -------------------------------------------------------------------------------- the long run

def _worker_init(stable: bool = False):
    global STABLE
    STABLE = stable
    os.environ["EAGLELOG_NO_CACHE"] = "1"
    try:
        os.nice(10)
    except OSError:
        pass
    for _ in range(60):       # the checkout is shared: a module mid-edit may not import
        try:
            warm_up()
            return
        except Exception:     # noqa: BLE001 - wait for the edit to finish
            for m in [m for m in sys.modules if m == "eaglelog" or m.startswith("eaglelog.")]:
                del sys.modules[m]
            time.sleep(20)
    warm_up()


def _run_one(args):
    seed, index, out, large, timeout, command, diff = args
    tmp = tempfile.mkdtemp(prefix=f"fz-{seed}-{index}-")
    try:
        res = run_case(seed, index, tmp, large=large, timeout=timeout, diff=diff,
                       commands=[command] if command else None)
        saved = {}
        for fd in res.findings:
            saved.setdefault(fd.signature, fd)
        payload = {
            "seed": seed, "index": index,
            "inputs": [{"name": i.name, "origin": i.origin, "ops": i.ops, "family": i.family,
                        "compressed": i.compressed, "bytes": len(i.data)} for i in res.inputs],
            "invocations": [(c, a, code, round(s, 3), *rest)
                            for c, a, code, s, *rest in res.invocations],
            "findings": [dataclasses.asdict(f) for f in res.findings],
        }
        if res.findings and out:
            # keep the inputs of this case for the first repro of each signature (the parent
            # decides which to keep; here the case is saved under a case directory)
            dest = Path(out) / "cases" / f"{seed}-{index}"
            dest.mkdir(parents=True, exist_ok=True)
            for i in res.inputs:
                shutil.copy(os.path.join(tmp, i.name), dest / i.name)
                (dest / (i.name + ".orig")).write_bytes(i.base)
            if os.path.exists(os.path.join(tmp, "export.json")):
                shutil.copy(os.path.join(tmp, "export.json"), dest / "export.json")
            (dest / "case.json").write_text(json.dumps(payload, indent=1, default=str))
            payload["dir"] = str(dest)
        return payload
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def retarget(argv: list[str], old: str, new: str) -> list[str]:
    return [a.replace(old, new) if isinstance(a, str) else a for a in argv]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--only", type=int, default=None, help="run this one case index")
    ap.add_argument("--command", choices=COMMANDS, default=None,
                    help="run only this command in each case (as tests/test_fuzz.py does)")
    ap.add_argument("--no-diff", action="store_true", help="no differential")
    ap.add_argument("--stable", action="store_true",
                    help="draw from the samples and STABLE_FIXTURES only (tests/test_fuzz.py's "
                         "corpus)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="/tmp/eaglelog-fuzz",
                    help="directory for the repro inputs and the results (results.jsonl)")
    ap.add_argument("--large-every", type=int, default=150,
                    help="every Nth case also builds a >= 32 MiB SGLang log for the 1-vs-2/3 "
                         "workers differential with the real threshold, and two 9 MiB logs "
                         "with restarts for the summary over Frames vs pandas' tables (0: "
                         "never)")
    ap.add_argument("--timeout", type=float, default=30,
                    help="seconds per invocation and per differential scan (a hang is a "
                         "finding)")
    ap.add_argument("--reduce", type=int, default=120,
                    help="runs spent reducing the first repro of each signature (0: none)")
    ap.add_argument("--summarize", action="store_true",
                    help="run nothing: summarize (and reduce) the cases in --out/results.jsonl "
                         "(the batches of several runs)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.summarize:
        results = [json.loads(ln) for ln in open(out / "results.jsonl") if ln.strip()]
        _worker_init(args.stable)
        summarize(results, out, sum(x[3] for r in results for x in r["invocations"]), args)
        return
    indices = [args.only] if args.only is not None else \
        list(range(args.start, args.start + args.cases))
    if (out / "results.jsonl").exists():      # a batch run again goes on where it stopped
        done = {(r["seed"], r["index"]) for r in map(json.loads, open(out / "results.jsonl"))}
        indices = [i for i in indices if (args.seed, i) not in done]
    todo = [(args.seed, i, str(out), bool(args.large_every) and i % args.large_every ==
             args.large_every - 1, args.timeout, args.command, not args.no_diff)
            for i in indices]
    t0 = time.time()
    results = []
    with open(out / "results.jsonl", "a") as log:
        if args.jobs > 1 and len(todo) > 1:
            import multiprocessing as mp
            ctx = mp.get_context("spawn")
            with ctx.Pool(args.jobs, initializer=_worker_init, initargs=(args.stable,),
                          maxtasksperchild=40) as pool:
                for k, res in enumerate(pool.imap_unordered(_run_one, todo)):
                    results.append(res)
                    log.write(json.dumps(res, default=str) + "\n")
                    log.flush()
                    if (k + 1) % 50 == 0:
                        print(f"  {k + 1}/{len(todo)} cases, {time.time() - t0:.0f} s",
                              file=sys.stderr)
        else:
            _worker_init(args.stable)
            for k, t in enumerate(todo):
                res = _run_one(t)
                results.append(res)
                log.write(json.dumps(res, default=str) + "\n")
                log.flush()
    summarize(results, out, time.time() - t0, args)


def summarize(results: list[dict], out: Path, seconds: float, args) -> None:
    per_cmd = collections.Counter()
    codes = collections.defaultdict(collections.Counter)
    for res in results:
        for c, argv, code, *_ in res["invocations"]:
            per_cmd[c] += 1
            codes[c][code] += 1
    groups: dict[str, list] = {}
    for res in sorted(results, key=lambda x: x["index"]):
        for fd in res["findings"]:
            groups.setdefault(fd["signature"], []).append((res, fd))
    print(f"\n{len(results)} cases, {sum(per_cmd.values())} invocations in {seconds:.0f} s "
          f"(seed {args.seed})")
    print(f"{'command':<20} {'runs':>6}   exit codes")
    for c in sorted(per_cmd):
        print(f"{c:<20} {per_cmd[c]:>6}   " + ", ".join(
            f"{k}: {v}" for k, v in sorted(codes[c].items(), key=lambda kv: str(kv[0]))))
    kinds = collections.Counter(fd["kind"] for res in results for fd in res["findings"])
    print(f"\n{sum(kinds.values())} findings in {len(groups)} signatures; by kind: " +
          ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
    summary = []
    for sig, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        res, fd = items[0]
        cases = len({(r["seed"], r["index"]) for r, _ in items})
        entry = {"signature": sig, "kind": fd["kind"], "count": len(items), "cases": cases,
                 "first": f"{res['seed']}:{res['index']}", "argv": fd["argv"],
                 "detail": fd["detail"], "where": fd["where"], "dir": res.get("dir"),
                 "ops": [i["ops"] for i in res["inputs"]]}
        print(f"\n{len(items):>5}  {sig}\n       first: case {res['seed']}:{res['index']}  "
              f"eaglelog {' '.join(fd['argv'])}\n       " +
              fd["detail"].split("\n")[0][:200] +
              (f"\n       at {fd['where']}" if fd["where"] else ""))
        if args.reduce and res.get("dir"):
            red = reduce_saved(fd, Path(res["dir"]), args.reduce)
            if red:
                entry["reduced"] = red
                print(f"       reduced: {red}")
        summary.append(entry)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(f"\nsaved under {out} (summary.json, results.jsonl, cases/)")


def reduce_saved(fd: dict, case_dir: Path, budget: int) -> str | None:
    """Reduce the saved case's input a.log (or b.log) for one finding; write reduced-<n>.log."""
    warm_up()
    finding = Finding(**fd)
    old_dir = os.path.dirname(next((a for a in finding.argv if a.endswith("a.log")), ""))
    if not old_dir:
        return None
    work = Path(tempfile.mkdtemp(prefix="fz-reduce-"))
    try:
        finding.argv = retarget(finding.argv, old_dir, str(work))
        inputs = {p.name: p.read_bytes() for p in case_dir.glob("*.log")}
        if (case_dir / "export.json").exists():
            (work / "export.json").write_bytes((case_dir / "export.json").read_bytes())
        if not still_fails(finding, work, inputs):
            return "no longer reproduces on the current tree"
        target = "a.log" if any(a.endswith("a.log") for a in finding.argv) else "b.log"
        if decompress_any(inputs[target]) != inputs[target]:
            return "reproduces (compressed input: not reduced)"
        red = reduce_input(finding, work, inputs, target, budget)
        slug = re.sub(r"[^\w]+", "-", finding.signature)[:60].strip("-")
        dest = case_dir / f"reduced-{slug}.log"
        dest.write_bytes(red)
        return f"{dest} ({len(red.splitlines())} lines, {len(red):,} bytes)"
    except Exception as e:            # noqa: BLE001 - reduction is best effort
        return f"reduction failed: {type(e).__name__}: {e}"
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
