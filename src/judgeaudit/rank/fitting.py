"""The two ranking models behind one call, with an optional empirical-Bayes prior scale.

`naive`: plain Bradley-Terry (ridge `lam` on theta). `bias_aware`: covariates and position
term (judgeaudit.stats.bradley_terry.fit_map).

Empirical Bayes for lam (`eb_lam=True`): the prior theta ~ N(0, 1/lam) should match how far
apart the judge puts the items, which is unknown before judging (a judge one logit apart per
quality step and one five logits apart need very different priors). A prior far too tight
squeezes theta and attenuates c and kappa, so their intervals miss the truth. Measured
(rank-eval's full-data fits, one verdict per ordered pair, builtin:controlled, 20 seeds,
sim judge with 3 logits per quality step, planted length bias 3 and position 0.5): at
lam = 1 kappa 0.15, covering 0.5 in 0.00 of seeds (c 1.11, sd 0.30, covering 3 in 0.00);
with EB kappa 0.35, coverage 0.90, and c 0.77, sd 0.85, marked mostly the prior in 20 of 20
(bias-aware full-data recall 0.99 at lam = 1, 0.88 with EB: the tight prior's larger c
corrects more of this planted bias). Planted position 0.5 alone: kappa 0.17 (coverage 0.05)
at lam = 1, 0.37 (0.80) with EB, recall 1.00 both.
lam is kept within [`lam_floor`, `lam_ceiling`] (theta sd between 0.1 and 10 logits):
verdicts that are perfectly consistent would push it to 0, and verdicts that show no spread
at all (many ties) to infinity.

Two ways to learn lam (`eb_method`; None: `EB_METHOD`):
- "em" (default): the fixed point of the EM step 1/lam <- mean_i(theta_i^2 + Var theta_i)
  (Laplace posterior) alternated with the MAP, found by a safeguarded secant iteration on
  log lam (each iterate one warm-started MAP fit), not by repeating the EM step: EM
  converges linearly at the rate of the missing information, slow exactly when the data say
  little (early in an active run, or when half the verdicts are ties). A few fits.
- "auto": lam maximising the Laplace evidence (stats.bradley_terry.evidence_lam; warm,
  bracketed near the previous lam) up to DENSE_MAX parameters, "em" above ("evidence":
  the evidence at any size). With few comparisons and a sharp judge the EM fixed point is
  far too tight (EM drops how the Hessian moves with the MAP): sim judge with length bias 3
  on builtin:controlled at 100 active comparisons, EM lam 0.29-0.44 against a true ~0.03,
  c's sd 0.49-0.64, the planted 3 missed and unmarked on 5 of 5 seeds; the evidence's lam
  0.03-0.11, c's sd 0.72-0.90, all 5 marked mostly the prior (benchmarks/rank_c_interval.py,
  modes auto_em_terms and ev_lam). It is not the default because it ranks worse: rank-eval, 20
  seeds, paired, bias-aware recall@5 with that judge -0.05 +- 0.03 (topk rule, 120
  comparisons), -0.06 +- 0.03 (200), -0.07 +- 0.03 (random rule, 200), -0.03 +- 0.02 on
  full data; unbiased sim judge, naive topk at 60 comparisons 0.79 against 0.88 (unpaired).
  Kappa with the evidence: 0.38, coverage 0.95 (length 3 and position 0.5); 0.40, 0.85
  (position 0.5 alone). Cost in rank (lam searched every 4th refit, rank.loop): CPU
  0.50 s against 0.46 s at budget 200, 1.72 s against 1.74 s at 800 (median of 3).

So `rank` and `rank-eval` (with a learned lam) rank with the EB_METHOD fit and report c and
kappa from `terms_fit`: one refit of the same comparisons at the evidence's lam, warm from
the final fit (dense sizes; above DENSE_MAX the terms stay the Laplace-EM fit's). Same
setting, 5 seeds (benchmarks/rank_c_interval.py, mode auto): at 50/100/200/400/800
comparisons the terms' lam 0.081/0.045/0.026/0.020/0.024 (the ranking's 1.03/0.35/0.091/
0.054/0.036), c's sd 0.82/0.85/0.85/0.88/0.87 (was 0.60/0.55/0.70/0.78/0.83), marked 4/5/4/5/5
of 5 (was 0/0/3/4/5); the planted 3 is covered on none either way (c 0.5-0.6: what the
priors leave of a covariate confounded with quality), planted 1 on 25 of 25. Position 1
planted with length 3: kappa 0.61, covering 4/5 at 100 (0.39, 3/5 from the EM fit), 0.96,
5/5 at 400 (0.78, 4/5). The ranking is untouched (top-k, theta, P(top-k), recall identical);
the refit costs a median 0.055 CPU s at budget 200 and 0.029 s at 800 (rank: 0.54 s, 1.78 s).

That refit had the ranking's prior on c, N(0, tau^2) with tau 1, and it read c low however
many comparisons: an item's covariate is constant over its comparisons, which fix only
s_i = theta_i + c x_i, so c is told from theta only by theta ~ N(0, 1/lam), worth a
precision of about lam * sum_i x_i^2 (x centred; the textbook logistic regression on item
indicators, covariate and position has c not identified at all), against the prior's
1 / tau^2. The prior pulled c towards 0 by 1 / (1 + lam * sum x^2 * tau^2): 0.08-0.09 on the
ranking tester's pool (25 items, theta sd ~1.6, words log-uniform on 10-400; every ordered
pair judged, 20 pools: 1.30 for a planted 1.5), 0.8 on builtin:controlled (theta sd ~6:
0.63 for 3, marked mostly the prior). The units agree (c per unit of log(1 + words), the sim
judge's; the pool centres x and does not scale it). So without --hierarchical the terms are
now fit at tau ``TERMS_TAU`` (10; a larger --tau is kept): the same full-data fits give
1.46 (coverage 0.95) and 2.90 (sd ~2, covering 20 of 20, unmarked); with --hierarchical,
whose point is to learn tau from the terms, they stay at its tau. In rank
(benchmarks/rank_c_coverage.py, 40 seeds each): tester pool, budget 300, c 1.26 -> 1.44
(topk rule; random 1.29 -> 1.49), covering 38/40 -> 38/40 (37 -> 39); controlled, budget
200 and 800: 0.60 and 0.62, 0/40 covered and 40/40 marked -> 2.52 and 2.88, 40/40 covered,
none marked (the interval, sd ~1.9, is conservative there: the pool's design keeps length
and quality nearly orthogonal, which the prior on theta does not know). At budgets 50 and
100, controlled: 0/40 covered (8 and 4 unmarked, all missing) -> 38/40 and 40/40; tester:
37/40 and 33/40 -> 38/40 and 38/40 (at 50 c scatters, mean 2.20 +- 0.23, sd of c 1.1: the
evidence's lam is least sure there). Ranking, theta,
recall unchanged; CPU the same within the load's noise. P(top-k) stays drawn from the
evidence refit at the ranking's tau (``membership_fit``; ``terms_tau`` says when the terms'
fit is that one).
"""

