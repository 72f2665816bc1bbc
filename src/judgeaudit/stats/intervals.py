"""Confidence intervals: Wilson for rates, the score interval for bounded means (Wilson's
generalised), bootstrap over items, t for means.

Family conventions: `level` is the two-sided coverage (0.95), `seed` makes every random
interval reproducible, `*_ci` functions return an `Interval` (lo, hi) and the functions
named after the quantity (`rate`, `paired_bootstrap_diff`) return an `Estimate`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
from scipy import optimize, special, stats

from judgeaudit.stats.types import Estimate, Interval, Items, Statistic

BootMethod = Literal["percentile", "bca"]


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return float(special.ndtri(0.5 + level / 2.0))


def wilson(successes: Any, n: Any, level: float = 0.95) -> Any:
    """Wilson score interval for a proportion (Wilson 1927; Agresti & Coull 1998).

    Better than the Wald interval at small n or rates near 0/1. `successes` may be fractional
    (a tie counts half a success). n = 0 gives (0.0, 1.0): no data, no information, and an
    interval that can never be read as "no bias found". Scalars give a pair of floats;
    arrays broadcast and give a pair of arrays (used by the coverage simulations).

        center = (p + z^2/2n) / (1 + z^2/n)
        half   = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2)
    """
    z = _z(level)
    s = np.asarray(successes, dtype=float)
    m = np.asarray(n, dtype=float)
    if (np.any(m < 0) or np.any(s < 0) or np.any(s > m) or not np.all(np.isfinite(s))
            or not np.all(np.isfinite(m))):
        raise ValueError(f"wilson: need 0 <= successes <= n, got successes={successes!r}, "
                         f"n={n!r}")
    empty = m == 0
    m_safe = np.where(empty, 1.0, m)
    p = s / m_safe
    denom = 1.0 + z * z / m_safe
    center = (p + z * z / (2.0 * m_safe)) / denom
    half = z / denom * np.sqrt(p * (1.0 - p) / m_safe + z * z / (4.0 * m_safe * m_safe))
    # exact at the ends: 0 successes give lo = 0 and n give hi = 1 (rounding left 8.7e-19)
    lo = np.where(empty | (s == 0), 0.0, np.clip(center - half, 0.0, 1.0))
    hi = np.where(empty | (s == m), 1.0, np.clip(center + half, 0.0, 1.0))
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


# Below this many items that moved (d != 0), a mean of bounded per-item differences takes the
# exact interval of `movers_ci`: the percentile bootstrap of so few moves is too narrow (none:
# [0, 0]), and "no effect" read off it is wrong far more often than 5% at the edge of the
# range it must lie in (benchmarks/not_biased_edge.py).
SPARSE_MOVERS = 5


def over_seeds(mean: float, se: float | None, n: int, level: float = 0.95,
               bounds: tuple[float, float] = (0.0, 1.0)) -> Interval | None:
    """The t interval of a mean over n seeds (mean +- t(n-1) se), clipped to `bounds` (a
    recall); None where there is none: one seed, or no spread (every seed agreed). The normal
    quantile made the interval of 4 seeds about 40% too narrow."""
    if n < 2 or se is None or not se > 0 or math.isnan(se):
        return None
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * se
    return max(bounds[0], mean - half), min(bounds[1], mean + half)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> Interval:
    """The exact two-sided interval of a share k / n (equal tails)."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"clopper_pearson: need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    tail = (1.0 - level) / 2.0
    lo = 0.0 if k == 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1.0 - tail, k + 1, n - k))
    return lo, hi


