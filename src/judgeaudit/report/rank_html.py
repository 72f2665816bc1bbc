"""View models of the `rank` and `rank-eval` report pages (templates rank.html, rank_eval.html),
built from the results document alone, as every page is (`judgeaudit.report.html`).

Item ids, prompts and raw judge outputs come from the pool and the judge: they are untrusted
and reach the page only through the autoescaping templates or `svg` (which escapes labels).
Documents written before these pages existed (`"schema": "judgeaudit.rank/1"`,
`"judgeaudit.rank_eval/2"`) have the same keys and render the same way.
"""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup

from judgeaudit.report import svg
from judgeaudit.report.html import (
    MAX_INVALID,
    _common,
    _d,
    _iso,
    _l,
    _num,
    _str,
    _text,
    fmt,
    fmt_ci,
    fmt_int,
    fmt_signed,
    humanize,
)

MAX_PLOT_ITEMS = 40  # items in the ranking plot (the table lists all)

Z95 = 1.959963984540054  # report imports no stats (DESIGN.md): the normal 97.5% point


def _iv(d: Any) -> dict[str, Any] | None:
    """A {estimate, lo, hi, ...} summary (rank's own interval shape) normalised."""
    if not isinstance(d, dict) or "estimate" not in d:
        return None
    per_sd = _d(d.get("per_sd"))
    return {"estimate": d.get("estimate"), "lo": d.get("lo"), "hi": d.get("hi"),
            "se": d.get("se"), "sd": d.get("sd"), "n": d.get("n"),
            "planted": d.get("planted"), "covered": d.get("covered"),
            "coverage": d.get("coverage"), "source": _str(d.get("source")),
            "from_prior": d.get("from_prior"), "from_prior_in": d.get("from_prior_in"),
            "per_sd": {"estimate": per_sd.get("estimate"), "lo": per_sd.get("lo"),
                       "hi": per_sd.get("hi")} if per_sd else None}


def _bias_rows(c: Any, kappa: Any) -> list[dict[str, Any]]:
    rows = [{"term": f"c[{name}]", "name": str(name), "kind": "covariate", **iv}
            for name, raw in _d(c).items() if (iv := _iv(raw)) is not None]
    k = _iv(kappa)
    if k is not None:
        rows.append({"term": "kappa", "name": "position (first shown)", "kind": "position", **k})
    return rows


def _bias_plot(rows: list[dict[str, Any]], xlabel: str) -> Any:
    pts = [{"label": r["term"], "value": r["estimate"], "ci95": [r["lo"], r["hi"]]}
           for r in rows if _num(r["estimate"]) is not None]
    return svg.interval_plot(pts, xlabel=xlabel, reference=0.0, signed=True) if pts else None


# ---------------------------------------------------------------- rank

