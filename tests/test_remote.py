"""Remote logs through a real OpenSSH server on 127.0.0.1 (tests/sshd.py)."""
import gzip
import json
import os
import socket
import subprocess
import threading
import time

import pandas as pd
import pytest

import eaglelog
from eaglelog.io.remote import RemoteOptions, parse_remote
from conftest import SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"


@pytest.fixture
def remote_env(sshd, monkeypatch, tmp_path):
    monkeypatch.setenv("EAGLELOG_SSH", sshd.ssh)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return sshd


def same_tables(a, b):
    for name in eaglelog.TABLES:
        pd.testing.assert_frame_equal(a.table(name).drop(columns="source"),
                                      b.table(name).drop(columns="source"),
                                      check_categorical=False)


def test_spec_parsing(tmp_path):
    r = parse_remote("alice@gpu7:/data/server.log")
    assert (r.user, r.host, r.port, r.path) == ("alice", "gpu7", None, "/data/server.log")
    r = parse_remote("ssh://bob@[::1]:2222/var/log/s.log")
    assert (r.user, r.host, r.port, r.path) == ("bob", "[::1]", 2222, "/var/log/s.log")
    assert parse_remote("/var/log/s.log") is None and parse_remote("-") is None
    local = tmp_path / "host:odd.log"     # rsync-style: a local path of that name wins
    local.write_text("x")
    assert parse_remote(str(local)) is None


def test_remote_parse_equals_local_parse(remote_env):
    path = remote_env.put("five.log", FIVE.read_bytes())
    remote = eaglelog.parse(f"testhost:{path}")
    same_tables(eaglelog.parse(FIVE), remote)
    info = remote.sources[0]
    assert info.name == f"testhost:{path}" and info.remote["mode"] == "reduce"
    assert info.remote["size"] == FIVE.stat().st_size
    assert remote.decode["source"].iloc[0] == f"testhost:{path}"


def test_reduction_moves_a_small_fraction_of_a_noisy_log(remote_env, run):
    noise = "".join(f'[2026-03-02 14:00:{i % 60:02d}] INFO:     10.0.0.{i % 250}:5{i % 9999:04d} '
                    f'- "POST /v1/chat/completions HTTP/1.1" 200 OK\n' for i in range(40000))
    text = FIVE.read_text() + noise
    path = remote_env.put("noisy.log", text.encode())
    log = eaglelog.parse(f"testhost:{path}")
    moved = log.sources[0].remote["transferred"]
    assert moved < 0.05 * len(text.encode())
    assert len(log.decode) == 106 and len(log.prof) == 42
    r = run("parse", f"testhost:{path}")
    assert r.exit_code == 0
    assert "reduced on the remote host:" in r.stderr and "transferred (" in r.stderr


