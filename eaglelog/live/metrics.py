"""Live sources: the ``/metrics`` endpoint of an SGLang or vLLM server, as eaglelog's tables.

A server with metrics on (SGLang ``--enable-metrics``; vLLM always) exposes counters and gauges
in Prometheus' text format.  They are read with the Prometheus project's own parser
(``prometheus_client.parser``), and two samples of a series make one **window**: counters are
differenced, gauges are taken at the window's end.  Each window becomes one row of the ``decode``
table, with the meaning the log's rows have (docs/formats-metrics.md gives every metric, label
and version):

* **vLLM V1** – exact per-step counters: drafts (request-steps that carried a draft), accepted
  and drafted tokens, accepted tokens per position, emitted and prompt tokens.  A window's
  ``accept_len`` = 1 + Δaccepted / Δdrafts, ``drafts`` = Δdrafts, ``gen_throughput`` =
  Δgeneration tokens / Δt: the numbers the log's ``SpecDecoding metrics`` and throughput lines
  print for their windows, unrounded.  ``vllm_spec`` and ``vllm_stats`` rows as from the log.
* **SGLang** – ``sglang:realtime_tokens_total{mode="decode"}`` counts the tokens committed by
  every decode iteration (v0.5.7 →), ``{mode="prefill_compute"}`` the prompt tokens computed;
  the gauges (accept length, #running-req, gen throughput, …) are the values of the scheduler's
  latest ``Decode batch`` line (they are set where that line is printed).  A window's
  ``accept_len`` is that gauge, ``drafts`` (request-steps) = Δtokens / accept_len,
  ``gen_throughput`` = Δtokens / Δt, and a window that computed prompt tokens gets a ``prefill``
  row (``new_token`` = Δprompt tokens) just before its decode row, as a log's ``Prefill batch``
  lines sit between two decode lines.

One run per instance and model (and one start-up per stretch between counter resets: a reset
is a restart); the ``source`` of a run's rows names the endpoint (and the model when it serves
several).  ``line_no`` of a metrics row is its row number in the run (a window's prefill rows,
then its decode row), so the tables order as a log's lines do.

    >>> import eaglelog
    >>> log = eaglelog.parse("http://gpu7:30000/metrics?step=5s&duration=60s")
    >>> eaglelog.live.metrics.read_endpoints(["http://gpu7:30000/metrics"], step=5, duration=60)
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import re
import threading
import time
import urllib.error
import urllib.parse
from dataclasses import dataclass, field

from ..errors import EaglelogError, InputError
from ..io.sources import is_metrics_source

__all__ = ["is_metrics_source", "read_endpoints", "Recorder", "Scrape",
           "scrape", "parse_exposition", "tables_of", "FAMILIES", "parse_duration"]

USER_AGENT = "eaglelog (metrics)"
TIMEOUT = 10.0

# --------------------------------------------------------------------------- families
# sample name (as exposed: counters with _total) -> (engine, key, label that splits it or None)
# docs/formats-metrics.md: where each is defined and set, per engine and version
FAMILIES: dict[str, tuple[str, str, str | None]] = {
    # SGLang scheduler (labels model_name, engine_type, tp_rank, pp_rank[, moe_ep_rank][, dp_rank])
    "sglang:num_running_reqs": ("sglang", "running", None),
    "sglang:num_queue_reqs": ("sglang", "queue", None),
    "sglang:gen_throughput": ("sglang", "gen_throughput", None),
    "sglang:token_usage": ("sglang", "token_usage", None),
    "sglang:num_used_tokens": ("sglang", "used_tokens", None),
    "sglang:spec_accept_length": ("sglang", "accept_len", None),
    "sglang:spec_accept_rate": ("sglang", "accept_rate", None),
    "sglang:spec_num_steps": ("sglang", "num_steps", None),
    "sglang:realtime_tokens_total": ("sglang", "tokens", "mode"),
    "sglang:cuda_graph_passes_total": ("sglang", "passes", "mode"),
    # SGLang tokenizer (label model_name): counted when a request finishes
    "sglang:generation_tokens_total": ("sglang", "req_generation_tokens", None),
    "sglang:num_requests_total": ("sglang", "req_finished", None),
    "sglang:spec_verify_calls_total": ("sglang", "req_verify_calls", None),
    # vLLM V1 (labels model_name, engine)
    "vllm:num_requests_running": ("vllm", "running", None),
    "vllm:num_requests_waiting": ("vllm", "queue", None),
    "vllm:kv_cache_usage_perc": ("vllm", "kv_usage", None),
    "vllm:gpu_cache_usage_perc": ("vllm", "kv_usage", None),
    "vllm:generation_tokens_total": ("vllm", "gen_tokens", None),
    "vllm:prompt_tokens_total": ("vllm", "prompt_tokens", None),
    "vllm:spec_decode_num_drafts_total": ("vllm", "drafts", None),
    "vllm:spec_decode_num_draft_tokens_total": ("vllm", "draft_tokens", None),
    "vllm:spec_decode_num_accepted_tokens_total": ("vllm", "accepted", None),
    "vllm:spec_decode_num_accepted_tokens_per_pos_total": ("vllm", "pos", "position"),
    # vLLM V0 only (vllm/engine/metrics.py, removed in July 2025)
    "vllm:spec_decode_num_emitted_tokens_total": ("vllm", "v0_emitted", None),
    "vllm:spec_decode_efficiency": ("vllm", "v0_efficiency", None),
}
# Latency histograms (docs/formats-metrics.md §9): the family (its samples are NAME_bucket{le},
# NAME_count, NAME_sum) -> (engine, metric).  TPOT is the per-request one, (last token − first)
# / (tokens − 1); the inter-token-latency histograms are not TPOT under speculation (vLLM's
# observes one interval per step, whatever its tokens) and are not read
HISTOGRAMS: dict[str, tuple[str, str]] = {
    "sglang:time_to_first_token_seconds": ("sglang", "ttft"),
    "sglang:request_time_per_output_token_seconds": ("sglang", "tpot"),
    "vllm:time_to_first_token_seconds": ("vllm", "ttft"),
    "vllm:request_time_per_output_token_seconds": ("vllm", "tpot"),
}
HIST_SAMPLES: dict[str, tuple[str, str, str]] = {
    f"{fam}_{part}": (eng, key, part) for fam, (eng, key) in HISTOGRAMS.items()
    for part in ("bucket", "count", "sum")}
COUNTERS = {"tokens", "passes", "req_generation_tokens", "req_finished", "req_verify_calls",
            "gen_tokens", "prompt_tokens", "drafts", "draft_tokens", "accepted", "pos",
            "v0_emitted"}
# labels that tell the series of one run apart (the rest of the non-run labels are ignored)
SERIES_LABELS = {"sglang": ("dp_rank", "pp_rank", "tp_rank"), "vllm": ("engine",)}
RUN_LABELS = ("job", "instance", "model_name")
SGLANG_DECODE_PASSES = ("decode_cuda_graph", "decode_none")
SGLANG_PREFILL_PASSES = ("prefill_cuda_graph", "prefill_none")
# Prometheus may hold the names with '_' for ':' ("sglang_num_running_reqs"): prometheus_client
# releases with OpenMetrics escaping (0.26.0 among them) write the sample lines so when the
# scraper negotiates OpenMetrics 1.0 (client_python issue 1177); both spellings are read
NAME_REGEX = "(sglang|vllm)[:_](" + "|".join(dict.fromkeys(
    re.escape(n.split(":", 1)[1]) for n in (*FAMILIES, *HIST_SAMPLES))) + ")"


def canonical(name: str) -> str:
    """The engine's own spelling of a sample name ('vllm_x_total' -> 'vllm:x_total')."""
    if name in FAMILIES or name in HIST_SAMPLES:
        return name
    for eng in ("sglang_", "vllm_"):
        if name.startswith(eng):
            alt = eng[:-1] + ":" + name[len(eng):]
            if alt in FAMILIES or alt in HIST_SAMPLES:
                return alt
    return name


