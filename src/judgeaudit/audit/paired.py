"""Paired item-level comparisons shared by the probes that compare two judging conditions
(template variants, reasoning vs not, framed vs plain): mean difference with a bootstrap
interval, an exact sign test, and the smallest detectable difference."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgeaudit.stats import binomial_test, bootstrap_ci, mde_paired_flip


def _finite(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def paired_difference(a: Sequence[float | None], b: Sequence[float | None],
                      seed: int = 0) -> dict[str, Any]:
    """Effect = mean(b - a) over items valid in both (b = the changed condition)."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    n = len(pairs)
    if n == 0:
        return {"effect": None, "ci95": (None, None), "p": None, "mde": None, "n": 0,
                "n_invalid": len(a)}
    d = np.array([y - x for x, y in pairs], dtype=float)
    up, down = int((d > 0).sum()), int((d < 0).sum())
    lo, hi = bootstrap_ci(d, np.mean, seed=seed)
    return {
        "effect": float(d.mean()), "ci95": (float(lo), float(hi)),
        "p": binomial_test(up, up + down, 0.5) if up + down else 1.0,
        "mde": _finite(mde_paired_flip(n, max((up + down) / n, 1.0 / n))),
        "n": n, "n_invalid": len(a) - n,
    }


def credit_of(verdict: Any, label: int) -> float | None:
    """Per-item accuracy credit: mean over asked orders of 1[winner == label]; None if any
    order is invalid."""
    if any(not o.valid for o in verdict.orders):
        return None
    return float(np.mean([o.winner == label for o in verdict.orders]))
