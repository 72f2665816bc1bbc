"""The `rank-eval` pipeline: inputs checked before any call (`prepare_rank_eval`), the full
ordered-pair verdict matrices built once through a `judgeaudit.session.Session`, and every
acquisition rule x model x seed replayed against them offline (`judgeaudit.rank.evaluate`)
into the results document the CLI writes and `judgeaudit.rank_eval(...)` returns.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from judgeaudit.data.spec import parse_spec, public_spec
from judgeaudit.rank.fitting import MODELS
from judgeaudit.rank.live import PlannedStop, VerdictMatrix, max_budget, ordered_pairs
from judgeaudit.rank.pool import Pool, load_pool
from judgeaudit.rank.run import (
    INVALID,
    TIES,
    check_groups,
    check_rules,
    covariate_names,
    not_sent_why,
    opt,
    parse_lam,
)

if TYPE_CHECKING:
    from judgeaudit.config import RankEvalConfig
    from judgeaudit.session import Session

Seeds = int | str | Sequence[int]
"""A count (10: seeds 0-9), text as the CLI takes it ("10", "0-9", "0,4,9") or a list."""


def parse_seeds(text: Seeds, *, cli: bool = True) -> list[int]:
    """'30' -> 0..29; '3-7' -> 3..7; '0,4,9' -> those; an int n -> 0..n-1; a list as given."""
    name = opt("seeds", cli)
    if isinstance(text, bool):
        raise ValueError(f"{name}: expected a count, a range or a list, got {text!r}")
    if isinstance(text, int):
        if text < 1:
            raise ValueError(f"{name}: expected a count >= 1, got {text}")
        return list(range(text))
    if not isinstance(text, str):
        vals = list(text)
        if not vals or any(isinstance(v, bool) or not isinstance(v, int | np.integer)
                           for v in vals):
            raise ValueError(f"{name}: expected a non-empty list of integers, got {text!r}")
        return [int(v) for v in vals]
    t = text.strip()
    try:
        if "," in t:
            return [int(x) for x in t.split(",") if x.strip()]
        if "-" in t[1:]:
            a, b = t.split("-", 1)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError
            return list(range(lo, hi + 1))
        n = int(t)
        if n < 1:
            raise ValueError
        return list(range(n))
    except ValueError:
        raise ValueError(f"{name}: expected a count (30), a range (0-29) or a list (0,4,9), "
                         f"got {text!r}") from None


def int_list(text: str | Sequence[int], what: str) -> list[int]:
    """'60,120' or [60, 120] -> [60, 120]."""
    try:
        vals = ([int(t) for t in text.split(",") if t.strip()] if isinstance(text, str)
                else [int(t) for t in text])
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not vals:
        raise ValueError(f"{what}: empty")
    return vals


def _names(x: str | Sequence[str]) -> list[str]:
    parts = x.split(",") if isinstance(x, str) else list(x)
    return [p.strip() for p in parts if p and p.strip()]


def _with_param(spec: str, key: str, value: int) -> str:
    return spec + ("&" if "?" in spec else "?") + f"{key}={value}"


def plan_cases(items: str, oracle: str, seeds: list[int]
               ) -> tuple[list[tuple[int, str, str]], bool, bool]:
    """(seed, pool spec, judge spec) per seed: `builtin:controlled` without a seed draws a
    pool per seed; a `sim` judge without a seed draws fresh verdicts per seed."""
    from judgeaudit.rank.pool import bare_pool_path

    isp = None if bare_pool_path(items) else parse_spec(items)
    jsp = parse_spec(oracle)
    pool_per_seed = bool(isp and isp.kind == "builtin" and "seed" not in isp.params)
    judge_per_seed = jsp.kind == "sim" and "seed" not in jsp.params
    plan = [(s, _with_param(items, "seed", s) if pool_per_seed else items,
             _with_param(oracle, "seed", s) if judge_per_seed else oracle) for s in seeds]
    return plan, pool_per_seed, judge_per_seed


def summarise_estimates(per_matrix: list[dict], names: list[str]) -> tuple[dict, dict]:
    """Across matrices: mean estimate and mean interval bounds, their sd, the coverage of
    planted values where known, and in how many matrices the term was mostly the prior's
    (`from_prior_in`; `from_prior` when in most)."""
    def agg(rows: list[dict]) -> dict:
        est = np.array([r["estimate"] for r in rows])
        d = {"estimate": float(est.mean()), "lo": float(np.mean([r["lo"] for r in rows])),
             "hi": float(np.mean([r["hi"] for r in rows])), "n": len(rows),
             "sd": float(est.std(ddof=1)) if len(rows) > 1 else None}
        if rows and all("from_prior" in r for r in rows):  # the prior's numbers, not the data's
            d.update(se=float(np.mean([r["se"] for r in rows])), prior_sd=rows[0]["prior_sd"],
                     from_prior_in=sum(r["from_prior"] for r in rows))
            d["from_prior"] = d["from_prior_in"] > len(rows) / 2
        if rows and all("planted" in r for r in rows):
            d["planted"] = rows[0]["planted"]
            d["coverage"] = float(np.mean([r["covered"] for r in rows]))
        return d

    c = {n: agg([m["c"][n] for m in per_matrix]) for n in names}
    kappa = agg([m["kappa"] for m in per_matrix])
    return c, kappa


def summarise_c_ranking(per_matrix: list[dict], names: list[str]) -> dict:
    """Across matrices, the c the ranking's own fit corrects by (`c_ranking`, as `rank`
    reports it beside c from the evidence refit, `rank.fitting.terms_fit`): mean estimate,
    mean interval bounds and se, their sd, n and the prior sd (--tau) that fit has on c.
    Empty when no matrix's terms came from a refit (the ranking's fit gives c itself)."""
    rows = [m["c_ranking"] for m in per_matrix if m.get("c_ranking")]
    out = {}
    for n in names:
        got = [r[n] for r in rows if n in r]
        if not got:
            continue
        est = np.array([r["estimate"] for r in got])
        out[n] = {"estimate": float(est.mean()), "se": float(np.mean([r["se"] for r in got])),
                  "lo": float(np.mean([r["lo"] for r in got])),
                  "hi": float(np.mean([r["hi"] for r in got])), "n": len(got),
                  "sd": float(est.std(ddof=1)) if len(got) > 1 else None,
                  "prior_sd": got[0]["prior_sd"]}
    return out


def _lams(per_matrix: list[dict]) -> dict:
    """The median over matrices of the ranking's bias-aware lam and of the bias terms' (for
    `bias_notes`), when the terms came from the Laplace evidence's lam in every matrix."""
    if not per_matrix or any(m.get("lam_terms_method") != "evidence" for m in per_matrix):
        return {}
    return {"lam": float(np.median([m["lam"]["bias_aware"] for m in per_matrix])),
            "lam_terms": float(np.median([m["lam_terms"] for m in per_matrix])),
            "lam_terms_method": "evidence"}