def ours(name: str) -> bool:
    """A sample of eaglelog's families or latency histograms (either spelling)."""
    c = canonical(name)
    return c in FAMILIES or c in HIST_SAMPLES


_DUR = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}


def parse_duration(text, what: str = "duration") -> float:
    """'15s', '5m', '6h', '1.5', '250ms' -> seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    m = _DUR.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise EaglelogError(f"{what} {text!r} is not a duration: give e.g. 15s, 5m, 6h")
    return float(m.group(1)) * _UNIT[m.group(2)]


def fmt_duration(s: float) -> str:
    for unit, n in (("h", 3600), ("m", 60)):
        if s >= n and s % n == 0:
            return f"{int(s // n)}{unit}"
    return f"{s:g}s"


# --------------------------------------------------------------------------- samples
class Series:
    """The samples of one series (one scheduler or engine) of one run: values by sample time.
    A scrape adds every family at one time; a Prometheus answer one family at all its times."""

    def __init__(self, labels: dict) -> None:
        self.labels = labels
        self.by_t: dict[float, dict] = {}
        self._order: list[float] | None = []

    def add(self, t: float, vals: dict) -> None:
        got = self.by_t.get(t)
        if got is None:
            self.by_t[t] = dict(vals)
            if self._order is not None and (not self._order or t > self._order[-1]):
                self._order.append(t)
            else:
                self._order = None
        else:
            got.update(vals)

    @property
    def t(self) -> list[float]:
        if self._order is None:
            self._order = sorted(self.by_t)
        return self._order

    @property
    def values(self) -> list[dict]:
        return [self.by_t[t] for t in self.t]

    def drop_before(self, since: float) -> None:
        """Forget samples before ``since``, keeping the last one before it."""
        ts = self.t
        i = 0
        while i + 1 < len(ts) and ts[i + 1] <= since:
            i += 1
        for t in ts[:i]:
            del self.by_t[t]
        self._order = ts[i:]


@dataclass
class Run:
    """One run: an instance (and model) of an engine; its series by their labels."""

    name: str
    engine: str
    labels: dict
    series: dict = field(default_factory=dict)     # series key (tuple) -> Series
    notes: list = field(default_factory=list)
    ignored: dict = field(default_factory=dict)    # why -> [samples, first example]
    resets: list = field(default_factory=list)     # times of the counter resets (tables_of)

    def ignore(self, why: str, example: str) -> None:
        got = self.ignored.get(why)
        if got is None:
            self.ignored[why] = [1, example]
        else:
            got[0] += 1

    def series_of(self, key: tuple, labels: dict) -> Series:
        s = self.series.get(key)
        if s is None:
            s = self.series[key] = Series(labels)
        return s


# A sample outside these is no reading of its metric (a broken or hostile server, a unit
# mix-up): it is left out and said in a note, never analysed.  Times: 1970 … 2100.
T_MAX = 4102444800.0
MAX_K = 64                     # draft tokens per step: accept length lies in [1, MAX_K + 1]
MAX_COUNT = 2.0 ** 53          # a counter above this has lost its integer precision
RANGES: dict[str, tuple[float, float]] = {
    "running": (0, 1e7), "queue": (0, 1e9), "gen_throughput": (0, 1e9),
    "token_usage": (0, 1e3), "kv_usage": (0, 1e3), "used_tokens": (0, 1e13),
    "accept_len": (1, MAX_K + 1), "accept_rate": (0, 1), "num_steps": (0, MAX_K),
    "v0_efficiency": (0, 1)}


def implausible(name: str, key: str, t, value) -> str | None:
    """Why a sample cannot be a reading of its metric (None: it can)."""
    if not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 <= t <= T_MAX:
        return "sample time out of range (a Unix time 1970 … 2100)"
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "value not finite (+Inf, -Inf or NaN)"
    base, _, sub = key.partition(":")
    if base == "h":                                 # h:<metric>:<le>|count|sum
        if not 0 <= value <= (MAX_COUNT if not key.endswith(":sum") else 1e15):
            return "histogram count or sum out of range (0 … 2^53)"
        le = key.rsplit(":", 1)[1]
        if le not in ("count", "sum"):
            try:
                ok = float(le) >= 0 and le == le.strip()
            except ValueError:
                ok = False
            if not ok:
                return "histogram bucket bound (le) not a number ≥ 0 or +Inf"
        return None
    if base in COUNTERS:
        if not 0 <= value <= MAX_COUNT:
            return "counter out of range (0 … 2^53)"
        if base == "pos" and not (sub.isascii() and sub.isdecimal() and int(sub) < MAX_K):
            return f"position label out of range (0 … {MAX_K - 1})"
        return None
    lo, hi = RANGES.get(base, (-math.inf, math.inf))
    if base == "accept_len" and value == 0:
        return None                                 # SGLang's 0: no speculation
    if not lo <= value <= hi:
        if base == "accept_len":
            return (f"{name} outside [1, {MAX_K + 1}] (an accept length is at most k + 1, "
                    f"k ≤ {MAX_K}): flagged, not an accept length")
        return f"{name} out of range ({lo:g} … {hi:g})"
    return None


def split_sample(name: str, labels: dict):
    """(engine, run labels, series key, series labels, value key) of one sample, or None for a
    sample that is not one of FAMILIES."""
    cname = canonical(name)
    hist = HIST_SAMPLES.get(cname)
    if hist is not None:
        engine, metric, part = hist
        if part == "bucket":
            le = labels.get("le")
            if le is None or len(le) > 40:
                return None
            key = f"h:{metric}:{le}"
        else:
            key = f"h:{metric}:{part}"
        run = tuple((k, labels[k]) for k in RUN_LABELS if labels.get(k) not in (None, ""))
        # one series per label set (SGLang: is_streaming, priority; vLLM: engine)
        rest = tuple(sorted((k, v) for k, v in labels.items()
                            if k not in RUN_LABELS and k != "le"))
        return engine, run, ("hist", rest), dict(rest), key
    fam = FAMILIES.get(cname)
    if fam is None:
        return None
    engine, key, by = fam
    if by is not None:
        sub = labels.get(by)
        if sub is None:
            return None
        key = f"{key}:{sub}"
    run = tuple((k, labels[k]) for k in RUN_LABELS if labels.get(k) not in (None, ""))
    if key.startswith("req_"):
        skey: tuple = ("tokenizer",)
        slabels: dict = {}
    else:
        slabels = {k: labels[k] for k in SERIES_LABELS[engine] if labels.get(k) not in (None, "")}
        skey = tuple(sorted(slabels.items()))
    return engine, run, skey, slabels, key


def parse_exposition(text: str, where: str = "") -> list[tuple[str, dict, float, float | None]]:
    """(sample name, labels, value, timestamp or None) of every sample of eaglelog's families
    in a text exposition, read with prometheus_client's parser."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:                           # pragma: no cover - a dependency
        from ..errors import MissingDependency
        raise MissingDependency("reading /metrics needs prometheus_client: pip install "
                                "prometheus_client") from None
    out = []
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                if ours(s.name):
                    ts = s.timestamp
                    if ts is not None and not isinstance(ts, (int, float)):
                        ts = float(getattr(ts, "sec", 0)) + float(getattr(ts, "nsec", 0)) / 1e9
                    out.append((s.name, dict(s.labels), float(s.value), ts))
    except Exception:                              # noqa: BLE001 - the parser's, any
        # (its message quotes the line: a server's text is never echoed)
        raise InputError(f"{where}: not the Prometheus text format (prometheus_client's "
                         "parser refused it)") from None
    return out


