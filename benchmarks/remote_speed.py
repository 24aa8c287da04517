#!/usr/bin/env python3
"""Remote reads over a real sshd on 127.0.0.1: remote-side reduction vs --fetch vs the cache.

    python benchmarks/remote_speed.py                # 100 MB log from shared/bench/genlog.py
    python benchmarks/remote_speed.py --noise 0.9    # a log that is 90 % noise lines
    python benchmarks/remote_speed.py --many 2000    # 2,000 small logs on one host

Starts a throwaway sshd (tests/sshd.py; needs root and openssh-server), puts the log in the test
user's home, and times whole `eaglelog parse` processes: bytes transferred come from eaglelog's
own JSON overview, `ssh cat > /dev/null` and `ssh grep -c` are references in the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
GENLOG = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "bench", "genlog.py"))


def timed(cmd: list[str], env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return time.perf_counter() - t0, p.stdout


def main() -> None:
    from parse_speed import bytecode_as_installed    # (this folder)
    bytecode_as_installed()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=100)
    ap.add_argument("--log", help="use this log instead of generating one")
    ap.add_argument("--noise", type=float, default=0.0,
                    help="add this share of noise lines (HTTP access lines) to the log")
    ap.add_argument("--many", type=int, metavar="N",
                    help="instead: N copies of the bundled 5-step sample on the host, read with "
                         "one glob (one ssh connection): parse and summary")
    args = ap.parse_args()
    from sshd import Sshd
    if args.many:
        return many(args.many, Sshd)

    log = args.log or f"/tmp/eaglelog-bench-{args.size_mb:g}MB.log"
    if not os.path.exists(log):
        if not os.path.exists(GENLOG):
            sys.exit(f"remote_speed.py: {GENLOG} is not here; give --log FILE")
        subprocess.run([sys.executable, GENLOG, log, str(args.size_mb)], check=True)
    data = open(log, "rb").read()
    if args.noise:
        line = b'[2026-01-20 10:00:00] INFO:     127.0.0.1:40000 - "POST /v1/chat/completions ' \
               b'HTTP/1.1" 200 OK\n'
        data += line * int(len(data) * args.noise / (1 - args.noise) / len(line))
    root = tempfile.mkdtemp(prefix="eaglelog-sshd-")
    server = Sshd(root)
    cache = tempfile.mkdtemp(prefix="eaglelog-cache-")
    try:
        path = server.put("bench.log", data)
        env = {**os.environ, "EAGLELOG_SSH": server.ssh, "XDG_CACHE_HOME": cache}
        eag = [shutil.which("eaglelog") or sys.executable, *([] if shutil.which("eaglelog")
                                                              else ["-m", "eaglelog"])]
        print(f"log: {len(data) / 1e6:.1f} MB over ssh to 127.0.0.1 (2 cores, loopback)")
        print(f"{'how':<34} {'wall s':>7} {'MB moved':>9} {'records (decode)':>17}")
        ref, _ = timed(server.ssh.split() + ["testhost", f"cat {path}"], env)
        print(f"{'ssh cat > /dev/null (reference)':<34} {ref:>7.2f} {len(data) / 1e6:>9.1f}")
        g, out = timed(server.ssh.split() + ["testhost", f"grep -c 'Decode batch' {path}"], env)
        print(f"{'ssh grep -c (reference)':<34} {g:>7.2f} {'~0':>9} {out.strip():>17}")
        for label, extra in (("eaglelog parse (remote reduction)", []),
                             ("eaglelog parse --fetch (first)", ["--fetch"]),
                             ("eaglelog parse --fetch (cached)", ["--fetch"])):
            t, out = timed(eag + ["-q", "parse", "-f", "json", *extra, f"testhost:{path}"], env)
            item = json.loads(out)[0]
            moved = item.get("remote", {}).get("transferred", 0)
            print(f"{label:<34} {t:>7.2f} {moved / 1e6:>9.1f} {item['tables']['decode']:>17}")
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)


def many(n: int, Sshd) -> None:
    """N small logs on the host, one `eaglelog parse|summary testhost:DIR/*.log` each."""
    sample = open(os.path.join(HERE, "..", "sample_logs", "eagle3_5step.log"), "rb").read()
    root = tempfile.mkdtemp(prefix="eaglelog-sshd-")
    server = Sshd(root)
    cache = tempfile.mkdtemp(prefix="eaglelog-cache-")
    try:
        for i in range(n):
            path = server.put(f"many/log{i:05d}.log", sample)
        folder = os.path.dirname(path)
        env = {**os.environ, "EAGLELOG_SSH": server.ssh, "XDG_CACHE_HOME": cache,
               "EAGLELOG_NO_CACHE": "1"}
        eag = [shutil.which("eaglelog") or sys.executable, *([] if shutil.which("eaglelog")
                                                              else ["-m", "eaglelog"])]
        print(f"{n} logs of {len(sample) / 1e3:.0f} KB over ssh to 127.0.0.1 (2 cores, loopback)")
        print("| how | wall s | per log ms |")
        print("|---|---:|---:|")
        ref, _ = timed(server.ssh.split() + ["testhost", f"cat {folder}/*.log | grep -c "
                                             "'Decode batch'"], env)
        print(f"| ssh cat … \\| grep -c (reference) | {ref:.2f} | {1000 * ref / n:.1f} |")
        for cmd in ("parse", "summary"):
            t, _ = timed(eag + ["-q", cmd, f"testhost:{folder}/*.log"], env)
            print(f"| eaglelog {cmd} testhost:…/*.log | {t:.2f} | {1000 * t / n:.1f} |",
                  flush=True)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
