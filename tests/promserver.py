"""A real Prometheus server on 127.0.0.1 for the metrics tests (Debian's ``prometheus``
package: /usr/bin/prometheus; .ci/run installs it), with a generated config and a temporary
storage directory.  If it cannot start, the tests fail: they never skip (as tests/sshd.py)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

BINARY = "/usr/bin/prometheus"


_GIVEN: set[int] = set()


def free_port() -> int:
    """A free port on 127.0.0.1, never one handed out before in this process (the exporter
    binds its ports seconds later, after simulating its runs)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


class Prometheus:
    """``Prometheus(root, jobs={"sglang": ["127.0.0.1:9101", …]}, scrape_interval="250ms",
    rule_files=[…])``; ``.url`` is http://127.0.0.1:PORT; ``stop()`` ends it."""

    def __init__(self, root: str, jobs: dict[str, list[str]], scrape_interval: str = "1s",
                 evaluation_interval: str = "1s", rule_files: list[str] = ()) -> None:
        binary = BINARY if os.path.exists(BINARY) else shutil.which("prometheus")
        if not binary:
            raise RuntimeError("prometheus is not installed: apt-get install prometheus "
                               "(.ci/run does this)")
        self.root = root
        os.makedirs(root, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cfg = os.path.join(root, "prometheus.yml")
        lines = ["global:", f"  scrape_interval: {scrape_interval}",
                 f"  scrape_timeout: {scrape_interval}",
                 f"  evaluation_interval: {evaluation_interval}"]
        if rule_files:
            lines += ["rule_files:"] + [f"  - {json.dumps(f)}" for f in rule_files]
        lines.append("scrape_configs:")
        for job, targets in jobs.items():
            lines += [f"  - job_name: {json.dumps(job)}", "    static_configs:",
                      f"      - targets: {json.dumps(list(targets))}"]
        with open(cfg, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.log_path = os.path.join(root, "prometheus.log")
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(root, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=1d",
             "--log.level=warn", "--web.enable-lifecycle"],
            stdout=self._log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.proc.returncode}: "
                                   f"{self.log()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"prometheus did not become ready in {timeout:.0f} s: "
                           f"{self.log()[-2000:]}")

    def log(self) -> str:
        self._log.flush()
        with open(self.log_path) as f:
            return f.read()

    def query(self, expr: str, at: float | None = None) -> list:
        q = urllib.parse.urlencode({"query": expr, **({"time": f"{at:.3f}"} if at else {})})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=10) as r:
            obj = json.loads(r.read())
        assert obj["status"] == "success", obj
        return obj["data"]["result"]

    def targets_up(self) -> dict[str, float]:
        return {r["metric"]["instance"]: float(r["value"][1]) for r in self.query("up")}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def broken_proxy(upstream: str, drop=None, mode: str = "partial"):
    """An HTTP server in front of the real Prometheus ``upstream`` that answers as a Prometheus
    in trouble does, for what a single real server cannot be made to do on demand:
    ``mode="partial"`` — status success with a ``warnings`` list and the series ``drop(metric)``
    selects left out of every query of series (a sharded or remote-read store that lost a
    shard: Prometheus' partial_response); ``mode="html"`` — 503 with an HTML page (a proxy or
    load balancer in front of a Prometheus that is down).  ``.server_port``; ``.shutdown()``."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if mode == "html":
                body = b"<html><body><h1>503 Service Unavailable</h1></body></html>"
                self.send_response(503)
                self.send_header("Content-Type", "text/html")
            else:
                with urllib.request.urlopen(upstream + self.path, timeout=10) as r:
                    obj = json.loads(r.read())
                res = obj.get("data", {}).get("result")
                if isinstance(res, list) and "__name__" in urllib.parse.unquote(self.path):
                    obj["data"]["result"] = [x for x in res if not drop(x.get("metric", {}))]
                    obj["warnings"] = ["store 10.0.0.9:10901 unavailable: partial response"]
                body = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


# ---------------------------------------------------------------------------------------------
# One environment for the whole session (tests/test_prom.py and tests/test_watch_fleet.py): a
# real exporter process serving simulated SGLang and vLLM instances in real time, SPEED times
# faster than simulated (every rate is SPEED times the simulated one: the tests scale the
# baseline by SPEED and compare speedups, accept lengths and break-evens, which do not change),
# and a real Prometheus scraping them every SCRAPE.
SPEED = 20.0
SCRAPE = "250ms"
REF_S = 300.0                  # simulated seconds of the reference instances
FLEET_S = 300.0                # as long as the reference runs: 60 windows each, no longer a replay
FLEET_SCALES = [round(0.7 * (2.0 / 0.7) ** (i / 18), 4) for i in range(19)]  # 19 cycle scales
# (6 % apart; acceptance alike: no per-request difficulty, a small drift) …
COLLAPSED = 0.3                # … and one instance whose acceptance collapsed
RULES_WINDOW = "10s"           # the generated rules' window: 10 s fit inside the 15 s replay
_ENV: dict = {}


def reference_phase(seed: int = 1) -> dict:
    return {"scenario": "reference", "seed": seed, "overrides": {"duration_s": REF_S}}


def fleet_phases() -> list[list[dict]]:
    alike = {"duration_s": FLEET_S, "difficulty_sd": 0.0, "drift_sd": 0.1}
    out = [[{"scenario": "reference", "seed": 100 + i,
             "overrides": {**alike, "cycle_scale": sc}}]
           for i, sc in enumerate(FLEET_SCALES)]
    out.append([{"scenario": "reference", "seed": 200,
                 "overrides": {**alike, "accept_probs": [COLLAPSED]}}])
    return out


def shared_env(tmp_root: str) -> dict:
    """Start (once) the exporter and Prometheus, wait until the simulated runs have been
    replayed, and return {"prom": Prometheus, "ports": {...}, "t0": …, "t_end": …}."""
    if _ENV:
        return _ENV
    import atexit
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    ports = {name: free_port() for name in ("sglang", "vllm", "down", "empty", "restart")}
    fleet_ports = [free_port() for _ in fleet_phases()]
    inst = [{"port": ports["sglang"], "engine": "sglang", "phases": [reference_phase()]},
            {"port": ports["vllm"], "engine": "vllm", "phases": [reference_phase()]},
            {"port": ports["down"], "mode": "404", "phases": []},
            {"port": ports["empty"], "mode": "empty", "phases": []},
            # an SGLang server restarted half-way: its counters start again from 0
            {"port": ports["restart"], "engine": "sglang", "phases": [reference_phase(5)],
             "restart_at_s": REF_S / 2}]
    for i, (port, ph) in enumerate(zip(fleet_ports, fleet_phases())):
        inst.append({"port": port, "engine": "sglang" if i % 2 else "vllm", "phases": ph,
                     "model": "/models/llama-3.1-8b-instruct"})
    go = os.path.join(tmp_root, "go")
    truth = os.path.join(tmp_root, "truth.json")
    spec = {"clock": "real", "speed": SPEED, "start_on": go, "lifetime_s": 300,
            "instances": inst, "truth_out": truth}
    os.makedirs(tmp_root, exist_ok=True)
    spec_path = os.path.join(tmp_root, "exporter.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    # the exporter simulates its runs while Prometheus starts (its first scrapes come a few
    # seconds after it is ready: target discovery is applied every 5 s)
    exp = subprocess.Popen([sys.executable, os.path.join(here, "exporter.py"), spec_path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    atexit.register(lambda: (exp.kill(), exp.wait()))
    rules = os.path.join(tmp_root, "rules.yml")
    from eaglelog.live.rules import rules_yaml
    with open(rules, "w") as f:
        f.write(rules_yaml(90 * SPEED, window=RULES_WINDOW, hold="0s"))
    prom = Prometheus(os.path.join(tmp_root, "prom"),
                      {"reference": [f"127.0.0.1:{ports[k]}" for k in ("sglang", "vllm")],
                       "broken": [f"127.0.0.1:{ports[k]}" for k in ("down", "empty",
                                                                     "restart")],
                       "fleet": [f"127.0.0.1:{p}" for p in fleet_ports]},
                      scrape_interval=SCRAPE, rule_files=[rules])
    atexit.register(prom.stop)
    line = exp.stdout.readline()
    if line.strip() != "ready":
        exp.kill()
        raise RuntimeError(f"the exporter did not start: {line} {exp.stderr.read()[-2000:]}")
    # start the replay once Prometheus has scraped every serving target
    serving = {f"127.0.0.1:{p}" for p in [ports["sglang"], ports["vllm"], ports["empty"],
                                          ports["restart"]] + fleet_ports}
    deadline = time.monotonic() + 30
    while True:
        up = prom.targets_up()
        if all(up.get(t) == 1.0 for t in serving):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"Prometheus does not scrape the exporter: {up}")
        time.sleep(0.05)
    open(go, "w").close()
    t0 = time.time()
    t_end = t0 + REF_S / SPEED
    wait = t_end + 1.0 - time.time()
    if wait > 0:
        time.sleep(wait)
    with open(truth) as f:
        truths = json.load(f)
    _ENV.update(prom=prom, ports=ports, fleet_ports=fleet_ports, t0=t0, t_end=t_end,
                exporter=exp, spec=spec, truths=truths)
    return _ENV
