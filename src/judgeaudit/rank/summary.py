"""Plain-dict summaries of ranking fits for results.json: the ranking with posterior means,
95% intervals and top-k membership; the judge's estimated biases (c per covariate, kappa)
with intervals, per covariate unit and per SD, against planted values when known."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from judgeaudit.rank.gate import RULE, GateDecision
from judgeaudit.rank.membership import (
    topk_membership_grouped,
    topk_membership_screened,
    topk_set_grouped,
)
from judgeaudit.rank.pool import CovariateInfo, Pool
from judgeaudit.stats.bradley_terry import BTFit

LEVEL = 0.95
# A bias term whose posterior sd is above this share of its prior sd (tau) takes more than
# half its posterior precision from the prior (the prior's share is the squared ratio): its
# estimate and interval are mostly the prior's. An item-level covariate is confounded with
# item quality, so c is told apart from quality only by the priors (theta independent of the
# covariate); with a strong planted length bias the default fit gave c = 0.69 [-0.97, 2.36]
# against 3 planted, and an empirical-Bayes tau collapsed to 0.007 gave 0.000 [-0.013, 0.013].
PRIOR_DOMINATED = 0.5**0.5
# --hierarchical's tau below this has collapsed: every bias term is held near 0. Measured
# (benchmarks/rank_hier_tau.py: sim judge on builtin:controlled, planted length c 0-3 and
# position kappa 0-1, budgets 50-800, 3 seeds, 60 runs) the bias terms' tau was either
# 0.003-0.014 (37 runs; never the 1e-3 floor: the EM iteration stops there) or 0.10 and above
# (23 runs), nothing between.
TAU_COLLAPSED = 0.05


def _z(level: float = LEVEL) -> float:
    return float(stats.norm.ppf(0.5 + level / 2))


def covariate_estimates(fit: BTFit, info: Sequence[CovariateInfo],
                        planted: dict[str, float | None] | None = None) -> dict[str, dict]:
    """c per covariate: estimate, se and 95% interval in the covariate's own unit, the same
    per SD of the covariate over the pool, and the planted value (and whether the interval
    covers it) when known."""
    out: dict[str, dict] = {}
    iv = fit.c_interval(LEVEL)
    for m, ci in enumerate(info):
        est, se = float(fit.c[m]), float(fit.c_se[m])
        d = {"estimate": est, "se": se, "lo": float(iv[m, 0]), "hi": float(iv[m, 1]),
             "source": ci.source, "sd": ci.sd,
             "per_sd": {"estimate": est * ci.sd, "lo": float(iv[m, 0]) * ci.sd,
                        "hi": float(iv[m, 1]) * ci.sd}}
        if planted is not None and planted.get(ci.name) is not None:
            p = float(planted[ci.name])  # type: ignore[arg-type]
            d["planted"] = p
            d["covered"] = bool(iv[m, 0] <= p <= iv[m, 1])
        out[ci.name] = _prior_check(d, fit.tau)
    return out


def _prior_check(d: dict, tau: float) -> dict:
    """`prior_sd` (tau) and `from_prior`: whether the data left the term's posterior sd above
    `PRIOR_DOMINATED` of the prior's (`bias_notes` says what that means)."""
    d["prior_sd"] = float(tau)
    d["from_prior"] = bool(d["se"] > PRIOR_DOMINATED * tau)
    return d


