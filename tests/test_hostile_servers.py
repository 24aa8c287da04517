"""Hostile /metrics and Prometheus servers (issue 36, items 2, 3, 4, 6, 7, 10): a real HTTP
server on 127.0.0.1 that drips, redirects, sends huge or odd answers and escape sequences;
``fleet`` and ``watch`` must end in bounded time (asserted), in bounded memory (the CLI in a
subprocess under an address-space limit), with one error line or row per bad source and the
rest of the fleet still reported."""
from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from click.testing import CliRunner

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from eaglelog.live import metrics as M  # noqa: E402
from eaglelog.cli import main  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEMORY = 1536 * 1024 * 1024          # the address-space limit of the CLI in a subprocess
MB = 1024 * 1024


# --------------------------------------------------------------------------- the server
class Hostile:
    """``Hostile({"/metrics": fn, …})``: fn(handler, n) answers the n-th request of its path
    (writing the raw response); ``hits`` counts requests by path; ``stop()`` ends it."""

    def __init__(self, routes: dict) -> None:
        self.routes = routes
        self.hits: dict[str, int] = {}
        self.stopping = threading.Event()
        srv = self

        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                fn = None
                for p in sorted(srv.routes, key=len, reverse=True):
                    if path == p or path.startswith(p.rstrip("/") + "/"):
                        fn = srv.routes[p]
                        break
                n = srv.hits[path] = srv.hits.get(path, 0) + 1
                if fn is None:
                    self.send_error(404)
                    return
                try:
                    fn(self, n)
                except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
                    pass

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str = "/metrics") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    made = []

    def make(routes):
        s = Hostile(routes)
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()


