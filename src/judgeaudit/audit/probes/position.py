"""Position: swap the two responses; a fair judge's choice follows the content, not the slot."""

from __future__ import annotations

from judgeaudit.audit.metrics import INVALID_REASONS, position
from judgeaudit.audit.panel import consistency_any
from judgeaudit.audit.probe import (
    AuditContext,
    Probe,
    ProbeResult,
    drop,
    register_probe,
    threshold_flag,
)

FLAG_FIRST_RATE = 0.55  # production check: flag a first-slot rate above 55%


@register_probe
class PositionProbe(Probe):
    name = "position"
    title = "Position"
    description = ("Each pair is judged twice with the two responses swapped; an unbiased "
                   "judge picks the same response in both orders.")
    metric = "first-slot preference (share of verdicts for the first-shown response) - 0.5"
    direction = "positive = prefers the response shown first; negative = the second"
    needs_label = False  # first-slot rate and order consistency need no label
    judges_texts_as_given = True  # both orders of the item's own texts

    async def run(self, ctx: AuditContext) -> ProbeResult:
        verdicts = await ctx.baseline()
        m = position(verdicts, seed=ctx.seed, alpha=ctx.alpha)
        fr = m.get("first_rate")
        flag = threshold_flag(FLAG_FIRST_RATE, *_favoured_slot(fr)) if fr else None
        res = ProbeResult.from_stats(
            m, [it.id for it in ctx.items],
            rates={"first_slot_rate": fr,
                   # LLMBar's positional agreement: same outcome in both orders, all items
                   "position_consistency": consistency_any(verdicts),
                   "consistency_decisive": m.get("consistency")} if fr else {},
            flag=flag, n_invalid=sum(len(m["dropped"][r]) for r in INVALID_REASONS))
        for reason, idx in m["dropped"].items():
            drop(res, reason, [ctx.items[i].id for i in idx])
        one = len(m["dropped"]["single_order"])
        if not m["n"] and one and one == len(ctx.items):
            # a judge that answers in one order only cannot show a position bias: the
            # probe did not run (verdict not_run, `battery.not_run`), not "underpowered"
            res.notes.append(f"not run: the judge answered all {one} pairs in one order only; "
                             "position needs both orders of a pair")
        if m["n"]:
            res.plot = {
                "kind": "bars", "title": "Per-item outcome over the two orders",
                "xlabel": "", "ylabel": "items",
                "categories": ["first-shown both times", "consistent", "second-shown both times"],
                "series": [{"label": "items", "values": [
                    m["both_first"], m["n"] - m["both_first"] - m["both_second"],
                    m["both_second"]]}],
            }
        res.examples = _examples(ctx, verdicts)
        return res


def _favoured_slot(fr: dict) -> tuple[str, dict]:
    """The threshold check's metric and rate: the rate of the slot the judge favours (the
    first-shown, or the second with 1 - the first's rate and its interval mirrored), so a
    judge always picking the second read 'first-slot rate 0.00 > 0.55, exceeds'."""
    v, ci = fr.get("value"), fr.get("ci95")
    if v is None or v >= 0.5:
        return "first-slot rate", fr
    mirrored = [1 - ci[1], 1 - ci[0]] if ci and None not in ci else ci
    return "second-slot rate", {**fr, "value": 1 - v, "ci95": mirrored}


def _examples(ctx: AuditContext, verdicts) -> list[dict]:
    out = []
    for it, v in zip(ctx.items, verdicts, strict=True):
        if v.consistent is False and all(o.valid for o in v.orders):
            a, b = v.orders
            out.append({
                "item_id": it.id, "prompt": it.prompt,
                "before": {"response_1": it.response_1, "response_2": it.response_2,
                           "verdict": f"order {a.order}: {a.winner}"},
                "after": {"response_1": it.response_1, "response_2": it.response_2,
                          "verdict": f"order {b.order}: {b.winner}"},
                "changed": "order",
            })
        if len(out) >= 3:
            break
    return out