def rank_view(r: dict[str, Any]) -> dict[str, Any]:
    """rank: the ranking with intervals, P(top-k), the estimated biases with intervals, the
    gate, both models' top-k, recall when true quality is known, and the comparisons."""
    cfg = _d(r.get("config"))
    k = cfg.get("k")
    groups = (_num(r.get("n_groups")) or 1) > 1
    ranking = []
    for x in _l(r.get("ranking")):
        if not isinstance(x, dict):
            continue
        ranking.append({
            "rank": x.get("rank"), "id": _str(x.get("id")), "theta": x.get("theta"),
            "lo": x.get("lo"), "hi": x.get("hi"), "p_topk": x.get("p_topk"),
            "p_pct": max(0.0, min(100.0, 100.0 * (_num(x.get("p_topk")) or 0.0))),
            "in_topk": bool(x.get("in_topk")), "n_compared": x.get("n_compared"),
            # no usable comparison: theta and place are the prior's (rank.summary.ranking)
            "uncompared": bool(x.get("uncompared")),
            "wins": x.get("wins"), "quality": x.get("quality"), "group": x.get("group"),
            "prompt": _str(x.get("prompt")),
            "covariates": [(str(n), v) for n, v in _d(x.get("covariates")).items()],
        })
    cov_names = [n for n, _ in ranking[0]["covariates"]] if ranking else []

    def label(x: dict[str, Any]) -> str:
        g = f"g{x['group']} " if groups and x["group"] is not None else ""
        return f"{g}#{x['rank']} {x['id']}"

    shown = ranking[:MAX_PLOT_ITEMS]
    theta_plot = svg.interval_plot(
        [{"label": label(x), "value": x["theta"], "ci95": [x["lo"], x["hi"]],
          "verdict": "top-k" if x["in_topk"] else None} for x in shown],
        xlabel="theta (posterior mean, 95% interval; log-odds scale)", reference=None,
        signed=True) if shown else None
    top = [x for x in ranking if x["in_topk"]]
    near = ranking[:max(2 * int(_num(k) or 5), 10)]
    membership_plot = svg.bar_chart(
        [label(x) for x in near], [{"label": "P(in top-k)", "values": [x["p_topk"]
                                                                     for x in near]}],
        ylabel="P(in top-k)", width=max(640, 56 * len(near))) if near else None
    models = _d(r.get("models"))
    ba = _d(models.get("bias_aware"))
    biases = _bias_rows(ba.get("c"), ba.get("kappa"))
    planted = _d(r.get("planted"))
    gate = _d(r.get("gate"))
    diff = _d(gate.get("difference"))
    comps = [c for c in _l(r.get("comparisons")) if isinstance(c, dict)]
    invalid = [{"step": c.get("step"), "first_id": _str(c.get("first_id")),
                "second_id": _str(c.get("second_id")), "raw": _text(c.get("raw")),
                "error": _str(c.get("error"))} for c in comps
               if c.get("invalid") and not c.get("not_sent")]
    true_topk = [str(i) for i in _l(r.get("true_topk"))]
    # a fit that did not converge (rank.summary.convergence_warnings) leads the page; the
    # notes, which repeat it for the --json summary, leave it out
    warnings = [str(x) for x in _l(r.get("warnings"))]
    recall_rows = [(str(m), v, _hits(v, len(true_topk)))
                   for m, v in _d(r.get("recall")).items()]
    return {
        "headline": _rank_headline(k, _str(r.get("reported_model")), top,
                                   r.get("n_comparisons"), r.get("n_invalid"), recall_rows),
        **_common(r),
        "data": r.get("items") or r.get("data"),  # an unfinished run's document says data
        "n_items": r.get("n_items"),
        "page_title": f"judgeaudit rank \u2013 {r.get('judge', '?')}",
        "k": k, "config": cfg, "n_groups": r.get("n_groups"), "groups": groups,
        "pool": [(str(a), b) for a, b in _d(r.get("pool")).items()],
        "reported_model": _str(r.get("reported_model")),
        "ranking": ranking, "cov_names": cov_names,
        "has_quality": any(x["quality"] is not None for x in ranking),
        "theta_plot": theta_plot, "n_plotted": len(shown),
        "top": top, "membership_plot": membership_plot,
        "topk": {m: [str(i) for i in _l(_d(models.get(m)).get("topk"))]
                 for m in ("naive", "bias_aware") if m in models},
        "biases": biases, "warnings": warnings,
        "notes": [str(x) for x in _l(r.get("notes")) if str(x) not in warnings],
        "run_notes": [str(x) for x in _l(r.get("notes")) if str(x) not in warnings],
        # each model's convergence (None: a document written before it was recorded beside
        # the MAP's, or a dense posterior with no CG solves)
        "fits": [{"model": str(m), "converged": _d(models.get(m)).get("converged"),
                  "map": _d(models.get(m)).get("map_converged"),
                  "cg": _d(models.get(m)).get("cg_converged")}
                 for m in ("naive", "bias_aware") if m in models],
        "tau_final": ba.get("tau"), "tau_collapsed": ba.get("tau_collapsed") is True,
        "bias_plot": _bias_plot(biases, "bias-aware model: c per covariate unit, kappa for "
                                        "the first-shown position (log-odds, 95% interval)"),
        "covariates": [{"name": _str(c.get("name")), "source": _str(c.get("source")),
                        "mean": c.get("mean"), "sd": c.get("sd")}
                       for c in _l(r.get("covariates")) if isinstance(c, dict)],
        "covariates_dropped": [str(x) for x in _l(r.get("covariates_dropped"))],
        "planted": planted or None,
        "omitted": sorted((str(a), b) for a, b in _d(planted.get("omitted")).items()),
        "gate": {"decision": _str(gate.get("decision")), "reason": _str(gate.get("reason")),
                 "basis": _str(gate.get("basis")), "n_trusted": gate.get("n_trusted"),
                 "agreement_naive": _iv_agree(gate.get("agreement_naive")),
                 "agreement_corrected": _iv_agree(gate.get("agreement_corrected")),
                 "difference": _iv_agree(diff), "bias_term": _str(gate.get("bias_term")),
                 "bias_ci": gate.get("bias_ci"), "rule": _str(gate.get("rule"))}
        if gate else None,
        "recall": recall_rows,
        "true_topk": true_topk, "true_topk_ambiguous": bool(r.get("true_topk_ambiguous")),
        "n_comparisons": r.get("n_comparisons"), "n_invalid": r.get("n_invalid"),
        "n_ties": r.get("n_ties"),
        # picks never sent (the client stopped: a cap): not comparisons, not invalid
        "n_not_sent": r.get("n_not_sent") or 0,
        "not_sent_short": _not_sent_short(r.get("not_sent_why")),
        # how invalid verdicts entered the fit: left out (said in config); a document without
        # it was written when they were fitted as ties
        "invalid_rule": _str(cfg.get("invalid")),
        "invalid_examples": invalid[:MAX_INVALID], "n_invalid_examples": len(invalid),
        "lam_final": [(str(m), v) for m, v in _d(cfg.get("lam_final")).items()],
        # the bias terms' fit when its lam is not the ranking's (the Laplace evidence's)
        "lam_terms": ({"lam": ba.get("lam_terms"), "method": _str(ba.get("lam_terms_method")),
                       "lam_ranking": ba.get("lam")}
                      if _num(ba.get("lam_terms")) is not None else None),
    }


