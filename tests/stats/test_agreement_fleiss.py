"""Fleiss' kappa against statsmodels' implementation on the same ratings."""

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from judgeaudit.stats import cohen_kappa, fleiss_kappa


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, size=60)
    ratings = np.stack([np.where(rng.random(60) < 0.7, truth, rng.integers(0, 3, 60))
                        for _ in range(4)], axis=1)
    table, _ = aggregate_raters(ratings)
    assert fleiss_kappa(ratings) == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)


def test_perfect_agreement_is_one_and_two_raters_close_to_cohen():
    r = np.array([[1, 1], [2, 2], [1, 1], [0, 0]])
    assert fleiss_kappa(r) == pytest.approx(1.0)
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2, 400)
    b = np.where(rng.random(400) < 0.8, a, 1 - a)
    assert fleiss_kappa(np.stack([a, b], 1)) == pytest.approx(cohen_kappa(a, b), abs=0.01)