def send(h, body: bytes | str, status: int = 200, ctype: str = "text/plain; version=0.0.4",
         headers: dict | None = None) -> None:
    body = body.encode() if isinstance(body, str) else body
    h.send_response(status)
    h.send_header("Content-Type", ctype)
    h.send_header("Content-Length", str(len(body)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(body)


def drip(what: str, stop: threading.Event):
    """A server that sends one byte every 0.5 s: of its status line, a header, or its body."""
    def fn(h, n):
        head = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n"
        if what == "status":
            data = head + b"X-Pad: " + b"a" * 10_000
        elif what == "header":
            h.wfile.write(head)
            h.wfile.flush()
            data = b"X-Slow: " + b"b" * 10_000
        else:
            h.wfile.write(head + b"\r\n")
            h.wfile.flush()
            data = (vllm_text(n) * 50).encode()
        for i in range(len(data)):
            if stop.is_set():
                return
            h.wfile.write(data[i:i + 1])
            h.wfile.flush()
            time.sleep(0.5)
    return fn


LAB = 'engine="0",model_name="m"'


def vllm_text(i: int, accept: float = 3.0, extra: str = "") -> str:
    """A vLLM V1 /metrics answer at its i-th scrape: 400 drafts (k = 3) and 400 × (accept − 1)
    accepted tokens per 5 s, stamped 5 s apart."""
    ts = (1_700_000_000 + 5 * i) * 1000
    acc = int(400 * (accept - 1))
    return "".join(f"{name}{{{LAB}}} {v} {ts}\n" for name, v in (
        ("vllm:num_requests_running", 4), ("vllm:num_requests_waiting", 0),
        ("vllm:generation_tokens_total", 400 * (1 + acc / 400) * i),
        ("vllm:prompt_tokens_total", 100 * i),
        ("vllm:spec_decode_num_drafts_total", 400 * i),
        ("vllm:spec_decode_num_draft_tokens_total", 1200 * i),
        ("vllm:spec_decode_num_accepted_tokens_total", acc * i))) + extra


def good_metrics(h, n):
    send(h, vllm_text(n))


# a fake Prometheus: /api/v1/query answers with a matrix (the raw samples) or, for the `up`
# query, an empty vector
def prom_series(instance: str, accept: float = 3.0, n: int = 40, end: float | None = None,
                odd: dict | None = None) -> list:
    end = end or time.time() - 1
    ts = [end - 5 * (n - 1 - j) for j in range(n)]
    acc = 400 * (accept - 1)
    fams = {"vllm:num_requests_running": lambda j: 4,
            "vllm:generation_tokens_total": lambda j: (400 + acc) * j,
            "vllm:spec_decode_num_drafts_total": lambda j: 400 * j,
            "vllm:spec_decode_num_draft_tokens_total": lambda j: 1200 * j,
            "vllm:spec_decode_num_accepted_tokens_total": lambda j: acc * j}
    out = []
    for name, f in fams.items():
        vals = [[t, str(f(j))] for j, t in enumerate(ts)]
        out.append({"metric": {"__name__": name, "job": "vllm", "instance": instance,
                               "engine": "0", "model_name": "m"},
                    "values": vals + (odd or {}).get(name, [])})
    return out


def prom(answer):
    """A Prometheus route: ``answer`` is the JSON object (or bytes) of the samples query."""
    def fn(h, n):
        q = h.path
        if "query=up" in q:
            send(h, json.dumps({"status": "success", "data": {"resultType": "vector",
                                                               "result": []}}),
                 ctype="application/json")
            return
        body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        send(h, body, ctype="application/json")
    return fn


def matrix(result) -> dict:
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def cli(*args, timeout: float = 40.0):
    """The CLI in a subprocess under the address-space limit: (exit code, stdout, stderr,
    seconds)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-m", "eaglelog", *args], capture_output=True,
                           text=True, timeout=timeout, preexec_fn=limit, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": ROOT})
    except subprocess.TimeoutExpired:
        pytest.fail(f"eaglelog {' '.join(args)} did not end within {timeout:g} s")
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0


def one_error_line(err: str) -> str:
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [x for x in err.splitlines() if x.startswith("eaglelog: error:")]
    assert len(lines) == 1, err
    return lines[0]


def rows_of(out: str, urls) -> dict:
    """The table row of each url (the line where it stands as a word)."""
    return {u: next(x for x in out.splitlines() if f" {u} " in f" {x} ") for u in urls}


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# --------------------------------------------------------------------------- item 2: slow
@pytest.mark.parametrize("what", ["status", "header", "body"])
def test_watch_alert_count_1_ends_against_a_dripping_server(server, what):
    s = server({"/metrics": None})
    s.routes["/metrics"] = drip(what, s.stopping)
    code, out, err, secs = cli("watch", "--alert", "accept_len<1.5", "--count", "1",
                               "--timeout", "3s", s.url())
    assert secs < 15, secs
    assert code == 1 and out == ""                       # no data: the gate does not pass
    line = one_error_line(err)
    assert "no source answered in 1 refresh" in line
    assert f"{s.url()}: no answer within 3 s (--timeout)" in line


def test_fleet_reports_the_others_when_one_endpoint_drips(server):
    good = server({"/metrics": good_metrics})
    slow = server({"/metrics": None})
    slow.routes["/metrics"] = drip("body", slow.stopping)
    code, out, err, secs = cli("fleet", "--step", "1s", "--duration", "3s", "--timeout", "1s",
                               good.url(), slow.url())
    assert secs < 20, secs
    assert code == 1                                     # (an instance could not be read)
    assert "no answer within 1 s" in one_error_line(err)
    rows = rows_of(out, [good.url(), slow.url()])
    assert "3.000" in rows[good.url()]                   # accept length 1 + 800/400
    assert "error: no answer within 1 s (--timeout)" in rows[slow.url()]
    assert good.hits["/metrics"] == 4                    # every scrape of the good one made


def test_prometheus_that_drips_is_bounded(server):
    s = server({"/api/v1/query": None})
    s.routes["/api/v1/query"] = drip("body", s.stopping)
    code, out, err, secs = cli("fleet", "--timeout", "2s", "prom+" + s.url(""))
    assert secs < 15, secs
    assert code == 1
    assert "no answer within 2 s (--timeout)" in one_error_line(err)


def test_scrape_all_joins_with_a_timeout(server, monkeypatch):
    """A thread that never returns (a name lookup that hangs, say) is an error Scrape."""
    stuck = threading.Event()

    def hang(url, timeout=None):
        stuck.wait(30)
        return M.Scrape(url, 0.0)
    monkeypatch.setattr(M, "scrape", hang)
    t0 = time.monotonic()
    got = M.scrape_all(["http://a/metrics", "http://b/metrics"], timeout=0.5)
    stuck.set()
    assert time.monotonic() - t0 < 5
    assert [g.error for g in got] == ["no answer within 0.5 s (--timeout)"] * 2


# --------------------------------------------------------------------------- item 3: redirects
def redirect(to: str):
    def fn(h, n):
        send(h, "SECRET-REDIRECT-BODY\x1b]0;owned\x07", status=302, headers={"Location": to})
    return fn


@pytest.mark.parametrize("target", ["other-port", "http://169.254.169.254/latest/meta-data/",
                                    "http://127.0.0.2:{port}/metrics", "ftp://127.0.0.1/metrics"])
def test_redirects_are_not_followed(server, target):
    other = server({"/metrics": lambda h, n: send(h, "SECRET-TARGET " + vllm_text(n))})
    to = other.url() if target == "other-port" else target.format(port=other.port)
    s = server({"/metrics": redirect(to)})
    t0 = time.monotonic()
    r = invoke("fleet", "--step", "0.2s", "--duration", "0.4s", s.url())
    assert time.monotonic() - t0 < 10
    assert r.exit_code == 1, r.output
    line = one_error_line(r.stderr)
    assert f"{s.url()}: HTTP 302 Found: redirect to {to} not followed" in line
    assert "--follow-redirects" in line
    assert "SECRET" not in r.stdout + r.stderr
    assert other.hits == {}                              # the target was never asked


def test_follow_redirects_to_the_same_origin_only(server):
    other = server({"/metrics": good_metrics})
    s = server({"/old": redirect("/metrics"), "/metrics": good_metrics,
                "/away": redirect(other.url())})
    r = invoke("fleet", "--follow-redirects", "--step", "0.2s", "--duration", "0.6s",
               s.url("/old"), s.url("/away"))
    assert r.exit_code == 1, r.output                   # (an instance could not be read)
    rows = rows_of(r.stdout, [s.url("/old"), s.url("/away")])
    assert "3.000" in rows[s.url("/old")]                # followed: same scheme, host, port
    assert "redirect to " + other.url() + " not followed (--follow-redirects follows one to " \
        "the same scheme, host and port only)" in rows[s.url("/away")]
    assert s.hits["/metrics"] >= 2 and other.hits == {}
    r = invoke("fleet", "--step", "0.2s", "--duration", "0.4s", s.url("/old"))
    assert r.exit_code == 1 and "not followed" in r.stderr        # not by default


def test_error_bodies_are_never_echoed(server):
    secret = "SECRET-BODY\x1b]0;owned\x07"
    s = server({
        "/m500": lambda h, n: send(h, secret, status=500),
        "/mbad": lambda h, n: send(h, 'vllm:spec_decode_num_drafts_total{a="' + secret + "\n"),
        "/p400/api/v1/query": lambda h, n: send(h, json.dumps(
            {"status": "error", "errorType": "bad_data", "error": secret}), status=400,
            ctype="application/json"),
        "/p400odd/api/v1/query": lambda h, n: send(h, json.dumps(
            {"status": "error", "errorType": secret, "error": secret}), status=422,
            ctype="application/json"),
        "/p200/api/v1/query": lambda h, n: send(h, json.dumps(
            {"status": secret, "errorType": secret, "error": secret}),
            ctype="application/json")})
    want = {"/m500": "HTTP 500 Internal Server Error",
            "/mbad": "not the Prometheus text format",
            "/p400": "Prometheus answered 400: bad_data",
            "/p400odd": "HTTP 422 Unprocessable Entity",
            "/p200": "not a Prometheus API answer"}
    for path, words in want.items():
        src = ("prom+" if path.startswith("/p") else "") + s.url(path)
        r = invoke("fleet", "--step", "0.2s", "--duration", "0.4s", src)
        assert r.exit_code == 1, r.output
        line = one_error_line(r.stderr)
        assert words in line and src in line, (path, line)
        assert "SECRET" not in r.stdout + r.stderr, (path, r.stderr)


# --------------------------------------------------------------------------- item 4: size
def stream(total: int, piece: bytes, announce: bool = False, prefix: bytes = b""):
    """An answer of ``total`` bytes made of ``piece`` repeated, written 1 MiB at a time (never
    held whole by the server)."""
    def fn(h, n):
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        if announce:
            h.send_header("Content-Length", str(total))
        h.end_headers()
        block = (piece * (MB // len(piece) + 1))[:MB]
        h.wfile.write(prefix)
        sent = len(prefix)
        while sent < total:
            h.wfile.write(block[:total - sent])
            sent += MB
    return fn


HELP = b"# HELP process_thing A counter of something else entirely.\nprocess_thing 1\n"


@pytest.mark.parametrize("case,args,words", [
    ("256 MB of lines", (), "larger than 64 MiB (--max-body)"),
    ("256 MB announced", (), "larger than 64 MiB (--max-body; it announced 256 MiB)"),
    ("one 512 MB line", (), "is longer than 64 KiB (the line limit)"),
    ("200,000 series", (), "more than 100,000 series"),
    ("2 MiB under --max-body 1MiB", ("--max-body", "1MiB"), "larger than 1 MiB (--max-body)"),
    ("256 MB Prometheus answer", (), "larger than 64 MiB (--max-body)"),
])
def test_huge_answers_are_capped_in_bounded_memory(server, case, args, words):
    routes = {
        "256 MB of lines": stream(256 * MB, HELP),
        "256 MB announced": stream(256 * MB, HELP, announce=True),
        "one 512 MB line": stream(512 * MB, b"a", prefix=b'vllm:num_requests_running{x="'),
        "200,000 series": lambda h, n: send(h, "".join(
            f'vllm:num_requests_running{{engine="{i}"}} 1\n' for i in range(200_000))),
        "2 MiB under --max-body 1MiB": stream(2 * MB, vllm_text(1).encode()),
        "256 MB Prometheus answer": stream(256 * MB, b'[1700000000.5,"1"],',
                                           prefix=b'{"status":"success","data":{"resultType":'
                                                  b'"matrix","result":[{"metric":{},"values":['),
    }
    s = server({"/x": routes[case], "/x/api/v1/query": routes[case]})
    src = ("prom+" + s.url("/x")) if "Prometheus" in case else s.url("/x")
    code, out, err, secs = cli("fleet", "--step", "8s", "--duration", "8s", *args, src)
    assert code == 1, (case, err)
    line = one_error_line(err)
    assert words in line, (case, line)
    assert secs < 30, (case, secs)


def test_line_stream_keeps_only_eaglelogs_families(server):
    """A 40 MB answer of other families, then eaglelog's: read as a stream, kept small."""
    body = HELP * (40 * MB // len(HELP)) + vllm_text(1).encode()

    def fn(h, n):
        send(h, body)
    s = server({"/metrics": fn})
    import tracemalloc
    tracemalloc.start()
    sc = M.scrape(s.url(), timeout=10)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert sc.error is None and len(sc.samples) == 7
    assert peak < 8 * MB, peak                            # not proportional to the 40 MB


# --------------------------------------------------------------------------- item 6: odd
def test_odd_prometheus_answers_are_error_rows_the_rest_ranked(server):
    odd = {"vllm:spec_decode_num_drafts_total": [[1e30, "5"], [float("nan"), "1"],
                                                 ["soon", "1"], [1.5], "x"],
           "vllm:spec_decode_num_accepted_tokens_total": [[time.time() - 0.5, "+Inf"],
                                                          [time.time() - 0.4, "NaN"]],
           "vllm:num_requests_running": [[time.time() - 0.3, "1e308"]]}
    answers = {
        "good": matrix(prom_series("gpu1:8000", odd=odd)),
        "strings": matrix(["a", "b"]),
        "empty": matrix([{"metric": {"__name__": "vllm:num_requests_running"}, "values": []}]),
        "listdata": {"status": "success", "data": [1, 2]},
        "resultdict": {"status": "success", "data": {"resultType": "matrix", "result": {}}},
        "labels": matrix([{"metric": {"instance": 5}, "values": []}]),
        "vector": {"status": "success", "data": {"resultType": "vector", "result": []}},
        "nan": b'{"status": "success", "data": NaN}',
        "deep": b"[" * 100_000 + b"]" * 100_000,
    }
    s = server({f"/{k}/api/v1/query": prom(v) for k, v in answers.items()})
    srcs = ["prom+" + s.url(f"/{k}") for k in answers]
    r = invoke("-v", "fleet", "--baseline-toks", "30", *srcs)
    assert "Traceback" not in r.output and "internal error" not in r.stderr, r.output
    assert r.exit_code == 1, r.output                   # (instances could not be read)
    rows = rows_of(r.stdout, srcs)
    good = rows["prom+" + s.url("/good")]
    assert good.split()[0] == "1" and "3.000" in good      # ranked, accept length exact
    want = {"strings": "result[0] is a str, not a series",
            "empty": "no SGLang or vLLM series match",
            "listdata": "its data is not an object",
            "resultdict": "result is not a list of series",
            "labels": "result[0] has no labels",
            "vector": "expected a matrix, Prometheus answered a 'vector'",
            "nan": "its data is not an object",
            "deep": "the answer is not JSON"}
    for k, words in want.items():
        assert words in rows["prom+" + s.url(f"/{k}")], (k, rows)
    notes = r.stderr
    assert "3 samples left out: sample time out of range" in notes
    assert "2 samples left out: value not finite (+Inf, -Inf or NaN)" in notes
    assert "1 sample left out: vllm:num_requests_running out of range (0 … 1e+07)" in notes


def sglang_text(i: int, accept: float) -> str:
    ts = (1_700_000_000 + 5 * i) * 1000
    lab = 'model_name="m",tp_rank="0",pp_rank="0"'
    return "".join(f"{name}{{{lab}}} {v} {ts}\n" for name, v in (
        ("sglang:num_running_reqs", 4), ("sglang:gen_throughput", 300.0),
        ("sglang:spec_accept_length", accept), ("sglang:spec_accept_rate", 0.5),
        ('sglang:realtime_tokens_total{mode="decode"} ', None))
        if v is not None) + \
        f'sglang:realtime_tokens_total{{{lab},mode="decode"}} {1500 * i} {ts}\n'


def test_impossible_accept_length_is_flagged_not_reported(server):
    s = server({"/bad": lambda h, n: send(h, sglang_text(n, 484.6)),
                "/ok": lambda h, n: send(h, sglang_text(n, 2.5))})
    r = invoke("fleet", "-f", "json", "--step", "0.2s", "--duration", "0.8s",
               s.url("/bad"), s.url("/ok"))
    assert r.exit_code == 0, r.output
    got = {x["instance"]: x for x in json.loads(r.stdout)["instances"]}
    assert got[s.url("/ok")]["accept_len"] == pytest.approx(2.5)
    bad = got[s.url("/bad")]
    assert bad["accept_len"] is None
    assert bad["error"].startswith("sglang:spec_accept_length outside [1, 65]")
    assert "flagged, not an accept length" in bad["error"] and "484.6" in bad["error"]
    assert "not speculating" not in bad["error"]


def test_odd_metrics_answers_never_crash_watch(server):
    odd = ['vllm:num_requests_running{engine="0",model_name="m"} 1e308\n',
           'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} +Inf\n',
           'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 5 NaN\n',
           'vllm:generation_tokens_total{engine="0",model_name="m"} 5 1e30\n',
           'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="99999999999999999999",'
           'model_name="m",position="١"} 5\n']
    s = server({"/metrics": lambda h, n: send(h, vllm_text(n) + odd[n % len(odd)])})
    r = invoke("watch", "--interval", "0.05s", "--window", "60s", "--count", "6", s.url())
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    last = [x for x in r.stdout.splitlines() if x.startswith(s.url())][-1]
    assert " 3.000 " in last                             # the well-formed samples analysed
    assert "left out" in r.stdout


def test_implausible_samples_are_left_out_with_a_reason():
    rec = M.Recorder()
    for t, v, name in ((1e30, 1.0, "vllm:num_requests_running"),
                       (math.nan, 1.0, "vllm:num_requests_running"),
                       (1.7e9, math.inf, "vllm:generation_tokens_total"),
                       (1.7e9, 1e308, "vllm:num_requests_running"),
                       (1.7e9, 484.6, "sglang:spec_accept_length"),
                       (1.7e9, 2.5, "sglang:spec_accept_length"),
                       (1.7e9, 0.0, "sglang:spec_accept_length")):
        rec.add("x", name, {}, t, v)
    whys = {w: n for r in rec.runs.values() for w, (n, _) in r.ignored.items()}
    assert whys == {"sample time out of range (a Unix time 1970 … 2100)": 2,
                    "value not finite (+Inf, -Inf or NaN)": 1,
                    "vllm:num_requests_running out of range (0 … 1e+07)": 1,
                    "sglang:spec_accept_length outside [1, 65] (an accept length is at most "
                    "k + 1, k ≤ 64): flagged, not an accept length": 1}
    kept = [v for r in rec.runs.values() for s in r.series.values() for v in s.values]
    assert kept == [{"accept_len": 0.0}]         # 2.5 then 0.0 at one time: the latest


# --------------------------------------------------------------------------- item 7: escapes
EVIL = "evil\x1b]0;pwned\x07\x1b[2J\x00\r\nFAKE ROW\u2028" + "A" * 100_000


def test_server_text_in_table_cells_is_escaped_and_truncated(server):
    s = server({"/api/v1/query": prom(matrix(prom_series(EVIL) + prom_series("gpu2:8000"))),
                "/metrics": redirect("http://elsewhere/\x1b[31mred\x1b[0m" + "B" * 5000)})
    r = invoke("fleet", "--step", "0.2s", "--duration", "0.4s", "prom+" + s.url(""), s.url())
    assert r.exit_code == 1, r.output                   # (the redirect: an error row)
    out = r.stdout
    assert not any(c in out for c in "\x1b\x07\x00\r\u2028"), repr(out[:500])
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\x00\\r\\nFAKE ROW\\u2028AAA" in out
    assert "http://elsewhere/\\x1b[31mred" in out
    assert max(len(x) for x in out.splitlines()) < 700
    assert not any(x.startswith("FAKE ROW") for x in out.splitlines())


def test_watch_cells_and_alert_lines_are_escaped(server):
    s = server({"/api/v1/query": prom(matrix(prom_series(EVIL, accept=1.2)))})
    r = invoke("watch", "--interval", "0.05s", "--window", "60s", "--count", "1",
               "prom+" + s.url(""))
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.stdout and "\x00" not in r.stdout
    assert "evil\\x1b]0;pwned" in r.stdout
    assert max(len(x) for x in r.stdout.splitlines()) < 700
    r = invoke("watch", "--alert", "accept_len<1.5", "--interval", "0.05s", "--for", "60s",
               "--count", "1", "prom+" + s.url(""))
    assert r.exit_code == 3, r.output
    alert = [x for x in r.stdout.splitlines() if x.startswith("ALERT ")]
    assert len(alert) == 1 and "\x1b" not in alert[0] and "evil\\x1b]0;" in alert[0]
    assert len(alert[0]) < 400 and "accept_len = 1.2 over the last 60 s" in alert[0]


# --------------------------------------------------------------------------- item 10
def test_watch_alert_count_exits_1_when_no_source_answered(server):
    s = server({"/metrics": lambda h, n: send(h, "no", status=503)})
    r = invoke("watch", "--alert", "accept_len<1.5", "--count", "2", "--interval", "0.05s",
               s.url(), "http://127.0.0.1:9/metrics")
    assert r.exit_code == 1, r.output
    assert r.stdout == ""
    line = one_error_line(r.stderr)
    assert "no source answered in 2 refreshes, so no condition could be checked" in line
    assert "HTTP 503 Service Unavailable" in line and "connection refused" in line
