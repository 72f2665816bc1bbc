"""The `rank` pipeline: inputs checked before any call (`prepare_rank`), the active loop run
through a `judgeaudit.session.Session` (`run_rank`), and the results document the CLI writes
and the Python API wraps in a `Result` (`judgeaudit.rank(...)`).

Both callers share this one pipeline so the document has one shape: `command` "rank", the
`run` outcome (`outcome.assess`), and `schema_version` stamped by `write_results`.
Option names in error messages follow the caller (`--budget` for the CLI, `budget` for
Python), so each user reads the name they typed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judgeaudit import plugins
from judgeaudit.rank.acquisition import RULES, rule_names
from judgeaudit.rank.live import Verdict, max_budget
from judgeaudit.rank.loop import ProgressHook
from judgeaudit.rank.pool import Pool, load_pool, load_trusted, parse_covariates

if TYPE_CHECKING:
    from judgeaudit.config import RankConfig
    from judgeaudit.session import Session

TIES = "a tie counts as half a win for each side"
INVALID = ("an invalid verdict (no readable answer) is left out of the fit: counted in "
           "n_invalid and kept in comparisons with its raw answer")
NOT_SENT = ("a pick never sent (the client stopped sending: the spend cap, a server that "
            "stopped answering) is no comparison: counted in n_not_sent, not in "
            "n_comparisons or n_invalid, and kept in comparisons marked not_sent")
Covariates = str | Sequence[str] | None
"""Comma-separated names, a list of names, None (the default set) or "none"."""
Trusted = str | Path | Sequence[tuple[str, str]] | None
"""A JSONL/CSV file of trusted (better, worse) pairs, or the pairs of item ids themselves."""


def opt(name: str, cli: bool) -> str:
    """An option's name as the caller typed it: `--refit-every` (CLI) or `refit_every`."""
    return f"--{name.replace('_', '-')}" if cli else name


