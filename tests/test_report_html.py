"""eaglelog report: one self-contained HTML file, checked as text and in a real headless Chromium
(no console errors, no network request, a non-blank page with every figure drawn)."""
import os
import re

import pytest

from conftest import SAMPLES

FIVE = SAMPLES / "eagle3_5step.log"
TWO = SAMPLES / "eagle3_2step.log"
BATCH = SAMPLES / "batch_eagle3.log"
BATCH_BASE = SAMPLES / "batch_baseline.log"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of two runs against a 90 tok/s baseline (made once for the module)."""
    from click.testing import CliRunner

    from eaglelog.cli import main

    out = tmp_path_factory.mktemp("report") / "report.html"
    r = CliRunner().invoke(main, ["report", "--baseline-toks", "90", "-o", str(out), str(FIVE),
                                  str(TWO)], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    return out


def test_the_report_holds_the_summary_verdict_tables_and_plots(run, report):
    text = report.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    # the summary blocks are those `eaglelog summary` prints (HTML-escaped)
    import html
    summary = run("-q", "summary", "--baseline-toks", "90", FIVE, TWO).stdout
    for block in summary.split("\n\n"):
        assert html.escape(block.strip("\n")) in text
    assert "BELOW break-even: 0.931× the baseline" in text
    assert '<span class="verdict below">below</span>' in text
    assert text.count("<table>") >= 5
    for section in ("Inputs", "Summary", "Break-even (baseline 90 tok/s)", "Cycle breakdown",
                    "Timeline", "Compare (the first run is the reference)", "Sweep"):
        assert f"<h2>{section}</h2>" in text
    assert text.count("<svg ") == 5              # breakeven, phases, timeline, compare, sweep
    for label in ("accept length", "ms per cycle", "ratio changed / reference",
                  "effective tok/s", "eagle3_5step.log"):
        assert label in text
    assert "@media print" in text


def test_the_report_is_self_contained(report):
    text = report.read_text(encoding="utf-8")
    lower = text.lower()
    for needle in ("<script", "<link", "<img", "<iframe", "@import", "src=", "@font-face"):
        assert needle not in lower, needle
    # url() only for the clip paths defined in the page
    refs = re.findall(r"url\(([^)]*)\)", text)
    assert refs and all(r.startswith("#") for r in refs)
    assert not re.findall(r"https?://", text)       # not even the SVG namespace URIs
    assert "<?xml" not in text and "<!DOCTYPE svg" not in text
    # every href is an anchor in the page, and every id is unique
    hrefs = re.findall(r'href="([^"]*)"', text)
    assert hrefs and all(h.startswith("#") for h in hrefs)
    ids = re.findall(r'\bid="([^"]*)"', text)
    assert len(ids) == len(set(ids))
    assert all(h[1:] in ids for h in hrefs)
    assert all(r[1:] in ids for r in refs)


def test_the_report_is_deterministic(run, report, tmp_path):
    again = tmp_path / "again.html"
    assert run("report", "--baseline-toks", "90", "-o", again, FIVE, TWO).exit_code == 0
    assert again.read_bytes() == report.read_bytes()


def test_a_report_with_a_baseline_log_has_the_per_batch_table(run, tmp_path):
    out = tmp_path / "batch.html"
    r = run("report", "--baseline-log", BATCH_BASE, "-o", out, BATCH)
    assert r.exit_code == 0, r.stderr
    text = out.read_text()
    assert "<th>running_req</th>" in text
    assert "<td>32</td>" in text and "<td class=\"num\">0.918</td>" in text
    assert "break-even accept length by batch size" in text
    assert "<h2>Compare" not in text              # one run: nothing to compare
    assert text.count("<svg ") == 2               # no EAGLE3_PROF blocks: no phases plot


def test_report_usage_errors(run, tmp_path):
    r = run("report", "-o", tmp_path / "r.txt", FIVE)
    assert r.exit_code == 2 and "reports are written as .html, .htm" in r.stderr
    r = run("report", FIVE)
    assert r.exit_code == 2 and "Missing option '-o'" in r.stderr
    r = run("report", "--baseline-toks", "90", "--baseline-log", BATCH_BASE, "-o",
            tmp_path / "r.html", FIVE)
    assert r.exit_code == 2 and "not both" in r.stderr
    r = run("report", "-o", tmp_path / "r.html", tmp_path / "missing.log")
    assert r.exit_code == 1 and r.stderr.startswith("eaglelog: error: ")
    assert not (tmp_path / "r.html").exists()


# ----------------------------------------------------------------------------- real browser

browser_test = pytest.mark.skipif(os.environ.get("EAGLELOG_SKIP_BROWSER") == "1",
                                  reason="EAGLELOG_SKIP_BROWSER=1")


@browser_test
def test_chromium_loads_the_report_offline_without_errors(report):
    import io

    import numpy as np
    from PIL import Image

    import browser

    page = browser.load(report)       # fails (never skips) when chromium is missing
    assert page.title.startswith("eaglelog report: ")
    # the only request is the document itself: nothing from the network, no other file
    assert [r["request"]["url"] for r in page.requests] == [page.url]
    assert page.foreign_requests == []
    assert page.errors == []
    # every inline figure is laid out at a readable size, with its text
    assert len(page.figures) == 5
    for f in page.figures:
        assert f["width"] >= 500 and f["height"] >= 300 and f["texts"] >= 10
    # the screenshot (the whole page) is not blank: ink, and the palette's colours
    img = np.asarray(Image.open(io.BytesIO(page.screenshot)).convert("RGB"))
    assert img.shape[0] > 1000
    nonwhite = (img < 245).any(axis=2).mean()
    assert nonwhite > 0.01
    colours = {tuple(c) for c in img.reshape(-1, 3)[::7]}
    assert len(colours) > 50
    # Okabe-Ito blue (#0072B2) of the measured values and vermillion (#D55E00) of the band
    for rgb in ((0x00, 0x72, 0xB2), (0xD5, 0x5E, 0x00)):
        assert (np.abs(img.astype(int) - rgb).sum(axis=2) < 30).sum() > 50, rgb
    # and it prints: the print layout is a PDF of several pages
    assert page.pdf.startswith(b"%PDF-") and page.pdf.count(b"/Type /Page\n") + \
        len(re.findall(rb"/Type\s*/Page[^s]", page.pdf)) >= 2