def group_notes(pool: Pool, k: int) -> list[str]:
    """A note naming the prompt groups of at most k items: a group's top set holds at most
    size - 1 of them (a group of 3 at k = 3 gave its best 2 without a word)."""
    small = pool.small_groups(k)
    if not small:
        return []
    shown = "; ".join(f"{p[:40]!r}: {n} items" for p, n in small[:3])
    return [f"{len(small)} prompt group{'s' if len(small) > 1 else ''} of at most k = {k} "
            f"items ({shown}{'; ...' if len(small) > 3 else ''}): a group's top set holds at "
            "most its size - 1 items, so that every top set leaves an item out"]


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def bias_notes(model: dict, covariates: Sequence[str], *, hierarchical: bool,
               trusted: bool, naive_topk: Sequence[str] | None = None) -> list[str]:
    """What the bias-aware model's c and kappa can and cannot say, for the terminal, results
    and report: terms the data barely narrowed (their numbers are the prior's), an
    empirical-Bayes tau that held them at 0 (and, given the naive model's ``naive_topk``,
    whether the bias-aware top-k is then the naive one), the prior spread of quality they
    were fit at when it is not the ranking's (``lam_terms``: the Laplace evidence's,
    ``lam``: the ranking's Laplace-EM) with their weaker prior (``tau_terms``,
    rank.fitting.TERMS_TAU), and the assumption that tells a covariate's bias
    from quality when no trusted pairs check it."""
    terms = {**{f"c[{n}]": d for n, d in (model.get("c") or {}).items()},
             **({"kappa": model["kappa"]} if model.get("kappa") else {})}
    weak = {n: d for n, d in terms.items() if d.get("from_prior")}
    notes = []
    lam = model.get("lam_terms") or model.get("lam")
    if weak:
        tau = next(iter(weak.values()))["prior_sd"]
        ratios = ", ".join(f"{n} {d['se'] / tau:.2f}" + (
            f" (mostly the prior in {d['from_prior_in']} of {d['n']} matrices)"
            if "from_prior_in" in d else "") for n, d in weak.items())
        notes.append(
            f"{_and(list(weak))}: the prior, not the comparisons, gives most of what is "
            f"known of {'it' if len(weak) == 1 else 'them'} (posterior sd as a share of the "
            f"prior's {tau:.3g}: {ratios}; above 0.71 the prior holds more than half the "
            "precision), so the estimate and interval are mostly the prior's "
            "(" + ("tau learned by --hierarchical" if hierarchical else
                   "--tau" if tau == model.get("tau") else f"prior sd {tau:.3g}") + "), not a "
            "measurement of the judge" + (
                f"; c's sd also rests on the prior spread of quality (lam {lam:.3g}, "
                f"sd {lam ** -0.5:.2g} logits): a tighter one makes c look measured"
                if lam and any(
                    n.startswith("c[") for n in weak) else ""))
        if hierarchical and len(weak) == len(terms):
            # tau's EM step is the mean square of c and kappa; c, confounded with quality,
            # stays at ~0 whatever was planted, so tau follows the measured kappa: with none
            # planted it collapsed in 27 of 30 runs, with length 3 planted as well
            # (benchmarks/rank_hier_tau.py), and the bias-aware top-k was then the naive
            # one in 36 of the 37 collapsed runs
            same = (tau < TAU_COLLAPSED and naive_topk is not None
                    and set(naive_topk) == set(model.get("topk") or []))
            notes.append(
                f"--hierarchical: empirical Bayes set tau to {tau:.3g}, which holds every "
                "bias term near 0" + (", so the bias-aware model corrects next to nothing "
                                      "(its top-k is the naive model's)" if same else "")
                + ": an estimate near 0 here is the prior's, not evidence of no bias (tau "
                "is learned from c and kappa together and the comparisons measure kappa "
                "only, c being confounded with item quality: with little or no position "
                "bias measured tau collapses whatever the covariate's bias; rank without "
                "--hierarchical)")
    tt, t = model.get("tau_terms"), model.get("tau")
    weak_prior = bool(terms and tt and t and tt > t and not hierarchical)
    if terms and model.get("lam_terms_method") == "evidence" and model.get("lam") and \
            model.get("lam_terms") and model["lam_terms"] != model["lam"]:
        weak_prior = False  # said in this note
        notes.append(
            f"{_and(list(terms))}: from a fit at the Laplace evidence's prior spread of "
            f"quality (lam {model['lam_terms']:.3g}, sd {model['lam_terms'] ** -0.5:.2g} "
            f"logits); the ranking's lam is Laplace-EM's {model['lam']:.3g} (it ranks better, "
            "but with few comparisons it is too tight for the bias terms' intervals)" + (
                f"; that fit's prior on them is weak (sd {tt:.3g}; the ranking's is {t:.3g}): "
                "the comparisons tell c from quality only through the spread of quality, "
                f"so a prior sd of {t:.3g} would pull c towards 0 however many were judged"
                if tt and t and tt > t and not hierarchical else ""))
    ranking_c = model.get("c_ranking") or {}
    if ranking_c:  # reported c averaged 1.34 on the tester's pool, the ranking's own 0.93
        shown = "; ".join(
            f"c[{n}] = {e['estimate']:+.2f} [{e['lo']:+.2f}, {e['hi']:+.2f}]"
            + (f" (reported {terms[f'c[{n}]']['estimate']:+.2f})"
               if f"c[{n}]" in terms else "") for n, e in ranking_c.items())
        sd = next(iter(ranking_c.values())).get("prior_sd")
        notes.append(
            f"the ranking corrects by {shown}: its fit's prior sd on c is "
            f"{sd:.3g} (--tau), which pulls c towards 0; the c reported is from the bias "
            f"terms' fit" + (f" (prior sd {tt:.3g})" if tt else ""))
    if weak_prior:  # rank-eval's, and rank's at a given lam, lacked the sentence
        notes.append(
            f"{_and(list(terms))}: from a fit whose prior on them is weak (sd {tt:.3g}; the "
            f"ranking's is {t:.3g}, --tau): the comparisons tell c from quality only through "
            f"the spread of quality, so a prior sd of {t:.3g} would pull c towards 0 however "
            "many were judged")
    if covariates and not trusted:
        notes.append(
            "c is told apart from item quality only by the model's assumption that quality "
            "does not track the covariate: where better answers really are longer, it "
            "reports a length bias the judge does not have and the bias-aware top-k loses "
            "items that are long because they are good; --trusted pairs of known order "
            "decide whether the correction is used")
    return notes