def movers_ci(d: Items, span: float, level: float = 0.95, center: float = 0.0) -> Interval:
    """An exact interval for the mean of paired differences in [-span, span], for when few
    items moved: there the percentile bootstrap is too narrow (no item moved: [0, 0] at any
    n). The mean is at most span x P(d > 0) and at least -span x P(d < 0); each share gets its
    one-sided Clopper-Pearson upper limit at (1 + level) / 2, so the pair covers at `level`
    (a union bound) whatever the sizes of the moves. `center` c: the same about a common
    value c other than 0 (few items off it): the mean is at most c + (span - c) P(d > c) and
    at least c - (span + c) P(d < c)."""
    x = np.asarray(d, dtype=float)
    n = int(x.size)
    if n == 0 or not span > 0 or abs(center) > span:
        raise ValueError(f"movers_ci: need items, span > 0 and |center| <= span, got n={n}, "
                         f"span={span!r}, center={center!r}")
    one_sided = 0.5 + level / 2.0

    def upper(k: int) -> float:
        return 1.0 if k >= n else float(stats.beta.ppf(one_sided, k + 1, n - k))

    c = float(center)
    return (c - (span + c) * upper(int((x < c).sum())),
            c + (span - c) * upper(int((x > c).sum())))


def constant_ci(c: float, n: int, span: float, level: float = 0.95) -> Interval:
    """An exact interval for the mean of differences in [-span, span] when all n observed
    equal c: the share q of items at c is at least the one-sided Clopper-Pearson bound
    p = (1 - level)^(1/n) (n of n), so the mean, c q + (1 - q) t with t in [-span, span], lies
    in [c p - span (1 - p), c p + span (1 - p)] (clipped to [-span, span]). The bootstrap of
    equal values is the point [c, c]: ten items all preferring the first-shown response gave
    +0.50 [+0.50, +0.50]."""
    if n < 1 or not span > 0 or abs(c) > span:
        raise ValueError(f"constant_ci: need n >= 1, span > 0 and |c| <= span, got n={n}, "
                         f"c={c!r}, span={span!r}")
    p = (1.0 - level) ** (1.0 / n)
    return max(-span, c * p - span * (1 - p)), min(span, c * p + span * (1 - p))


