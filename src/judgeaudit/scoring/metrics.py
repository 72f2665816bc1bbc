"""Scoring-bias metrics on aligned per-item scores (numpy in, Estimate dicts out).

Stability against the baseline: flip rate FP (share of items whose score changed; Wilson
interval, which unlike a percentile bootstrap does not collapse to [0, 0] when nothing
flipped), mean absolute deviation MAD and mean signed shift (each end the farther of Student's
t interval's and the studentized bootstrap's, `stats.intervals.score_shift_estimate`; exact,
`stats.movers_ci` over the scale's span, where fewer than 5 items are off the common
difference). The audit's score interval of a bounded
mean took its variance over the scale's span, +-4, where the differences stay within +-2: at
n = 20 it was 1.7x as wide and covered 100% (benchmarks/results/scoring_shift_interval.json).
Accuracy against gold: Spearman and Pearson (BCa bootstrap over items), and a paired
bootstrap of "perturbed minus baseline" correlation on the items valid in both.
Tendency: counts per score. Anchoring: the reference-pull slope.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as sps

from judgeaudit.stats import (
    bootstrap_ci,
    paired_bootstrap_diff,
    paired_estimate,
    pearson,
    rate,
    spearman,
)
from judgeaudit.stats.intervals import score_shift_estimate
from judgeaudit.stats.types import Estimate

N_BOOT = 2000


def _est(value: float, ci: tuple[float, float], n: int) -> dict[str, Any]:
    """A percentile-bootstrap estimate (every caller's interval is bootstrap_ci's default)."""
    return Estimate(value, ci, n, method="bootstrap-percentile").as_dict()


def _none(n: int = 0) -> dict[str, Any]:
    """No estimate (too few items, or undefined): value and interval null, no method."""
    return Estimate(math.nan, (math.nan, math.nan), n).as_dict()


def _pairs(a: Sequence[float | None], b: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """The items where both sides have a value, as two float arrays."""
    keep = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if not keep:
        return np.zeros(0), np.zeros(0)
    arr = np.asarray(keep, dtype=float)
    return arr[:, 0], arr[:, 1]


def flip_rate(a: Sequence[float | None], b: Sequence[float | None]) -> dict[str, Any]:
    x, y = _pairs(a, b)
    if x.size == 0:
        return _none()
    return rate(int((x != y).sum()), int(x.size)).as_dict()


def _mean_boot(d: np.ndarray, seed: int, n_boot: int = N_BOOT,
               span: float | None = None, sizes: bool = False) -> dict[str, Any]:
    """mean(d) with its 95% interval. With `span` (every d is a difference of two integer
    scores, in [-span, span]): `stats.intervals.score_shift_estimate`, exact where fewer than
    5 items are off the common value (so never [0, 0] for "nothing moved"), else the farther
    end of Student's t and the studentized bootstrap. One item: no interval.
    Without it (abs_dev_diff), `stats.paired_estimate`'s percentile bootstrap. `sizes`: every
    d is in [0, span] (MAD), so the interval starts at 0 at least."""
    if d.size == 0:
        return _none()
    est = (score_shift_estimate(d, span, seed=seed, n_boot=n_boot) if span is not None
           else paired_estimate(d, seed=seed, n_boot=n_boot))
    lo, hi = est.ci95
    return Estimate(est.value, (max(0.0, lo) if sizes and lo == lo else lo, hi), est.n,
                    method=est.method).as_dict()


def mad(a: Sequence[float | None], b: Sequence[float | None], seed: int = 0,
        n_boot: int = N_BOOT, span: float | None = None) -> dict[str, Any]:
    """Mean |a - b| over items valid in both, with its interval (`_mean_boot`; `span`: the
    largest |a - b| the scale allows)."""
    x, y = _pairs(a, b)
    return _mean_boot(np.abs(x - y), seed, n_boot, span, sizes=True)


def shift(a: Sequence[float | None], b: Sequence[float | None], seed: int = 0,
          n_boot: int = N_BOOT, span: float | None = None) -> dict[str, Any]:
    """Mean (a - b): the direction a perturbation moves scores (`span` as in `mad`)."""
    x, y = _pairs(a, b)
    return _mean_boot(x - y, seed, n_boot, span)


def correlation(scores: Sequence[float | None], gold: Sequence[float | None], kind: str,
                seed: int = 0, n_boot: int = N_BOOT) -> dict[str, Any]:
    """Spearman or Pearson with gold (BCa bootstrap interval); null when undefined."""
    x, y = _pairs(scores, gold)
    if x.size < 4 or np.all(x == x[0]) or np.all(y == y[0]):
        return _none(int(x.size))
    fn = spearman if kind == "spearman" else pearson
    return fn(x, y, method="bootstrap", n_boot=n_boot, seed=seed).as_dict()


def _r_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    da = a - a.mean(axis=-1, keepdims=True)
    db = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((da * da).sum(axis=-1) * (db * db).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (da * db).sum(axis=-1) / den
    return np.where(den > 0, r, np.nan)


def _corr_stat(kind: str):
    def stat(d: np.ndarray) -> np.ndarray:
        x, y = d[..., 0], d[..., 1]
        if kind == "spearman":
            x, y = sps.rankdata(x, axis=-1), sps.rankdata(y, axis=-1)
        return _r_batch(x, y)
    return stat


def correlation_diff(perturbed: Sequence[float | None], baseline: Sequence[float | None],
                     gold: Sequence[float | None], kind: str = "spearman",
                     seed: int = 0, n_boot: int = N_BOOT) -> dict[str, Any]:
    """corr(perturbed, gold) - corr(baseline, gold) on the items valid in all three, with a
    paired bootstrap (the same resampled items for both correlations)."""
    rows = [(p, b, g) for p, b, g in zip(perturbed, baseline, gold, strict=True)
            if p is not None and b is not None and g is not None]
    if len(rows) < 4:
        return _none(len(rows))
    arr = np.asarray(rows, dtype=float)
    a = np.stack([arr[:, 0], arr[:, 2]], axis=1)
    b = np.stack([arr[:, 1], arr[:, 2]], axis=1)
    if np.all(arr[:, 2] == arr[0, 2]):
        return _none(len(rows))
    est = paired_bootstrap_diff(a, b, _corr_stat(kind), n_boot=n_boot, seed=seed,
                                vectorized=True)
    return est.as_dict()


def distribution(scores: Sequence[float | None], k: int = 5) -> dict[str, int]:
    """Counts per score "1".."k" and "invalid"."""
    out = {str(s): 0 for s in range(1, k + 1)}
    out["invalid"] = 0
    for s in scores:
        if s is None:
            out["invalid"] += 1
        else:
            out[str(int(round(s)))] = out.get(str(int(round(s))), 0) + 1
    return out


def reference_pull(by_ref: dict[int, Sequence[float | None]], seed: int = 0,
                   n_boot: int = N_BOOT) -> dict[str, Any]:
    """Within-item slope of the score on the reference's labelled score k, pooled over items
    (each item centred on its own mean over the k it was scored with); bootstrap over items.

    A judge that moves a fraction lambda of the way toward the reference's score gives
    s_k = (1 - lambda) * s + lambda * k, a slope of lambda on k; one that ignores the label
    gives 0. Comparing every s_k with the same noisy baseline score instead would share that
    score's noise between both sides of the regression and bias the slope upward."""
    ks = sorted(by_ref)
    if len(ks) < 2:
        return _none()
    n = len(next(iter(by_ref.values())))
    y = np.full((n, len(ks)), np.nan)
    for j, k in enumerate(ks):
        for i, v in enumerate(by_ref[k]):
            if v is not None:
                y[i, j] = v
    x = np.where(np.isnan(y), np.nan, np.asarray(ks, dtype=float)[None, :])
    used = (~np.isnan(y)).sum(axis=1) >= 2
    x, y = x[used], y[used]
    if x.shape[0] < 2:
        return _none(int(x.shape[0]))
    xc = np.nan_to_num(x - np.nanmean(x, axis=1, keepdims=True))
    yc = np.nan_to_num(y - np.nanmean(y, axis=1, keepdims=True))
    data = np.stack([xc, yc], axis=2)  # (items, k, 2)

    def slope(d: np.ndarray) -> np.ndarray:
        a, b = d[..., 0], d[..., 1]
        sxx = (a * a).sum(axis=(-1, -2))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(sxx > 0, (a * b).sum(axis=(-1, -2)) / sxx, np.nan)

    value = float(slope(data[None])[0])
    if not math.isfinite(value):
        return _none(int(x.shape[0]))
    lo, hi = bootstrap_ci(data, slope, n_boot=n_boot, seed=seed, vectorized=True)
    return _est(value, (lo, hi), int(x.shape[0]))