def kappa_estimate(fit: BTFit, planted: float | None = None) -> dict:
    lo, hi = fit.kappa_interval(LEVEL)
    d = {"estimate": fit.kappa, "se": fit.kappa_se, "lo": lo, "hi": hi}
    if planted is not None:
        d["planted"] = float(planted)
        d["covered"] = bool(lo <= planted <= hi)
    return _prior_check(d, fit.tau)


def membership(fit: BTFit, k: int, groups: np.ndarray | None, n_samples: int = 1500,
               seed: int = 0) -> np.ndarray:
    """P(i in its group's top k) under the fit's Laplace posterior. A dense fit draws from its
    covariance; a sparse one (above judgeaudit.stats.bradley_terry.DENSE_MAX: no N x N
    covariance) from the covariance of the items that can be in a top k, solved for just
    those (``topk_membership_screened``; screened on the estimated sd inflated by four
    standard errors of its estimate)."""
    post = fit.posterior
    if post is None:
        return topk_membership_grouped(fit.theta, fit.theta_cov, k, groups, n_samples, seed)
    var = np.clip(fit.theta_var, 0.0, None)
    if post.theta_var_se is not None:
        var = var + 4.0 * np.nan_to_num(post.theta_var_se)
    # the block feeds Monte-Carlo draws: a CG residual of 1e-5 leaves its entries far more
    # accurate than the draws (~1/sqrt(n_samples)) and takes ~40% fewer iterations than 1e-7
    return topk_membership_screened(fit.theta, np.sqrt(var), k, groups,
                                    lambda idx: fit.theta_cov_block(idx, rtol=1e-5),
                                    n_samples, seed)


def compared_counts(n_items: int, comparisons: np.ndarray) -> np.ndarray:
    """Valid comparisons per item (invalid and failed calls are not in ``comparisons``)."""
    comps = np.asarray(comparisons, dtype=float).reshape(-1, 3)
    n_cmp = np.zeros(n_items, dtype=int)
    np.add.at(n_cmp, comps[:, 0].astype(int), 1)
    np.add.at(n_cmp, comps[:, 1].astype(int), 1)
    return n_cmp