def parse_lam(value: str | float, *, cli: bool = False) -> tuple[float, bool]:
    """'auto' -> (1.0 start, empirical Bayes on); a positive number -> (it, EB off)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return 1.0, True
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = -1.0
    if isinstance(value, bool) or not v > 0:
        raise ValueError(f"{opt('lam', cli)}: expected 'auto' or a positive number, "
                         f"got {value!r}")
    return v, False


def check_rules(rules: Sequence[str]) -> None:
    """Every rule a known one, plugins' included; a broken plugin's says why it is missing."""
    bad = [r for r in rules if r not in RULES]
    if bad:
        raise ValueError(f"unknown rule(s) {', '.join(bad)}; expected one of "
                         f"{', '.join(rule_names())}"
                         f"{plugins.unknown_suffixes('acquisition', bad)}")


def covariate_names(covariates: Covariates) -> list[str]:
    if covariates is None or isinstance(covariates, str):
        return parse_covariates(covariates)
    return parse_covariates(",".join(covariates) or "none")


def _trusted_rows(trusted: Trusted, pool: Pool) -> np.ndarray | None:
    if trusted is None:
        return None
    if isinstance(trusted, str | Path):
        return load_trusted(trusted, pool)
    index = {it.id: i for i, it in enumerate(pool.items)}
    rows = []
    for better, worse in trusted:
        for v in (better, worse):
            if str(v) not in index:
                raise ValueError(f"trusted: {v!r} is not an item id of the pool ({pool.source})")
        if str(better) == str(worse):
            raise ValueError(f"trusted: better and worse name the same item {better!r}")
        rows.append((index[str(better)], index[str(worse)], 1.0))
    if not rows:
        raise ValueError("trusted: no trusted pairs")
    return np.array(rows, dtype=float)


def check_groups(pool: Pool, *, cli: bool = False) -> None:
    """Items are compared only with items answering the same prompt (a prompt group), so a
    pool whose every item has a prompt of its own has nothing to compare: say so (it read
    "--budget must be in 1..0")."""
    if max_budget(pool) == 0:
        raise ValueError(
            f"{pool.source}: every one of its {pool.n_items} items answers a prompt of its own "
            f"({pool.n_groups} prompt groups of 1 item): items are compared, and the top-k "
            f"({opt('k', cli)}) chosen, only within a prompt group (items with the same "
            "'prompt' text), so at least one group needs 2 items; give the items that "
            "answer the same question the same prompt")


def too_long_summary(verdicts: Sequence[Verdict], pool: Pool,
                     left_out: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """Calls the server refused as over the judge's context (kind too_long): how many and
    the items of those comparisons, most often involved first (the long item leads); with
    the loop's `left_out` (`rank.loop`), what the picks left out after those refusals:
    the items (every call too long) and pairs no longer asked, the picks the rule made on
    them that went to other pairs, and the budget left unspent when no pair was left."""
    bad = [v for v in verdicts if v.error_kind == "too_long"]
    if not bad:
        return None
    count: dict[str, int] = {}
    for v in bad:
        for i in (v.first, v.second):
            iid = pool.items[i].id
            count[iid] = count.get(iid, 0) + 1
    items = sorted(count, key=lambda x: -count[x])
    out: dict[str, Any] = {"n_calls": len(bad), "items": {i: count[i] for i in items}}
    if left_out:
        out.update(items_left_out=[pool.items[i].id for i in left_out.get("items", [])],
                   pairs_left_out=int(left_out.get("pairs", 0)),
                   picks_skipped=int(left_out.get("picks", 0)),
                   unspent=int(left_out.get("unspent", 0)))
    return out


def too_long_warning(tl: dict[str, Any]) -> str:
    """The terminal's and report's line for `too_long_summary`."""
    shown = ", ".join(f"{i!r} ({n})" for i, n in list(tl["items"].items())[:5])
    more = len(tl["items"]) - 5
    text = (f"{tl['n_calls']} call{'s' if tl['n_calls'] > 1 else ''} failed as too long for "
            f"the judge's context (no verdict: left out of the fit); items in those "
            f"comparisons (calls): {shown}{f' and {more} more' if more > 0 else ''}")
    if "pairs_left_out" not in tl:  # a document written before picks left them out
        return text
    gone = tl["items_left_out"]
    names = ", ".join(repr(i) for i in gone[:5]) + (f" and {len(gone) - 5} more"
                                                     if len(gone) > 5 else "")
    n_p = tl["pairs_left_out"]
    text += (f"; not asked again: {n_p} pair{'s' if n_p != 1 else ''}"
             + (f", every pair of {names} (each call of "
                f"{'it' if len(gone) == 1 else 'each'} too long)" if gone else "")
             + f"; {tl['picks_skipped']} pick{'s' if tl['picks_skipped'] != 1 else ''} the "
             "rule made on them went to other pairs instead")
    if tl["unspent"]:
        text += (f"; {tl['unspent']} comparisons of the budget were not made: every pair "
                 "left was too long")
    return text


def not_sent_why(n_not_sent: int, calls: Mapping[str, Any]) -> str | None:
    """Why picks were never sent (`outcome.not_sent_reason`: the client's own word, the
    spend cap's or the call cap's, else what the failed attempts were); None when every
    pick was sent."""
    from judgeaudit.outcome import not_sent_reason

    return not_sent_reason(calls, hint=False) if n_not_sent else None


def not_sent_short(why: str | None) -> str:
    """The reason's head for a one-line count ("the spend cap is reached"), its details
    are in the warning (`not_sent_warning`)."""
    return (why or "the client stopped sending").split(" (")[0].split("; ")[0]


def not_sent_warning(doc: Mapping[str, Any]) -> str:
    """The warning a ranking with picks never sent carries: how many of the budget, that
    the judge saw only the comparisons made, why, and what a re-run costs."""
    n, made = int(doc["n_not_sent"]), int(doc["n_comparisons"])
    budget = (doc.get("config") or {}).get("budget")
    refused = sum(bool(c.get("not_sent")) for c in doc.get("comparisons") or [])
    unpicked = (f"; the ranking stopped picking once the client stopped sending and the "
                f"cache held none of the pairs left: {n - refused} of them were never picked "
                "(each would have been refused the same way), so "
                f"comparisons holds the {made + refused} picks made, {refused} of them marked "
                "not_sent" if n > refused else "")
    return (f"{n} of the budget's {budget} comparisons were not sent, so the judge saw "
            f"{made}: {doc.get('not_sent_why') or 'the client stopped sending'}. They are "
            "no verdicts (not counted as invalid; the fit never had them); with a cache, the "
            "same command once the cause is removed (a higher --max-cost, a server that "
            f"answers again) takes the {made} made from the cache and pays only for "
            f"the rest{unpicked}")


@dataclass
class RankInputs:
    """A checked `rank` request: its settings (`cfg`) and what was derived from them, all
    `run_rank` needs besides the judge."""

    cfg: RankConfig
    pool: Pool
    covariates: list[str]
    trusted: np.ndarray | None
    k: int
    lam_start: float
    eb_lam: bool


def prepare_rank(cfg: RankConfig, *, cli: bool = False) -> RankInputs:
    """Check a rank request and load its pool before any call is paid for. Bad input raises
    ValueError with a one-line message naming the option. Types and ranges are the Config's
    (checked by the CLI's options and the API): this checks what depends on the pool and
    the forms the Config cannot hold (covariates, trusted pairs and lam as Python values)."""
    check_rules([cfg.rule])
    lam_start, eb = parse_lam(cfg.lam, cli=cli)
    pool = load_pool(cfg.items, k=cfg.k, k_option=opt("k", cli))
    names = covariate_names(cfg.covariates)
    pool.covariates(names)  # unknown names fail here, before any call
    rows = _trusted_rows(cfg.trusted, pool)
    k = cfg.k or pool.k or 5
    if not 0 < k < pool.n_items:
        raise ValueError(f"{opt('k', cli)} must be in 1..{pool.n_items - 1} for this pool, "
                         f"got {k}")
    check_groups(pool, cli=cli)
    if not 0 < cfg.budget <= max_budget(pool):
        raise ValueError(f"{opt('budget', cli)} must be in 1..{max_budget(pool)} (every "
                         f"comparable pair in both orders) for this pool, got {cfg.budget}")
    return RankInputs(cfg=cfg, pool=pool, covariates=names, trusted=rows, k=k,
                      lam_start=lam_start, eb_lam=eb)


async def run_rank(
    session: Session,
    inp: RankInputs,
    *,
    on_batch: ProgressHook | None = None,
    on_call: Callable[[Verdict], None] | None = None,
) -> dict[str, Any]:
    """Rank `inp.pool` with the judge of `inp.cfg.judge` (made by `session`) and build the results
    document: the reported ranking with intervals and P(top-k), both models' top-k and the
    judge's estimated biases, the gate, every comparison, calls and the run outcome.
    `on_batch(done, fit, ctx)` after every judged round, `on_call(verdict)` after every
    comparison (the session's progress callback hears of each too)."""
    from judgeaudit.rank.gate import anchor_gate
    from judgeaudit.rank.live import planted_biases, rank_live
    from judgeaudit.rank.membership import recall_ties
    from judgeaudit.rank.summary import (
        TAU_COLLAPSED,
        bias_notes,
        collinear_warnings,
        compared_counts,
        convergence_warnings,
        gate_summary,
        group_notes,
        model_summary,
        ranking,
        selection_theta,
        uncompared_warnings,
    )

    t0 = time.time()
    c = inp.cfg
    bundle = session.judge(c.judge)
    pool, k = inp.pool, inp.k
    tracker = session.tracker("ranking", c.budget)

    def call(v: Verdict) -> None:
        tracker.advance()
        if on_call is not None:
            on_call(v)

    run = await rank_live(bundle, pool, k=k, budget=c.budget, rule=c.rule,
                          covariates=inp.covariates, model=c.model, seed=c.seed,
                          lam=inp.lam_start, eb_lam=inp.eb_lam, tau=c.tau,
                          hierarchical=c.hierarchical, refit_every=c.refit_every,
                          n_samples=c.samples, on_batch=on_batch, on_call=call,
                          min_valid=c.min_valid, max_failed=c.max_failed)
    res = run.result
    fits = {"naive": res.naive, "bias_aware": res.bias_aware}
    names = [c.name for c in run.covariates]
    gate = (anchor_gate(res.naive, res.bias_aware, inp.trusted, names=names)
            if inp.trusted is not None else None)
    chosen = ("bias_aware" if gate.enabled else "naive") if gate else c.model
    final = fits[chosen]
    tpl = bundle.pairwise.template
    planted = planted_biases(bundle, names)
    n_cmp = compared_counts(pool.n_items, res.comparisons)
    compared = n_cmp > 0
    calls = bundle.client.stats.as_dict()
    doc: dict[str, Any] = {
        "command": "rank", "version": session.stamps()["version"],
        "judge": bundle.public_spec, "items": c.items, "pool": pool.meta,
        "n_items": pool.n_items, "n_groups": pool.n_groups,
        "config": {"k": k, "budget": c.budget, "rule": c.rule, "model": c.model,
                   "seed": c.seed, "lam": c.lam,
                   "lam_final": {m: f.lam for m, f in fits.items()},
                   "lam_terms": ({"bias_aware": run.terms.lam, "method": run.terms_method}
                                 if run.terms is not None and run.terms_method else None),
                   "tau": c.tau,
                   "hierarchical": c.hierarchical, "refit_every": c.refit_every,
                   "samples": c.samples, "ties": TIES, "invalid": INVALID,
                   "not_sent": NOT_SENT},
        "template": {"name": getattr(tpl, "name", None), "sha256": getattr(tpl, "sha256", None)},
        "covariates": [{"name": c.name, "source": c.source, "mean": c.mean, "sd": c.sd}
                       for c in run.covariates],
        "covariates_dropped": run.dropped,
        "reported_model": chosen,
        # before "models": their `converged` covers the CG solves the ranking's intervals and
        # P(top-k) make on first use (and the gate's, above)
        "ranking": ranking(pool, final, k, run.X, run.covariates, res.comparisons,
                           c.samples, c.seed, p_fit=run.p_fit(chosen)),
        "models": {m: model_summary(pool, f, k, run.covariates, planted,
                                    *((run.terms, run.terms_method) if m == "bias_aware"
                                      else (None, None)), compared=compared)
                   for m, f in fits.items()},
        "planted": planted,
        "gate": gate_summary(gate) if gate else None,
        "comparisons": [dict(v.as_dict(pool), step=i) for i, v in enumerate(run.verdicts)],
        # made: sent or answered from the cache; the picks never sent are apart, with why
        "n_comparisons": run.n_made, "n_invalid": run.n_invalid, "n_ties": run.n_ties,
        "n_not_sent": run.n_not_sent, "not_sent_why": not_sent_why(run.n_not_sent, calls),
        "n_fitted": int(res.comparisons.shape[0]),  # the valid ones: invalid are left out
        # items with no usable comparison: their theta and place are the prior's
        "n_uncompared": int(np.sum(~compared)),
        "uncompared": [pool.items[i].id for i in np.flatnonzero(~compared)[:20]],
        "too_long": too_long_summary(run.verdicts, pool, res.left_out),
        "calls": calls, "run": run.run, "seconds": time.time() - t0,
    }
    # a fit that did not converge (MAP or the sparse posterior's CG) is a warning of its own
    # (`warnings`, as audit and evaluate keep theirs), and leads the notes: the --json
    # summary and scripts reading notes see it too
    doc["converged"] = all(m["converged"] for m in doc["models"].values())
    doc["warnings"] = (convergence_warnings(doc["models"])
                       + uncompared_warnings(pool, n_cmp, k,
                                             {m: d["topk"] for m, d in doc["models"].items()})
                       + ([too_long_warning(doc["too_long"])] if doc["too_long"] else [])
                       + ([not_sent_warning(doc)] if doc["n_not_sent"] else [])
                       + collinear_warnings(run.X, run.covariates))
    ba = doc["models"]["bias_aware"]
    if c.hierarchical:  # every bias term held near 0 by the learned tau (bias_notes says so)
        ba["tau_collapsed"] = bool(ba.get("tau_terms", ba["tau"]) < TAU_COLLAPSED)
    doc["notes"] = doc["warnings"] + bias_notes(ba, names, hierarchical=c.hierarchical,
                                                trusted=inp.trusted is not None,
                                                naive_topk=doc["models"]["naive"]["topk"])
    doc["notes"] += group_notes(pool, k) + pool.notes
    if pool.has_quality:
        true = pool.true_topk(k)
        # of the top k reported (`selection_theta`: items never compared come last)
        doc["recall"] = {m: recall_ties(selection_theta(f.theta, compared), pool.quality, k,
                                        pool.groups)
                         for m, f in fits.items()}
        # each recall's n (the true top items) and hits, as the terminal says "4 of 5"
        doc["recall_hits"] = {m: {"hits": int(round(v * len(true))), "n": int(len(true))}
                              for m, v in doc["recall"].items()}
        doc["true_topk"] = [pool.items[i].id for i in true]
        doc["true_topk_ambiguous"] = bool(pool.ambiguous_topk(k))
    return doc


__all__ = ["INVALID", "NOT_SENT", "TIES", "RankInputs", "check_groups", "check_rules",
           "covariate_names", "not_sent_short", "not_sent_warning", "not_sent_why", "opt",
           "parse_lam", "prepare_rank", "run_rank", "too_long_summary"]