from __future__ import annotations

import math

import numpy as np

from judgeaudit.stats.bradley_terry import DENSE_MAX, BTFit, evidence_lam, fit_map, fit_naive
from judgeaudit.stats.threads import limit_blas_threads

MODELS: tuple[str, ...] = ("naive", "bias_aware")


def _once(model: str, n: int, comps: np.ndarray, X: np.ndarray | None, lam: float,
          tau: float, hierarchical: bool, init: BTFit | None, **kw: str) -> BTFit:
    if model == "naive":
        return fit_naive(n, comps, lam=lam, init=init, **kw)
    if model == "bias_aware":
        return fit_map(n, comps, X=X, position=True, lam=lam, tau=tau, init=init,
                       hierarchical=hierarchical, **kw)
    raise ValueError(f"unknown model {model!r}; expected one of {MODELS}")


def em_lam(fit: BTFit) -> float:
    """One EM step for lam from a fit: N / sum_i(theta_i^2 + Var theta_i) (``theta_var``: no
    dense covariance needed for a large, sparse fit)."""
    second = float(np.sum(fit.theta ** 2 + np.clip(fit.theta_var, 0.0, None)))
    return fit.n_items / second if second > 0 else math.inf


EB_METHODS: tuple[str, ...] = ("em", "auto", "evidence")
# The default way to learn lam (``eb_method=None`` in fit_model, evidence_path and
# rank.loop.run_active): Laplace-EM. "auto" (the Laplace evidence where dense) gives c honest
# intervals but costs recall (module docstring), so it is an option, not the default.
EB_METHOD = "em"
# The prior sd of c and kappa in the fit they are reported from (``terms_fit``, without
# --hierarchical; a larger --tau is kept): c of an item-level covariate gets only
# lam * sum_i X_i^2 of precision from the comparisons, however many (module docstring), so
# the ranking's tau = 1 prior pulled it towards 0. 10 logits: weak for any judge's bias.
TERMS_TAU = 10.0


