"""Scoring-bias's shift and MAD intervals: each end the farther of Student's t and the
studentized bootstrap where enough items are off the common difference, exact (`movers_ci`)
where fewer than 5 are. The score interval of a bounded mean
they took before spread its variance over the scale's span, +-4 on 1-5, where the differences
stay within +-2: a planted shift of 0.5 on 20 items excluded 0 in 13 of 200 runs, against
156 for a paired t interval, and covered 200 of 200 (benchmarks/scoring_shift_interval.py)."""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.scoring import metrics as M
from judgeaudit.scoring.run import SPAN
from judgeaudit.stats import movers_ci


def _sim_scores(rng: np.random.Generator, n: int, bias: float) -> tuple[np.ndarray, np.ndarray]:
    """The sim judge's latent model on a 1-5 scale: a score is round(mu + bias + 0.5 Z),
    clipped; mu spread over the scale. Returns (perturbed, baseline)."""
    mu = 1 + 4 / (1 + np.exp(-3 * (rng.uniform(0, 1, n) - 0.5)))
    a = np.clip(np.floor(mu + bias + 0.5 * rng.standard_normal(n) + 0.5), 1, 5)
    b = np.clip(np.floor(mu + 0.5 * rng.standard_normal(n) + 0.5), 1, 5)
    return a, b


def _truth(bias: float, m: int = 400_000) -> tuple[float, float]:
    """The mean shift and MAD of the latent model, by a large draw (error ~0.002)."""
    a, b = _sim_scores(np.random.default_rng(12345), m, bias)
    return float((a - b).mean()), float(np.abs(a - b).mean())


def test_a_shift_of_half_a_point_on_20_items_is_found_in_most_runs():
    rng = np.random.default_rng(7)
    found, widths = 0, []
    for _ in range(100):
        a, b = _sim_scores(rng, 20, 0.5)
        est = M.shift(list(a), list(b), span=SPAN)
        lo, hi = est["ci95"]
        found += lo > 0
        widths.append(hi - lo)
    # before: the score interval over +-4 found it in ~7% of runs, 1.31 wide on average
    assert found >= 60, f"a shift of 0.5 on 20 items: found in {found}/100 runs, want >= 60"
    assert np.mean(widths) < 0.9, f"mean width {np.mean(widths):.2f}, want < 0.9 (t: ~0.75)"


def test_the_shift_and_mad_intervals_cover_a_planted_truth_at_n_40():
    shift_true, mad_true = _truth(0.5)
    rng = np.random.default_rng(11)
    reps, cov_shift, cov_mad = 400, 0, 0
    for _ in range(reps):
        a, b = _sim_scores(rng, 40, 0.5)
        s = M.shift(list(a), list(b), span=SPAN)["ci95"]
        m = M.mad(list(a), list(b), span=SPAN)["ci95"]
        cov_shift += s[0] <= shift_true <= s[1]
        cov_mad += m[0] <= mad_true <= m[1]
    # nominal 95%; the Monte Carlo error of a share of 400 is ~1.1%
    assert cov_shift / reps >= 0.93, f"shift coverage {cov_shift}/{reps} of {shift_true:.3f}"
    assert cov_mad / reps >= 0.93, f"MAD coverage {cov_mad}/{reps} of {mad_true:.3f}"


def test_the_mad_lower_end_is_not_zero_when_half_the_scores_moved():
    """Half of 20 items moved by one point: the flip rate's Wilson interval is [0.30, 0.70]
    and the MAD is at least the flip rate on integer scores; the interval over +-4 started
    the MAD at 0."""
    a = [3.0] * 20
    b = [3.0] * 10 + [4.0] * 5 + [2.0] * 5
    mad = M.mad(a, b, span=SPAN)
    assert mad["method"] == "t|bootstrap-t"
    assert mad["value"] == 0.5 and mad["ci95"][0] > 0.2, mad


def test_no_score_moved_is_still_the_exact_interval_not_a_point():
    a = [3.0] * 20
    shift = M.shift(a, a, span=SPAN)
    assert shift["method"] == "clopper-pearson-movers"
    assert shift["ci95"] == pytest.approx(list(movers_ci(np.zeros(20), SPAN)))
    assert shift["ci95"][0] < 0 < shift["ci95"][1]


def test_few_items_off_a_common_move_take_the_exact_interval_about_it():
    """19 of 20 items moved up by one point and one did not: the t interval of that is
    [0.85, 1.05] around 0.95, far too sure that nearly every item moves (at n = 100 with 5%
    unmoved, t covered 89%); the exact interval about the common move 1 is used instead."""
    a = [4.0] * 20
    b = [3.0] * 19 + [4.0]
    shift = M.shift(a, b, span=SPAN)
    assert shift["method"] == "clopper-pearson-mode"
    d = np.array(a) - np.array(b)
    assert shift["ci95"] == pytest.approx(list(movers_ci(d, SPAN, center=1.0)))
    lo, hi = shift["ci95"]
    assert lo < 0.8 and 0.95 < hi <= SPAN


def test_every_item_moved_alike_is_the_constant_interval():
    a = [4.0] * 10
    b = [3.0] * 10
    shift = M.shift(a, b, span=SPAN)
    assert shift["method"] == "clopper-pearson-constant"
    assert shift["ci95"][0] < 1.0 and shift["ci95"][1] > 1.0 - 1e-12
