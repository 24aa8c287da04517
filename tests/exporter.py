"""A real exporter process for the metrics tests: prometheus_client serving the metric families
of SGLang or vLLM, with their real names and labels, driven by a simulated server run
(simlab/simulate.py) whose truth is known.

    python tests/exporter.py SPEC.json        # serves until killed; prints "ready" when up

SPEC: {"clock": "real" | "scrape", "speed": 1.0, "advance_s": 5.0, "start_delay_s": 0.0,
       "start_on": PATH (the real clock starts when this file appears),
       "truth_out": PATH (the truth of each instance's runs is written there, by port),
       "instances": [{"port": P, "engine": "sglang" | "vllm", "mode": "ok" | "404" | "empty",
                      "model": "…", "phases": [{"scenario": "reference", "seed": 1,
                      "overrides": {…}}, …], "restart_at_s": null,
                      "latency": ["ttft", "tpot"] (the histograms exposed)}, …]}

``GET /rewind`` sets an instance's scrape clock back to the start.

Clocks: ``real`` — simulated time = (wall time − start) × speed, each sample stamped with the
wall time its value was computed at (so that a scrape's latency, × speed in simulated time, is
no timing noise; the engines send no timestamps and Prometheus stamps the scrape); ``scrape`` —
every scrape
of an instance advances its simulated time by advance_s and the samples carry that time as
their timestamp (the text format's optional timestamp, which readers honour), so that a test
sees the same windows however fast it scrapes.

Each phase is one simulated run; phases follow each other without a restart (a deploy that
changed acceptance, say).  What is exposed at simulated time s (ms), per engine:

* SGLang v0.5.10 (observability/metrics_collector.py, scheduler_metrics_mixin.py): gauges of
  the latest Decode batch line at or before s (num_running_reqs, num_queue_reqs, gen_throughput,
  token_usage, num_used_tokens, spec_accept_length, spec_accept_rate, unrounded), counters
  realtime_tokens_total{mode=decode} (Σ tokens committed per iteration), {mode=prefill_compute}
  and {mode=prefill_cache} (per prefill batch), cuda_graph_passes_total{mode=decode_cuda_graph|
  decode_none} (one per decode iteration) and {mode=prefill_none} (one per prefill batch);
  tokenizer counters prompt_tokens_total, generation_tokens_total, num_requests_total (per
  finished request).  Labels model_name,
  engine_type, tp_rank, pp_rank, moe_ep_rank (tokenizer: model_name).
* vLLM V1 (vllm/v1/metrics/loggers.py, vllm/v1/spec_decode/metrics.py): counters
  spec_decode_num_drafts (request-verifies), _num_draft_tokens (k each), _num_accepted_tokens,
  _num_accepted_tokens_per_pos{position}, generation_tokens (emitted), prompt_tokens; gauges
  num_requests_running (the latest step's batch), num_requests_waiting, kv_cache_usage_perc
  (a fraction).  Labels model_name, engine.
* Both: the latency histograms time_to_first_token_seconds (observed when a request's first
  token comes: the end of its prefill batch − its arrival) and
  request_time_per_output_token_seconds (observed when it finishes: (finish − first token) /
  (tokens − 1)), with each engine's default buckets (SGLang 0.5.23
  observability/metrics_collector.py, vLLM 0.34.0 v1/metrics/buckets.py; SGLang's carry
  is_streaming="false", as the simulated requests do not stream).
"""
from __future__ import annotations

import json
import math
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from simlab import simulate as S  # noqa: E402


# the engines' default buckets (docs/formats-metrics.md §9)
BUCKETS = {
    ("sglang", "ttft"): (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400),
    ("sglang", "tpot"): (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035,
                         0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000,
                         4.000, 6.000, 8.000),
    ("vllm", "ttft"): (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                       2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0),
    ("vllm", "tpot"): (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
                       5.0, 7.5, 10.0, 20.0, 40.0, 80.0),
}


