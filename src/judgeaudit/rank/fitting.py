"""The two ranking models behind one call, with an optional empirical-Bayes prior scale.

`naive`: plain Bradley-Terry (ridge `lam` on theta). `bias_aware`: covariates and position
term (judgeaudit.stats.bradley_terry.fit_map).

Empirical Bayes for lam (`eb_lam=True`): the prior theta ~ N(0, 1/lam) should match how far
apart the judge puts the items, which is unknown before judging (a judge one logit apart per
quality step and one five logits apart need very different priors). Alternating the MAP with
the EM step 1/lam <- mean_i(theta_i^2 + Var theta_i) (Laplace posterior) learns it per pool.
A prior far too tight squeezes theta and attenuates c and kappa, so their intervals miss the
truth (sim judge with 3 logits per quality step: coverage of c 0.47, of kappa 0.53 at lam = 1;
1.00 and 0.90 with EB, same recall). lam is floored at `lam_floor` (theta sd <= 10 logits)
because verdicts that are perfectly consistent would push it to 0.
"""

from __future__ import annotations

import numpy as np

from judgeaudit.stats.bradley_terry import BTFit, fit_map, fit_naive

MODELS: tuple[str, ...] = ("naive", "bias_aware")


def _once(model: str, n: int, comps: np.ndarray, X: np.ndarray | None, lam: float,
          tau: float, hierarchical: bool, init: BTFit | None) -> BTFit:
    if model == "naive":
        return fit_naive(n, comps, lam=lam, init=init)
    if model == "bias_aware":
        return fit_map(n, comps, X=X, position=True, lam=lam, tau=tau, init=init,
                       hierarchical=hierarchical)
    raise ValueError(f"unknown model {model!r}; expected one of {MODELS}")


def fit_model(model: str, n_items: int, comparisons: np.ndarray, X: np.ndarray | None = None,
              lam: float = 1.0, tau: float = 1.0, hierarchical: bool = False,
              init: BTFit | None = None, eb_lam: bool = False, lam_floor: float = 0.01,
              max_outer: int = 50, rtol: float = 1e-3) -> BTFit:
    """Fit ``model``; with ``eb_lam`` learn lam by EM, starting from ``init.lam`` when
    warm-started (else ``lam``)."""
    if not eb_lam:
        return _once(model, n_items, comparisons, X, lam, tau, hierarchical, init)
    cur = init.lam if isinstance(init, BTFit) else lam
    fit = _once(model, n_items, comparisons, X, cur, tau, hierarchical, init)
    for _ in range(max_outer):
        second = float(np.sum(fit.theta ** 2 + np.clip(np.diag(fit.theta_cov), 0.0, None)))
        new = max(n_items / second, lam_floor)
        done = abs(new - cur) <= rtol * cur
        cur = new
        fit = _once(model, n_items, comparisons, X, cur, tau, hierarchical, fit)
        if done:
            break
    return fit
