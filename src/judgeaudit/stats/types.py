"""Typed aliases and the small result types shared by the stats modules.

Every reported rate carries its n and an interval (DESIGN.md), so the common currency is
`Estimate`; functions that only compute an interval return a plain `Interval`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
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

Z95 = 1.959963984540054  # the standard normal 97.5% quantile: a 95% normal interval


def _json_float(x: float) -> float | None:
    """NaN/inf are not JSON; the results files say null instead."""
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% (or other level) interval and the n behind it.

    `method` names what produced the interval ("wilson", "t", "delta", "fisher-z",
    "bootstrap-percentile", ...) and `se` is the standard error behind a normal-theory
    interval; both are optional and written by `as_dict` only when set, so a results file
    written before they existed reads the same (`from_dict`)."""

    value: float
    ci95: Interval
    n: int
    se: float | None = None
    method: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict: {"value", "ci95": [lo, hi], "n"} plus "se" and "method"
        when set; non-finite -> None."""
        lo, hi = self.ci95
        out: dict[str, Any] = {
            "value": _json_float(self.value),
            "ci95": [_json_float(lo), _json_float(hi)],
            "n": int(self.n),
        }
        if self.se is not None:
            out["se"] = _json_float(self.se)
        if self.method is not None:
            out["method"] = self.method
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], n: int | None = None) -> Estimate:
        """The inverse of `as_dict` (None -> nan). `n` stands in when the dict has none;
        "se" and "method" may be absent (files written before they existed)."""
        def num(x: Any) -> float:
            return math.nan if x is None else float(x)

        lo, hi = d.get("ci95") or (None, None)
        k = d.get("n", n)
        if k is None:
            raise ValueError(f"estimate without n: {dict(d)!r}")
        se = d.get("se")
        return cls(num(d.get("value")), (num(lo), num(hi)), int(k),
                   None if se is None else float(se), d.get("method"))
