"""The edge guarantee of the score interval on every n, not only the n of
test_not_biased_edge_exact.py: a judge whose effect is exactly 0.05 (position, 10% of items
first-shown in both orders, none the other way) must be called not biased in at most 2.5% of
runs. Computed exactly over the binomial count of items that moved (moves one way: every
outcome is (up, 0)).

benchmarks/not_biased_power.py found the score interval (cutoff 1.96) over 2.5% with moves
one way at n = 113, 140, 153, 166, 179 and 192 (2.55-2.60%), and with 7% moving down at
n = 176 (2.505%); every other cell of its grid (n = 10..200, spans 1/2 to 2) is at most 2.5%.
For one-way moves the interval is Wilson's, whose upper end does not cover exactly. The
cutoff is now 1.98 (`stats.intervals.SCORE_WIDEN`), which keeps the whole grid at most 2.5%
with the same power at n = 80 and 120 for the sim judge; at 1.96 this test fails at
n = 113-192 (2.55-2.60%)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judgeaudit.outcome import probe_verdict
from judgeaudit.stats import paired_estimate


def one_way_not_biased_share(n: int, p_up: float = 0.1, m: float = 0.5, s: float = 0.5
                             ) -> float:
    """P(not_biased) when each item moves +m with probability p_up and never down."""
    total = 0.0
    for up in range(n + 1):
        if up * m / n >= 0.05:  # the mean itself is outside the range: never not biased
            break
        d = np.r_[np.full(up, m), np.zeros(n - up)]
        est = paired_estimate(d, span=s)
        if probe_verdict(est.value, est.ci95, None, (-0.05, 0.05), 0.05) == "not_biased":
            total += float(stats.binom.pmf(up, n, p_up))
    return total


@pytest.mark.parametrize("n", [113, 140, 153, 166, 176, 179, 192])
def test_not_biased_at_the_edge_one_way_at_most_2_5_percent_on_every_n(n):
    share = one_way_not_biased_share(n)
    assert share <= 0.025, f"not biased in {share:.3%} of runs at the edge (n = {n})"
