#!/usr/bin/env python3
"""What `eaglelog summary` costs on this machine, paired with a pinned one-liner (issue 37).

    python benchmarks/summary_cost.py                           # logs of 10, 100, 1000, 2000 MB
    python benchmarks/summary_cost.py --sizes 10,30 --rounds 2  # a quick check of the script
    python benchmarks/summary_cost.py --log server.log          # one existing log, no growth
    python benchmarks/summary_cost.py --keep ~/bench-logs --json > cost.json

Per log, the commands below run in --rounds rounds (default 3), each command once a round as its
own process, the order rotating from round to round (reference, summary, parse, … then summary,
parse, …, reference …), after one untimed warm-up round on the first log. The 1-minute load
average is read before and after each round. Rows:

  reference  LC_ALL=C grep -oP 'accept len: \\K[\\d.]+' LOG | awk '{s+=$1} END {print s/NR}'
  summary    eaglelog summary --no-cache --baseline-toks 90 LOG
  parse      eaglelog parse --no-cache LOG
  polars     one pass, str.extract + group_by #running-req  (only if polars is importable)
  duckdb     one pass, regexp_extract + GROUP BY            (only if duckdb is importable)

Every stdout is a pipe read and discarded (not /dev/null: GNU grep stops at the first match there).
The numbers:

  wall s      median over the rounds of the whole process's wall time (start to reaped)
  CPU s       median of user + sys from os.wait4's rusage: the shell and every child it waited
              for, so a pipeline's grep and awk are summed, as are all of eaglelog's threads
  peak MiB    the largest peak RSS over the rounds, of the largest single process (for a
              pipeline, its largest member, not the sum): GNU time's figure for the command where
              GNU time is installed, else ru_maxrss, which cannot go below this script's own peak
              (wholeproc.py says why; the header line says which)
  ÷ ref       the median over rounds of (this row / the reference in the same round): paired,
              so a machine that drifts between rounds moves both

A command that fails or passes --timeout is reported in its row (how many runs failed and the end
of its stderr); its other runs still count. The growth table is `summary` by size: "records" are
decode lines (occurrences of b'Decode batch' in the file, counted by a byte scan), and the bytes
and µs per record are above a fixed part taken from the smallest size: (value − value at the
smallest size) / (records − records at the smallest size), with a least-squares line over all
sizes as a cross-check. The 10 MB row of the startup figures is the same 10 MB block's `summary`
(cold: no eaglelog cache; the page cache is warm, as the record count has just read the file).

Logs are written by the workspace's ../shared/bench/genlog.py (synthetic, SGLang-like) into a
temporary directory removed at the end, or into --keep DIR, where a log of a size already there
is reused. eaglelog runs from its bytecode as installed (see wholeproc.bytecode_as_installed;
--no-bytecode to keep PYTHONDONTWRITEBYTECODE). Progress and warnings go to stderr, the tables
(or with --json, one JSON document with every run's raw figures) to stdout. The machine is shared:
quote medians and paired ratios with the load average, not single times.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field

from wholeproc import (GENLOG, HERE, PEAK_METHOD, Run, bytecode_as_installed, eaglelog_command,
                       rss_floor, run)

DEFAULT_SIZES = "10,100,1000,2000"
MARKER = b"Decode batch"

POLARS = r"""
import sys, polars as pl
lines = pl.scan_csv(sys.argv[1], has_header=False, separator="\x1f", quote_char=None,
                    new_columns=["line"], infer_schema_length=0)
line = pl.col("line")
out = (lines.filter(line.str.contains("Decode batch", literal=True))
       .select(line.str.extract(r"#running-req: (\d+)", 1).cast(pl.Int64).alias("running_req"),
               line.str.extract(r"accept len: ([\d.]+)", 1).cast(pl.Float64).alias("accept_len"),
               line.str.extract(r"gen throughput \(token/s\): ([\d.]+)", 1)
                   .cast(pl.Float64).alias("gen_throughput"))
       .group_by("running_req")
       .agg(pl.len().alias("n"), pl.col("accept_len").mean(), pl.col("gen_throughput").mean())
       .sort("running_req").collect())
