"""Multiple-testing adjustment: a battery of probes tests many biases at once."""

from __future__ import annotations

from typing import Any

import numpy as np


def benjamini_hochberg(pvalues: Any) -> np.ndarray:
    """Benjamini-Hochberg (1995) q-values, controlling the false discovery rate.

    q_(i) = min_{j >= i} min(1, m * p_(j) / j) over the sorted p-values: monotone in p and
    capped at 1; "q <= alpha" is the BH rejection rule at level alpha. NaN p-values (a probe
    that could not be tested) stay NaN and are not counted in m. Same shape as the input.

    A p of exactly `tests.P_FLOOR` is a bound ("p < 1e-300": the exact value underflowed,
    below 1e-308, `tests.floor_p`): its q, m * p / rank, is below 1e-300 too for any m under
    1e8 and is recorded as P_FLOOR, never as m * 1e-300 (a bound read as an estimate) nor 0.
    """
    from judgeaudit.stats.tests import P_FLOOR

    p = np.asarray(pvalues, dtype=float)
    finite = ~np.isnan(p)
    if np.any((p[finite] < 0) | (p[finite] > 1)):
        raise ValueError("benjamini_hochberg: p-values must be in [0, 1] (or nan)")
    q = np.full(p.shape, np.nan)
    vals = p[finite]
    m = vals.size
    if m == 0:
        return q
    order = np.argsort(vals, kind="stable")
    scaled = vals[order] * m / np.arange(1, m + 1)
    adj = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    out = np.empty(m)
    out[order] = adj
    q[finite] = np.where(vals == P_FLOOR, P_FLOOR, out)
    return q
