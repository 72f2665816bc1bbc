"""Top-k-aware rule: p_ij (1 - p_ij) * Var(theta_i - theta_j) * (H(p_i) + H(p_j)).

Asks where the verdict is uncertain, the answer would move the posterior, and at least one of
the two items is undecided about top-k membership."""

import numpy as np

from judgeaudit.rank.acquisition.base import AcquisitionContext


def score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ctx.outcome_variance(a, b) * ctx.var_diff(a, b) * ctx.entropy(a, b)