def _template(bundle: Any) -> dict[str, str | None]:
    """The judge's prompt template (name and sha256), as rank records it."""
    tpl = getattr(bundle.pairwise, "template", None)
    return {"name": getattr(tpl, "name", None), "sha256": getattr(tpl, "sha256", None)}


@dataclass
class RankEvalInputs:
    """A checked `rank-eval` request: its settings (`cfg`), the pools, the oracle spec per
    seed and the lists parsed from the settings."""

    cfg: RankEvalConfig
    k: int
    budgets: list[int]
    rules: list[str]
    seeds: list[int]
    plan: list[tuple[int, str, str]]  # (seed, pool spec, judge spec)
    pool_per_seed: bool
    judge_per_seed: bool
    pools: dict[str, Pool]
    covariates: list[str]  # kept: not constant in every pool
    dropped: list[str]
    lam_start: float
    eb_lam: bool

    @property
    def judges(self) -> list[str]:
        """The distinct judge specs, in plan order (one per seed for a seedless sim)."""
        return list(dict.fromkeys(j for _, _, j in self.plan))

    @property
    def jobs(self) -> list[tuple[str, str]]:
        """(pool spec, judge spec) of every verdict matrix to build."""
        return list(dict.fromkeys((p, j) for _, p, j in self.plan))

    @property
    def n_calls(self) -> int:
        return sum(len(ordered_pairs(self.pools[p])) for p, _ in self.jobs)