@pytest.mark.parametrize("ext", ["gz", "zst"])
def test_compressed_remote_logs(remote_env, ext):
    data = FIVE.read_bytes()
    packed = gzip.compress(data) if ext == "gz" else subprocess.run(
        ["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout
    path = remote_env.put(f"five.log.{ext}", packed)
    log = eaglelog.parse(f"testhost:{path}")
    same_tables(eaglelog.parse(FIVE), log)
    # decompressed and reduced on the host, compressed again for the wire (zstd -3, or
    # gzip -3): no more than the file
    assert log.sources[0].remote["mode"] == "reduce"
    # recompressed, plus line numbers
    assert 0 < log.sources[0].remote["transferred"] <= 2 * len(packed)


def test_a_compressed_noisy_log_moves_less_than_the_file(remote_env):
    noise = "".join(f'[2026-03-02 14:00:{i % 60:02d}] INFO:     '
                    f'10.0.{i % 250}.{i % 199}:5{i % 9999:04d}'
                    f' - "GET /health?x={i * 7919 % 100003} HTTP/1.1" 200 OK\n'
                    for i in range(60000))
    packed = gzip.compress((FIVE.read_text() + noise).encode())
    path = remote_env.put("noisy.log.gz", packed)
    log = eaglelog.parse(f"testhost:{path}")
    assert len(log.decode) == 106
    assert log.sources[0].remote["transferred"] < 0.5 * len(packed)


def test_remote_glob_and_ssh_url(remote_env):
    a = remote_env.put("glob/a.log", FIVE.read_bytes())
    b = remote_env.put("glob/b.log", (SAMPLES / "eagle3_2step.log").read_bytes())
    log = eaglelog.parse(f"testhost:{os.path.dirname(a)}/*.log")
    assert [i.name for i in log.sources] == [f"testhost:{a}", f"testhost:{b}"]
    assert len(log.decode) == 106 + 120
    url = f"ssh://{remote_env.user.pw_name}@127.0.0.1:{remote_env.port}{a}"
    os.environ["EAGLELOG_SSH"] = f"ssh -F {remote_env.client_config} -i " \
                                 f"{remote_env.root}/client_key"
    log = eaglelog.parse(url)
    assert log.sources[0].name == url and len(log.decode) == 106


def test_fetch_caches_and_a_second_run_transfers_nothing(remote_env, run, monkeypatch):
    path = remote_env.put("fetch.log.gz", gzip.compress(FIVE.read_bytes()))
    opts = RemoteOptions(fetch=True)
    first = eaglelog.parse(f"testhost:{path}", remote=opts)
    assert first.sources[0].remote["mode"] == "fetch"
    assert first.sources[0].remote["transferred"] > 0
    second = eaglelog.parse(f"testhost:{path}", remote=opts)
    assert second.sources[0].remote == {**second.sources[0].remote, "mode": "cache",
                                        "transferred": 0}
    same_tables(first, second)
    same_tables(eaglelog.parse(FIVE), second)
    monkeypatch.delenv("EAGLELOG_NO_CACHE", raising=False)
    r = run("parse", "--fetch", f"testhost:{path}")
    assert "read from the cache, nothing transferred" in r.stderr
    r = run("parse", "--fetch", "--no-cache", f"testhost:{path}")   # --no-cache: fetch again
    assert "fetched whole" in r.stderr
    # a changed file is fetched again
    remote_env.put("fetch.log.gz", gzip.compress(FIVE.read_bytes() * 2))
    third = eaglelog.parse(f"testhost:{path}", remote=opts)
    assert third.sources[0].remote["mode"] == "fetch" and len(third.decode) == 212


def err(r):
    assert "Traceback" not in r.stderr + r.stdout
    lines = [x for x in r.stderr.splitlines() if x.startswith("eaglelog: error:")]
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_missing_file_and_permission_denied(remote_env, run):
    r = run("parse", "testhost:/nonexistent/server.log")
    assert r.exit_code == 1
    assert err(r) == "eaglelog: error: testhost:/nonexistent/server.log: no such file"
    secret = remote_env.put("secret.log", FIVE.read_bytes(), mode=0o000)
    r = run("parse", f"testhost:{secret}")
    assert r.exit_code == 1
    assert err(r) == f"eaglelog: error: testhost:{secret}: permission denied"


def test_wrong_port_dns_and_auth(remote_env, run, monkeypatch):
    from sshd import free_port
    port = free_port()
    r = run("parse", f"ssh://127.0.0.1:{port}/x.log")
    assert r.exit_code == 1
    assert err(r) == f"eaglelog: error: ssh://127.0.0.1:{port}/x.log: connection refused by " \
                     f"127.0.0.1:{port}"
    r = run("parse", "no-such-host.invalid:/x.log")
    assert r.exit_code == 1
    assert "cannot resolve host 'no-such-host.invalid' (DNS)" in err(r)
    monkeypatch.setenv("EAGLELOG_SSH", f"ssh -F {remote_env.client_config} -o "
                                       f"IdentityFile={remote_env.root}/other_key")
    r = run("parse", "--ssh-option", f"IdentityFile={remote_env.root}/other_key",
            f"ssh://{remote_env.user.pw_name}@127.0.0.1:{remote_env.port}/x.log")
    assert r.exit_code == 1
    assert "authentication failed for eaglelogtest@127.0.0.1" in err(r)


def test_a_host_that_never_answers_is_bounded_by_the_timeout(remote_env, run):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    held = []
    threading.Thread(target=lambda: held.append(srv.accept()), daemon=True).start()
    t0 = time.monotonic()
    r = run("parse", "--connect-timeout", "2", f"ssh://127.0.0.1:{port}/x.log")
    took = time.monotonic() - t0
    srv.close()
    assert r.exit_code == 1 and took < 15
    assert "no answer from 127.0.0.1 within 2 s" in err(r)


def test_many_hosts_keep_going(remote_env, run):
    good = remote_env.put("good.log", FIVE.read_bytes())
    r = run("parse", "--keep-going", "-f", "json", f"testhost:{good}",
            "testhost:/nope.log", "no-such-host.invalid:/x.log")
    assert r.exit_code == 1
    items = json.loads(r.stdout)
    assert items[0]["tables"]["decode"] == 106
    assert "no such file" in items[1]["error"] and "(DNS)" in items[2]["error"]


def test_breakeven_on_a_remote_log(remote_env, run):
    path = remote_env.put("be.log", FIVE.read_bytes())
    d = json.loads(run("-q", "breakeven", "--baseline-toks", "90", "-f", "json",
                       f"testhost:{path}").stdout)["runs"][0]
    assert round(d["breakeven_accept_len"]["estimate"], 2) == 2.46


def test_progress_shows_on_a_terminal_only(remote_env):
    import pty
    import select
    import subprocess
    import sys
    path = remote_env.put("progress.log", FIVE.read_bytes() * 60)      # 4.4 MB
    env = {**os.environ, "EAGLELOG_SSH": remote_env.ssh}
    env.pop("NO_COLOR", None)
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "eaglelog", "parse", "--fetch",
                          f"testhost:{path}"], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    seen = b""
    while True:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        elif p.poll() is not None:
            break
    p.communicate(timeout=60)
    os.close(master)
    assert p.returncode == 0
    assert b" MB, " in seen and b"MB/s" in seen          # bytes and rate, on the terminal
    quiet = subprocess.run([sys.executable, "-m", "eaglelog", "parse", "--fetch", "--no-cache",
                            f"testhost:{path}"], capture_output=True, env=env)
    assert b"MB/s" not in quiet.stderr                    # not a terminal: silent


def test_time_only_dates_come_from_the_remote_files_mtime(remote_env, tmp_path):
    from conftest import FIXTURES
    src = FIXTURES / "sglang" / "decode_time_only.log"
    path = remote_env.put("to.log", src.read_bytes())
    when = 1735732800  # 2025-01-01 12:00 UTC
    os.utime(path, (when, when))
    local = tmp_path / "to.log"
    local.write_bytes(src.read_bytes())
    os.utime(local, (when, when))
    want = eaglelog.parse(local).decode.timestamp.tolist()
    assert eaglelog.parse(f"testhost:{path}").decode.timestamp.tolist() == want
    fetched = eaglelog.parse(f"testhost:{path}", remote=RemoteOptions(fetch=True))
    assert fetched.decode.timestamp.tolist() == want


def test_remote_counts_match_local_counts(remote_env):
    path = remote_env.put("counts.log", FIVE.read_bytes())
    r, l = eaglelog.parse(f"testhost:{path}"), eaglelog.parse(FIVE)
    a, b = r.sources[0], l.sources[0]
    assert (a.lines, a.skipped, a.first_skipped, a.bytes) == (b.lines, b.skipped,
                                                              b.first_skipped, b.bytes)