def n_params(model: str, n_items: int, X: np.ndarray | None) -> int:
    """Parameters of ``model``'s fit: theta, and for bias_aware c (one per covariate) and
    kappa."""
    if model == "naive":
        return n_items
    m = 0 if X is None else (np.asarray(X).reshape(n_items, -1).shape[1])
    return n_items + m + 1


def evidence_path(model: str, n_items: int, X: np.ndarray | None,
                  eb_method: str | None = None) -> bool:
    """Whether an empirical-Bayes lam comes from the Laplace evidence (else Laplace-EM);
    ``eb_method`` None: ``EB_METHOD``."""
    how = eb_method or EB_METHOD
    return how == "evidence" or (how == "auto" and n_params(model, n_items, X) <= DENSE_MAX)


def fit_model(model: str, n_items: int, comparisons: np.ndarray, X: np.ndarray | None = None,
              lam: float = 1.0, tau: float = 1.0, hierarchical: bool = False,
              init: BTFit | None = None, eb_lam: bool = False, lam_floor: float = 0.01,
              lam_ceiling: float = 100.0, max_outer: int = 50, rtol: float = 1e-3,
              posterior: str = "auto", method: str = "auto", eb_method: str | None = None,
              eb_xtol: float = 1e-3, eb_width: float = 1.0) -> BTFit:
    """Fit ``model``; with ``eb_lam`` learn lam (see the module docstring).

    ``eb_method``: "evidence" maximises the Laplace evidence (to ``eb_xtol`` in log lam;
    warm-started from ``init``, whose lam brackets the search within ``eb_width`` in log
    lam); "em" finds the Laplace-EM fixed point, starting from ``init.lam`` when
    warm-started (else ``lam``) and stopping when the next iterate would move lam by at most
    ``rtol`` (relative) or after ``max_outer`` refits; "auto" is "evidence" up to
    ``DENSE_MAX`` parameters, "em" above; None (default): ``EB_METHOD`` ("em").
    ``posterior`` and ``method`` go to ``fit_map`` (the active loop: "lazy" and "newton")."""
    eb_method = eb_method or EB_METHOD
    if eb_method not in EB_METHODS:
        raise ValueError(f"eb_method must be one of {EB_METHODS}, got {eb_method!r}")
    kw = {"posterior": posterior, "method": method}
    with limit_blas_threads(n_items):  # small dense algebra: extra threads only contend
        if eb_lam and evidence_path(model, n_items, X, eb_method):
            return _evidence_fit(model, n_items, comparisons, X, lam, tau, hierarchical, init,
                                 lam_floor, lam_ceiling, eb_xtol, eb_width, kw)
        return _fit_model(model, n_items, comparisons, X, lam, tau, hierarchical, init, eb_lam,
                          lam_floor, lam_ceiling, max_outer, rtol, kw)


