"""--follow on a growing, rotating local log and on a remote log (real processes, real SIGINT)."""
import codecs
import json
import os
import signal
import subprocess
import sys
import time


from conftest import SAMPLES

FIVE = (SAMPLES / "eagle3_5step.log").read_bytes()
TWO = (SAMPLES / "eagle3_2step.log").read_bytes()


def start(*args, env=None):
    p = subprocess.Popen([sys.executable, "-m", "eaglelog", *map(str, args)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, **(env or {})})
    p.seen = {"stdout": "", "stderr": ""}
    p.dec = {k: codecs.getincrementaldecoder("utf-8")() for k in p.seen}
    return p


def wait_for(proc, text, timeout=90, stream="stdout"):
    """Read ``stream`` until ``text`` appears (the refreshes are printed as they come: on
    stderr when the output format is not the text table).  A wait on a condition: the timeout
    is generous (a loaded machine), never a measurement."""
    import select
    deadline = time.monotonic() + timeout
    fd = getattr(proc, stream).fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            # a read may end inside a multi-byte character ('…'): decode incrementally
            proc.seen[stream] += proc.dec[stream].decode(chunk)
            if text in proc.seen[stream]:
                return proc.seen[stream]
    proc.kill()                  # a failed test leaves no follower polling behind
    proc.communicate()
    raise AssertionError(f"{text!r} did not appear; got {proc.seen[stream][-500:]!r}")


def stop(proc, sig=signal.SIGINT):
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return (proc.returncode, proc.seen["stdout"] + out.decode(),
            proc.seen["stderr"] + err.decode())


