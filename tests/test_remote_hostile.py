"""Remote access against hostile or broken inputs (issue 13: items 5, 6, 12, 13, 14).

A real OpenSSH server on 127.0.0.1 (tests/sshd.py) and a fake peer that sends an SSH banner and
then goes silent.  The CLI runs in subprocesses with a timeout, so a hang fails the test instead
of stopping the suite.
"""
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import eaglelog
from eaglelog.io.remote import RemoteOptions, RemoteSpecError, parse_remote
from conftest import SAMPLES

FIVE = (SAMPLES / "eagle3_5step.log").read_bytes()
TWO = (SAMPLES / "eagle3_2step.log").read_bytes()


@pytest.fixture
def counted_ssh(tmp_path, monkeypatch):
    """An EAGLELOG_SSH that writes one line per ssh process started, then runs ssh."""
    calls = tmp_path / "ssh-calls"
    wrapper = tmp_path / "ssh-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho started >> {calls}\nexec ssh "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("EAGLELOG_SSH", str(wrapper))

    def count() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0
    return str(wrapper), count


def cli(*args, env=None, timeout=120, **kw):
    return subprocess.run([sys.executable, "-m", "eaglelog", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, **kw)


def one_error(r) -> str:
    assert "Traceback" not in r.stderr + r.stdout and "internal error" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("eaglelog: error:")]
    assert len(lines) == 1, r.stderr
    return lines[0]


# ----------------------------------------------------------------- item 5: option injection

@pytest.mark.parametrize("spec, what", [
    ("ssh://-oProxyCommand=touch${IFS}/tmp/pwned/x.log", "host"),
    ("-oProxyCommand=sh:/x.log", "host"),
    ("-oX:/p", "host"),
    ("-oProxyCommand=x@gpu7:/x.log", "user"),
    ("ssh://-oProxyCommand=x@gpu7/x.log", "user"),
])
def test_a_host_or_user_starting_with_a_dash_is_refused_before_ssh_runs(spec, what,
                                                                        counted_ssh, run):
    wrapper, count = counted_ssh
    r = run("parse", "--", spec)
    assert r.exit_code == 2
    assert one_error(r) == (f"eaglelog: error: {spec}: a remote {what} cannot start with '-' "
                            "(ssh would read it as an option)")
    assert count() == 0                    # no ssh process was started
    with pytest.raises(RemoteSpecError):
        parse_remote(spec)


def test_the_destination_follows_a_double_dash():
    cmd = RemoteOptions(("ProxyJump=bastion",)).ssh_command(parse_remote("bob@gpu7:/x.log"))
    assert cmd[-2:] == ["--", "bob@gpu7"]
    assert cmd.index("ProxyJump=bastion") < cmd.index("--")
    # after the handshake, ssh's keep-alives end a connection whose peer stopped answering
    # (after the user's options: ssh keeps the first value, so they can be changed)
    assert cmd.index("ServerAliveInterval=10") > cmd.index("ProxyJump=bastion")
    assert "ServerAliveCountMax=3" in cmd
    assert "BatchMode=yes" in cmd[:cmd.index("ProxyJump=bastion")]


@pytest.mark.parametrize("spec", ["ssh://gpu7", "ssh://gpu7:22", "ssh://gpu7:port/x.log",
                                  "ssh://gpu7:99999/x.log", "ssh://a@b@gpu7/x.log",
                                  "ssh:///x.log"])
def test_a_malformed_ssh_url_is_a_usage_error_not_a_host_named_ssh(spec, counted_ssh, run):
    wrapper, count = counted_ssh
    r = run("parse", spec)
    assert r.exit_code == 2
    msg = one_error(r)
    assert msg.startswith(f"eaglelog: error: {spec}: ") and "'ssh'" not in msg
    assert "ssh://[user@]host[:port]/path" in msg or "out of range" in msg
    assert count() == 0


