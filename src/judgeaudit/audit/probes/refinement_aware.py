"""Refinement-aware (CALM, pointwise): the same answer is scored as is and when introduced as
a refinement of an earlier answer. ErrorRate_RA = |1 - score(as is) / score(told refined)|."""

from __future__ import annotations

import numpy as np

from judgeaudit.audit.length_control import control_rates, pad, words_summary
from judgeaudit.audit.paired import paired_difference
from judgeaudit.audit.probe import (
    AuditContext,
    Probe,
    ProbeResult,
    drop,
    drop_invalid,
    register_probe,
)
from judgeaudit.audit.shift_probe import left_out_notes
from judgeaudit.data.schema import PointwiseItem
from judgeaudit.llm.features import word_count
from judgeaudit.perturb import perturb_pointwise
from judgeaudit.stats import bootstrap_ci
from judgeaudit.stats.types import Estimate


@register_probe
class RefinementAwareProbe(Probe):
    name = "refinement_aware"
    title = "Refinement-aware (pointwise)"
    description = ("Each better answer is scored 1-5 as is, and again introduced as a refined "
                   "version of an earlier answer; a fair judge gives the same score.")
    metric = "score when told it is a refinement - score as is (score points)"
    direction = "positive = the judge rewards the claim of refinement"
    no_bias_range = (-0.25, 0.25)
    default = False

    async def run(self, ctx: AuditContext) -> ProbeResult:
        items = [PointwiseItem(id=f"{it.id}~better", prompt=it.prompt,
                               response=it.response_1 if it.label == 1 else it.response_2,
                               quality=1.0, metadata=dict(it.metadata)) for it in ctx.items]
        framed = perturb_pointwise(items, "refinement", seed=ctx.seed)
        kept = [(it, r.item) for it, r in zip(items, framed, strict=True) if r.preserved]
        kept_src = [src for src, r in zip(ctx.items, framed, strict=True) if r.preserved]
        batch = [a for a, _ in kept] + [b for _, b in kept]
        scores = await ctx.bundle.rubric.score(batch, on_done=ctx.progress(len(batch)))
        n = len(kept)
        plain = [None if s.score is None else float(s.score) for s in scores[:n]]
        told = [None if s.score is None else float(s.score) for s in scores[n:]]
        span = float(len(ctx.bundle.rubric.score_ids) - 1)  # scores are 1..K
        d = paired_difference(plain, told, seed=ctx.seed, alpha=ctx.alpha, span=span)
        res = ProbeResult.from_stats(d, [it.id for it in kept_src],
                                     n_invalid=sum(s.score is None for s in scores),
                                     n_dropped=len(items) - n)
        drop(res, "perturbation_not_applicable",
             [src.id for src, r in zip(ctx.items, framed, strict=True) if not r.preserved])
        drop_invalid(res, [(kept_src[i].id, (scores[i], scores[n + i])) for i in d["invalid"]])
        res.notes.extend(left_out_notes(framed))  # why; all of them: not run
        await self._length(ctx, kept, plain, told, span, res)
        pairs = np.array([(a, b) for a, b in zip(plain, told, strict=True)
                          if a is not None and b is not None])
        if len(pairs) == 1:  # a bootstrap needs 2 items: say so, do not crash the run
            res.notes.append("ErrorRate_RA not computed: n=1 scored pair (a bootstrap interval "
                             "needs at least 2)")
        elif len(pairs):
            def er(x: np.ndarray) -> float:
                return float(abs(1 - x[:, 0].mean() / x[:, 1].mean()))

            lo, hi = bootstrap_ci(pairs, er, seed=ctx.seed)
            res.rates["error_rate_ra"] = Estimate(er(pairs), (lo, hi), len(pairs),
                                                  method="bootstrap-percentile").as_dict()
        return res

    async def _length(self, ctx: AuditContext, kept: list, plain: list, told: list,
                      span: float, res: ProbeResult) -> None:
        """The refinement line adds words: record how many, and under --length-control
        score each answer padded by as many neutral words instead (`audit.length_control`)."""
        added = [word_count(b.response) - word_count(a.response) for a, b in kept]
        words = words_summary(added)
        if words is None:
            return
        res.rates["words_added"] = words
        if not ctx.length_control or words["max"] <= 0:
            return
        padded = [a.model_copy(update={"id": f"{a.id}~length_control~{self.name}",
                                       "response": pad(a.response, k, f"{ctx.seed}|{a.id}")})
                  if k > 0 else a for (a, _), k in zip(kept, added, strict=True)]
        scores = await ctx.bundle.rubric.score(padded, on_done=ctx.progress(len(padded)))
        control = [None if s.score is None else float(s.score) for s in scores]
        own = paired_difference(plain, control, seed=ctx.seed, alpha=ctx.alpha, span=span)
        beyond = paired_difference(control, told, seed=ctx.seed, alpha=ctx.alpha, span=span)
        res.rates["length_control"], line = control_rates(own, beyond, added, "score")
        res.notes.append(line)
