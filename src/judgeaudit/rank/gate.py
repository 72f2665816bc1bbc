"""Trusted-anchor gate: use the covariate correction only when a few trusted labels say it
helps. Blind debiasing is harmful when a covariate truly carries quality (longer answers
that are longer because they say more): the bias-aware model then subtracts real quality."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judgeaudit.stats.bradley_terry import BTFit


def trusted_agreement(theta: np.ndarray, trusted: np.ndarray) -> float:
    """Fraction of trusted pairs (rows i, j, y; y = 1 means i truly better, 0 j, 0.5 skipped)
    that ``theta`` orders the same way (exact ties in theta count half)."""
    t = np.asarray(trusted, dtype=float).reshape(-1, 3)
    t = t[t[:, 2] != 0.5]
    if t.shape[0] == 0:
        raise ValueError("trusted pairs: need at least one pair with a strict preference")
    i, j, y = t[:, 0].astype(int), t[:, 1].astype(int), t[:, 2]
    d = np.asarray(theta, float)[i] - np.asarray(theta, float)[j]
    agree = np.where(d == 0, 0.5, ((d > 0) == (y == 1.0)).astype(float))
    return float(agree.mean())


@dataclass(frozen=True)
class GateDecision:
    enabled: bool  # use the bias-aware ranking
    agree_naive: float
    agree_bias_aware: float
    n_trusted: int

    def choose(self, naive: BTFit, bias_aware: BTFit) -> BTFit:
        return bias_aware if self.enabled else naive


def anchor_gate(naive: BTFit, bias_aware: BTFit, trusted: np.ndarray) -> GateDecision:
    """Enable the correction iff the bias-aware thetas agree with the trusted pairs at least
    as well as the naive ones."""
    an = trusted_agreement(naive.theta, trusted)
    ab = trusted_agreement(bias_aware.theta, trusted)
    n = int(np.sum(np.asarray(trusted, float).reshape(-1, 3)[:, 2] != 0.5))
    return GateDecision(enabled=ab >= an, agree_naive=an, agree_bias_aware=ab, n_trusted=n)