def terms_fit(fit: BTFit, n_items: int, comparisons: np.ndarray, X: np.ndarray | None = None,
              *, eb_lam: bool, tau: float = 1.0, hierarchical: bool = False
              ) -> tuple[BTFit, str | None]:
    """The fit a bias-aware model's c and kappa are reported from, and how its lam was
    learned: ``(fit, None)`` with a given lam (no ``eb_lam``) or without bias terms;
    ``(fit, "em")`` above ``DENSE_MAX`` parameters (no evidence there; with N that large
    lam * sum x^2 dwarfs 1 / tau^2); ``(fit, "evidence")`` when ``fit``'s lam already
    maximises the Laplace evidence (``EB_METHOD``) at the terms' tau; else a refit of
    ``comparisons`` at tau ``terms_tau(tau, hierarchical)`` (at least ``TERMS_TAU``: the
    module docstring says why) and the lam maximising the evidence there (warm-started from
    ``fit``, bracketed near its lam), "evidence". The ranking keeps ``fit``: Laplace-EM's lam
    ranks better, while its bias terms' intervals are too narrow at small budgets (module
    docstring). With ``hierarchical`` the evidence is maximised at ``fit``'s learned tau and
    tau is learned again at the new lam."""
    if not eb_lam or not fit.position:
        return fit, None
    if not evidence_path("bias_aware", n_items, X, "auto"):
        return fit, "em"
    t = terms_tau(tau, hierarchical)
    if evidence_path("bias_aware", n_items, X) and t == tau:
        return fit, "evidence"
    return fit_model("bias_aware", n_items, comparisons, X, lam=fit.lam, tau=t,
                     hierarchical=hierarchical, init=fit, eb_lam=True,
                     eb_method="evidence"), "evidence"


def terms_tau(tau: float, hierarchical: bool = False) -> float:
    """The prior sd of c and kappa in the fit they are reported from: at least
    ``TERMS_TAU``, the given ``tau`` with ``hierarchical`` (tau learned from them)."""
    return tau if hierarchical else max(tau, TERMS_TAU)


def membership_fit(model: str, fit: BTFit, n_items: int, comparisons: np.ndarray,
                   X: np.ndarray | None = None, *, eb_lam: bool, tau: float = 1.0,
                   hierarchical: bool = False) -> BTFit:
    """The fit whose Laplace posterior rank's P(top-k) is drawn from: with a learned lam
    (``eb_lam``) that ``EB_METHOD`` found by Laplace-EM, a refit of ``comparisons`` at the lam
    maximising the Laplace evidence (warm from ``fit``, bracketed near its lam; the same refit
    as ``terms_fit``'s for the bias-aware model); else ``fit`` (a given lam, the evidence
    already, or above ``DENSE_MAX`` parameters where there is none). The ranking keeps
    ``fit``.

    Why: Laplace-EM's lam is far too tight when the judge separates items sharply, even when
    theta is drawn from the model's own prior N(0, 1/lam) (theta sd 6 logits, 30 items, k 5,
    80 active comparisons, 100 seeds: EM lam median 0.53 against 0.028), and a prior that
    tight squeezes the gaps between items relative to their sd: P(top-k) underconfident
    (items at 0.5-0.7 in the true top 84%, at 0.7-0.9 96%, at 0.9-0.98 100%; Brier 0.0365).
    At the evidence's lam (median 0.051) Brier 0.0317, as at the true lam (0.0320). What
    remains is the Laplace posterior's own (symmetric about the MAP where a won comparison
    leaves a long tail towards larger gaps): at the true lam items at 0.5-0.7 were in the top
    72%, at 0.7-0.9 91%. tests/rank/test_membership_calibration.py,
    benchmarks/rank_membership_calibration.py (``--truth prior``)."""
    if not eb_lam or not evidence_path(model, n_items, X, "auto") or \
            evidence_path(model, n_items, X):
        return fit
    return fit_model(model, n_items, comparisons, X, lam=fit.lam, tau=tau,
                     hierarchical=hierarchical, init=fit, eb_lam=True, eb_method="evidence")