print(out)
"""

DUCKDB = r"""
import sys, duckdb
path, sep = sys.argv[1].replace("'", "''"), chr(0x1f)
print(duckdb.sql(rf'''
  SELECT running_req, count(*) AS n, avg(accept_len) AS accept_len, avg(tput) AS gen_throughput
  FROM (SELECT CAST(regexp_extract(line, '#running-req: (\d+)', 1) AS INTEGER) AS running_req,
               CAST(regexp_extract(line, 'accept len: ([\d.]+)', 1) AS DOUBLE) AS accept_len,
               CAST(regexp_extract(line, 'gen throughput \(token/s\): ([\d.]+)', 1) AS DOUBLE)
                 AS tput
        FROM read_csv('{path}', columns={{'line': 'VARCHAR'}}, header=false, delim='{sep}',
                      quote='', escape='', auto_detect=false)
        WHERE contains(line, 'Decode batch'))
  GROUP BY running_req ORDER BY running_req''').fetchall())
"""


@dataclass(frozen=True)
class Command:
    key: str
    template: str       # a shell command with {log} (the quoted path) and {eaglelog}
    label: str = ""     # as printed; by default the template with LOG and eaglelog

    def shell(self, log: str) -> str:
        return self.template.format(log=shlex.quote(log), eaglelog=eaglelog_command())

    def shown(self) -> str:
        return self.label or self.template.format(log="LOG", eaglelog="eaglelog")


def commands() -> tuple[list[Command], list[str]]:
    """The rows to time, and a note for each optional row left out."""
    rows = [
        Command("reference", "LC_ALL=C grep -oP 'accept len: \\K[\\d.]+' {log} | "
                "awk '{{s+=$1}} END {{print s/NR}}'"),
        Command("summary", "{eaglelog} summary --no-cache --baseline-toks 90 {log}"),
        Command("parse", "{eaglelog} parse --no-cache {log}"),
    ]
    notes = []
    for key, script, what in (("polars", POLARS, "one-pass str.extract + group_by"),
                              ("duckdb", DUCKDB, "one-pass regexp_extract + GROUP BY")):
        if importlib.util.find_spec(key) is None:
            notes.append(f"{key} row skipped: {key} is not importable by {sys.executable}")
            continue
        code = shlex.quote(script).replace("{", "{{").replace("}", "}}")
        rows.append(Command(key, f"{shlex.quote(sys.executable)} -c {code} {{log}}",
                            f"{key} {what} (count, mean accept len and throughput by "
                            "#running-req)"))
    return rows, notes


@dataclass
class Row:
    command: Command
    runs: list[Run] = field(default_factory=list)   # one per round, in round order

    def ok_runs(self) -> list[Run]:
        return [r for r in self.runs if r.ok]

    def median(self, what: str) -> float | None:
        got = [getattr(r, what) for r in self.ok_runs()]
        return statistics.median(got) if got else None

    def peak(self) -> float | None:
        got = [r.rss_mib for r in self.ok_runs()]
        return max(got) if got else None

    def failures(self) -> str:
        bad = [r for r in self.runs if not r.ok]
        if not bad:
            return ""
        return f"{len(bad)} of {len(self.runs)} runs failed ({bad[0].failure()})"


@dataclass
class Block:
    """Every row of one log over the rounds."""
    log: str
    name: str
    size_bytes: int
    records: int
    rows: list[Row]
    rounds: list[dict] = field(default_factory=list)   # order and load average of each round

    def row(self, key: str) -> Row | None:
        return next((r for r in self.rows if r.command.key == key), None)

    def ratio(self, row: Row, what: str) -> float | None:
        """Median over rounds of row / reference, both from the same round."""
        ref = self.row("reference")
        pairs = [getattr(a, what) / getattr(b, what)
                 for a, b in zip(row.runs, ref.runs)
                 if a.ok and b.ok and getattr(b, what) > 0]
        return statistics.median(pairs) if pairs else None


def count_records(path: str) -> int:
    """Occurrences of MARKER in the file, read in 16 MiB chunks (this also warms the page cache)."""
    n, tail = 0, b""
    with open(path, "rb") as f:
        while chunk := f.read(16 << 20):
            buf = tail + chunk
            n += buf.count(MARKER)
            # keep the last len-1 bytes: a marker split across chunks is counted once, whole
            tail = buf[-(len(MARKER) - 1):]
    return n


def generated_log(directory: str, mb: float, genlog: str) -> str:
    """The genlog log of about ``mb`` MB in ``directory``, written unless it is already there."""
    path = os.path.join(directory, f"genlog-{mb:g}MB.log")
    if os.path.exists(path):
        return path
    if not os.path.exists(genlog):
        sys.exit(f"summary_cost.py: {genlog} (the workspace's synthetic log generator) is not "
                 "here; give --genlog PATH, or --log FILE and --sizes ''")
    say(f"generating {path} …")
    part = path + ".part"     # renamed when complete: an interrupted write is never reused
    subprocess.run([sys.executable, genlog, part, str(mb)], check=True)
    os.replace(part, path)
    return path


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


WARNED: list[bool] = []     # the load warning is given once


def load1() -> float:
    return os.getloadavg()[0]


def time_block(log: str, name: str, rows: list[Command], rounds: int, timeout: float,
               warmup: bool) -> Block:
    size = os.path.getsize(log)
    records = count_records(log)
    block = Block(log, name, size, records, [Row(c) for c in rows])
    say(f"{name}: {size / 1e6:,.1f} MB, {records:,} decode lines")
    if warmup:
        say("  warm-up round (not counted)")
        for c in rows:
            run(c.shell(log), timeout)
    for k in range(rounds):
        order = block.rows[k % len(rows):] + block.rows[:k % len(rows)]
        before = load1()
        if before > 0.5 * (os.cpu_count() or 1) and not WARNED:
            WARNED.append(True)
            say(f"  warning: load average {before:.2f} on {os.cpu_count()} cores: other work is "
                "running; quote the medians and paired ratios with the load, or run again on a "
                "quiet machine")
        times = {}
        for row in order:
            r = run(row.command.shell(log), timeout)
            row.runs.append(r)
            times[row.command.key] = r
        after = load1()
        block.rounds.append({"order": [r.command.key for r in order],
                             "load_before": before, "load_after": after})
        say(f"  round {k + 1}/{rounds}: " + ", ".join(
            f"{key} {r.wall:.2f} s" + ("" if r.ok else " FAILED") for key, r in times.items())
            + f"  (load {before:.2f} → {after:.2f})")
    for row in block.rows:
        if row.failures():
            say(f"  warning: {row.command.key}: {row.failures()}")
    return block


def fmt(x: float | None, spec: str, suffix: str = "") -> str:
    return "—" if x is None else f"{x:{spec}}{suffix}"


def mib(x: float | None) -> str:
    return fmt(x, ".1f" if x is not None and x < 10 else ",.0f")


def block_table(b: Block) -> list[str]:
    out = [f"### {b.name}: {b.size_bytes / 1e6:,.1f} MB, {b.records:,} decode lines; "
           f"{len(b.rounds)} rounds",
           "",
           "| command | wall s | CPU s | peak MiB | wall ÷ ref | CPU ÷ ref | note |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for row in b.rows:
        ref = row.command.key == "reference"
        label = row.command.shown().replace("|", "\\|")
        out.append(
            f"| `{label}` | {fmt(row.median('wall'), '.3f')} | {fmt(row.median('cpu'), '.3f')} | "
            f"{mib(row.peak())} | "
            f"{'ref' if ref else fmt(b.ratio(row, 'wall'), '.2f', '×')} | "
            f"{'ref' if ref else fmt(b.ratio(row, 'cpu'), '.2f', '×')} | "
            f"{row.failures().replace('|', '/')} |")
    loads = " · ".join(f"{r['load_before']:.2f}→{r['load_after']:.2f} ({', '.join(r['order'])})"
                       for r in b.rounds)
    out += ["", f"load average (1 min) before→after each round: {loads}", ""]
    return out


def slope(xs: list[float], ys: list[float]) -> tuple[float, float] | None:
    """Least-squares (intercept, slope) of ys on xs; None with fewer than 2 distinct xs."""
    if len(set(xs)) < 2:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def growth(blocks: list[Block]) -> dict:
    """summary's time and peak by size, and per record above the smallest size's."""
    pts = []
    for b in blocks:
        row = b.row("summary")
        wall, cpu, peak = row.median("wall"), row.median("cpu"), row.peak()
        if None not in (wall, cpu, peak) and b.records:
            pts.append({"log": b.log, "size_mb": b.size_bytes / 1e6, "records": b.records,
                        "wall_s": wall, "cpu_s": cpu, "peak_mib": peak,
                        "wall_vs_ref": b.ratio(row, "wall"), "cpu_vs_ref": b.ratio(row, "cpu")})
    pts.sort(key=lambda p: p["records"])
    if pts:
        p0 = pts[0]
        for p in pts[1:]:
            dn = p["records"] - p0["records"]
            if dn > 0:
                p["bytes_per_record"] = (p["peak_mib"] - p0["peak_mib"]) * 2**20 / dn
                p["us_per_record_wall"] = (p["wall_s"] - p0["wall_s"]) * 1e6 / dn
                p["us_per_record_cpu"] = (p["cpu_s"] - p0["cpu_s"]) * 1e6 / dn
    fit = {}
    xs = [p["records"] for p in pts]
    for key, y, scale in (("peak", "peak_mib", 2**20), ("wall", "wall_s", 1e6),
                          ("cpu", "cpu_s", 1e6)):
        ls = slope(xs, [p[y] for p in pts])
        if ls:
            fit[key] = {"fixed": ls[0], "per_record": ls[1] * scale}
    return {"fixed_part": "the smallest size's value", "points": pts, "least_squares": fit}


def growth_table(g: dict) -> list[str]:
    pts = g["points"]
    if not pts:
        return ["### Growth: no size gave a summary", ""]
    out = ["### Growth: `eaglelog summary --no-cache --baseline-toks 90` by size",
           "",
           f"Per record above a fixed part taken from the smallest size ({pts[0]['size_mb']:,.0f}"
           " MB): (value − its value) / (records − its records); records = decode lines.",
           "",
           "| size MB | records | wall s | CPU s | peak MiB | wall ÷ ref | B/record | "
           "µs/record wall | µs/record CPU |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in pts:
        out.append(f"| {p['size_mb']:,.0f} | {p['records']:,} | {p['wall_s']:.3f} | "
                   f"{p['cpu_s']:.3f} | {mib(p['peak_mib'])} | {fmt(p['wall_vs_ref'], '.2f', '×')}"
                   f" | {fmt(p.get('bytes_per_record'), ',.0f')} | "
                   f"{fmt(p.get('us_per_record_wall'), '.2f')} | "
                   f"{fmt(p.get('us_per_record_cpu'), '.2f')} |")
    f = g["least_squares"]
    if f:
        out += ["", f"Least squares over the {len(pts)} sizes (value = fixed + per record × "
                "records): peak " + f"{f['peak']['fixed']:,.0f} MiB + "
                f"{f['peak']['per_record']:,.0f} B/record; wall {f['wall']['fixed']:.3f} s + "
                f"{f['wall']['per_record']:.2f} µs/record; CPU {f['cpu']['fixed']:.3f} s + "
                f"{f['cpu']['per_record']:.2f} µs/record."]
    return out + [""]


def target(what: str, limit: float, unit: str, measured: float | None, where: str) -> dict:
    """One of issue 37's targets (value ≤ limit) and whether this run met it."""
    spec = ",.0f" if limit >= 10 else ".2f"
    if measured is None:
        verdict = "not measured"
    elif measured <= limit:
        verdict = "met"
    else:
        verdict = (f"missed by {measured - limit:{spec}}{unit} "
                   f"({measured / limit:.1f}× the limit)")
    return {"target": what, "limit": limit, "unit": unit, "measured": measured, "where": where,
            "verdict": verdict, "text": fmt(measured, spec, unit)}


