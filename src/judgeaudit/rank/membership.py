"""Top-k membership probabilities p_i = P(item i in the top k) by Monte-Carlo from the Laplace
posterior N(theta_hat, Sigma_theta)."""

from __future__ import annotations

import numpy as np


def centered_cov(cov: np.ndarray) -> np.ndarray:
    """C Sigma C with C = I - 11'/N: drops the common shift, to which rankings are blind.

    A tiny ridge (fit_naive) leaves a huge variance along that direction; removing it keeps
    the Cholesky factor well conditioned without changing the distribution of rankings.
    """
    mean_row = cov.mean(axis=0)
    return cov - mean_row[None, :] - mean_row[:, None] + cov.mean()


def _factor(cov: np.ndarray) -> np.ndarray:
    s = centered_cov(cov)
    n = s.shape[0]
    jitter = 1e-10 * max(float(np.trace(s)) / max(n, 1), 1e-12)
    # the centred matrix is singular (rank N-1): add jitter before Cholesky, fall back to eigh
    try:
        return np.linalg.cholesky(s + jitter * np.eye(n))
    except np.linalg.LinAlgError:
        w, v = np.linalg.eigh(s)
        return v * np.sqrt(np.clip(w, 0.0, None))


def sample_theta(theta: np.ndarray, cov: np.ndarray, n_samples: int = 1500,
                 seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """(S, N) draws of theta (common shift removed)."""
    rng = np.random.default_rng(seed)
    L = _factor(np.asarray(cov, dtype=float))
    z = rng.standard_normal((n_samples, theta.shape[0]))
    return np.asarray(theta, dtype=float)[None, :] + z @ L.T


def topk_membership(theta: np.ndarray, cov: np.ndarray, k: int, n_samples: int = 1500,
                    seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """P(i in top k) for every item, seeded Monte-Carlo with ``n_samples`` draws."""
    theta = np.asarray(theta, dtype=float)
    n = theta.shape[0]
    if not 0 < k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    if cov.shape != (n, n):
        raise ValueError(f"cov: expected shape ({n}, {n}), got {cov.shape}")
    if k == n:
        return np.ones(n)
    draws = sample_theta(theta, cov, n_samples, seed)
    top = np.argpartition(-draws, k - 1, axis=1)[:, :k]
    return np.bincount(top.ravel(), minlength=n) / float(n_samples)


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """H(p) in nats, 0 at p in {0, 1}."""
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(p * np.log(p) + (1 - p) * np.log1p(-p))
    return np.nan_to_num(h, nan=0.0)


def topk_set(theta: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values (ties broken by index)."""
    order = np.lexsort((np.arange(len(theta)), -np.asarray(theta, dtype=float)))
    return np.sort(order[:k])


def recall_at_k(theta_hat: np.ndarray, true_topk: np.ndarray, k: int | None = None) -> float:
    """|top-k(theta_hat) ∩ true top-k| / k."""
    true_topk = np.asarray(true_topk, dtype=int)
    k = len(true_topk) if k is None else k
    return len(np.intersect1d(topk_set(theta_hat, k), true_topk)) / float(k)
