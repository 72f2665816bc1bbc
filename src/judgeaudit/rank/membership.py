"""Top-k membership probabilities p_i = P(item i in the top k) by Monte-Carlo from the Laplace
posterior N(theta_hat, Sigma_theta)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import blas


def centered_cov(cov: np.ndarray) -> np.ndarray:
    """C Sigma C with C = I - 11'/N: drops the common shift, to which rankings are blind.

    A tiny ridge (fit_naive) leaves a huge variance along that direction; removing it keeps
    the Cholesky factor well conditioned without changing the distribution of rankings.
    """
    mean_row = cov.mean(axis=0)
    return cov - mean_row[None, :] - mean_row[:, None] + cov.mean()


def _factor(cov: np.ndarray) -> np.ndarray:
    return _factor_tri(cov)[0]


def _factor_tri(cov: np.ndarray) -> tuple[np.ndarray, bool]:
    """A factor L with L L^T = centered cov (+ jitter), and whether it is lower triangular."""
    s = centered_cov(cov)
    n = s.shape[0]
    jitter = 1e-10 * max(float(np.trace(s)) / max(n, 1), 1e-12)
    # the centred matrix is singular (rank N-1): add jitter before Cholesky, fall back to eigh
    s[np.diag_indices(n)] += jitter
    try:
        return np.linalg.cholesky(s), True
    except np.linalg.LinAlgError:
        s[np.diag_indices(n)] -= jitter
        w, v = np.linalg.eigh(s)
        return v * np.sqrt(np.clip(w, 0.0, None)), False


def sample_theta(theta: np.ndarray, cov: np.ndarray, n_samples: int = 1500,
                 seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """(S, N) draws of theta (common shift removed)."""
    rng = np.random.default_rng(seed)
    L = _factor(np.asarray(cov, dtype=float))
    z = rng.standard_normal((n_samples, theta.shape[0]))
    return np.asarray(theta, dtype=float)[None, :] + z @ L.T


def _draws32(theta: np.ndarray, cov: np.ndarray, n_samples: int,
              seed: int | np.random.Generator | None) -> np.ndarray:
    """The draws of ``sample_theta`` (same seed, same normals, same factor) with the product
    in float32: the membership counts only need the order of the draws, the matmul is the
    step's largest cost, and float32 rounding (1e-7) is far below the Monte-Carlo error."""
    rng = np.random.default_rng(seed)
    L, tri = _factor_tri(np.asarray(cov, dtype=float))
    z = rng.standard_normal((n_samples, theta.shape[0])).astype(np.float32)
    L32 = L.astype(np.float32)
    if tri and z.size:  # z @ L.T with a triangular L: half the flops of a full product
        out = blas.strmm(1.0, L32, z, side=1, lower=1, trans_a=1, overwrite_b=1)
    else:
        out = z @ L32.T
    out += np.asarray(theta, dtype=np.float32)[None, :]
    return out


def precision_noise(M: np.ndarray, n_samples: int = 1500,
                    seed: int | np.random.Generator | None = 0,
                    antithetic: bool = False) -> np.ndarray:
    """(S, P) zero-mean draws of every parameter from the factor M = L^-1 of the posterior
    precision (judgeaudit.stats.bt_posterior.dense_inverse_factor; H = L L^T over P = N + nb
    parameters): x = M^T z has covariance H^-1. In the dtype of M (float32 when the inverse
    was computed in float32). ``antithetic``: the second half of the rows is minus the first
    (they reuse its normals)."""
    P = M.shape[0]
    rng = np.random.default_rng(seed)
    half = (n_samples + 1) // 2 if antithetic else n_samples
    z = rng.standard_normal((half, P), dtype=M.dtype)
    if z.size:
        trmm = blas.get_blas_funcs("trmm", (M,))
        # rows of z times M = (M^T z^T)^T: z^T is Fortran-ordered, no copy
        z = trmm(1.0, M, z.T, side=0, lower=1, trans_a=1, overwrite_b=1).T
    if not antithetic:
        return z
    out = np.empty((n_samples, P), dtype=M.dtype)
    out[:half] = z
    np.negative(z[: n_samples - half], out=out[half:])
    return out