def targets(blocks: list[Block], g: dict, help_wall: float | None) -> list[dict]:
    """Issue 37's targets against this run's figures."""
    gen = [b for b in blocks if b.name.startswith("genlog")]
    big = next((b for b in gen if abs(b.size_bytes / 1e6 - 1000) < 1),
               max(gen, key=lambda b: b.size_bytes, default=None))
    small = next((b for b in gen if abs(b.size_bytes / 1e6 - 10) < 0.1), None)
    out = []
    if big is not None:
        at = f"at {big.size_bytes / 1e6:,.0f} MB" + (
            "" if abs(big.size_bytes / 1e6 - 1000) < 1 else " (the target is set at 1 GB)")
        s = big.row("summary")
        ratio, peak = big.ratio(s, "wall"), s.peak()
        out.append(target("summary wall ≤ 1.5× the reference's", 1.5, "×", ratio, at))
        peak_mb = None if peak is None else peak * 2**20 / 1e6
        out.append(target("summary peak ≤ 400 MB (10^6 bytes)", 400, " MB", peak_mb, at))
    pts = g["points"]
    if len(pts) >= 2:
        out.append(target("summary ≤ 60 bytes a record above a fixed part", 60, " B",
                          pts[-1].get("bytes_per_record"),
                          f"{pts[0]['size_mb']:,.0f} → {pts[-1]['size_mb']:,.0f} MB"))
    w = small.row("summary").median("wall") if small else None
    out.append(target("10 MB log, cold (no cache): summary ≤ 0.35 s wall", 0.35, " s", w,
                      "10 MB genlog log" if small else "10 not in --sizes"))
    out.append(target("eaglelog --help ≤ 0.15 s wall", 0.15, " s", help_wall, ""))
    return out


