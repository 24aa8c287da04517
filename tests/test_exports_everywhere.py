"""Issue 36 item 11: an eaglelog export (``eaglelog export LOG -o run.json``) is read by every
command that can answer from it — summary and compare (before), breakeven and sweep (now) —
and every other command says in one line that it needs the log, naming the file."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

import eaglelog
from eaglelog.cli import main
from eaglelog.errors import EaglelogError

from conftest import ROOT

FIVE = ROOT / "sample_logs" / "eagle3_5step.log"
SWEEP = [ROOT / "sample_logs" / "sweep" / f"steps{k}.log" for k in (1, 2, 3)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("exports")
    out = {}
    for name, src in (("five", FIVE), ("one", SWEEP[0])):
        p = d / f"{name}.json"
        res = CliRunner().invoke(main, ["export", str(src), "-o", str(p)])
        assert res.exit_code == 0, res.output
        out[name] = p
    return out


def test_breakeven_from_an_export_is_the_logs(exported):
    a = eaglelog.breakeven(str(FIVE), baseline_toks=90)
    b = eaglelog.breakeven(str(exported["five"]), baseline_toks=90)
    for k in ("speedup", "breakeven_accept_len", "cycle_ms", "accept_len"):
        ea, eb = getattr(a, k), getattr(b, k)
        assert eb.estimate == pytest.approx(ea.estimate, rel=1e-9), k
        assert eb.ci_low == pytest.approx(ea.ci_low, rel=1e-6), k
        assert eb.ci_high == pytest.approx(ea.ci_high, rel=1e-6), k
    assert a.verdict == b.verdict == "below"
    assert any("from an eaglelog export" in n for n in b.notes)
    # a per-batch baseline at the export's batch mix
    c = eaglelog.breakeven(str(exported["five"]), baseline_toks="1:90,8:70")
    assert c.baseline_step_ms.estimate == pytest.approx(1000 / 90)


def test_breakeven_cli_with_an_export_and_its_gate(exported):
    res = CliRunner().invoke(main, ["breakeven", "--baseline-toks", "90", "--check",
                                    str(exported["five"])])
    assert res.exit_code == 3 and "0.931×" in res.output
    res = CliRunner().invoke(main, ["breakeven", "--baseline-toks", "90", str(FIVE),
                                    str(exported["five"])])
    assert res.exit_code == 2 and "breakeven reads either logs or eaglelog exports" in res.output
    res = CliRunner().invoke(main, ["breakeven", "--baseline-toks", "90", "--by", "batch",
                                    str(exported["five"])])
    assert res.exit_code == 2 and "need the log" in res.output


def test_sweep_takes_an_export_as_a_row(exported):
    logs = eaglelog.sweep([str(p) for p in SWEEP], baseline_toks=90)
    mixed = eaglelog.sweep([str(exported["one"])] + [str(p) for p in SWEEP[1:]],
                           baseline_toks=90)
    by_k = {r.keys["speculative_num_steps"]: r for r in logs.rows}
    for r in mixed.rows:
        ref = by_k[r.keys["speculative_num_steps"]]
        assert r.eff_tok_s.estimate == pytest.approx(ref.eff_tok_s.estimate, rel=1e-9)
        assert r.speedup.estimate == pytest.approx(ref.speedup.estimate, rel=1e-9)
        assert r.mark == ref.mark and r.verdict == ref.verdict
    assert [r.run for r in mixed.rows][-1].endswith("(export of " + str(SWEEP[0]) + ")")


@pytest.mark.parametrize("command", [
    ["reconcile"], ["whatif"], ["acceptance"], ["requests"], ["parse"], ["plot", "-o", "x.png"],
    ["report", "-o", "x.html"], ["schedule", "--baseline-toks", "90"]])
def test_every_other_command_says_it_needs_the_log(exported, command, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, command + [str(exported["five"])])
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.output
    assert lines[0] == (f"eaglelog: error: {exported['five']}: an eaglelog export (one run's "
                        f"estimates, not its log lines): `eaglelog {command[0]}` needs the log "
                        "itself; exports are read by summary, compare, sweep, breakeven")


def test_the_library_says_it_too(exported):
    with pytest.raises(EaglelogError, match="an eaglelog export .* needs the log itself"):
        eaglelog.acceptance(str(exported["five"]))
    with pytest.raises(EaglelogError, match="an eaglelog export"):
        eaglelog.parse(str(exported["five"]))
