"""eaglelog/distributions.py against scipy.special (which the summary no longer imports: 0.35 s
of a 10 MB summary, issue 20), over the degrees of freedom the estimators produce (Student t
with B − 1 batches, Welch–Satterthwaite's fractional df, exact baselines' infinite df) and the
tails the tests and intervals read."""
import math
import subprocess
import sys

import pytest
from scipy import special as sp

from eaglelog import distributions as D

PS = [1e-8, 1e-5, 0.001, 0.01, 0.025, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.975, 0.99, 0.995,
      0.999, 1 - 1e-5, 1 - 1e-8]
TS = [-50, -10, -5, -3, -2.5, -1.96, -1, -0.1, 0, 0.3, 1, 2, 4, 30]
DFS = [0.5, 1, 1.5, 2, 2.5, 3, 4, 4.7, 5, 9, 12.3, 29, 30, 99, 100, 999, 1000]
LARGE = [1001, 12345.6, 1e5, 999_999]
HUGE = [1e6, 1e7, 2e7, 1e8, 1e12]


def rel_quantile(a, b):
    return abs(a - b) / max(1.0, abs(b))


def rel_cdf(a, b, t):
    # the smaller tail's relative error (the right tail is 1 − F: its absolute error)
    return abs(a - b) / max(b, 1e-300) if t < 0 else abs(a - b)


@pytest.mark.parametrize("dfs, tol", [(DFS, 1e-12), (LARGE, 1e-10), (HUGE, 1e-9)])
def test_student_t_agrees_with_scipy(dfs, tol):
    for df in dfs:
        for p in PS:
            assert rel_quantile(D.stdtrit(df, p), sp.stdtrit(df, p)) < tol, (df, p)
        for t in TS:
            assert rel_cdf(D.stdtr(df, t), sp.stdtr(df, t), t) < tol, (df, t)


def test_normal_agrees_with_scipy():
    for p in PS:
        assert rel_quantile(D.ndtri(p), sp.ndtri(p)) < 1e-14, p
    for x in [-37.0, -12.0, -5.0, -1.0, 0.0, 0.5, 3.0, 8.0]:
        assert rel_cdf(D.ndtr(x), sp.ndtr(x), x) < 1e-12, x
    assert D.stdtrit(math.inf, 0.975) == pytest.approx(1.959963984540054, rel=1e-15)
    assert D.stdtr(math.inf, -1.959963984540054) == pytest.approx(0.025, rel=1e-14)


def test_the_values_a_table_gives():
    # t_{0.975} with 4, 9 and 29 degrees of freedom, to the digits printed tables give
    assert round(D.stdtrit(4, 0.975), 4) == 2.7764
    assert round(D.stdtrit(9, 0.975), 4) == 2.2622
    assert round(D.stdtrit(29, 0.975), 4) == 2.0452
    assert D.stdtrit(1, 0.75) == pytest.approx(1.0, rel=1e-15)     # Cauchy's quartile
    assert D.stdtrit(2, 0.975) == pytest.approx(4.302652729749464, rel=1e-14)
    assert D.stdtrit(7, 0.5) == 0.0
    assert D.stdtrit(7, 0.025) == pytest.approx(-D.stdtrit(7, 0.975), rel=1e-15)


def test_edges_and_bad_arguments():
    assert D.stdtrit(5, 0.0) == -math.inf and D.stdtrit(5, 1.0) == math.inf
    assert D.stdtr(5, math.inf) == 1.0 and D.stdtr(5, -math.inf) == 0.0
    for bad in ((0, 0.5), (-1, 0.5), (5, 1.5), (5, -0.1), (math.nan, 0.5), (5, math.nan)):
        assert math.isnan(D.stdtrit(*bad)), bad
    assert math.isnan(D.stdtr(0, 1.0)) and math.isnan(D.stdtr(3, math.nan))
    assert D.ndtri(0.0) == -math.inf and D.ndtri(1.0) == math.inf and math.isnan(D.ndtri(2.0))


def test_a_summary_does_not_import_scipy():
    code = ("import sys; from eaglelog.cli import main\n"
            "try:\n    main(['-q', 'summary', '--no-cache', '--baseline-toks', '90', "
            "'sample_logs/eagle3_5step.log'], standalone_mode=False)\n"
            "except SystemExit:\n    pass\n"
            "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(__import__("pathlib").Path(__file__).parent.parent), check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