# How far below every compared item an item never compared is put when a top k is chosen:
# its theta is the prior's, so it enters a top k only when its group has too few compared.
_UNCOMPARED_SHIFT = 1e6


def selection_theta(theta: np.ndarray, compared: np.ndarray | None) -> np.ndarray:
    """theta for choosing a top k: items with no usable comparison (``compared`` False) below
    every compared one, in their own order. With --budget 1 on 25 items the top 3 held two
    items never compared (theta +0.00, the prior's) ahead of a compared one that lost."""
    theta = np.asarray(theta, dtype=float)
    if compared is None or bool(np.all(compared)):
        return theta
    return np.where(compared, theta, theta - _UNCOMPARED_SHIFT)


def uncompared_warnings(pool: Pool, n_cmp: np.ndarray, k: int,
                        topk: dict[str, list[str]]) -> list[str]:
    """Items with no usable comparison (never compared, or every comparison failed or was
    unreadable): how many with the first ids, and each model's top k that had to take one
    because its group has too few compared items (the budget was too small)."""
    bad = [pool.items[i].id for i in np.flatnonzero(n_cmp == 0)]
    if not bad:
        return []
    out = [f"{len(bad)} of {pool.n_items} items have no usable comparison (never compared, "
           f"or every comparison failed or was unreadable): {_ids(bad)}; their theta and "
           "place are the prior's, not the judge's, and they enter the top-k only where too "
           "few items were compared"]
    bad_set = set(bad)
    for model, ids in topk.items():
        forced = [i for i in ids if i in bad_set]
        if forced:
            out.append(f"the {model.replace('_', '-')} top-{k} has to include "
                       f"{len(forced)} item{'s' if len(forced) > 1 else ''} never usefully "
                       f"compared ({_ids(forced)}): too few compared items "
                       f"{'in its prompt group' if pool.groups is not None else 'in the pool'}"
                       " (the budget was too small); raise --budget")
    return out


def _ids(ids: Sequence[str], n: int = 5) -> str:
    """The first ``n`` ids quoted, with how many more."""
    shown = ", ".join(repr(i) for i in ids[:n])
    return shown + (f" and {len(ids) - n} more" if len(ids) > n else "")


# Above this |Pearson r| over the pool two covariates are one measurement: the fit can only
# split their joint effect between them (log words and verbosity, both word counts, split a
# planted 1.5 into 0.57 and 0.58, each interval spanning 0).
COLLINEAR_R = 0.95


