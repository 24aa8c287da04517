"""Issue 38: the house's plan, read from its imports (every import, those inside functions too),
so that it stays true.  Layers, lowest first — a module may import from its own layer and the
layers below, never from one above:

  1 core      errors, schema, stats, distributions, tables, units, engine_schedules, live/rules,
              docs, _lazy, _memory, _cores (the simulator is simlab/, beside the package)
  3 sources   io/sources, io/remote (bytes and lines in)
  4 parsers   parsers/* (lines → records)
  4.5 io      io/parallel, io/cache, io/batch (parsing at scale: workers, the table cache)
  4.8 model   model (ParsedLog, SourceInfo, configuration segments)
  5 readers   api (parse, load), baseline, io/follow, live/metrics, live/prom,
              live/live_sources (/metrics and Prometheus read into a ParsedLog)
  6 analysis  analysis/* (tables → windows → estimates → verdicts)
  7 library   library (the public analyses), live/watch, live/fleet (live applications)
  8 report    report/*, plot, overview (rendering)
  9 cli       cli/* (the shell _base.py and a module a command family), __main__

A package's __init__ is its namespace (re-exports), not a layer of its own; imports under
``if TYPE_CHECKING:`` are annotations, not imports at run time.  No circle remains; the one
upward call is listed below with its reason; a new circle or upward import fails this test.
docs/dev/architecture.md draws the same plan."""
from __future__ import annotations

import ast
import collections
from pathlib import Path

from conftest import ROOT

PKG = ROOT / "eaglelog"

# what is left to untangle (issue 38), each a known, named exception — not a place to add more
KNOWN_CIRCLES: set = set()
KNOWN_UPWARD = {
    # ParsedLog.unit() hands each run to the engine corrections of analysis/engines.py: the
    # model's one call up into the analyses (engines builds a ParsedLog through type(log))
    ("eaglelog.model", "eaglelog.analysis.engines"),
}


def layer(m: str) -> float:
    if m.startswith("eaglelog.cli") or m == "eaglelog.__main__":
        return 9
    if m.startswith("eaglelog.report") or m in ("eaglelog.plot", "eaglelog.overview"):
        return 8
    if m in ("eaglelog.library", "eaglelog.live.watch", "eaglelog.live.fleet"):
        return 7
    if m.startswith("eaglelog.analysis"):
        return 6
    if m in ("eaglelog.api", "eaglelog.baseline", "eaglelog.io.follow", "eaglelog.live.metrics",
             "eaglelog.live.prom", "eaglelog.live.live_sources"):
        return 5
    if m == "eaglelog.model":
        return 4.8
    if m in ("eaglelog.io.parallel", "eaglelog.io.cache", "eaglelog.io.batch"):
        return 4.5
    if m.startswith("eaglelog.parsers"):
        return 4
    if m in ("eaglelog.io.sources", "eaglelog.io.remote"):
        return 3
    return 1


def modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports() -> dict[str, set[str]]:
    mods = modules()
    packages = {m for m, p in mods.items() if p.name == "__init__.py"}
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for mod, path in mods.items():
        if mod in packages:          # a namespace: its re-exports are no layer's imports
            continue
        here = mod.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and
                       getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only:       # annotations only: no import at run time
                continue
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[:len(here.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in mods else target
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                if t in mods and t != mod and t not in packages:
                    edges[mod].add(t)
    return edges


def circles(edges) -> set[frozenset]:
    index, low, stack, on, out = {}, {}, [], set(), set()
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.add(frozenset(comp))
    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def test_no_new_import_circle():
    found = circles(imports())
    new = [sorted(c) for c in found if c not in KNOWN_CIRCLES]
    assert not new, f"new import circle(s): {new}"
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in found]
    assert not gone, f"a known circle is gone: take it out of KNOWN_CIRCLES: {gone}"


def test_no_import_runs_back_up_a_layer():
    edges = imports()
    up = {(m, t) for m, ts in edges.items() for t in ts if layer(t) > layer(m)}
    new = sorted(up - KNOWN_UPWARD)
    assert not new, "imports from a higher layer (see this file's docstring): " + \
        "; ".join(f"{m} → {t}" for m, t in new)
    assert not (KNOWN_UPWARD - up), f"gone from the code: {sorted(KNOWN_UPWARD - up)}"


def test_the_check_sees_an_upward_import(tmp_path):
    """The rule itself: an analysis module importing the CLI would be caught."""
    edges = {"eaglelog.analysis.x": {"eaglelog.cli"}, "eaglelog.cli": {"eaglelog.analysis.x"}}
    assert circles(edges) == {frozenset(edges)}
    assert layer("eaglelog.cli") > layer("eaglelog.analysis.x")