def _rank_headline(k: Any, model: str | None, top: list[dict[str, Any]], n_comp: Any,
                   n_invalid: Any, recall: list[tuple[str, Any, str | None]]) -> Markup | None:
    """What rank found, in a line above its notes (the page opened on 30-40 lines of them):
    the top-k's first members with P(top-k), theta's interval and their comparisons, the
    least certain member, from how many comparisons, and recall when quality is known."""
    if not top:
        return None
    kk = fmt_int(k) if k is not None else str(len(top))

    def item(x: dict[str, Any]) -> Markup:
        return Markup("{} (P {}, \u03b8 {} {}, {} comparisons)").format(
            _iso(x["id"]), fmt(x["p_topk"], 2), fmt_signed(x["theta"], 2),
            fmt_ci([x["lo"], x["hi"]], 2), fmt_int(x["n_compared"]))

    text = (Markup("Top-{} by the ").format(kk) + (model or "?")
            + f" model from {fmt_int(n_comp)} comparisons ({fmt_int(n_invalid)} invalid): "
            + Markup("; ").join(item(x) for x in top[:3]))
    if len(top) > 3:
        text += f"; {len(top) - 3} more"
    ps = [(x, _num(x["p_topk"])) for x in top if _num(x["p_topk"]) is not None]
    if len(ps) > 1:
        least, p = min(ps, key=lambda t: t[1])  # type: ignore[arg-type,return-value]
        text += (Markup(". Least certain of the top-{}: ").format(kk) + _iso(least["id"])
                 + f" (P(top-{kk}) {fmt(p, 2)})")
    rec = [f"{humanize(m)} {fmt(v, 2)}" + (f" ({h})" if h else "") for m, v, h in recall
           if _num(v) is not None]
    if rec:
        text += f". Recall@{kk} against true quality: " + ", ".join(rec)
    return text + "."


def _not_sent_short(why: Any) -> str:
    """The head of why picks were never sent ("the spend cap is reached"), for the
    headline, as the terminal shortens it (`rank.run.not_sent_short`: report imports no
    command); the warning above gives it whole."""
    text = why if isinstance(why, str) and why else "the client stopped sending"
    return text.split(" (")[0].split("; ")[0]


