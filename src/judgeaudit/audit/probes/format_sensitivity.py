"""Format sensitivity of the judge prompt itself: meaning-preserving rewrites of the template
(option labels A/B vs 1/2, clause order, wording, instruction placement). A robust judge's
accuracy, TPR and TNR should not move; the production check flags a move of > 3 points."""

from __future__ import annotations

from typing import Any

import numpy as np

from judgeaudit.audit.metrics import estimate, why_invalid
from judgeaudit.audit.paired import credit_of, paired_difference
from judgeaudit.audit.probe import (
    AuditContext,
    Probe,
    ProbeResult,
    drop_invalid,
    register_probe,
)
from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.judges.templates import parse_template
from judgeaudit.perturb.prompt_format import builtin_template_text, prompt_variants

FLAG_POINTS = 0.03


def _rates(items, verdicts) -> dict[str, list[float | None]]:
    credit = [credit_of(v, it.label) for it, v in zip(items, verdicts, strict=True)]
    return {"accuracy": credit,
            "tpr": [c for it, c in zip(items, credit, strict=True) if it.label == 1],
            "tnr": [c for it, c in zip(items, credit, strict=True) if it.label == 2]}


def _mean(xs: list[float | None]) -> float | None:
    v = [x for x in xs if x is not None]
    return float(np.mean(v)) if v else None


@register_probe
class FormatSensitivityProbe(Probe):
    name = "format_sensitivity"
    title = "Judge-prompt format sensitivity"
    description = ("The judge prompt is rewritten without changing its meaning (labels 1/2 "
                   "instead of A/B, clause order, wording, instruction after the responses); "
                   "accuracy, TPR (label 1) and TNR (label 2) should not move.")
    metric = "accuracy change of the variant that moves it most (variant - original)"
    direction = "negative = the rewrite makes the judge less accurate"
    no_bias_range = (-FLAG_POINTS, FLAG_POINTS)
    default = False

    async def run(self, ctx: AuditContext) -> ProbeResult:
        base_t = ctx.bundle.pairwise.template
        try:
            text = builtin_template_text(base_t.name)
        except ValueError:
            return ProbeResult(None, (None, None), 0, None, None, notes=[
                f"template {base_t.name!r} is not built in; format variants need its text"])
        base = await ctx.baseline()
        base_rates = _rates(ctx.items, base)
        rows, best, max_move = [], None, 0.0
        # The reported p is Bonferroni-adjusted over the variants, so each variant's test
        # (and its MDE) is at alpha / k.
        level = ctx.alpha / max(1, len(prompt_variants(text)))
        points = [{"label": "original", **_point(base_rates["accuracy"])}]
        variants = prompt_variants(text)
        # every variant's left-out items, (variant, [(item id, (baseline, variant verdict))]):
        # only the reported variant's were counted, so a variant whose every answer was
        # unreadable showed n = 0 beside n_invalid 0 and dropped {}
        left: list[tuple[str, list[tuple[str, tuple[Any, Any]]]]] = []
        for v in variants:
            vt_text = v.text.rstrip("\n")
            if v.choices:
                vt_text += "\n### labels\n" + ", ".join(v.choices[:2])
            vt = parse_template(f"{base_t.name}~{v.name}", vt_text + "\n")
            pj = PairwiseJudge(ctx.bundle.client, vt,
                               both_orders=ctx.bundle.pairwise.both_orders, seed=ctx.seed)
            verdicts = await ctx.judge(ctx.items, judge=pj)
            r = _rates(ctx.items, verdicts)
            d = paired_difference(base_rates["accuracy"], r["accuracy"], seed=ctx.seed,
                                  alpha=level, span=1.0)  # per-item credits
            moves = {k: (None if _mean(r[k]) is None or _mean(base_rates[k]) is None
                         else _mean(r[k]) - _mean(base_rates[k])) for k in r}
            biggest = max((abs(x) for x in moves.values() if x is not None), default=0.0)
            max_move = max(max_move, biggest)
            rows.append((v, d, moves))
            left.append((v.name, [(ctx.items[i].id, (base[i], verdicts[i]))
                                  for i in d["invalid"]]))
            points.append({"label": v.name, **_point(r["accuracy"])})
            if d["effect"] is not None and (best is None or abs(d["effect"]) >
                                            abs(best[1]["effect"])):
                best = (v, d, verdicts)
        if best is None:
            res = ProbeResult(None, (None, None), 0, None, None,
                              notes=["no variant produced valid verdicts"])
            _count_left_out(res, left, len(ctx.items))
            return res
        v, d, best_verdicts = best
        res = ProbeResult.from_stats(d, [it.id for it in ctx.items],
                                     p=min(1.0, d["p"] * len(rows)))
        _count_left_out(res, left, len(ctx.items))
        res.notes.append(f"largest accuracy move: variant {v.name!r} ({v.description}); "
                         f"p is Bonferroni-adjusted over {len(rows)} variants")
        for vv, dd, moves in rows:
            res.rates[f"{vv.name}: accuracy change"] = dd["estimate"].as_dict()
            for k in ("tpr", "tnr"):
                if moves[k] is not None:
                    res.notes.append(f"{vv.name}: {k.upper()} moves {moves[k]:+.3f}")
        res.flag = {"threshold": FLAG_POINTS, "metric": "largest move of accuracy, TPR or TNR",
                    "value": max_move, "exceeds": max_move > FLAG_POINTS}
        res.plot = {"kind": "points", "title": "Accuracy per prompt variant",
                    "xlabel": "accuracy", "points": points}
        return res


def _count_left_out(res: ProbeResult,
                    left: list[tuple[str, list[tuple[str, tuple[Any, Any]]]]],
                    n_items: int) -> None:
    """Count every variant's items without a valid verdict (baseline's or the variant's) in
    `res.dropped` (distinct items left out of at least one variant, by reason) and
    `res.n_invalid` (their number), and name each variant that left items out in a note, a
    variant that measured nothing first: the effect is one variant's, and the others' unreadable
    answers went uncounted."""
    ids: set[str] = set()
    empty, partial = [], []
    for name, items in left:
        drop_invalid(res, items)
        ids.update(i for i, _ in items)
        if not items:
            continue
        reasons: dict[str, int] = {}
        for _, vs in items:
            why = why_invalid(*vs)
            reasons[why] = reasons.get(why, 0) + 1
        why_text = ", ".join(f"{r} {k}" for r, k in sorted(reasons.items()))
        if len(items) >= n_items:
            empty.append(f"variant {name!r} measured nothing: {len(items)} of {n_items} items "
                         f"without a valid verdict ({why_text}); its accuracy change has n = 0")
        else:
            partial.append(f"variant {name!r}: {len(items)} of {n_items} items left out "
                           f"({why_text})")
    res.n_invalid = max(res.n_invalid, len(ids))
    res.notes.extend(empty + partial)
    if ids:
        res.notes.append("dropped counts the distinct items left out of at least one variant "
                         "(each variant's effect uses its own valid items)")


def _point(credit: list[float | None]) -> dict:
    vals = [c for c in credit if c is not None]
    e = estimate(sum(vals), len(vals))
    return {"value": e["value"], "ci95": e["ci95"]}
