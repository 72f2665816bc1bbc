"""Simulated judges with planted parameters, and helpers to evaluate against full data.

The simulated judge answers from a fixed full verdict matrix V (one Bernoulli draw per
ordered pair, seeded), like a recorded deterministic judge replayed offline:

    P(first-shown a preferred over b) = sigmoid(theta_a - theta_b + c (x_a - x_b) + kappa)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from judgeaudit.rank.controlled import build_controlled_pool


@dataclass
class SimPool:
    """Items with planted quality, covariates and the true top-k."""

    theta: np.ndarray  # (N,) planted quality
    X: np.ndarray  # (N, M) covariates the judge may be biased on
    k: int
    true_topk: np.ndarray
    name: str = "sim"

    @property
    def n_items(self) -> int:
        return int(self.theta.shape[0])


class SimOracle:
    """A judge with planted bias, answering from a seeded full verdict matrix.

    ``oracle(i, j, first)`` returns 1 if the first-shown item wins, 0 otherwise (no ties).
    """

    def __init__(self, theta: np.ndarray, X: np.ndarray | None = None, c: float | np.ndarray = 0.0,
                 kappa: float = 0.0, seed: int = 0) -> None:
        self.theta = np.asarray(theta, dtype=float)
        n = self.theta.shape[0]
        self.X = np.zeros((n, 0)) if X is None else np.asarray(X, float).reshape(n, -1)
        self.c = np.broadcast_to(np.asarray(c, dtype=float), (self.X.shape[1],)).copy()
        self.kappa = float(kappa)
        s = self.theta + self.X @ self.c
        self.prob = special.expit(s[:, None] - s[None, :] + self.kappa)
        rng = np.random.default_rng(seed)
        self.matrix = (rng.random((n, n)) < self.prob).astype(float)
        np.fill_diagonal(self.matrix, np.nan)
        self.calls = 0

    @property
    def n_items(self) -> int:
        return int(self.theta.shape[0])

    def __call__(self, i: int, j: int, first: int) -> float:
        if first not in (i, j) or i == j:
            raise ValueError(f"oracle: first={first} must be one of the two items ({i}, {j})")
        second = j if first == i else i
        self.calls += 1
        return float(self.matrix[first, second])

    def full_comparisons(self) -> np.ndarray:
        """Every ordered pair once: rows (first, second, y)."""
        a, b = np.nonzero(~np.eye(self.n_items, dtype=bool))
        return np.column_stack([a, b, self.matrix[a, b]]).astype(float)


UNITS: tuple[str, ...] = ("statement", "sd")


def controlled_sim_pool(seed: int = 0, n_items: int = 30, k: int = 5, scale: float = 1.0,
                        covariate: str = "verbosity", legit_noise: float = 0.5,
                        topic: str | None = None, unit: str = "statement",
                        design: str = "balanced") -> SimPool:
    """A controlled-benchmark pool with planted theta = scale * quality (centred).

    ``unit="statement"`` (default): ``scale`` logits per net true statement, so c* = 1 on
    the verbosity indicator means the judge values the elaboration as much as one true
    statement. ``unit="sd"``: theta = scale * standardised quality (the first version used
    scale = 1.2 here). ``covariate``: ``verbosity`` (the 0/1 elaboration switch, nearly
    uncorrelated with quality: a spurious cue) or ``legit`` (standardised quality plus
    N(0, legit_noise^2) noise: a covariate that truly carries quality).
    """
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}; expected one of {UNITS}")
    pool = build_controlled_pool(topic=topic, n_items=n_items, k=k, seed=seed, design=design)
    q = pool.quality
    theta = scale * (q - q.mean()) / (1.0 if unit == "statement" else q.std())
    if covariate == "verbosity":
        X = pool.verbosity[:, None]
    elif covariate == "legit":
        rng = np.random.default_rng([seed, 7])
        x = (q - q.mean()) / q.std() + legit_noise * rng.standard_normal(n_items)
        X = ((x - x.mean()) / x.std())[:, None]
    else:
        raise ValueError(f"unknown covariate {covariate!r}; expected 'verbosity' or 'legit'")
    return SimPool(theta=theta, X=X, k=k, true_topk=pool.true_topk,
                   name=f"controlled:{pool.topic}:{covariate}")


def random_pool(n_items: int, k: int, seed: int = 0, n_covariates: int = 1) -> SimPool:
    """Generic pool: theta ~ N(0, 1), binary covariates independent of theta."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n_items)
    X = (rng.random((n_items, n_covariates)) < 0.5).astype(float)
    return SimPool(theta=theta, X=X, k=k, true_topk=np.sort(np.argsort(-theta)[:k]),
                   name="random")


def trusted_pairs(theta: np.ndarray, n_pairs: int, seed: int = 0) -> np.ndarray:
    """``n_pairs`` random distinct pairs of items with different true quality, as rows
    (i, j, 1) with i the truly better item (the trusted labels for the gate)."""
    theta = np.asarray(theta, dtype=float)
    rng = np.random.default_rng(seed)
    a, b = np.triu_indices(theta.shape[0], 1)
    keep = theta[a] != theta[b]
    a, b = a[keep], b[keep]
    pick = rng.choice(a.shape[0], size=min(n_pairs, a.shape[0]), replace=False)
    i, j = a[pick], b[pick]
    win = np.where(theta[i] > theta[j], i, j)
    lose = np.where(theta[i] > theta[j], j, i)
    return np.column_stack([win, lose, np.ones_like(win)]).astype(float)


# ---- the trusted-anchor gate's two length pools (benchmarks/rank_gate.py, tests) --------------

# The controlled pool's design decides whether text length carries quality, the `sim` judge's
# `length` coefficient whether the judge rewards length beyond it:
# - legitimate: the classic design (longer answers carry more true statements, corr(quality,
#   length) ~0.5) judged without any length bias;
# - spurious: the balanced design (length unrelated to quality, |corr| < 0.12) judged by a
#   judge that prefers longer answers (length = 2 logits per log-ratio of word counts).
GATE_POOLS: dict[str, dict[str, float | str]] = {
    "legitimate": {"design": "classic", "length": 0.0},
    "spurious": {"design": "balanced", "length": 2.0},
}


def gate_pool_spec(design: str, seed: int, n_items: int = 30, k: int = 5) -> str:
    """The pool spec of a gate pool (`judgeaudit.rank.pool.load_pool`)."""
    return f"builtin:controlled?seed={seed}&n={n_items}&k={k}&design={design}"


def sim_judge_spec(length: float, seed: int, quality: float = 1.0,
                   position: float = 0.3) -> str:
    """The `sim` judge of a gate pool: `quality` logits per net true statement, `length`
    logits per log-ratio of (1 + words), `position` logits for the first-shown answer."""
    return f"sim?quality={quality:g}&length={length:g}&position={position:g}&seed={seed}"


def sim_judge_oracle(quality: np.ndarray, length_x: np.ndarray, length: float, seed: int,
                     quality_coef: float = 1.0, position: float = 0.3) -> SimOracle:
    """The `sim` judge's pairwise model as a seeded verdict matrix (same probabilities,
    P(first preferred) = sigmoid(quality_coef * (q_a - q_b) + length * (x_a - x_b) +
    position) with x = log(1 + words), the pool's `length` covariate; its own draws)."""
    q = np.asarray(quality, dtype=float)
    return SimOracle(quality_coef * (q - q.mean()), np.asarray(length_x, float).reshape(-1, 1),
                     c=length, kappa=position, seed=seed)
