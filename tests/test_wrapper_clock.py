"""Sub-second clocks a whole-second SGLang log may still carry (eaglelog/analysis/rate.py
``_clocks``; docs/statistics.md, 'What one sample is'): the `timestamp:` field of v0.4.9.post1 –
post2 (sglang.md §2, D12–D14) and a wrapper's stamps in front of the prefix (`docker logs
--timestamps`, a Kubernetes log file, a collector: sglang.md §1.3).  Where they time every
decode line, each window's mean batch is measured, as with SGLANG_LOG_MS=1; a wrapper's delays
are measured first (prefill lines against SGLang's own clock, or windows whose batch the lines
pin), and a wrapper whose stamps cannot be trusted is not used."""
import datetime as dt
import re

import numpy as np
import pytest

import eaglelog
from eaglelog.analysis import rate
from eaglelog.analysis.breakeven import run_windows
from eaglelog.parsers.prefix import read_prefix
from simlab.simulate import SCENARIOS, simulate


def windows_of(path):
    log = eaglelog.parse(path, cache=False)
    return run_windows(log, log.decode["source"].iloc[0])[1]


@pytest.mark.parametrize("text, wrapper", [
    # docker logs --timestamps: RFC 3339 UTC, nanoseconds (kept to the microsecond)
    ("2026-02-17T07:14:22.481920512Z [2026-02-17 08:14:22 TP0] ", "2026-02-17 07:14:22.481920"),
    # a Kubernetes (CRI) log file: the same stamp, then the stream and a tag
    ("2026-02-17T07:14:22.48192Z stdout F [2026-02-17 08:14:22 TP0] ",
     "2026-02-17 07:14:22.48192"),
    # a collector's bracket with milliseconds
    ("[2025-06-02 18:40:11.250] [2025-06-02 10:40:11 TP0] ", "2025-06-02 18:40:11.250"),
    # whole seconds say no more than SGLang's own bracket; a time that names no instant
    ("[2025-06-02 18:40:11] [2025-06-02 10:40:11 TP0] ", None),
    ("2026-02-30T07:14:22.481920512Z [2026-02-17 08:14:22 TP0] ", None),
    # no wrapper at all
    ("[2026-02-17 08:14:22 TP0] ", None),
])
def test_a_wrappers_sub_second_time_is_read_beside_the_prefix(text, wrapper):
    p = read_prefix(text)
    assert p.bracket and p.tags == "TP0" or p.tags is None
    assert p.wrapper == wrapper


@pytest.mark.parametrize("text, when, wrapper", [
    # a print()ed line behind docker's or Kubernetes' stamp: no SGLang time (the stamp is the
    # wrapper's clock, UTC), the stamp kept as the wrapper's
    ("2026-02-17T07:14:22.481920512Z ", (None, None), "2026-02-17 07:14:22.481920"),
    ("2026-02-17T07:14:22.5Z stdout F ", (None, None), "2026-02-17 07:14:22.5"),
    # a host framework's own formatter after the stamp: its time stands for SGLang's
    ("2026-02-17T07:14:22.5Z 2026-02-17 08:14:22 INFO 20811 [scheduler.py:301] ",
     ("2026-02-17", "08:14:22"), None),
    # a host framework's time alone (no docker stamp), as before
    ("2025-12-09 07:15:02 INFO 208114 [scheduler_metrics_mixin.py:301] ",
     ("2025-12-09", "07:15:02"), None),
])
def test_a_wrapper_alone_is_not_sglangs_time(text, when, wrapper):
    p = read_prefix(text)
    assert not p.bracket and (p.date, p.time) == when and p.wrapper == wrapper