@pytest.mark.parametrize("opt", ["-oProxyCommand=x", "ProxyJump", "=x", "Proxy Jump\nx"])
def test_a_malformed_ssh_option_is_a_usage_error(opt, counted_ssh, run):
    wrapper, count = counted_ssh
    r = run("parse", "--ssh-option", opt, "gpu7:/x.log")
    assert r.exit_code == 2
    assert "expected OPTION=VALUE" in one_error(r)
    assert count() == 0


def test_an_option_ssh_does_not_know_is_not_reported_as_a_timeout(sshd, run, monkeypatch):
    # 'ConectTimeout' (sic): ssh says "Bad configuration option: conecttimeout"
    monkeypatch.setenv("EAGLELOG_SSH", sshd.ssh)
    r = run("parse", "--ssh-option", "ConectTimeout=3", "testhost:/x.log")
    assert r.exit_code == 2
    assert one_error(r) == ("eaglelog: error: testhost:/x.log: ssh rejected an option: Bad "
                            "configuration option: conecttimeout (check --ssh-option and "
                            "EAGLELOG_SSH)")


# ----------------------------------------------------------------- item 6: watchdog, FIFO

@pytest.fixture
def silent_peer():
    """A TCP server on 127.0.0.1 that sends an SSH banner and then never says anything."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            c.sendall(b"SSH-2.0-OpenSSH_9.2p1 silent\r\n")
            held.append(c)
    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1]
    srv.close()
    for c in held:
        c.close()


def bounded(err: str, url: str) -> bool:
    """A silent peer ends in one line naming the input: eaglelog's own bound, or (on a loaded
    machine, when the TCP connect itself is not accepted within --connect-timeout) ssh's."""
    head = f"eaglelog: error: {url}: "
    return err == head + ("no answer from 127.0.0.1 within 3 s (connected, but the ssh "
                          "handshake or login did not finish; --connect-timeout 1)") or \
        (err.startswith(head + "ssh failed (exit 255): Connection ") and "timed out" in err)


def test_a_peer_that_goes_silent_after_its_banner_is_bounded(silent_peer):
    url = f"ssh://127.0.0.1:{silent_peer}/x.log"
    t0 = time.monotonic()
    r = cli("parse", "--connect-timeout", "1", url, timeout=90)
    took = time.monotonic() - t0
    assert r.returncode == 1
    assert bounded(one_error(r), url)
    assert took < 3 + 30          # the bound (3 x --connect-timeout) plus start-up under load


def test_follow_of_a_silent_peer_ends_with_the_bound_and_on_sigterm(silent_peer):
    url = f"ssh://127.0.0.1:{silent_peer}/x.log"
    r = cli("parse", "--follow", "--interval", "0.3", "--connect-timeout", "1", url,
            timeout=90)
    assert r.returncode == 1
    assert bounded(one_error(r), url)
    p = subprocess.Popen([sys.executable, "-m", "eaglelog", "parse", "--follow",
                          "--connect-timeout", "30", url], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    # wait until ssh runs (its banner exchange with the peer), then SIGTERM eaglelog
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                              text=True).stdout.split()
        if kids:
            break
        time.sleep(0.1)
    assert kids, "ssh never started"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 1
    assert err.strip() == f"eaglelog: error: {url}: stopped before 127.0.0.1 answered"
    for pid in kids:                            # ssh was ended too
        assert not os.path.exists(f"/proc/{pid}") or \
            open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def test_a_fifo_is_reported_as_not_a_regular_file_and_never_opened(sshd):
    env = {"EAGLELOG_SSH": sshd.ssh}
    fifo = os.path.join(sshd.data, "hostile", "pipe.log")
    sshd.put("hostile/good.log", FIVE)
    os.mkfifo(fifo)
    os.chown(fifo, sshd.user.pw_uid, sshd.user.pw_gid)
    want = f"testhost:{fifo}: not a regular file (a FIFO, socket or device: not read)"
    r = cli("parse", "--keep-going", "-f", "json", f"testhost:{sshd.data}/hostile/*.log",
            env=env, timeout=60)
    assert r.returncode == 1
    items = json.loads(r.stdout)
    assert [i["tables"]["decode"] for i in items if "error" not in i] == [106]
    assert [i["error"] for i in items if "error" in i] == [want]
    for args in (("--fetch", "--no-cache"), ("--follow",)):
        r = cli("parse", *args, f"testhost:{fifo}", env=env, timeout=60)
        assert r.returncode == 1 and one_error(r) == f"eaglelog: error: {want}"


