"""A real headless Chromium for the HTML report tests, driven over the Chrome DevTools Protocol.

``load(path)`` opens a local file in a fresh browser profile and returns what happened: every
network request the page made, every console message and exception, and a PNG screenshot (and a
PDF of the print layout).  ``Session`` keeps one browser for several pages, and its ``layout``
lays the page out at a given width (screen or print media) and measures, in the browser, every
element that is wider than its box or reaches past the content column.  The browser is
Debian's ``chromium`` (``.ci/run`` installs it); when it is missing the tests fail, unless
EAGLELOG_SKIP_BROWSER=1 says to skip them.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-extensions",
         "--disable-default-apps", "--disable-domain-reliability", "--metrics-recording-only",
         "--hide-scrollbars", "--mute-audio", "--window-size=1280,1600",
         "--remote-debugging-port=0", "--remote-allow-origins=*"]


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


@dataclass
class PageLoad:
    url: str
    requests: list[dict] = field(default_factory=list)     # Network.requestWillBeSent params
    console: list[dict] = field(default_factory=list)      # Runtime.consoleAPICalled params
    exceptions: list[dict] = field(default_factory=list)   # Runtime.exceptionThrown params
    log: list[dict] = field(default_factory=list)          # Log.entryAdded entries
    failed: list[dict] = field(default_factory=list)       # Network.loadingFailed params
    screenshot: bytes = b""
    pdf: bytes = b""
    title: str = ""
    figures: list[dict] = field(default_factory=list)     # rendered size of each inline <svg>

    @property
    def errors(self) -> list[str]:
        out = [f"console.{c['type']}: {c.get('args')}" for c in self.console
               if c.get("type") in ("error", "assert")]
        out += [f"exception: {e.get('exceptionDetails', {}).get('text')}" for e in self.exceptions]
        out += [f"log {e.get('source')}: {e.get('text')} ({e.get('url')})" for e in self.log
                if e.get("level") == "error"]
        out += [f"failed load: {f.get('errorText')}" for f in self.failed]
        return out

    @property
    def foreign_requests(self) -> list[str]:
        return [r["request"]["url"] for r in self.requests if r["request"]["url"] != self.url]


class Cdp:
    """A minimal DevTools client: send a command, wait for its reply, keep the events."""

    def __init__(self, ws_url: str) -> None:
        import websocket   # websocket-client, in the test extra

        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []

    REPLY_TIMEOUT = 60.0      # s: a command's reply on a loaded 2-core machine

    def send(self, method: str, **params) -> dict:
        self.next_id += 1
        mid = self.next_id
        # (its own timeout: drain() and wait_for() leave the socket's at what they last set,
        # as little as 50 ms, and a reply under load took longer — a flaky CI failure)
        self.ws.settimeout(self.REPLY_TIMEOUT)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        for ev in self.events:
            if ev["method"] == method:
                return ev
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg
        raise TimeoutError(f"no {method} within {timeout} s")

    def drain(self, seconds: float) -> None:
        """Collect events for a while (late requests, late console messages)."""
        import websocket

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                msg = json.loads(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                break
            if "method" in msg:
                self.events.append(msg)

    def close(self) -> None:
        self.ws.close()


class Session:
    """One headless Chromium (a fresh profile, its own process group) and its page target:
    open several local files in turn without paying the start-up each time.

        with browser.Session() as b:
            page = b.load("report.html")
            widths = b.layout(1280)
    """

    def __init__(self) -> None:
        binary = chromium_binary()
        if binary is None:
            raise RuntimeError("chromium is not installed: apt-get install chromium (.ci/run "
                               "does this), or set EAGLELOG_SKIP_BROWSER=1 to skip the browser "
                               "tests")
        self.profile = tempfile.mkdtemp(prefix="eaglelog-chromium-")
        self.err = tempfile.TemporaryFile()   # the browser's chatter; shown when it fails
        self.proc = None
        self.cdp = None
        try:
            # its own process group: the browser's helpers (zygote, renderer) end with it
            self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}",
                                          "about:blank"], stdout=subprocess.DEVNULL,
                                         stderr=self.err, start_new_session=True)
            port_file = Path(self.profile) / "DevToolsActivePort"
            deadline = time.monotonic() + 60
            while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
                if self.proc.poll() is not None:
                    self.err.seek(0)
                    raise RuntimeError(f"chromium exited with {self.proc.returncode}: "
                                       f"{self.err.read().decode(errors='replace')[-2000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError("chromium did not open its DevTools port within 60 s")
                time.sleep(0.1)
            port = int(port_file.read_text().splitlines()[0])
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = json.load(r)
            page = next(t for t in targets if t.get("type") == "page")
            self.cdp = Cdp(page["webSocketDebuggerUrl"])
            for domain in ("Page", "Network", "Runtime", "Log"):
                self.cdp.send(f"{domain}.enable")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.cdp is not None:
            try:
                self.cdp.close()
            except Exception:      # noqa: BLE001 - the browser may be gone already
                pass
            self.cdp = None
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None
        self.err.close()
        for _ in range(50):       # helpers may still be writing the profile as they exit
            shutil.rmtree(self.profile, ignore_errors=True)
            if not os.path.exists(self.profile):
                break
            time.sleep(0.1)

    def evaluate(self, expression: str):
        res = self.cdp.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluate: {res['exceptionDetails']}")
        return res["result"].get("value")

    def open(self, path: str | os.PathLike, settle: float = 0.3) -> str:
        """Navigate to a local file and wait for its load event; the events of that load only
        are kept (``self.cdp.events``).  Returns the file's URL."""
        url = Path(path).resolve().as_uri()
        self.cdp.events.clear()
        self.cdp.send("Emulation.setEmulatedMedia", media="")
        self.cdp.send("Emulation.clearDeviceMetricsOverride")
        self.cdp.send("Page.navigate", url=url)
        self.cdp.wait_for("Page.loadEventFired", timeout=60)
        self.cdp.drain(settle)
        return url

    def load(self, path: str | os.PathLike, settle: float = 1.0) -> PageLoad:
        """Open ``path`` and report what the page did: requests, console, a screenshot of the
        whole page (half scale), a PDF of its print layout, the size of every inline <svg>."""
        url = self.open(path, settle)
        cdp = self.cdp
        size = cdp.send("Page.getLayoutMetrics")["cssContentSize"]
        shot = cdp.send("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                        clip={"x": 0, "y": 0, "width": size["width"],
                              "height": size["height"], "scale": 0.5})
        figures = self.evaluate(
            "[...document.querySelectorAll('svg')].map(s => {const r = "
            "s.getBoundingClientRect(); return {width: r.width, height: r.height, "
            "texts: s.querySelectorAll('text').length}})") or []
        pdf = cdp.send("Page.printToPDF", printBackground=True)
        title = self.evaluate("document.title") or ""
        cdp.drain(0.2)
        res = PageLoad(url, title=title, screenshot=base64.b64decode(shot["data"]),
                       pdf=base64.b64decode(pdf["data"]), figures=figures)
        for ev in cdp.events:
            m, p = ev["method"], ev.get("params", {})
            if m == "Network.requestWillBeSent":
                res.requests.append(p)
            elif m == "Network.loadingFailed":
                res.failed.append(p)
            elif m == "Runtime.consoleAPICalled":
                res.console.append(p)
            elif m == "Runtime.exceptionThrown":
                res.exceptions.append(p)
            elif m == "Log.entryAdded":
                res.log.append(p.get("entry", {}))
        return res

    def layout(self, width: int, media: str = "screen", open_details: bool = True) -> dict:
        """Lay the open page out ``width`` CSS px wide (``media`` 'print': the print style
        sheet) and measure, in the browser, what sticks out.  Returns the document's
        scrollWidth/clientWidth, the content column, and ``overflow``: every element whose
        content is wider than its box (scrollWidth > clientWidth) or whose box reaches past
        the content column; each with its tag, class, a bit of its text and its widths.
        ``open_details``: every <details> opened first, so that folded content is measured
        too."""
        self.cdp.send("Emulation.setEmulatedMedia", media=media)
        self.cdp.send("Emulation.setDeviceMetricsOverride", width=width, height=1000,
                      deviceScaleFactor=1, mobile=False)
        return self.evaluate(LAYOUT_JS % ("true" if open_details else "false"))


