"""Typed aliases and the small result types shared by the stats modules.

Every reported rate carries its n and an interval (DESIGN.md), so the common currency is
`Estimate`; functions that only compute an interval return a plain `Interval`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Interval = tuple[float, float]  # (lo, hi), both inclusive
# Per-item data: a 1-D array (one value per item), a 2-D array (one row per item) or a
# sequence of per-item tuples. Resampling always happens along the first axis.
Items = np.ndarray | Sequence[Any]
# A statistic of items: takes the (resampled) items, returns one number.
Statistic = Callable[[Any], float]
Labels = Sequence[Any]  # category labels for agreement statistics


def _json_float(x: float) -> float | None:
    """NaN/inf are not JSON; the results files say null instead."""
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% (or other level) interval and the n behind it."""

    value: float
    ci95: Interval
    n: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict: {"value", "ci95": [lo, hi], "n"}; non-finite -> None."""
        lo, hi = self.ci95
        return {
            "value": _json_float(self.value),
            "ci95": [_json_float(lo), _json_float(hi)],
            "n": int(self.n),
        }
