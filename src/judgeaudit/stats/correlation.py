"""Correlation of judge scores with gold scores at the three levels of the summarisation-
evaluation literature (e.g. Fabbri et al. 2021, SummEval; Deutsch et al. 2022):

- item level: one correlation over all items;
- group level ("summary level"): the correlation within each group of items (e.g. the
  summaries of one source document), averaged over the groups where it is defined (at least
  2 items and at least 2 distinct values on each side);
- system level: the mean score of each system (e.g. summariser), correlated across systems.

Each level gives Pearson r, Spearman rho and Kendall's tau-b, each an `Estimate` with a 95%
interval, and says how the interval was made (`method`). Pure numerics: arrays and group
labels in, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgeaudit.stats.agreement import (
    KENDALL_BOOT_MAX_PAIRS,
    _distinct_pairs,
    _xy,
    kendall,
    kendall_tau_b,
    pearson,
    spearman,
)
from judgeaudit.stats.intervals import bootstrap_ci
from judgeaudit.stats.types import Estimate

NAN_CI = (math.nan, math.nan)
# Above this many units the bootstrap is a percentile one: BCa's jackknife holds n resamples of
# n - 1 units at once (memory grows with n squared).
BCA_MAX_N = 3000
METRICS = ("pearson", "spearman", "kendall")


@dataclass(frozen=True)
class Correlations:
    """Pearson, Spearman and Kendall (tau-b) at one level, with how each interval was made."""

    pearson: Estimate
    spearman: Estimate
    kendall: Estimate
    n: int                        # units correlated (items, groups used, or systems)
    method: dict[str, str]        # per statistic: how its interval was made
    extra: dict[str, Any] = field(default_factory=dict)  # level-specific counts

    def as_dict(self) -> dict[str, Any]:
        return {"pearson": self.pearson.as_dict(), "spearman": self.spearman.as_dict(),
                "kendall": self.kendall.as_dict(), "n": self.n, "method": dict(self.method),
                **self.extra}


def _constant(v: np.ndarray) -> bool:
    return v.size == 0 or bool(np.all(v == v[0]))


def correlations(x: Any, y: Any, *, unit: str = "items", level: float = 0.95,
                 n_boot: int = 2000, seed: int = 0) -> Correlations:
    """Pearson r (Fisher-z interval), Spearman rho and Kendall's tau-b (BCa bootstrap over
    the units, resampling (x, y) together; percentile above BCA_MAX_N units) of aligned x and
    y. Kendall falls back to a
    Fisher-z interval (0.437/(n-4)) above KENDALL_BOOT_MAX_PAIRS distinct (x, y) pairs. A
    constant side gives nan values and no interval; so does n < 2 (Pearson's interval needs
    n >= 4, the bootstrap n >= 3)."""
    a, b = _xy(x, y)
    n = int(a.size)
    kind = "bca" if n <= BCA_MAX_N else "percentile"
    boot = (f"{'BCa' if kind == 'bca' else 'percentile'} bootstrap over {unit} ({n_boot} "
            f"resamples, seed {seed})")
    method = {"pearson": "Fisher z: atanh(r) +- z / sqrt(n - 3)", "spearman": boot,
              "kendall": boot}
    if n < 2 or _constant(a) or _constant(b):
        nan = Estimate(math.nan, NAN_CI, n)
        return Correlations(nan, nan, nan, n, method)
    p = pearson(a, b, level=level)
    if n >= 3:
        s = spearman(a, b, level=level, method="bootstrap", n_boot=n_boot, seed=seed,
                     boot=kind)  # type: ignore[arg-type]
        if _distinct_pairs(a, b)[0].size > KENDALL_BOOT_MAX_PAIRS:
            method["kendall"] = ("Fisher z with variance 0.437/(n - 4) (more than "
                                 f"{KENDALL_BOOT_MAX_PAIRS} distinct pairs)")
            k = kendall(a, b, level=level, method="fisher")
        else:
            k = kendall(a, b, level=level, method="bootstrap", n_boot=n_boot, seed=seed,
                        boot=kind)  # type: ignore[arg-type]
    else:
        s = Estimate(spearman(a, b).value, NAN_CI, n)
        k = Estimate(kendall_tau_b(a, b), NAN_CI, n)
    return Correlations(p, s, k, n, method)


def _groups(labels: Sequence[Hashable], n: int) -> dict[Hashable, list[int]]:
    if len(labels) != n:
        raise ValueError(f"correlation: {len(labels)} group labels for {n} items")
    out: dict[Hashable, list[int]] = {}
    for i, g in enumerate(labels):
        out.setdefault(g, []).append(i)
    return out


def group_correlations(x: Any, y: Any, groups: Sequence[Hashable], *, level: float = 0.95,
                       n_boot: int = 2000, seed: int = 0) -> Correlations:
    """Correlation within each group, averaged over the groups where it is defined (at
    least 2 items, x not constant and y not constant); the interval is a BCa bootstrap over
    those groups of the mean (each group's correlation computed once). Counts: `n_groups`
    (all), `n_groups_used`, `n_groups_too_small` (one item), `n_groups_x_constant` and
    `n_groups_y_constant` (a group whose two sides are both constant counts under x), and
    `n_items_used`. Leaving out groups where one side is constant flatters a judge that gives
    one score to a whole group, so those counts are reported beside the mean."""
    a, b = _xy(x, y)
    by = _groups(groups, int(a.size))
    vals: dict[str, list[float]] = {m: [] for m in METRICS}
    small = x_const = y_const = used_items = 0
    for idx in by.values():
        ga, gb = a[idx], b[idx]
        if len(idx) < 2:
            small += 1
        elif _constant(ga):
            x_const += 1
        elif _constant(gb):
            y_const += 1
        else:
            used_items += len(idx)
            vals["pearson"].append(pearson(ga, gb).value)
            vals["spearman"].append(spearman(ga, gb).value)
            vals["kendall"].append(kendall_tau_b(ga, gb))
    k = len(vals["pearson"])
    method_text = (f"mean over groups of the within-group statistic; BCa bootstrap over groups "
                   f"({n_boot} resamples, seed {seed})")
    ests = {}
    for m in METRICS:
        v = np.asarray(vals[m], dtype=float)
        if k == 0:
            ests[m] = Estimate(math.nan, NAN_CI, 0)
        elif k < 3 or _constant(v):  # equal values: every resample's mean is the same point
            ests[m] = Estimate(float(v.mean()), NAN_CI, k)
        else:
            lo, hi = bootstrap_ci(v, lambda d: d.mean(axis=-1), n_boot=n_boot, level=level,
                                  seed=seed, method="bca", vectorized=True)
            ests[m] = Estimate(float(v.mean()), (lo, hi), k)
    extra = {"n_groups": len(by), "n_groups_used": k, "n_groups_too_small": small,
             "n_groups_x_constant": x_const, "n_groups_y_constant": y_const,
             "n_items_used": used_items}
    return Correlations(ests["pearson"], ests["spearman"], ests["kendall"], k,
                        {m: method_text for m in METRICS}, extra)


def system_correlations(x: Any, y: Any, systems: Sequence[Hashable], *, level: float = 0.95,
                        n_boot: int = 2000, seed: int = 0) -> Correlations:
    """The mean x and mean y of each system, correlated across systems (`correlations` with
    systems as the units). `systems` in the extra lists each system's n and means."""
    a, b = _xy(x, y)
    by = _groups(systems, int(a.size))
    names = list(by)
    mx = np.array([a[by[s]].mean() for s in names]) if names else np.zeros(0)
    my = np.array([b[by[s]].mean() for s in names]) if names else np.zeros(0)
    c = correlations(mx, my, unit="systems", level=level, n_boot=n_boot, seed=seed)
    extra = {"n_systems": len(names), "n_items_used": int(a.size),
             "systems": [{"system": s, "n": len(by[s]), "x_mean": float(u), "y_mean": float(v)}
                         for s, u, v in zip(names, mx, my, strict=True)]}
    return Correlations(c.pearson, c.spearman, c.kendall, c.n,
                        {k: f"over per-system means; {v}" for k, v in c.method.items()},
                        extra)


__all__ = ["Correlations", "correlations", "group_correlations", "system_correlations"]
