"""Pointwise rubric scoring (1-5, optional reference answer), parsed strictly like verdicts.

A `PromptVariant` changes how the scoring prompt presents the scale (rubric order, score ids,
a reference answer labelled with a score, and the task-description sentences that must agree
with them) while the instance (instruction + response) stays the same; scores are always
mapped back to 1..5 by id, whatever the ids and their display order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from judgeaudit.data.schema import PointwiseItem
from judgeaudit.judges.parse import (
    RAW_KEEP,
    call_failure,
    map_checked,
    mark_if_invalid,
    parse_score,
    score_off_scale,
)
from judgeaudit.judges.templates import Template, check_template, load_template
from judgeaudit.llm import CallFailed, Client, Message, Request, Response
from judgeaudit.llm.base import limit_sent, no_verdict_why, stopped_at_limit

DEFAULT_RUBRIC = "Is the response correct, helpful and faithful to the instruction?"
DEFAULT_LEVELS = {
    "1": "Wrong or irrelevant.",
    "2": "Mostly wrong, with some relevant content.",
    "3": "Partly correct or incomplete.",
    "4": "Correct but missing some detail or explanation.",
    "5": "Correct, complete and clear.",
}


ARABIC_IDS = ("1", "2", "3", "4", "5")


@dataclass(frozen=True)
class PromptVariant:
    """The prompt pieces a scoring-prompt perturbation sets for one item.

    `score_ids[k-1]` is the id of score k (whatever the display order); `order` lists the
    scores in the order the rubric shows them. `reference` is shown only when given here (the
    item's own reference is not used implicitly), labelled with `reference_score` if set.
    `scale_note` and `answer_instruction` are the task-description sentences (T) that
    describe the scale; templates that have `{scale_note}` / `{answer_instruction}` fields
    show them, others ignore them."""

    name: str = "baseline"
    order: tuple[int, ...] = (1, 2, 3, 4, 5)
    order_kind: str = "ascending"       # ascending | descending | random
    score_ids: tuple[str, ...] = ARABIC_IDS
    reference: str | None = None
    reference_score: int | None = None
    scale_note: str = ""
    answer_instruction: str = ""

    def __post_init__(self) -> None:
        k = len(self.score_ids)
        if k < 2 or len(set(self.score_ids)) != k:
            raise ValueError(f"variant {self.name!r}: score ids must be distinct, got "
                             f"{list(self.score_ids)}")
        if sorted(self.order) != list(range(1, k + 1)):
            raise ValueError(f"variant {self.name!r}: order must be a permutation of 1..{k}, "
                             f"got {list(self.order)}")
        if self.reference_score is not None and not 1 <= self.reference_score <= k:
            raise ValueError(f"variant {self.name!r}: reference_score must be 1..{k}")


@dataclass
class ScoreVerdict:
    item_id: str
    raw: str
    score: float | None               # 1..K (decimals where the judge averages), None = invalid
    probs: dict[str, float] | None = None
    error: str | None = None
    failed: str | None = None         # "not_sent" / "call_failed" (`parse.call_failure`)
    cut: bool = False                 # no score, and cut at the token limit (`error` says so)

    @property
    def expected(self) -> float | None:
        """Probability-weighted score where the provider gives probabilities (probs are keyed
        by id in score order 1..K)."""
        if not self.probs:
            return None
        return sum(float(k) * p for k, p in enumerate(self.probs.values(), start=1))

    def as_dict(self) -> dict:
        return asdict(self)


class RubricJudge:
    def __init__(
        self,
        client: Client,
        template: Template | str = "pointwise_v1",
        *,
        score_ids: tuple[str, ...] = ("1", "2", "3", "4", "5"),
    ):
        self.client = client
        self.template = load_template(template) if isinstance(template, str) else template
        check_template(self.template, "pointwise", scale=len(score_ids))  # before any call
        self.score_ids = score_ids

    def request(self, item: PointwiseItem, repeat: int = 0,
                variant: PromptVariant | None = None) -> Request:
        """The scoring request for `item`; with a `variant`, its order, ids, reference and
        scale sentences (the variant's ids become `choices`, so logit providers score them)."""
        if variant is None:
            return self._plain_request(item, repeat)
        levels = item.rubric_levels or DEFAULT_LEVELS
        ids = variant.score_ids
        level_text = "\n".join(f"{ids[k - 1]}: {levels.get(str(k), '')}" for k in variant.order)
        ref = ""
        if variant.reference is not None:
            label = (f" (this answer would receive a score of {ids[variant.reference_score - 1]})"
                     if variant.reference_score is not None else "")
            ref = f"\nReference answer{label}:\n{variant.reference}\n"
        user = self.template.render_user(
            prompt=item.prompt, response=item.response, reference_block=ref,
            rubric=item.rubric or DEFAULT_RUBRIC, levels=level_text,
            scale_note=variant.scale_note, answer_instruction=variant.answer_instruction,
        )
        return Request(
            messages=(Message("system", self.template.system), Message("user", user)),
            prefill=self.template.prefill,
            choices=ids,
            max_tokens=8,
            meta={"task": "pointwise", "item_id": item.id, "prompt": item.prompt,
                  "response": item.response, "quality": item.quality,
                  "score_ids": list(ids), "reference": variant.reference,
                  "reference_score": variant.reference_score, "variant": variant.name,
                  "rubric_order": variant.order_kind, "rubric_shown": list(variant.order)},
            repeat=repeat,
        )

    def _plain_request(self, item: PointwiseItem, repeat: int) -> Request:
        levels = item.rubric_levels or DEFAULT_LEVELS
        level_text = "\n".join(f"{sid}: {levels.get(str(k), '')}"
                               for k, sid in enumerate(self.score_ids, start=1))
        ref = f"\nReference answer:\n{item.reference}\n" if item.reference else ""
        user = self.template.render_user(
            prompt=item.prompt, response=item.response, reference_block=ref,
            rubric=item.rubric or DEFAULT_RUBRIC, levels=level_text,
            scale_note="", answer_instruction="",
        )
        return Request(
            messages=(Message("system", self.template.system), Message("user", user)),
            prefill=self.template.prefill,
            choices=self.score_ids,
            max_tokens=8,
            meta={"task": "pointwise", "item_id": item.id, "prompt": item.prompt,
                  "response": item.response, "quality": item.quality,
                  "score_ids": list(self.score_ids), "reference": item.reference,
                  "reference_score": None},
            repeat=repeat,
        )

    def read(self, item_id: str, out: Response | CallFailed,
             score_ids: tuple[str, ...] | None = None,
             max_tokens: int | None = None) -> ScoreVerdict:
        """Map the answer back to 1..K by id (`score_ids`, default the judge's own): the most
        probable id where the provider gives probabilities, else the strictly parsed text. A
        cut (`max_tokens`: the limit sent) or empty answer with no score says so in `error`."""
        ids = score_ids or self.score_ids
        if isinstance(out, CallFailed):
            return ScoreVerdict(item_id, "", None, error=str(out), failed=call_failure(out))
        if out.invalid:  # e.g. over the response size cap: no score, whatever it says
            cut = stopped_at_limit(out)
            why = no_verdict_why(out, max_tokens) if cut else None
            return ScoreVerdict(item_id, out.text[:RAW_KEEP], None,
                                error=f"{why}: {out.invalid}" if why else out.invalid, cut=cut)
        if out.probs and all(s in out.probs for s in ids):
            best = max(ids, key=lambda s: out.probs[s])  # type: ignore[index]
            probs = {s: float(out.probs[s]) for s in ids}
            return ScoreVerdict(item_id, out.text, ids.index(best) + 1, probs)
        score = parse_score(out.text, ids)
        if score is None:  # a cut or empty answer says so (`no_verdict_why`)
            return ScoreVerdict(item_id, out.text, None, error=no_verdict_why(out, max_tokens),
                                cut=stopped_at_limit(out))
        return ScoreVerdict(item_id, out.text, score)

    async def score(
        self,
        items: Sequence[PointwiseItem],
        *,
        repeat: int = 0,
        on_done: Callable[[], None] | None = None,
    ) -> list[ScoreVerdict]:
        reqs = [self.request(it, repeat) for it in items]
        return await map_checked(self.client, reqs,
                                 lambda k, out: self.check(reqs[k], items[k].id, out), on_done)

    def check(self, request: Request, item_id: str, out: Response | CallFailed,
              score_ids: tuple[str, ...] | None = None) -> ScoreVerdict:
        """`read`, marking an answer that gives no score as invalid in the client's cache."""
        verdict = self.read(item_id, out, score_ids,
                            limit_sent(getattr(self.client, "provider", None), request))
        why = (score_off_scale(out.text, score_ids or self.score_ids)
               if verdict.score is None and isinstance(out, Response) and not out.invalid
               else None)
        # a user's template: say which one reads 1..K, where the score is off that scale
        # (not for two scores that disagree: the scale is not at fault there)
        if why and self.template.source and "not on the scale" in why:
            why += f" (the scale of template {self.template.source!r})"
        mark_if_invalid(self.client, request, out, verdict.score is not None, why)
        return verdict

    async def score_variants(
        self,
        jobs: Sequence[tuple[PointwiseItem, PromptVariant | None, int]],
        *,
        on_done: Callable[[], None] | None = None,
    ) -> list[ScoreVerdict]:
        """Score (item, variant, repeat) jobs in the given order, in one client map (keep the
        jobs of one item together: local models then reuse the shared prompt prefix)."""
        reqs = [self.request(it, rep, var) for it, var, rep in jobs]

        def check(k: int, out: Response | CallFailed) -> ScoreVerdict:
            it, var, _ = jobs[k]
            return self.check(reqs[k], it.id, out, var.score_ids if var else None)

        return await map_checked(self.client, reqs, check, on_done)
