"""Bias-aware Bayesian Bradley-Terry: MAP by L-BFGS with an analytic gradient, Laplace posterior.

Model (first-shown item i against second-shown item j):

    P(i preferred) = sigmoid(theta_i - theta_j + sum_m c_m (X_im - X_jm) + kappa)

theta ~ N(0, 1/lam) (item quality), c and kappa ~ N(0, tau^2) (the judge's covariate and
position biases, shrunk so an unbiased judge pays only a small variance cost). Without
covariates and position term this is plain Bradley-Terry with a ridge prior (`fit_naive`).

Data follow choix's style: plain arrays, small pure functions.

- ``Comparisons``: float array of rows ``(i, j, y)``; i was shown first, j second, y = 1 if i
  was preferred, 0 if j, 0.5 for a tie. Ties count as half a win for each side (the
  log-likelihood term is y log p + (1 - y) log(1 - p)); no Davidson tie parameter.
- ``Covariates``: float array (N, M), one row per item. Not standardised here: the caller
  decides the scale (c is "logit per unit of X").

Parameter vector layout everywhere: ``[theta (N), c (M), kappa (1 if position)]``.
Identifiability: the likelihood sees only differences, and c is separated from theta only by
the prior (theta independent of X); both are stated in the posterior covariance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, optimize, special, stats

Comparisons = np.ndarray  # (n, 3) rows (i, j, y), i shown first, y in {1, 0, 0.5}
Covariates = np.ndarray  # (N, M)

_LBFGS_OPTIONS = {"maxiter": 5000, "gtol": 1e-8, "ftol": 1e-14, "maxcor": 20}


@dataclass(frozen=True)
class BTFit:
    """A MAP fit with its Laplace posterior. ``cov`` is over ``[theta, c, kappa?]``."""

    theta: np.ndarray
    c: np.ndarray
    kappa: float
    cov: np.ndarray
    loglik: float
    converged: bool
    lam: float = 1.0
    tau: float = 1.0
    position: bool = True
    n_iter: int = 0
    message: str = field(default="", compare=False)

    @property
    def n_items(self) -> int:
        return int(self.theta.shape[0])

    @property
    def params(self) -> np.ndarray:
        """The parameter vector (for warm starts)."""
        kap = [self.kappa] if self.position else []
        return np.concatenate([self.theta, self.c, np.asarray(kap, dtype=float)])

    @property
    def theta_cov(self) -> np.ndarray:
        n = self.n_items
        return self.cov[:n, :n]

    @property
    def c_se(self) -> np.ndarray:
        n, m = self.n_items, self.c.shape[0]
        return np.sqrt(np.diag(self.cov)[n : n + m])

    @property
    def kappa_se(self) -> float:
        if not self.position:
            return 0.0
        return float(np.sqrt(self.cov[-1, -1]))

    def c_interval(self, level: float = 0.95) -> np.ndarray:
        """(M, 2) equal-tailed Laplace intervals for c."""
        z = float(stats.norm.ppf(0.5 + level / 2))
        se = self.c_se
        return np.column_stack([self.c - z * se, self.c + z * se])

    def kappa_interval(self, level: float = 0.95) -> tuple[float, float]:
        z = float(stats.norm.ppf(0.5 + level / 2))
        return (self.kappa - z * self.kappa_se, self.kappa + z * self.kappa_se)

    def var_diff(self) -> np.ndarray:
        """(N, N) posterior Var(theta_i - theta_j)."""
        s = self.theta_cov
        d = np.diag(s)
        return d[:, None] + d[None, :] - 2.0 * s


def as_comparisons(data: object, n_items: int | None = None) -> Comparisons:
    """Validate and convert to a float (n, 3) array; errors name the row and field."""
    arr = np.asarray(data, dtype=float)
    if arr.size == 0:
        return np.zeros((0, 3))
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"comparisons: expected rows (i, j, y) of shape (n, 3), got {arr.shape}")
    ij = arr[:, :2]
    bad = np.nonzero((ij != np.round(ij)).any(axis=1) | (ij < 0).any(axis=1))[0]
    if bad.size:
        r = int(bad[0])
        raise ValueError(f"comparisons row {r}: item indices must be non-negative integers, "
                         f"got {arr[r, :2].tolist()}")
    if n_items is not None:
        bad = np.nonzero((ij >= n_items).any(axis=1))[0]
        if bad.size:
            r = int(bad[0])
            raise ValueError(f"comparisons row {r}: item index {arr[r, :2].tolist()} out of "
                             f"range for n_items={n_items}")
    bad = np.nonzero(arr[:, 0] == arr[:, 1])[0]
    if bad.size:
        raise ValueError(f"comparisons row {int(bad[0])}: an item compared with itself")
    y = arr[:, 2]
    bad = np.nonzero(~np.isin(y, (0.0, 0.5, 1.0)))[0]
    if bad.size:
        r = int(bad[0])
        raise ValueError(f"comparisons row {r}: y={float(y[r])!r}, expected 1 (first preferred), "
                         "0 (second preferred) or 0.5 (tie)")
    return arr


def from_winner_loser(pairs: object) -> Comparisons:
    """choix-style (winner, loser) pairs as rows (winner, loser, 1)."""
    p = np.asarray(pairs, dtype=float).reshape(-1, 2)
    return np.column_stack([p, np.ones(len(p))])


def _layout(n_items: int, X: Covariates | None, position: bool) -> tuple[np.ndarray, int, int]:
    if X is None:
        Xa = np.zeros((n_items, 0))
    else:
        Xa = np.asarray(X, dtype=float)
        if Xa.ndim == 1:
            Xa = Xa[:, None]
        if Xa.shape[0] != n_items:
            raise ValueError(f"covariates: expected {n_items} rows (one per item), "
                             f"got {Xa.shape[0]}")
        if not np.all(np.isfinite(Xa)):
            raise ValueError("covariates: non-finite values")
    m = Xa.shape[1]
    return Xa, m, n_items + m + (1 if position else 0)


def _prior_precision(n_items: int, m: int, position: bool, lam: float, tau: float) -> np.ndarray:
    if lam <= 0 or tau <= 0:
        raise ValueError(f"lam and tau must be positive, got lam={lam}, tau={tau}")
    return np.concatenate([np.full(n_items, lam), np.full(m + (1 if position else 0), tau**-2)])


def _eta(params: np.ndarray, i: np.ndarray, j: np.ndarray, dX: np.ndarray, n: int,
         m: int, position: bool) -> np.ndarray:
    eta = params[i] - params[j]
    if m:
        eta = eta + dX @ params[n : n + m]
    if position:
        eta = eta + params[-1]
    return eta


def neg_log_posterior(params: np.ndarray, n_items: int, comparisons: Comparisons,
                      X: Covariates | None = None, position: bool = True, lam: float = 1.0,
                      tau: float = 1.0) -> tuple[float, np.ndarray]:
    """Negative log posterior (up to a constant) and its analytic gradient."""
    Xa, m, _ = _layout(n_items, X, position)
    i, j, y, dX = _split(comparisons, Xa)
    prec = _prior_precision(n_items, m, position, lam, tau)
    return _nlp(params, i, j, y, dX, n_items, m, position, prec)


def _split(comparisons: Comparisons, Xa: np.ndarray):
    i = comparisons[:, 0].astype(np.intp)
    j = comparisons[:, 1].astype(np.intp)
    return i, j, comparisons[:, 2], Xa[i] - Xa[j]


def _nlp(params, i, j, y, dX, n, m, position, prec):
    eta = _eta(params, i, j, dX, n, m, position)
    f = float(np.sum(np.logaddexp(0.0, eta) - y * eta)) + 0.5 * float(prec @ (params * params))
    r = special.expit(eta) - y
    g = prec * params
    g[:n] += np.bincount(i, r, n) - np.bincount(j, r, n)
    if m:
        g[n : n + m] += dX.T @ r
    if position:
        g[-1] += r.sum()
    return f, g


def hessian(params: np.ndarray, n_items: int, comparisons: Comparisons,
            X: Covariates | None = None, position: bool = True, lam: float = 1.0,
            tau: float = 1.0) -> np.ndarray:
    """Hessian of the negative log posterior: sum pi(1-pi) z z^T + prior precision.

    It does not depend on y, so ties change it only through the MAP point.
    """
    Xa, m, _ = _layout(n_items, X, position)
    i, j, _, dX = _split(comparisons, Xa)
    prec = _prior_precision(n_items, m, position, lam, tau)
    return _hess(params, i, j, dX, n_items, m, position, prec)


def _hess(params, i, j, dX, n, m, position, prec):
    p = special.expit(_eta(params, i, j, dX, n, m, position))
    w = p * (1.0 - p)
    P = prec.shape[0]
    H = np.zeros((P, P))
    deg = np.bincount(i, w, n) + np.bincount(j, w, n)
    off = np.bincount(i * n + j, w, n * n).reshape(n, n)
    H[:n, :n] = np.diag(deg) - off - off.T
    for a in range(m):
        wd = w * dX[:, a]
        col = np.bincount(i, wd, n) - np.bincount(j, wd, n)
        H[:n, n + a] = col
        H[n + a, :n] = col
    if m:
        H[n : n + m, n : n + m] = dX.T @ (w[:, None] * dX)
    if position:
        col = np.bincount(i, w, n) - np.bincount(j, w, n)
        H[:n, -1] = col
        H[-1, :n] = col
        if m:
            ck = dX.T @ w
            H[n : n + m, -1] = ck
            H[-1, n : n + m] = ck
        H[-1, -1] = w.sum()
    H[np.diag_indices(P)] += prec
    return H


def _init_vector(init: object, P: int, n: int) -> np.ndarray:
    if init is None:
        return np.zeros(P)
    v = init.params if isinstance(init, BTFit) else np.asarray(init, dtype=float).ravel()
    out = np.zeros(P)
    if v.shape[0] == P:
        out[:] = v
    elif v.shape[0] >= n:  # e.g. a naive fit (theta only) or a different covariate layout
        out[:n] = v[:n]
    else:
        raise ValueError(f"init: expected {P} (or at least {n}) values, got {v.shape[0]}")
    return out


def _fit_once(n, comparisons, Xa, m, position, lam, tau, x0):
    i, j, y, dX = _split(comparisons, Xa)
    prec = _prior_precision(n, m, position, lam, tau)
    res = optimize.minimize(_nlp, x0, args=(i, j, y, dX, n, m, position, prec), jac=True,
                            method="L-BFGS-B", options=_LBFGS_OPTIONS)
    z = res.x
    H = _hess(z, i, j, dX, n, m, position, prec)
    cov = linalg.cho_solve(linalg.cho_factor(H), np.eye(H.shape[0]))
    cov = 0.5 * (cov + cov.T)
    eta = _eta(z, i, j, dX, n, m, position)
    loglik = float(np.sum(y * eta - np.logaddexp(0.0, eta)))
    # L-BFGS-B may stop on "ABNORMAL" line searches at an optimum already reached;
    # judge convergence by the gradient itself.
    gnorm = float(np.max(np.abs(_nlp(z, i, j, y, dX, n, m, position, prec)[1]), initial=0.0))
    ok = bool(res.success or gnorm < 1e-5)
    return z, cov, loglik, ok, int(res.nit), str(res.message)


def fit_map(n_items: int, comparisons: Comparisons, X: Covariates | None = None,
            position: bool = True, lam: float = 1.0, tau: float = 1.0,
            init: BTFit | np.ndarray | None = None, hierarchical: bool = False,
            max_outer: int = 100, tau_floor: float = 1e-3) -> BTFit:
    """MAP of the bias-aware model (L-BFGS, analytic gradient) with its Laplace posterior.

    Ties (y = 0.5) count as half a win for each side. ``init`` warm-starts from a previous
    fit or parameter vector (a theta-only vector is padded with zeros). ``hierarchical``
    learns tau by empirical Bayes, alternating the MAP with
    tau^2 <- (sum c^2 + kappa^2 + sum Var c + Var kappa) / (M + 1)
    (an EM step under the Laplace approximation; floored at ``tau_floor``).
    """
    comparisons = as_comparisons(comparisons, n_items)
    Xa, m, P = _layout(n_items, X, position)
    x0 = _init_vector(init, P, n_items)
    if hierarchical and isinstance(init, BTFit) and init.c.shape[0] == m:
        tau = init.tau
    z, cov, ll, ok, nit, msg = _fit_once(n_items, comparisons, Xa, m, position, lam, tau, x0)
    nb = m + (1 if position else 0)
    if hierarchical and nb:
        for _ in range(max_outer):
            b = slice(n_items, P)
            t2 = float(np.sum(z[b] ** 2) + np.sum(np.diag(cov)[b])) / nb
            new_tau = max(np.sqrt(t2), tau_floor)
            done = abs(new_tau - tau) < 1e-4 * max(tau, 1e-3)
            tau = new_tau
            z, cov, ll, ok2, nit2, msg = _fit_once(n_items, comparisons, Xa, m, position, lam,
                                                   tau, z)
            ok, nit = ok and ok2, nit + nit2
            if done:
                break
    return BTFit(theta=z[:n_items].copy(), c=z[n_items : n_items + m].copy(),
                 kappa=float(z[-1]) if position else 0.0, cov=cov, loglik=ll, converged=ok,
                 lam=lam, tau=float(tau), position=position, n_iter=nit, message=msg)


def fit_naive(n_items: int, comparisons: Comparisons, lam: float = 1e-6,
              init: BTFit | np.ndarray | None = None) -> BTFit:
    """Plain Bradley-Terry: no covariates, no position term; ridge ``lam`` (tiny by default,
    only for identifiability) on theta. Ties count as half wins.

    Same objective as ``choix.opt_pairwise(..., alpha=lam / 2)`` (choix penalises
    alpha * sum theta^2, i.e. a prior of precision 2 * alpha).
    """
    return fit_map(n_items, comparisons, X=None, position=False, lam=lam, init=init)


def win_probability(fit: BTFit, i: np.ndarray, j: np.ndarray, X: Covariates | None = None,
                    include_bias: bool = True) -> np.ndarray:
    """P(first-shown i preferred over j) under the fit; ``include_bias=False`` gives the
    quality-only probability sigmoid(theta_i - theta_j)."""
    i = np.asarray(i, dtype=np.intp)
    j = np.asarray(j, dtype=np.intp)
    eta = fit.theta[i] - fit.theta[j]
    if include_bias:
        if fit.c.shape[0]:
            if X is None:
                raise ValueError("win_probability: the fit has covariates, pass X")
            Xa = np.asarray(X, dtype=float).reshape(fit.n_items, -1)
            eta = eta + (Xa[i] - Xa[j]) @ fit.c
        eta = eta + fit.kappa
    return special.expit(eta)
