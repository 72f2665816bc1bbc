"""Hypothesis tests returning p-values (exact where the data are counts).

Family conventions: counts in, `alternative` in {"two-sided", "greater", "less"}, a p-value
(float) out, or (statistic, p) where the statistic itself is informative. Degenerate input
(no discordant pairs, all-zero differences) gives p = 1.0 rather than nan or an exception:
no data against the null is no evidence against it.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy import stats

Alternative = Literal["two-sided", "greater", "less"]
_ALTERNATIVES = ("two-sided", "greater", "less")


# A test on finitely many items never gives p = 0 (every outcome has a positive
# probability under the null), but its exact p underflows double precision: below ~1e-308
# digits are lost and past 5e-324 it is 0.0 (a 20,000-item audit's sign test recorded p = 0
# and its table read q = 0). Such a p (below P_UNDERFLOW) is recorded as P_FLOOR, read
# "p < 1e-300" (`floor_p`, `p_text`): a number in JSON, never 0.0, and a bound, not an
# estimate. A p between the two is a double like any other and kept as computed.
P_FLOOR = 1e-300
P_UNDERFLOW = 1e-308


def floor_p(p: float) -> float:
    """`p`, or P_FLOOR where it underflowed (below P_UNDERFLOW); nan stays nan."""
    return p if p != p or p >= P_UNDERFLOW else P_FLOOR


def p_text(p: float | None, spec: str = ".2g") -> str:
    """A p- or q-value for a table: `spec` digits, "< 1e-300" at the floor (`P_FLOOR`: the
    exact value underflowed; 0 from an older results file is read the same way: no test on
    finite data gives it), "n/a" when there is none."""
    if p is None or p != p:
        return "n/a"
    if p <= P_FLOOR:
        return f"< {P_FLOOR:.0e}"
    shown = format(p, spec)
    for digits in (3, 4, 5, 6):  # rounded onto the usual alpha: more digits say which side
        if p == 0.05 or float(shown) != 0.05:
            break
        shown = format(p, f".{digits}g")
    return shown


def normal_p(z: float) -> float:
    """Two-sided p of a normal statistic z (erfc(|z| / sqrt 2)), floored (`floor_p`): past
    |z| ~ 38 erfc underflows to 0."""
    return floor_p(float(math.erfc(abs(z) / math.sqrt(2))))


def _check_alternative(alternative: str) -> None:
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")


def _count(x: Any, name: str) -> int:
    v = float(x)
    if not v.is_integer() or v < 0:
        raise ValueError(f"{name} must be a non-negative whole count, got {x!r}")
    return int(v)


def binomial_test(k: int, n: int, p0: float = 0.5,
                  alternative: Alternative = "two-sided") -> float:
    """Exact binomial test of k successes in n trials against rate p0 (scipy.stats.binomtest;
    two-sided p sums the outcomes no more likely than k). n = 0 -> 1.0."""
    k, n = _count(k, "k"), _count(n, "n")
    _check_alternative(alternative)
    if k > n:
        raise ValueError(f"binomial_test: k={k} exceeds n={n}")
    if not 0.0 <= p0 <= 1.0:
        raise ValueError(f"binomial_test: p0 must be in [0, 1], got {p0!r}")
    if n == 0:
        return 1.0
    p = float(stats.binomtest(k, n, p0, alternative=alternative).pvalue)
    if (p0 == 0.0 and k > 0) or (p0 == 1.0 and k < n):  # impossible under the null: 0 exactly
        return p
    return floor_p(p)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact McNemar test: two-sided binomial test of b vs c discordant pairs at 1/2.

    Paired designs (same item before/after a perturbation) carry information only in the
    pairs that changed; p = min(1, 2 * BinomCDF(min(b, c); b + c, 1/2)). b + c = 0 -> 1.0.
    """
    b, c = _count(b, "b"), _count(c, "c")
    m = b + c
    if m == 0:
        return 1.0
    return floor_p(float(min(1.0, 2.0 * stats.binom.cdf(min(b, c), m, 0.5))))