def prepare_rank_eval(cfg: RankEvalConfig, *, cli: bool = False) -> RankEvalInputs:
    """Check a rank-eval request and load its pools before any call is paid for. Bad input
    raises ValueError with a one-line message naming the option. Types and ranges are the
    Config's (checked by the CLI's options and the API): this checks what depends on the
    pools and the lists the settings give as text or as Python values."""
    budget_list = sorted(set(int_list(cfg.budgets, opt("budgets", cli))))
    lam_start, eb = parse_lam(cfg.lam, cli=cli)
    rule_list = _names(cfg.rules)
    check_rules(rule_list)
    seed_list = parse_seeds(cfg.seeds, cli=cli)
    names = covariate_names(cfg.covariates)
    plan, pool_per_seed, judge_per_seed = plan_cases(cfg.items, cfg.oracle, seed_list)
    pools = {spec: load_pool(spec, k=cfg.k, k_option=opt("k", cli))
             for spec in dict.fromkeys(p for _, p, _ in plan)}
    for pool in pools.values():
        pool.quality  # noqa: B018 - raises a clear error when quality is unknown
        pool.covariates(names)
    first_pool = next(iter(pools.values()))
    k = cfg.k or first_pool.k or 5
    for spec, pool in pools.items():
        if not 0 < k < pool.n_items:
            raise ValueError(f"{opt('k', cli)} must be below the pool size ({pool.n_items}) "
                             f"of {spec}")
        check_groups(pool, cli=cli)
        if budget_list[-1] > max_budget(pool) or budget_list[0] < 1:
            raise ValueError(f"{opt('budgets', cli)} must be in 1..{max_budget(pool)} for "
                             f"{spec}")
    # covariates constant in every pool carry no information: leave them out
    sds = {n: max(ci.sd for p in pools.values() for ci in p.covariates([n])[1]) for n in names}
    return RankEvalInputs(
        cfg=cfg, k=k, budgets=budget_list, rules=rule_list, seeds=seed_list, plan=plan,
        pool_per_seed=pool_per_seed, judge_per_seed=judge_per_seed, pools=pools,
        covariates=[n for n in names if sds[n] > 0.0],
        dropped=[n for n in names if sds[n] == 0.0], lam_start=lam_start, eb_lam=eb)


def matrix_convergence_warnings(tallies: dict) -> list[str]:
    """A line when some fits on the full verdict matrices did not converge (``tallies``:
    model -> `tally_convergence`): the bias-aware one gives c and kappa with their intervals
    and, with the naive one, the full-data recall."""
    from judgeaudit.rank.evaluate import convergence_parts, convergence_touches

    bad = [(m, t) for m, t in tallies.items() if t["not_converged"]]
    if not bad:
        return []
    return ["the fits on the full verdict matrices did not converge (MAP, or CG: the "
            "conjugate gradients of the sparse posterior; converged is false): "
            + ", ".join(f"{m.replace('_', '-')} model in {t['not_converged']} of {t['n']} "
                        f"matrices{convergence_parts(t)}" for m, t in bad)
            + ": " + convergence_touches(bad, "the full-data recall (and for the bias-aware "
                                          "model c and kappa)")]


async def build_matrices(session: Session, inp: RankEvalInputs
                         ) -> dict[tuple[str, str], VerdictMatrix]:
    """Judge every comparable ordered pair of every (pool, judge) once (cached). Under
    `--plan-only` the matrices are this command's one stage: `PlannedStop` once planned."""
    from judgeaudit.rank.live import full_matrix

    tracker = session.tracker("judging all ordered pairs", inp.n_calls)
    out: dict[tuple[str, str], VerdictMatrix] = {}
    for p, j in inp.jobs:
        out[p, j] = await full_matrix(session.judge(j), inp.pools[p],
                                      on_done=lambda _v: tracker.advance())
    planned = sum(session.judge(j).client.stats.planned for j in inp.judges)
    if planned:
        raise PlannedStop(f"rank-eval verdict matrices: {planned} requests planned; the rules "
                          "are evaluated once they are answered: ingest them, then re-run",
                          stage="matrices", n_planned=planned)
    return out


