"""Agreement between two raters (judge vs humans, judge vs judge): kappa, percent agreement,
rank and linear correlation (Pearson, Spearman, Kendall's tau-b), each with an interval.

Family conventions: two aligned sequences `a`/`b` (or `x`/`y`) with one entry per item; the
bare statistic returns a float, the `*_ci` / correlation functions an `Estimate`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy import stats

from judgeaudit.stats.intervals import SPARSE_MOVERS, _z, bootstrap_ci, clopper_pearson, wilson
from judgeaudit.stats.types import Estimate, Labels


def _codes(a: Any, b: Any, labels: Labels | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Both raters' labels as integer codes 0..k-1 over one shared category set."""
    xa, xb = np.asarray(a).ravel(), np.asarray(b).ravel()
    if xa.size != xb.size:
        raise ValueError(f"agreement: a has {xa.size} items, b has {xb.size}; they must be "
                         "aligned item by item")
    lab = np.unique(np.concatenate([xa, xb])) if labels is None else np.unique(
        np.asarray(list(labels)))
    uniq, inv = np.unique(np.concatenate([lab, xa, xb]), return_inverse=True)
    if uniq.size != lab.size:
        extra = sorted(set(uniq.tolist()) - set(lab.tolist()), key=str)
        raise ValueError(f"agreement: values {extra[:5]} are not in labels {lab.tolist()}")
    n = xa.size
    return inv[lab.size:lab.size + n], inv[lab.size + n:], int(lab.size)


def _kappa_codes(ca: np.ndarray, cb: np.ndarray, k: int) -> np.ndarray:
    """Kappa over the last axis of integer-coded ratings (batched: shape (..., n))."""
    po = (ca == cb).mean(axis=-1)
    pe = np.zeros(po.shape)
    for j in range(k):
        pe = pe + (ca == j).mean(axis=-1) * (cb == j).mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (po - pe) / (1.0 - pe)
    return np.where(pe >= 1.0 - 1e-12, np.nan, kappa)


def cohen_kappa(a: Any, b: Any, labels: Labels | None = None) -> float:
    """Cohen's (1960) kappa: agreement beyond chance, (p_o - p_e) / (1 - p_e), with p_e from
    each rater's own label frequencies. `labels` fixes the category set (values outside it
    are an error); by default it is the labels seen. nan when p_e = 1 (both raters always use
    one and the same label: chance agreement is total and kappa is undefined)."""
    ca, cb, k = _codes(a, b, labels)
    if ca.size == 0:
        return math.nan
    return float(_kappa_codes(ca, cb, k))


def kappa_ci(a: Any, b: Any, labels: Labels | None = None, n_boot: int = 2000,
             level: float = 0.95, seed: int = 0,
             method: Literal["percentile", "bca"] = "percentile") -> Estimate:
    """Cohen's kappa with a bootstrap interval over items (pairs resampled together); the
    Estimate's method is "bootstrap-percentile" or "bootstrap-bca".

    Where the raters disagree on fewer than SPARSE_MOVERS items the bootstrap is far too
    narrow (none disagree: [1, 1] at any n; with 90-98% agreement it covered the true kappa
    in 17-65% of runs at n = 10 and 78-93% at n = 80, benchmarks/results/kappa_coverage.json),
    so the interval is then the observed agreement's Clopper-Pearson interval carried through
    kappa = (p_o - p_e) / (1 - p_e) at the observed p_e (method "clopper-pearson-agreement";
    coverage 93-99.5% in every cell of that benchmark). Where one rater gave one label
    throughout, kappa is 0 by construction and gets no interval."""
    ca, cb, k = _codes(a, b, labels)
    codes = np.stack([ca, cb], axis=1)
    value = float(_kappa_codes(ca, cb, k)) if ca.size else math.nan
    disagree = int((ca != cb).sum())
    if ca.size > 1 and disagree and (np.ptp(ca) == 0 or np.ptp(cb) == 0):
        # one rater gave one label throughout: kappa is 0 in every resample, so the bootstrap
        # gave [0, 0] ("0.000 [0.000, 0.000]" at n = 20); there is no interval to give
        return Estimate(value, (math.nan, math.nan), int(ca.size))
    if ca.size and disagree < SPARSE_MOVERS and not math.isnan(value):
        pe = sum(float((ca == j).mean() * (cb == j).mean()) for j in range(k))
        po_lo, po_hi = clopper_pearson(int(ca.size) - disagree, int(ca.size), level)
        lo, hi = ((x - pe) / (1.0 - pe) for x in (po_lo, po_hi))
        return Estimate(value, (max(-1.0, lo), min(1.0, hi)), int(ca.size),
                        method="clopper-pearson-agreement")
    lo, hi = bootstrap_ci(codes, lambda x: _kappa_codes(x[..., 0], x[..., 1], k),
                          n_boot=n_boot, level=level, seed=seed, method=method,
                          vectorized=True)
    return Estimate(value, (lo, hi), int(ca.size), method=f"bootstrap-{method}")


