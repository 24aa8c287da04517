"""Never confidently wrong (issue 34): the cases an independent simulator found, as scenarios of
simlab/simulate.py with exact truths (docs/simulation.md §4)."""
from __future__ import annotations

import eaglelog
from eaglelog.analysis import rate
from eaglelog.analysis.breakeven import run_windows
from simlab.simulate import SCENARIOS, simulate


def windows_of(tmp_path, scenario, seed):
    path = tmp_path / f"{scenario.name}-{seed}.log"
    simulate(scenario, seed).write(str(path))
    _, win = run_windows(eaglelog.parse(str(path)), str(path))
    return win


def test_a_sweep_up_from_batch_1_keeps_its_first_level(tmp_path):
    """1 → 2 → 4 → 8 → 16 clients on a cost with steps (16-token tiles): the quadratic in the
    batch cannot follow it, and tested against that curve the whole first level read as slower
    than the rest; each window is tested against its own batch size's windows now, and a
    warm-up must be 2 % slower: no cut.  A real warm-up (1.7× at the start) is still cut."""
    for seed in range(3):
        win = windows_of(tmp_path, SCENARIOS["sweep_ramp"], seed)
        assert int((win.r == 1).sum()) > 100
        assert rate.fit(win, 0.95).warmup == 0
    win = windows_of(tmp_path, SCENARIOS["warmup"].replace(duration_s=300.0), 0)
    assert rate.fit(win, 0.95).warmup > 100


def test_requests_that_fill_the_run_widen_the_accept_length(tmp_path):
    """Pareto α 1.2 outputs over 100 windows: with the Finish lines, the accept length's
    interval is at least its requests' (as independent units), and a note says so."""
    floored = 0
    for seed in range(6):
        win = windows_of(tmp_path, SCENARIOS["long_requests"], seed)
        assert win.lifetime is not None and win.lifetime > 5      # request-step weighted
        assert win.req_accept is not None
        fit = rate.fit(win, 0.95)
        assert fit["accept_len"].se_log >= win.req_accept[0] - 1e-12
        said = any(n.startswith("the accept length varies more between requests")
                   for n in fit.notes)
        floored += said
    assert floored >= 2       # the requests say more than the windows in some of the runs


def test_schedule_keeps_a_run_that_measured_a_bucket_without_an_interval(tmp_path):
    """Two runs at batch 1 and 2: the 5-step run measured batch 1 in one usable window (no
    interval) and is the faster there. It stays a candidate, the bucket is not settled, and a
    note says which run measured what (it was dropped, and the slower run chosen as 'pays')."""
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from shortlogs import batch_log
    head = ("[2026-03-02 13:59:59.000] server_args=ServerArgs(model_path='/models/m', "
            "speculative_algorithm='EAGLE3', speculative_num_steps={k}, "
            "speculative_eagle_topk=1, speculative_num_draft_tokens={n})\n")

    def write(name, k, sizes, accept):
        p = tmp_path / name
        p.write_text(head.format(k=k, n=k + 1) +
                     batch_log(sizes, lambda r: 20.0 + 2 * r, accept=accept).split("\n", 1)[1])
        return str(p)
    a = write("k3.log", 3, [1] * 40 + [2] * 40, 2.4)
    b = write("k5.log", 5, [1] * 2 + [2] * 40, 3.0)
    base = tmp_path / "base.log"
    base.write_text(batch_log([1] * 40 + [2] * 40, lambda r: 10.0 + 0.5 * r, accept=None))
    r = eaglelog.schedule([a, b], baseline_log=str(base))
    (one,) = [s for s in r.slots if s.batch == "1"]
    assert [c.steps for c in one.candidates] == [5, 3]     # the faster, without an interval
    assert not one.candidates[0].eff_tok_s.sufficient and one.candidates[1].tied
    assert one.status == "inconclusive"
    assert any("measured without an interval" in n and "k5.log at running_req 1" in n
               for n in r.notes)
