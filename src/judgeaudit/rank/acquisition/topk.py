"""Top-k-aware rule: p_ij (1 - p_ij) * Var(theta_i - theta_j) * (H(p_i) + H(p_j)).

Asks where the verdict is uncertain, the answer would move the posterior, and at least one of
the two items is undecided about top-k membership."""

import numpy as np

from judgeaudit.rank.acquisition.base import AcquisitionContext

# pairs scored per block: the temporaries of a block stay in cache (N = 1,000, all 500k
# pairs: 13 ms instead of 17, the same numbers)
_BLOCK = 32768


def score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = a.shape[0]
    if m <= 2 * _BLOCK:
        return _score(ctx, a, b)
    out = np.empty(m)
    for s in range(0, m, _BLOCK):
        out[s : s + _BLOCK] = _score(ctx, a[s : s + _BLOCK], b[s : s + _BLOCK])
    return out


def _score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    h = ctx.entropy(a, b)
    is_live = h > 0.0
    # mostly live: the full products are cheaper than gathering the live pairs (a settled
    # pair's product is exactly 0 either way)
    if 2 * np.count_nonzero(is_live) >= h.shape[0]:
        out = ctx.outcome_variance(a, b)
        out *= ctx.var_diff(a, b)
        out *= h
        return out
    # pairs of two settled items score exactly 0 (both other factors are finite): skip them,
    # the same products elementwise for the rest (the candidate list is O(N^2) long)
    live = np.nonzero(is_live)[0]
    out = np.zeros(h.shape[0])
    aa, bb = a[live], b[live]
    out[live] = ctx.outcome_variance(aa, bb) * ctx.var_diff(aa, bb) * h[live]
    return out