def percent_agreement(a: Any, b: Any, level: float = 0.95) -> Estimate:
    """Share of items on which both raters give the same label (a proportion in [0, 1],
    despite the name), with a Wilson interval. Not chance-corrected: see `cohen_kappa`."""
    xa, xb = np.asarray(a).ravel(), np.asarray(b).ravel()
    if xa.size != xb.size:
        raise ValueError(f"percent_agreement: a has {xa.size} items, b has {xb.size}")
    n = int(xa.size)
    same = int((xa == xb).sum())
    lo, hi = wilson(same, n, level)
    return Estimate(same / n if n else math.nan, (lo, hi), n, method="wilson")


# --- correlation -----------------------------------------------------------------------------

def _xy(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if a.size != b.size:
        raise ValueError(f"correlation: x has {a.size} items, y has {b.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("correlation: x and y must be finite (drop missing items first)")
    return a, b


def _r(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r over the last axis (batched); nan where either side is constant."""
    da = a - a.mean(axis=-1, keepdims=True)
    db = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((da * da).sum(axis=-1) * (db * db).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (da * db).sum(axis=-1) / den
    return np.where(den > 0, np.clip(r, -1.0, 1.0), np.nan)


# Below this many items a bootstrap of a rank correlation has a handful of distinct resamples
# and its interval is nearly a point (3 items: Spearman 0.866 [0.866, 1.0]).
MIN_BOOT_ITEMS = 5


def _too_few(value: float, n: int) -> Estimate:
    return Estimate(value, (math.nan, math.nan), n,
                    method=f"none: {n} items, fewer than {MIN_BOOT_ITEMS} for a bootstrap")


def _perfect(value: float, n: int) -> Estimate:
    """A correlation of exactly +-1 in the sample: every resample, and Fisher's z, give the
    point [r, r], which reads as certainty; so no interval, with the reason."""
    return Estimate(value, (math.nan, math.nan), n,
                    method="none: a perfect correlation in the sample (every resample gives "
                           "the same value, so any interval would be a point)")


def _correlation(a: np.ndarray, b: np.ndarray, rank: bool, level: float,
                 method: str, n_boot: int, seed: int, boot: str = "bca") -> Estimate:
    """The Estimate's method names the interval: "fisher-z" (also when n is too small for
    one, the interval is then nan) or "bootstrap-bca" / "bootstrap-percentile"."""
    n = int(a.size)
    tr = (lambda v: stats.rankdata(v, axis=-1)) if rank else (lambda v: v)
    value = float(_r(tr(a), tr(b))) if n >= 2 else math.nan
    if abs(value) == 1.0:  # every resample and Fisher's z give [r, r]: no interval, not that
        return _perfect(value, n)
    if method == "fisher":
        # Fisher z: atanh(r) ~ N(atanh(rho), se^2); se = 1/sqrt(n-3) for Pearson,
        # sqrt(1.06/(n-3)) for Spearman (Fieller, Hartley & Pearson 1957).
        if n < 4 or not math.isfinite(value):
            return Estimate(value, (math.nan, math.nan), n, method="fisher-z")
        se = math.sqrt((1.06 if rank else 1.0) / (n - 3))
        z = _z(level)
        with np.errstate(divide="ignore"):
            zr = float(np.arctanh(value))
        return Estimate(value, (math.tanh(zr - z * se), math.tanh(zr + z * se)), n,
                        method="fisher-z")
    if method == "bootstrap":
        if n < MIN_BOOT_ITEMS:
            return _too_few(value, n)
        xy = np.stack([a, b], axis=1)
        lo, hi = bootstrap_ci(xy, lambda d: _r(tr(d[..., 0]), tr(d[..., 1])), n_boot=n_boot,
                              level=level, seed=seed, method=boot,  # type: ignore[arg-type]
                              vectorized=True)
        return Estimate(value, (lo, hi), n, method=f"bootstrap-{boot}")
    raise ValueError(f"correlation: method must be 'fisher' or 'bootstrap', got {method!r}")


def pearson(x: Any, y: Any, level: float = 0.95,
            method: Literal["fisher", "bootstrap"] = "fisher", n_boot: int = 2000,
            seed: int = 0) -> Estimate:
    """Pearson r with a Fisher-z interval (or a BCa bootstrap over items). A constant side
    gives nan; the Fisher interval needs n >= 4."""
    a, b = _xy(x, y)
    return _correlation(a, b, False, level, method, n_boot, seed)


def spearman(x: Any, y: Any, level: float = 0.95,
             method: Literal["fisher", "bootstrap"] = "fisher", n_boot: int = 2000,
             seed: int = 0, boot: Literal["bca", "percentile"] = "bca") -> Estimate:
    """Spearman rho (Pearson r of average ranks, so ties are handled) with a Fisher-z
    interval using the 1.06/(n-3) variance of Fieller, Hartley & Pearson (1957), or a BCa
    bootstrap over items (`boot="percentile"` skips BCa's jackknife, whose memory grows with
    n squared)."""
    a, b = _xy(x, y)
    return _correlation(a, b, True, level, method, n_boot, seed, boot)


# Kendall's tau-b as quadratic forms in per-pair weights. Items with the same (x, y) are
# interchangeable, so a sample is a weight (count) on each distinct pair; a bootstrap resample
# only changes the weights, and judge scores take few values, so there are few distinct pairs.
_BLOCK = 4_000_000  # floats per block of the sign matrix / the batched product
KENDALL_BOOT_MAX_PAIRS = 4000  # above this many distinct (x, y) pairs: Fisher-z interval


def _tau_b_weighted(px: np.ndarray, py: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Tau-b of samples given as weights w[b, k] on the distinct pairs (px[k], py[k]).

    With s_kl = sign(px_k - px_l) * sign(py_k - py_l): w'Sw = 2(C - D) (a pair of copies of
    one point, or the point with itself, adds 0), and the ordered pairs not tied in x number
    (sum w)^2 - sum over x-values v of (weight at v)^2 = 2(n0 - n1); likewise y. So tau-b =
    w'Sw / sqrt(that_x * that_y): Kendall's (1945) tie-corrected tau, as scipy's default."""
    w = np.asarray(w, dtype=float)
    m = px.size
    num = np.zeros(w.shape[0])
    step = max(1, min(_BLOCK // max(m, 1), _BLOCK // max(w.shape[0], 1)))
    for s in range(0, m, step):
        e = min(m, s + step)
        sign = (np.sign(px[:, None] - px[None, s:e]) * np.sign(py[:, None] - py[None, s:e]))
        num += ((w @ sign) * w[:, s:e]).sum(axis=-1)
    tot = w.sum(axis=-1)

    def untied(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="stable")
        sv = v[order]
        starts = np.flatnonzero(np.r_[True, sv[1:] != sv[:-1]])
        by = np.add.reduceat(w[:, order], starts, axis=-1)  # weight at each distinct value
        return tot * tot - (by * by).sum(axis=-1)

    den = np.sqrt(untied(px) * untied(py))
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = num / den
    return np.where(den > 0, np.clip(tau, -1.0, 1.0), np.nan)


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (x, y) pairs and each item's pair index."""
    pairs, codes = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
    return pairs[:, 0], pairs[:, 1], codes.ravel()


def _counts(codes: np.ndarray, m: int) -> np.ndarray:
    """Rows of pair indices (..., n) -> weights (rows, m)."""
    rows = codes.reshape(-1, codes.shape[-1])
    r = rows.shape[0]
    flat = (np.arange(r)[:, None] * m + rows).ravel()
    return np.bincount(flat, minlength=r * m).reshape(r, m)


def kendall_tau_b(x: Any, y: Any) -> float:
    """Kendall's tau-b (Kendall 1945): (C - D) / sqrt((n0 - n1)(n0 - n2)), concordant minus
    discordant pairs over the pairs not tied in x and not tied in y (the tie-corrected form
    that scipy.stats.kendalltau returns by default). nan when either side is constant or
    n < 2. Time grows with the square of the number of distinct (x, y) pairs."""
    a, b = _xy(x, y)
    if a.size < 2:
        return math.nan
    px, py, codes = _distinct_pairs(a, b)
    return float(_tau_b_weighted(px, py, _counts(codes, px.size))[0])


def kendall(x: Any, y: Any, level: float = 0.95,
            method: Literal["bootstrap", "fisher"] = "bootstrap", n_boot: int = 2000,
            seed: int = 0, boot: Literal["bca", "percentile"] = "bca") -> Estimate:
    """Kendall's tau-b with a BCa (or `boot="percentile"`) bootstrap interval over items
    (pairs resampled together),
    or a Fisher-z interval with the 0.437/(n-4) variance of Fieller, Hartley & Pearson
    (1957) (needs n >= 5). A constant side gives nan. The bootstrap costs n_boot times the
    square of the number of distinct (x, y) pairs: `correlations` switches to Fisher z above
    KENDALL_BOOT_MAX_PAIRS of them. The Estimate's method: "fisher-z", "bootstrap-bca" or
    "bootstrap-percentile"."""
    a, b = _xy(x, y)
    n = int(a.size)
    if n < 2:
        return Estimate(math.nan, (math.nan, math.nan), n)
    px, py, codes = _distinct_pairs(a, b)
    m = px.size
    value = float(_tau_b_weighted(px, py, _counts(codes, m))[0])
    if abs(value) == 1.0:
        return _perfect(value, n)
    if method == "fisher":
        if n < 5 or not math.isfinite(value):
            return Estimate(value, (math.nan, math.nan), n, method="fisher-z")
        se = math.sqrt(0.437 / (n - 4))
        z = _z(level)
        with np.errstate(divide="ignore"):
            zr = float(np.arctanh(value))
        return Estimate(value, (math.tanh(zr - z * se), math.tanh(zr + z * se)), n,
                        method="fisher-z")
    if method == "bootstrap":
        if n < MIN_BOOT_ITEMS:
            return _too_few(value, n)
        lo, hi = bootstrap_ci(codes, lambda c: _tau_b_weighted(px, py, _counts(c, m)),
                              n_boot=n_boot, level=level, seed=seed, method=boot,
                              vectorized=True)
        return Estimate(value, (lo, hi), n, method=f"bootstrap-{boot}")
    raise ValueError(f"kendall: method must be 'bootstrap' or 'fisher', got {method!r}")


def fleiss_kappa(ratings: Any, labels: Labels | None = None) -> float:
    """Fleiss' kappa for m >= 2 raters on n items. `ratings` is (n_items, n_raters) with one
    category per cell. Chance agreement from the pooled category shares (Fleiss 1971)."""
    r = _fleiss_ratings(ratings, labels)
    if r.shape[0] == 0:
        return math.nan
    return float(_fleiss_batch(r, _fleiss_cats(r, labels)))


def _fleiss_ratings(ratings: Any, labels: Labels | None) -> np.ndarray:
    r = np.asarray(ratings)
    if r.ndim != 2 or r.shape[1] < 2:
        raise ValueError("ratings must be (n_items, n_raters) with at least 2 raters")
    if labels is not None and r.size:
        unknown = sorted(set(r.ravel().tolist()) - set(labels), key=str)
        if unknown:  # they would count as no category and give a wrong kappa
            raise ValueError(f"fleiss_kappa: ratings {unknown} are not among labels "
                             f"{list(labels)}")
    return r


def _fleiss_cats(r: np.ndarray, labels: Labels | None) -> list[Any]:
    return list(labels) if labels is not None else sorted(set(r.ravel().tolist()))


def _fleiss_batch(r: np.ndarray, cats: list[Any]) -> np.ndarray:
    """Fleiss' kappa over the last two axes (..., n_items, n_raters): NaN where chance
    agreement is 1 (one category only)."""
    counts = np.stack([(r == c).sum(axis=-1) for c in cats], axis=-1).astype(float)
    n, m = r.shape[-2], r.shape[-1]
    po = ((counts * (counts - 1)).sum(axis=-1) / (m * (m - 1))).mean(axis=-1)
    pe = ((counts.sum(axis=-2) / (n * m)) ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1.0, (po - pe) / (1.0 - pe), np.nan)


# Below this many items on which the raters do not all agree, a bootstrap of Fleiss' kappa
# is far too narrow (at none it is [1, 1]), as for Cohen's (`kappa_ci`).
FLEISS_MIN_DISAGREEMENTS = 5


def fleiss_kappa_ci(ratings: Any, labels: Labels | None = None, level: float = 0.95,
                    n_boot: int = 2000, seed: int = 0) -> Estimate:
    """Fleiss' kappa with a percentile bootstrap interval over items. Where fewer than
    FLEISS_MIN_DISAGREEMENTS items have any disagreement the interval is left out (NaN, its
    method says why) rather than shown far too narrow."""
    r = _fleiss_ratings(ratings, labels)
    n = int(r.shape[0])
    value = fleiss_kappa(r, labels) if n else math.nan
    split = int(sum(len(set(row)) > 1 for row in r.tolist()))
    if n < 2 or split < FLEISS_MIN_DISAGREEMENTS:
        return Estimate(value, (math.nan, math.nan), n,
                        method=f"none: {split} item(s) with a disagreement, fewer than "
                               f"{FLEISS_MIN_DISAGREEMENTS} (a bootstrap would be too narrow)")
    cats = _fleiss_cats(r, labels)
    lo, hi = bootstrap_ci(r, lambda d: _fleiss_batch(d, cats), n_boot=n_boot, level=level,
                          seed=seed, method="percentile", vectorized=True)
    return Estimate(value, (lo, hi), n, method="bootstrap-percentile")