# --------------------------------------------------------------------------- HTTP
# What one request may cost (docs/formats-metrics.md, "Hostile or broken servers"): a server
# that answers slowly, hugely or oddly costs at most these, and becomes one error row.
KiB, MiB = 1024, 1024 * 1024
MAX_BODY = 64 * MiB          # bytes read from one answer (all pieces of one Prometheus source)
MAX_LINE = 64 * KiB          # bytes of one line of a /metrics answer
MAX_SERIES = 100_000         # samples of eaglelog's families in one /metrics answer; series in
#                              one Prometheus answer
MAX_REDIRECTS = 5            # with follow_redirects: hops, each to the same scheme, host, port
CELL = 200                   # characters of server text in one table cell or message


@dataclass(frozen=True)
class Limits:
    """The bounds of every request: ``timeout`` the overall deadline of one request (connect,
    status line, headers and body, however slowly they come), ``max_body`` the bytes read from
    one source's answer, ``max_line`` one line of a /metrics answer, ``max_series`` the series
    kept from one answer, ``follow_redirects`` whether a redirect to the same scheme, host and
    port is followed (never one elsewhere)."""

    timeout: float = TIMEOUT
    max_body: int = MAX_BODY
    max_line: int = MAX_LINE
    max_series: int = MAX_SERIES
    follow_redirects: bool = False


_LIMITS = [Limits()]


def current_limits() -> Limits:
    return _LIMITS[-1]


class limits:  # noqa: N801 - used as a function: ``with metrics.limits(max_body=…):``
    """Set the request limits for the reads inside the ``with`` block (every thread's)."""

    def __init__(self, **changes) -> None:
        self.new = Limits(**{**current_limits().__dict__,
                             **{k: v for k, v in changes.items() if v is not None}})

    def __enter__(self) -> Limits:
        _LIMITS.append(self.new)
        return self.new

    def __exit__(self, *exc) -> None:
        _LIMITS.remove(self.new)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?\s*$", re.I)
_SIZE_UNIT = {None: 1, "b": 1, "k": KiB, "kb": 1000, "kib": KiB, "m": MiB, "mb": 1000**2,
              "mib": MiB, "g": 1024**3, "gb": 1000**3, "gib": 1024**3}


def parse_size(text, what: str = "--max-body") -> int:
    """'64MiB', '64M', '1GB', '500000' -> bytes."""
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    if not m or float(m.group(1)) < 1:
        raise EaglelogError(f"{what} {text!r} is not a size: give e.g. 64MiB, 500MB, 1GiB")
    return int(float(m.group(1)) * _SIZE_UNIT[(m.group(2) or "b").lower()])


def fmt_size(n: int) -> str:
    for unit, k in (("GiB", 1024**3), ("MiB", MiB), ("KiB", KiB)):
        if n >= k:
            return f"{n / k:g} {unit}" if n % k == 0 else f"{n / k:.1f} {unit}"
    return f"{n} bytes"


def cell(text, width: int = CELL) -> str:
    """Text from a server as one printable line of at most ``width`` characters (control
    characters, ESC, NUL and newlines escaped as errors.printable escapes stderr)."""
    from ..errors import printable
    t = printable(str(text))
    return t if len(t) <= width else t[:width - 1] + "…"


class FetchError(Exception):
    """A request failed; the message is one line for the source's error row."""