def precision_draws(theta: np.ndarray, M: np.ndarray, n_samples: int = 1500,
                    seed: int | np.random.Generator | None = 0,
                    antithetic: bool = False) -> np.ndarray:
    """(S, N) draws of theta: ``theta`` plus the first N columns of ``precision_noise``. Same
    distribution as ``sample_theta`` with the covariance, without forming a factor of it."""
    theta = np.asarray(theta, dtype=float)
    return shifted_draws(theta, precision_noise(M, n_samples, seed, antithetic))


def shifted_draws(theta: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """theta + the first N columns of zero-mean draws ``noise`` (S, P >= N), in its dtype."""
    n = np.asarray(theta).shape[0]
    out = noise[:, :n] + np.asarray(theta, dtype=noise.dtype)[None, :]
    return out


def membership_from_draws(draws: np.ndarray, k: int, groups: np.ndarray | None = None
                          ) -> np.ndarray:
    """P(i in (its group's) top k) as the fraction of the rows of ``draws`` (S, N) that put
    it there (k per group by ``group_k``)."""
    S, n = draws.shape
    if groups is None:
        if not 0 < k <= n:
            raise ValueError(f"k must be in 1..{n}, got {k}")
        if k == n:
            return np.ones(n)
        top = np.argpartition(draws, n - k, axis=1)[:, n - k :]  # the k largest per row
        return np.bincount(top.ravel(), minlength=n) / float(S)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    p = np.zeros(n)
    for idx in group_index(groups, n):
        kg = group_k(k, idx.shape[0])
        if kg == 0:
            continue
        m = idx.shape[0]
        top = np.argpartition(draws[:, idx], m - kg, axis=1)[:, m - kg :]
        p[idx] = np.bincount(top.ravel(), minlength=m) / float(S)
    return p


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
    draws = _draws32(theta, cov, n_samples, seed)
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


def group_index(groups: np.ndarray | None, n: int) -> list[np.ndarray]:
    """Item indices per group (one group of all items when ``groups`` is None), in order of
    first appearance."""
    if groups is None:
        return [np.arange(n)]
    g = np.asarray(groups)
    if g.shape != (n,):
        raise ValueError(f"groups: expected {n} labels (one per item), got shape {g.shape}")
    _, first, inv = np.unique(g, return_index=True, return_inverse=True)
    return [np.nonzero(inv == u)[0] for u in np.argsort(first)]


def group_k(k: int, size: int) -> int:
    """k within a group: min(k, group size - 1), so a group of two still has a top-1 and a
    group never puts every item in its top-k; singletons (nothing to rank) get 0."""
    return max(min(k, size - 1), 0) if size > 1 else 0


def topk_membership_grouped(theta: np.ndarray, cov: np.ndarray, k: int,
                            groups: np.ndarray | None, n_samples: int = 1500,
                            seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """P(i in its group's top k) (k per group by ``group_k``), from one set of joint draws.

    Items are compared only within their group (several prompts in one pool), so only
    within-group rankings mean anything; without groups this is ``topk_membership``.
    """
    theta = np.asarray(theta, dtype=float)
    n = theta.shape[0]
    if groups is None:
        return topk_membership(theta, cov, k, n_samples, seed)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    draws = _draws32(theta, cov, n_samples, seed)
    p = np.zeros(n)
    for idx in group_index(groups, n):
        kg = group_k(k, idx.shape[0])
        if kg == 0:
            continue
        top = np.argpartition(-draws[:, idx], kg - 1, axis=1)[:, :kg]
        p[idx] = np.bincount(top.ravel(), minlength=idx.shape[0]) / float(n_samples)
    return p


def topk_set_grouped(theta: np.ndarray, k: int, groups: np.ndarray | None) -> np.ndarray:
    """Indices of each group's top k (``group_k``), sorted."""
    theta = np.asarray(theta, dtype=float)
    if groups is None:
        return topk_set(theta, k)
    out = [idx[topk_set(theta[idx], group_k(k, idx.shape[0]))]
           for idx in group_index(groups, theta.shape[0]) if group_k(k, idx.shape[0])]
    return np.sort(np.concatenate(out)) if out else np.zeros(0, dtype=int)


def recall_grouped(theta_hat: np.ndarray, true_topk: np.ndarray, k: int,
                   groups: np.ndarray | None) -> float:
    """Pooled recall: hits over all groups / total size of the true top-k sets."""
    if groups is None:
        return recall_at_k(theta_hat, true_topk, k)
    true_topk = np.asarray(true_topk, dtype=int)
    if true_topk.size == 0:
        raise ValueError("recall: empty true top-k")
    hits = np.intersect1d(topk_set_grouped(theta_hat, k, groups), true_topk).size
    return hits / float(true_topk.size)


def recall_ties(theta_hat: np.ndarray, quality: np.ndarray, k: int,
                groups: np.ndarray | None) -> float:
    """Pooled recall where items tied in true quality at a group's k-th place are
    interchangeable: the best recall over every way of breaking that tie. Per group, a pick
    above the k-th quality always hits; picks at exactly the k-th quality hit up to the
    places left for them. Equals ``recall_grouped`` when no group's top k is tied."""
    theta_hat, quality = np.asarray(theta_hat, dtype=float), np.asarray(quality, dtype=float)
    hits = total = 0
    for idx in group_index(groups, theta_hat.shape[0]):
        kg = group_k(k, idx.shape[0]) if groups is not None else min(k, idx.shape[0])
        if kg == 0:
            continue
        q = quality[idx]
        q_k = np.sort(q)[::-1][kg - 1]
        picked = q[topk_set(theta_hat[idx], kg)]
        above = int(np.sum(picked > q_k))
        at_k = int(np.sum(picked == q_k))
        hits += above + min(at_k, kg - int(np.sum(q > q_k)))
        total += kg
    if total == 0:
        raise ValueError("recall: empty true top-k")
    return hits / float(total)


# z of the screen in ``topk_membership_screened``: an item left out would be in its group's
# top k with probability at most Phi(-z) plus k Phi(-z) for the reference items, 1e-9 each
SCREEN_Z = 6.0


def screen_topk(theta: np.ndarray, sd: np.ndarray, k: int, groups: np.ndarray | None,
                z: float = SCREEN_Z) -> np.ndarray:
    """Items that can be in their group's top k: theta_i + z sd_i at least the group's
    (k)-th largest theta_j - z sd_j. An item screened out is in the top k only if its draw
    exceeds theta_i + z sd_i or one of the k reference items falls below theta_j - z sd_j:
    probability at most (k + 1) Phi(-z) (1.1e-8 at z = 6, k = 10)."""
    theta = np.asarray(theta, dtype=float)
    n = theta.shape[0]
    keep = np.zeros(n, dtype=bool)
    for idx in group_index(groups, n):
        kg = group_k(k, idx.shape[0]) if groups is not None else min(k, idx.shape[0])
        if kg == 0:
            continue
        lo = theta[idx] - z * sd[idx]
        t = np.partition(lo, idx.shape[0] - kg)[idx.shape[0] - kg]
        keep[idx] = theta[idx] + z * sd[idx] >= t
    return keep


def topk_membership_screened(theta: np.ndarray, sd: np.ndarray, k: int,
                             groups: np.ndarray | None,
                             cov_of: Callable[[np.ndarray], np.ndarray],
                             n_samples: int = 1500,
                             seed: int | np.random.Generator | None = 0,
                             z: float = SCREEN_Z) -> np.ndarray:
    """P(i in its group's top k) from joint draws of only the items ``screen_topk`` keeps
    (the marginal of the Laplace posterior on them, ``cov_of(items)``: their covariance);
    the others get 0 (their probability is below (k + 1) Phi(-z), see ``screen_topk``). For
    a large posterior held sparse (no N x N covariance): the draws are |kept| wide."""
    theta = np.asarray(theta, dtype=float)
    n = theta.shape[0]
    if groups is None and not 0 < k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    keep = screen_topk(theta, np.asarray(sd, dtype=float), k, groups, z)
    S = np.nonzero(keep)[0]
    p = np.zeros(n)
    if S.size == 0:
        return p
    pos = np.full(n, -1)
    pos[S] = np.arange(S.size)
    draws = _draws32(theta[S], np.asarray(cov_of(S), dtype=float), n_samples, seed)
    for idx in group_index(groups, n):
        kg = group_k(k, idx.shape[0]) if groups is not None else min(k, idx.shape[0])
        cols = pos[idx[keep[idx]]]
        if kg == 0 or cols.size == 0:
            continue
        if cols.size <= kg:  # every kept item is in the top k
            p[S[cols]] = 1.0
            continue
        m = cols.size
        top = np.argpartition(draws[:, cols], m - kg, axis=1)[:, m - kg :]
        p[S[cols]] = np.bincount(top.ravel(), minlength=m) / float(n_samples)
    return p
