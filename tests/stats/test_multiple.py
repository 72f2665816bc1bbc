import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from judgeaudit.stats import benjamini_hochberg


@pytest.mark.parametrize("seed", range(5))
def test_bh_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(size=30), rng.uniform(0, 0.01, size=10)])
    rng.shuffle(p)
    ref = multipletests(p, method="fdr_bh")[1]
    np.testing.assert_allclose(benjamini_hochberg(p), ref, rtol=1e-12)


def test_bh_textbook_example():
    # Sorted p .005 .01 .03 .04 .5: m p / rank = .025 .025 .05 .05 .5, already monotone.
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    np.testing.assert_allclose(benjamini_hochberg(p), [0.025, 0.05, 0.05, 0.025, 0.5])


def test_bh_is_monotone_in_p_and_capped_at_one():
    p = np.random.default_rng(9).uniform(size=50)
    q = benjamini_hochberg(p)
    order = np.argsort(p)
    assert np.all(np.diff(q[order]) >= 0)
    assert np.all(q <= 1.0) and np.all(q >= p - 1e-15)
    assert benjamini_hochberg([0.9, 0.95])[0] == pytest.approx(0.95)


def test_bh_leaves_nan_out_of_m():
    p = np.array([0.01, np.nan, 0.04, np.nan, 0.03])
    q = benjamini_hochberg(p)
    assert np.isnan(q[1]) and np.isnan(q[3])
    np.testing.assert_allclose(q[[0, 2, 4]], multipletests([0.01, 0.04, 0.03],
                                                           method="fdr_bh")[1])


def test_bh_edge_cases():
    assert benjamini_hochberg([]).shape == (0,)
    assert np.isnan(benjamini_hochberg([np.nan])).all()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.5, 1.2])
