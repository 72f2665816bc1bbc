"""Ablation: p_ij (1 - p_ij) alone (closest-looking pairs)."""

import numpy as np

from judgeaudit.rank.acquisition.base import AcquisitionContext


def score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ctx.outcome_variance(a, b)
