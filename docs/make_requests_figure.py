#!/usr/bin/env python3
"""Render the README's `eaglelog requests` picture, docs/img/requests.png, from the synthetic
Spec-Bench answer file of the tests (tests/fixtures/requests/specbench_new.jsonl, written by
make_fixtures.py), with the command a user would type.

    python docs/make_requests_figure.py           # rewrites docs/img/requests.png
    python docs/make_requests_figure.py --check   # exit 1 when the committed picture differs

Deterministic like docs/make_figures.py: rerunning it on an unchanged tree changes no file.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FINAL = os.path.join("docs", "img", "requests.png")
INPUT = os.path.join("tests", "fixtures", "requests", "specbench_new.jsonl")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="compare with the committed picture instead of writing it")
    args = ap.parse_args()
    env = {**os.environ, "EAGLELOG_NO_CACHE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "requests.png") if args.check else FINAL
        cmd = [sys.executable, "-m", "eaglelog", "-q", "plot", "--kind", "requests", "-o", out,
               INPUT]
        print("$ eaglelog " + " ".join(cmd[3:]), file=sys.stderr)
        subprocess.run(cmd, cwd=ROOT, env=env, check=True)
        if args.check:
            with open(os.path.join(ROOT, FINAL), "rb") as a, open(out, "rb") as b:
                if a.read() != b.read():
                    print(f"out of date: {FINAL} (run python docs/make_requests_figure.py)",
                          file=sys.stderr)
                    return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
