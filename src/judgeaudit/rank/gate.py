"""Trusted-anchor gate: use the covariate correction only when a few trusted labels say it
helps. Blind debiasing is harmful when a covariate truly carries quality (longer answers
that are longer because they say more): the bias-aware model then subtracts real quality.

The rule (`RULE`, stated in every result):

1. Agreement of a ranking with the trusted pairs: the mean over the pairs of its posterior
   probability that the truly better item is the better one, P(theta_i > theta_j) under the
   fit's Laplace posterior (a pair ordered by a hair counts about half, not fully right or
   wrong; the fraction ordered correctly is reported too). The two rankings are compared
   pair by pair: D = agreement(corrected) - agreement(naive), its standard error se and
   95% Student-t interval over the pairs.
2. If that interval excludes 0, the trusted pairs decide: correction on if D > 0, off if
   D < 0.
3. Otherwise they cannot tell the two rankings apart, and the simpler (naive) ranking is
   kept unless a bias term's 95% interval excludes 0 (the judge's verdicts move with the
   covariate) and the trusted pairs do not lean towards the naive ranking (D >= -se). The
   bias terms are the covariate coefficients c; the position term kappa only when there
   are no covariates (with both orders shown it barely moves the ranking).

Why 3 asks for both: the bias-aware model tells a bias from quality only by assuming item
quality is unrelated to the covariate. When length really tracks quality, c comes out
positive with an interval that excludes 0 although the judge has no length bias (72% of the
simulated pools of benchmarks/rank_gate.py); only the trusted pairs can tell the two cases
apart, and there they lean towards the naive ranking even when not decisively.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from judgeaudit.stats.bradley_terry import BTFit
from judgeaudit.stats.intervals import mean_ci, wilson

LEVEL = 0.95
RULE = ("agreement = mean posterior probability that a ranking orders a trusted pair "
        "correctly; D = agreement(corrected) - agreement(naive), paired over the trusted "
        "pairs, with its standard error se and 95% t interval. Interval excludes 0: on if "
        "D > 0, off if D < 0. Otherwise (the trusted pairs cannot tell the rankings apart) "
        "keep the simpler naive ranking unless a bias term's 95% interval excludes 0 "
        "(covariate coefficients; kappa only without covariates) and D >= -se.")


def _strict(trusted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(better, worse) index arrays of the trusted rows with a strict preference."""
    t = np.asarray(trusted, dtype=float).reshape(-1, 3)
    t = t[t[:, 2] != 0.5]
    if t.shape[0] == 0:
        raise ValueError("trusted pairs: need at least one pair with a strict preference")
    i, j = t[:, 0].astype(int), t[:, 1].astype(int)
    first_better = t[:, 2] == 1.0
    return np.where(first_better, i, j), np.where(first_better, j, i)


def trusted_agreement(theta: np.ndarray, trusted: np.ndarray) -> float:
    """Fraction of trusted pairs (rows i, j, y; y = 1 means i truly better, 0 j, 0.5 skipped)
    that ``theta`` orders the same way (exact ties in theta count half)."""
    better, worse = _strict(trusted)
    d = np.asarray(theta, float)[better] - np.asarray(theta, float)[worse]
    return float(np.where(d == 0, 0.5, (d > 0).astype(float)).mean())


def pair_probabilities(fit: BTFit, trusted: np.ndarray) -> np.ndarray:
    """Per trusted pair (strict ones), the posterior probability that the truly better item
    has the larger theta: Phi(d / sd(d)), d = theta_better - theta_worse (Laplace)."""
    better, worse = _strict(trusted)
    d = fit.theta[better] - fit.theta[worse]
    var = fit.var_diff(better, worse)  # exact on a dense and a sparse posterior alike
    sd = np.sqrt(np.clip(var, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, d / np.where(sd > 0, sd, 1.0), np.sign(d) * np.inf)
    return special.ndtr(z)


def _est(values: np.ndarray, level: float, bounds: tuple[float, float] = (-1.0, 1.0)) -> dict:
    """Mean with its Student-t interval (None below two values), clipped to ``bounds``."""
    lo, hi = mean_ci(values, level)
    ok = math.isfinite(lo)
    return {"estimate": float(values.mean()),
            "lo": float(np.clip(lo, *bounds)) if ok else None,
            "hi": float(np.clip(hi, *bounds)) if ok else None,
            "se": float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1
            else None, "n": int(values.size)}


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.3f}"


@dataclass(frozen=True)
class GateDecision:
    enabled: bool  # use the bias-aware ranking
    agree_naive: float  # fraction of trusted pairs ordered correctly
    agree_bias_aware: float
    n_trusted: int
    reason: str = ""
    # agreement as mean posterior probability of the right order, each with a t interval
    agreement_naive: dict = field(default_factory=dict)
    agreement_corrected: dict = field(default_factory=dict)
    difference: dict = field(default_factory=dict)  # corrected - naive, paired
    bias: dict = field(default_factory=dict)  # term -> estimate, se, lo, hi, excludes_zero
    bias_term: str | None = None  # the term shown as bias_ci (the deciding one, else the
    # one furthest from 0 in standard errors)
    basis: str = ""  # trusted_pairs | bias_term | simpler_model
    level: float = LEVEL

    @property
    def decision(self) -> str:
        return "on" if self.enabled else "off"

    def choose(self, naive: BTFit, bias_aware: BTFit) -> BTFit:
        return bias_aware if self.enabled else naive