# the layout probe (run in the page): the content column is the <body>'s content box; an HTML
# element counts, and the outermost <svg> of a figure (not the shapes inside it, which clip)
LAYOUT_JS = r"""(() => {
  if (%s) document.querySelectorAll('details').forEach(d => d.open = true);
  const html = 'http://www.w3.org/1999/xhtml';
  const doc = document.documentElement, body = document.body;
  const bs = getComputedStyle(body), br = body.getBoundingClientRect();
  const left = br.left + parseFloat(bs.paddingLeft), right = br.right - parseFloat(bs.paddingRight);
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
      (typeof e.className === 'string' && e.className
       ? '.' + e.className.trim().replace(/\s+/g, '.') : '');
  const overflow = [], sizes = {};
  let n = 0, hidden = 0;
  for (const e of body.querySelectorAll('*')) {
    if (e.namespaceURI !== html && e.tagName.toLowerCase() !== 'svg') continue;
    if (e.closest('svg') && e.closest('svg') !== e) continue;
    if (!e.checkVisibility()) { hidden += 1; continue; }   // folded away, display: none
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    n += 1;
    const tag = e.tagName.toLowerCase();
    const inner = e.namespaceURI === html && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1;
    const out = r.right > right + 1 || r.left < left - 1;
    const k = tag;
    sizes[k] = Math.max(sizes[k] || 0, Math.round(r.width));
    if (inner || out)
      overflow.push({element: name(e), text: (e.textContent || '').trim().slice(0, 60),
                     scrollWidth: e.scrollWidth, clientWidth: e.clientWidth,
                     left: Math.round(r.left), right: Math.round(r.right)});
  }
  return {scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth,
          bodyScrollWidth: body.scrollWidth, bodyClientWidth: body.clientWidth,
          column: [Math.round(left), Math.round(right)], elements: n, hidden: hidden,
          widest: sizes,
          details: document.querySelectorAll('details').length, overflow: overflow};
})()"""


def load(path: str | os.PathLike, settle: float = 1.0) -> PageLoad:
    """Open ``path`` in a fresh headless Chromium and report what the page did."""
    with Session() as s:
        return s.load(path, settle)


def _stop(proc: subprocess.Popen) -> None:
    """End the browser and the helpers of its process group (all started by load())."""
    import signal

    pgid = proc.pid            # start_new_session: the group is the browser's own id
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(50):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
