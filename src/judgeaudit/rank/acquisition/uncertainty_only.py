"""Ablation: Var(theta_i - theta_j) alone (no outcome or membership factor)."""

import numpy as np

from judgeaudit.rank.acquisition.base import AcquisitionContext


def score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ctx.var_diff(a, b)
