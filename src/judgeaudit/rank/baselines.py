"""Baselines the bias-aware ranking is compared with. Each returns one score per item
(higher = better)."""

from __future__ import annotations

import numpy as np

from judgeaudit.stats.bradley_terry import as_comparisons, fit_naive


def naive_bt(n_items: int, comparisons: np.ndarray, lam: float = 1.0) -> np.ndarray:
    """Plain Bradley-Terry scores (ridge ``lam``): ranks presentation as well as quality."""
    return fit_naive(n_items, comparisons, lam=lam).theta


def order_swap_majority(n_items: int, comparisons: np.ndarray) -> np.ndarray:
    """Each unordered pair's verdicts pooled over both orders (majority; an even split is a
    tie worth 0.5 to each), then each item's mean pair outcome. Cancels position bias when
    both orders were asked; blind to covariate bias."""
    comps = as_comparisons(comparisons, n_items)
    wins = np.zeros((n_items, n_items))
    for f, s, y in comps:
        wins[int(f), int(s)] += y
        wins[int(s), int(f)] += 1.0 - y
    played = wins + wins.T
    with np.errstate(invalid="ignore"):
        frac = np.where(played > 0, wins / np.where(played > 0, played, 1.0), np.nan)
    outcome = np.where(frac > 0.5, 1.0, np.where(frac < 0.5, 0.0, 0.5))
    outcome[np.isnan(frac)] = np.nan
    with np.errstate(invalid="ignore"):
        score = np.nanmean(np.where(np.eye(n_items, dtype=bool), np.nan, outcome), axis=1)
    return np.nan_to_num(score, nan=0.5)


def length_residualised(n_items: int, comparisons: np.ndarray, X: np.ndarray,
                        lam: float = 1.0) -> np.ndarray:
    """Naive BT scores minus their OLS fit on the covariates (with intercept): post-hoc
    removal of whatever the covariates explain, quality included."""
    theta = naive_bt(n_items, comparisons, lam=lam)
    D = np.column_stack([np.ones(n_items), np.asarray(X, float).reshape(n_items, -1)])
    beta, *_ = np.linalg.lstsq(D, theta, rcond=None)
    return theta - D[:, 1:] @ beta[1:]
