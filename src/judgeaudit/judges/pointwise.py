"""Pointwise rubric scoring (1-5, optional reference answer), parsed strictly like verdicts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from judgeaudit.data.schema import PointwiseItem
from judgeaudit.judges.parse import parse_score
from judgeaudit.judges.templates import Template, load_template
from judgeaudit.llm import CallFailed, Client, Message, Request, Response

DEFAULT_RUBRIC = "Is the response correct, helpful and faithful to the instruction?"
DEFAULT_LEVELS = {
    "1": "Wrong or irrelevant.",
    "2": "Mostly wrong, with some relevant content.",
    "3": "Partly correct or incomplete.",
    "4": "Correct but missing some detail or explanation.",
    "5": "Correct, complete and clear.",
}


@dataclass
class ScoreVerdict:
    item_id: str
    raw: str
    score: int | None                 # 1..5, None = invalid
    probs: dict[str, float] | None = None
    error: str | None = None

    @property
    def expected(self) -> float | None:
        """Probability-weighted score where the provider gives probabilities."""
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
        self.score_ids = score_ids

    def request(self, item: PointwiseItem, repeat: int = 0) -> Request:
        levels = item.rubric_levels or DEFAULT_LEVELS
        level_text = "\n".join(f"{sid}: {levels.get(str(k), '')}"
                               for k, sid in enumerate(self.score_ids, start=1))
        ref = f"\nReference answer:\n{item.reference}\n" if item.reference else ""
        user = self.template.render_user(
            prompt=item.prompt, response=item.response, reference_block=ref,
            rubric=item.rubric or DEFAULT_RUBRIC, levels=level_text,
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

    def read(self, item_id: str, out: Response | CallFailed) -> ScoreVerdict:
        if isinstance(out, CallFailed):
            return ScoreVerdict(item_id, "", None, error=str(out))
        if out.probs and all(s in out.probs for s in self.score_ids):
            best = max(self.score_ids, key=lambda s: out.probs[s])  # type: ignore[index]
            probs = {s: float(out.probs[s]) for s in self.score_ids}
            return ScoreVerdict(item_id, out.text, self.score_ids.index(best) + 1, probs)
        return ScoreVerdict(item_id, out.text, parse_score(out.text, self.score_ids))

    async def score(
        self,
        items: Sequence[PointwiseItem],
        *,
        repeat: int = 0,
        on_done: Callable[[], None] | None = None,
    ) -> list[ScoreVerdict]:
        reqs = [self.request(it, repeat) for it in items]
        outs = await self.client.map(reqs, on_done=(lambda _i, _r: on_done()) if on_done else None)
        return [self.read(it.id, out) for it, out in zip(items, outs, strict=True)]
