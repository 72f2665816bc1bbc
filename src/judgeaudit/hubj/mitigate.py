"""Algorithm 3 (mitigate): bias-controlled win rates by a two-stage logistic model.

Data: judges m, queries x; y_mx in {0, 0.5, 1} = judge m prefers the candidate response of
query x (0.5: tie or order-inconsistent); a control Delta_x per query, by default
    Delta_x = tanh(s_z(candidate) - s_z(other))     (s_z = G_score intensity of factor z)
which on an item where the judge picked the candidate against the humans is exactly the
issue's tanh(score(judge-preferred) - score(human-preferred)).

Stage I, jointly over judges, psi = 1:  y_mx ~ sigmoid(theta_m + phi_m Delta_x + gamma_x),
gamma_0 = 0 pinned; then gamma recentred to mean 0. gamma_x is a per-query effect seen by every
judge; with few judges per query its ML estimate is infinite whenever all judges agree, so
Stage I is penalised: gamma ~ N(0, sigma^2) with sigma^2 set by empirical Bayes (a few
fixed-point steps sigma^2 = mean(gamma^2 + se^2)); theta and phi are unpenalised.
Stage II, per judge, gamma fixed:  y_mx ~ sigmoid(theta_m + phi_m Delta_x + psi_m gamma_x) by
maximum likelihood, Wald standard errors (judgeaudit.stats.fit_logistic), widened to a
sandwich where that is larger (section "standard errors": with ties it is smaller, unused).
The default estimator is the marginal one (section "one-step marginal likelihood"), which
counts each verdict 1 / kappa_m times, kappa_m the dispersion of judge m's verdicts (about
0.5 when each is the mean of two orders; section "dispersion of tie verdicts").
    Win_m = mean_x y_mx                      (= mean fitted p: the intercept's score equation)
    BC_m  = mean_x sigmoid(theta_m + psi_m gamma_x)        (the control set to 0)
    bias share Delta_m = Win_m - BC_m
Intervals for BC_m and Delta_m by the delta method on (theta, phi, psi) (Stage-I uncertainty in
gamma is not propagated); Win_m has a Wilson interval. Win_m is the observed win rate: the
mean fitted p equals it only without the prior on theta (PRIOR_SD), and taking the fitted
one made the shown share differ from win - BC (0.050 against 0.037 on 5 queries, of
opposite sign in one fit).

The same machinery with a length control gives a length-controlled win rate in the manner of
AlpacaEval 2.0 (Dubois et al. 2024): Delta_x = tanh((len_candidate - len_other) / sd(len
differences)), lengths in whitespace words (`features.spaced_word_count`: as `split()`, but
a Han or kana character is a word, so Chinese and Japanese pairs get a length signal), with
this fit's query effect. It is not
AlpacaEval's own figure: its GLM measures characters (sd with ddof 1), adds a fixed
instruction-difficulty term and L1 regularisation (0.510 here against 0.5103 by its minimal
formula on PandaLM).
Controls are named one-liners in CONTROLS, so adding a control variable is one line.

The fit's inputs are kept beside its numbers (`per_query`, results.json's `per_query`): each
query's verdict value per judge and the differences the controls are computed from, so the
fit can be re-run from the file alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from judgeaudit.stats import fit_logistic, rate
from judgeaudit.stats.types import Estimate

# Weakly informative N(0, PRIOR_SD^2) prior on theta, phi and psi in both stages: with a few
# dozen queries a judge's verdicts are often separated by the control (e.g. it never picks
# the candidate where Delta < 0), where the ML coefficients are infinite and Newton's system
# singular. At sd 5 the prior moves well-identified fits by far less than their standard
# errors (checked by the truth-recovery tests) and keeps separated ones finite.
PRIOR_SD = 5.0
Z95 = 1.959964


def win_rate(y: np.ndarray) -> Estimate:
    """A judge's win rate over valid verdicts (ties count half) with its Wilson interval."""
    return rate(float(y.sum()), int(y.size))


def _normal(value: float, se: float, n: int, method: str, clip: bool = False) -> Estimate:
    """value +- Z95 * se (clipped to [0, 1] for a rate) as an Estimate carrying its se."""
    lo, hi = value - Z95 * se, value + Z95 * se
    if clip:
        lo, hi = max(0.0, lo), min(1.0, hi)
    return Estimate(float(value), (float(lo), float(hi)), n, se=float(se), method=method)


def _share_estimate(value: float, se: float, n: int, phi: float, phi_se: float) -> Estimate:
    """The bias share win - BC +- Z95 se, its interval widened to reach 0 when phi's Wald
    interval contains 0. The model's share (mean fitted p - BC) is 0 at phi = 0, but the
    shown one is the observed win - BC, which the prior on theta moves off the fitted mean
    (by -0.0015 at a win of 0.045): LLMBar's GPT-4 (Natural, Vanilla) had phi +0.40
    [-1.62, 2.42] beside a share -0.0015 [-0.0023, -0.0006], a share that excluded 0 with
    the opposite sign to phi (1 of 153 recorded fits). phi = 0 is a value the data allow
    then, and a share of 0 with it."""
    est = _normal(value, se, n, "delta")
    lo, hi = est.ci95
    if abs(phi) <= Z95 * phi_se and not lo <= 0.0 <= hi:
        return Estimate(est.value, (min(lo, 0.0), max(hi, 0.0)), n, se=est.se,
                        method="delta, widened to 0 (phi's interval contains 0)")
    return est


@dataclass
class ControlData:
    """Per-query inputs of the control variables (arrays of length N)."""

    score_candidate: np.ndarray | None = None
    score_other: np.ndarray | None = None
    len_candidate: np.ndarray | None = None   # features.spaced_word_count (CJK: per character)
    len_other: np.ndarray | None = None


def _sd(x: np.ndarray) -> float:
    s = float(np.nanstd(x))
    return s if s > 0 else 1.0


CONTROLS: dict[str, Callable[[ControlData], np.ndarray]] = {
    # HUB-J bias control: the factor's intensity difference, squashed.
    "bias": lambda c: np.tanh(c.score_candidate - c.score_other),  # type: ignore[operator]
    # AlpacaEval 2.0 length control: standardised length difference, squashed.
    "length": lambda c: np.tanh((c.len_candidate - c.len_other)  # type: ignore[operator]
                                / _sd(c.len_candidate - c.len_other)),  # type: ignore[operator]
}


def _plain_number(x: float) -> float | int | None:
    """A value as `per_query` keeps it: NaN as null, a whole number as an integer."""
    if not math.isfinite(x):
        return None
    return int(x) if float(x).is_integer() else float(x)


def per_query(Y: np.ndarray, ctl: ControlData, judges: Sequence[str],
              query_ids: Sequence[str]) -> dict[str, Any]:
    """The fit's inputs, one entry per query in the order of `query_ids` (parallel lists, each
    id once): `y` per judge (1 = prefers the candidate, 0 = the other, 0.5 = tie or orders
    disagree, null = no valid verdict: as the fit reads Y), `score_difference` (factor score
    of the candidate minus the other's: the bias control is tanh of it) and
    `length_difference` (words: the length control is tanh of it over its standard
    deviation). Every judge is kept, fitted or not. Without them the fit could not be
    re-run from results.json: Y existed only in the run."""
    Y = np.asarray(Y, dtype=float)

    def diff(a: np.ndarray | None, b: np.ndarray | None) -> list[float | int | None] | None:
        if a is None or b is None:
            return None
        return [_plain_number(float(x)) for x in np.asarray(a, float) - np.asarray(b, float)]

    return {"values": "y: 1 = prefers the candidate, 0 = the other, 0.5 = tie or orders "
                      "disagree, null = no valid verdict; bias control = "
                      "tanh(score_difference); length control = tanh(length_difference / "
                      "its standard deviation)",
            "query_ids": list(query_ids),
            "y": {j: [_plain_number(float(v)) for v in Y[i]] for i, j in enumerate(judges)},
            "score_difference": diff(ctl.score_candidate, ctl.score_other),
            "length_difference": diff(ctl.len_candidate, ctl.len_other)}


@dataclass
class StageOne:
    gamma: np.ndarray          # (N,), recentred to mean 0
    gamma_se: np.ndarray
    theta: np.ndarray          # (J,)
    phi: np.ndarray            # (J,)
    sigma: float               # prior sd of gamma (empirical Bayes)
    converged: bool


