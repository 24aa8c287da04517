#!/usr/bin/env python3
"""Re-run the README's examples and write their output back (the blocks tests/test_readme.py
checks: a fenced block starting with `$ eaglelog …`; a block whose output starts with '…' shows
the tail of the output, as many lines as it showed before).

    python docs/readme_examples.py            # rewrite README.md in place
    python docs/readme_examples.py --check    # exit 1 when an example's output changed
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"```\n\$ (eaglelog[^\n]*)\n(.*?)```", flags=re.S)


def run(cmd: str) -> str:
    bindir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "EAGLELOG_NO_CACHE": "1"}
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=ROOT,
                          env=env).stdout.strip("\n")


def refresh(shown: str, got: str) -> str:
    """The new output as the block shows it: whole, or for a '…' block the part between the
    lines that began and ended the part shown before (their first 24 characters; the last as
    many lines when they are gone)."""
    want = shown.strip("\n")
    if not want.startswith("…"):
        return got
    tail = want.split("\n", 1)[1].splitlines() if "\n" in want else []
    if not tail:
        return "…"
    lines = got.splitlines()
    first = [i for i, ln in enumerate(lines) if ln[:24] == tail[0][:24]]
    if first:
        i = first[0]
        last = [j for j in range(i, len(lines)) if lines[j][:24] == tail[-1][:24]]
        if last:
            return "…\n" + "\n".join(lines[i:last[0] + 1])
    return "…\n" + "\n".join(lines[-len(tail):])


def rewrite(text: str) -> tuple[str, int]:
    changed = 0

    def one(m):
        nonlocal changed
        command, shown = m.group(1), m.group(2)
        parts = re.split(r"\n\n\$ ", "\n" + shown) if "\n$ " in shown else [shown]
        runs = [(command, parts[0])] + [tuple(p.split("\n", 1)) for p in parts[1:]]
        out = []
        for cmd, want in runs:
            new = refresh(want, run(cmd))
            changed += new != want.strip("\n")
            out.append((cmd, new))
        body = out[0][1] + "".join(f"\n\n$ {c}\n{o}" for c, o in out[1:])
        return f"```\n$ {command}\n{body}\n```"
    return BLOCK.sub(one, text), changed


def main() -> None:
    path = os.path.join(ROOT, "README.md")
    text = open(path, encoding="utf-8").read()
    new, changed = rewrite(text)
    if "--check" in sys.argv:
        print(f"{changed} example(s) changed")
        sys.exit(1 if changed else 0)
    if new != text:
        with open(path, "w", encoding="utf-8") as f:
            f.write(new)
    print(f"{changed} example(s) rewritten")


if __name__ == "__main__":
    main()
