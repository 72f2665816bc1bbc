"""Offline rank evaluation: recall@k against budget per acquisition rule and model, over
oracles x seeds, with paired tests between rules, full-data recall and the estimated judge
biases (c, kappa) with intervals and, when planted, their coverage."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from judgeaudit.rank.fitting import fit_model
from judgeaudit.rank.loop import MODELS, Oracle, run_active
from judgeaudit.rank.membership import group_index, group_k, recall_grouped, recall_ties
from judgeaudit.rank.simulate import SimOracle, controlled_sim_pool
from judgeaudit.rank.summary import fit_convergence
from judgeaudit.stats import wilcoxon_signed_rank

SCHEMA = "judgeaudit.rank_eval/1"


@dataclass
class EvalCase:
    """One oracle on one pool. ``full``: every recorded comparison (for full-data recall and
    the bias estimates); ``planted``: true ``c`` and ``kappa`` when known (simulation)."""

    oracle: Oracle
    n_items: int
    k: int
    true_topk: np.ndarray
    X: np.ndarray | None = None
    full: np.ndarray | None = None
    planted: dict | None = None
    name: str = "case"
    groups: np.ndarray | None = None  # item -> prompt group (top-k per group)
    quality: np.ndarray | None = None  # true quality: items tied at the k-th place count alike

    @property
    def n_true(self) -> int:
        """The true top items recall counts hits of (its denominator): every group's top-k
        sizes when quality is known (as `recall_ties`), else the true top-k given."""
        if self.quality is not None:
            if self.groups is None:
                return min(self.k, self.n_items)
            return sum(group_k(self.k, idx.shape[0])
                       for idx in group_index(self.groups, self.n_items))
        return int(np.asarray(self.true_topk).size) if self.groups is not None else self.k

    def recall(self, theta_hat: np.ndarray) -> float:
        """Recall@k of a fit: tie-aware (`recall_ties`) when true quality is known."""
        if self.quality is not None:
            return recall_ties(theta_hat, self.quality, self.k, self.groups)
        return recall_grouped(theta_hat, self.true_topk, self.k, self.groups)


CaseFactory = Callable[[int], EvalCase]  # seed -> case


def controlled_sim_case(c: float = 1.0, kappa: float = 0.3, covariate: str = "verbosity",
                        scale: float = 1.0, n_items: int = 30, k: int = 5,
                        unit: str = "statement") -> CaseFactory:
    """Controlled-benchmark pool (one per seed) judged by a simulated judge with planted
    ``c`` on the covariate and position term ``kappa``; theta = ``scale`` logits per net true
    statement (``unit="statement"``) or per SD of quality (``unit="sd"``)."""

    def make(seed: int) -> EvalCase:
        pool = controlled_sim_pool(seed, n_items=n_items, k=k, scale=scale,
                                   covariate=covariate, unit=unit)
        oracle = SimOracle(pool.theta, pool.X, c=c, kappa=kappa, seed=seed + 10_000)
        return EvalCase(oracle=oracle, n_items=n_items, k=k, true_topk=pool.true_topk,
                        quality=pool.theta,
                        X=pool.X, full=oracle.full_comparisons(),
                        planted={"c": [float(c)] * pool.X.shape[1], "kappa": float(kappa)},
                        name=f"sim(c={c},kappa={kappa})@{pool.name}")

    return make


RECALL_INTERVAL = (
    "95% t interval over the seeds (mean +- t(n-1) se, clipped to [0, 1]); where every seed "
    "gave the same recall (no spread to take a t interval from), the exact Clopper-Pearson "
    "interval of the hits pooled over the seeds (hits of seeds x true top items), which treats "
    "each item hit as independent; none with one seed")


def _summary(values: Sequence[float], totals: Sequence[int] | None = None) -> dict:
    """Mean over seeds with its se, n and 95% interval, which the terminal, the report and
    --json all show: the t interval (`stats.over_seeds`, `ci_method` "t"); where every seed
    agreed and ``totals`` (each seed's true top items, recall's denominator) are given, the
    exact Clopper-Pearson interval of the pooled hits (`ci_method` "clopper_pearson", with
    `hits` of `n_items`): four seeds at recall 1.0 do not make the mean recall certain. It
    treats item hits as independent; hits within a seed share one ranking, so where they go
    together it is too narrow (the results and report say what it assumes). None for one
    seed."""
    from judgeaudit.stats.intervals import clopper_pearson, over_seeds

    v = np.asarray(values, dtype=float)
    n = int(v.shape[0])
    # every seed agreed: se 0 (three seeds at 0.8 had a float sd of 1e-16, so a t interval
    # [0.80, 0.80])
    se = (float("nan") if n < 2 else 0.0 if np.ptp(v) <= 1e-12
          else float(v.std(ddof=1) / math.sqrt(n)))
    mean = float(v.mean()) if n else float("nan")
    iv = over_seeds(mean, se, n)
    out: dict = {"mean": mean, "se": se, "n": n, "ci95": list(iv) if iv is not None else None}
    if iv is not None:
        out["ci_method"] = "t"
    elif n > 1 and se == 0.0 and totals is not None and len(totals) == n:
        t = np.asarray(totals, dtype=int)
        hits = int(np.sum(np.rint(v * t)))
        out.update(ci95=list(clopper_pearson(hits, int(t.sum()))), ci_method="clopper_pearson",
                   hits=hits, n_items=int(t.sum()))
    return out


def paired_test(x: Sequence[float], y: Sequence[float]) -> dict:
    """Paired comparison of two rules over the same (oracle, seed) cases: mean difference
    x - y with its se, paired t-test and Wilcoxon signed-rank p-values (1.0 when every
    difference is zero; the t-test's is NaN when every difference is the same non-zero value:
    undefined, and its limit 0 would read as certainty on two seeds)."""
    # rounded: recalls are fractions, and 0.8 - 0.6 != 0.6 - 0.4 in binary (a spread of
    # 1e-16 made a t of 3.6e15 and a p of 2e-16 out of two equal differences)
    d = np.round(np.asarray(x, float) - np.asarray(y, float), 12)
    n = int(d.shape[0])
    # the mean and se rounded alike: a mean of differences that cancel printed 9.999e-14
    out = {"mean_diff": round(float(d.mean()), 12) + 0.0,
           "se": round(float(d.std(ddof=1) / math.sqrt(n)), 12) + 0.0 if n > 1
           else float("nan"), "n": n, "t": float("nan"), "p_t": 1.0, "p_wilcoxon": 1.0}
    if n > 1 and np.any(d != 0):
        if np.std(d) > 0:
            with warnings.catch_warnings():  # near-constant differences: scipy warns
                warnings.simplefilter("ignore", RuntimeWarning)
                t = stats.ttest_1samp(d, 0.0)
            out["t"], out["p_t"] = float(t.statistic), float(t.pvalue)
        else:  # no spread: the t-test is undefined (its p would be 0 even on two seeds)
            out["p_t"] = float("nan")
        # zeros dropped first, then exact given the midranks: scipy's default switched to
        # the normal approximation by the count with the zeros (2.5x too small a p on 5 of 20)
        out["p_wilcoxon"] = wilcoxon_signed_rank(d)
    return out


def rank_eval(oracles: Mapping[str, CaseFactory], budgets: Sequence[int], rules: Sequence[str],
              seeds: Sequence[int], models: Sequence[str] = MODELS, lam: float = 1.0,
              tau: float = 1.0, hierarchical: bool = False, n_samples: int = 1500,
              refit_every: int = 8,
              progress: Callable[[str], None] | None = None,
              on_run: Callable[[], None] | None = None, eb_lam: bool = False) -> dict:
    """Run every (oracle, seed) x model x rule loop up to max(budgets) and collect
    ``recall[model][rule][budget] = {mean, se, n}``, ``full_data[model]``, paired ``tests``
    between rules, the 2x2 ``ablation`` (model x topk/global) and the bias ``estimates``.
    ``convergence`` counts the fits that did not converge (`rank.summary.fit_convergence`:
    the MAP or a sparse posterior's conjugate gradients) per recall cell, per run of the
    refits that chose the pairs, and on the full data; ``converged`` and ``warnings``
    (`convergence_warnings`) say so, as `rank` does for its one fit.
    ``on_run()`` is called after every active loop (len(models) * len(rules) per case)."""
    budgets = sorted({int(b) for b in budgets})
    for m in models:
        if m not in MODELS:
            raise ValueError(f"unknown model {m!r}; expected one of {MODELS}")
    bmax = budgets[-1]
    per: dict = {m: {r: {b: [] for b in budgets} for r in rules} for m in models}
    full: dict = {m: [] for m in models}
    # fit_convergence of every fit whose theta a recall comes from (per cell and on the full
    # data), and whether every refit that chose a run's pairs converged (per model x rule)
    conv: dict = {m: {r: {b: [] for b in budgets} for r in rules} for m in models}
    conv_full: dict = {m: [] for m in models}
    conv_refits: dict = {m: {r: [] for r in rules} for m in models}
    totals: list[int] = []  # each case's true top items (recall's denominator), per seed
    full_totals: list[int] = []
    est_c, est_k, cases_out = [], [], []
    for oname, factory in oracles.items():
        for seed in seeds:
            case = factory(seed)
            rec: dict = {"oracle": oname, "seed": int(seed), "recall": {}, "full_data": {},
                         "n_true": case.n_true}
            totals.append(case.n_true)
            if case.full is not None and len(case.full):
                full_totals.append(case.n_true)
                fits = {m: fit_model(m, case.n_items, case.full, X=case.X, lam=lam, tau=tau,
                                     hierarchical=hierarchical, eb_lam=eb_lam)
                        for m in ("naive", "bias_aware")}
                for m in models:
                    r = case.recall(fits[m].theta)
                    full[m].append(r)
                    rec["full_data"][m] = r
                fb = fits["bias_aware"]
                est_c.append((fb.c.tolist(), fb.c_interval().tolist(),
                              None if case.planted is None else case.planted.get("c")))
                est_k.append((fb.kappa, list(fb.kappa_interval()),
                              None if case.planted is None else case.planted.get("kappa")))
                for m in models:  # read after the intervals: their solves are counted
                    conv_full[m].append(fit_convergence(fits[m]))
            for m, rule in itertools.product(models, rules):
                res = run_active(case.oracle, case.n_items, bmax, case.k, rule=rule, X=case.X,
                                 model=m, lam=lam, tau=tau, hierarchical=hierarchical,
                                 refit_every=refit_every, n_samples=n_samples,
                                 seed=int(seed) * 7919 + 17, checkpoints=budgets,
                                 groups=case.groups, eb_lam=eb_lam)
                for b in budgets:
                    fit = res.checkpoints[b][m] if b in res.checkpoints else res.fit(m)
                    r = case.recall(fit.theta)
                    per[m][rule][b].append(r)
                    rec["recall"].setdefault(m, {}).setdefault(rule, {})[b] = r
                    fc = fit_convergence(fit)
                    conv[m][rule][b].append(fc)
                    if not fc["converged"]:  # which case's fit, for a reader of the cases
                        rec.setdefault("not_converged", []).append(
                            {"model": m, "rule": rule, "budget": b,
                             **{k: fc[k] for k in ("map_converged", "cg_converged")}})
                conv_refits[m][rule].append(
                    {"converged": all(x["converged"] for x in res.refits)})
                if on_run is not None:
                    on_run()
            cases_out.append(rec)
            if progress:
                progress(f"{oname} seed={seed} done")

    out: dict = {
        "schema": SCHEMA,
        "config": {"budgets": budgets, "rules": list(rules), "models": list(models),
                   "seeds": [int(s) for s in seeds], "oracles": list(oracles), "lam": lam,
                   "tau": tau, "hierarchical": hierarchical, "eb_lam": eb_lam,
                   "n_samples": n_samples,
                   "refit_every": refit_every, "recall_interval": RECALL_INTERVAL},
        "recall": {m: {r: {b: _summary(per[m][r][b], totals) for b in budgets}
                       for r in rules} for m in models},
        "full_data": {m: _summary(full[m], full_totals) for m in models if full[m]},
        "tests": {m: {b: {f"{r1} vs {r2}": paired_test(per[m][r1][b], per[m][r2][b])
                          for r1, r2 in itertools.combinations(rules, 2)}
                      for b in budgets} for m in models},
        "cases": cases_out,
        "convergence": {
            "recall": {m: {r: {b: tally_convergence(conv[m][r][b]) for b in budgets}
                           for r in rules} for m in models},
            "acquisition": {m: {r: tally_convergence(conv_refits[m][r]) for r in rules}
                            for m in models},
            "full_data": {m: tally_convergence(conv_full[m]) for m in models if conv_full[m]},
        },
    }
    out["warnings"] = convergence_warnings(out["convergence"])
    out["converged"] = not out["warnings"]
    if {"naive", "bias_aware"} <= set(models) and {"topk", "global"} <= set(rules):
        out["ablation"] = {}
        for b in budgets:
            bt, bg = (np.array(per["bias_aware"][r][b]) for r in ("topk", "global"))
            nt, ng = (np.array(per["naive"][r][b]) for r in ("topk", "global"))
            inter = (bt - bg) - (nt - ng)
            out["ablation"][b] = {
                "naive+global": float(ng.mean()), "naive+topk": float(nt.mean()),
                "bias_aware+global": float(bg.mean()), "bias_aware+topk": float(bt.mean()),
                "gain_model": float((bg - ng).mean()), "gain_acquisition": float((nt - ng).mean()),
                "gain_both": float((bt - ng).mean()),
                "interaction": _summary(inter),
                "interaction_test": paired_test(bt - bg, nt - ng),
            }
    out["estimates"] = {"c": _estimates_c(est_c), "kappa": _estimates_kappa(est_k)}
    return out


def tally_convergence(fits: Sequence[dict]) -> dict:
    """How many of ``fits`` (`fit_convergence` dicts, or {"converged"} alone) did not
    converge: ``not_converged`` of ``n``, and of those the ones whose MAP did not and whose
    sparse posterior's CG stopped short (a fit can be both; None: not recorded)."""
    d = {"n": len(fits), "not_converged": sum(not f["converged"] for f in fits)}
    if fits and "map_converged" in fits[0]:
        d["map_not_converged"] = sum(f["map_converged"] is False for f in fits)
        d["cg_not_converged"] = sum(f["cg_converged"] is False for f in fits)
    return d


def _label(model: str) -> str:
    return model.replace("_", "-") + " model"


def convergence_parts(t: dict) -> str:
    """" (MAP 1, CG 2)": what stopped short in a tally's fits (CG: the conjugate gradients
    of a sparse posterior; a fit can be both)."""
    p = [f"{what} {t[k]}" for k, what in (("map_not_converged", "MAP"),
                                          ("cg_not_converged", "CG"))
         if t.get(k)]
    return f" ({', '.join(p)})" if p else ""


def convergence_touches(tallies: Sequence[tuple[str, dict]], what: str) -> str:
    """What stopped short in full-data fits (``tallies``: (model, tally)) does to the numbers
    they give (``what``, their theta's): said only for the parts that did stop."""
    maps = any(t.get("map_not_converged") for _, t in tallies)
    cgs = any(t.get("cg_not_converged") for m, t in tallies if m == "bias_aware")
    parts = ([f"where the MAP did not converge, {what} comes from a theta short of the "
              "model's optimum"] if maps else []) + (
        ["where the conjugate gradients stopped, the bias-aware fit's intervals of c and "
         "kappa are approximate"] if cgs else [])
    return "; ".join(parts) or "the posterior of those fits is approximate"


def convergence_warnings(conv: dict) -> list[str]:
    """One line per kind of fit of which some did not converge (``conv``: the
    ``convergence`` block `rank_eval` writes, or rank-eval's), naming every cell with its
    k of n and what the stopped solves touch; none when every fit converged."""
    out = []
    cells = [(m, r, b, t) for m, rules in (conv.get("recall") or {}).items()
             for r, by_b in rules.items() for b, t in by_b.items() if t["not_converged"]]
    if cells:
        n_all = sum(t["n"] for rules in conv["recall"].values() for by_b in rules.values()
                    for t in by_b.values())
        bad = sum(t["not_converged"] for *_, t in cells)
        groups: dict = {}
        for m, r, b, t in cells:
            groups.setdefault((m, r), []).append(
                f"B={b}: {t['not_converged']} of {t['n']}{convergence_parts(t)}")
        maps = sum(t.get("map_not_converged") or 0 for *_, t in cells)
        cgs = sum(t.get("cg_not_converged") or 0 for *_, t in cells)
        out.append(
            f"{bad} of {n_all} fits behind the recall table did not converge (converged is "
            "false): " + "; ".join(f"{_label(m)}, rule {r}: {', '.join(v)}"
                                   for (m, r), v in groups.items())
            + ". " + "; ".join(
                ([f"The MAP did not converge in {maps}: their recall is that of a theta short "
                  "of the model's optimum"] if maps else [])
                + ([f"{'the' if maps else 'The'} conjugate gradients (CG) of the sparse "
                    f"posterior stopped short in {cgs}: their theta and recall stand (the "
                    "posterior, approximate, is not used by recall)"] if cgs else [])))
    runs = [(m, r, t) for m, rules in (conv.get("acquisition") or {}).items()
            for r, t in rules.items() if t["not_converged"]]
    if runs:
        out.append("the refits that chose the pairs did not all converge (MAP or the sparse "
                   "posterior's conjugate gradients) in: "
                   + "; ".join(f"{_label(m)}, rule {r}: {t['not_converged']} of {t['n']} runs"
                               for m, r, t in runs)
                   + ": those runs chose pairs by a fit short of its optimum or an approximate "
                   "posterior")
    full = [(m, t) for m, t in (conv.get("full_data") or {}).items() if t["not_converged"]]
    if full:
        out.append("the fits on the full data did not converge: "
                   + ", ".join(f"{_label(m)} {t['not_converged']} of {t['n']}"
                               f"{convergence_parts(t)}" for m, t in full)
                   + ": " + convergence_touches(full, "the full-data recall"))
    return out


def _estimates_c(rows: list) -> dict:
    if not rows:
        return {}
    c = np.array([r[0] for r in rows], dtype=float)
    iv = np.array([r[1] for r in rows], dtype=float)
    out = {"mean": c.mean(axis=0).tolist(), "sd": c.std(axis=0, ddof=1).tolist() if len(c) > 1
           else None, "interval_mean": iv.mean(axis=0).tolist(), "n": len(rows),
           "per_case": [{"c": r[0], "interval": r[1], "planted": r[2]} for r in rows]}
    if all(r[2] is not None for r in rows):
        p = np.array([r[2] for r in rows], dtype=float)
        out["coverage"] = ((iv[:, :, 0] <= p) & (p <= iv[:, :, 1])).mean(axis=0).tolist()
    return out


def _estimates_kappa(rows: list) -> dict:
    if not rows:
        return {}
    k = np.array([r[0] for r in rows], dtype=float)
    iv = np.array([r[1] for r in rows], dtype=float)
    out = {"mean": float(k.mean()), "sd": float(k.std(ddof=1)) if len(k) > 1 else None,
           "interval_mean": iv.mean(axis=0).tolist(), "n": len(rows),
           "per_case": [{"kappa": r[0], "interval": r[1], "planted": r[2]} for r in rows]}
    if all(r[2] is not None for r in rows):
        p = np.array([r[2] for r in rows], dtype=float)
        out["coverage"] = float(((iv[:, 0] <= p) & (p <= iv[:, 1])).mean())
    return out