async def run_rank_eval(session: Session, inp: RankEvalInputs) -> dict[str, Any]:
    """Build the verdict matrices, fit both models on each (the judge's biases with
    intervals, full-data recall) and evaluate every rule x model x seed; the results
    document. A run that judged too little (`run.status` failed) is not evaluated."""
    from judgeaudit.outcome import assess, sum_calls
    from judgeaudit.rank.evaluate import (
        EvalCase,
        convergence_warnings,
        rank_eval,
        tally_convergence,
    )
    from judgeaudit.rank.fitting import fit_model, terms_fit
    from judgeaudit.rank.live import planted_biases
    from judgeaudit.rank.membership import recall_ties
    from judgeaudit.rank.summary import (
        bias_notes,
        collinear_warnings,
        covariate_estimates,
        fit_convergence,
        group_notes,
        kappa_estimate,
    )

    t0 = time.time()
    bundles = {js: session.judge(js) for js in inp.judges}
    matrices = await build_matrices(session, inp)
    calls = sum_calls([b.client.stats.as_dict() for b in bundles.values()])
    run = assess(n_valid=sum(m.n_valid for m in matrices.values()),
                 n_planned=sum(len(m.verdicts) for m in matrices.values()), calls=calls,
                 min_valid=inp.cfg.min_valid, max_failed=inp.cfg.max_failed, what="comparisons")
    kept, k = inp.covariates, inp.k
    doc: dict[str, Any] = {
        "command": "rank-eval", "version": session.stamps()["version"],
        "oracle": (bundles[inp.plan[0][2]].public_spec if len(bundles) == 1
                   else public_spec(inp.cfg.oracle)),
        "template": _template(bundles[inp.plan[0][2]]),  # the report's header named none
        "items": inp.cfg.items, "k": k, "budgets": inp.budgets, "rules": inp.rules,
        "seeds": inp.seeds, "models": list(MODELS), "covariates": kept,
        "covariates_dropped": inp.dropped, "pool_per_seed": inp.pool_per_seed,
        "judge_per_seed": inp.judge_per_seed,
    }
    # pairs never sent (the client stopped sending: a cap) are no verdicts, not invalid ones
    n_not_sent = sum(m.n_not_sent for m in matrices.values())
    doc.update(n_not_sent=n_not_sent, not_sent_why=not_sent_why(n_not_sent, calls))
    if run["status"] == "failed":  # no verdicts to evaluate the rules on
        doc.update(n_invalid=sum(m.n_invalid for m in matrices.values()), calls=calls, run=run,
                   seconds=time.time() - t0)
        return doc

    per_matrix = []
    for (p, j), mat in matrices.items():
        pool = inp.pools[p]
        X, info = pool.covariates(kept)
        comps = mat.comparisons()
        fb = fit_model("bias_aware", pool.n_items, comps, X=X if kept else None,
                       lam=inp.lam_start, tau=inp.cfg.tau, hierarchical=inp.cfg.hierarchical,
                       eb_lam=inp.eb_lam)
        fn = fit_model("naive", pool.n_items, comps, lam=inp.lam_start, eb_lam=inp.eb_lam)
        # c and kappa as rank reports them (rank.fitting.terms_fit: a learned lam's refit at
        # the Laplace evidence's); full-data recall from fb, the ranking's fit
        ft, how = terms_fit(fb, pool.n_items, comps, X if kept else None, eb_lam=inp.eb_lam,
                            tau=inp.cfg.tau, hierarchical=inp.cfg.hierarchical)
        planted = planted_biases(bundles[j], kept)
        entry = {
            "items": p, "oracle": bundles[j].public_spec,
            "n_comparisons": len(mat.verdicts) - mat.n_not_sent, "n_not_sent": mat.n_not_sent,
            "n_invalid": mat.n_invalid, "n_ties": mat.n_ties, "n_fitted": int(len(comps)),
            "c": covariate_estimates(ft, info, planted["c"] if planted else None),
            "kappa": kappa_estimate(ft, planted["kappa"] if planted else None),
            "full_data": {"naive": recall_ties(fn.theta, pool.quality, k, pool.groups),
                          "bias_aware": recall_ties(fb.theta, pool.quality, k, pool.groups)},
            "planted": planted, "true_topk_ambiguous": bool(pool.ambiguous_topk(k)),
            "lam": {"naive": fn.lam, "bias_aware": fb.lam},
            **({"lam_terms": ft.lam, "tau_terms": ft.tau, "lam_terms_method": how}
               if how else {}),
        }
        if ft is not fb and info:  # the c the ranking corrects by, as rank gives it
            entry["c_ranking"] = {n: {x: e[x] for x in ("estimate", "se", "lo", "hi",
                                                        "prior_sd")}
                                  for n, e in covariate_estimates(fb, info).items()}
        # after the intervals above (their solves count): the MAP and CG of each model's fit,
        # the bias-aware one with the fit its c and kappa come from
        entry["converged"] = {"naive": fit_convergence(fn),
                              "bias_aware": fit_convergence(fb, None if ft is fb else ft)}
        per_matrix.append(entry)
    by_seed = {s: (p, j) for s, p, j in inp.plan}

    def factory(seed: int) -> EvalCase:
        p, j = by_seed[seed]
        pool, mat = inp.pools[p], matrices[p, j]
        X = pool.covariates(kept)[0] if kept else None
        return EvalCase(oracle=mat.oracle(), n_items=pool.n_items, k=k,
                        true_topk=pool.true_topk(k), X=X, full=mat.comparisons(),
                        name=f"{public_spec(j)}@{p}", groups=pool.groups,
                        quality=pool.quality)

    tracker = session.tracker("evaluating rules x models x seeds",
                              len(inp.seeds) * len(MODELS) * len(inp.rules))
    c = inp.cfg
    res = rank_eval({public_spec(c.oracle): factory}, inp.budgets, inp.rules, inp.seeds,
                    lam=inp.lam_start, tau=c.tau, hierarchical=c.hierarchical,
                    n_samples=c.samples, refit_every=c.refit_every,
                    on_run=tracker.advance, eb_lam=inp.eb_lam)
    res.pop("estimates", None)
    c_sum, kappa_sum = summarise_estimates(per_matrix, kept)
    c_rank = summarise_c_ranking(per_matrix, kept)
    # fits that did not converge, per recall cell (rule x model x budget), per rule's runs
    # (the refits choosing pairs) and per verdict matrix (the full-data fits: c, kappa,
    # full-data recall; rank_eval's own full-data fits are the same fits again, per seed)
    conv = {"recall": res["convergence"]["recall"],
            "acquisition": res["convergence"]["acquisition"],
            "matrices": {m: tally_convergence([x["converged"][m] for x in per_matrix])
                         for m in MODELS}}
    warns = (convergence_warnings(conv) + matrix_convergence_warnings(conv["matrices"])
             + list(dict.fromkeys(
                 w for spec, pool in inp.pools.items()
                 for w in collinear_warnings(*pool.covariates(kept),
                                             where="the pool" if len(inp.pools) == 1
                                             else spec))))
    doc.update({
        "config": {**res["config"], "ties": TIES, "invalid": INVALID},
        "recall": res["recall"], "full_data": res["full_data"], "tests": res["tests"],
        "ablation": res.get("ablation"), "c": c_sum, "kappa": kappa_sum,
        # the c the ranking's own fit corrects by, beside c from the evidence refit (rank's
        # `c_ranking`); absent when c comes from the ranking's fit
        **({"c_ranking": c_rank} if c_rank else {}),
        # as rank: a fit that did not converge is a warning, and leads the notes (the --json
        # summary carries them)
        "convergence": conv, "converged": not warns, "warnings": warns,
        "notes": warns + bias_notes(
            {"c": c_sum, "kappa": kappa_sum, **_lams(per_matrix), "tau": c.tau,
             "c_ranking": c_rank,
             # the terms' prior sd where every matrix's came from the weak-prior refit
             "tau_terms": min((m.get("tau_terms") or c.tau for m in per_matrix),
                              default=c.tau)}, kept,
            hierarchical=c.hierarchical, trusted=False)
        + sorted({n for pool in inp.pools.values() for n in group_notes(pool, k)})
        + list(dict.fromkeys(n for pool in inp.pools.values() for n in pool.notes)),
        "matrices": per_matrix, "cases": res["cases"],
        "n_invalid": sum(m["n_invalid"] for m in per_matrix),
        "calls": calls, "run": run, "seconds": time.time() - t0,
    })
    if n_not_sent:  # a warning (not a fit's: `converged` stays the fits')
        w = (f"{n_not_sent} of the {sum(len(m.verdicts) for m in matrices.values())} "
             f"ordered pairs were not sent: {doc['not_sent_why']}; they are no verdicts (not "
             "counted as invalid), and the rules' replays find no verdict there")
        doc["warnings"] = [*warns, w]
        doc["notes"] = [w, *doc["notes"]]
    return doc


__all__ = ["RankEvalInputs", "build_matrices", "int_list", "matrix_convergence_warnings",
           "parse_seeds", "plan_cases", "prepare_rank_eval", "run_rank_eval",
           "summarise_c_ranking", "summarise_estimates"]