def _tilted(x: np.ndarray, w: np.ndarray, mu0: float, span: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """The distribution of largest likelihood among those on the observed values `x` (counts
    `w`) and the ends -span, span whose mean is mu0 (inside (-span, span)): support and
    probabilities. The observed values are weighted w / (n (1 + lam (x - mu0))) (the
    empirical-likelihood tilt); where no such lam keeps every weight of [-span, span]
    positive, lam stops at the bound and the remaining mass sits on the unobserved end."""
    n = float(w.sum())
    c = x - mu0
    mean = float((w * x).sum()) / n
    if mean == mu0:
        return x, w / n

    def g(lam: float) -> float:
        return float((w * c / (1.0 + lam * c)).sum())

    if mu0 > mean:  # lam < 0; the top end may take mass
        bound, end, top = -1.0 / (span - mu0), span, bool(x.max() >= span)
    else:
        bound, end, top = 1.0 / (span + mu0), -span, bool(x.min() <= -span)
    if not top and (g(bound) <= 0.0 if mu0 > mean else g(bound) >= 0.0):
        p = w / (n * (1.0 + bound * c))
        return np.append(x, end), np.append(p, max(0.0, 1.0 - float(p.sum())))
    inner = bound * (1.0 - 1e-13)
    # g is decreasing in lam, 0 at the root, with opposite signs at 0 and near the bound
    if (g(inner) > 0.0) == (mu0 > mean):
        lam = optimize.brentq(g, min(0.0, inner), max(0.0, inner), xtol=1e-15, rtol=1e-13)
    else:  # the root is closer to the bound than floats tell apart
        lam = inner
    return x, w / (n * (1.0 + lam * c))


def _score_upper(x: np.ndarray, w: np.ndarray, span: float, z: float) -> float:
    """The largest mu0 the score test does not reject above the mean: (mean - mu0) /
    sqrt(V(mu0) / n) = -z, V the variance of the tilted distribution (`_tilted`)."""
    n = float(w.sum())
    mean = float((w * x).sum()) / n
    if mean >= span:
        return span

    def f(mu0: float) -> float:
        if mu0 == mean:
            return z
        sx, p = _tilted(x, w, mu0, span)
        v = float((p * (sx - mu0) ** 2).sum())
        return (mean - mu0) / math.sqrt(v / n) + z if v > 0 else -math.inf

    top = span - 1e-12 * span
    if f(top) >= 0.0:
        return span
    start = max(mean, -span + 1e-9 * span)  # every item at -span: just inside the range
    return float(optimize.brentq(f, start, top, xtol=1e-12 * span, rtol=1e-12))


# The score interval's cutoff, widened by 1% (1.98 at 95%): Wilson's upper end does not cover
# exactly, and at 1.96 "not biased" at the edge came out in up to 2.60% of runs (moves one way,
# n = 113-192). At 1.98 every cell of benchmarks/not_biased_power.py's exact grid (n = 10-200,
# spans 1/2 to 2, moves one way and both ways) is at most 2.5%, with the same power at
# n = 80 and 120 for the sim judge.
SCORE_WIDEN = 1.98 / 1.959963984540054


def bounded_mean_ci(d: Items, span: float, level: float = 0.95) -> Interval:
    """The score interval of a mean of values in [-span, span] (Wilson's, generalised): the
    mu0 a score test does not reject, the test's variance taken from the distribution of
    largest likelihood with mean mu0 over the observed values and both ends of the range
    (`_tilted`). For moves of one size one way it is Wilson's interval of the share that
    moved, scaled by span.

    Why not the percentile bootstrap: a mean of few, one-sided moves is skewed, and the
    bootstrap's (like the t interval's) upper end is too short where fewer items than expected
    moved: at an effect on the edge of the no-bias range (position, 0.05), it said "not
    biased" in 4.3-5.1% of runs at n = 80-200, against 2.5% nominal. The variance at mu0,
    not at the sample, puts that end where a test of mu0 would: at most 2.5% below the truth
    on every scenario of benchmarks/not_biased_edge.py (n = 10-200, moves one way and both
    ways; exact on three-point differences) with the cutoff widened by `SCORE_WIDEN`."""
    x, counts = np.unique(np.asarray(d, dtype=float), return_counts=True)
    if x.size == 0 or not span > 0:
        raise ValueError(f"bounded_mean_ci: need items and span > 0, got n={x.size}, "
                         f"span={span!r}")
    z = _z(level) * SCORE_WIDEN
    span = max(float(span), float(np.abs(x).max()))  # a bound a rounding error exceeded
    w = counts.astype(float)
    return -_score_upper(-x[::-1], w[::-1], span, z), _score_upper(x, w, span, z)


def paired_estimate(d: Items, *, seed: int = 0, span: float | None = None,
                    n_boot: int = 2000) -> Estimate:
    """mean(d) of paired differences with a 95% interval. With `span` (every d lies in
    [-span, span]): fewer than SPARSE_MOVERS items that moved take the exact interval of
    `movers_ci`, every item moved alike that of `constant_ci`, and the rest the score
    interval of `bounded_mean_ci` (method "score-bounded"). Without it (results that record
    no bound), the percentile bootstrap over items, whose upper end is too short on skewed
    moves (see `bounded_mean_ci`). One item has no interval (the effect is shown, its verdict
    underpowered) and no method; no item: no value either. The audit's effects, compare's
    changes and scoring-bias's shifts all take it."""
    arr = np.asarray(d, dtype=float)
    n = int(arr.size)
    if not np.all(np.isfinite(arr)):  # one NaN made the value NaN beside a finite interval
        raise ValueError("paired_estimate: d holds NaN or inf; leave items without a value "
                         "out (and count them) before estimating")
    if n == 0:
        return Estimate(math.nan, (math.nan, math.nan), 0)
    if n == 1:
        return Estimate(float(arr.mean()), (math.nan, math.nan), 1)
    if span is not None and int((arr != 0).sum()) < SPARSE_MOVERS:
        return Estimate(float(arr.mean()), movers_ci(arr, span), n,
                        method="clopper-pearson-movers")
    if span is not None and float(np.ptp(arr)) == 0.0:  # all alike: the bootstrap's a point
        return Estimate(float(arr.mean()), constant_ci(float(arr[0]), n, span), n,
                        method="clopper-pearson-constant")
    if span is not None:
        return Estimate(float(arr.mean()), bounded_mean_ci(arr, span), n,
                        method="score-bounded")
    lo, hi = bootstrap_ci(arr, lambda x: x.mean(axis=1), n_boot=n_boot, seed=seed,
                          vectorized=True)
    return Estimate(float(arr.mean()), (lo, hi), n, method="bootstrap-percentile")


def _boot_t_ends(x: np.ndarray, level: float, n_boot: int, seed: int) -> Interval:
    """The studentized (bootstrap-t) interval of mean(x): the quantiles of
    (mean* - mean) / se* over resamples, read off around the sample's own se. A resample with
    no spread has se* = 0 and counts as +-inf (0 where its mean is the sample's)."""
    n, m, se = x.size, float(x.mean()), float(x.std(ddof=1)) / math.sqrt(x.size)
    rng = np.random.default_rng(seed)
    t = np.concatenate([_boot_t_block(x, rng.integers(0, n, size=(rows, n)), m)
                        for rows in _rows_of(n_boot, _block_rows(n, 1))])
    t.sort()
    k = max(1, int(math.floor((1.0 - level) / 2.0 * (n_boot + 1))))
    return m - float(t[n_boot - k]) * se, m - float(t[k - 1]) * se


def _rows_of(total: int, block: int) -> list[int]:
    return [min(block, total - start) for start in range(0, total, block)]


def _boot_t_block(x: np.ndarray, idx: np.ndarray, m: float) -> np.ndarray:
    xs = x[idx]
    ms, ss = xs.mean(axis=1), xs.std(axis=1, ddof=1) / math.sqrt(x.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(ss > 0, (ms - m) / ss, np.sign(ms - m) * np.inf)
    return np.nan_to_num(t, nan=0.0, posinf=np.inf, neginf=-np.inf)


def score_shift_estimate(d: Items, span: float, level: float = 0.95, *, seed: int = 0,
                         n_boot: int = 2000) -> Estimate:
    """mean(d) of differences of two integer scores of the same items (scoring-bias's shift,
    and with d = |a - b| its MAD), every d in [-span, span], with a `level` interval.

    Fewer than SPARSE_MOVERS items off the common value c (the most frequent d, 0 on a tie):
    the exact interval of `movers_ci` about c (method "clopper-pearson-movers" for c = 0,
    "clopper-pearson-mode" otherwise); every item alike at c != 0: `constant_ci`. Otherwise
    each end is the farther of Student's t interval's, mean +- t(n-1) s / sqrt(n), and the
    studentized bootstrap's (`n_boot` resamples, `seed`), clipped to [-span, span] (method
    "t|bootstrap-t"): t's ends are symmetric and fall short on the long side of skewed
    moves (rare moves of 2-6 points); the bootstrap-t's end there is longer, but alone it is
    erratic on few distinct values, where t's is the longer end.

    Why not `bounded_mean_ci` (the audit's): its variance at a tested mean puts mass on the
    scale's end, +-4 on a 1-5 scale, where real differences stay within +-2, so at n = 20 its
    interval was 1.7x this one's (a planted shift of 0.49 excluded 0 in 7% of runs against
    73%) and covered 100%. Over benchmarks/scoring_shift_interval.py's 168 cells (1-5 and 1-10
    scales, n = 10-100, 1000 runs each) this covers at least 94% in all but 5: moves of 3-4
    points on 2-5% of items (the 0.5B model's ids_roman and order_random laws, n = 20-40) that
    a sample may not hold, 91.7-93.9%, where only an interval reaching for the scale's end
    covers (the bounded one: 99.9-100%, 1.2-1.5x as wide)."""
    arr = np.asarray(d, dtype=float)
    n = int(arr.size)
    if not np.all(np.isfinite(arr)):
        raise ValueError("score_shift_estimate: d holds NaN or inf; leave items without a "
                         "value out (and count them) before estimating")
    if not span > 0:
        raise ValueError(f"score_shift_estimate: need span > 0, got {span!r}")
    if n == 0:
        return Estimate(math.nan, (math.nan, math.nan), 0)
    mean = float(arr.mean())
    if n == 1:
        return Estimate(mean, (math.nan, math.nan), 1)
    vals, counts = np.unique(arr, return_counts=True)
    top = vals[counts == counts.max()]
    c = 0.0 if 0.0 in top else float(top[np.argmin(np.abs(top))])
    if int((arr != c).sum()) == 0 and c != 0.0:  # nothing moved: movers_ci, as before
        return Estimate(mean, constant_ci(c, n, span, level), n,
                        method="clopper-pearson-constant")
    if int((arr != c).sum()) < SPARSE_MOVERS:
        return Estimate(mean, movers_ci(arr, span, level, center=c), n,
                        method="clopper-pearson-movers" if c == 0.0 else
                        "clopper-pearson-mode")
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * float(arr.std(ddof=1)) / math.sqrt(n)
    blo, bhi = _boot_t_ends(arr, level, n_boot, seed)
    lo, hi = min(mean - half, blo), max(mean + half, bhi)
    return Estimate(mean, (max(-span, lo), min(span, hi)), n, method="t|bootstrap-t")


def clustered_rate(clusters: Sequence[tuple[float, int]], level: float = 0.95) -> Estimate:
    """A rate over verdicts that come in clusters (an item's two presentation orders):
    `clusters` holds (successes, verdicts) per item. The value is sum s / sum m; the interval
    is Wilson's at the effective n = verdicts / design effect, where the design effect is the
    cluster-robust variance of the ratio over the binomial one (at least 1). Two orders that
    agree count about as one item, not two; a plain Wilson on the verdicts covered 89% at
    nominal 95% on 20 such items. Where every verdict agrees (rate 0 or 1) the design effect
    cannot be estimated, so each item counts once (n_eff = items: 40 of 40 verdicts over 20
    pairs gave [91.2, 100] as if the two orders were independent). Fewer than 2 clusters:
    plain Wilson."""
    s = np.array([float(c[0]) for c in clusters if c[1] > 0])
    m = np.array([float(c[1]) for c in clusters if c[1] > 0])
    total, k = float(m.sum()), int(m.size)
    if total == 0:
        return rate(0, 0, level)
    p = float(s.sum()) / total
    deff = 1.0
    if k >= 2 and 0.0 < p < 1.0:
        v_cluster = k / (k - 1) * float(((s - p * m) ** 2).sum()) / total**2
        deff = max(1.0, v_cluster / (p * (1.0 - p) / total))
    elif k >= 2:  # no spread to estimate it from: the conservative end, one per item
        deff = total / k
    n_eff = total / deff
    lo, hi = wilson(p * n_eff, n_eff, level)
    return Estimate(p, (lo, hi), int(total),
                    method="wilson" if deff == 1.0 else
                    f"wilson-clustered (design effect {deff:.2f} over {k} items)")


def rate(successes: float, n: int, level: float = 0.95) -> Estimate:
    """successes / n with its Wilson interval (method "wilson"). n = 0 -> value nan,
    interval (0, 1)."""
    lo, hi = wilson(successes, n, level)
    value = float(successes) / n if n else math.nan
    return Estimate(value, (lo, hi), int(n), method="wilson")


def mean_ci(x: Any, level: float = 0.95) -> Interval:
    """Student-t interval for a mean: mean +- t_{n-1} * s / sqrt(n). (nan, nan) if n < 2;
    a constant sample gives the degenerate (mean, mean)."""
    a = np.asarray(x, dtype=float).ravel()
    _z(level)
    if a.size < 2:
        return math.nan, math.nan
    m = float(a.mean())
    se = float(a.std(ddof=1)) / math.sqrt(a.size)
    t = float(stats.t.ppf(0.5 + level / 2.0, a.size - 1))
    return m - t * se, m + t * se


# --- bootstrap -------------------------------------------------------------------------------

def _as_items(data: Items) -> tuple[Any, int]:
    """Items as something indexable by an integer array along the first axis."""
    if isinstance(data, np.ndarray):
        arr = data
    else:
        try:
            arr = np.asarray(data)
        except ValueError:  # ragged per-item tuples
            arr = None
        # Only numeric sequences become arrays: numpy would turn ("a", 1) into strings.
        if arr is None or arr.dtype.kind not in "biufc":
            seq = list(data)
            return seq, len(seq)
    if arr.ndim == 0:
        raise ValueError("bootstrap: data must have one entry per item, got a scalar")
    return arr, int(arr.shape[0])


def _take(items: Any, idx: np.ndarray) -> Any:
    if isinstance(items, np.ndarray):
        return items[idx]
    return [items[i] for i in idx]


def _check_boot(n: int, n_boot: int, method: str) -> None:
    if n < 2:
        raise ValueError(f"bootstrap: need at least 2 items, got {n}")
    if n_boot < 10:
        raise ValueError(f"bootstrap: n_boot must be >= 10, got {n_boot}")
    if method not in ("percentile", "bca"):
        raise ValueError(f"bootstrap: method must be 'percentile' or 'bca', got {method!r}")


# Resamples are drawn and evaluated in blocks of rows holding at most this many item entries
# (indices times entries per item), so memory stays flat in n and n_boot: one 2000 x 20,000
# block of (judge, label) codes would take ~1 GB. Drawing the indices block by block gives the
# same numbers as drawing all n_boot x n at once (the generator fills arrays in order).
_BLOCK_ENTRIES = 1 << 22


def _width(items: Any) -> int:
    """Entries per item of `items` (the columns a resample copies per index)."""
    return max(1, int(items.size // max(1, items.shape[0]))) if isinstance(items, np.ndarray) \
        else 1


def _block_rows(n: int, width: int) -> int:
    return max(1, _BLOCK_ENTRIES // max(1, n * width))


def _replicates(stat_idx: Callable[[np.ndarray], Any], n: int, n_boot: int,
                rng: np.random.Generator, vectorized: bool, width: int = 1) -> np.ndarray:
    rows = _block_rows(n, width)
    out: list[np.ndarray] = []
    for start in range(0, n_boot, rows):
        idx = rng.integers(0, n, size=(min(rows, n_boot - start), n))
        if vectorized:
            out.append(np.asarray(stat_idx(idx), dtype=float).reshape(len(idx)))
        else:
            out.append(np.array([float(stat_idx(row)) for row in idx]))
    return np.concatenate(out)


def _jackknife(stat_idx: Callable[[np.ndarray], Any], n: int, vectorized: bool,
               width: int = 1) -> np.ndarray:
    """Leave-one-out replicates; row i of a block is 0..n-1 without i (j, or j + 1 from i)."""
    rows = _block_rows(n, width)
    j = np.arange(n - 1)
    out: list[np.ndarray] = []
    for start in range(0, n, rows):
        i = np.arange(start, min(n, start + rows))[:, None]
        loo = j + (j >= i)
        if vectorized:
            out.append(np.asarray(stat_idx(loo), dtype=float).reshape(len(loo)))
        else:
            out.append(np.array([float(stat_idx(row)) for row in loo]))
    return np.concatenate(out)


def _interval(theta_hat: float, boot: np.ndarray, level: float, method: str,
              jack: Callable[[], np.ndarray]) -> Interval:
    """Percentile or BCa (Efron 1987; Efron & Tibshirani 1993, ch. 14) endpoints."""
    boot = boot[np.isfinite(boot)]
    if boot.size == 0:
        return math.nan, math.nan
    alpha = (1.0 - level) / 2.0
    if method == "percentile":
        q = np.array([alpha, 1.0 - alpha])
    else:
        b = boot.size
        # Bias correction; ties with theta_hat count half (as scipy.stats.bootstrap). The
        # share is kept off 0 and 1 so a degenerate bootstrap gives finite endpoints.
        share = ((boot < theta_hat).sum() + (boot <= theta_hat).sum()) / (2.0 * b)
        share = min(max(share, 0.5 / b), 1.0 - 0.5 / b)
        z0 = special.ndtri(share)
        # Acceleration from the jackknife: a = sum(d^3) / (6 * sum(d^2)^1.5), d = mean - t_i.
        t = jack()
        t = t[np.isfinite(t)]
        d = t.mean() - t if t.size else np.zeros(1)
        denom = 6.0 * float((d * d).sum()) ** 1.5
        a = float((d ** 3).sum()) / denom if denom > 0 else 0.0
        zq = special.ndtri(np.array([alpha, 1.0 - alpha]))
        q = special.ndtr(z0 + (z0 + zq) / (1.0 - a * (z0 + zq)))
    lo, hi = np.percentile(boot, 100.0 * q)
    return float(lo), float(hi)


def bootstrap_ci(
    data: Items,
    statistic: Statistic,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    method: BootMethod = "percentile",
    vectorized: bool = False,
) -> Interval:
    """Nonparametric bootstrap interval of `statistic(data)`, resampling items (rows).

    Items are the unit of independence (a row of a 2-D array, an entry of a 1-D array or one
    per-item tuple), so a statistic over several columns of one item keeps them together.
    "bca" corrects for bias and skew (better for kappa-like or bounded statistics); it costs
    n extra evaluations (jackknife). Replicates where the statistic is not finite (e.g. kappa
    of a resample with a single category) are dropped; (nan, nan) if none is finite.

    vectorized=True: `statistic` receives a batch with items on axis 1, shape (B, n, ...),
    and returns B values, e.g. ``lambda x: x.mean(axis=1)``; much faster for simple statistics.
    """
    _z(level)
    items, n = _as_items(data)
    _check_boot(n, n_boot, method)
    if vectorized and not isinstance(items, np.ndarray):
        raise ValueError("bootstrap: vectorized=True needs array data, not ragged tuples")

    def stat_idx(idx: np.ndarray) -> Any:
        return statistic(_take(items, idx))

    theta_hat = float(stat_idx(np.arange(n)[None, :])[0]) if vectorized else float(
        statistic(items))
    rng = np.random.default_rng(seed)
    w = _width(items)
    boot = _replicates(stat_idx, n, n_boot, rng, vectorized, w)
    return _interval(theta_hat, boot, level, method,
                     lambda: _jackknife(stat_idx, n, vectorized, w))


def paired_bootstrap_diff(
    a: Items,
    b: Items,
    statistic: Statistic,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
    method: BootMethod = "percentile",
    vectorized: bool = False,
) -> Estimate:
    """statistic(a) - statistic(b) with a bootstrap interval, resampling items jointly.

    For "metric on perturbed (a) minus metric on baseline (b)" where a[i] and b[i] are the
    same item: resampling the pair keeps the within-item correlation, which is what makes a
    paired design more precise than two independent samples. `vectorized` as in
    `bootstrap_ci` (the statistic sees each of a and b batched, items on axis 1). The
    Estimate's method is "bootstrap-percentile" or "bootstrap-bca".
    """
    _z(level)
    ia, n = _as_items(a)
    ib, nb = _as_items(b)
    if n != nb:
        raise ValueError(f"paired_bootstrap_diff: a has {n} items, b has {nb}; they must be "
                         "aligned item by item")
    _check_boot(n, n_boot, method)
    if vectorized and not (isinstance(ia, np.ndarray) and isinstance(ib, np.ndarray)):
        raise ValueError("bootstrap: vectorized=True needs array data, not ragged tuples")

    def stat_idx(idx: np.ndarray) -> Any:
        sa = np.asarray(statistic(_take(ia, idx)), dtype=float)
        sb = np.asarray(statistic(_take(ib, idx)), dtype=float)
        return sa - sb

    if vectorized:
        value = float(np.asarray(stat_idx(np.arange(n)[None, :])).reshape(-1)[0])
    else:
        value = float(statistic(ia)) - float(statistic(ib))
    rng = np.random.default_rng(seed)
    w = _width(ia) + _width(ib)
    boot = _replicates(stat_idx, n, n_boot, rng, vectorized, w)
    ci = _interval(value, boot, level, method, lambda: _jackknife(stat_idx, n, vectorized, w))
    return Estimate(value, ci, n, method=f"bootstrap-{method}")