def one_sample_t(x: Any, mu: float = 0.0,
                 alternative: Alternative = "two-sided") -> tuple[float, float]:
    """One-sample t test of mean(x) = mu: t = (mean - mu) / (s / sqrt(n)), n - 1 df.

    Zero variance: (0.0, 1.0) when every x equals mu, (+-inf, 0 or 1) otherwise (scipy
    returns nan for both). n < 2 -> (nan, nan).
    """
    _check_alternative(alternative)
    a = np.asarray(x, dtype=float).ravel()
    if a.size < 2:
        return math.nan, math.nan
    if np.ptp(a) == 0.0:
        diff = float(a[0]) - mu
        if diff == 0.0:
            return 0.0, 1.0
        t = math.copysign(math.inf, diff)
        if alternative == "two-sided":
            return t, 0.0
        toward = (alternative == "greater") == (diff > 0)
        return t, 0.0 if toward else 1.0
    res = stats.ttest_1samp(a, mu, alternative=alternative)
    return float(res.statistic), floor_p(float(res.pvalue))


# Up to this many non-zero differences the "wilcox" signed-rank p is exact (the DP below
# costs about n^3 / 2 additions: ~14M at 300, a few milliseconds); above, the normal
# approximation with the tie correction, which is then accurate.
WILCOXON_EXACT_MAX = 300


def _signed_rank_exact(a: np.ndarray, alternative: str) -> float:
    """Exact conditional p of the signed-rank statistic given the |x| midranks: under H0 each
    sign is +-1 with probability 1/2, independently. Twice a midrank is a whole number, so
    the null distribution of twice the positive rank sum is a dynamic programme over the
    integers 0..sum(2r) (a convolution with {0, 2r_i} per item), exact with ties."""
    r2 = np.rint(2 * stats.rankdata(np.abs(a))).astype(np.int64)
    total = int(r2.sum())
    t2 = int(r2[a > 0].sum())
    dist = np.zeros(total + 1)
    dist[0] = 1.0
    top = 0
    for k in r2:
        k = int(k)
        dist[k:top + k + 1] += dist[:top + 1].copy()
        dist[:top + k + 1] *= 0.5
        top += k
    s = np.arange(total + 1)
    if alternative == "greater":
        p = dist[s >= t2].sum()
    elif alternative == "less":
        p = dist[s <= t2].sum()
    else:  # as or further from the centre total / 2 (integers: 2s - total)
        p = dist[np.abs(2 * s - total) >= abs(2 * t2 - total)].sum()
    return float(min(1.0, p))


def wilcoxon_signed_rank(x: Any, alternative: Alternative = "two-sided",
                         zero_method: Literal["wilcox", "pratt", "zsplit"] = "wilcox") -> float:
    """Wilcoxon signed-rank test that x (paired differences) is symmetric about 0.

    "wilcox" (Wilcoxon 1945) drops zero differences first, then gives the exact conditional
    p over sign flips given the midranks of |x| (`_signed_rank_exact`, ties handled exactly)
    for up to WILCOXON_EXACT_MAX non-zero differences, and the normal approximation with
    the tie correction (no continuity correction) above. scipy's "auto" chose between its
    exact and normal methods by the count *including* zeros, so the p of the same non-zero
    differences moved with the number of zeros: five +1 with 8 zeros gave 0.0625, with 9
    zeros 0.0253 (both exactly 2/32 = 0.0625). "pratt" and "zsplit" keep zeros in the
    ranking; they are scipy.stats.wilcoxon's as it is. All-zero (or empty) input -> 1.0
    instead of scipy's error/nan: no item moved, no evidence of a shift. Differences are
    rounded to 12 decimals first, so that float noise neither makes a tie nor breaks one
    (0.1 + 0.2 and 0.3 rank together; a difference of 1e-16 is a zero).
    """
    _check_alternative(alternative)
    a = np.asarray(x, dtype=float).ravel()
    if not np.all(np.isfinite(a)):
        raise ValueError("wilcoxon_signed_rank: x contains nan or inf")
    a = np.round(a, 12)
    if not np.any(a != 0.0):
        return 1.0
    if zero_method == "wilcox":
        nz = a[a != 0.0]
        if nz.size <= WILCOXON_EXACT_MAX:
            return _signed_rank_exact(nz, alternative)
        res = stats.wilcoxon(nz, zero_method="wilcox", alternative=alternative,
                             method="asymptotic")
        return floor_p(float(res.pvalue))
    res = stats.wilcoxon(a, zero_method=zero_method, alternative=alternative)
    return floor_p(float(res.pvalue))
