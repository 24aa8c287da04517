"""A real OpenSSH server on 127.0.0.1 for the remote tests (throwaway keys in a temp dir).

The server runs as root (as the tests do) and lets in one unprivileged user, ``eaglelogtest``
(created if missing), so that a file the user may not read gives a real 'permission denied'.
If sshd cannot start, the tests fail: they never skip.
"""
from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time

USER = "eaglelogtest"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], check=True)
        # not locked (sshd refuses locked accounts without PAM), but no password either
        subprocess.run(["usermod", "-p", "*", USER], check=True)
        return pwd.getpwnam(USER)


class Sshd:
    def __init__(self, root: str) -> None:
        self.root = root
        sshd = shutil.which("sshd") or "/usr/sbin/sshd"
        if not os.path.exists(sshd):
            raise RuntimeError("sshd is not installed: apt-get install openssh-server "
                               "(.ci/run does this)")
        self.user = ensure_user()
        os.makedirs("/run/sshd", exist_ok=True)        # privilege separation directory
        os.chmod(root, 0o755)
        for name in ("host_key", "client_key", "other_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            os.path.join(root, name)], check=True)
        auth = os.path.join(root, "authorized_keys")
        shutil.copy(os.path.join(root, "client_key.pub"), auth)
        os.chmod(auth, 0o644)
        self.port = free_port()
        cfg = os.path.join(root, "sshd_config")
        with open(cfg, "w") as f:
            f.write(f"""Port {self.port}
ListenAddress 127.0.0.1
HostKey {root}/host_key
PidFile {root}/sshd.pid
AuthorizedKeysFile {auth}
AllowUsers {USER}
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
UsePAM no
StrictModes no
LogLevel ERROR
""")
        self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", cfg], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(4).startswith(b"SSH-"):
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = self.proc.stdout.read().decode() if self.proc.poll() is not None else ""
                raise RuntimeError(f"sshd did not start on port {self.port}: {out}")
            time.sleep(0.1)
        self.client_config = os.path.join(root, "ssh_config")
        with open(self.client_config, "w") as f:
            f.write(f"""Host testhost
  HostName 127.0.0.1
  Port {self.port}
  User {USER}
  IdentityFile {root}/client_key
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
Host *
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
  IdentitiesOnly yes
""")
        self.ssh = f"ssh -F {self.client_config}"
        # one folder per server: concurrent runs (tests, a benchmark) never share files
        self.data = os.path.join(self.user.pw_dir, "logs-" + os.path.basename(root))
        os.makedirs(self.data, exist_ok=True)
        os.chown(self.data, self.user.pw_uid, self.user.pw_gid)

    def put(self, name: str, content: bytes, mode: int = 0o644) -> str:
        """A file in the test user's log folder; returns its remote path."""
        path = os.path.join(self.data, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(content)
        os.chown(path, self.user.pw_uid, self.user.pw_gid)
        os.chmod(path, mode)
        return path

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.data, ignore_errors=True)
