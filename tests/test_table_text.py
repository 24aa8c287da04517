"""report/table_text.simple_table draws what tabulate(tablefmt="simple", disable_numparse=True)
draws, character for character, on random tables of the cells the summary's, compare's and
sweep's tables hold (text with spaces, dashes, brackets and non-ASCII signs, ints, None, empty
cells and headers), and hands other cells to tabulate."""
import random

import pytest
from tabulate import tabulate

from eaglelog.report import table_text
from eaglelog.report.table_text import simple_table

ALPHABET = "abcXYZ019 .,-_[]()…—×±·→%/:#"


def _cell(r: random.Random):
    k = r.random()
    if k < 0.1:
        return None
    if k < 0.3:
        return r.randint(-10**6, 10**9)
    if k < 0.35:
        return ""
    return "".join(r.choice(ALPHABET) for _ in range(r.randint(1, 18)))


@pytest.mark.parametrize("seed", range(300))
def test_simple_table_is_tabulate_s(seed):
    r = random.Random(seed)
    ncol, nrow = r.randint(1, 9), r.randint(0, 12)
    headers = ["".join(r.choice(ALPHABET) for _ in range(r.randint(0, 14))) for _ in range(ncol)]
    rows = [[_cell(r) for _ in range(ncol)] for _ in range(nrow)]
    want = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)
    assert simple_table(rows, headers) == want


@pytest.mark.parametrize("rows", [
    [["two\nlines", "x"]],               # a multi-line cell: tabulate's own layout
    [[1.5, "x"]],                        # a float: tabulate's formatting
    [[True, "x"]],
    [["\x1b[1mbold\x1b[0m", "x"]],       # an escape sequence: not counted in the width
    [["only one"]],                      # a short row
])
def test_other_cells_are_tabulate_s(rows, monkeypatch):
    called = []
    real = table_text._by_tabulate
    monkeypatch.setattr(table_text, "_by_tabulate", lambda *a: called.append(1) or real(*a))
    headers = ["a", "b"]
    assert simple_table(rows, headers) == tabulate(rows, headers=headers, tablefmt="simple",
                                                   disable_numparse=True)
    assert called


def test_draw_is_tabulate_s_in_both_formats():
    from eaglelog.report.table_text import draw
    rows, headers = [["a | b", 3, None], ["—", -1, "x"]], ["k", "", "v"]
    for fmt in ("simple", "github"):
        assert draw(rows, headers, fmt) == tabulate(rows, headers=headers, tablefmt=fmt,
                                                    disable_numparse=True)


def test_the_summary_s_screen_imports_no_tabulate():
    """A summary of an SGLang log with its by-batch table, in a fresh process: no tabulate
    (nor importlib.metadata, which tabulate 0.10 imports for its version)."""
    import os
    import subprocess
    import sys
    from conftest import SAMPLES
    code = ("import sys, atexit; atexit.register(lambda: print(sorted(m for m in "
            "('tabulate', 'importlib.metadata') if m in sys.modules), file=sys.stderr)); "
            "from eaglelog.cli import run; sys.argv = ['eaglelog'] + sys.argv[1:]; run()")
    p = subprocess.run([sys.executable, "-c", code, "--no-cache", "summary", "--baseline-toks",
                        "90", str(SAMPLES / "batch_eagle3.log")], capture_output=True,
                       text=True, env=dict(os.environ, EAGLELOG_NO_CACHE="1"), timeout=120)
    assert p.returncode == 0, p.stderr
    assert "running_req" in p.stdout          # (the by-batch table is drawn)
    assert p.stderr.strip().splitlines()[-1] == "[]"
