import os
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglelog.cli import main

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:      # simlab/ (the simulator) sits beside the package
    sys.path.insert(0, str(ROOT))
# the canonical block of eagle3_prof.md (its worked example)
CANON = """EAGLE3_PROF (100 cycles, 114 tok, no sync)
  Draft steps:        0.93 ms/cyc  (  3.4%)
  Target verify:     26.07 ms/cyc  ( 95.6%)
  Draft re-extend:    0.28 ms/cyc  (  1.0%)
  Other overhead:     0.00 ms/cyc  (  0.0%)
  TOTAL:             27.28 ms/cyc
  Accept len:      1.14
  Eff tok/s:       41.8
"""
SAMPLES = ROOT / "sample_logs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def run():
    """Run the CLI in-process; returns click's Result with .stdout and .stderr apart."""
    def _run(*args, input=None):
        runner = CliRunner()
        return runner.invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)
    return _run


@pytest.fixture
def write(tmp_path):
    """Write text (or bytes) to a temp file and return its path as str."""
    def _write(name, content):
        p = tmp_path / name
        if isinstance(content, str):
            p.write_text(content, encoding="utf-8", newline="")
        else:
            p.write_bytes(content)
        return str(p)
    return _write


def grep_count(path, marker: str) -> int:
    """What `grep -c MARKER` counts: lines that contain the marker."""
    with open(path, "rb") as f:
        return sum(1 for line in f if marker.encode() in line)


def mixed_log(tmp_path):
    """Every sample and every (non-truncated) fixture variant, several times over, with the
    interleaved-rank and cut-short blocks among them, so range boundaries fall everywhere."""
    # SGLang lines only: a log that mixes in vLLM lines is scanned in one pass
    parts = [p.read_bytes() for p in sorted(SAMPLES.glob("*.log"))
             if not p.name.startswith("vllm")]
    for p in sorted(FIXTURES.glob("*/*.log")):
        data = p.read_bytes()
        if "time_only" in p.name or "mixed" in p.name or "old" in p.name or \
                p.parent.name == "vllm" or p.name.startswith("vllm") or \
                not data.endswith(b"\n"):
            continue          # time-only prefixes force a sequential scan; cut files end it
        parts.append(data)
    path = tmp_path / "mixed.log"
    path.write_bytes(b"".join(parts * 3))
    return path


os.environ.setdefault("NO_COLOR", "1")
# the tests exercise the real code path; tests/test_cache.py turns the caches on explicitly
os.environ["EAGLELOG_NO_CACHE"] = "1"


@pytest.fixture(autouse=True, scope="session")
def _private_cache_home(tmp_path_factory):
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


@pytest.fixture(scope="module")
def sshd():
    """A real OpenSSH server on 127.0.0.1 for one test module (tests/sshd.py)."""
    import shutil
    import tempfile

    from sshd import Sshd
    # not under pytest's 0700 temp root: sshd reads authorized_keys as the test user
    root = tempfile.mkdtemp(prefix="eaglelog-sshd-")
    server = Sshd(root)
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


# ----------------------------------------------------------------------------- system parts
# Some tests drive real programs that a bare machine lacks: an OpenSSH server (tests/sshd.py),
# Chromium (tests/browser.py), Prometheus and promtool (tests/promserver.py).  `scripts/test
# --system` (and CI, through it) installs them and sets EAGLELOG_REQUIRE_SYSTEM=1: then a
# missing part FAILS its tests.  Without that variable the tests that need a missing part are
# skipped, and the run ends with one line saying what to install.
import inspect as _inspect      # noqa: E402
import shutil as _shutil        # noqa: E402