# ----------------------------------------------------------------- item 12: decompression

@pytest.fixture
def remote_env(sshd, monkeypatch, tmp_path):
    monkeypatch.setenv("EAGLELOG_SSH", sshd.ssh)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return sshd


def test_a_cut_gz_fails_in_reduce_mode_as_it_does_with_fetch(remote_env, run, tmp_path):
    packed = gzip.compress(FIVE * 3)
    path = remote_env.put("half.log.gz", packed[:len(packed) // 2])
    reduce = run("parse", f"testhost:{path}")
    fetch = run("parse", "--fetch", f"testhost:{path}")
    for r in (reduce, fetch):
        assert r.exit_code == 1 and r.stdout == ""
        msg = one_error(r)
        assert msg.startswith(f"eaglelog: error: testhost:{path}")
        assert "gzip data ends early" in msg and msg.endswith("the file is truncated")
    assert "(the host's gzip -dc: unexpected end of file)" in one_error(reduce)
    # the line of the failure is the one a local read names (where gzip -dc stopped)
    local = tmp_path / "half.log.gz"
    local.write_bytes(packed[:len(packed) // 2])
    line = one_error(run("parse", local)).split(f"{local}:", 1)[1].split(":", 1)[0]
    assert f"ends early at line {line} " in one_error(reduce)


def test_a_corrupt_xz_fails_in_reduce_mode(remote_env, run):
    import lzma
    packed = bytearray(lzma.compress(FIVE))
    packed[len(packed) // 2] ^= 0xFF
    path = remote_env.put("bad.log.xz", bytes(packed))
    r = run("parse", f"testhost:{path}")
    assert r.exit_code == 1
    msg = one_error(r)
    assert msg.startswith(f"eaglelog: error: testhost:{path}: corrupt xz data at line ")
    assert "(the host's xz -dc: " in msg


def test_a_damaged_file_under_keep_going_fails_alone(remote_env, run):
    sshd = remote_env
    good = sshd.put("kg/good.log.gz", gzip.compress(FIVE))
    packed = gzip.compress(FIVE)
    bad = sshd.put("kg/half.log.gz", packed[:len(packed) // 2])
    r = run("parse", "--keep-going", "-f", "json", f"testhost:{sshd.data}/kg/*.gz")
    assert r.exit_code == 1
    items = json.loads(r.stdout)
    assert [i["source"] for i in items] == [f"testhost:{good}", f"testhost:{bad}"]
    assert "error" not in items[0] and items[0]["tables"]["decode"] == 106
    assert items[1]["error"].startswith(f"testhost:{bad}: gzip data ends early at line ")


def test_a_last_line_without_newline_reads_as_locally(remote_env, tmp_path):
    cut = FIVE[:FIVE.rindex(b"Decode batch")] + FIVE[FIVE.rindex(b"Decode batch"):].split(
        b"\n")[0]                                   # a decode line cut short, at the end
    path = remote_env.put("cut.log", cut)
    local = tmp_path / "cut.log"
    local.write_bytes(cut)
    r, l = eaglelog.parse(f"testhost:{path}"), eaglelog.parse(local)
    assert len(r.decode) == len(l.decode) == 105
    assert [(d.line_no, d.kind) for d in r.diagnostics if d.kind == "truncated"] == \
        [(d.line_no, d.kind) for d in l.diagnostics if d.kind == "truncated"] != []
    assert (r.sources[0].lines, r.sources[0].skipped) == (l.sources[0].lines,
                                                           l.sources[0].skipped)


# ----------------------------------------------------------------- item 14: the protocol

def test_file_names_cannot_forge_protocol_lines(remote_env):
    sshd = remote_env
    forged = "nl\n\x1eEAGLELOG ERR nofile x.log"
    sshd.put(f"names/{forged}", FIVE)
    sshd.put("names/with space.log", TWO)
    secret = sshd.put("names/secret file.log", FIVE, mode=0o000)
    log = eaglelog.parse(f"testhost:{sshd.data}/names/*", keep_going=True,
                         remote=RemoteOptions())
    base = f"testhost:{sshd.data}/names/"
    names = [i.name for i in log.sources]
    assert names == [base + "nl\\n\\x1eEAGLELOG ERR nofile x.log",
                     base + "secret file.log", base + "with space.log"]
    assert [i.counts.get("decode") for i in log.sources if not i.error] == [106, 120]
    errors = [i.error for i in log.sources if i.error]
    assert errors == [f"testhost:{secret}: permission denied"]


def test_an_error_names_a_path_with_spaces_whole(remote_env, run):
    path = os.path.join(remote_env.data, "a dir", "no such file.log")
    r = run("parse", f"testhost:{path}")
    assert r.exit_code == 1
    assert one_error(r) == f"eaglelog: error: testhost:{path}: no such file"


# ----------------------------------------------------------------- item 13: many files

def test_a_glob_of_many_files_uses_one_connection(sshd, counted_ssh, tmp_path, monkeypatch):
    wrapper, count = counted_ssh
    for i in range(6):
        data = TWO[:4000] if i % 4 else FIVE
        sshd.put(f"many/f{i:02d}.log" + (".gz" if i % 2 else ""),
                 gzip.compress(data) if i % 2 else data)
    monkeypatch.setenv("EAGLELOG_SSH", f"{wrapper} -F {sshd.client_config}")
    spec = f"testhost:{sshd.data}/many/*"
    want = sum(TWO[:4000].count(b"Decode batch") if i % 4 else FIVE.count(b"Decode batch")
               for i in range(6))
    log = eaglelog.parse(spec)
    assert len(log.sources) == 6 and count() == 1        # one ssh for the glob, .gz included
    assert len(log.decode) == want
    assert {i.remote["mode"] for i in log.sources} == {"reduce"}
    opts = RemoteOptions(fetch=True, cache_dir=str(tmp_path))
    for run, mode in ((1, "fetch"), (2, "cache")):   # --fetch: copied, then from the cache
        log = eaglelog.parse(spec, remote=opts)
        assert len(log.decode) == want and count() == 1 + run
        assert {i.remote["mode"] for i in log.sources} == {mode}


# ----------------------------------------------------------------- the protocol, offline

def _stream(mode, chunks, tmp_path):
    from eaglelog.io.remote import _Stream
    st = _Stream(parse_remote("gpu7:/logs/*"), RemoteOptions(fetch=mode == "fetch",
                                                             cache_dir=str(tmp_path)),
                 str(tmp_path), mode)
    for c in chunks:
        st.feed_wire(c)
    return st


def test_the_stream_is_read_in_any_pieces_and_a_raw_section_is_exact(tmp_path):
    sep = b"\x1eEAGLELOG "
    data = (b"motd of a chatty login shell\n" + sep + b"HELLO 2 none\n"
            + sep + b"FILE 40 7 =/logs/a.log\n3:Decode batch x\n4-  line\n"
            + sep + b"END 6 1 1 0\n"
            + sep + b"RAW 18 8 x2f6c6f67732f6220632e677a\n" + b"\x1f\x8b" + sep + b"ERR x\n"
            + sep + b"RAWEND 18\n" + sep + b"DONE\n")
    whole = _stream("reduce", [data], tmp_path).finish("lost")
    bytewise = _stream("reduce", [data[i:i + 1] for i in range(len(data))], tmp_path)
    items = bytewise.finish("lost")
    assert [(i.name, i.mode) for i in items] == [(i.name, i.mode) for i in whole] == \
        [("gpu7:/logs/a.log", "reduce"), ("gpu7:/logs/b c.gz", "fetch")]
    with open(items[0].local_path, "rb") as f:
        assert f.read() == b"\n\nDecode batch x\n  line\n\n\n"     # 6 lines, at their numbers
    with open(items[1].local_path, "rb") as f:                  # 18 bytes, a forged line in them
        assert f.read() == b"\x1f\x8b" + sep + b"ERR x\n"
    assert (items[0].total_lines, items[0].filtered_lines, items[0].blank_filtered) == (6, 4, 1)


def test_a_stream_cut_before_its_end_fails_what_did_not_arrive_whole(tmp_path):
    sep = b"\x1eEAGLELOG "
    st = _stream("reduce", [sep + b"HELLO 2 none\n" + sep + b"FILE 9 1 =/logs/a.log\n"
                            + sep + b"END 2 0 0 0\n" + sep + b"FILE 9 1 =/logs/b.log\n1:x\n"],
                 tmp_path)
    items = st.finish("the connection ended during the transfer (eaglelog test)")
    assert [i.mode for i in items] == ["reduce", "error"] and not st.done
    assert items[1].notes[0] == "the connection ended during the transfer (eaglelog test)"
    assert items[1].local_path == ""


def test_a_file_is_handed_over_whole_once_the_next_one_begins(tmp_path):
    """remote.fetch_progressive reads each file while the rest arrive: the stream hands a
    file to on_ready only when the next FILE section starts (its STATUS line, a decompressor
    that failed, comes before that), and the list at the end is the same items, in order."""
    sep = b"\x1eEAGLELOG "
    from eaglelog.io.remote import _Stream
    st = _Stream(parse_remote("gpu7:/logs/*"), RemoteOptions(cache_dir=str(tmp_path)),
                 str(tmp_path), "reduce")
    ready = []
    st.on_ready = lambda it: ready.append((it.name, it.mode, bool(it.notes)))
    parts = [sep + b"HELLO 2 none\n", sep + b"FILE 9 1 =/logs/a.gz\n1:Decode batch x\n",
             sep + b"END 1 0 0 0\n",
             sep + b"STATUS 1 x" + b"gzip: unexpected end of file".hex().encode() + b"\n",
             sep + b"FILE 9 1 =/logs/b.log\n1:y\n", sep + b"END 1 0 0 0\n",
             sep + b"ERR nofile =/logs/c.log\n", sep + b"FILE 9 1 =/logs/d.log\n",
             sep + b"END 0 0 0 0\n", sep + b"DONE\n"]
    seen = []
    for p in parts:
        st.feed_wire(p)
        seen.append(len(ready))
    assert seen == [0, 0, 0, 0, 1, 1, 1, 3, 3, 3]
    assert ready[0] == ("gpu7:/logs/a.gz", "error", True)      # the STATUS line applied
    assert ready[1:] == [("gpu7:/logs/b.log", "reduce", False),
                         ("gpu7:/logs/c.log", "error", True)]
    items = st.finish("lost")
    assert [i.name for i in items][:3] == [r[0] for r in ready]
    assert [i.name for i in items] == ["gpu7:/logs/a.gz", "gpu7:/logs/b.log",
                                       "gpu7:/logs/c.log", "gpu7:/logs/d.log"]


def test_arrivals_yield_what_came_then_the_rest_and_again_on_a_second_reading():
    from eaglelog.io.remote import Arrivals
    arr = Arrivals()
    arr.q.put(("item", "a"))
    arr.q.put(("item", "b"))
    arr.q.put(("done", ["a", "b", "c"]))
    assert list(arr) == ["a", "b", "c"] and list(arr) == ["a", "b", "c"]
    failed = Arrivals()
    failed.q.put(("done", eaglelog.InputError("host: no such file")))
    assert list(failed) == [] and isinstance(failed.result, eaglelog.InputError)
