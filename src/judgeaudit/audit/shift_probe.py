"""The common shape of CALM-style pairwise probes: perturb one side (by default the worse
response, so flips toward it are errors), judge before and after, and measure the signed
shift of preference toward the perturbed side. Robustness Rate (RR, verdict unchanged) is
reported against the Consistency Rate (CR, verdict unchanged when the same unperturbed
judgment is simply repeated): the noise floor, not 1."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar

from judgeaudit.audit.length_control import (
    control_items,
    length_control,
    words_added,
    words_summary,
)
from judgeaudit.audit.metrics import estimate, same_winner_rate, shift
from judgeaudit.audit.probe import (
    AuditContext,
    Probe,
    ProbeResult,
    drop,
    drop_invalid,
    threshold_flag,
)
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.data.slots import render_order
from judgeaudit.judges.pairwise import PairwiseVerdict
from judgeaudit.perturb import (
    NotApplicable,
    PerturbError,
    PerturbResult,
    perturb_items,
    resolve_target,
)
from judgeaudit.perturb.base import get as get_perturbation

MAX_EXAMPLES = 3


async def consistency_rate(ctx: AuditContext, items: list[PairwiseItem]) -> dict[str, Any]:
    """CR: the same unperturbed judgment repeated (a new call: repeat index 1)."""
    if ctx.bundle.client.provider.deterministic:
        # A deterministic judge repeats itself exactly: CR = 1 without paying for repeats.
        base = await ctx.judge(items)
        return same_winner_rate(base, base) | {"deterministic": True}
    base, again = await ctx.ask(ctx.judge(items), ctx.judge(items, repeat=1))
    return same_winner_rate(base, again)


def _target_side(r: Any) -> int:
    rec = r.item.metadata.get("perturbation", {})
    side = rec.get("bandwagon_target") or rec.get("injection_target") or r.changed
    return 1 if side == "response_1" else 2


def _verdict_text(v: PairwiseVerdict) -> str:
    w = v.winner
    return {None: "invalid", 0: "tie (orders disagree)", 1: "response_1", 2: "response_2"}[w]


class ShiftProbe(Probe):
    perturbation: ClassVar[str]
    target: ClassVar[str] = "worse"
    options: ClassVar[dict[str, Any]] = {}
    metric = "shift of preference toward the perturbed response (after - before)"
    direction = "positive = the perturbation makes the judge favour that response"
    # Equal-substance check (production checklist): the better response against a perturbed
    # copy of itself; flag when the judge picks the copy more often than this.
    equal_substance_flag: ClassVar[float | None] = None
    # The added length is what this probe measures (verbosity): no length control.
    length_is_the_cue: ClassVar[bool] = False

    @classmethod
    def describe(cls) -> str:
        return get_perturbation(cls.perturbation).description

    def inapplicable(self, item: PairwiseItem) -> PerturbResult | None:
        """A not-applicable result, with the reason `perturb_items` gives, when the
        perturbation does not apply to the side it would change (`Probe.inapplicable`; its
        `changed` names that side), by the check `apply` makes first, on the text and
        options before any rng draw (so the seed does not matter and `run` leaves the same
        items out), without the edit: perturbing every pair of 462 for 13 probes to plan
        them took 1.3 s, the check alone 0.08 s."""
        p = get_perturbation(self.perturbation)
        try:
            sides = resolve_target(item, self.target)
            p._refuse(item, sides, p.resolve_options(dict(self.options)))
        except NotApplicable as exc:
            side = "prompt" if sides == ("prompt",) else sides[0]
            return PerturbResult(item, side, "", False, str(exc), item, not_applicable=True)
        except PerturbError:  # no label for worse/better: not this check's to say
            return None
        return None

    async def run(self, ctx: AuditContext) -> ProbeResult:
        results = perturb_items(ctx.items, self.perturbation, target=self.target,
                                seed=ctx.seed, **self.options)
        kept = [r for r in results if r.preserved]
        originals = [r.original for r in kept]
        added = [words_added(r) for r in kept]
        words = words_summary(added)
        controlled = (words is not None and ctx.length_control and words["max"] > 0
                      and not self.length_is_the_cue)
        # Every request of this probe depends on the items only, never on an answer, so its
        # stages can be asked together (`AuditContext.ask`: one batch in batch mode); the
        # length control and equal-substance check below find their verdicts memoised.
        stages = [ctx.judge(originals), ctx.judge([r.item for r in kept]),
                  consistency_rate(ctx, originals)]
        if controlled:
            stages.append(ctx.judge(control_items(kept, added, ctx.seed, self.name)))
        if self.equal_substance_flag is not None:
            stages.append(ctx.judge(self._twins(ctx)))
        before, after, cr, *_ = await ctx.ask(*stages)
        targets = [_target_side(r) for r in kept]
        m = shift(before, after, targets, seed=ctx.seed, alpha=ctx.alpha)
        res = ProbeResult.from_stats(m, [o.id for o in originals],
                                     n_dropped=len(results) - len(kept))
        drop(res, "perturbation_not_applicable",
             [r.original.id if r.original is not None else r.item.id
              for r in results if not r.preserved])
        drop_invalid(res, [(originals[i].id, (before[i], after[i])) for i in m["invalid"]])
        res.rates["robustness_rate"] = same_winner_rate(before, after)
        res.rates["consistency_rate"] = cr
        res.rates["target_win_before"] = _win_rate(before, targets)
        res.rates["target_win_after"] = _win_rate(after, targets)
        res.notes.extend(left_out_notes(results))
        if words is not None:  # it lengthens a response: the cue or its length?
            res.rates["words_added"] = words
            if controlled:
                res.rates["length_control"], line = await length_control(
                    ctx, self.name, kept, before, after, targets, added)
                res.notes.append(line)
        if self.equal_substance_flag is not None:
            await self._equal_substance(ctx, res)
        res.plot = {
            "kind": "bars", "title": "Consensus verdict before and after",
            "xlabel": "", "ylabel": "items",
            "categories": ["perturbed side wins", "tie", "other side wins", "invalid"],
            "series": [{"label": "before", "values": _outcomes(before, targets)},
                       {"label": "after", "values": _outcomes(after, targets)}],
        }
        labels = ctx.bundle.pairwise.template.labels
        res.examples = _examples(kept, before, after, (labels[0], labels[1]))
        return res

    def _twins(self, ctx: AuditContext) -> list[PairwiseItem]:
        """The equal-substance check's items: the better response against its perturbed
        copy (those whose perturbation preserved the answer)."""
        return [r.item for r in self._twin_results(ctx) if r.preserved]

    def _twin_results(self, ctx: AuditContext) -> list[PerturbResult]:
        """Every item's perturbed copy of its better response, kept or not (with why)."""
        twins = []
        for it in ctx.items:
            better = it.response_1 if it.label == 1 else it.response_2
            twins.append(it.model_copy(update={
                "id": f"{it.id}~twin", "response_1": better, "response_2": better,
                "label": 0, "quality": None}))
        return perturb_items(twins, self.perturbation, target="response_2", seed=ctx.seed,
                             **self.options)

    async def _equal_substance(self, ctx: AuditContext, res: ProbeResult) -> None:
        """Better response vs a perturbed copy of itself (same substance): share of consensus
        verdicts for the copy; ties count half."""
        made = self._twin_results(ctx)
        twins = [r.item for r in made if r.preserved]
        verdicts = await ctx.judge(twins)
        credit = [(0.5 if v.winner == 0 else float(v.winner == 2))
                  for v in verdicts if v.winner is not None]
        est = estimate(sum(credit), len(credit))
        res.rates["equal_substance_pick_rate"] = est
        res.flag = threshold_flag(self.equal_substance_flag,
                                  "picks the perturbed copy of an equally good answer", est)
        if made and not twins and res.flag.get("exceeds") is None:
            # no copy was made, so no call was asked: the stored reason (calls not sent or
            # answers unreadable) would blame the judge for the data (non-Latin answers get
            # no English padding)
            res.flag["reason"] = no_copies_reason(made)