def test_the_decode_and_prefill_tables_carry_the_wrappers_time_and_others_do_not(tmp_path):
    run = simulate(SCENARIOS["continuous_docker"].replace(duration_s=20), 0)
    path = run.write(tmp_path / "docker.log")
    log = eaglelog.parse(path, cache=False)
    for name in ("decode", "prefill"):
        t = log.table(name)
        assert t["wrapper_time"].notna().all(), name
        # the wrapper's clock is UTC, SGLang's the host's (UTC+1 here): an hour apart, and the
        # wrapper no earlier than the whole second SGLang printed
        lag = (t["wrapper_time"] + dt.timedelta(hours=1) - t["timestamp"]).dt.total_seconds()
        assert ((lag >= 0) & (lag < 1.01)).all(), name
    assert "wrapper_time" not in log.table("requests").columns
    assert "wrapper_time" not in log.table("server_args").columns
    # the first decode line: its wrapper stamp as written
    first = next(ln for ln in run.lines if "Decode batch" in ln)
    want = first[:26].replace("T", " ")
    assert str(log.decode["wrapper_time"].iloc[0]) == want


def test_a_docker_log_measures_every_window_and_its_delays(tmp_path):
    """The simulated wrapper stamps each line 0.3 ms (mean, exponential) after SGLang wrote it:
    the difference of two stamps has variance 2 × 0.3² = 0.18 ms², which the prefill lines'
    own clock (input throughput) measures."""
    run = simulate(SCENARIOS["continuous_docker"].replace(duration_s=120, log_requests=False), 1)
    win = windows_of(run.write(tmp_path / "docker.log"))
    measured = win.measured
    assert measured is not None and measured[1:].mean() > 0.99
    assert win.svar[measured].min() == win.svar[measured].max()
    assert win.svar[measured][0] == pytest.approx(0.18, rel=0.25)
    # each measured mean batch against the simulator's own (request-steps / interval)
    tw = run.truth.windows
    pos = np.searchsorted(tw["line_no"], win.line)
    true_b = tw["req_steps"][pos] / win.interval
    err = (win.b - true_b)[measured] / true_b[measured]
    assert np.abs(err).max() < 0.005
    fit = rate.fit(win, 0.95)
    assert fit.kind == "corrected"
    assert not any("whole-second" in n for n in fit.notes)


