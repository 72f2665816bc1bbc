"""Power: the minimum detectable effect (MDE) of a design and the n needed for an effect.

"No bias found" may only be said when the design could have found it, so every test result
is reported with the effect it had `power` to detect at level `alpha`. All formulas are normal
approximations (documented per function); the probability of rejecting in the wrong tail is
ignored, as usual. Family conventions: `alpha` (two-sided unless two_sided=False), `power`;
`mde_*` take n and return an effect, `required_n_*` take an effect and return an int n.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats


def _z_pair(alpha: float, power: float, two_sided: bool) -> tuple[float, float]:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power!r}")
    z_a = float(special.ndtri(1.0 - alpha / 2.0 if two_sided else 1.0 - alpha))
    return z_a, float(special.ndtri(power))


def _check_n(n: float) -> None:
    if not n >= 1:
        raise ValueError(f"n must be >= 1, got {n!r}")


def _first_root(f, hi: float) -> float:
    """Smallest root of f on (0, hi] given f(0) < 0; nan if f stays negative."""
    grid = np.linspace(0.0, hi, 257)
    vals = np.array([f(g) for g in grid])
    above = np.nonzero(vals >= 0)[0]
    if above.size == 0:
        return math.nan
    j = int(above[0])
    if vals[j] == 0:
        return float(grid[j])
    return float(optimize.brentq(f, grid[j - 1], grid[j], xtol=1e-13, rtol=1e-12))


def mde_proportion(n: int, p0: float = 0.5, alpha: float = 0.05, power: float = 0.8,
                   two_sided: bool = True) -> float:
    """Smallest |p - p0| a one-sample test of a proportion detects with `power` at n.

    Score (z) test, normal approximation (Chow, Shao & Wang, Sample Size Calculations in
    Clinical Research, sec. 4.1): d solves  d * sqrt(n) = z_a * sqrt(p0 q0) + z_b * sqrt(p1 q1),
    p1 = p0 +- d. The larger of the upward and downward solutions is returned, so an effect
    of this size in either direction is detected; a direction in which no rate in [0, 1]
    reaches the power is ignored; nan if neither does (n too small).
    """
    _check_n(n)
    if not 0.0 < p0 < 1.0:
        raise ValueError(f"mde_proportion: p0 must be in (0, 1), got {p0!r}")
    z_a, z_b = _z_pair(alpha, power, two_sided)
    s0 = math.sqrt(p0 * (1.0 - p0))
    out = []
    for sign, bound in ((1.0, 1.0 - p0), (-1.0, p0)):
        def f(d: float, sign: float = sign) -> float:
            p1 = p0 + sign * d
            return d * math.sqrt(n) - z_a * s0 - z_b * math.sqrt(max(p1 * (1.0 - p1), 0.0))
        out.append(_first_root(f, bound))
    finite = [d for d in out if math.isfinite(d)]
    return max(finite) if finite else math.nan


def required_n_proportion(effect: float, p0: float = 0.5, alpha: float = 0.05,
                          power: float = 0.8, two_sided: bool = True) -> int:
    """Inverse of `mde_proportion`: the n at which |p - p0| = effect is detected with
    `power`, n = ((z_a sqrt(p0 q0) + z_b sqrt(p1 q1)) / effect)^2 (larger direction), rounded
    up."""
    if not 0.0 < p0 < 1.0:
        raise ValueError(f"required_n_proportion: p0 must be in (0, 1), got {p0!r}")
    if not effect > 0:
        raise ValueError(f"required_n_proportion: effect must be > 0, got {effect!r}")
    z_a, z_b = _z_pair(alpha, power, two_sided)
    ns = []
    for p1 in (p0 + effect, p0 - effect):
        if 0.0 <= p1 <= 1.0:
            root = z_a * math.sqrt(p0 * (1 - p0)) + z_b * math.sqrt(p1 * (1 - p1))
            ns.append((root / effect) ** 2)
    if not ns:
        raise ValueError(f"required_n_proportion: p0 +- {effect} is outside [0, 1]")
    return max(1, math.ceil(max(ns) - 1e-9))


def mde_paired_flip(n: int, discordant_rate: float, alpha: float = 0.05, power: float = 0.8,
                    two_sided: bool = True) -> float:
    """Smallest |p10 - p01| a McNemar test on n paired items detects with `power`.

    p10, p01 = rates of items flipping each way, discordant_rate psi = p10 + p01 (from a pilot
    or the data). Connor (1987), normal approximation: delta solves
    delta * sqrt(n) = z_a * sqrt(psi) + z_b * sqrt(psi - delta^2). nan when even
    delta = psi (every flip in one direction) is not detectable, or psi = 0.
    """
    _check_n(n)
    if not 0.0 <= discordant_rate <= 1.0:
        raise ValueError(f"mde_paired_flip: discordant_rate must be in [0, 1], "
                         f"got {discordant_rate!r}")
    z_a, z_b = _z_pair(alpha, power, two_sided)
    psi = float(discordant_rate)
    if psi == 0.0:
        return math.nan

    def f(d: float) -> float:
        return d * math.sqrt(n) - z_a * math.sqrt(psi) - z_b * math.sqrt(max(psi - d * d, 0.0))

    if f(psi) < 0:
        return math.nan
    return float(optimize.brentq(f, 0.0, psi, xtol=1e-14, rtol=1e-12))


def required_n_paired_flip(effect: float, discordant_rate: float, alpha: float = 0.05,
                           power: float = 0.8, two_sided: bool = True) -> int:
    """Inverse of `mde_paired_flip` (Connor 1987):
    n = (z_a sqrt(psi) + z_b sqrt(psi - delta^2))^2 / delta^2, rounded up."""
    psi = float(discordant_rate)
    if not 0.0 < effect <= psi <= 1.0:
        raise ValueError(f"required_n_paired_flip: need 0 < effect <= discordant_rate <= 1, "
                         f"got effect={effect!r}, discordant_rate={discordant_rate!r}")
    z_a, z_b = _z_pair(alpha, power, two_sided)
    root = z_a * math.sqrt(psi) + z_b * math.sqrt(psi - effect * effect)
    return max(1, math.ceil((root / effect) ** 2 - 1e-9))


# ---------------------------------------------------------------- from the realised data

def mde_from_se(se: float, alpha: float = 0.05, power: float = 0.8,
                two_sided: bool = True) -> float:
    """MDE of a test whose estimate is about normal with standard error `se`:
    (z_{1-alpha/2} + z_power) * se (2.80 * se at the defaults). nan when se is not finite or
    negative."""
    z_a, z_b = _z_pair(alpha, power, two_sided)
    if se is None or not math.isfinite(se) or se < 0:
        return math.nan
    return (z_a + z_b) * float(se)


def sign_test_critical(k_max: int, alpha: float = 0.05) -> np.ndarray:
    """c[K] for K = 0..k_max: the exact two-sided sign test on K nonzero paired differences
    (binomial at 1/2, p = min(1, 2 P(X <= min(up, down)))) rejects at level `alpha` (p <
    alpha) iff min(up, down) <= c[K]; c[K] = -1 when no split of K rejects."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    ks = np.arange(int(k_max) + 1)
    c = stats.binom.ppf(alpha / 2.0, ks, 0.5).astype(int) - 1  # largest c: cdf(c) < alpha/2
    # ppf works in floating point: step to the exact boundary of 2 * cdf(c) < alpha.
    for _ in range(2):
        up = (c + 1 <= ks // 2) & (2.0 * stats.binom.cdf(c + 1, ks, 0.5) < alpha)
        c = np.where(up, c + 1, c)
        down = (c >= 0) & ~(2.0 * stats.binom.cdf(c, ks, 0.5) < alpha)
        c = np.where(down, c - 1, c)
    return np.maximum(c, -1)


def power_sign_test(n: int, discordant_rate: float, pi: float, alpha: float = 0.05,
                    critical: np.ndarray | None = None) -> float:
    """Exact power of the two-sided sign test on n paired items when each item differs with
    probability `discordant_rate` (psi) and a differing item goes the tested way with
    probability `pi`: sum over K ~ Binomial(n, psi) of P(reject | K, up ~ Binomial(K, pi))."""
    _check_n(n)
    n = int(n)
    if not 0.0 <= discordant_rate <= 1.0 or not 0.0 <= pi <= 1.0:
        raise ValueError(f"power_sign_test: need 0 <= discordant_rate, pi <= 1, got "
                         f"{discordant_rate!r}, {pi!r}")
    c = sign_test_critical(n, alpha) if critical is None else critical[: n + 1]
    ks = np.arange(n + 1)
    # Binomial(n, psi) pmf from scipy.special ufuncs (much faster than scipy.stats here).
    logw = (special.gammaln(n + 1) - special.gammaln(ks + 1) - special.gammaln(n - ks + 1)
            + special.xlogy(ks, discordant_rate) + special.xlog1py(n - ks, -discordant_rate))
    weight = np.exp(logw)
    ok = (c >= 0) & (weight > 1e-15)  # K far in the tails adds nothing: skip its sums
    rej = np.zeros(n + 1)
    kk, cc = ks[ok], c[ok]
    # P(up <= c) + P(up >= K - c), up ~ Binomial(K, pi); bdtr/bdtrc need 0 < pi < 1.
    if pi <= 0.0 or pi >= 1.0:
        rej[ok] = 1.0
    else:
        rej[ok] = special.bdtr(cc, kk, pi) + special.bdtrc(kk - cc - 1, kk, pi)
    return float(np.clip((weight * rej).sum(), 0.0, 1.0))


def _tilt(values: np.ndarray, weights: np.ndarray, theta: float) -> tuple[float, float]:
    """(pi, mean) of the movers' differences, +-values with weights w/2 each, exponentially
    tilted by theta: P(+v) ~ w e^{theta v}, P(-v) ~ w e^{-theta v}."""
    top = float(values.max())
    up = weights * np.exp(theta * (values - top))  # scaled by e^{-theta top}: no overflow
    down = weights * np.exp(-theta * (values + top))
    z = float((up + down).sum())
    return float(up.sum()) / z, float((values * (up - down)).sum()) / z


def mde_sign_test(n: int, discordant_rate: float, magnitude: float = 1.0,
                  alpha: float = 0.05, power: float = 0.8,
                  moves: np.ndarray | list[float] | None = None,
                  move_weights: np.ndarray | list[float] | None = None) -> float:
    """Smallest mean paired difference delta = E[d] that the exact two-sided sign test on n
    items detects with `power` at level `alpha`, at the realised discordance.

    The test sees only the share of items that moved (psi = `discordant_rate`) and the
    share of those that moved up (pi): `power_sign_test`. Exactly solved first: pi*, the
    smallest pi reaching `power` with psi held at its realised value (McNemar's conditional
    design). Then pi* is turned into a mean difference through the movers' sizes: `moves`
    (the realised nonzero differences, or their distinct sizes with `move_weights`; default
    one size, `magnitude`), symmetrised (the null)
    and exponentially tilted until P(up | moved) = pi*, so delta = psi * E_tilt[d | moved].
    The tilt lets larger moves go up more often than small ones go down, as a bias on a
    bounded scale does (a verdict pushed toward a side reaches the top credit, not a tie);
    with one size m it is delta = psi * m * (2 pi* - 1).
    When even pi = 1 at the realised psi misses `power` (a judge that hardly moves), the
    smallest psi' >= psi that reaches it with every mover going up is used and delta = psi' *
    the largest move: a bias would have to move that many items, so a steady judge still
    has a finite MDE. nan when even every item moving up does not reach `power` (n too
    small)."""
    _check_n(n)
    if not 0.0 <= discordant_rate <= 1.0:
        raise ValueError(f"mde_sign_test: discordant_rate must be in [0, 1], "
                         f"got {discordant_rate!r}")
    if not magnitude > 0:
        raise ValueError(f"mde_sign_test: magnitude must be > 0, got {magnitude!r}")
    _z_pair(alpha, power, True)
    mv = np.abs(np.asarray(moves if moves is not None else [magnitude], dtype=float))
    wt = (np.ones(mv.size) if move_weights is None or moves is None
          else np.asarray(move_weights, dtype=float))
    if wt.shape != mv.shape or np.any(wt < 0):
        raise ValueError("mde_sign_test: move_weights must be >= 0, one per move")
    keep = (mv > 0) & (wt > 0)
    mv, wt = mv[keep], wt[keep]
    if mv.size == 0:
        mv, wt = np.array([float(magnitude)]), np.ones(1)
    values, inv = np.unique(mv, return_inverse=True)
    weights = np.bincount(inv, weights=wt) / wt.sum()
    crit = sign_test_critical(int(n), alpha)
    psi = float(discordant_rate)

    def pw(psi_: float, pi: float) -> float:
        return power_sign_test(n, psi_, pi, alpha, critical=crit) - power

    top = float(values.max())
    if psi == 0.0 or pw(psi, 1.0) < 0:
        if pw(1.0, 1.0) < 0:
            return math.nan
        lo = psi
        psi_ = float(optimize.brentq(lambda x: pw(x, 1.0), lo, 1.0, xtol=1e-12)) \
            if pw(lo, 1.0) < 0 else lo
        return psi_ * top
    pi_star = float(optimize.brentq(lambda x: pw(psi, x), 0.5, 1.0, xtol=1e-12))
    if values.size == 1:
        return psi * top * (2.0 * pi_star - 1.0)
    hi = 1.0
    while _tilt(values, weights, hi)[0] < pi_star and hi < 1e6:
        hi *= 2.0
    theta = float(optimize.brentq(lambda t: _tilt(values, weights, t)[0] - pi_star, 0.0, hi,
                                  xtol=1e-12))
    return psi * _tilt(values, weights, theta)[1]
