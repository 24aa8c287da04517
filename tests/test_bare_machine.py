"""Issue 38: the README's test command works on a machine without an OpenSSH server, Chromium or
Prometheus — the tests that drive them are skipped there, with one line saying what to install
— and CI (EAGLELOG_REQUIRE_SYSTEM=1, set by scripts/test --system) never skips them."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT


def _pytest(env_extra: dict, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "EAGLELOG_REQUIRE_SYSTEM"}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                           "-p", "no:cacheprovider", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_missing_parts_are_skipped_with_one_line_saying_what_to_install():
    r = _pytest({"EAGLELOG_PRETEND_MISSING": "sshd,prometheus"},
                "tests/test_remote.py", "tests/test_prom.py", "-k", "not nothing")
    assert r.returncode == 0, r.stdout[-2000:]
    assert "0 passed" not in r.stdout and " skipped" in r.stdout
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("eaglelog: skipped")]
    assert len(line) == 1 and "prometheus (" in line[0] and "sshd (" in line[0]
    assert "scripts/test --system" in line[0] and "apt-get install prometheus openssh-server" \
        in line[0]


def test_ci_requires_them():
    r = _pytest({"EAGLELOG_PRETEND_MISSING": "sshd", "EAGLELOG_REQUIRE_SYSTEM": "1"},
                "tests/test_remote.py", "--co")
    assert r.returncode == 0
    # nothing marked to skip: collected as they are (they run, and fail if sshd is missing)
    r2 = _pytest({"EAGLELOG_PRETEND_MISSING": "sshd", "EAGLELOG_REQUIRE_SYSTEM": "1"},
                 "tests/test_remote.py", "-k", "listing_and_reading or remote", "--co", "-q")
    assert "skip" not in r2.stdout.lower()
