"""What every acquisition rule sees, and the one signature they share:

    rule(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray

scores (higher = ask sooner) for the candidate pairs (a[t], b[t]), vectorised.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from judgeaudit.rank.membership import (
    binary_entropy,
    membership_from_draws,
    precision_noise,
    shifted_draws,
    topk_membership_grouped,
)

Rule = Callable[["AcquisitionContext", np.ndarray, np.ndarray], np.ndarray]


@dataclass
class AcquisitionContext:
    """Posterior summary of the model driving acquisition.

    ``cov`` is the full Laplace covariance over ``[theta, c, kappa?]`` (the loop updates it
    in place between refits); ``shift`` is X @ c (the judge's covariate bias per item);
    ``groups`` (optional) assigns items to prompts, each with its own top-k.
    Membership probabilities are computed lazily, so rules that do not use them do not pay
    for the Monte-Carlo. ``factor`` (optional, set by the active loop) is M = L^-1 of the
    posterior precision H = L L^T (judgeaudit.stats.bt_posterior.dense_inverse_factor): the
    membership draws are then taken as M^T z (the same Gaussian as from ``cov``, without
    factoring it again); it describes the posterior the context was made with (before any
    in-place update of ``cov``). ``noise`` (S, P): zero-mean draws of every parameter from
    that posterior, made from ``factor`` on first use or handed over by the loop from the
    previous context (judgeaudit.rank.loop: a carried context), which keeps them current
    with ``cov`` as comparisons are added; the membership draws are ``theta + noise``.
    """

    theta: np.ndarray
    cov: np.ndarray
    k: int
    shift: np.ndarray
    kappa: float = 0.0
    item_counts: np.ndarray | None = None
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    n_samples: int = 1500
    membership_seed: int = 0
    groups: np.ndarray | None = None  # item -> prompt group; top-k is per group
    factor: np.ndarray | None = None
    noise: np.ndarray | None = None
    _membership: np.ndarray | None = None
    _item_entropy: np.ndarray | None = None
    _location: np.ndarray | None = None

    @property
    def n_items(self) -> int:
        return int(self.theta.shape[0])

    @property
    def membership(self) -> np.ndarray:
        if self._membership is None:
            n = self.n_items
            if self.noise is None and self.factor is not None:
                self.noise = precision_noise(self.factor, self.n_samples,
                                             self.membership_seed, antithetic=True)
            if self.noise is not None:
                self._membership = membership_from_draws(shifted_draws(self.theta, self.noise),
                                                         self.k, self.groups)
            else:
                self._membership = topk_membership_grouped(self.theta, self.cov[:n, :n],
                                                           self.k, self.groups,
                                                           self.n_samples,
                                                           self.membership_seed)
        return self._membership

    @property
    def item_entropy(self) -> np.ndarray:
        """H(membership) per item (nats)."""
        if self._item_entropy is None:
            self._item_entropy = binary_entropy(self.membership)
        return self._item_entropy

    def var_diff(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Posterior Var(theta_a - theta_b)."""
        cov = self.cov
        d = np.diag(cov)
        if cov.flags.c_contiguous:  # cov[a, b] through the flat index: one gather
            off = np.take(cov.reshape(-1), np.asarray(a, np.intp) * cov.shape[1] + b)
        else:
            off = cov[a, b]
        off *= -2.0
        off += d[a]
        off += d[b]
        return np.maximum(off, 0.0, out=off)

    def outcome_variance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """p_ab (1 - p_ab) of the judge's verdict, averaged over the two presentation orders
        (the order is drawn at random after the pair is chosen)."""
        if self._location is None:
            self._location = np.asarray(self.theta, float) + np.asarray(self.shift, float)
        t = self._location
        # p (1 - p) = 1 / (2 + e^x + e^-x) at x = d + kappa and d - kappa: one vectorised
        # exp instead of two expit passes (and exact where 1 - expit(x) cancels, x >> 0)
        ek = math.exp(self.kappa)
        with np.errstate(over="ignore", divide="ignore"):
            e = np.exp(t[a] - t[b])
            e1 = e * ek
            inv = np.reciprocal(e1)
            q1 = e1
            q1 += inv
            q1 += 2.0
            np.reciprocal(q1, out=q1)
            e /= ek
            inv *= ek * ek
            e += inv
            e += 2.0
            np.reciprocal(e, out=e)
        q1 += e
        q1 *= 0.5
        return q1

    def entropy(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        h = self.item_entropy
        return h[a] + h[b]