class _Deadline:
    """The overall deadline of one request: a timer shuts the connection's socket down when
    it passes, so that no read (of the status line, a header or the body) outlives it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.conns: list = []
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        import socket
        self.expired = True
        for c in self.conns:
            s = getattr(c, "sock", None)
            if s is not None:
                try:
                    socket.socket.shutdown(s, socket.SHUT_RDWR)   # (an SSL socket's too)
                except OSError:
                    pass

    def left(self) -> float:
        return self.end - time.monotonic()

    def check(self) -> None:
        if self.expired or self.left() <= 0:
            raise FetchError(self.message())

    def message(self) -> str:
        return f"no answer within {self.seconds:g} s (--timeout)"

    def cancel(self) -> None:
        self._timer.cancel()


def _opener(deadline: _Deadline):
    import http.client
    import urllib.request

    def conn(base):
        class Conn(base):
            def connect(self):
                deadline.conns.append(self)
                self.timeout = max(0.05, min(self.timeout or deadline.seconds, deadline.left()))
                super().connect()
        return Conn

    class HTTP(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(conn(http.client.HTTPConnection), req)

    class HTTPS(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(conn(http.client.HTTPSConnection), req,
                                context=self._context, check_hostname=self._check_hostname)

    class NoRedirects(urllib.request.HTTPRedirectHandler):
        """Refuses every redirect: the 3xx comes back as an HTTPError (fetch decides)."""

        def http_error_302(self, req, fp, code, msg, headers):
            return None
        http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302

    return urllib.request.build_opener(HTTP, HTTPS, NoRedirects)


def _same_origin(a: str, b: str) -> bool:
    ua, ub = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
    port = {"http": 80, "https": 443}
    try:
        return (ua.scheme == ub.scheme and (ua.hostname or "") == (ub.hostname or "")
                and (ua.port or port.get(ua.scheme)) == (ub.port or port.get(ub.scheme)))
    except ValueError:                    # a port out of range
        return False


def _status(code: int) -> str:
    import http
    try:
        return f"HTTP {code} {http.HTTPStatus(code).phrase}"
    except ValueError:
        return f"HTTP {code}"


def _fetch(url: str, accept: str, lim: Limits, timeout: float | None = None,
           budget: int | None = None, lines: bool = False):
    """GET ``url`` within the overall deadline, reading at most ``budget`` bytes (default
    ``lim.max_body``): the body (bytes), or with ``lines`` the lines of eaglelog's families
    (list of bytes) read as a stream.  Raises FetchError (one line, nothing of the body),
    urllib's HTTPError for an error status (its body unread, closed)."""
    import urllib.request
    dl = _Deadline(timeout if timeout is not None else lim.timeout)
    budget = lim.max_body if budget is None else budget
    try:
        hops = 0
        while True:
            req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT,
                                                       "Accept": accept})
            try:
                resp = _opener(dl).open(req, timeout=dl.seconds)
            except urllib.error.HTTPError as e:
                try:                       # (a few KB for the caller: Prometheus' errorType)
                    e.head = e.read(4096) if e.fp is not None else b""
                except Exception:          # noqa: BLE001 - a body cut short: none
                    e.head = b""
                finally:
                    e.close()
                if dl.expired:
                    raise FetchError(dl.message()) from None
                if e.code in (301, 302, 303, 307, 308):
                    to = e.headers.get("Location", "") if e.headers else ""
                    new = urllib.parse.urljoin(url, to)
                    if lim.follow_redirects and _same_origin(url, new) and hops < MAX_REDIRECTS:
                        hops += 1
                        url = new
                        continue
                    why = ("--follow-redirects follows one to the same scheme, host and port "
                           "only" if lim.follow_redirects else "give the final URL, or "
                           "--follow-redirects for one to the same scheme, host and port")
                    if hops >= MAX_REDIRECTS:
                        why = f"more than {MAX_REDIRECTS} redirects"
                    raise FetchError(f"{_status(e.code)}: redirect to {cell(new, 120)} not "
                                     f"followed ({why})") from None
                raise
            with resp:
                enc = resp.headers.get("Content-Encoding", "identity").strip().lower()
                if enc not in ("", "identity"):
                    raise FetchError(f"an answer in Content-Encoding {cell(enc, 40)} (not "
                                     "asked for): not read")
                size = resp.headers.get("Content-Length")
                if size and size.strip().isdigit() and int(size) > budget:
                    raise FetchError(_too_big(lim, int(size)))
                return _read_lines(resp, dl, lim, budget) if lines else \
                    _read_body(resp, dl, lim, budget)
    except (FetchError, urllib.error.HTTPError):
        raise
    except Exception as e:                         # noqa: BLE001 - one line per request
        if dl.expired:
            raise FetchError(dl.message()) from None
        raise FetchError(http_error(url, e)) from None
    finally:
        dl.cancel()


def _too_big(lim: Limits, size: int | None = None) -> str:
    return (f"the answer is larger than {fmt_size(lim.max_body)} (--max-body"
            + (f"; it announced {fmt_size(size)}" if size else "")
            + "): raise --max-body, or ask for less (a shorter --since, a narrower --match)")


def _chunks(resp, dl: _Deadline, lim: Limits, budget: int):
    got = 0
    while True:
        dl.check()
        b = resp.read1(256 * KiB)
        if not b:
            dl.check()                     # (a read cut short by the deadline is no EOF)
            return
        got += len(b)
        if got > budget:
            raise FetchError(_too_big(lim))
        yield b


def _read_body(resp, dl: _Deadline, lim: Limits, budget: int) -> bytes:
    return b"".join(_chunks(resp, dl, lim, budget))


# the lines of eaglelog's families: their samples, and their HELP and TYPE comments
_OURS = re.compile(rb"^[ \t]*(#[ \t]*(?:HELP|TYPE)[ \t]+)?((?:sglang|vllm)[:_][^{ \t\n]*)"
                   rb"[^\n]*", re.M)


def _read_lines(resp, dl: _Deadline, lim: Limits, budget: int) -> list[bytes]:
    """The lines of a text exposition that belong to sglang/vllm families (their samples and
    HELP/TYPE comments), read as a stream: memory holds those lines and one partial line."""
    kept: list[bytes] = []
    part = b""
    n = series = 0

    def take(block: bytes) -> None:
        nonlocal series
        for m in _OURS.finditer(block):
            kept.append(m.group(0))
            if not m.group(1) and ours(m.group(2).decode("utf-8", "replace")):
                series += 1
                if series > lim.max_series:
                    raise FetchError(f"more than {lim.max_series:,} series of eaglelog's "
                                     "families in one answer (the series limit): not read")

    for chunk in _chunks(resp, dl, lim, budget):
        data = part + chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            part = data
        else:
            block, part = data[:cut], data[cut + 1:]
            lens = [len(x) for x in block.split(b"\n")]
            if max(lens) > lim.max_line:
                raise FetchError(_too_long(lim, n + next(i for i, x in enumerate(lens)
                                                         if x > lim.max_line) + 1))
            n += len(lens)
            take(block)
        if len(part) > lim.max_line:
            raise FetchError(_too_long(lim, n + 1))
    take(part)
    return kept