def _iv_agree(x: Any) -> dict[str, Any] | None:
    """The gate's agreement figures: an Estimate-like dict or a bare number."""
    if isinstance(x, dict):
        ci = x.get("ci95") or [x.get("lo"), x.get("hi")]
        return {"value": x.get("value", x.get("estimate")),
                "ci95": ci if isinstance(ci, list) and len(ci) == 2 else None,
                "n": x.get("n")}
    if _num(x) is not None:
        return {"value": x, "ci95": None, "n": None}
    return None


# ---------------------------------------------------------------- rank-eval

def _cell(d: Any) -> dict[str, Any] | None:
    """A recall summary {mean, se, n, ci95, ci_method}: the interval over seeds rank-eval
    recorded, the t interval or, where every seed agreed, the exact one of the pooled hits
    (`exact`, with `hits` of `n_items`); a document from before it recorded one gets the
    normal interval it was shown with, clipped to [0, 1] (and none where every seed
    agreed)."""
    if not isinstance(d, dict):
        return None
    mean, se = _num(d.get("mean")), _num(d.get("se"))
    lo = hi = None
    old = "ci95" not in d  # shown with mean +/- 1.96 se, as it was made
    if not old:
        ci = d.get("ci95")
        if isinstance(ci, list) and len(ci) == 2:
            lo, hi = _num(ci[0]), _num(ci[1])
    elif mean is not None and se is not None and not math.isnan(se) and se > 0:
        lo, hi = max(0.0, mean - Z95 * se), min(1.0, mean + Z95 * se)
    exact = d.get("ci_method") == "clopper_pearson" and lo is not None
    return {"mean": mean, "se": se, "n": d.get("n"), "lo": lo, "hi": hi, "exact": exact,
            "z": old,
            "hits": d.get("hits") if exact else None,
            "n_items": d.get("n_items") if exact else None}


def _band(c: dict[str, Any]) -> dict[str, Any]:
    """A curve's band at one budget: the cell's interval, or the point itself where every
    seed agreed (no interval to print, but the band runs through the point)."""
    if c["lo"] is None and c["se"] == 0:
        return {"lo": c["mean"], "hi": c["mean"]}
    return {"lo": c["lo"], "hi": c["hi"]}


def _by_budget(cells: Any, budgets: list[str]) -> list[dict[str, Any] | None]:
    cells = {str(b): v for b, v in _d(cells).items()}
    return [_cell(cells.get(b)) for b in budgets]


def _conv(t: Any) -> dict[str, Any] | None:
    """A tally of fits (`rank.evaluate.tally_convergence`): ``not_converged`` of ``n``, None
    when not recorded."""
    t = _d(t)
    bad, n = _num(t.get("not_converged")), _num(t.get("n"))
    return None if bad is None or n is None else {"not_converged": int(bad), "n": int(n)}


def _conv_by_budget(cells: Any, budgets: list[str]) -> list[dict[str, Any] | None]:
    cells = {str(b): v for b, v in _d(cells).items()}
    return [_conv(cells.get(b)) for b in budgets]


def _fits_converged(conv: dict[str, Any]) -> dict[str, Any]:
    """The Settings line: how many of the recall cells', the pair-choosing runs' and the
    full-matrix fits did not converge, each of its total."""
    def total(tallies: list[Any]) -> dict[str, int]:
        ts = [t for t in map(_conv, tallies) if t is not None]
        return {"not_converged": sum(t["not_converged"] for t in ts),
                "n": sum(t["n"] for t in ts)}

    return {"recall": total([t for rules in _d(conv.get("recall")).values()
                             for by_b in _d(rules).values() for t in _d(by_b).values()]),
            "acquisition": total([t for rules in _d(conv.get("acquisition")).values()
                                  for t in _d(rules).values()]),
            "matrices": total(list(_d(conv.get("matrices")).values()))}


