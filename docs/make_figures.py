#!/usr/bin/env python3
"""Render the README's pictures (one of each `eaglelog plot --kind`, and `eaglelog schedule
--plot`) from the synthetic sample logs into docs/img/, with the same commands a user would
type.

    python docs/make_figures.py           # rewrites docs/img/*.png (needs eaglelog[plot])
    python docs/make_figures.py --check   # exit 1 when a committed picture differs

The output is deterministic (eaglelog.report.plot saves without dates or software versions in
the PNG), so rerunning it on an unchanged tree changes no file.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMG = os.path.join("docs", "img")

FIGURES = {
    "timeline": ["sample_logs/eagle3_5step.log"],
    "phases": ["sample_logs/eagle3_5step.log", "sample_logs/eagle3_2step.log"],
    "breakeven": ["--baseline-log", "sample_logs/batch_baseline.log",
                  "sample_logs/batch_eagle3.log"],
    "sweep": ["--baseline-toks", "90"] + [f"sample_logs/sweep/steps{k}.log"
                                          for k in (1, 2, 3, 5, 7)],
    "compare": ["sample_logs/eagle3_5step.log", "sample_logs/eagle3_2step.log"],
    "requests": ["tests/fixtures/requests/specbench_new.jsonl"],     # issue 18 (synthetic)
    "latency": [f"sample_logs/latency/spec-{x}qps.json" for x in (2, 4, 6, 8)] + ["--baseline"]
               + [f"sample_logs/latency/base-{x}qps.json" for x in (2, 4, 6, 8)]
               + ["--slo", "ttft=2s,tpot=50ms"],                       # issue 39 (synthetic)
    # not a plot kind: `eaglelog schedule --plot` (issue 17)
    "schedule": ["--baseline-log", "sample_logs/batch_baseline.log"] +
                [f"sample_logs/schedule/steps{k}.log" for k in (1, 3, 5)],
}


def command(kind: str, out: str) -> list[str]:
    if kind == "schedule":
        return [sys.executable, "-m", "eaglelog", "-q", "schedule", "--plot", out,
                *FIGURES[kind]]
    return [sys.executable, "-m", "eaglelog", "-q", "plot", "--kind", kind, "-o", out,
            *FIGURES[kind]]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed pictures instead of writing them")
    args = ap.parse_args()
    env = {**os.environ, "EAGLELOG_NO_CACHE": "1"}
    differ = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in FIGURES:
            final = os.path.join(IMG, f"{kind}.png")
            out = os.path.join(tmp, f"{kind}.png") if args.check else final
            os.makedirs(os.path.dirname(os.path.join(ROOT, out)), exist_ok=True)
            cmd = command(kind, out)
            print("$ eaglelog " + " ".join(cmd[3:]), file=sys.stderr)
            subprocess.run(cmd, cwd=ROOT, env=env, check=True)
            if args.check:
                with open(os.path.join(ROOT, final), "rb") as a, open(out, "rb") as b:
                    if a.read() != b.read():
                        differ.append(final)
    if differ:
        print(f"out of date: {', '.join(differ)} (run python docs/make_figures.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
