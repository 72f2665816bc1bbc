"""What every acquisition rule sees, and the one signature they share:

    rule(ctx: AcquisitionContext, a: np.ndarray, b: np.ndarray) -> np.ndarray

scores (higher = ask sooner) for the candidate pairs (a[t], b[t]), vectorised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from judgeaudit.rank.membership import binary_entropy, topk_membership_grouped

Rule = Callable[["AcquisitionContext", np.ndarray, np.ndarray], np.ndarray]


@dataclass
class AcquisitionContext:
    """Posterior summary of the model driving acquisition.

    ``cov`` is the full Laplace covariance over ``[theta, c, kappa?]`` (the loop updates it
    in place between refits); ``shift`` is X @ c (the judge's covariate bias per item);
    ``groups`` (optional) assigns items to prompts, each with its own top-k.
    Membership probabilities are computed lazily, so rules that do not use them do not pay
    for the Monte-Carlo.
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
    _membership: np.ndarray | None = None

    @property
    def n_items(self) -> int:
        return int(self.theta.shape[0])

    @property
    def membership(self) -> np.ndarray:
        if self._membership is None:
            n = self.n_items
            self._membership = topk_membership_grouped(self.theta, self.cov[:n, :n], self.k,
                                                       self.groups, self.n_samples,
                                                       self.membership_seed)
        return self._membership

    def var_diff(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Posterior Var(theta_a - theta_b)."""
        d = np.diag(self.cov)
        return np.maximum(d[a] + d[b] - 2.0 * self.cov[a, b], 0.0)

    def outcome_variance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """p_ab (1 - p_ab) of the judge's verdict, averaged over the two presentation orders
        (the order is drawn at random after the pair is chosen)."""
        d = self.theta[a] - self.theta[b] + self.shift[a] - self.shift[b]
        p1 = special.expit(d + self.kappa)
        p2 = special.expit(d - self.kappa)
        return 0.5 * (p1 * (1 - p1) + p2 * (1 - p2))

    def entropy(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        h = binary_entropy(self.membership)
        return h[a] + h[b]