def _batched(lines):
    """The same log as a collector that stamps on flush writes it: every line of a second with
    one stamp (its flush time), whatever its own time."""
    out = []
    for ln in lines:
        m = re.match(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d+Z ", ln)
        out.append(m.group(1) + ".999000000Z " + ln[m.end():] if m else ln)
    return out


def test_a_wrapper_that_is_not_the_lines_clock_is_not_used(tmp_path):
    """A collector that stamps lines in batches: the prefill lines' clock disagrees with its
    stamps, no window's batch is pinned often enough to measure them (a prefill in almost every
    window), so the windows keep the whole-second trapezoid and its allowance, and say so."""
    run = simulate(SCENARIOS["continuous_docker"].replace(duration_s=120, log_requests=False), 1)
    path = tmp_path / "batched.log"
    path.write_text("".join(_batched(run.lines)))
    win = windows_of(path)
    assert win.measured is None
    fit = rate.fit(win, 0.95)
    assert any(n.startswith("whole-second timestamps") for n in fit.notes)
    # and without the wrapper at all: the same windows, the same cycle
    plain = tmp_path / "plain.log"
    plain.write_text("".join(re.sub(r"^\S+Z ", "", ln) for ln in run.lines))
    assert rate.fit(windows_of(plain), 0.95)["cycle_ms"].estimate == \
        pytest.approx(fit["cycle_ms"].estimate, rel=1e-12)


def test_without_prefill_throughput_the_pinned_windows_measure_the_delays(tmp_path):
    """v0.5.8's prefill lines print no input throughput: the delays come from the windows whose
    batch the lines pin (8 clients, long outputs: most windows neither admit nor finish)."""
    sc = SCENARIOS["reference_s"].replace(wrapper="docker", version="0.5.8", duration_s=240,
                                          log_requests=False, name="reference_docker")
    run = simulate(sc, 2)
    win = windows_of(run.write(tmp_path / "v058.log"))
    assert win.measured is not None and win.measured[1:].mean() > 0.99
    sv = win.svar[win.measured][0]
    assert 0.05 < sv < 0.6                    # 0.18 ms², from some 100 pinned windows


def _v049(lines):
    """SGLang v0.4.9.post1 – post2 decode lines from millisecond ones: whole-second prefix,
    `Decode batch.`, no accept rate, and the `timestamp:` field (sglang.md §2, D12)."""
    out = []
    for ln in lines:
        m = re.match(r"\[(\S+ \d\d:\d\d:\d\d)\.(\d{3})( TP0)?\] Decode batch, (.*)$", ln)
        if not m:
            out.append(ln)
            continue
        body = re.sub(r"accept rate: [\d.]+, ", "", m.group(4))
        iso = m.group(1).replace(" ", "T") + f".{m.group(2)}000"
        out.append(f"[{m.group(1)}{m.group(3) or ''}] Decode batch. {body}, timestamp: {iso}\n")
    return out


def test_the_timestamp_field_of_v0_4_9_measures_each_window(tmp_path):
    """The field is SGLang's own clock, to the microsecond: the windows are measured as with
    SGLANG_LOG_MS=1, and the cycle is the millisecond log's."""
    run = simulate(SCENARIOS["continuous"].replace(duration_s=120, log_requests=False), 4)
    ms = run.write(tmp_path / "ms.log")
    old = tmp_path / "v049.log"
    old.write_text("".join(_v049(run.lines)))
    w_ms, w_old = windows_of(ms), windows_of(old)
    assert w_old.measured is not None and w_old.measured[1:].all()
    assert (w_old.ts % 1_000_000 == 0).all()          # the prefix: whole seconds
    np.testing.assert_allclose(w_old.b, w_ms.b, rtol=1e-9)
    assert w_old.svar[1] == rate.FIELD_VAR
    c_old = rate.fit(w_old, 0.95)["cycle_ms"].estimate
    # the fit is the millisecond log's once both say the same of their stamps' precision
    # (these field values came from millisecond stamps: the µs field's error model leaves out
    # a rounding that the truncated milliseconds have, 0.05 % of this cycle)
    w_ms.bvar, w_ms.svar = w_old.bvar, w_old.svar
    assert rate.fit(w_ms, 0.95)["cycle_ms"].estimate == pytest.approx(c_old, rel=1e-12)


def test_a_wrapper_far_behind_the_lines_is_not_taken_for_a_clock(tmp_path):
    """Quiet traffic has windows whose batch the lines pin, and they measure the stamps: a
    wrapper 30 ms late on average (a loaded daemon) times a window to ±42 ms (5 %), far beyond
    JITTER_LIMIT, so the windows keep the trapezoid and the cycle is the plain log's."""
    sc = SCENARIOS["reference_s"].replace(wrapper="docker", wrapper_delay_ms=30.0,
                                          version="0.5.8", duration_s=240, log_requests=False,
                                          name="reference_docker")
    run = simulate(sc, 2)
    win = windows_of(run.write(tmp_path / "late.log"))
    assert win.measured is None
    assert re.search(r"not used for the mean batch: they time a window to ±5\.\d% \(σ of a "
                     r"difference 3\d\.\d ms\), more than ±0\.5%$", win.clock_notes[0])
    plain = tmp_path / "plain.log"
    plain.write_text("".join(re.sub(r"^\S+Z ", "", ln) for ln in run.lines))
    assert rate.fit(win, 0.95)["cycle_ms"].estimate == \
        pytest.approx(rate.fit(windows_of(plain), 0.95)["cycle_ms"].estimate, rel=1e-12)


def _swapped(lines, every=11):
    """Adjacent wrapped lines with their wrapper stamps swapped every ``every`` lines (logs
    merged or reordered)."""
    lines = list(lines)
    for i in range(40, len(lines) - 1, every):
        a, b = lines[i], lines[i + 1]
        if a[:1].isdigit() and b[:1].isdigit():
            lines[i], lines[i + 1] = b[:31] + a[31:], a[:31] + b[31:]
    return lines


def _halved(lines):
    """Every other line without its wrapper (two copies of a log spliced)."""
    return [ln.split("Z ", 1)[1] if ln[:1].isdigit() and i % 2 else ln
            for i, ln in enumerate(lines)]


@pytest.mark.parametrize("how, want", [
    (None, "timed each decode window, so its mean batch is measured: their delays measured on "),
    (_swapped, "not used for the mean batch: they go backwards ("),
    (_batched, "not used for the mean batch: the mean batches they give are +"),
    (_halved, "not used for the mean batch: only some of the decode lines carry one"),
])
def test_what_became_of_a_wrappers_stamps_is_said(how, want, tmp_path):
    """Used: how its delays were measured.  Not used: why — and then the whole-second note does
    not advise a wrapper's stamps, which the log has (a fresh-user review: swapped stamps gave
    a cycle whose interval missed the truth, with no word)."""
    run = simulate(SCENARIOS["continuous_docker"].replace(duration_s=120, log_requests=False), 1)
    path = tmp_path / "w.log"
    path.write_text("".join(run.lines if how is None else how(run.lines)))
    win = windows_of(path)
    notes = rate.fit(win, 0.95).notes
    said = [n for n in notes if n.startswith("a wrapper's stamps (docker or Kubernetes) ")]
    assert len(said) == 1 and want in said[0], notes
    whole = [n for n in notes if n.startswith("whole-second timestamps")]
    if how is None:
        assert win.measured is not None and not whole
        assert re.search(r"on 58\d prefill lines against SGLang's own clock \(input "
                         r"throughput\): σ of a difference 0\.4\d ms$", said[0])
    else:
        assert win.measured is None
        assert len(whole) == 1 and whole[0].endswith("SGLANG_LOG_MS=1 stamps (SGLang v0.5.6 →) "
                                                     "measure it")


def test_a_wrapper_whose_delays_cannot_be_measured_is_not_used(tmp_path):
    """v0.5.8 prints no prefill throughput, and continuous traffic leaves no window whose batch
    the lines pin: the delays are unknown, so the stamps are not used, and that is said."""
    sc = SCENARIOS["continuous_docker"].replace(version="0.5.8", duration_s=120,
                                                log_requests=False)
    win = windows_of(simulate(sc, 2).write(tmp_path / "v058.log"))
    assert win.measured is None
    assert win.clock_notes == (
        "a wrapper's stamps (docker or Kubernetes) were not used for the mean batch: their "
        "delays could not be measured (no prefill line prints input throughput, v0.5.9 →, and "
        "fewer than 20 windows hold a batch the lines pin)",)


def test_a_line_a_kubernetes_log_file_split_is_reported_as_such(tmp_path):
    """A CRI log file splits a line over 16 KiB into pieces ('stdout P' … 'stdout F'); they are
    not joined here, and the report says so and what joins them."""
    run = simulate(SCENARIOS["continuous_docker"].replace(duration_s=10), 1)
    out = []
    for ln in run.lines:
        if ln.startswith(tuple("0123456789")):
            stamp, body = ln.rstrip("\n").split("Z ", 1)
            if "Finish: obj=" in body:
                body = body.replace("stream=False)", "stream=False, text='" + "x" * 20000 + "')")
            pieces = [body[i:i + 16384] for i in range(0, len(body), 16384)] or [""]
            out += [f"{stamp}Z stdout {'F' if k == len(pieces) - 1 else 'P'} {p}\n"
                    for k, p in enumerate(pieces)]
        else:
            out.append(ln)
    path = tmp_path / "cri.log"
    path.write_text("".join(out))
    log = eaglelog.parse(path, cache=False, keep_going=True)
    finishes = sum("Finish: obj=" in ln for ln in run.lines)
    reports = [d for d in log.diagnostics if d.kind == "malformed"]
    assert finishes > 10 and len(log.requests) == 0 and len(reports) == finishes
    assert reports[0].message == (
        "requests line not parsed: a Kubernetes log file split it into pieces at 16 KiB "
        "('stdout P'), which are not joined here; kubectl logs joins them")
    assert len(log.decode) == sum("Decode batch" in ln for ln in run.lines)
