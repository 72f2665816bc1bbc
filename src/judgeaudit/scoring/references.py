"""Reference answers at each score level, by generation and review.

For Ref-k (k = 1..4; the dataset's own reference is the 5) a generator model writes a
response to the item's instruction that matches the rubric's description for score k; a
reviewer model then scores that response with the baseline rubric prompt. `review="score"`
accepts the candidate when the reviewer's score is within `tolerance` of k (default: exactly
k). `review="order"` is for reviewers whose absolute scores are uninformative (small judges
that give every text the same score): it compares the reviewer's scores (probability-weighted
where the provider gives probabilities) of the candidates for every level of the item and of
the dataset's score-5 reference, and accepts Ref-k when it is ordered strictly right against
every other level (below every higher level, above every lower one): from all candidates
reviewed so far it keeps the longest chain that is ordered right, and retries the levels
missing from it and their neighbours. Rejected candidates are retried (attempt 0 greedy,
later attempts sampled) up to `max_attempts`; items that never pass are recorded as failures
with every attempt's review, never silently used.

A Ref-k answers the item's question, not its response, so items of one question (the same
score-5 reference and rubric; MT-Bench has four responses per question) share one set.
Any two judge specs can take the two roles (the same model may do both). Every call goes
through `judgeaudit.llm.Client`, so a re-run is served from the cache.

`sibling_references` serves data that already has responses at every level
(`builtin:graded`: one question answered at five quality levels).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from judgeaudit.data.schema import PointwiseItem
from judgeaudit.judges.pointwise import DEFAULT_LEVELS, DEFAULT_RUBRIC, RubricJudge
from judgeaudit.llm import CallFailed, Client, Message, Request
from judgeaudit.llm.plan import is_planned
from judgeaudit.perturb.rewrite import strip_wrapper
from judgeaudit.scoring.perturbations import builtin

GEN_SYSTEM = (
    "You write example responses used to calibrate graders. You write a response of exactly "
    "the quality level you are asked for: when asked for a weak response you make exactly the "
    "kind of mistakes the level describes. Output only the response, with no preface, no "
    "label and no comments about its quality."
)


@dataclass
class Attempt:
    attempt: int
    text: str
    review_score: int | None
    review_raw: str
    error: str | None = None
    # The reviewer's probability-weighted score where it gives probabilities, else its score.
    review_value: float | None = None


@dataclass
class ReferenceResult:
    item_id: str
    score: int
    accepted: bool
    text: str | None
    attempts: list[Attempt] = field(default_factory=list)
    failure: str | None = None
    chosen_attempt: int | None = None  # which attempt's text was accepted
    # Every item asking the same question under the same rubric and reference (item_id
    # first): a Ref-k answers the question, so one is generated for all of them.
    shared_by: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def generation_request(item: PointwiseItem, k: int, attempt: int, *, max_tokens: int,
                       temperature: float, words: int) -> Request:
    levels = item.rubric_levels or DEFAULT_LEVELS
    scale = "\n".join(f"Score {s}: {levels.get(str(s), '')}" for s in range(1, 6))
    parts = [f"Instruction:\n{item.prompt}", f"Rubric: {item.rubric or DEFAULT_RUBRIC}\n{scale}"]
    if item.reference:
        parts.append(f"A response that deserves score 5 (for comparison):\n{item.reference}")
    parts.append(
        f"Write a response to the instruction that deserves a score of {k} exactly, not "
        f"higher and not lower. Score {k} means: {levels.get(str(k), '')}\n"
        f"Use at most about {words} words. Output only the response.")
    return Request(
        messages=(Message("system", GEN_SYSTEM), Message("user", "\n\n".join(parts))),
        max_tokens=max_tokens, temperature=0.0 if attempt == 0 else temperature,
        meta={"task": "generate", "purpose": "reference", "item_id": item.id, "score": k,
              "attempt": attempt},
        repeat=attempt,
    )


class ReferencePipeline:
    """Generate Ref-k candidates with `generator`, accept those `reviewer` scores as k."""

    def __init__(self, generator: Client, reviewer: Client, *, max_attempts: int = 3,
                 tolerance: int = 0, max_tokens: int = 160, temperature: float = 0.8,
                 words: int = 100, review_template: str = "pointwise_scoring_v1",
                 review: str = "score"):
        if review not in ("score", "order"):
            raise ValueError(f"review must be 'score' or 'order', got {review!r}")
        self.review = review
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        if tolerance < 0:
            raise ValueError(f"tolerance must be >= 0, got {tolerance}")
        self.generator, self.reviewer = generator, reviewer
        self.max_attempts, self.tolerance = max_attempts, tolerance
        self.max_tokens, self.temperature, self.words = max_tokens, temperature, words
        self.review_judge = RubricJudge(reviewer, review_template)
        self._baseline = builtin()["baseline"]

    async def run(self, items: Sequence[PointwiseItem], scores: Sequence[int] = (1, 2, 3, 4),
                  on_done: Callable[[], None] | None = None) -> list[ReferenceResult]:
        bad = [k for k in scores if not 1 <= k <= 5]
        if bad:
            raise ValueError(f"reference scores must be 1..5, got {bad}")
        groups: dict[str, list[PointwiseItem]] = {}
        for it in items:
            groups.setdefault(question_key(it), []).append(it)
        items = [g[0] for g in groups.values()]
        results = {(g[0].id, k): ReferenceResult(g[0].id, k, False, None,
                                                 shared_by=[x.id for x in g])
                   for g in groups.values() for k in scores}
        pending = [(it, k) for it in items for k in scores]
        for attempt in range(self.max_attempts):
            if not pending:
                break
            reqs = [generation_request(it, k, attempt, max_tokens=self.max_tokens,
                                       temperature=self.temperature, words=self.words)
                    for it, k in pending]
            outs = await self.generator.map(
                reqs, on_done=(lambda _i, _r: on_done()) if on_done else None)
            if any(is_planned(o) for o in outs):
                # --plan-only: these generations are this stage's plan; their review and
                # any retry depend on the answers, so they belong to a later stage.
                break
            texts: list[str | None] = []
            for (it, k), out in zip(pending, outs, strict=True):
                if isinstance(out, CallFailed):
                    results[(it.id, k)].attempts.append(
                        Attempt(attempt, "", None, "", error=f"generation failed: {out}"))
                    texts.append(None)
                    continue
                text = strip_wrapper(out.text, "")
                texts.append(text if text.strip() else None)
                if not text.strip():
                    results[(it.id, k)].attempts.append(
                        Attempt(attempt, out.text, None, "", error="empty generation"))
            jobs = [(it.model_copy(update={"response": t}), self._baseline.variant_for(it), 0)
                    for (it, _k), t in zip(pending, texts, strict=True) if t is not None]
            if self.review == "order":  # the score-5 references, as fixed anchors
                jobs += [(it.model_copy(update={"response": it.reference}),
                          self._baseline.variant_for(it), 0)
                         for it in {i.id: i for i, _ in pending}.values() if it.reference]
            verdicts = iter(await self.review_judge.score_variants(jobs, on_done=on_done))
            still: list[tuple[PointwiseItem, int]] = []
            for (it, k), t in zip(pending, texts, strict=True):
                res = results[(it.id, k)]
                if t is None:
                    still.append((it, k))
                    continue
                v = next(verdicts)
                value = v.expected if v.expected is not None else v.score
                res.attempts.append(Attempt(attempt, t, v.score, v.raw, v.error, value))
                if self.review == "score":
                    if v.score is not None and abs(v.score - k) <= self.tolerance:
                        res.accepted, res.text, res.chosen_attempt = True, t, attempt
                    else:
                        still.append((it, k))
            if self.review == "order":
                anchors = {}
                for v in verdicts:
                    anchors[v.item_id] = v.expected if v.expected is not None else v.score
                still = self._order_select(pending, results, anchors, scores)
            pending = still
        if self.review == "order":  # what is not in an item's final chain failed
            pending = [(it, k) for it in items for k in scores
                       if not results[(it.id, k)].accepted]
        for it, k in pending:
            res = results[(it.id, k)]
            seen = ([a.review_score for a in res.attempts] if self.review == "score" else
                    [None if a.review_value is None else round(a.review_value, 3)
                     for a in res.attempts])
            if self.review == "order":
                res.failure = (f"not accepted after {len(res.attempts)} attempt(s): reviewer "
                               f"values {seen} never ordered right against the other levels")
                continue
            res.failure = (f"not accepted after {len(res.attempts)} attempt(s); reviewer "
                           f"scores {seen} (wanted {k}"
                           + (f" +- {self.tolerance})" if self.tolerance else ")"))
        return list(results.values())

    def _order_select(self, pending, results, anchors, scores):
        """Order review: per item, pick from every candidate reviewed so far (one per level)
        the longest chain the reviewer orders strictly right (`best_chain`), with the score-5
        reference as a fixed top; its levels are accepted with those texts. What to retry:
        each level missing from the chain and the levels beside it (a new neighbour may open
        the room a missing level needs)."""
        still = []
        for it in {i.id: i for i, _ in pending}.values():
            cands = {k: [(a.attempt, a.review_value) for a in results[(it.id, k)].attempts
                         if a.review_value is not None and a.text.strip()] for k in scores}
            top = anchors.get(it.id) if 5 not in scores else None
            chain = best_chain(cands, None if top is None else float(top))
            for k in scores:
                res = results[(it.id, k)]
                pick = chain.get(k)
                res.accepted = pick is not None
                res.text = (next(a.text for a in res.attempts if a.attempt == pick)
                            if pick is not None else None)
                res.chosen_attempt = pick
            missing = [i for i, k in enumerate(scores) if k not in chain]
            redo = {j for i in missing for j in (i - 1, i, i + 1) if 0 <= j < len(scores)}
            still += [(it, scores[j]) for j in sorted(redo)]
        return still


def best_chain(cands: Mapping[int, Sequence[tuple[int, float]]],
               top: float | None = None) -> dict[int, int]:
    """{level: attempt} choosing at most one (attempt, value) candidate per level so that the
    values rise strictly with the level (and stay below `top`, the score-5 anchor, if given).
    The longest such chain wins, then the one whose closest pair of neighbours (anchor
    included) is furthest apart, then earlier attempts. A chain must compare something: one
    level alone counts only against the anchor."""
    levels = sorted(cands)
    best: tuple[tuple[int, float, int], dict[int, int]] = ((0, 0.0, 0), {})

    def walk(i: int, last: float | None, gap: float, picked: dict[int, int],
             cost: int) -> None:
        nonlocal best
        if i == len(levels):
            if top is not None and last is not None:  # something picked, below the top
                if last >= top:
                    return
                g = min(gap, top - last)
            elif len(picked) < 2:
                return
            else:
                g = gap
            key = (len(picked), g, -cost)
            if key > best[0]:
                best = (key, {k: a for k, (a, _) in picked.items()})
            return
        walk(i + 1, last, gap, picked, cost)  # skip this level
        for att, v in cands[levels[i]]:
            if last is None or v > last:
                walk(i + 1, v, gap if last is None else min(gap, v - last),
                     {**picked, levels[i]: (att, v)}, cost + att)

    walk(0, None, float("inf"), {}, 0)
    return best[1]


def question_key(item: PointwiseItem) -> str:
    """What a Ref-k belongs to: the question, not the response under evaluation. Where the
    data gives a score-5 reference, items with the same reference and rubric are one
    question (so the data set itself treats them: MT-Bench's second turns embed each model's
    own first answer in the instruction, yet its four responses to a question share one
    reference); without a reference, the instruction and rubric."""
    what = item.reference if item.reference else item.prompt
    blob = json.dumps([bool(item.reference), what, item.rubric, item.rubric_levels],
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def summarize(results: Sequence[ReferenceResult]) -> dict[str, Any]:
    """Acceptance overall and per score (counted per question: one generation serves every
    item asking it), the attempts it took, and how many items get every level."""
    def block(rs: Sequence[ReferenceResult]) -> dict[str, Any]:
        n = len(rs)
        acc = sum(r.accepted for r in rs)
        tried = sum(len(r.attempts) for r in rs)
        return {"n": n, "accepted": acc, "acceptance_rate": acc / n if n else None,
                "attempts": tried,
                "first_try": sum(1 for r in rs if r.accepted and (
                    r.chosen_attempt == 0 if r.chosen_attempt is not None
                    else len(r.attempts) == 1))}
    ks = sorted({r.score for r in results})
    covers = {r.item_id: len(r.shared_by or [r.item_id]) for r in results}
    complete = set(covers) - {r.item_id for r in results if not r.accepted}
    return {**block(results), "by_score": {str(k): block([r for r in results if r.score == k])
                                           for k in ks},
            "questions_with_all": len(complete),
            "items_with_all": sum(covers[q] for q in complete)}


def as_references(results: Sequence[ReferenceResult]) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = {}
    for r in results:
        if r.accepted and r.text:
            for item_id in r.shared_by or [r.item_id]:
                out.setdefault(item_id, {})[r.score] = r.text
    return out


def write_references(path: str | Path, results: Sequence[ReferenceResult],
                     info: Mapping[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {**info, "summary": summarize(results),
           "references": {i: {str(k): t for k, t in d.items()}
                          for i, d in as_references(results).items()},
           "results": [r.as_dict() for r in results]}
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_references(path: str | Path) -> dict[str, dict[int, str]]:
    """{item_id: {k: text}} from a references.json (ours) or a plain {id: {k: text}} file."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON (line {exc.lineno}): {exc.msg}") from None
    refs = doc.get("references", doc) if isinstance(doc, dict) else None
    if not isinstance(refs, dict):
        raise ValueError(f"{path}: expected an object {{item_id: {{score: text}}}}")
    out: dict[str, dict[int, str]] = {}
    for item_id, by_k in refs.items():
        if not isinstance(by_k, dict):
            raise ValueError(f"{path}: references[{item_id!r}]: expected {{score: text}}")
        for k, text in by_k.items():
            if str(k) not in {"1", "2", "3", "4", "5"} or not isinstance(text, str):
                raise ValueError(f"{path}: references[{item_id!r}][{k!r}]: expected a score "
                                 "1..5 mapped to text")
            out.setdefault(str(item_id), {})[int(k)] = text
    return out


def sibling_references(items: Sequence[PointwiseItem]) -> dict[str, dict[int, str]]:
    """For data holding one question at several known levels (metadata `question_group` and
    `level`, as `builtin:graded`): Ref-k = that question's level-k response."""
    groups: dict[Any, dict[int, str]] = {}
    for it in items:
        g, lv = it.metadata.get("question_group"), it.metadata.get("level")
        if g is not None and lv is not None:
            groups.setdefault(g, {})[int(lv)] = it.response
    return {it.id: dict(groups[it.metadata["question_group"]]) for it in items
            if it.metadata.get("question_group") in groups}


__all__ = ["Attempt", "ReferencePipeline", "ReferenceResult", "as_references", "best_chain",
           "generation_request", "question_key", "read_references", "sibling_references",
           "summarize", "write_references"]