def _newton_stage_one(Y: np.ndarray, delta: np.ndarray, lam: float, phi_free: np.ndarray,
                      start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
                      max_iter: int = 100, tol: float = 1e-9
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """Penalised ML of eta_mx = theta_m + phi_m d_x + gamma_x, penalty (lam/2) sum gamma^2.

    Newton steps solved by blocks: the gamma block of the information is diagonal, so the
    Schur complement over (theta, phi) is 2J x 2J and one step costs O(J^2 N). Returns theta,
    phi, gamma, se(gamma) and whether the steps converged."""
    J, N = Y.shape
    mask = np.isfinite(Y)
    y = np.where(mask, Y, 0.0)
    th, ph, ga = (np.zeros(J), np.zeros(J), np.zeros(N)) if start is None else start
    ph = np.where(phi_free, ph, 0.0)

    l2 = 1.0 / PRIOR_SD**2

    def objective(th: np.ndarray, ph: np.ndarray, ga: np.ndarray) -> float:
        eta = th[:, None] + ph[:, None] * delta[None] + ga[None]
        ll = np.where(mask, y * eta - np.logaddexp(0.0, eta), 0.0).sum()
        return float(ll - 0.5 * lam * np.sum(ga**2) - 0.5 * l2 * (np.sum(th**2) + np.sum(ph**2)))

    obj = objective(th, ph, ga)
    converged = False
    free = np.concatenate([np.ones(J, dtype=bool), phi_free])
    for _ in range(max_iter):
        eta = th[:, None] + ph[:, None] * delta[None] + ga[None]
        p = special.expit(eta)
        r = np.where(mask, y - p, 0.0)
        w = np.where(mask, p * (1 - p), 0.0)
        g_a = np.concatenate([r.sum(1) - l2 * th, (r * delta[None]).sum(1) - l2 * ph])
        g_c = r.sum(0) - lam * ga
        A = np.zeros((2 * J, 2 * J))
        idx = np.arange(J)
        A[idx, idx] = w.sum(1) + l2
        A[idx, J + idx] = A[J + idx, idx] = (w * delta[None]).sum(1)
        A[J + idx, J + idx] = (w * delta[None] ** 2).sum(1) + l2
        B = np.concatenate([w, w * delta[None]], axis=0)  # (2J, N)
        D = w.sum(0) + lam
        A, B, g_a = A[np.ix_(free, free)], B[free], g_a[free]
        S = A - (B / D[None]) @ B.T
        a = np.linalg.solve(S, g_a - B @ (g_c / D))
        c = (g_c - B.T @ a) / D
        step_a = np.zeros(2 * J)
        step_a[free] = a
        t = 1.0
        while True:
            cand = (th + t * step_a[:J], ph + t * step_a[J:], ga + t * c)
            new = objective(*cand)
            if new >= obj - 1e-12 * abs(obj) or t < 1e-8:
                break
            t /= 2
        th, ph, ga = cand
        obj = new
        if max(np.max(np.abs(t * step_a)), np.max(np.abs(t * c))) < tol:
            converged = True
            break
    # se(gamma): diagonal of the inverse information, by the same blocks
    eta = th[:, None] + ph[:, None] * delta[None] + ga[None]
    p = special.expit(eta)
    w = np.where(mask, p * (1 - p), 0.0)
    A = np.zeros((2 * J, 2 * J))
    idx = np.arange(J)
    A[idx, idx] = w.sum(1) + l2
    A[idx, J + idx] = A[J + idx, idx] = (w * delta[None]).sum(1)
    A[J + idx, J + idx] = (w * delta[None] ** 2).sum(1) + l2
    B = np.concatenate([w, w * delta[None]], axis=0)[free]
    D = w.sum(0) + lam
    S = A[np.ix_(free, free)] - (B / D[None]) @ B.T
    BD = B / D[None]
    var = 1.0 / D + np.einsum("ix,ij,jx->x", BD, np.linalg.pinv(S), BD)
    return th, ph, ga, np.sqrt(np.clip(var, 0, None)), converged


def stage_one(Y: np.ndarray, delta: np.ndarray, eb_steps: int = 20, sigma0: float = 1.0
              ) -> StageOne:
    """Joint fit over judges with psi = 1 (see the module docstring). The gamma prior
    identifies gamma's location, so no gamma is pinned; gamma is recentred to mean 0 (theta
    absorbs the shift), which is what pinning one and recentring would give without the
    prior."""
    J, N = Y.shape
    mask = np.isfinite(Y)
    phi_free = np.array([np.ptp(delta[mask[j]]) > 0 if mask[j].any() else False
                         for j in range(J)])
    sigma = sigma0
    start = None
    for _ in range(max(1, eb_steps)):
        th, ph, ga, gse, conv = _newton_stage_one(Y, delta, 1.0 / sigma**2, phi_free, start)
        start = (th, ph, ga)
        new_sigma = math.sqrt(max(float(np.mean(ga**2 + gse**2)), 1e-4))
        done = abs(new_sigma - sigma) < 1e-3
        sigma = new_sigma
        if done:
            break
    th, ph, ga, gse, conv = _newton_stage_one(Y, delta, 1.0 / sigma**2, phi_free, start)
    shift = float(ga.mean())
    return StageOne(ga - shift, gse, th + shift, ph, sigma, conv)


def _p(eta: np.ndarray) -> np.ndarray:
    return special.expit(eta)


@dataclass
class JudgeFit:
    theta: float
    phi: float
    psi: float
    cov: np.ndarray             # 3x3 over (theta, phi, psi)
    win: Estimate
    bc: Estimate
    bias_share: Estimate
    n: int
    converged: bool
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        se = np.sqrt(np.clip(np.diag(self.cov), 0, None))
        return {
            "win": self.win.as_dict(), "bc": self.bc.as_dict(),
            "bias_share": self.bias_share.as_dict(), "n": self.n,
            "theta": {"value": self.theta, "se": float(se[0])},
            "phi": _normal(self.phi, float(se[1]), self.n, "wald").as_dict(),
            "psi": {"value": self.psi, "se": float(se[2])},
            # the joint covariance, for `apply`: phi and psi are correlated in the fit, and
            # an applied share depends on both
            "cov": {"params": ["theta", "phi", "psi"],
                    "matrix": np.asarray(self.cov, dtype=float).tolist()},
            "converged": self.converged, **self.extra,
        }


# ---- standard errors ------------------------------------------------------------------------
#
# The Wald covariance is the binomial model's: Var(y) = p (1 - p). A verdict of 0.5 (a tie, or
# the two orders disagreeing) has a smaller variance than that (y^2 <= y on [0, 1]), so with
# ties the binomial standard errors overstate the spread of the estimates; a sandwich (robust)
# covariance, clustered by query, measures that spread from the fit's own scores and also
# stays right when the verdicts of one query are more alike than the model says. The marginal
# fit (the default) now models the ties' variance itself, kappa_m p (1 - p) per judge (section
# "dispersion of tie verdicts"): its model se then matches the spread, and the sandwich with it
# (benchmarks/mitigate_ties.py). The two-stage fit keeps the binomial variance: there the
# sandwich se matched the sd of phi-hat across seeds (0.176 against 0.171, 3 judges, 150
# queries, two-order verdicts) where the model's was 0.234, but its phi is pulled toward 0
# (gamma plugged in) and the sandwich interval covered the planted phi in 67% to 87% of seeds
# where the model's covered 81% to 96%. So in both fits an interval is the model's, widened to
# the sandwich's where that is larger (`_larger`): never narrower than the model's, wider when
# the data are more dispersed than the model allows. Each judge reports both standard errors
# and their ratio (`dispersion`).

SE_METHODS = ("larger", "model", "sandwich")
SE_DEFAULT = "larger"
SE_LABELS = {"larger": "the binomial model's, widened to the sandwich (clustered by query) "
                       "where that is larger",
             "model": "the binomial model's (observed information)",
             "sandwich": "sandwich, clustered by query"}


def _larger(model: np.ndarray, robust: np.ndarray) -> np.ndarray:
    """The smallest covariance at least as large as both (in the matrix order): the model's
    plus the positive part of (robust - model). Every linear combination (phi, BC, the
    share) then gets a variance >= both of theirs, and no parameter is narrowed."""
    diff = (robust - model + (robust - model).T) / 2
    lam, vec = np.linalg.eigh(diff)
    return model + (vec * np.clip(lam, 0.0, None)) @ vec.T


def _choose_cov(model: np.ndarray, robust: np.ndarray, se: str
                ) -> tuple[np.ndarray, dict[str, Any]]:
    """The covariance `se` asks for, and what each judge reports about it: the method, both
    standard errors of (theta, phi, psi) and the variance ratios sandwich / model (the
    `dispersion`: below 1 with ties, above 1 when verdicts are more dispersed than binomial)."""
    if se not in SE_METHODS:
        raise ValueError(f"mitigate: se={se!r}: expected one of {SE_METHODS}")
    chosen = {"model": model, "sandwich": robust}.get(se)
    if chosen is None:
        chosen = _larger(model, robust)
    vm, vr = np.diag(model), np.diag(robust)
    names = ("theta", "phi", "psi")
    return chosen, {
        "se_method": se, "se_method_text": SE_LABELS[se],
        "se_model": {k: float(math.sqrt(max(v, 0.0))) for k, v in zip(names, vm, strict=True)},
        "se_sandwich": {k: float(math.sqrt(max(v, 0.0)))
                        for k, v in zip(names, vr, strict=True)},
        "dispersion": {k: (float(b / a) if a > 0 else None)
                       for k, a, b in zip(names, vm, vr, strict=True)}}


def _logistic_sandwich(X: np.ndarray, y: np.ndarray, coef: np.ndarray, cov: np.ndarray,
                       offset: np.ndarray | float = 0.0) -> np.ndarray:
    """HC1 sandwich of a logistic fit of independent verdicts (one per query): bread the
    fit's covariance, meat sum_i (y_i - p_i)^2 x_i x_i' (statsmodels' GLM(cov_type="HC0")),
    times n / (n - k) for the k fitted coefficients (MacKinnon and White's HC1)."""
    n, k = X.shape
    s = X * (y - _p(X @ coef + offset))[:, None]
    return cov @ (s.T @ s) @ cov * (n / max(n - k, 1))


def stage_two(y: np.ndarray, delta: np.ndarray, gamma: np.ndarray, se: str = SE_DEFAULT
              ) -> JudgeFit:
    """Per-judge ML fit with gamma fixed; BC, bias share and their delta-method intervals.
    `se`: which covariance the intervals use (SE_METHODS; see `_choose_cov`)."""
    ok = np.isfinite(y)
    y, d, g = y[ok], delta[ok], gamma[ok]
    n = int(y.size)
    cols = [np.ones(n), d, g]
    use = [True, bool(np.ptp(d) > 0), bool(np.ptp(g) > 0)]
    X = np.column_stack([c for c, u in zip(cols, use, strict=True) if u])
    fit = fit_logistic(X, y, l2=1.0 / PRIOR_SD**2)
    beta = np.zeros(3)
    beta[np.array(use)] = fit.coef
    ix = np.nonzero(use)[0]
    cov_model, cov_rob = np.zeros((3, 3)), np.zeros((3, 3))
    cov_model[np.ix_(ix, ix)] = fit.cov
    cov_rob[np.ix_(ix, ix)] = _logistic_sandwich(X, y, fit.coef, fit.cov)
    cov, se_info = _choose_cov(cov_model, cov_rob, se)
    theta, phi, psi = beta
    p_full = _p(theta + phi * d + psi * g)
    p_bc = _p(theta + psi * g)
    bc = float(p_bc.mean())
    w_full, w_bc = p_full * (1 - p_full), p_bc * (1 - p_bc)
    grad_bc = np.array([w_bc.mean(), 0.0, (w_bc * g).mean()])
    grad_share = np.array([w_full.mean(), (w_full * d).mean(), (w_full * g).mean()]) - grad_bc
    se_bc = math.sqrt(max(float(grad_bc @ cov @ grad_bc), 0.0))
    se_share = math.sqrt(max(float(grad_share @ cov @ grad_share), 0.0))
    share = float(y.mean()) - bc  # as defined and shown: win - BC (`_share`)
    return JudgeFit(
        float(theta), float(phi), float(psi), cov,
        win=win_rate(y),
        bc=_normal(bc, se_bc, n, "delta", clip=True),
        bias_share=_share_estimate(share, se_share, n, float(phi),
                                   math.sqrt(max(float(cov[1, 1]), 0.0))),
        n=n, converged=fit.converged, extra=se_info,
    )


@dataclass
class MitigateFit:
    judges: list[str]
    query_ids: list[str]
    control: str
    delta: np.ndarray
    stage1: StageOne
    per_judge: dict[str, JudgeFit]

    def resolution(self) -> dict[str, Any]:
        """How finely the control separates the queries: its distinct values. The bias share
        is the part of the win rate the control explains, so a coarse factor scorer removes
        only the factor's effect its levels resolve (a 5-level length score removed about
        half of a planted length bias: share 0.018 against 0.034)."""
        return {"distinct_values": int(np.unique(np.round(self.delta, 9)).size),
                "n_queries": int(self.delta.size)}

    def se_note(self) -> str | None:
        """Which standard errors the intervals use, and how far ties would narrow them (the
        sandwich against the model's, phi's variance ratio per judge): shown so a user sees
        the method and why a smaller sandwich was not taken (module section "standard
        errors")."""
        fits = [(j, f.extra) for j, f in self.per_judge.items() if "se_method" in f.extra]
        if not fits:
            return None
        method = fits[0][1]["se_method"]
        ratios = ", ".join(f"{j} {e['dispersion']['phi']:.2f}" for j, e in fits
                           if (e.get("dispersion") or {}).get("phi") is not None)
        text = f"standard errors: {SE_LABELS[method]} (se_method={method})"
        if ratios:
            text += f"; sandwich / model variance of phi: {ratios}"
        if method == "larger" and any(e.get("kappa", {}).get("estimated") for _, e in fits):
            text += ("; a ratio below 1 is not used to narrow the intervals, and with ties "
                     "there is little to narrow: the model's variance is kappa p (1 - p) "
                     "(dispersion kappa, below)")
        elif method == "larger":
            text += ("; a ratio below 1 (ties, 0.5 verdicts, have less variance than the "
                     "binomial model's) is not used to narrow the intervals: ties also pull "
                     "phi toward 0, and the narrower intervals missed a planted phi in up to "
                     "a third of simulated runs")
        return text

    def kappa_note(self) -> str | None:
        """Each judge's dispersion kappa (marginal fit, some verdict a tie): its value, se and
        n, and what it means (section "dispersion of tie verdicts")."""
        ks = {j: f.extra["kappa"] for j, f in self.per_judge.items() if "kappa" in f.extra}
        if not any(k.get("estimated") for k in ks.values()):
            return None
        parts = ", ".join(f"{j} {k['value']:.2f} (se {k['se']:.2f}, n {k['n']})"
                          if k.get("estimated") else
                          f"{j} 1 (n {k['n']}: too few verdicts to estimate it)"
                          if k.get("too_few") else f"{j} 1 (all verdicts 0 or 1)"
                          for j, k in ks.items())
        floor = [j for j, k in ks.items() if k.get("at_floor")]
        short = [j for j, k in ks.items() if k.get("estimated") and not k.get("converged")
                 and k.get("stopped") != "quadrature"]
        unresolved = [j for j, k in ks.items() if k.get("stopped") == "quadrature"]
        few = [j for j, k in ks.items() if k.get("too_few")]
        return (f"dispersion kappa per judge: {parts}. kappa is the variance of a judge's "
                "verdicts as a fraction of one binary verdict's p (1 - p): ties (0.5) make it "
                "below 1, about 0.5 when each verdict is the mean of two independently drawn "
                "orders; the marginal fit counts each verdict 1 / kappa times, so ties do not "
                "pull phi toward 0 (they did, by 0.2 on a planted 1.2, when each counted once)"
                + (f"; at its floor {KAPPA_MIN} (nearly every verdict a tie): "
                   f"{', '.join(floor)}" if floor else "")
                + (f"; kept at 1 below {KAPPA_MIN_N} verdicts: {', '.join(few)}"
                   if few else "")
                + (f"; NOT CONVERGED after {KAPPA_STEPS} steps (its last value is used): "
                   f"{', '.join(short)}" if short else "")
                + ("; NOT CONVERGED: kappa kept falling while psi grew past what the "
                   f"{GH_NODES} quadrature nodes resolve, so the last step they integrated is "
                   "used (kappa and psi are not told apart by these data; BC and the share "
                   f"are from that step): {', '.join(unresolved)}" if unresolved else ""))

    def notes(self) -> list[str]:
        """What limits the correction, which standard errors the intervals use and the
        judges' dispersion kappa, said beside the numbers."""
        out = [x for x in (self.se_note(), self.kappa_note()) if x]
        if self.control != "bias":
            return out
        k = self.resolution()["distinct_values"]
        return out + [f"the bias share is the part of the win rate explained by the factor's "
                f"scores: their difference took {k} distinct value{'s' if k != 1 else ''} on "
                f"these {self.delta.size} queries, and the correction removes only the "
                "factor's effect those levels resolve; an effect finer than the scorer's "
                "levels (e.g. length within one level) stays in BC"]

    def as_dict(self) -> dict[str, Any]:
        return {
            "control": self.control,
            "control_resolution": self.resolution(),
            "notes": self.notes(),
            "stage1": {"sigma_gamma": self.stage1.sigma, "converged": self.stage1.converged,
                       "theta": dict(zip(self.judges, self.stage1.theta.tolist(), strict=True)),
                       "phi": dict(zip(self.judges, self.stage1.phi.tolist(), strict=True))},
            "gamma": dict(zip(self.query_ids, self.stage1.gamma.tolist(), strict=True)),
            "delta": dict(zip(self.query_ids, self.delta.tolist(), strict=True)),
            "judges": {j: f.as_dict() for j, f in self.per_judge.items()},
        }


ESTIMATORS = ("marginal", "two_stage")


def fit(Y: np.ndarray, delta: np.ndarray, judges: Sequence[str], query_ids: Sequence[str],
        control: str = "bias", loo: bool = True, estimator: str = "marginal",
        se: str = SE_DEFAULT) -> MitigateFit:
    """Y: (J, N) with nan where a judge has no (valid) verdict. `estimator`: "marginal" (the
    default, `fit_marginal`) or "two_stage" (the paper's Stage I + Stage II; `loo`: Stage II
    of judge m uses gamma fitted without judge m). `se`: the intervals' covariance
    (SE_METHODS: "larger", the default, is the model's widened to the sandwich's)."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"mitigate: estimator={estimator!r}: expected one of {ESTIMATORS}")
    Y = np.asarray(Y, dtype=float)
    delta = np.asarray(delta, dtype=float)
    if Y.ndim != 2 or Y.shape != (len(judges), len(query_ids)) or delta.shape != (Y.shape[1],):
        raise ValueError(f"mitigate: Y must be (judges={len(judges)}, queries="
                         f"{len(query_ids)}) and delta ({len(query_ids)},); got {Y.shape} and "
                         f"{delta.shape}")
    if not np.all(np.isfinite(delta)):
        raise ValueError("mitigate: the control has missing values; drop those queries first")
    if estimator == "marginal":
        return fit_marginal(Y, delta, judges, query_ids, control, se=se)
    s1 = stage_one(Y, delta)
    per = {}
    for i, j in enumerate(judges):
        gamma = s1.gamma
        if loo and len(judges) > 1:
            # gamma from the other judges only: judge i's own verdicts do not leak into the
            # covariate its Stage II is fitted on
            gamma = stage_one(np.delete(Y, i, axis=0), delta).gamma
        per[j] = stage_two(Y[i], delta, gamma, se=se)
        per[j].extra["gamma_from"] = "other judges" if loo and len(judges) > 1 else "all"
        per[j].extra["estimator"] = "two_stage"
    return MitigateFit(list(judges), list(query_ids), control, delta, s1, per)


# ---- one-step marginal likelihood (the default) ----------------------------------------------
#
# The same model with the query effect integrated out instead of plugged in:
#     y_mx ~ Bernoulli(sigmoid(theta_m + phi_m Delta_x + psi_m z_x)),   z_x ~ N(0, 1),
# so gamma_x = z_x and psi_m carries its scale per judge (Stage II's psi with sigma absorbed).
# The plug-in two-stage fit treats the estimated gamma as known; with a handful of judges per
# query that estimate is noisy and, logistic regression being non-collapsible, phi is pulled
# toward 0 and its interval undercovers (measured by simulation: 72-87% coverage of a planted
# phi at nominal 95%, 3-10 judges; benchmarks/hubj_truth.py). Integrating z out (Gauss-Hermite
# quadrature) gives the maximum-likelihood estimates of the model itself, with standard errors
# from the observed information. BC_m and the bias share average, per query, over z's
# posterior; their intervals add the posterior variance of z to the delta-method variance.
# A tie verdict (0.5) enters as a quasi-likelihood, counted 1 / kappa_m times (below).

GH_NODES = 21


def _gh(n: int = GH_NODES) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.hermite_e.hermegauss(n)  # weight exp(-x^2 / 2): N(0, 1) nodes
    return x, w / w.sum()


def _marginal_parts(params: np.ndarray, Y: np.ndarray, mask: np.ndarray, d: np.ndarray,
                    z: np.ndarray, w: np.ndarray, kw: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query: the log marginal likelihood (N,), the posterior weights of z's nodes (N, Q)
    and the posterior-weighted residuals y - p per judge, query and node (J, N, Q). `kw`: each
    judge's verdicts counted 1 / kappa times (`_kappa`); None counts each once (every judge's
    kappa is 1), by the same operations as before kappa existed."""
    J = Y.shape[0]
    th, ph, ps = params[:J], params[J:2 * J], params[2 * J:]
    eta = th[:, None, None] + ph[:, None, None] * d[None, :, None] \
        + ps[:, None, None] * z[None, None, :]
    y, m = Y[:, :, None], mask[:, :, None]
    ll = np.where(m, y * -np.logaddexp(0.0, -eta) + (1 - y) * -np.logaddexp(0.0, eta), 0.0)
    if kw is not None:
        ll = ll * kw[:, None, None]
    a = ll.sum(0) + np.log(w)[None]
    lse = special.logsumexp(a, axis=1)
    post = np.exp(a - lse[:, None])
    r = np.where(m, y - special.expit(eta), 0.0) * post[None]
    if kw is not None:
        r = r * kw[:, None, None]
    return lse, post, r


def _query_scores(r: np.ndarray, d: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Each query's score (N, 3J) over (theta, phi, psi) of every judge, without the prior:
    the queries are independent given the parameters, so these are what a sandwich
    clustered by query sums (their sum is the gradient of the unpenalised likelihood)."""
    rp = r.sum(2)
    return np.concatenate([rp.T, (rp * d[None]).T, (r * z[None, None]).sum(2).T], axis=1)


def _marginal_terms(params: np.ndarray, Y: np.ndarray, mask: np.ndarray, d: np.ndarray,
                    z: np.ndarray, w: np.ndarray, kw: np.ndarray | None = None
                    ) -> tuple[float, np.ndarray, np.ndarray]:
    """Negative penalised log marginal likelihood, its gradient, and the posterior weights of
    z's nodes per query (N, Q). y = 0.5 (ties) enters as a quasi-likelihood, each judge's
    counted 1 / kappa times (`kw`, see `_kappa`)."""
    lse, post, r = _marginal_parts(params, Y, mask, d, z, w, kw)
    l2 = 1.0 / PRIOR_SD**2
    grad = _query_scores(r, d, z).sum(0)
    value = float(lse.sum()) - 0.5 * l2 * float(params @ params)
    return -value, -(grad - l2 * params), post


# ---- dispersion of tie verdicts (kappa) ------------------------------------------------------
#
# A verdict in {0, 0.5, 1} has variance kappa p (1 - p) with kappa <= 1 (y^2 <= y on [0, 1]):
# the mean of two independently drawn orders has kappa = 1/2, a binary verdict kappa = 1.
# Inside the integral over z, the Bernoulli quasi-likelihood counted once per verdict weighs a
# two-order verdict as one draw: z's posterior is then too wide, psi-hat shrinks (0.27 where
# 1.0 was planted) and phi-hat goes to the population-averaged slope, toward 0 (-0.20 on a
# planted 1.2; coverage of the planted phi 79-87%). Counting each verdict of judge m
# 1 / kappa_m times (the quasi-likelihood of a dispersion-kappa family) restores the two
# draws' likelihood exactly when kappa = 1/2 (y = 1: p^2; y = 1/2: p (1 - p) up to a
# constant). kappa_m is estimated by a fixed point beside the fit:
#     kappa_m = sum_x E_post[(y_mx - p_mx)^2] / sum_x E_post[p_mx (1 - p_mx)]
# (z's posterior at the current fit; at the truth both sums average to the same
# E_z[kappa p (1 - p)] and E_z[p (1 - p)]), clipped to [KAPPA_MIN, 1]. A judge whose verdicts
# are all 0 or 1 keeps kappa = 1 exactly (a Bernoulli's variance is p (1 - p)); when every
# judge's are, the fit is the one before kappa existed, operation for operation. By
# simulation (benchmarks/mitigate_ties.py) kappa took the bias of phi-hat from -0.16 / -0.20
# to within a few hundredths and the model se to the sd of phi-hat.
# The two-stage fit has no kappa: its Stage II is a logistic fit of one judge with gamma
# fixed, whose estimating equation sum (y - p) x = 0 is unbiased for fractional y, and a
# constant weight per judge would not move its estimates (only the weak prior's share); its
# phi error with ties was no larger than without (-0.09 against -0.11 planted 1.2, 4 judges;
# -0.14 against -0.14, 3 judges): that is the plug-in attenuation the marginal fit exists for.

KAPPA_MIN = 0.05   # a floor: a judge answering 0.5 nearly always would otherwise weigh ~inf
# Fewer valid verdicts than this and a judge's kappa is not estimated (kept at 1, the wider
# binomial variance): with two verdicts the fit matches them almost exactly, kappa fell to its
# floor and each verdict counted 20 times (BC 0.94 [0.79, 1.00] from 0.5 and 1.0; a reviewer)
KAPPA_MIN_N = 20
KAPPA_STEPS = 60   # 30 stopped short on sparse data (85% of Y missing converged at step 49)
KAPPA_TOL = 1e-3


# ---- kappa's fixed point: when it has settled ------------------------------------------------
#
# kappa_m and judge m's loading psi_m trade off: a smaller kappa counts the judge's verdicts
# more, its own ties and non-ties then say more about z, psi_m grows and the next kappa is
# smaller again. Where the model fits (normal query effects) the other judges pin psi_m and
# the fixed point contracts (steps 0.05, 0.01, 0.004, 0.001: ratio about 0.4); where it does
# not (the sim judges' query effect is the humans' label, two-valued) kappa of a judge with
# no control effect drifted by 0.004-0.01 a step for 30 steps (0.63 -> 0.30, psi 0.6 -> 2.9)
# until psi outgrew the 21 nodes (spacing 0.68: sigmoid(psi z) jumps between them), the
# quadrature put each tie on the node z = 0, every residual vanished and kappa fell to its
# floor in two steps: psi 12.3, phi 0, BC 0.486 [0.480, 0.493] beside a win interval
# [0.438, 0.535], marked converged because a step at the floor moves nothing (the tester's
# run; 3 of 10 seeds). The BC of that judge was 0.487 for every kappa from 0.3 to 1, its
# interval [0.44, 0.53]. So a step is taken as settled only when its change is below
# KAPPA_TOL and the change still to come (geometric, from the ratios of the last changes) is
# under half of kappa's standard error (`_settled`), and each refit's likelihood is
# integrated again on 2 * GH_NODES + 1 nodes: a difference above QUAD_TOL (log-likelihood
# units) stops the fixed point at the step before, not converged, and any fit whose
# integral the check fails is not converged either. On the tester's 10 seeds (judge seeds
# 300-329) the tie judge's BC interval is now 0.82-0.89 of the win interval's width and
# covers the truth 0.493 in 10 of 10 (was 0.14 of it in 3, 2 of them missing); 7 of the 10
# fits say NOT CONVERGED (kappa still drifting: 3 stopped by the quadrature check, 4 at the
# step cap), 3 converge (kappa 0.37-0.44). These data do not tell kappa from psi; BC does
# not depend on which (0.487 for kappa 0.3 to 1 on the first run).

QUAD_TOL = 0.5  # log-likelihood units: negligible beside a likelihood ratio test's 1.92
RATIO_CAP = 0.99  # a ratio of changes at or above 1 is a drift: 99 more steps of it assumed
KAPPA_TAIL_SE = 0.5  # settled: the change still to come under half of kappa's se


def _settled(changes: Sequence[np.ndarray], se: np.ndarray) -> bool:
    """Whether kappa's fixed point has settled, from its changes per judge so far (last
    last): the last change below KAPPA_TOL, and the change still to come (geometric: change
    r / (1 - r), r the largest ratio of successive changes over the last three steps, capped
    at RATIO_CAP; a slow drift after a fast start is not taken for convergence) under
    KAPPA_TAIL_SE of each judge's kappa se. Fewer than three steps: not settled."""
    if len(changes) < 3:
        return False
    c = np.asarray(changes[-3:])
    if float(np.max(c[-1])) >= KAPPA_TOL:
        return False
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(c[:-1] > 0, c[1:] / c[:-1], 0.0).max(0)
    r = np.minimum(r, RATIO_CAP)
    return bool(np.all(c[-1] * r / (1.0 - r) <= KAPPA_TAIL_SE * se))


def _quadrature_error(params: np.ndarray, Y: np.ndarray, mask: np.ndarray, d: np.ndarray,
                      kw: np.ndarray | None) -> float:
    """|log marginal likelihood on GH_NODES nodes - on 2 GH_NODES + 1|: about 0 while the
    nodes resolve every sigmoid(psi z), large once a psi outgrows their spacing."""
    coarse = _marginal_terms(params, Y, mask, d, *_gh(), kw)[0]
    fine = _marginal_terms(params, Y, mask, d, *_gh(2 * GH_NODES + 1), kw)[0]
    return abs(coarse - fine)


def _fractional(Y: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per judge: whether any valid verdict is neither 0 nor 1 (a tie)."""
    return np.array([bool(np.any((Y[j][mask[j]] != 0.0) & (Y[j][mask[j]] != 1.0)))
                     for j in range(Y.shape[0])])


def _kappa(params: np.ndarray, Y: np.ndarray, mask: np.ndarray, d: np.ndarray, z: np.ndarray,
           w: np.ndarray, post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each judge's kappa (the fixed point's update, unclipped) and its standard error from
    the per-query terms (a ratio of sums: sqrt(sum (a_x - kappa b_x)^2) / sum b_x)."""
    J = Y.shape[0]
    eta = params[:J, None, None] + params[J:2 * J, None, None] * d[None, :, None] \
        + params[2 * J:, None, None] * z[None, None, :]
    p = special.expit(eta)
    a = np.where(mask, (post[None] * (Y[:, :, None] - p) ** 2).sum(2), 0.0)
    b = np.where(mask, (post[None] * p * (1 - p)).sum(2), 0.0)
    k = a.sum(1) / np.maximum(b.sum(1), 1e-300)
    n = mask.sum(1)
    se = np.sqrt(((a - k[:, None] * b) ** 2 * mask).sum(1) * n / np.maximum(n - 1, 1)) \
        / np.maximum(b.sum(1), 1e-300)
    return k, se


def _kappa_record(fractional: bool, value: float, se: float, n: int, steps: int,
                  converged: bool, stopped: str = "") -> dict[str, Any]:
    """What results.json says of a judge's kappa: its value, se and n, and what it means;
    `stopped`: why the fixed point stopped unsettled ("steps": the step cap; "quadrature":
    a refit whose psi the nodes could not integrate, the step before it kept)."""
    if not fractional:
        return {"value": 1.0, "se": 0.0, "n": n, "estimated": False,
                "meaning": KAPPA_MEANING + "; every verdict of this judge is 0 or 1: kappa 1, "
                                          "not estimated"}
    if n < KAPPA_MIN_N:
        return {"value": 1.0, "se": 0.0, "n": n, "estimated": False, "too_few": True,
                "meaning": KAPPA_MEANING + f"; fewer than {KAPPA_MIN_N} verdicts: kappa 1 "
                                          "(the binomial variance, wider), not estimated"}
    return {"value": value, "se": se, "n": n, "estimated": True, "steps": steps,
            "converged": converged, "at_floor": value <= KAPPA_MIN,
            **({"stopped": stopped} if not converged and stopped else {}),
            "meaning": KAPPA_MEANING}


KAPPA_MEANING = ("kappa: the variance of this judge's verdicts as a fraction of a single "
                 "binary verdict's p (1 - p); ties (0.5) make it below 1, about 0.5 for the "
                 "mean of two independently drawn orders; the marginal fit counts each "
                 "verdict 1 / kappa times, so ties do not pull phi toward 0")


def fit_marginal(Y: np.ndarray, delta: np.ndarray, judges: Sequence[str],
                 query_ids: Sequence[str], control: str = "bias", se: str = SE_DEFAULT
                 ) -> MitigateFit:
    """Maximum (weakly penalised) marginal likelihood of all judges jointly; see above.
    `se`: which covariance the intervals use (SE_METHODS; `_choose_cov`)."""
    from scipy import optimize

    J, N = Y.shape
    mask = np.isfinite(Y)
    Yf = np.where(mask, Y, 0.0)
    z, w = _gh()
    phi_free = np.array([np.ptp(delta[mask[j]]) > 0 if mask[j].any() else False
                         for j in range(J)])

    kw: np.ndarray | None = None  # 1 / kappa per judge; None while every kappa is 1

    def f(p: np.ndarray) -> tuple[float, np.ndarray]:
        v, g, _ = _marginal_terms(p, Yf, mask, delta, z, w, kw)
        g[J:2 * J][~phi_free] = 0.0
        return v, g

    def solve(x0: np.ndarray, **tight: float) -> Any:
        return optimize.minimize(f, x0, jac=True, method="L-BFGS-B",
                                 options={"maxiter": 500, "gtol": 1e-7, **tight})

    res = solve(np.concatenate([np.zeros(J), np.zeros(J), np.full(J, 0.5)]))
    # kappa by fixed point (section "dispersion of tie verdicts"), each step refitting from
    # the last; judges whose verdicts are all 0/1 keep kappa = 1 and, if every judge's are,
    # nothing here runs
    frac = _fractional(Yf, mask)
    estimate = frac & (mask.sum(1) >= KAPPA_MIN_N)
    kappa, kappa_se = np.ones(J), np.zeros(J)
    kappa_steps, kappa_converged, stopped = 0, True, ""
    if estimate.any():
        kappa_converged = False
        changes: list[np.ndarray] = []
        for step in range(1, KAPPA_STEPS + 1):
            kappa_steps = step
            post = _marginal_terms(res.x, Yf, mask, delta, z, w, kw)[2]
            k_raw, k_se = _kappa(res.x, Yf, mask, delta, z, w, post)
            k_new = np.where(estimate, np.clip(k_raw, KAPPA_MIN, 1.0), 1.0)
            changes.append(np.abs(k_new - kappa))
            last = (kappa, kw, res)
            kappa = k_new
            kw = 1.0 / kappa
            # from the last fit, but every psi at least 0.5 away from 0: psi = 0 for all
            # judges is a stationary point (z -> -z), where a fit with kappa 1 can stop and
            # a refit started there stays; tighter than the first fit, so that kappa's steps
            # are not lost in the optimiser's tolerance
            x0 = res.x.copy()
            x0[2 * J:] = np.where(np.abs(x0[2 * J:]) < 0.5, 0.5, x0[2 * J:])
            res = solve(x0, ftol=1e-13)
            if _quadrature_error(res.x, Yf, mask, delta, kw) > QUAD_TOL:
                # a psi too large for the nodes (section "kappa's fixed point"): the last
                # step whose likelihood the nodes did integrate is kept, marked not converged
                kappa, kw, res = last
                stopped = "quadrature"
                break
            if _settled(changes, np.where(estimate, k_se, np.inf)):
                kappa_converged = True
                break
        if not kappa_converged and not stopped:
            stopped = "steps"
        post = _marginal_terms(res.x, Yf, mask, delta, z, w, kw)[2]
        kappa_se = np.where(estimate, _kappa(res.x, Yf, mask, delta, z, w, post)[1], 0.0)
    quad_ok = _quadrature_error(res.x, Yf, mask, delta, kw) <= QUAD_TOL
    p = res.x
    # psi's sign is not identified (z -> -z): report the orientation where most judges' psi
    # is positive
    if np.sum(p[2 * J:]) < 0:
        p[2 * J:] *= -1
    k = p.size
    H = np.zeros((k, k))
    eps = 1e-5
    for i in range(k):
        e = np.zeros(k)
        e[i] = eps
        H[:, i] = (f(p + e)[1] - f(p - e)[1]) / (2 * eps)
    H = (H + H.T) / 2
    cov_model = np.linalg.pinv(H)
    _, post, r = _marginal_parts(p, Yf, mask, delta, z, w, kw)
    # sandwich clustered by query, with the small-sample factor N / (N - 1); a phi pinned at 0
    # (its control constant for the judge) has no score
    S = _query_scores(r, delta, z)
    S[:, J:2 * J][:, ~phi_free] = 0.0
    cov_rob = cov_model @ (S.T @ S) @ cov_model * (N / max(N - 1, 1))
    gamma = post @ z
    gamma_se = np.sqrt(np.clip(post @ z**2 - gamma**2, 0, None))
    per: dict[str, JudgeFit] = {}
    for j, name in enumerate(judges):
        ix = [j, J + j, 2 * J + j]
        ok = mask[j]

        def summaries(pp: np.ndarray, ok: np.ndarray = ok, j: int = j) -> np.ndarray:
            th, ph, ps = pp[j], pp[J + j], pp[2 * J + j]
            bc = (post[ok] * special.expit(th + ps * z[None])).sum(1).mean()
            full = (post[ok] * special.expit(th + ph * delta[ok, None] + ps * z[None])
                    ).sum(1).mean()
            return np.array([bc, full - bc])

        v = summaries(p)
        G = np.zeros((2, k))
        for i in ix:
            e = np.zeros(k)
            e[i] = 1e-6
            G[:, i] = (summaries(p + e) - summaries(p - e)) / 2e-6
        th, ph, ps = p[ix]
        fb = np.broadcast_to(special.expit(th + ps * z[None]), (int(ok.sum()), z.size))
        fs = special.expit(th + ph * delta[ok, None] + ps * z[None]) - fb
        n = int(ok.sum())
        vpost = [float((((post[ok] * fx**2).sum(1) - (post[ok] * fx).sum(1) ** 2)).sum()) / n**2
                 for fx in (fb, fs)]
        cov, se_info = _choose_cov(cov_model[np.ix_(ix, ix)], cov_rob[np.ix_(ix, ix)], se)
        Gj = G[:, ix]
        sd = np.sqrt(np.clip(np.diag(Gj @ cov @ Gj.T) + np.array(vpost), 0, None))
        yv = Y[j][ok]
        per[name] = JudgeFit(
            float(th), float(ph), float(ps), cov,
            win=win_rate(yv),
            bc=_normal(float(v[0]), float(sd[0]), n, "delta", clip=True),
            bias_share=_share_estimate(float(yv.mean()) - float(v[0]), float(sd[1]), n,
                                       float(ph), math.sqrt(max(float(cov[1, 1]), 0.0))),
            # converged: the optimiser stopped at an optimum, the nodes integrated its
            # likelihood, and (when estimated) kappa's fixed point settled
            n=n, converged=bool(res.success) and quad_ok
            and (kappa_converged or not bool(estimate[j])),
            extra={"estimator": "marginal", "gamma_from": "posterior of z (all judges)",
                   **se_info, "kappa": _kappa_record(bool(frac[j]), float(kappa[j]),
                                                     float(kappa_se[j]), n, kappa_steps,
                                                     kappa_converged, stopped),
                   "quadrature_ok": bool(quad_ok)})
    s1 = StageOne(gamma, gamma_se, p[:J].copy(), p[J:2 * J].copy(), 1.0,
                  bool(res.success) and quad_ok and kappa_converged)
    return MitigateFit(list(judges), list(query_ids), control, delta, s1, per)


def _fixed_cov(j: Mapping[str, Any]) -> tuple[np.ndarray, str]:
    """The saved fit's 2x2 covariance of (phi, psi): its joint covariance when the fit saved
    one ("cov"), else the diagonal of their standard errors (results written before the
    covariance was saved; phi and psi are then taken as uncorrelated)."""
    cov = j.get("cov")
    if isinstance(cov, Mapping) and isinstance(cov.get("matrix"), list):
        names = list(cov.get("params") or ["theta", "phi", "psi"])
        m = np.asarray(cov["matrix"], dtype=float)
        ix = [names.index("phi"), names.index("psi")]
        return m[np.ix_(ix, ix)], "the fit's covariance of phi and psi"
    se = [float((j.get(k) or {}).get("se") or 0.0) for k in ("phi", "psi")]
    return np.diag(np.square(se)), ("the fit's standard errors of phi and psi (no covariance "
                                    "saved: taken as uncorrelated)")


def _fit_se_method(j: Mapping[str, Any]) -> str:
    """Which covariance a saved fit's (phi, psi) uncertainty is: the fit's own record, or the
    model's for a fit saved before the method was recorded (it used no other)."""
    m = j.get("se_method")
    return str(m) if m else "model (the fit predates se_method: model-based)"


def _fit_kappa(j: Mapping[str, Any]) -> tuple[float, str]:
    """The dispersion kappa a saved marginal fit found for the judge (section "dispersion of
    tie verdicts"), and where it came from: a fit saved before kappa existed has none and is
    taken as 1, the binomial variance it was fitted with."""
    k = j.get("kappa")
    if isinstance(k, Mapping) and k.get("value") is not None:
        return float(k["value"]), "the fit's"
    return 1.0, "the fit predates kappa: taken as 1 (the binomial variance it was fitted with)"


def apply(saved: Mapping[str, Any], judge: str, y: Sequence[float], delta: Sequence[float],
          query_ids: Sequence[str]) -> dict[str, Any]:
    """Correct new verdicts of a fitted judge: phi and psi are taken from the fit; only a new
    intercept theta' is fitted by ML. Returns win, bc, bias_share, theta'.

    A marginal fit's judge (the default) is applied as it was fitted: each query's effect z
    integrated over N(0, 1) (`_apply_marginal`). A two-stage fit's judge (or one whose fit
    did not record its estimator) gets the known queries' gamma as a covariate (0 for new
    queries), as its Stage II did (`_apply_plugin`). Plugging a marginal fit's posterior-mean
    gamma in instead biased the share by +0.02 to +0.04 (3 simulated judges, planted psi 0 to
    1.5, 150 queries fitted, 300 new; integrated: within 0.003).

    The intervals carry both sources of error: theta' from the new verdicts, and the fit's
    uncertainty in phi and psi (delta method with the saved covariance). phi drives the
    share, so treating it as known gave a share interval a seventh as wide as the fit's own
    (0.018 [0.02, 0.02] against [0.008, 0.040]) covering a planted share in 9 of 20 runs.
    The new verdicts are taken as independent of the fit's."""
    j = saved["judges"].get(judge)
    if j is None:
        raise ValueError(f"no fit for judge {judge!r}; fitted judges: "
                         f"{', '.join(saved['judges'])}")
    how = _apply_marginal if j.get("estimator") == "marginal" else _apply_plugin
    out = how(saved, j, judge, y, delta, query_ids)
    dv = np.asarray(delta, dtype=float)
    dv = dv[np.isfinite(dv) & np.isfinite(np.asarray(y, dtype=float))]
    # how finely the control separates these queries: the correction removes no more
    out["control_resolution"] = {"distinct_values": int(np.unique(np.round(dv, 9)).size),
                                 "n_queries": int(dv.size)}
    return out


def _apply_plugin(saved: Mapping[str, Any], j: Mapping[str, Any], judge: str,
                  y: Sequence[float], delta: Sequence[float], query_ids: Sequence[str]
                  ) -> dict[str, Any]:
    """`apply` with gamma as a covariate (a two-stage fit): theta' by logistic ML with the
    offset phi d + psi gamma. theta' moves with phi and psi through its score equation
    sum(y - p) = l2 theta': d theta'/d phi = -sum(w d) / (sum(w) + l2), likewise for psi
    with gamma; gamma of known queries is fixed (its spread is not saved in the results)."""
    yv = np.asarray(y, dtype=float)
    dv = np.asarray(delta, dtype=float)
    ok = np.isfinite(yv) & np.isfinite(dv)
    gam_map = saved.get("gamma", {})
    g = np.array([float(gam_map.get(q, 0.0)) for q in query_ids])[ok]
    yv, dv = yv[ok], dv[ok]
    phi, psi = j["phi"]["value"], j["psi"]["value"]
    off = phi * dv + psi * g
    l2 = 1.0 / PRIOR_SD**2
    f = fit_logistic(np.ones((yv.size, 1)), yv, offset=off, l2=l2)
    theta = float(f.coef[0])
    ones = np.ones((yv.size, 1))
    var_rob = float(_logistic_sandwich(ones, yv, f.coef, f.cov, offset=off)[0, 0])
    se = math.sqrt(max(float(f.cov[0, 0]), var_rob))  # the model's, or the sandwich if larger
    p_full, p_bc = _p(theta + off), _p(theta + psi * g)
    bc = float(p_bc.mean())
    w_full, w_bc = p_full * (1 - p_full), p_bc * (1 - p_bc)
    # d theta' / d (phi, psi), then d BC / d (phi, psi); the share (win - BC) moves opposite
    dtheta = -np.array([(w_full * dv).sum(), (w_full * g).sum()]) / (w_full.sum() + l2)
    grad_bc = float(w_bc.mean()) * dtheta + np.array([0.0, float((w_bc * g).mean())])
    cov_fixed, cov_source = _fixed_cov(j)
    var_fixed = max(float(grad_bc @ cov_fixed @ grad_bc), 0.0)
    se_bc = math.sqrt((float(w_bc.mean()) * se) ** 2 + var_fixed)
    share = float(yv.mean()) - bc  # win - BC, as shown
    se_share = math.sqrt((float(w_full.mean() - w_bc.mean()) * se) ** 2 + var_fixed)
    return _applied(judge, query_ids, gam_map, yv, (bc, se_bc), (share, se_share),
                    (theta, se), (phi, psi), cov_fixed, cov_source, var_fixed,
                    "theta' fitted on these verdicts; phi and psi from the fit, their "
                    "uncertainty carried into the intervals (delta method); gamma fixed from "
                    "the fit (0 for new queries)", _fit_se_method(j))


def _applied(judge: str, query_ids: Sequence[str], gam_map: Mapping[str, Any], yv: np.ndarray,
             bc: tuple[float, float], share: tuple[float, float], theta: tuple[float, float],
             fixed: tuple[float, float], cov_fixed: np.ndarray, cov_source: str,
             var_fixed_share: float, note: str, fit_se_method: str,
             kappa: tuple[float, str] | None = None) -> dict[str, Any]:
    """What `apply` returns, from either way of applying (`_apply_plugin`, `_apply_marginal`):
    BC and the bias share as (value, se), theta' as (value, se), (phi, psi) and their saved
    covariance, and the part of the share's variance that is the fit's; `fit_se_method`: which
    covariance the fit saved (`_fit_se_method`); `kappa`: the dispersion the new verdicts'
    model variance used and where it came from (`_fit_kappa`; marginal fits only)."""
    n = int(yv.size)
    phi, psi = fixed
    se_fixed = np.sqrt(np.clip(np.diag(cov_fixed), 0, None))
    return {
        "judge": judge, "n": n,
        "n_new_queries": int(sum(1 for q in query_ids if q not in gam_map)),
        "win": win_rate(yv).as_dict(),
        "bc": _normal(bc[0], bc[1], n, "delta", clip=True).as_dict(),
        "bias_share": _normal(share[0], share[1], n, "delta").as_dict(),
        "theta": {"value": theta[0], "se": theta[1]}, "phi": phi, "psi": psi,
        "fixed_from_fit": {"phi": {"value": phi, "se": float(se_fixed[0])},
                           "psi": {"value": psi, "se": float(se_fixed[1])},
                           "uncertainty_from": cov_source, "se_method": fit_se_method,
                           **({"kappa": {"value": kappa[0], "from": kappa[1]}}
                              if kappa is not None else {})},
        # the new verdicts' part: the model's variance, or the sandwich's where larger
        "se_method": "larger", "se_method_text": SE_LABELS["larger"],
        # the share of the BC / bias-share variance that is the fit's (phi, psi), not theta'
        "share_var_from_fit": (var_fixed_share / share[1]**2) if share[1] > 0 else None,
        "note": note,
    }


def _marginal_intercept(y: np.ndarray, off: np.ndarray, psi: float, z: np.ndarray,
                        w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """theta' maximising the weakly penalised likelihood of one verdict per query with z
    integrated out: p_x = sum_q w_q sigmoid(theta' + off_x + psi z_q). Fisher scoring with
    step halving. Returns theta', p_x and dp_x / d theta'."""
    l2 = 1.0 / PRIOR_SD**2

    def terms(t: float) -> tuple[float, np.ndarray, np.ndarray]:
        s = _p(t + off[:, None] + psi * z[None])
        pb = np.clip(s @ w, 1e-12, 1 - 1e-12)
        ll = float((y * np.log(pb) + (1 - y) * np.log1p(-pb)).sum()) - 0.5 * l2 * t * t
        return ll, pb, (s * (1 - s)) @ w

    m = float(np.clip(y.mean(), 0.01, 0.99))
    t = math.log(m / (1 - m)) - float(np.mean(off))
    ll, pb, dp = terms(t)
    for _ in range(200):
        score = float(((y - pb) * dp / (pb * (1 - pb))).sum()) - l2 * t
        info = float((dp**2 / (pb * (1 - pb))).sum()) + l2
        step = score / info
        h = 1.0
        while True:
            new = terms(t + h * step)
            if new[0] >= ll - 1e-12 * abs(ll) or h < 1e-8:
                break
            h /= 2
        t += h * step
        ll, pb, dp = new
        if abs(h * step) < 1e-12:
            break
    return t, pb, dp


def _apply_marginal(saved: Mapping[str, Any], j: Mapping[str, Any], judge: str,
                    y: Sequence[float], delta: Sequence[float], query_ids: Sequence[str]
                    ) -> dict[str, Any]:
    """`apply` for a marginal fit, as it was fitted: y_x ~ Bernoulli(E_z sigmoid(theta' +
    phi d_x + psi z)), z ~ N(0, 1) per query (Gauss-Hermite); BC = E_z sigmoid(theta' +
    psi z); share = win - BC. Every query's z is integrated over N(0, 1): the fit's
    posterior of z on known queries is not saved, and the prior keeps the estimate
    consistent. Variance: the delta method in y (theta' moves with each y_x through its
    score equation) plus the fit's (phi, psi) covariance, the gradient taken by refitting
    theta' at phi +- h, psi +- h."""
    yv = np.asarray(y, dtype=float)
    dv = np.asarray(delta, dtype=float)
    ok = np.isfinite(yv) & np.isfinite(dv)
    yv, dv = yv[ok], dv[ok]
    phi, psi = float(j["phi"]["value"]), float(j["psi"]["value"])
    z, w = _gh()
    l2 = 1.0 / PRIOR_SD**2

    def estimate(ph: float, ps: float) -> tuple[float, float, np.ndarray, np.ndarray, float]:
        t, pb, dp = _marginal_intercept(yv, ph * dv, ps, z, w)
        bc = float(_p(t + ps * z) @ w)
        return bc, float(yv.mean()) - bc, pb, dp, t

    bc, share, pb, dp, theta = estimate(phi, psi)
    n = int(yv.size)
    a = dp / (pb * (1 - pb))
    info = float((a * dp).sum()) + l2
    sb = _p(theta + psi * z)
    dbc = float((sb * (1 - sb)) @ w)
    # each verdict's variance: the model's and the squared residual (the sandwich, times
    # n / (n - 1)); each interval takes the larger total, as the fit's do (`_larger`). The
    # model's is Var_z(p) + E_z[kappa p (1 - p)] = pb (1 - pb) - (1 - kappa) E_z[p (1 - p)]
    # (dp is E_z[p (1 - p)]): the binomial's, pb (1 - pb), when kappa is 1
    kappa, kappa_from = _fit_kappa(j)
    var_y = pb * (1 - pb) - (1.0 - kappa) * dp
    res2 = (yv - pb) ** 2 * (n / max(n - 1, 1))
    g_bc = dbc * a / info  # d BC / d y_x
    var_bc_y = max(float((g_bc**2 * var_y).sum()), float((g_bc**2 * res2).sum()))
    var_share_y = max(float(((1.0 / n - g_bc) ** 2 * var_y).sum()),
                      float(((1.0 / n - g_bc) ** 2 * res2).sum()))
    cov_fixed, cov_source = _fixed_cov(j)
    grad = np.zeros((2, 2))  # rows: BC, share; columns: phi, psi
    for k, v in enumerate((phi, psi)):
        h = 1e-4 * max(1.0, abs(v))
        up = estimate(*((v + h, psi) if k == 0 else (phi, v + h)))
        dn = estimate(*((v - h, psi) if k == 0 else (phi, v - h)))
        grad[:, k] = [(up[0] - dn[0]) / (2 * h), (up[1] - dn[1]) / (2 * h)]
    var_fixed = np.clip(np.einsum("ik,kl,il->i", grad, cov_fixed, grad), 0, None)
    se_bc = math.sqrt(var_bc_y + float(var_fixed[0]))
    se_share = math.sqrt(var_share_y + float(var_fixed[1]))
    var_theta = max(1.0 / info - (1.0 - kappa) * float(((a / info) ** 2 * dp).sum()),
                    float(((a / info) ** 2 * res2).sum()))
    return _applied(judge, query_ids, saved.get("gamma", {}), yv, (bc, se_bc),
                    (share, se_share), (theta, math.sqrt(var_theta)), (phi, psi), cov_fixed,
                    cov_source, float(var_fixed[1]),
                    "theta' fitted on these verdicts with each query's effect integrated over "
                    "N(0, 1), as in the marginal fit; phi and psi from the fit, their "
                    "uncertainty carried into the intervals (delta method)", _fit_se_method(j),
                    kappa=(kappa, kappa_from))


# ---- simulation with a planted truth (tests, acceptance scripts) -----------------------------

@dataclass
class Planted:
    Y: np.ndarray
    delta: np.ndarray
    gamma: np.ndarray
    theta: np.ndarray
    phi: np.ndarray
    psi: np.ndarray

    def bc(self, j: int) -> float:
        return float(_p(self.theta[j] + self.psi[j] * self.gamma).mean())

    def bias_share(self, j: int) -> float:
        full = _p(self.theta[j] + self.phi[j] * self.delta + self.psi[j] * self.gamma).mean()
        return float(full) - self.bc(j)


def simulate(n_queries: int, theta: Sequence[float], phi: Sequence[float],
             psi: Sequence[float] | None = None, gamma_sd: float = 1.0, seed: int = 0,
             tie_rate: float = 0.0, orders: int = 1) -> Planted:
    """Verdicts from the model itself: Delta_x = tanh(score difference) with integer 1-5
    scores, gamma_x ~ N(0, gamma_sd^2), y ~ Bernoulli(sigmoid(theta + phi Delta + psi gamma));
    `tie_rate` of the verdicts become 0.5 (ties carry half a win). `orders` = 2: each verdict
    is the mean of two independent draws, as a judge asked in both orders with fresh noise (0.5
    when they disagree): the mean is the model's, the variance p(1 - p) / 2, so the planted
    parameters stay the truth while ties make the binomial variance too large."""
    rng = np.random.default_rng(seed)
    th, ph = np.asarray(theta, float), np.asarray(phi, float)
    ps = np.ones_like(th) if psi is None else np.asarray(psi, float)
    s_c = rng.integers(1, 6, n_queries)
    s_o = rng.integers(1, 6, n_queries)
    delta = np.tanh((s_c - s_o).astype(float))
    gamma = rng.normal(0.0, gamma_sd, n_queries)
    eta = th[:, None] + ph[:, None] * delta[None] + ps[:, None] * gamma[None]
    Y = np.mean([rng.random(eta.shape) < _p(eta) for _ in range(max(1, orders))], axis=0)
    if tie_rate > 0:
        Y[rng.random(Y.shape) < tie_rate] = 0.5
    return Planted(Y, delta, gamma, th, ph, ps)


__all__ = ["CONTROLS", "ESTIMATORS", "ControlData", "JudgeFit", "MitigateFit", "Planted",
           "StageOne", "apply", "fit", "fit_marginal", "per_query", "simulate", "stage_one",
           "stage_two"]
