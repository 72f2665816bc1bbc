"""Logistic regression by Newton-Raphson (IRLS) with Wald standard errors.

Used to relate judge verdicts to item features (bias factors, length) where a tie is half a
win: y may be fractional in [0, 1]. With fractional y the fit maximises the Bernoulli
quasi-likelihood sum w_i [y_i log p_i + (1 - y_i) log(1 - p_i)] (Wedderburn 1974; Papke &
Wooldridge 1996); coefficients are consistent for E[y | x] and the standard errors are the
model-based ones from the Fisher information, as in statsmodels' GLM Binomial.

X is used as given: add an intercept column yourself (`add_constant`), as in statsmodels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

Design = np.ndarray  # (n, k) float design matrix, one row per observation


@dataclass(frozen=True)
class LogisticFit:
    """coef, se and cov are over the columns of X; loglik excludes the l2 penalty."""

    coef: np.ndarray
    se: np.ndarray
    cov: np.ndarray
    loglik: float
    converged: bool
    n_iter: int = 0

    @property
    def z(self) -> np.ndarray:
        """Wald statistics coef / se."""
        return self.coef / self.se

    @property
    def pvalues(self) -> np.ndarray:
        """Two-sided Wald p-values, 2 * (1 - Phi(|z|))."""
        return 2.0 * special.ndtr(-np.abs(self.z))

    def predict(self, X: Any, offset: Any = None) -> np.ndarray:
        """P(y = 1 | x) = sigmoid(X coef + offset)."""
        eta = _design(X) @ self.coef
        return special.expit(eta if offset is None else eta + np.asarray(offset, dtype=float))


def add_constant(X: Any) -> Design:
    """X with a leading column of ones (the intercept is then coef[0])."""
    x = _design(X)
    return np.column_stack([np.ones(x.shape[0]), x])


def _design(X: Any) -> Design:
    x = np.asarray(X, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"fit_logistic: X must be 2-D (n, k), got shape {x.shape}")
    return x


def _vector(v: Any, n: int, name: str) -> np.ndarray:
    a = np.asarray(v, dtype=float).ravel()
    if a.size != n:
        raise ValueError(f"fit_logistic: {name} has {a.size} entries, X has {n} rows")
    if not np.all(np.isfinite(a)):
        bad = int(np.nonzero(~np.isfinite(a))[0][0])
        raise ValueError(f"fit_logistic: {name}[{bad}] is not finite ({a[bad]})")
    return a


def _loglik(eta: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    # y log p + (1 - y) log(1 - p) = y * eta - log(1 + e^eta), stable for large |eta|.
    return float(np.sum(w * (y * eta - np.logaddexp(0.0, eta))))


def fit_logistic(
    X: Any,
    y: Any,
    weights: Any = None,
    l2: float | Any = 0.0,
    offset: Any = None,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> LogisticFit:
    """Fit P(y = 1 | x) = sigmoid(x . coef + offset) by Newton-Raphson with step halving.

    weights: non-negative frequency weights (as GLM freq_weights). l2: ridge penalty
    (l2 / 2) * sum(coef_j^2), a scalar or one value per column (give 0 for the intercept to
    leave it free); with l2 > 0 the fit is the MAP under a N(0, 1/l2) prior and cov is the
    inverse of the penalised information (Laplace). cov = (X' W X + diag(l2))^-1 with
    W = diag(w p (1 - p)) at the optimum. converged is False when the steps have not
    shrunk below `tol` after `max_iter` iterations, typically under (quasi-)separation, where
    the maximum-likelihood coefficients are infinite; add l2 > 0 then.
    """
    x = _design(X)
    n, k = x.shape
    if not np.all(np.isfinite(x)):
        row = int(np.nonzero(~np.isfinite(x).all(axis=1))[0][0])
        raise ValueError(f"fit_logistic: X row {row} is not finite")
    yv = _vector(y, n, "y")
    if np.any((yv < 0) | (yv > 1)):
        bad = int(np.nonzero((yv < 0) | (yv > 1))[0][0])
        raise ValueError(f"fit_logistic: y[{bad}] = {yv[bad]} is outside [0, 1]")
    w = np.ones(n) if weights is None else _vector(weights, n, "weights")
    if np.any(w < 0):
        raise ValueError("fit_logistic: weights must be non-negative")
    off = np.zeros(n) if offset is None else _vector(offset, n, "offset")
    pen = np.broadcast_to(np.asarray(l2, dtype=float), (k,)).copy()
    if np.any(pen < 0) or not np.all(np.isfinite(pen)):
        raise ValueError(f"fit_logistic: l2 must be finite and >= 0, got {l2!r}")
    info0 = (x * w[:, None]).T @ x + np.diag(pen)
    if np.linalg.matrix_rank(info0) < k:
        raise ValueError(f"fit_logistic: the design has rank < {k} (collinear or all-zero "
                         "columns, or zero-weight rows only); drop columns or add l2 > 0")

    def objective(b: np.ndarray) -> float:
        return _loglik(x @ b + off, yv, w) - 0.5 * float(np.sum(pen * b * b))

    beta = np.zeros(k)
    obj = objective(beta)
    converged, it = False, 0
    for it in range(1, max_iter + 1):  # noqa: B007 - it is reported
        p = special.expit(x @ beta + off)
        grad = x.T @ (w * (yv - p)) - pen * beta
        info = (x * (w * p * (1.0 - p))[:, None]).T @ x + np.diag(pen)
        try:
            step = np.linalg.solve(info, grad)
        except np.linalg.LinAlgError:
            break
        t = 1.0
        while True:  # step halving keeps the (concave) objective increasing
            cand = beta + t * step
            new = objective(cand)
            if new >= obj - 1e-12 * abs(obj) or t < 1e-10:
                break
            t /= 2.0
        beta, obj = cand, new
        if np.max(np.abs(t * step)) < tol * (1.0 + np.max(np.abs(beta))):
            converged = True
            break
    p = special.expit(x @ beta + off)
    info = (x * (w * p * (1.0 - p))[:, None]).T @ x + np.diag(pen)
    cov = np.linalg.pinv(info, hermitian=True)
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return LogisticFit(beta, se, cov, _loglik(x @ beta + off, yv, w), converged, it)

