"""The README's examples are real: every `$ eaglelog …` block is run and its output compared
(a block whose output starts with '…' shows the tail of the output)."""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```\n\$ (eaglelog[^\n]*)\n(.*?)```", README, flags=re.S)


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("command,shown", BLOCKS, ids=[c[:60] for c, _ in BLOCKS])
def test_readme_example(command, shown):
    bindir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "EAGLELOG_NO_CACHE": "1"}
    # a block may hold several commands: the first one is in the pattern, others start with $
    parts = re.split(r"\n\n\$ ", "\n" + shown) if "\n$ " in shown else [shown]
    runs = [(command, parts[0])] + [tuple(p.split("\n", 1)) for p in parts[1:]]
    for cmd, want in runs:
        got = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=ROOT,
                             env=env).stdout
        want = want.strip("\n")
        if want.startswith("…"):
            tail = want.split("\n", 1)[1]
            assert tail in got, (cmd, got)
        else:
            assert got.strip("\n") == want, cmd
