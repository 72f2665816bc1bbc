"""Global-uncertainty rule: p_ij (1 - p_ij) * Var(theta_i - theta_j) (top-k rule without the
membership entropy): learns the whole ranking, not the top-k."""

import numpy as np

from judgeaudit.rank.acquisition.base import AcquisitionContext


def score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ctx.outcome_variance(a, b) * ctx.var_diff(a, b)