def machine() -> dict:
    def sh(cmd: str) -> str:
        p = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=HERE)
        return p.stdout.strip()
    version = sh(f"{eaglelog_command()} --version").replace(", version", "")
    commit = sh("git rev-parse --short HEAD")
    dirty = sh("git status --porcelain -- ../eaglelog")
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "cores": os.cpu_count(), "python": sys.version.split()[0],
            "eaglelog": version, "commit": commit + (" + uncommitted changes" if dirty else ""),
            "load_average": os.getloadavg(),
            "bytecode": "PYTHONDONTWRITEBYTECODE" not in os.environ,
            "peak_rss": PEAK_METHOD, "peak_rss_floor_mib": rss_floor()}


def main() -> int:
    bytecode_as_installed()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:6]))
    ap.add_argument("--sizes", metavar="MB,MB,…", default=None,
                    help=f"genlog log sizes in MB (1e6 bytes) [default: {DEFAULT_SIZES}; without "
                         "--log]; '' for none")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per log [default: 3]")
    ap.add_argument("--log", action="append", default=[],
                    help="also time this existing log (repeatable); not in the growth table")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the generated logs here and keep them; reuse those already here")
    ap.add_argument("--json", action="store_true",
                    help="print one JSON document (every run's raw figures) instead of tables")
    ap.add_argument("--timeout", type=float, default=900,
                    help="kill a command after this many seconds [default: 900]")
    ap.add_argument("--genlog", default=GENLOG, help="path of shared/bench/genlog.py")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    spec = args.sizes if args.sizes is not None else ("" if args.log else DEFAULT_SIZES)
    try:
        sizes = sorted({float(x) for x in spec.split(",") if x.strip()})
    except ValueError:
        ap.error(f"--sizes: not a list of numbers: {spec!r}")
    if any(s <= 0 for s in sizes):
        ap.error("--sizes: sizes must be positive")
    for log in args.log:
        if not os.path.isfile(log):
            ap.error(f"--log: no such file: {log}")
    if not sizes and not args.log:
        ap.error("nothing to time: give --sizes or --log")

    rows, notes = commands()
    for n in notes:
        say(f"note: {n}")
    info = machine()
    say(f"{info['cores']} cores, Python {info['python']}, {info['eaglelog']} ({info['commit']}), "
        f"load average {info['load_average'][0]:.2f}")

    directory = args.keep or tempfile.mkdtemp(prefix="eaglelog-summary-cost-")
    os.makedirs(directory, exist_ok=True)
    try:
        logs = [(generated_log(directory, mb, args.genlog), f"genlog {mb:g} MB") for mb in sizes]
        logs += [(os.path.abspath(p), os.path.basename(p)) for p in args.log]

        eg = eaglelog_command()
        run(f"{eg} --help")                       # warm-up, not counted
        helps = []
        for _ in range(max(5, args.rounds)):
            helps.append(run(f"{eg} --help"))
        help_ok = [r.wall for r in helps if r.ok]
        help_wall = statistics.median(help_ok) if help_ok else None
        if len(help_ok) < len(helps):
            say(f"warning: eaglelog --help: {next(r for r in helps if not r.ok).failure()}")

        blocks = [time_block(log, name, rows, args.rounds, args.timeout, warmup=(i == 0))
                  for i, (log, name) in enumerate(logs)]
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    g = growth([b for b in blocks if b.name.startswith("genlog")])
    goals = targets(blocks, g, help_wall)

    if args.json:
        json.dump({"machine": info, "rounds": args.rounds, "notes": notes,
                   "help": {"median_wall_s": help_wall, "runs": [asdict(r) for r in helps]},
                   "blocks": [{"log": b.log, "name": b.name, "size_bytes": b.size_bytes,
                               "records": b.records, "rounds": b.rounds,
                               "rows": [{"key": r.command.key, "command": r.command.shown(),
                                         "median_wall_s": r.median("wall"),
                                         "median_cpu_s": r.median("cpu"),
                                         "peak_mib": r.peak(),
                                         "wall_vs_ref": b.ratio(r, "wall"),
                                         "cpu_vs_ref": b.ratio(r, "cpu"),
                                         "failures": r.failures(),
                                         "runs": [asdict(x) for x in r.runs]}
                                        for r in b.rows]} for b in blocks],
                   "growth": g, "targets": goals}, sys.stdout, indent=1)
        print()
        return 0

    out = [f"eaglelog summary cost, {info['date']}: {info['cores']} cores, Python "
           f"{info['python']}, {info['eaglelog']} ({info['commit']}), eaglelog "
           f"{'from its bytecode' if info['bytecode'] else 'compiled at each start'}; "
           f"{args.rounds} rounds per log, rotating order; medians; peak = largest of the rounds",
           f"peak RSS: {info['peak_rss']} (`true` measures {info['peak_rss_floor_mib']:.1f} MiB)",
           *[f"note: {n}" for n in notes], ""]
    for b in blocks:
        out += block_table(b)
    if len(g["points"]) > 1:
        out += growth_table(g)
    out += ["### Startup", "",
            f"`eaglelog --help`: {fmt(help_wall, '.3f')} s wall (median of {len(helps)}); "
            "10 MB cold summary: see the targets.", "",
            "### Issue 37's targets", "",
            "| target | measured | where | |", "|---|---:|---|---|"]
    for t in goals:
        out.append(f"| {t['target']} | {t['text']} | {t['where']} | {t['verdict']} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