class _Capture(S._Sim):
    """The simulator, keeping what its log does not print: every prefill batch's time and
    tokens, every finished request, and the accepted drafts of every verify by position."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.prefills: list[tuple[float, int, int]] = []
        self.finishes: list[tuple[float, int, int]] = []
        self.accepts: list[tuple[int, np.ndarray]] = []
        self.first: dict = {}                       # request id -> its first token's time
        self.ttfts: list[tuple[float, float]] = []  # (time observed, TTFT) in ms
        self.tpots: list[tuple[float, float]] = []  # (time observed, TPOT) in ms

    def prefill_line(self, admit, new_tok, running, queue, kv_before, kv_after, t_sched, t_end,
                     it):
        self.prefills.append((t_end, int(new_tok), int(sum(r.cached for r in admit))))
        for r in admit:
            self.first[r.rid] = t_end
            self.ttfts.append((t_end, t_end - r.arrive))
        return super().prefill_line(admit, new_tok, running, queue, kv_before, kv_after,
                                    t_sched, t_end, it)

    def finish_line(self, r, t):
        self.finishes.append((t, int(r.out_len), int(r.prompt)))
        if r.out_len > 1 and r.rid in self.first:
            self.tpots.append((t, (t - self.first.pop(r.rid)) / (r.out_len - 1)))
        return super().finish_line(r, t)

    def trajectory(self, r, s):
        super().trajectory(r, s)
        self.accepts.append((r.start, np.asarray(r.tok, dtype=np.int64) - 1))


def scenario_of(phase: dict) -> S.Scenario:
    sc = S.SCENARIOS[phase.get("scenario", "reference")]
    over = dict(phase.get("overrides") or {})
    for key in ("clients", "accept_probs"):
        if key in over and isinstance(over[key], list):
            over[key] = tuple(tuple(x) if isinstance(x, list) else x for x in over[key])
    return sc.replace(**over)


class Timeline:
    """Cumulative counters and gauge events of one or more phases, in simulated ms."""

    def __init__(self, phases: list[dict]):
        it_t, it_b, it_t_tok, it_graph, pos = [], [], [], [], []
        dec = {k: [] for k in ("t", "accept_len", "accept_rate", "gen", "running", "kv",
                               "used", "queue")}
        pre_t, pre_tok, pre_cached, fin_t, fin_out, fin_prompt = [], [], [], [], [], []
        it_q, it_kv = [], []
        lat = {"ttft": [], "tpot": []}
        offset = 0.0
        self.k = None
        self.logs = []
        self.truths = []          # simlab.simulate.Truth of each phase
        for ph in phases:
            sc = scenario_of(ph)
            sim = _Capture(sc, int(ph.get("seed", 1)), True, True, 1.0, True)
            sim.run()
            tr = sim.truth()
            self.truths.append(tr)
            self.logs.append(S.HEADER.format(name=sc.name, seed=ph.get("seed", 1))
                             + "".join(sim.lines))
            self.k = sc.k if self.k is None else self.k
            n = sim.n_iter
            it_t.append(sim.TEND[:n] + offset)
            it_b.append(sim.B[:n].astype(float))
            it_t_tok.append(sim.T[:n].astype(float))
            it_graph.append((sim.B[:n] <= sc.cuda_graph_max_bs).astype(float))
            it_q.append(sim.Q[:n].astype(float))
            it_kv.append(sim.KV[:n].astype(float))
            P = np.zeros((sc.k, n))
            for start, acc in sim.accepts:
                m = min(len(acc), n - start)
                if m <= 0:
                    continue
                for j in range(sc.k):
                    P[j, start:start + m] += acc[:m] > j
            pos.append(P)
            w = tr.windows
            ends = w["end_iter"].astype(int)
            dec["t"].append(sim.TEND[ends] + offset)
            dec["accept_len"].append(w["accept_len"])
            dec["accept_rate"].append(w["accept_len"] / (sc.k + 1))
            dec["gen"].append(w["gen_throughput"])
            dec["running"].append(w["running_req"].astype(float))
            dec["kv"].append(sim.KV[ends] / sc.kv_capacity)
            dec["used"].append(sim.KV[ends].astype(float))
            dec["queue"].append(sim.Q[ends].astype(float))
            for t, tok, cached in sim.prefills:
                pre_t.append(t + offset)
                pre_tok.append(tok)
                pre_cached.append(cached)
            for m, obs in (("ttft", sim.ttfts), ("tpot", sim.tpots)):
                lat[m] += [(t + offset, v) for t, v in obs]
            for t, out, prompt in sim.finishes:
                fin_t.append(t + offset)
                fin_out.append(out)
                fin_prompt.append(prompt)
            offset += sc.duration_s * 1000.0
        self.end_ms = offset
        cat = np.concatenate
        self.it_t = cat(it_t)
        self.cum_tok = np.cumsum(cat(it_t_tok))
        self.cum_b = np.cumsum(cat(it_b))
        self.it_b = cat(it_b)
        g = cat(it_graph)
        self.cum_graph = np.cumsum(g)
        self.cum_nograph = np.cumsum(1 - g)
        self.it_q = cat(it_q)
        self.it_kv = cat(it_kv)
        kmax = max(p.shape[0] for p in pos)
        self.cum_pos = np.cumsum(cat([np.pad(p, ((0, kmax - p.shape[0]), (0, 0))) for p in pos],
                                     axis=1), axis=1)
        self.dec = {k: cat(v) for k, v in dec.items()}
        self.pre_t = np.asarray(pre_t)
        self.cum_pre = np.cumsum(pre_tok) if pre_tok else np.zeros(0)
        self.cum_pre_cached = np.cumsum(pre_cached) if pre_cached else np.zeros(0)
        self.fin_t = np.asarray(fin_t)
        self.cum_fin_out = np.cumsum(fin_out) if fin_out else np.zeros(0)
        self.cum_fin_prompt = np.cumsum(fin_prompt) if fin_prompt else np.zeros(0)
        self.kv_capacity = scenario_of(phases[0]).kv_capacity
        # per latency metric: observation times (ms, sorted), values (s), running sums
        self.lat = {}
        for m, obs in lat.items():
            obs.sort()
            t = np.asarray([o[0] for o in obs], dtype=float)
            v = np.asarray([o[1] / 1000.0 for o in obs], dtype=float)
            self.lat[m] = (t, v, np.cumsum(v) if len(v) else np.zeros(0))

    def histogram(self, metric: str, engine: str, s: float):
        """(cumulative count per bucket bound incl. +Inf, sum) of the observations by ``s``."""
        t, v, cs = self.lat[metric]
        i = int(np.searchsorted(t, s, side="right"))
        bounds = BUCKETS[(engine, metric)]
        seen = np.sort(v[:i])
        counts = [float(np.searchsorted(seen, b, side="right")) for b in bounds] + [float(i)]
        return counts, float(cs[i - 1]) if i else 0.0

    @staticmethod
    def _at(times, cum, s):
        i = int(np.searchsorted(times, s, side="right"))
        return float(cum[i - 1]) if i else 0.0

    def counters(self, s: float) -> dict:
        i = int(np.searchsorted(self.it_t, s, side="right"))
        c = {"tok": float(self.cum_tok[i - 1]) if i else 0.0,
             "b": float(self.cum_b[i - 1]) if i else 0.0,
             "graph": float(self.cum_graph[i - 1]) if i else 0.0,
             "nograph": float(self.cum_nograph[i - 1]) if i else 0.0,
             "pos": self.cum_pos[:, i - 1].astype(float) if i else
             np.zeros(self.cum_pos.shape[0]),
             "pre": self._at(self.pre_t, self.cum_pre, s),
             "prefills": float(np.searchsorted(self.pre_t, s, side="right")),
             "pre_cached": self._at(self.pre_t, self.cum_pre_cached, s),
             "fin": float(np.searchsorted(self.fin_t, s, side="right")),
             "fin_out": self._at(self.fin_t, self.cum_fin_out, s),
             "fin_prompt": self._at(self.fin_t, self.cum_fin_prompt, s)}
        c["acc"] = c["tok"] - c["b"]
        return c

    def gauges(self, s: float, engine: str) -> dict:
        if engine == "vllm":      # set every engine step
            i = int(np.searchsorted(self.it_t, s, side="right"))
            if not i:
                return {"running": 0.0, "queue": 0.0, "kv": 0.0}
            return {"running": float(self.it_b[i - 1]), "queue": float(self.it_q[i - 1]),
                    "kv": float(self.it_kv[i - 1]) / self.kv_capacity}
        j = int(np.searchsorted(self.dec["t"], s, side="right"))
        if not j:                 # SGLang: set where a Decode batch line is printed
            return {k: 0.0 for k in ("accept_len", "accept_rate", "gen", "running", "kv",
                                     "used", "queue")}
        return {k: float(v[j - 1]) for k, v in self.dec.items() if k != "t"}


class Instance:
    def __init__(self, spec: dict, clock: str, speed: float, advance_s: float, t0: float):
        self.spec = spec
        self.engine = spec.get("engine", "sglang")
        self.model = spec.get("model", "/models/llama-3.1-8b-instruct")
        self.tl = Timeline(spec["phases"])
        self.clock, self.speed, self.advance_ms = clock, speed, advance_s * 1000.0
        self.t0 = t0
        self.scrapes = 0
        self.lock = threading.Lock()
        self.restart_ms = spec.get("restart_at_s")
        self.restart_ms = None if self.restart_ms is None else self.restart_ms * 1000.0
        self.epoch0 = time.mktime(S.START.timetuple())

    def now_ms(self) -> float:
        if self.clock == "scrape":
            with self.lock:
                self.scrapes += 1
                return min(self.scrapes * self.advance_ms, self.tl.end_ms + self.advance_ms)
        self.stamp = now = time.time()
        return max(0.0, (now - self.t0) * self.speed * 1000.0) if math.isfinite(self.t0) else 0.0

    def collect(self):
        from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                            HistogramMetricFamily)
        s = self.now_ms()
        c = self.tl.counters(s)
        hist = {m: self.tl.histogram(m, self.engine, s) for m in ("ttft", "tpot")}
        if self.restart_ms is not None and s >= self.restart_ms:
            base = self.tl.counters(self.restart_ms)
            c = {k: v - base[k] for k, v in c.items()}
            for m, (cnt, sm) in hist.items():
                bc, bs = self.tl.histogram(m, self.engine, self.restart_ms)
                hist[m] = ([x - y for x, y in zip(cnt, bc)], sm - bs)
        g = self.tl.gauges(s, self.engine)
        # the scrape clock stamps its simulated time; the real clock the instant it computed
        # the values (time compressed SPEED times would turn a scrape's latency into SPEED
        # times larger timing noise; the engines themselves send no timestamps)
        ts = self.epoch0 + s / 1000.0 if self.clock == "scrape" else self.stamp
        out = []

        def gauge(name, doc, labels, value):
            f = GaugeMetricFamily(name, doc, labels=list(labels))
            f.add_metric(list(labels.values()), value, timestamp=ts)
            out.append(f)

        def counter(name, doc, labels, values, by=None):
            f = CounterMetricFamily(name, doc, labels=list(labels) + ([by] if by else []))
            for sub, v in values:
                f.add_metric(list(labels.values()) + ([sub] if by else []), v, timestamp=ts)
            out.append(f)

        def histogram(name, doc, labels, metric):
            counts, total = hist[metric]
            les = [str(float(b)) for b in BUCKETS[(self.engine, metric)]] + ["+Inf"]
            f = HistogramMetricFamily(name, doc, labels=list(labels))
            f.add_metric(list(labels.values()), list(zip(les, counts)), total, timestamp=ts)
            out.append(f)
        lat_labels = ({"model_name": self.model, "is_streaming": "false"}
                      if self.engine == "sglang" else {"model_name": self.model, "engine": "0"})
        shown = self.spec.get("latency", ["ttft", "tpot"])
        if "ttft" in shown:
            histogram(f"{self.engine}:time_to_first_token_seconds", "Histogram of time to "
                      "first token in seconds.", lat_labels, "ttft")
        if "tpot" in shown:       # (SGLang 0.5.22 →, vLLM #24015 →)
            histogram(f"{self.engine}:request_time_per_output_token_seconds", "Histogram of "
                      "time_per_output_token_seconds per request.", lat_labels, "tpot")
        if self.engine == "sglang":
            lab = {"model_name": self.model, "engine_type": "unified", "tp_rank": "0",
                   "pp_rank": "0", "moe_ep_rank": "0"}
            for name, key, doc in (("num_running_reqs", "running", "The number of running "
                                    "requests."),
                                   ("num_queue_reqs", "queue", "The number of requests in the "
                                    "waiting queue."),
                                   ("gen_throughput", "gen", "The generation throughput "
                                    "(token/s)."),
                                   ("token_usage", "kv", "The token usage."),
                                   ("num_used_tokens", "used", "The number of used tokens."),
                                   ("spec_accept_length", "accept_len", "The average "
                                    "acceptance length of speculative decoding."),
                                   ("spec_accept_rate", "accept_rate", "The average acceptance "
                                    "rate of speculative decoding.")):
                gauge(f"sglang:{name}", doc, lab, g[key])
            counter("sglang:realtime_tokens", "Total number of tokens processed (updated on "
                    "each log interval). mode: prefill_compute, prefill_cache, decode.", lab,
                    [("prefill_compute", c["pre"]), ("prefill_cache", c["pre_cached"]),
                     ("decode", c["tok"])], by="mode")
            counter("sglang:cuda_graph_passes", "The number of forward passes.", lab,
                    [("decode_cuda_graph", c["graph"]), ("decode_none", c["nograph"]),
                     ("prefill_none", c["prefills"])], by="mode")
            tl = {"model_name": self.model}
            counter("sglang:prompt_tokens", "Number of prefill tokens processed.", tl,
                    [(None, c["fin_prompt"])])
            counter("sglang:generation_tokens", "Number of generation tokens processed.", tl,
                    [(None, c["fin_out"])])
            counter("sglang:num_requests", "The number of requests.", tl, [(None, c["fin"])])
        else:
            lab = {"model_name": self.model, "engine": "0"}
            gauge("vllm:num_requests_running", "Number of requests in model execution "
                  "batches.", lab, g["running"])
            gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
                  lab, g["queue"])
            gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
                  lab, g["kv"])
            counter("vllm:prompt_tokens", "Number of prefill tokens processed.", lab,
                    [(None, c["pre"])])
            counter("vllm:generation_tokens", "Number of generation tokens processed.", lab,
                    [(None, c["tok"])])
            counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", lab,
                    [(None, c["b"])])
            counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", lab,
                    [(None, c["b"] * self.tl.k)])
            counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", lab,
                    [(None, c["acc"])])
            counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft "
                    "position.", lab, [(str(j), float(v)) for j, v in enumerate(c["pos"])],
                    by="position")
        return out


class _Collector:
    def __init__(self, inst):
        self.inst = inst

    def collect(self):
        return self.inst.collect()


def serve_404(port: int):
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"detail":"Not Found"}')

        def log_message(self, *a):
            pass
    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def _serve_registry(port: int, reg, inst):
    """prometheus_client's WSGI app on 127.0.0.1:port; GET /rewind puts a scrape clock back to
    its start (a test's next reader sees the run from the beginning)."""
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from prometheus_client import make_wsgi_app
    metrics = make_wsgi_app(reg)

    def app(environ, start_response):
        if environ.get("PATH_INFO") == "/rewind" and inst is not None:
            with inst.lock:
                inst.scrapes = 0
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"rewound\n"]
        return metrics(environ, start_response)

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class Quiet(WSGIRequestHandler):
        def log_message(self, *a):
            pass
    srv = make_server("127.0.0.1", port, app, Server, handler_class=Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def serve(spec: dict) -> list:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import GaugeMetricFamily

    servers, insts = [], []
    for ispec in spec["instances"]:
        mode = ispec.get("mode", "ok")
        if mode == "404":
            servers.append(serve_404(ispec["port"]))
            continue
        reg = CollectorRegistry()
        if mode == "empty":          # a process exporter without the engine's families
            class _Empty:
                def collect(self):
                    f = GaugeMetricFamily("process_open_fds", "Number of open file descriptors.")
                    f.add_metric([], 12.0)
                    return [f]
            reg.register(_Empty())
        else:
            inst = Instance(ispec, spec.get("clock", "real"), float(spec.get("speed", 1.0)),
                            float(spec.get("advance_s", 5.0)), math.inf)
            insts.append(inst)
            reg.register(_Collector(inst))
        servers.append(_serve_registry(ispec["port"], reg, inst if mode != "empty" else None))
    if spec.get("truth_out"):               # the truth of every instance's runs, for tests
        with open(spec["truth_out"], "w") as f:
            json.dump({str(i.spec["port"]): [t.sums.metrics().to_dict() for t in i.tl.truths]
                       for i in insts}, f)
    # every simulated clock starts together: start_delay_s from now, or when the file
    # spec["start_on"] appears (a test starts the clock once Prometheus scrapes every target)
    def start(t0):
        for inst in insts:
            inst.t0 = t0
    if spec.get("start_on"):
        def wait_for_file(path=spec["start_on"]):
            while not os.path.exists(path):
                time.sleep(0.005)
            start(time.time())
        threading.Thread(target=wait_for_file, daemon=True).start()
    else:
        start(time.time() + float(spec.get("start_delay_s", 0.0)))
    return servers


def main() -> None:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    serve(spec)
    print("ready", flush=True)
    limit = float(spec.get("lifetime_s", 600))
    time.sleep(limit)           # bounded: the tests kill it first; never outlives them long


if __name__ == "__main__":
    main()