def _evidence_fit(model: str, n_items: int, comparisons: np.ndarray, X: np.ndarray | None,
                  lam: float, tau: float, hierarchical: bool, init: BTFit | None,
                  lam_floor: float, lam_ceiling: float, xtol: float, width: float,
                  kw: dict) -> BTFit:
    """lam maximising the Laplace evidence at tau (``init.tau`` with ``hierarchical`` when it
    has the same bias terms), then the fit there (learning tau by EB with
    ``hierarchical``)."""
    warm = isinstance(init, BTFit)
    start = min(max(init.lam if warm else lam, lam_floor), lam_ceiling)
    comps = np.asarray(comparisons, dtype=float).reshape(-1, 3)
    if comps.shape[0] == 0:  # no data: the evidence is flat, keep the start
        return _once(model, n_items, comps, X, start, tau, hierarchical, init, **kw)
    naive = model == "naive"
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; expected one of {MODELS}")
    t = tau
    if hierarchical and warm and not naive and init.position and X is not None and \
            init.c.shape[0] == np.asarray(X).reshape(n_items, -1).shape[1]:
        t = init.tau
    lam_e, fit = evidence_lam(n_items, comps, X=None if naive else X, position=not naive,
                              tau=t, lam_floor=lam_floor, lam_ceiling=lam_ceiling, xtol=xtol,
                              init=init, near=start if warm else None, width=width)
    if hierarchical and not naive or kw.get("posterior") in ("dense", "sparse"):
        return _once(model, n_items, comps, X, lam_e, tau, hierarchical, fit, **kw)
    return fit


def _fit_model(model: str, n_items: int, comparisons: np.ndarray, X: np.ndarray | None,
               lam: float, tau: float, hierarchical: bool, init: BTFit | None, eb_lam: bool,
               lam_floor: float, lam_ceiling: float, max_outer: int, rtol: float,
               kw: dict | None = None) -> BTFit:
    kw = kw or {}
    if not eb_lam:
        return _once(model, n_items, comparisons, X, lam, tau, hierarchical, init, **kw)
    lo_b, hi_b = math.log(lam_floor), math.log(lam_ceiling)
    start = init.lam if isinstance(init, BTFit) else lam
    u = min(max(math.log(start), lo_b), hi_b)
    fit = _once(model, n_items, comparisons, X, math.exp(u), tau, hierarchical, init, **kw)
    lo: list[float] | None = None  # [u, r] with r > 0: the fixed point lies above u
    hi: list[float] | None = None  # [u, r] with r < 0: it lies below
    prev: tuple[float, float] | None = None
    last, moved = 0.0, ""
    for _ in range(max_outer):
        t = em_lam(fit)
        r = (min(max(math.log(t), lo_b), hi_b) if t < math.inf else hi_b) - u  # the EM step
        if r == 0.0:
            break
        side = ""
        if r > 0 and (lo is None or u > lo[0]):
            lo, side = [u, r], "lo"
        elif r < 0 and (hi is None or u < hi[0]):
            hi, side = [u, r], "hi"
        if lo is not None and hi is not None:  # bracketed: regula falsi (Illinois)
            if side and side == moved:  # the same end moved twice: weigh the other down
                (hi if side == "lo" else lo)[1] *= 0.5
            moved = side or moved
            new = lo[0] - lo[1] * (hi[0] - lo[0]) / (hi[1] - lo[1])
            if not min(lo[0], hi[0]) < new < max(lo[0], hi[0]):
                new = 0.5 * (lo[0] + hi[0])
            done = abs(new - u) <= rtol or abs(hi[0] - lo[0]) <= rtol
        else:  # not yet: a secant step when it points the right way, else step out faster
            slope = (r - prev[1]) / (u - prev[0]) if prev is not None and u != prev[0] else 0.0
            grow = max(abs(r), 2.0 * abs(last), 0.05)
            d = min(max(abs(r / slope), abs(r)), 4.0 * grow) if slope < 0 else grow
            new = min(max(u + math.copysign(d, r), lo_b), hi_b)
            done = new == u  # held at the floor or the ceiling
        if done:
            break
        prev, last, u = (u, r), new - u, new
        fit = _once(model, n_items, comparisons, X, math.exp(u), tau, hierarchical, fit, **kw)
    return fit