def collinear_warnings(X: np.ndarray, info: Sequence[CovariateInfo],
                       where: str = "the pool") -> list[str]:
    """One warning per pair of chosen covariates whose values over ``where`` correlate above
    `COLLINEAR_R` in absolute value, naming both and r; neither is dropped (the user chose
    them)."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] < 2 or X.shape[0] < 3:
        return []
    out = []
    for a in range(X.shape[1]):
        for b in range(a + 1, X.shape[1]):
            xa, xb = X[:, a], X[:, b]
            if not (np.std(xa) > 0 and np.std(xb) > 0):
                continue
            r = float(np.corrcoef(xa, xb)[0, 1])
            if abs(r) > COLLINEAR_R:
                out.append(
                    f"covariates {info[a].name} and {info[b].name} are collinear over "
                    f"{where} (r = {r:+.3f}, n = {X.shape[0]} items): the fit cannot tell "
                    "their biases apart and splits the joint effect between them, so each "
                    "c and its interval say little on its own; keep one of them "
                    "(--covariates)")
    return out


def ranking(pool: Pool, fit: BTFit, k: int, X: np.ndarray, info: Sequence[CovariateInfo],
            comparisons: np.ndarray, n_samples: int = 1500, seed: int = 0,
            p_fit: BTFit | None = None) -> list[dict]:
    """Items by posterior mean theta (best first; within each prompt group when there are
    several), each with its 95% interval, P(in top k), the covariates and its record.
    Items with no usable comparison (``n_compared`` 0, ``uncompared`` true) come after the
    compared ones of their group and are never marked in the top k: their theta is the
    prior's. ``p_fit``: the fit P(in top k) is drawn from when it is not ``fit``
    (`rank.fitting.membership_fit`: with a learned lam, the Laplace evidence's; Laplace-EM's
    is too tight for calibrated probabilities); order, intervals and top k stay ``fit``'s."""
    groups = pool.groups
    theta = fit.theta
    var = np.clip(fit.theta_var, 0.0, None)
    se = np.sqrt(var)
    z = _z()
    p = membership(fit if p_fit is None else p_fit, k, groups, n_samples, seed)
    comps = np.asarray(comparisons, dtype=float).reshape(-1, 3)
    n_cmp = compared_counts(pool.n_items, comps)
    compared = n_cmp > 0
    top = set(topk_set_grouped(selection_theta(theta, compared), k, groups).tolist())
    wins = np.zeros(pool.n_items)
    for f, s, y in comps:
        wins[int(f)] += y
        wins[int(s)] += 1.0 - y
    g = groups if groups is not None else np.zeros(pool.n_items, dtype=int)
    order = np.lexsort((np.arange(pool.n_items), -theta, ~compared, g))
    rows, rank, last = [], 0, None
    for i in order:
        rank = rank + 1 if g[i] == last else 1
        last = g[i]
        it = pool.items[i]
        row = {"rank": rank, "id": it.id, "theta": float(theta[i]),
               "lo": float(theta[i] - z * se[i]), "hi": float(theta[i] + z * se[i]),
               "p_topk": float(p[i]), "in_topk": bool(i in top),
               "n_compared": int(n_cmp[i]), "wins": float(wins[i]),
               "covariates": {ci.name: float(X[i, m] + ci.mean) for m, ci in enumerate(info)}}
        if not compared[i]:
            row["uncompared"] = True
        if groups is not None:
            row["group"] = int(g[i])
            row["prompt"] = it.prompt
        if it.quality is not None:
            row["quality"] = it.quality
        rows.append(row)
    return rows


def fit_convergence(fit: BTFit, terms: BTFit | None = None) -> dict:
    """Whether ``fit`` (and ``terms``, the fit its bias terms come from when another) can be
    trusted as computed: ``converged`` is the MAP search's convergence and that of every
    conjugate-gradient solve of a sparse posterior (above DENSE_MAX parameters: the theta
    variances, the covariance blocks behind P(top-k), the pair variances of the gate),
    ``map_converged`` the first alone, ``cg_converged`` the second (None: a dense
    posterior, no CG) with ``cg`` its details (``SparsePosterior.cg_status``). A MAP that
    converged said nothing of the CG: a run whose variances came from stopped solves was
    reported converged. Read it after the reported quantities were computed (they are solved
    on first use); a lazy posterior not yet made is not made here."""
    fits = [f for f in (fit, terms) if f is not None]
    map_ok = all(bool(f.converged) for f in fits)
    cg = [p.cg_status() for f in fits
          if (p := getattr(f, "_posterior", None)) is not None]  # not forcing a lazy one
    cg_ok = None if not cg else all(c["converged"] for c in cg)
    d: dict = {"converged": map_ok and cg_ok is not False, "map_converged": map_ok,
               "cg_converged": cg_ok}
    if cg:
        worst = max(cg, key=lambda c: (not c["converged"], c["relative_residual"] or 0.0))
        d["cg"] = {**worst, "failed_solves": sum(c["failed_solves"] for c in cg),
                   "iterations": sum(c["iterations"] for c in cg)}
    if not map_ok:
        d["map_message"] = "; ".join(f.message for f in fits if not f.converged and f.message)
    return d