def _too_long(lim: Limits, n: int) -> str:
    return (f"line {n} is longer than {fmt_size(lim.max_line)} (the line limit): not a "
            "/metrics answer")


def _http_get(url: str, timeout: float | None = None, accept: str = "text/plain;version=0.0.4",
              budget: int | None = None) -> bytes:
    """The body of a GET within the current limits (see _fetch)."""
    return _fetch(url, accept, current_limits(), timeout, budget)


def http_error(url: str, e: BaseException) -> str:
    """One line for a failed request (the status and what failed; never the body)."""
    if isinstance(e, FetchError):
        return str(e)
    if isinstance(e, urllib.error.HTTPError):
        return _status(e.code)
    if isinstance(e, urllib.error.URLError):
        r = e.reason
        if isinstance(r, ConnectionRefusedError):
            return "connection refused (is the server up, and is this its port?)"
        if isinstance(r, (TimeoutError, OSError)) and "timed out" in str(r):
            return "no answer (timed out)"
        return cell(f"cannot connect: {getattr(r, 'strerror', None) or r}")
    if isinstance(e, (TimeoutError,)) or "timed out" in str(e):
        return "no answer (timed out)"
    if isinstance(e, ConnectionError):
        return cell(f"connection failed: {e}")
    return cell(f"{type(e).__name__}: {e}")


@dataclass
class Scrape:
    """One read of one endpoint: its time and samples, or the error it gave."""

    url: str
    t: float
    samples: list = field(default_factory=list)
    error: str | None = None


def scrape(url: str, timeout: float | None = None) -> Scrape:
    """Read one /metrics endpoint now (within the current limits; ``timeout`` the request's
    overall deadline, default the limits')."""
    t0 = time.time()
    try:
        lines = _fetch(url, "text/plain;version=0.0.4", current_limits(), timeout, lines=True)
    except Exception as e:                         # noqa: BLE001 - one line per endpoint
        err = http_error(url, e)
        if isinstance(e, urllib.error.HTTPError) and e.code == 404:
            err += " (SGLang serves /metrics only with --enable-metrics)"
        return Scrape(url, t0, error=err)
    t1 = time.time()
    try:
        samples = parse_exposition(b"\n".join(lines).decode("utf-8", "replace") + "\n", url)
    except InputError as e:
        return Scrape(url, t1, error=str(e).split(": ", 1)[-1])
    return Scrape(url, (t0 + t1) / 2, samples)


def scrape_all(urls: list[str], timeout: float | None = None) -> list[Scrape]:
    """Scrape every endpoint at once (one thread each), each within its deadline; an endpoint
    whose thread has not ended by then (a name lookup that hangs, say) is an error Scrape."""
    timeout = current_limits().timeout if timeout is None else timeout
    got: dict[str, Scrape] = {}
    lock = threading.Lock()

    def one(u):
        sc = scrape(u, timeout=timeout)
        with lock:
            got[u] = sc
    t0 = time.time()
    threads = [threading.Thread(target=one, args=(u,), daemon=True) for u in urls]
    for th in threads:
        th.start()
    end = time.monotonic() + timeout + 2.0
    for th in threads:
        th.join(max(0.0, end - time.monotonic()))
    with lock:
        return [got[u] if u in got else
                Scrape(u, t0, error=f"no answer within {timeout:g} s (--timeout)")
                for u in urls]


class Recorder:
    """Samples of many sources gathered over time (scrapes, or Prometheus answers), by run."""

    def __init__(self) -> None:
        self.runs: dict[tuple, Run] = {}
        self.errors: dict[str, str] = {}          # source -> its latest error
        self.seen: set[str] = set()               # sources that answered with eaglelog's families
        self.answered: set[str] = set()           # sources that answered at all
        self.extra_sources: list[str] = []        # instances known only by their error

    def add_scrape(self, sc: Scrape, source: str | None = None) -> None:
        source = source or sc.url
        if sc.error:
            self.errors[source] = sc.error
            return
        self.answered.add(source)
        self.errors.pop(source, None)
        for name, labels, value, ts in sc.samples:
            self.add(source, name, labels, ts if ts is not None else sc.t, value)

    def add(self, source: str, name: str, labels: dict, t: float, value: float) -> None:
        got = split_sample(name, labels)
        if got is None:
            return
        engine, run_labels, skey, slabels, key = got
        self.seen.add(source)
        rkey = (source, engine, run_labels)
        run = self.runs.get(rkey)
        if run is None:
            run = self.runs[rkey] = Run("", engine, dict(run_labels))
        why = implausible(canonical(name), key, t, value)
        if why:
            run.ignore(why, f"{canonical(name)} {value!r} at {t!r}")
            return
        run.series_of(skey, slabels).add(t, {key: value})

    def named_runs(self) -> list[Run]:
        """The runs, each named: the source, plus the instance and model when the source holds
        several runs."""
        by_source: dict[str, list] = {}
        for (source, engine, rl), run in self.runs.items():
            by_source.setdefault(source, []).append((rl, run))
        out = []
        for source, runs in by_source.items():
            many = len(runs) > 1
            models = {dict(rl).get("model_name") for rl, _ in runs}
            instances = {dict(rl).get("instance") for rl, _ in runs}
            for rl, run in runs:
                d = dict(rl)
                parts = []
                if "instance" in d and (len(instances) > 1 or source.startswith("prom+")):
                    parts.append(f"instance={d['instance']}")
                if many and len(models) > 1 and d.get("model_name"):
                    parts.append(f"model={d['model_name']}")
                run.name = f"{source} {' '.join(parts)}" if parts else source
                out.append(run)
        return out

    def trim(self, since: float) -> None:
        """Forget samples before ``since`` (epoch seconds), keeping one before it per series."""
        for run in self.runs.values():
            for s in run.series.values():
                s.drop_before(since)


# --------------------------------------------------------------------------- windows
def _local(t: float) -> str:
    return _dt.datetime.fromtimestamp(t).isoformat(sep=" ", timespec="microseconds")