def _hits(recall: Any, n_true: int) -> str | None:
    """"4 of 5": the true top items a ranking found (its recall's n), when the recall is a
    number of this pool (grouped pools count every group's top items)."""
    if not isinstance(recall, int | float) or isinstance(recall, bool) or not n_true:
        return None
    return f"{round(recall * n_true)} of {n_true}"


def rank_eval_view(r: dict[str, Any]) -> dict[str, Any]:
    """rank-eval: recall against budget per acquisition rule (curves with 95% bands, one
    plot per model), the table behind them, paired tests between rules, the ablation, the
    judge's estimated biases across matrices and the per-matrix figures."""
    budgets = [str(b) for b in _l(r.get("budgets"))]
    recall = _d(r.get("recall"))
    full = _d(r.get("full_data"))
    conv = _d(r.get("convergence"))  # fits that did not converge (absent: not recorded)
    models = []
    for m, rules in recall.items():
        rows = [{"rule": str(rule), "cells": _by_budget(cells, budgets),
                 "conv": _conv_by_budget(_d(_d(conv.get("recall")).get(m)).get(rule),
                                         budgets),
                 "acquisition": _conv(_d(_d(conv.get("acquisition")).get(m)).get(rule))}
                for rule, cells in _d(rules).items()]
        fd = _cell(full.get(m))
        series = [{"label": row["rule"],
                   "points": [{"x": float(b), "y": c["mean"], **_band(c)}
                              for b, c in zip(budgets, row["cells"], strict=True)
                              if c is not None and c["mean"] is not None]}
                  for row in rows]
        plot = None
        if any(s["points"] for s in series):
            plot = svg.curve_plot(
                series, title=f"{m} model", xlabel="budget (comparisons)",
                ylabel=f"recall@{r.get('k', 'k')}", y_range=[0.0, 1.0],
                references=[{"label": f"full data {fd['mean']:.3f}", "y": fd["mean"]}]
                if fd and fd["mean"] is not None else [])
        models.append({"model": str(m), "rows": rows, "plot": plot, "full": fd})
    tests = []
    for m, by_b in _d(r.get("tests")).items():
        for b, pairs in _d(by_b).items():
            for pair, t in _d(pairs).items():
                t = _d(t)
                tests.append({"model": str(m), "budget": str(b), "pair": str(pair),
                              "mean_diff": t.get("mean_diff"), "se": t.get("se"),
                              "n": t.get("n"), "p_t": t.get("p_t"),
                              "p_wilcoxon": t.get("p_wilcoxon")})
    ablation = []
    for b, a in _d(r.get("ablation")).items():
        a = _d(a)
        inter, it = _d(a.get("interaction")), _d(a.get("interaction_test"))
        ablation.append({"budget": str(b), **{k: a.get(k) for k in (
            "naive+global", "naive+topk", "bias_aware+global", "bias_aware+topk",
            "gain_model", "gain_acquisition", "gain_both")},
            "interaction": inter.get("mean"), "interaction_se": inter.get("se"),
            "interaction_p": it.get("p_t")})
    biases = _bias_rows(r.get("c"), r.get("kappa"))
    # the c the ranking's own fit corrects by, beside c from the evidence refit (rank's
    # c_ranking, in its note); absent when c is the ranking's fit's
    biases += [{"term": f"c[{name}] (ranking)", "kind": "covariate",
                "name": f"{name}: what the ranking corrects by" + (
                    f" (prior sd {sd:.3g}, --tau)"
                    if (sd := _num(_d(raw).get("prior_sd"))) is not None else ""), **iv}
               for name, raw in _d(r.get("c_ranking")).items()
               if (iv := _iv(raw)) is not None]
    warnings = [str(x) for x in _l(r.get("warnings"))]
    matrices = []
    for x in _l(r.get("matrices")):
        if not isinstance(x, dict):
            continue
        fdm = _d(x.get("full_data"))
        cm = _d(x.get("converged"))
        matrices.append({"pool": _str(x.get("items")), "oracle": _str(x.get("oracle")),
                         "n_comparisons": x.get("n_comparisons"),
                         "n_invalid": x.get("n_invalid"), "n_ties": x.get("n_ties"),
                         "naive": fdm.get("naive"), "bias_aware": fdm.get("bias_aware"),
                         "ambiguous": bool(x.get("true_topk_ambiguous")),
                         # models whose fit on this matrix did not converge
                         "not_converged": [str(m) for m in ("naive", "bias_aware")
                                           if _d(cm.get(m)).get("converged") is False]})
    return {
        "headline": _rank_eval_headline(r.get("k"), budgets, len(_l(r.get("seeds"))), models),
        **_common(r),
        "judge": r.get("oracle"), "data": r.get("items"),
        "page_title": f"judgeaudit rank-eval \u2013 {r.get('oracle', '?')}",
        "k": r.get("k"), "budgets": budgets,
        "rules": [str(x) for x in _l(r.get("rules"))],
        "seeds": [str(x) for x in _l(r.get("seeds"))],
        "config": _d(r.get("config")),
        # cells from before rank-eval recorded t intervals (mean +/- 1.96 se): the page says
        # what their intervals are, not "t intervals"
        "old_intervals": any(c is not None and c["z"] for m in models
                             for row in m["rows"] for c in row["cells"]),
        "any_exact": any(c is not None and c["exact"] for m in models
                         for c in [*(x for row in m["rows"] for x in row["cells"]), m["full"]]),
        "pool_per_seed": bool(r.get("pool_per_seed")),
        "judge_per_seed": bool(r.get("judge_per_seed")),
        "models": models, "tests": tests, "ablation": ablation,
        # fits that did not converge (rank.evaluate.convergence_warnings) lead the page; the
        # notes, which repeat them for the --json summary, leave them out
        "warnings": warnings,
        "fits_converged": _fits_converged(conv) if conv else None,
        "biases": biases, "notes": [str(x) for x in _l(r.get("notes")) if str(x) not in warnings],
        "run_notes": [str(x) for x in _l(r.get("notes")) if str(x) not in warnings],
        "bias_plot": _bias_plot(biases, "bias-aware fit on each full matrix: mean estimate "
                                        "and mean 95% interval across matrices (log-odds)"),
        "covariates_dropped": [str(x) for x in _l(r.get("covariates_dropped"))],
        "matrices": matrices, "n_invalid": r.get("n_invalid"),
    }