def convergence_warnings(models: dict) -> list[str]:
    """One line per model whose fit did not converge (`fit_convergence` in its summary):
    what stopped short and which reported numbers it touches, for the terminal, results
    and report."""
    out = []
    for name, m in models.items():
        if m.get("converged", True):
            continue
        label = name.replace("_", "-")
        if m.get("map_converged") is False:
            msg = m.get("map_message")
            out.append(f"{label} model: the MAP fit did not converge"
                       + (f" ({msg})" if msg else "") + ": its theta, ranking and bias terms "
                       "are not the optimum of the model; converged is false")
        if m.get("cg_converged") is False:
            cg = m.get("cg") or {}
            res, tgt = cg.get("relative_residual"), cg.get("target")
            out.append(
                f"{label} model: conjugate gradients of its sparse posterior did not reach "
                f"their tolerance in {cg.get('failed_solves', '?')} solve(s) (stopped at "
                f"{cg.get('max_iterations', '?')} iterations"
                + (f", relative residual {res:.2g} against {tgt:.2g}"
                   if res is not None and tgt is not None else "")
                + "): the posterior variances behind its 95% intervals, P(top-k), bias-term "
                "se and the gate are approximate; converged is false (the usual cause: a "
                "tiny --lam on a sparsely linked pool, an ill-conditioned system that a "
                "larger --lam or 'auto' conditions)")
    return out


def model_summary(pool: Pool, fit: BTFit, k: int, info: Sequence[CovariateInfo],
                  planted: dict | None = None, terms: BTFit | None = None,
                  terms_method: str | None = None,
                  compared: np.ndarray | None = None) -> dict:
    """One model's top-k ids, thetas and (bias-aware) judge biases. ``terms``: the fit the
    biases come from when not ``fit`` (`rank.fitting.terms_fit`: a learned lam's refit at
    the Laplace evidence's); with ``terms_method`` its lam and tau are recorded as
    ``lam_terms`` and ``tau_terms`` (``lam`` and ``tau`` stay the ranking's). ``converged``
    covers both fits' MAP and the CG of their sparse posteriors (`fit_convergence`: call this
    after ``ranking``, whose variances and P(top-k) are solved on first use). ``compared``:
    which items have a usable comparison; the top k takes the others only when too few are
    compared (`selection_theta`)."""
    top = topk_set_grouped(selection_theta(fit.theta, compared), k, pool.groups)
    tf = terms if terms is not None else fit
    d: dict = {"topk": [pool.items[i].id for i in top],
               "theta": {it.id: float(t) for it, t in zip(pool.items, fit.theta, strict=True)},
               **fit_convergence(fit, tf if tf is not fit else None),
               "lam": fit.lam, "tau": fit.tau}
    if fit.position:
        if terms_method is not None:
            d.update(lam_terms=tf.lam, tau_terms=tf.tau, lam_terms_method=terms_method)
        d["c"] = covariate_estimates(tf, info, (planted or {}).get("c"))
        d["kappa"] = kappa_estimate(tf, (planted or {}).get("kappa"))
        if tf is not fit and info:  # the c the ranking corrects by was shown nowhere
            d["c_ranking"] = {n: {k: e[k] for k in ("estimate", "se", "lo", "hi", "prior_sd")}
                              for n, e in covariate_estimates(fit, info).items()}
    return d


def gate_summary(decision: GateDecision) -> dict:
    """The gate for results.json: decision and reason, both rankings' agreement with the
    trusted pairs, their paired difference with its interval, and the bias term's interval
    (`bias_term` names it; `bias` has every term); `enabled`, `chosen`, `agree_*` and
    `n_trusted` as before."""
    b = decision.bias.get(decision.bias_term) if decision.bias_term else None
    return {"decision": decision.decision, "reason": decision.reason,
            "basis": decision.basis,
            "agreement_naive": decision.agreement_naive,
            "agreement_corrected": decision.agreement_corrected,
            "difference": decision.difference,
            "bias_term": decision.bias_term,
            "bias_ci": [b["lo"], b["hi"]] if b else None,
            "bias": decision.bias, "level": decision.level,
            "enabled": decision.enabled,
            "chosen": "bias_aware" if decision.enabled else "naive",
            "agree_naive": decision.agree_naive, "agree_bias_aware": decision.agree_bias_aware,
            "n_trusted": decision.n_trusted, "rule": RULE}