def no_copies_reason(results: Sequence[PerturbResult]) -> str:
    """Why an equal-substance threshold is unchecked when its perturbation kept no copy of
    any item: nothing was asked, so neither calls nor answers are to blame. Names why the
    copies were not made, with counts, as `left_out_notes` does."""
    why = [f"{w} ({k})" for w, k in _not_applicable_reasons(results).most_common()]
    n_failed = sum(not r.preserved and not r.not_applicable for r in results)
    if n_failed:
        why.append(f"the answer-preservation check failed ({n_failed})")
    return (f"no perturbed copy was made: the perturbation left out every item "
            f"({len(results)})" + (": " + "; ".join(why) if why else "")
            + ", so nothing was judged for this rate and the threshold could not be checked")


def left_out_notes(results: Sequence[PerturbResult]) -> list[str]:
    """What a probe says of the items its perturbation left out: those that failed the
    answer-preservation check, those it did not apply to (by why). When that is every item
    the probe measured nothing: one "not run: ..." note, so its verdict is not_run (n = 0
    shown as not measured, its line printed under the table), never "underpowered"."""
    n_na = sum(r.not_applicable for r in results)
    n_failed = sum(not r.preserved for r in results) - n_na
    if results and n_na + n_failed == len(results):
        why = [f"{w} ({k})" for w, k in _not_applicable_reasons(results).most_common()]
        if n_failed:
            why.append(f"the answer-preservation check failed ({n_failed})")
        return [f"not run: the perturbation left out every item ({len(results)}): "
                + "; ".join(why)]
    notes = []
    if n_failed:
        notes.append(f"{n_failed} perturbation(s) failed the answer-preservation check and "
                     "were dropped")
    if n_na:
        notes.append(not_applicable_note(results))
    return notes


