"""Uniformly random unqueried pair."""

import numpy as np

from judgeaudit.rank.acquisition.base import AcquisitionContext


def score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ctx.rng.random(a.shape[0])