def test_follow_a_growing_and_rotated_local_log(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(FIVE[:len(FIVE) // 2])
    p = start("parse", "--follow", "--interval", "0.3", "-f", "json", log)
    wait_for(p, "following; Ctrl-C to stop", stream="stderr")
    with open(log, "ab") as f:
        f.write(FIVE[len(FIVE) // 2:])            # the rest of the first run
    time.sleep(1.0)
    os.rename(log, tmp_path / "server.log.1")     # rotation: a new file under the old name
    log.write_bytes(TWO)
    wait_for(p, "server-args 2", stream="stderr")
    code, out, err = stop(p)
    assert code == 0, err
    final = json.loads(out)          # stdout holds the final JSON only; the views went to stderr
    assert final[0]["tables"] == {"prof": 90, "prof_phases": 360, "decode": 226,
                                  "prefill": 80, "server_args": 2, "requests": 80,
                                  "spec_params": 0}
    assert "Traceback" not in err


def test_follow_summary_stops_cleanly_on_sigint(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(FIVE)
    p = start("summary", "--follow", "--interval", "0.3", "--baseline-toks", "90", log)
    wait_for(p, "BELOW break-even")
    time.sleep(1.2)                  # four more polls of an unchanged log: nothing reprinted
    code, out, err = stop(p)
    assert code == 0 and "Traceback" not in err
    assert out.count("(following; Ctrl-C to stop) ---") == 1
    final = out[out.rindex("(following; Ctrl-C to stop) ---"):]
    assert final.count("cycle           27.28 ms") == 2   # the last refresh, then the final view


def test_follow_needs_one_log(run, tmp_path):
    r = run("parse", "--follow", SAMPLES / "eagle3_5step.log", SAMPLES / "baseline.log")
    assert r.exit_code == 2 and "--follow reads one log" in r.stderr


def test_follow_a_remote_log():
    from sshd import Sshd
    import shutil
    import tempfile
    root = tempfile.mkdtemp(prefix="eaglelog-sshd-")
    server = Sshd(root)
    try:
        path = server.put("live.log", FIVE)
        p = start("parse", "--follow", "--interval", "0.3", "-f", "json", f"testhost:{path}",
                  env={"EAGLELOG_SSH": server.ssh})
        wait_for(p, "decode 106", stream="stderr")
        with open(path, "ab") as f:
            f.write(TWO)
        wait_for(p, "decode 226", stream="stderr")
        code, out, err = stop(p, signal.SIGTERM)         # SIGTERM ends it as Ctrl-C does
        assert code == 0, err
        final = json.loads(out)
        assert final[0]["tables"]["decode"] == 226 and final[0]["tables"]["prof"] == 90
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_copytruncate_between_two_polls_is_noticed(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(FIVE[:len(FIVE) // 2])
    p = start("parse", "--follow", "--interval", "0.3", "-f", "json", log)
    wait_for(p, "following; Ctrl-C to stop", stream="stderr")
    (tmp_path / "server.log.1").write_bytes(log.read_bytes())
    with open(log, "r+b") as f:                  # truncate and refill before the next poll
        f.truncate(0)
        f.write(TWO)
    wait_for(p, "2 server start-ups", stream="stderr")
    code, out, err = stop(p)
    assert code == 0, err
    final = json.loads(out)
    want = FIVE[:len(FIVE) // 2].count(b"Decode batch") + TWO.count(b"Decode batch")
    assert final[0]["tables"]["decode"] == want


def test_remote_follow_errors_and_cleanup():
    from sshd import Sshd
    import shutil
    import tempfile
    root = tempfile.mkdtemp(prefix="eaglelog-sshd-")
    server = Sshd(root)
    env = {"EAGLELOG_SSH": server.ssh}
    try:
        p = start("parse", "--follow", "testhost:/nonexistent.log", env=env)
        code, out, err = stop_after(p, 60)
        assert code == 1 and "testhost:/nonexistent.log: no such file" in err
        path = server.put("live.log", FIVE)
        p = start("parse", "--follow", "--interval", "0.3", f"testhost:{path}", env=env)
        wait_for(p, "decode 106")
        stop(p)
        time.sleep(1)
        left = subprocess.run(["pgrep", "-u", "eaglelogtest", "-f", "tail -n"],
                              capture_output=True, text=True).stdout
        assert left == "", f"tail still running on the host: {left}"
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def stop_after(proc, seconds):
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    return proc.returncode, out.decode(), err.decode()


# ------------------------------------------------------------------ signals, chunks, refusals

def test_a_signal_during_a_snapshot_loses_nothing(tmp_path, monkeypatch):
    """SIGINT used to raise KeyboardInterrupt wherever the loop was: inside a snapshot (which
    takes the rows out of the scanner and puts them back) it lost them, and the final view was
    empty or short (the flaky JSONDecodeError of these tests under load)."""
    from eaglelog.io import follow
    from eaglelog.parsers import scan
    log = tmp_path / "server.log"
    log.write_bytes(FIVE)
    original = scan.Scanner.parts_so_far
    sent = []

    def interrupted(self):
        parts = original(self)            # the rows are out of the scanner now
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        return parts
    monkeypatch.setattr(scan.Scanner, "parts_so_far", interrupted)
    views = []
    got = follow.follow(str(log), lambda lg: f"decode {len(lg.decode)}",
                        lambda text, final: views.append((text, final)), interval=0,
                        stop_after=60)
    assert sent and views[-1] == ("decode 106", True)
    assert len(got.decode) == 106 and len(got.prof) == 42


def test_a_second_signal_while_the_final_view_is_made_is_ignored(tmp_path):
    from eaglelog.io import follow
    log = tmp_path / "server.log"
    log.write_bytes(FIVE)
    views, finals = [], []

    def emit(text, final):
        if final:                          # Ctrl-C again, as the final view is printed
            os.kill(os.getpid(), signal.SIGINT)
        views.append((text, final))
    try:
        follow.follow(str(log), lambda lg: f"decode {len(lg.decode)}", emit, interval=0.1,
                      stop_after=0.5)
    except KeyboardInterrupt:
        raise AssertionError("the second Ctrl-C cut the final view short") from None
    assert views[-1] == ("decode 106", True)

    def final(lg):                         # what the CLI prints last (-f json …) is covered too
        os.kill(os.getpid(), signal.SIGTERM)
        finals.append(len(lg.decode))
    follow.follow(str(log), lambda lg: "", lambda text, fin: None, interval=0.1,
                  stop_after=0.5, final=final)
    assert finals == [106]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored


def test_follow_refuses_a_remote_glob_before_ssh_runs(run, tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    wrapper = tmp_path / "ssh"
    wrapper.write_text(f"#!/bin/sh\necho x >> {calls}\nexec ssh \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("EAGLELOG_SSH", str(wrapper))
    r = run("summary", "--follow", "gpu7:/data/logs/*.log")
    assert r.exit_code == 2
    assert r.stderr.strip() == ("eaglelog: error: gpu7:/data/logs/*.log: --follow reads one "
                                "file, not a remote glob; run one eaglelog --follow per file")
    assert not calls.exists()


def test_an_existing_file_is_read_in_chunks_across_a_rotation(tmp_path):
    from eaglelog.io.follow import LocalTail
    log = tmp_path / "server.log"
    log.write_bytes(FIVE * 3)
    tail = LocalTail(str(log), chunk=64 << 10)
    got = [tail.read()]
    os.rename(log, tmp_path / "server.log.1")        # rotated before the rest was read
    log.write_bytes(TWO)
    while True:
        block = tail.read()
        if not block:
            break
        got.append(block)
    tail.close()
    assert max(map(len, got)) <= 64 << 10 and len(got) > 3
    assert b"".join(got) == FIVE * 3 + TWO and tail.rotations == 1


def test_a_rotation_after_a_line_without_newline_keeps_the_lines_apart(tmp_path):
    from eaglelog.io.follow import LocalTail
    log = tmp_path / "server.log"
    log.write_bytes(b"one\ntwo")
    tail = LocalTail(str(log))
    got = tail.read()
    os.rename(log, tmp_path / "server.log.1")
    log.write_bytes(b"three\n")
    for _ in range(3):
        got += tail.read()
    tail.close()
    assert got == b"one\ntwo\nthree\n"


def test_follow_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "eaglelog", "parse", "--follow", str(fifo)],
                       capture_output=True, text=True, timeout=60)   # it used to block in open()
    assert r.returncode == 1
    assert r.stderr.strip() == (f"eaglelog: error: {fifo}: not a regular file (a FIFO, socket "
                                "or device: --follow reads log files)")
