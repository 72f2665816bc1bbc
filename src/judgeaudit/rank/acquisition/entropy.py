"""Entropy-only rule: H(p_i) + H(p_j), the membership uncertainty alone."""

import numpy as np

from judgeaudit.rank.acquisition.base import AcquisitionContext


def score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ctx.entropy(a, b)