def _bias_terms(fit: BTFit, names: Sequence[str] | None, level: float) -> dict[str, dict]:
    out: dict[str, dict] = {}
    m = fit.c.shape[0]
    if m:
        names = list(names) if names is not None else [f"c{k}" for k in range(m)]
        if len(names) != m:
            raise ValueError(f"gate: {len(names)} covariate names for {m} coefficients")
        iv = fit.c_interval(level)
        for k, name in enumerate(names):
            out[name] = {"estimate": float(fit.c[k]), "se": float(fit.c_se[k]),
                         "lo": float(iv[k, 0]), "hi": float(iv[k, 1])}
    elif fit.position:
        lo, hi = fit.kappa_interval(level)
        out["kappa"] = {"estimate": float(fit.kappa), "se": float(fit.kappa_se),
                        "lo": float(lo), "hi": float(hi)}
    for d in out.values():
        d["excludes_zero"] = bool(d["lo"] > 0 or d["hi"] < 0)
    return out


def anchor_gate(naive: BTFit, bias_aware: BTFit, trusted: np.ndarray,
                names: Sequence[str] | None = None, level: float = LEVEL) -> GateDecision:
    """Decide whether to use the bias-aware ranking (the rule: module docstring).
    ``names``: the covariates' names, in the order of ``bias_aware.c`` (for the report)."""
    pn = pair_probabilities(naive, trusted)
    pb = pair_probabilities(bias_aware, trusted)
    n = int(pn.size)
    an = trusted_agreement(naive.theta, trusted)
    ab = trusted_agreement(bias_aware.theta, trusted)
    diff = _est(pb - pn, level)
    d, lo, hi, se = diff["estimate"], diff["lo"], diff["hi"], diff["se"]
    # the pairs the two rankings order differently, and the difference in the fraction
    # ordered correctly with its conditional (McNemar-type) Wilson interval
    better, worse = _strict(trusted)
    hn = np.sign(naive.theta[better] - naive.theta[worse])
    hb = np.sign(bias_aware.theta[better] - bias_aware.theta[worse])
    n_for, n_against = int(np.sum(hb > hn)), int(np.sum(hb < hn))
    hard: dict = {"estimate": ab - an, "lo": 0.0, "hi": 0.0}
    if n_for + n_against:
        plo, phi = wilson(n_for, n_for + n_against, level)
        w = (n_for + n_against) / n
        hard.update(lo=w * (2 * plo - 1), hi=w * (2 * phi - 1))
    diff.update(n_favour_corrected=n_for, n_favour_naive=n_against, ordered_correctly=hard)

    terms = _bias_terms(bias_aware, names, level)
    evident = [t for t in terms if terms[t]["excludes_zero"]]
    shown = max(evident or terms, key=lambda t: abs(terms[t]["estimate"]) / terms[t]["se"]
                if terms[t]["se"] > 0 else math.inf, default=None)
    d_txt = f"difference {d:+.3f} [{_fmt(lo)}, {_fmt(hi)}]"
    b = terms[shown] if shown else None
    b_txt = f"{shown} = {b['estimate']:+.3f} [{b['lo']:+.3f}, {b['hi']:+.3f}]" if b else ""
    lean_naive = d < -se if se is not None else d < 0
    if lo is not None and lo > 0:
        on, basis = True, "trusted_pairs"
        reason = (f"the trusted pairs favour the corrected ranking (agreement {pb.mean():.3f} "
                  f"vs {pn.mean():.3f}, {d_txt} excludes 0): correction on")
    elif hi is not None and hi < 0:
        on, basis = False, "trusted_pairs"
        reason = (f"the trusted pairs favour the naive ranking (agreement {pn.mean():.3f} vs "
                  f"{pb.mean():.3f} corrected, {d_txt} excludes 0): correction off")
    else:
        tie = f"the trusted pairs cannot tell the rankings apart ({d_txt}"
        tie += " contains 0)" if lo is not None else ", one pair)"
        on, basis = False, "simpler_model"
        if not evident:
            reason = (f"{tie} and no bias term's 95% interval excludes 0"
                      + (f" ({b_txt})" if b else " (the model has no bias term)")
                      + ": keep the simpler naive ranking")
        elif lean_naive:
            reason = (f"{tie} and lean towards the naive ranking (by more than its standard "
                      f"error, {se:.3f}); {b_txt} excludes 0, but alone that does not tell a "
                      f"judge bias from a covariate that tracks quality: keep the simpler "
                      f"naive ranking")
        else:
            on, basis = True, "bias_term"
            reason = (f"{tie} and do not lean towards the naive ranking; the judge's bias is "
                      f"evident ({b_txt} excludes 0): correction on")
    return GateDecision(enabled=on, agree_naive=an, agree_bias_aware=ab, n_trusted=n,
                        reason=reason,
                        agreement_naive=_est(pn, level, (0.0, 1.0)) | {"ordered_correctly": an},
                        agreement_corrected=_est(pb, level, (0.0, 1.0))
                        | {"ordered_correctly": ab},
                        difference=diff, bias=terms, bias_term=shown, basis=basis,
                        level=level)
