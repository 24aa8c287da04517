"""--follow on a growing, rotating local log and on a remote log (real processes, real SIGINT)."""
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
    return p


def wait_for(proc, text, timeout=20, stream="stdout"):
    """Read ``stream`` until ``text`` appears (the refreshes are printed as they come: on
    stderr when the output format is not the text table)."""
    import select
    deadline = time.monotonic() + timeout
    fd = getattr(proc, stream).fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            proc.seen[stream] += chunk.decode()
            if text in proc.seen[stream]:
                return proc.seen[stream]
    proc.kill()                  # a failed test leaves no follower polling behind
    proc.communicate()
    raise AssertionError(f"{text!r} did not appear; got {proc.seen[stream][-500:]!r}")


def stop(proc):
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
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
                                  "prefill": 80, "server_args": 2, "requests": 80}
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
        code, out, err = stop(p)
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
        code, out, err = stop_after(p, 10)
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
