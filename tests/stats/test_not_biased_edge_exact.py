"""Planted truth at the edge of the no-bias range, computed exactly (no simulation error):
a mean of paired differences d in {-m, 0, m} (every d bounded by span s >= m) with
m (P(d = m) - P(d = -m)) = 0.05 exactly, the no-bias range's upper end. "Not biased" needs the
95% interval's upper end under the edge, so it may be said in at most 2.5% of runs. Every
outcome (items up, items down) is weighed by its trinomial probability.

The percentile bootstrap used from 5 movers on said it in 4.3-5.1% of runs on the sim
judge's own position model at n = 80-200 (reviewer T2); the score interval of
`bounded_mean_ci` keeps it under 2.5%. benchmarks/not_biased_edge.py has the simulations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from judgeaudit.outcome import probe_verdict
from judgeaudit.stats import paired_estimate

NO_BIAS = (-0.05, 0.05)
# the sim judge's position model at the edge (k = 0.99005...): first-shown both times
# sigmoid(3 + k) sigmoid(k - 3), second-shown both times the complements' product
_K = 0.9900550122304866
SIM_UP = float(expit(3 + _K) * expit(_K - 3))
SIM_DOWN = float((1 - expit(3 + _K)) * (1 - expit(_K - 3)))


def not_biased_share(p_up: float, p_down: float, n: int, m: float, s: float) -> float:
    """P(verdict not_biased) over every outcome with probability above 1e-9."""
    total = 0.0
    for up in range(n + 1):
        pu = stats.binom.pmf(up, n, p_up)
        if pu < 1e-9:
            continue
        for down in range(n - up + 1):
            pr = pu * (stats.binom.pmf(down, n - up, p_down / (1 - p_up)) if p_down
                       else float(down == 0))
            if pr < 1e-9:
                continue
            d = np.r_[np.full(up, m), np.full(down, -m), np.zeros(n - up - down)]
            est = paired_estimate(d, seed=0, span=s)
            if probe_verdict(est.value, est.ci95, None, NO_BIAS, 0.05) == "not_biased":
                total += pr
    return total


@pytest.mark.parametrize(("p_up", "p_down", "n", "m", "s"), [
    (SIM_UP, SIM_DOWN, 120, 0.5, 0.5),  # the sim judge's position probe
    (0.15, 0.05, 120, 0.5, 0.5),        # a noisier judge, moves both ways
    (0.10, 0.0, 80, 0.5, 0.5),          # every move one way
    (0.125, 0.025, 120, 0.5, 1.0),      # a compare change (bound 0.5 + 0.5), a shift probe
])
def test_not_biased_at_the_edge_is_said_in_at_most_2_5_percent_of_runs(p_up, p_down, n, m, s):
    assert (p_up - p_down) * m == pytest.approx(0.05)
    share = not_biased_share(p_up, p_down, n, m, s)
    assert share <= 0.025, f"not biased in {share:.2%} of runs at the edge (n = {n})"


def test_an_unbiased_judge_is_still_called_not_biased_at_n_200():
    """The price of the wider upper end, exactly: the sim judge with no position bias
    (4.5% of items each way) is called not biased at n = 200 in 98% of runs."""
    p = float(expit(3.0) * expit(-3.0))
    assert not_biased_share(p, p, 200, 0.5, 0.5) > 0.95