def aggregate(rows: Sequence[Sequence[float | None]], how: str) -> list[float | None]:
    """Per item, the mean or the majority (most common score; ties -> the median of the tied
    scores, rounded down) over several scorings; None when no scoring is valid."""
    out: list[float | None] = []
    for vals in zip(*rows, strict=True):
        v = [x for x in vals if x is not None]
        if not v:
            out.append(None)
        elif how == "mean":
            out.append(float(np.mean(v)))
        else:
            uniq, cnt = np.unique(v, return_counts=True)
            top = uniq[cnt == cnt.max()]
            out.append(float(top[(len(top) - 1) // 2]))
    return out


def abs_dev_diff(a: Sequence[float | None], b: Sequence[float | None],
                 ref: Sequence[float | None], seed: int = 0,
                 n_boot: int = N_BOOT) -> dict[str, Any]:
    """mean |a - ref| - mean |b - ref| on items valid in all three (paired bootstrap)."""
    rows = [(x, y, r) for x, y, r in zip(a, b, ref, strict=True)
            if x is not None and y is not None and r is not None]
    if len(rows) < 2:
        return _none(len(rows))
    arr = np.asarray(rows, dtype=float)
    d = np.abs(arr[:, 0] - arr[:, 2]) - np.abs(arr[:, 1] - arr[:, 2])
    return _mean_boot(d, seed, n_boot)


__all__ = ["abs_dev_diff", "aggregate", "correlation", "correlation_diff", "distribution",
           "flip_rate", "mad", "reference_pull", "shift"]
