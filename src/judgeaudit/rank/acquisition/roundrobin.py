"""Round-robin: the pair whose items have been compared least (ties broken at random by the
loop), so coverage stays even; ignores the posterior."""

import numpy as np

from judgeaudit.rank.acquisition.base import AcquisitionContext


def score(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    counts = ctx.item_counts if ctx.item_counts is not None else np.zeros(ctx.n_items)
    return -(np.maximum(counts[a], counts[b]) * (ctx.n_items + 1.0) + counts[a] + counts[b])