def _rank_eval_headline(k: Any, budgets: list[str], n_seeds: int,
                        models: list[dict[str, Any]]) -> str | None:
    """What rank-eval found, in a line above its notes: at the largest budget, each model's
    best acquisition rule with its recall@k, the 95% interval over the seeds and n."""
    if not budgets or not models:
        return None
    try:
        nums = [float(b) for b in budgets]  # budgets are the document's keys (strings)
    except ValueError:
        return None
    last = max(range(len(budgets)), key=lambda i: nums[i])
    parts = []
    for m in models:
        cells = [(row["rule"], row["cells"][last]) for row in m["rows"]
                 if len(row["cells"]) > last and row["cells"][last] is not None
                 and _num(row["cells"][last]["mean"]) is not None]
        if not cells:
            continue
        rule, c = max(cells, key=lambda t: t[1]["mean"])
        tied = [x for x, cc in cells if math.isclose(cc["mean"], c["mean"]) and x != rule]
        ci = fmt_ci([c["lo"], c["hi"]], 2, signed=False) if c["lo"] is not None else "(none)"
        extra = ([f"tied with {', '.join(tied)}"] if tied else []) + (
            [f"full data {fmt(m['full']['mean'], 2)}"]
            if m["full"] and _num(m["full"]["mean"]) is not None else [])
        parts.append(f"{humanize(m['model'])} model: {rule} {fmt(c['mean'], 2)} {ci}, the best "
                     f"of {len(cells)} rule{'' if len(cells) == 1 else 's'}"
                     + (f" ({'; '.join(extra)})" if extra else ""))
    if not parts:
        return None
    kk = fmt_int(k) if k is not None else "k"
    return (f"At the largest budget, B = {budgets[last]} (n = {n_seeds} seeds), recall@{kk}: "
            + "; ".join(parts) + ".")


__all__ = ["rank_eval_view", "rank_view"]
