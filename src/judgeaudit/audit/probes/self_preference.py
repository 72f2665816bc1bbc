"""Self-preference and self-enhancement (needs --panel): the judge writes its own answer to
each prompt; it is then compared with the item's better answer by the judge and by the other
judges (production check: flag a gap above 10 points), and scored 1-5 by both
(CALM ErrorRate_SE = |1 - score the judge gives its own answer / score the others give it|)."""

from __future__ import annotations

import numpy as np

from judgeaudit.audit.metrics import estimate
from judgeaudit.audit.paired import paired_stats
from judgeaudit.audit.probe import (
    WRITING,
    AuditContext,
    Probe,
    ProbeResult,
    drop,
    drop_invalid,
    register_probe,
)
from judgeaudit.data.schema import PairwiseItem, PointwiseItem
from judgeaudit.llm import CallFailed, Message, Request
from judgeaudit.stats import bootstrap_ci
from judgeaudit.stats.types import Estimate

FLAG_GAP = 0.10


def _win(v) -> float | None:  # own answer is response_1
    return None if v.winner is None else (0.5 if v.winner == 0 else float(v.winner == 1))


@register_probe
class SelfPreferenceProbe(Probe):
    name = "self_preference"
    title = "Self-preference / self-enhancement"
    description = ("The judge answers each prompt itself; its own answer is compared with the "
                   "item's better answer by the judge and by the other judges of the panel.")
    metric = "judge's win rate for its own answer - the panel's win rate for that answer"
    direction = "positive = the judge favours its own writing"
    no_bias_range = (-FLAG_GAP / 2, FLAG_GAP / 2)
    default = False
    needs_panel = True
    needs_writing = True

    async def run(self, ctx: AuditContext) -> ProbeResult:
        cannot = ctx.bundle.client.provider.cannot_serve(WRITING)
        if not ctx.panel or cannot:
            why = ("needs --panel with at least one other judge" if not ctx.panel else
                   f"the judge cannot write answers of its own: {cannot}")
            return ProbeResult(None, (None, None), 0, None, None, notes=[f"not run: {why}"])
        reqs = [Request(messages=(Message("user", it.prompt),), max_tokens=96,
                        meta={"task": "generate", "item_id": it.id, "purpose": "self-answer"})
                for it in ctx.items]
        outs = await ctx.bundle.client.map(reqs)
        own = [(it, o.text.strip()) for it, o in zip(ctx.items, outs, strict=True)
               if not isinstance(o, CallFailed) and o.text.strip()]
        pairs = [PairwiseItem(id=f"{it.id}~self", prompt=it.prompt, response_1=text,
                              response_2=it.response_1 if it.label == 1 else it.response_2)
                 for it, text in own]
        mine_v = await ctx.judge(pairs)
        others_v = [await ctx.judge(pairs, bundle=b) for b in ctx.panel]
        mine = [_win(v) for v in mine_v]
        others = [[_win(v) for v in vs] for vs in others_v]
        ok = [i for i, (m, *os_) in enumerate(zip(mine, *others, strict=True))
              if m is not None and all(x is not None for x in os_)]
        rows = [(mine[i], float(np.mean([o[i] for o in others]))) for i in ok]
        res = ProbeResult(None, (None, None), len(rows), None, None,
                          n_dropped=len(ctx.items) - len(own))
        got = {it.id for it, _ in own}
        drop(res, "no_own_answer", [it.id for it in ctx.items if it.id not in got])
        drop_invalid(res, [(own[i][0].id, (mine_v[i], *(vs[i] for vs in others_v)))
                           for i in sorted(set(range(len(own))) - set(ok))])
        if rows:
            arr = np.array(rows)
            d = arr[:, 0] - arr[:, 1]
            st = paired_stats(d, seed=ctx.seed, alpha=ctx.alpha, span=1.0)  # wins in [0, 1]
            res.effect, res.ci95, res.p = st["effect"], st["ci95"], st["p"]
            res.mde, res.mde_detail, res.method = st["mde"], st["mde_detail"], st["method"]
            res.span = st["span"]
            res.units = [(own[i][0].id, float(x)) for i, x in zip(ok, d, strict=True)]
            res.rates["own_win_rate_by_judge"] = estimate(arr[:, 0].sum(), len(rows))
            res.rates["own_win_rate_by_panel"] = estimate(arr[:, 1].sum(), len(rows))
            res.flag = {"threshold": FLAG_GAP, "metric": "win-rate gap (judge - panel)",
                        "value": res.effect, "exceeds": res.effect > FLAG_GAP}
        await self._enhancement(ctx, own, res)
        return res

    async def _enhancement(self, ctx: AuditContext, own, res: ProbeResult) -> None:
        items = [PointwiseItem(id=f"{it.id}~self", prompt=it.prompt, response=text)
                 for it, text in own]
        if not items:
            return
        by_judge = [s.score for s in await ctx.bundle.rubric.score(items)]
        by_panel = [[s.score for s in await b.rubric.score(items)] for b in ctx.panel]
        rows = np.array([(a, float(np.mean(o))) for a, *o in zip(by_judge, *by_panel,
                                                                 strict=True)
                         if a is not None and all(x is not None for x in o)], dtype=float)
        if len(rows) == 1:  # a bootstrap needs 2 items: say so, do not crash the run
            res.notes.append("ErrorRate_SE not computed: n=1 scored own answer (a bootstrap "
                             "interval needs at least 2)")
        elif len(rows):
            def err(x: np.ndarray) -> float:
                return float(abs(1 - x[:, 0].mean() / x[:, 1].mean()))

            lo, hi = bootstrap_ci(rows, err, seed=ctx.seed)
            res.rates["error_rate_se"] = Estimate(err(rows), (lo, hi), len(rows),
                                                  method="bootstrap-percentile").as_dict()