def _num(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def _int(v):
    v = _num(v)
    return None if v is None else int(round(v))


def _small_int(text) -> bool:
    """A label that is a rank or engine number (ASCII digits, at most 6 of them)."""
    t = str(text)
    return t.isascii() and t.isdecimal() and len(t) <= 6


def _counter_keys(run: Run) -> set[str]:
    keys = set()
    for s in run.series.values():
        for vals in s.values:
            keys.update(k for k in vals if k.split(":")[0] in COUNTERS)
    return keys


def tables_of(run: Run) -> tuple[dict, list[tuple[int | None, str, str, str]], dict]:
    """The tables of one run: ({table: rows}, [(line_no, kind, message, severity)], config).
    Rows are dicts with schema column names (tables.build_frame types them)."""
    rows: dict[str, list] = {"decode": [], "prefill": [], "vllm_spec": [], "vllm_stats": [],
                             "server_args": []}
    notes: list = []
    windows = []                          # (t_end, series, row parts)
    resets: list[float] = []
    v0 = any("v0_emitted" in v or "v0_efficiency" in v
             for s in run.series.values() for v in s.values)
    counters = _counter_keys(run)
    if run.engine == "vllm" and v0:
        notes.append((None, "metrics", "vLLM V0 metrics: its spec-decode counters add the "
                      "engine's cumulative totals at every log interval (vllm/engine/metrics.py), "
                      "so their differences are no window counts; accept length is not read from "
                      "them (use the server log)", "warning"))
    if run.engine == "sglang" and "tokens:decode" not in counters:
        notes.append((None, "metrics", "no sglang:realtime_tokens_total{mode=\"decode\"} "
                      "(SGLang before v0.5.7): decode tokens estimated from the gen_throughput "
                      "gauge (the latest Decode batch line's) × the window", "warning"))
    if run.engine == "vllm" and not v0 and "drafts" not in counters:
        notes.append((None, "metrics", "no vllm:spec_decode_num_drafts_total series: this "
                      "instance does not speculate (or runs vLLM before #16665, 2025-04-24, or "
                      "the answer lacks the series): no accept length", "warning"))
    flagged = [w for w in run.ignored if "not an accept length" in w]
    for why, (n_ig, example) in run.ignored.items():
        notes.append((None, "metrics", f"{n_ig} sample{'s' if n_ig != 1 else ''} left out: "
                      f"{why} (the first: {cell(example, 120)})", "warning"))
    if run.engine == "sglang" and not flagged and not any(
            (v.get("accept_len") or 0) >= 1 for s in run.series.values() for v in s.values):
        notes.append((None, "metrics", "sglang:spec_accept_length is 0 or absent: this "
                      "instance does not speculate (or the answer lacks the series): no accept "
                      "length", "warning"))
    k_seen: set[int] = set()
    for skey, s in run.series.items():
        if skey and skey[0] in ("tokenizer", "hist") or len(s.t) < 1:
            continue
        prev = None
        for t, vals in zip(s.t, s.values):
            if prev is None:
                prev = (t, vals)
                continue
            pt, pv = prev
            dt = t - pt
            d = {}
            reset = False
            for k in counters:
                a, b = pv.get(k), vals.get(k)
                if a is None or b is None:
                    continue
                if b < a:
                    reset = True
                d[k] = b - a
            prev = (t, vals)
            if reset:
                resets.append(t)
                continue
            if dt <= 0:
                continue
            windows.append((t, pt, skey, s.labels, vals, d, dt))
    # start-ups: a counter reset anywhere in the run is a restart
    reset_times = sorted(set(resets))
    run.resets = reset_times
    for t in reset_times:
        notes.append((None, "restart", f"counters reset between the samples before "
                      f"{_local(t)[:19]} (the server restarted): the windows from there are "
                      f"start-up {reset_times.index(t) + 1}", "warning"))
    windows.sort(key=lambda w: (w[0], w[2]))
    line = 0
    startups_seen: dict[int, int] = {}
    for t, pt, skey, slabels, vals, d, dt in windows:
        startup = sum(1 for r in reset_times if r <= t)
        npre = int(round(sum(d.get(f"passes:{m}", 0.0) for m in SGLANG_PREFILL_PASSES))) or 1 \
            if run.engine == "sglang" and d.get("tokens:prefill_compute") else 0
        line += npre + 1                  # the window's prefill rows, then its decode row
        base = {"line_no": line, "startup": startup, "timestamp": _local(t)}
        startups_seen.setdefault(startup, line)
        ranks = []
        if run.engine == "sglang":
            for lab, col, tag in (("dp_rank", "dp", "DP"), ("pp_rank", "pp", "PP"),
                                  ("tp_rank", "tp", "TP")):
                if lab in slabels:
                    base[col] = int(slabels[lab]) if _small_int(slabels[lab]) else None
                    if len(run.series) > 1 or lab != "tp_rank":
                        ranks.append(f"{tag}{slabels[lab]}")
            row = _sglang_window(vals, d, dt)
        else:
            eng = slabels.get("engine")
            if eng is not None and _small_int(eng) and (len(run.series) > 1 or int(eng)):
                base["dp"] = int(eng)
            row, spec, stats = _vllm_window(vals, d, dt, v0)
            if spec is not None:
                if spec.get("k"):
                    k_seen.add(spec["k"])
                rows["vllm_spec"].append({**base, **spec, "paired_line": line})
            rows["vllm_stats"].append({**base, **stats})
        if ranks:
            base["ranks"] = " ".join(ranks)
        for i, pre in enumerate(row.pop("_prefill", ())):
            rows["prefill"].append({**base, "line_no": line - npre + i, **pre})
        rows["decode"].append({**base, **row})
    config = _config(run, k_seen)
    for startup, first in sorted(startups_seen.items()):
        rows["server_args"].append({"line_no": first, "startup": startup,
                                    "timestamp": rows["decode"][0]["timestamp"] if startup == 0
                                    else _local(reset_times[startup - 1]),
                                    "parse_ok": True, "_args": config})
    return rows, notes, config


def _sglang_window(vals: dict, d: dict, dt: float) -> dict:
    tok = d.get("tokens:decode")
    gauge_g = _num(vals.get("gen_throughput"))
    if tok is None:
        tok = gauge_g * dt if gauge_g is not None else None
    a = _num(vals.get("accept_len"))
    if a is not None and a < 1:
        a = None                                   # 0: a server without speculation
    running = _int(vals.get("running"))
    row = {"running_req": running, "queue_req": _int(vals.get("queue")),
           "token_usage": _num(vals.get("token_usage")),
           "num_tokens": _int(vals.get("used_tokens")),
           "gen_throughput": tok / dt if tok is not None else None}
    iters = sum(d[f"passes:{m}"] for m in SGLANG_DECODE_PASSES if f"passes:{m}" in d) \
        if any(f"passes:{m}" in d for m in SGLANG_DECODE_PASSES) else None
    if tok:
        a_w = tok / iters / running if a is not None and iters and running else None
        if a_w is not None and abs(a_w / a - 1) < 0.25:   # else the batch changed too much
            # tokens per decode iteration are exact (Δtokens / Δpasses); as the log does, a
            # window's batch is the #running-req of its end, so accept length = tokens per
            # iteration / running_req and the derived cycle 1000 × a × running / throughput
            # is the window's wall time per iteration exactly.  The gauge is one Decode batch
            # line's value: a sample of decode_log_interval iterations (used when the batch
            # at the end is too far from the window's, by more than a quarter)
            rate_g = _num(vals.get("accept_rate"))
            row["accept_len"] = a_w
            row["accept_rate"] = rate_g * a_w / a if rate_g is not None else None
            row["drafts"] = tok / a_w
        elif a is not None:
            row["accept_len"] = a
            row["accept_rate"] = _num(vals.get("accept_rate"))
            row["drafts"] = tok / a
        else:
            row["drafts"] = float(tok)             # one token a request-step
    passes = [vals[f"passes:{m}"] for m in SGLANG_DECODE_PASSES if f"passes:{m}" in vals]
    if passes:
        row["iter"] = int(sum(passes))
    ptok = d.get("tokens:prefill_compute")
    if "tokens:prefill_compute" in d or "tokens:decode" in d:
        row["prompt_throughput"] = (ptok or 0.0) / dt
    if ptok:
        # one prefill row per prefill batch (cuda_graph_passes_total{mode=prefill_*} counts
        # them), the window's prompt tokens spread over them: the analyses regress a window's
        # time on its prefill tokens and batches, as they do for a log's Prefill batch lines
        n = int(round(sum(d.get(f"passes:{m}", 0.0) for m in SGLANG_PREFILL_PASSES))) or 1
        tot, cached = int(round(ptok)), int(round(d.get("tokens:prefill_cache", 0.0)))
        row["_prefill"] = [{"new_token": tot // n + (tot % n if i == n - 1 else 0),
                            "cached_token": cached // n + (cached % n if i == n - 1 else 0),
                            "running_req": running, "queue_req": _int(vals.get("queue"))}
                           for i in range(n)]
    return row


def _vllm_window(vals: dict, d: dict, dt: float, v0: bool):
    gen = d.get("gen_tokens")
    prompt = d.get("prompt_tokens")
    kv = _num(vals.get("kv_usage"))
    row = {"engine": "vllm", "running_req": _int(vals.get("running")),
           "queue_req": _int(vals.get("queue")),
           "token_usage": kv, "gen_throughput": gen / dt if gen is not None else None,
           "prompt_throughput": prompt / dt if prompt is not None else None,
           "gen_throughput_steps": v0}
    stats = {"variant": "metrics", "prompt_throughput": row["prompt_throughput"],
             "gen_throughput": row["gen_throughput"], "running_req": row["running_req"],
             "waiting_req": row["queue_req"], "gpu_kv_usage": kv * 100 if kv is not None else None}
    spec = None
    nd = d.get("drafts")
    if nd is not None and not v0:
        acc, dtok = d.get("accepted", 0.0), d.get("draft_tokens")
        pos = sorted(((int(k.split(":")[1]), v) for k, v in d.items()
                      if k.startswith("pos:") and k.split(":")[1].isdigit()))
        k = len(pos) or (int(round(dtok / nd)) if nd and dtok else None)
        spec = {"variant": "metrics", "cumulative": False, "k": k,
                "accepted_tokens": int(round(acc)), "draft_tokens": _int(dtok),
                "window_accepted": int(round(acc)), "window_draft_tokens": _int(dtok),
                "drafts": float(nd), "drafts_from": "counter", "window_s": dt,
                "accepted_throughput": acc / dt,
                "drafted_throughput": dtok / dt if dtok is not None else None}
        if nd > 0:
            tau = 1 + acc / nd
            spec["accept_len"] = tau
            spec["mean_acceptance_length"] = tau
            if k:
                spec["accept_rate"] = (tau - 1) / k
            if dtok:
                spec["window_acceptance_rate"] = acc / dtok
                spec["draft_acceptance_rate"] = acc / dtok
            if pos:
                spec["per_position"] = json.dumps([round(v / nd, 6) for _, v in pos])
            row.update(accept_len=tau, accept_rate=spec.get("accept_rate"), drafts=float(nd))
        else:
            row["drafts"] = 0.0
    return row, spec, stats


def _config(run: Run, k_seen: set[int]) -> dict:
    cfg: dict = {}
    model = run.labels.get("model_name")
    if model:
        cfg["model_path"] = model
    spec = False
    steps = set()
    for s in run.series.values():
        for v in s.values:
            if run.engine == "sglang":
                if (v.get("accept_len") or 0) >= 1:
                    spec = True
                if v.get("num_steps"):
                    steps.add(int(v["num_steps"]))
            elif "drafts" in v:
                spec = True
    if spec:
        cfg["speculative_algorithm"] = "unknown"    # the metrics do not name the method
        k = steps or k_seen
        if len(k) == 1:
            cfg["speculative_num_steps"] = next(iter(k))
    else:
        cfg["speculative_algorithm"] = None
    flagged = [w for w in run.ignored if "not an accept length" in w]
    if flagged:
        cfg["metrics_flagged"] = f"{flagged[0]} ({cell(run.ignored[flagged[0]][1], 120)})"
    cfg["metrics_engine"] = run.engine
    if run.labels.get("instance"):
        cfg["metrics_instance"] = run.labels["instance"]
    return cfg


# --------------------------------------------------------------------------- histograms
def _le(text: str) -> float:
    return float(text)


def hist_rows(run: Run) -> list[dict]:
    """The ``latency_hist`` rows of a run: per histogram series and metric, one row per pair
    of consecutive samples that hold every bucket (histograms.increments of the pair)."""
    from .histograms import increments
    rows = []
    for skey, s in run.series.items():
        if not (skey and skey[0] == "hist"):
            continue
        label = ",".join(f"{k}={v}" for k, v in skey[1])
        for metric in ("ttft", "tpot"):
            pre = f"h:{metric}:"
            samples = []
            for t, vals in zip(s.t, s.values):
                les = [k[len(pre):] for k in vals if k.startswith(pre)
                       and k[len(pre):] not in ("count", "sum")]
                try:
                    les.sort(key=_le)
                except ValueError:                 # (implausible() left such samples out)
                    continue
                if not les or not math.isinf(_le(les[-1])):
                    continue                       # no +Inf bucket at this time: not whole
                samples.append((t, les, [vals[pre + le] for le in les],
                                vals.get(pre + "sum", math.nan)))
            for a, b in zip(samples, samples[1:]):
                got = increments([a, b])
                if got is None or b[0] <= a[0]:
                    continue
                bounds, counts, dsum, resets = got
                rows.append({"startup": sum(1 for r in run.resets if r <= b[0]),
                             "metric": metric, "series": label, "t_start": a[0],
                             "t_end": b[0], "bounds": json.dumps(bounds),
                             "counts": json.dumps(counts), "requests": counts[-1],
                             "sum_s": dsum, "reset": bool(resets)})
    return rows


# --------------------------------------------------------------------------- ParsedLog
def parsed_log(rec: Recorder, sources: list[str], extra_diags: list | None = None,
               require: bool = True):
    """A ParsedLog of every run the recorder holds (one SourceInfo per run); a source without
    data becomes an error diagnostic (``require``: an error when no run has any window)."""
    from ..model import ParsedLog, SourceInfo
    from ..parsers.scan import Diagnostic
    from ..schema import TABLES
    from ..tables import build_frame, concat_frames

    from ..schema import LATENCY_HIST

    parts: dict[str, list] = {t: [] for t in TABLES}
    hists: list = []
    infos, diags = [], list(extra_diags or [])
    failed = []
    for src in list(sources) + [s for s in rec.extra_sources if s not in sources]:
        err = rec.errors.get(src)
        if err and src not in rec.answered:
            failed.append(f"{src}: {err}")
            infos.append(SourceInfo(src, error=err))
            diags.append(Diagnostic(src, None, "input_error", err, "error"))
        elif src not in rec.seen and src in rec.answered:
            msg = ("no SGLang or vLLM metric families (sglang:…, vllm:…) in its answer: is "
                   "this the server's /metrics, and SGLang started with --enable-metrics?"
                   if not src.startswith("prom+") else
                   "no SGLang or vLLM series match (sglang:…, vllm:…): check --match and "
                   "--since, and that Prometheus scrapes the servers")
            failed.append(f"{src}: {msg}")
            infos.append(SourceInfo(src, error=msg))
            diags.append(Diagnostic(src, None, "input_error", msg, "error"))
        elif err:
            diags.append(Diagnostic(src, None, "metrics", err, "warning"))
    for run in rec.named_runs():
        rows, notes, _ = tables_of(run)
        info = SourceInfo(run.name, engine=run.engine)
        infos.append(info)
        for line, kind, msg, sev in notes + [(None, "metrics", n, "warning") for n in run.notes]:
            diags.append(Diagnostic(run.name, line, kind, msg, sev))
        if not rows["decode"]:
            msg = ("fewer than two samples of its series: no window yet" if
                   all(len(s.t) < 2 for s in run.series.values()) else
                   "no window: the counters reset between every two samples")
            info.error = msg
            diags.append(Diagnostic(run.name, None, "input_error", msg, "error"))
            failed.append(f"{run.name}: {msg}")
        for t, rws in rows.items():
            for r in rws:
                r["source"] = run.name
            if rws:
                parts[t].append(build_frame(TABLES[t], rws))
        hrows = hist_rows(run)
        for r in hrows:
            r["source"] = run.name
        if hrows:
            hists.append(build_frame(LATENCY_HIST, hrows))
        info.counts = {t: len(rows.get(t, ())) for t in TABLES}
        info.lines = len(rows["decode"])
    if require and not any(any(i.counts.values()) for i in infos if i.counts):
        raise EaglelogError("no input could be read: " + "; ".join(failed) if failed else
                            "no window in any source")
    tables = {t: concat_frames(TABLES[t], parts[t]) for t in TABLES}
    tables["latency_hist"] = concat_frames(LATENCY_HIST, hists)
    return ParsedLog(tables, infos, diags)


def _spec_params(spec: str) -> tuple[str, dict]:
    """A source spec without eaglelog's query parameters, and those (step, duration, match,
    since, until)."""
    u = urllib.parse.urlsplit(spec)
    q = urllib.parse.parse_qsl(u.query, keep_blank_values=True)
    ours = {"step", "duration", "match", "since", "until"}
    params: dict = {}
    rest = []
    for k, v in q:
        if k in ours:
            if k == "match":
                params.setdefault("match", []).append(v)
            else:
                params[k] = v
        else:
            rest.append((k, v))
    url = urllib.parse.urlunsplit((u.scheme, u.netloc, u.path, urllib.parse.urlencode(rest),
                                   u.fragment))
    return url, params


def runs_named(by_name: dict, spec: str) -> list:
    """The items of ``by_name`` (run label -> list) that come from the metrics source ``spec``:
    its runs are named by the source without eaglelog's parameters (and their instance)."""
    if not is_metrics_source(spec):
        return []
    base = _spec_params(spec)[0]
    return [r for k, rs in by_name.items() if k == base or k.startswith(base + " ") for r in rs]


def with_params(spec: str, **params) -> str:
    """The spec with eaglelog's query parameters set (the CLI's --step/--match/… options)."""
    url, have = _spec_params(spec)
    for k, v in params.items():
        if v is None or v == () or v == []:
            continue
        if k == "match":
            have.setdefault("match", [])
            have["match"] = list(have["match"]) + [m for m in v if m not in have["match"]]
        else:
            have.setdefault(k, v)
    q = [(k, m) for k, v in have.items() for m in (v if isinstance(v, list) else [v])]
    u = urllib.parse.urlsplit(url)
    query = "&".join(filter(None, [u.query, urllib.parse.urlencode(q)]))
    return urllib.parse.urlunsplit((u.scheme, u.netloc, u.path, query, u.fragment))


DEFAULT_STEP = 5.0
DEFAULT_DURATION = 30.0


def read_endpoints(urls: list[str], step: float = DEFAULT_STEP,
                   duration: float = DEFAULT_DURATION, recorder: Recorder | None = None,
                   progress=None) -> Recorder:
    """Scrape every endpoint every ``step`` seconds for ``duration`` seconds (at least two
    scrapes), all at the same instants (one thread per endpoint; each scrape within its
    deadline: the limits' timeout, and at most the step, at least 1 s)."""
    rec = recorder or Recorder()
    n = max(2, int(round(duration / step)) + 1)
    start = time.monotonic()
    for i in range(n):
        due = start + i * step
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        got = scrape_all(urls, timeout=min(current_limits().timeout, max(step, 1.0)))
        for sc in got:
            rec.add_scrape(sc)
        if progress:
            progress(i + 1, n)
        if all(u in rec.errors and u not in rec.answered for u in urls) and i == 0:
            break                      # nothing answers: no point in waiting for the rest
    return rec