SYSTEM_PARTS = {
    # part: (what in a test's or its fixtures' source says it uses it, is it here, package)
    "sshd": (("Sshd(",), lambda: bool(_shutil.which("sshd") or os.path.exists("/usr/sbin/sshd"))
             and bool(_shutil.which("ssh")), "openssh-server openssh-client"),
    "chromium": (("browser.",), lambda: os.environ.get("EAGLELOG_SKIP_BROWSER") != "1" and any(
        _shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")), "chromium"),
    "prometheus": (("shared_env(", "promtool", "Prometheus("),
                   lambda: bool(os.path.exists("/usr/bin/prometheus")
                                or _shutil.which("prometheus"))
                   and bool(_shutil.which("promtool")), "prometheus"),
}
_SKIPPED: dict[str, int] = {}


def _source(obj) -> str:
    try:
        return _inspect.getsource(obj)
    except (OSError, TypeError):
        return ""


def _needs(item) -> set[str]:
    """The system parts a test uses: by the text of its function and of its fixtures'."""
    texts = [_source(getattr(item, "function", None))]
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        texts += [_source(d.func) for d in defs]
    text = "\n".join(texts)
    return {p for p, (marks, _, _) in SYSTEM_PARTS.items() if any(m in text for m in marks)}


def pytest_collection_modifyitems(config, items):
    _mark_slow(items)
    if os.environ.get("EAGLELOG_REQUIRE_SYSTEM") == "1":
        return                       # CI: a missing part fails its tests
    # (EAGLELOG_PRETEND_MISSING=sshd,chromium: as on a machine without them — to try this)
    pretend = set(filter(None, os.environ.get("EAGLELOG_PRETEND_MISSING", "").split(",")))
    missing = {p for p, (_, here, _) in SYSTEM_PARTS.items() if p in pretend or not here()}
    if not missing:
        return
    for item in items:
        lack = sorted(_needs(item) & missing)
        if lack:
            item.add_marker(pytest.mark.skip(reason=f"needs {', '.join(lack)}: not on this "
                                                    "machine (scripts/test --system installs it)"))


_SKIP_REASON = re.compile(r"needs ([a-z, ]+): not on this machine")


def pytest_runtest_logreport(report):
    """Count the tests skipped for a missing part from their reports: with pytest-xdist the
    workers collect and skip, and only their reports reach the process that prints."""
    if report.skipped and report.when == "setup":
        m = _SKIP_REASON.search(str(report.longrepr))
        if m:
            for p in m.group(1).split(", "):
                _SKIPPED[p] = _SKIPPED.get(p, 0) + 1


def pytest_terminal_summary(terminalreporter):
    if _SKIPPED:
        parts = ", ".join(f"{p} ({n} tests)" for p, n in sorted(_SKIPPED.items()))
        pkgs = " ".join(SYSTEM_PARTS[p][2] for p in sorted(_SKIPPED))
        terminalreporter.write_line(f"eaglelog: skipped the tests that need {parts}: install "
                                    f"them with `scripts/test --system` (apt-get install {pkgs})")


# ----------------------------------------------------------------------------- the fast subset
# `pytest -m "not slow"` (scripts/test --fast): the modules that start servers, browsers or
# process pools, run simulations or fuzz, and the single tests that take seconds, are 'slow'
SLOW_MODULES = {
    "test_fuzz", "test_calibration", "test_calibration_small", "test_prom", "test_hostile_servers",
    "test_workers", "test_remote", "test_remote_hostile", "test_follow", "test_watch_fleet",
    "test_report_html", "test_notebook", "test_parallel", "test_properties", "test_never_wrong",
    "test_simulate", "test_short_runs", "test_bounded_requests", "test_compressed_damage",
    "test_cache_damage", "test_robustness", "test_llamacpp_real", "test_plot", "test_metrics",
    "test_fastscan", "test_item10_rest", "test_degenerate", "test_within_window", "test_latency",
    "test_readme", "test_latency_plot",
}
# single tests of a second or more (simulated calibrations, whole-CLI runs with plots), by name
SLOW_TESTS = {
    "test_breakeven.py::test_intervals_are_calibrated",
    "test_whatif.py::test_simulated_runs_with_another_verify_shape_are_covered",
    "test_whatif.py::test_by_batch_predicts_each_bucket_of_a_sweep_from_the_other_runs",
    "test_whatif.py::test_a_cost_model_that_misfits_says_its_intervals_carry_it",
    "test_whatif.py::test_the_sweep_predicts_each_run_from_the_others",
    "test_whatif.py::test_cli_table_json_markdown",
    "test_requests.py::test_simulation_paired_power_and_false_positives",
    "test_requests.py::test_a_clean_run_flags_nothing_and_a_fault_is_found",
    "test_requests.py::test_plot_requests_real_render",
    "test_batch.py::test_a_batch_equals_the_inputs_typed_one_by_one",
    "test_cli.py::test_console_entry_exit_codes",
    "test_cli.py::test_broken_pipe_exits_quietly",
    "test_schedule.py::test_cli_table_configs_and_plot",
    "test_api.py::test_selection_on_requests_positions_whatif_and_schedule",
    "test_vllm.py::test_v0_differencing_reproduces_the_windows",
    "test_vllm.py::test_any_text_in_a_number_slot_never_raises",
    "test_vllm.py::test_derived_v0_values_are_never_impossible",
    "test_vllm.py::test_a_large_log_with_no_family_in_its_head_is_not_split",
    "test_acceptance.py::test_cli_plot",
    "test_server_args_dict.py::test_every_command_answers_the_same_on_the_new_shape",
    "test_schedule_engines.py::test_what_sglang_and_vllm_would_ignore_is_refused",
    "test_inputs.py::test_corrupt_gzip_half_way",
    "test_others.py::test_parsers_never_raise",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: seconds or more (servers, browsers, simulations, "
                                       "fuzz): left out by -m 'not slow' (scripts/test --fast)")


def _mark_slow(items):
    for item in items:
        name = item.nodeid.split("/")[-1].split("[")[0]
        if item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