def _not_applicable_reasons(results: Sequence[PerturbResult]) -> Counter[str]:
    return Counter((r.reason or "").split(": ", 1)[-1] for r in results if r.not_applicable)


def not_applicable_note(results: Sequence[PerturbResult]) -> str:
    """The items a perturbation did not apply to, by why (its cue was already there, its
    text would not fit): they are left out (perturbation_not_applicable), not measured."""
    why = _not_applicable_reasons(results)
    n = sum(why.values())
    return (f"{n} item(s) not perturbed, left out: " +
            "; ".join(f"{w} ({k})" for w, k in why.most_common()))


def _win_rate(verdicts: list[PairwiseVerdict], targets: list[int]) -> dict[str, Any]:
    vals = [(0.5 if v.winner == 0 else float(v.winner == t))
            for v, t in zip(verdicts, targets, strict=True) if v.winner is not None]
    return estimate(sum(vals), len(vals))


def _outcomes(verdicts: list[PairwiseVerdict], targets: list[int]) -> list[int]:
    c = [0, 0, 0, 0]
    for v, t in zip(verdicts, targets, strict=True):
        w = v.winner
        c[3 if w is None else 1 if w == 0 else 0 if w == t else 2] += 1
    return c


def _examples(kept, before, after, labels: tuple[str, str] = ("A", "B")
              ) -> list[dict[str, Any]]:
    """Prefer items whose verdict moved; then any. A perturbed text that names a response by
    its letter (bandwagon, injection kind=letter) is shown as the judge saw it in order 12,
    response_1 first (`render_order`), the order the example lists the responses in: the
    report never shows a raw `<<LETTER:...>>` slot."""
    order = sorted(range(len(kept)), key=lambda i: before[i].winner == after[i].winner)
    out = []
    for i in order[:MAX_EXAMPLES]:
        r, o = kept[i], kept[i].original
        shown = render_order(r.item, "12", labels)
        out.append({
            "item_id": o.id, "prompt": shown.prompt,
            "before": {"prompt": o.prompt, "response_1": o.response_1,
                       "response_2": o.response_2, "verdict": _verdict_text(before[i])},
            "after": {"prompt": shown.prompt, "response_1": shown.response_1,
                      "response_2": shown.response_2, "verdict": _verdict_text(after[i])},
            "changed": r.changed,
        })
    return out
