"""Chain-of-thought (CALM): judge with and without step-by-step reasoning; metric: accuracy
with reasoning minus accuracy without. Needs generation (slow on a CPU model): --full only."""

from __future__ import annotations

from judgeaudit.audit.metrics import estimate
from judgeaudit.audit.paired import credit_of, paired_difference
from judgeaudit.audit.probe import (
    AuditContext,
    Probe,
    ProbeResult,
    drop_invalid,
    register_probe,
)
from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.judges.templates import load_template


@register_probe
class ChainOfThoughtProbe(Probe):
    name = "cot"
    title = "Chain of thought"
    description = ("The judge is asked to reason step by step before its verdict (a "
                   "generation, read from its last line) instead of answering at once.")
    metric = "accuracy with reasoning - accuracy without"
    direction = "positive = reasoning makes the judge more accurate"
    default = False

    async def run(self, ctx: AuditContext) -> ProbeResult:
        pj = PairwiseJudge(ctx.bundle.client, load_template("pairwise_cot_v1"),
                           both_orders=ctx.bundle.pairwise.both_orders, seed=ctx.seed)
        base, cot = await ctx.ask(ctx.baseline(), ctx.judge(ctx.items, judge=pj))
        a = [credit_of(v, it.label) for it, v in zip(ctx.items, base, strict=True)]
        b = [credit_of(v, it.label) for it, v in zip(ctx.items, cot, strict=True)]
        d = paired_difference(a, b, seed=ctx.seed, alpha=ctx.alpha, span=1.0)  # credits
        res = ProbeResult.from_stats(
            d, [it.id for it in ctx.items],
            n_invalid=sum(not o.valid for v in cot for o in v.orders))
        drop_invalid(res, [(ctx.items[i].id, (base[i], cot[i])) for i in d["invalid"]])
        va, vb = [x for x in a if x is not None], [x for x in b if x is not None]
        res.rates["accuracy_without"] = estimate(sum(va), len(va))
        res.rates["accuracy_with_reasoning"] = estimate(sum(vb), len(vb))
        # answers with no verdict line, not calls that failed or were never sent
        no_line = sum(not o.valid and o.failed is None for v in cot for o in v.orders)
        if no_line:
            res.notes.append(f"{no_line} reasoning outputs had no final verdict line")
        return res
