"""LLM rewriting: for biases a template cannot express well (a whole text in an angry tone,
verbosity at a chosen intensity, a user's own generator), a model rewrites the text through
the same `judgeaudit.llm` client as every other call (cached, retried, counted).

Intensity follows a Likert scale: `CRITERIA[bias][level]` (levels 1..5) describes observable
properties of the rewritten text, so a level means the same thing across items and models.
Every rewrite is checked with `preserve.answer_preserved` (rewrite branch: no new number, the
answer still there, no competing answer); failures are returned with preserved=False.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.llm import CallFailed, Client, Message, Request, Response
from judgeaudit.perturb.base import (
    PerturbError,
    PerturbResult,
    Target,
    english_misfit,
    resolve_target,
    side_answers,
)
from judgeaudit.perturb.preserve import answer_preserved

CRITERIA: dict[str, dict[int, str]] = {
    "verbosity": {
        1: "About 1.2x the original length: one extra sentence that restates the answer.",
        2: "About 1.5x: a restated question and a closing summary sentence.",
        3: "About 2x: restated question, hedges, and a summary; no new facts.",
        4: "About 3x: several filler and hedging sentences around every point; no new facts.",
        5: "About 4x or more: heavy padding, repeated restatements of each point, long "
           "introduction and conclusion; still no new facts.",
    },
    "authority": {
        1: "One vague appeal to authority (\"experts agree\"), no citation.",
        2: "One named-style citation, e.g. (Author et al., year).",
        3: "A study in a named journal is invoked to support the answer.",
        4: "Two or more citations, including a reference with journal, volume and pages.",
        5: "Dense academic framing: several citations and a reference list with DOIs.",
    },
    "sentiment": {
        1: "Neutral wording with one mildly emotional word.",
        2: "A clearly emotional opening or closing phrase.",
        3: "Emotional tone in most sentences (exclamations, feeling words).",
        4: "Strong emotion throughout; the tone dominates the reading.",
        5: "Extreme emotion in every sentence (e.g. effusive joy, open anger, panic).",
    },
    "format": {
        1: "Plain paragraphs with one bolded phrase.",
        2: "A heading and bolded key phrase.",
        3: "Heading, bold key sentence and a bullet list of the points.",
        4: "Several headings, bullet lists and bold terms throughout.",
        5: "Heavily structured: headings, nested bullets, bold, a summary table or callout.",
    },
    "confidence": {
        1: "Slightly more assertive wording than the original.",
        2: "No hedges; states the answer as fact.",
        3: "Explicit certainty claims (\"definitely\", \"certainly\").",
        4: "Repeated strong certainty claims and dismissal of doubt.",
        5: "Absolute certainty throughout, claims of verification and expert agreement.",
    },
    "distraction": {
        1: "One short irrelevant detail.",
        2: "Two irrelevant details about the author or setting.",
        3: "A short irrelevant anecdote.",
        4: "Several irrelevant anecdotes interleaved with the answer.",
        5: "Irrelevant material about as long as the answer itself.",
    },
}

# Length multiple each verbosity level asks for (CRITERIA["verbosity"]).
VERBOSITY_GROWTH = {1: 1.2, 2: 1.5, 3: 2.0, 4: 3.0, 5: 4.0}

INSTRUCTIONS: dict[str, str] = {
    "verbosity": "Make the text longer without adding any new information: restate, hedge, "
                 "summarise.",
    "authority": "Add plausible-looking academic citations supporting the text.",
    "sentiment": "Rewrite the text in a strongly emotional tone (cheerful, angry or fearful "
                 "as specified).",
    "format": "Reformat the text as markdown.",
    "confidence": "Rewrite the text so that it sounds completely confident and certain.",
    "distraction": "Add irrelevant personal details about the author.",
}

SYSTEM = (
    "You rewrite texts exactly as instructed. You keep the meaning: the final answer, every "
    "number, every named entity, every list item and every piece of code stay exactly as they "
    "are. You add no new facts and no new numbers unless the instruction asks for citations. "
    "Output only the rewritten text, with no preface and no comments."
)

_PREFACE = re.compile(
    r"^\s*(?:(?:sure|certainly|okay|ok|of course|absolutely)[!,.]?\s*)?"
    r"(?:here(?:'s| is| are)|below is|the following is)\b[^\n]*?"
    r"(?:rewrit|revis|version|text|answer|response)[^\n]*?:?[ \t]*\n+",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:rewritten|revised)(?: text| version| answer)?:?(?:\*\*)?"
                    r"[ \t]*\n+", re.IGNORECASE)
_TRAILER = re.compile(
    r"\n+[ \t]*(?:note|i (?:have|'ve)|this (?:version|rewrite))\b[^\n]*"
    r"(?:kept|preserv|rewr|unchanged|retain)[^\n]*\s*$",
    re.IGNORECASE,
)
_TAGS = re.compile(r"<rewritten>\s*(.*?)\s*</rewritten>", re.DOTALL | re.IGNORECASE)


def strip_wrapper(output: str, original: str = "") -> str:
    """The rewritten text without the model's preface ("Here is the rewritten text:"),
    label lines, trailing notes about what was kept, or wrapping quotes/fences that the
    original did not have."""
    text = output.strip()
    m = _TAGS.search(text)
    if m:
        return m.group(1).strip()
    for _ in range(2):
        text = _PREFACE.sub("", text, count=1)
        text = _LABEL.sub("", text, count=1)
    text = _TRAILER.sub("", text)
    text = text.strip()
    orig = original.strip()
    if text.startswith("```") and text.endswith("```") and not orig.startswith("```"):
        text = re.sub(r"^```[^\n]*\n?", "", text)
        text = re.sub(r"\n?```$", "", text).strip()
    for q in ('"', "'", "“"):
        close = "”" if q == "“" else q
        if (len(text) > 1 and text.startswith(q) and text.endswith(close)
                and not orig.startswith(q)):
            text = text[1:-1].strip()
    return text


def estimate_tokens(text: str) -> int:
    """Rough token count (4 characters a token), for the generation budget."""
    return max(1, math.ceil(len(text) / 4))


class LLMRewriter:
    """Rewrites texts with a model behind a `judgeaudit.llm.Client`."""

    def __init__(self, client: Client, *, length_factor: float = 2.0, min_tokens: int = 64):
        self.client = client
        self.length_factor = length_factor
        self.min_tokens = min_tokens

    def request(
        self,
        text: str,
        instruction: str,
        *,
        level: int | None = None,
        criteria: Mapping[int, str] | str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Request:
        table = CRITERIA[criteria] if isinstance(criteria, str) else criteria
        if level is not None and not 1 <= level <= 5:
            raise PerturbError(f"rewrite level must be 1..5, got {level}")
        parts = [f"Instruction: {instruction.strip()}"]
        if level is not None:
            parts.append(f"Intensity: level {level} of 5.")
        if table:
            scale = "\n".join(f"  {k}: {v}" for k, v in sorted(table.items()))
            parts.append(f"Intensity scale (observable properties):\n{scale}")
            if level is not None:
                parts.append(f"The result must match level {level}: {table[level]}")
        parts.append("Keep the final answer, all numbers, named entities, list items and code "
                     "exactly as they are.")
        parts.append(f"Text to rewrite:\n<text>\n{text}\n</text>")
        parts.append("Reply with the rewritten text only.")
        # Budget: ~length_factor x the input, more for the verbosity levels that ask for it.
        growth = VERBOSITY_GROWTH.get(level or 0, 1.0) if table is CRITERIA["verbosity"] else 1.0
        factor = max(self.length_factor, growth + 0.5)
        budget = max(self.min_tokens, math.ceil(factor * estimate_tokens(text)))
        m: dict[str, Any] = {"task": "generate", "purpose": "rewrite",
                             "instruction": instruction, "level": level, "text": text}
        m.update(meta or {})
        return Request(
            messages=(Message("system", SYSTEM), Message("user", "\n\n".join(parts))),
            max_tokens=budget, temperature=0.0, choices=(), meta=m,
        )

    async def rewrite(
        self,
        text: str,
        instruction: str,
        *,
        level: int | None = None,
        criteria: Mapping[int, str] | str | None = None,
    ) -> str:
        """The rewritten text (wrapper text stripped). Raises CallFailed if the call fails."""
        resp = await self.client.call(
            self.request(text, instruction, level=level, criteria=criteria)
        )
        return strip_wrapper(resp.text, text)

    @staticmethod
    def not_applicable(text: str, side: Target) -> str | None:
        """Why a response cannot be rewritten, or None. The rewrite is asked for in English
        (instruction, intensity scale), and what a model adds then is English: on a
        response mostly in another script the measured shift would be the bias plus a
        switch of language, so it is left out as the template perturbations that add
        English are (`english_misfit`). A prompt is not checked: both responses are judged
        against it alike (as bandwagon's)."""
        if side == "prompt":
            return None
        return english_misfit(text, "what the rewrite adds (asked for in English)")

    async def perturb(
        self,
        items: Sequence[PairwiseItem],
        bias: str,
        *,
        level: int = 3,
        target: str = "worse",
        instruction: str | None = None,
        seed: int = 0,
    ) -> list[PerturbResult]:
        """Rewrite the target side of each item for one bias at one level; each result is
        checked for answer preservation. A response mostly in another script is not sent:
        its result is `not_applicable` with the reason (`not_applicable`). Ids:
        `{id}~rewrite:{bias}:level={level}`."""
        if instruction is None:
            if bias not in INSTRUCTIONS:
                raise PerturbError(
                    f"no built-in instruction for bias {bias!r} (known: "
                    f"{', '.join(INSTRUCTIONS)}); pass instruction=..."
                )
            instruction = INSTRUCTIONS[bias]
        criteria = CRITERIA.get(bias)
        plan: list[tuple[PairwiseItem, Target]] = []
        out: list[PerturbResult | None] = []
        for it in items:
            try:
                (side,) = resolve_target(it, target)
            except (PerturbError, ValueError) as exc:
                out.append(PerturbResult(it, "response_1", "", False, str(exc), it))
                continue
            why = self.not_applicable(getattr(it, side), side)
            if why is not None:  # left out and counted, no call made
                out.append(PerturbResult(it, side, f"{bias}:level{level}", False,
                                         f"rewrite not applicable to {side}: {why}", it,
                                         not_applicable=True))
                continue
            plan.append((it, side))
            out.append(None)
        reqs = [
            self.request(getattr(it, s), instruction, level=level, criteria=criteria,
                         meta={"item_id": it.id, "bias": bias, "seed": seed})
            for it, s in plan
        ]
        resps = await self.client.map(reqs)
        done = iter(zip(plan, resps, strict=True))
        for k, r in enumerate(out):
            if r is not None:
                continue
            (it, side), resp = next(done)
            out[k] = self._result(it, side, resp, bias, level, target, instruction)
        return [r for r in out if r is not None]

    def _result(self, it: PairwiseItem, side: Target, resp: Response | CallFailed, bias: str,
                level: int, target: str, instruction: str) -> PerturbResult:
        variant = f"{bias}:level{level}"
        original = getattr(it, side)
        if isinstance(resp, CallFailed):
            return PerturbResult(it, side, variant, False, f"rewrite call failed: {resp}", it)
        new_text = strip_wrapper(resp.text, original)
        if side == "prompt":
            ok, why = (True, None) if new_text.strip() else (False, "empty rewrite")
        elif new_text == original:
            ok, why = False, "rewrite left the text unchanged"
        else:
            ans, comp = side_answers(it, side)
            ok, why = answer_preserved(original, new_text, ans, competitor=comp)
        record = {"name": "rewrite", "target": target, "changed": side, "also_changed": [],
                  "variant": variant, "phrasing": None, "source_id": it.id, "preserved": ok,
                  "options": {"bias": bias, "level": level}, "instruction": instruction}
        md = dict(it.metadata)
        md["perturbations"] = [*it.metadata.get("perturbations", []), record]
        md["perturbation"] = record
        suffix = f"~rewrite:{bias}:level={level}" + ("" if target == "worse" else f"@{target}")
        new = it.model_copy(update={side: new_text, "id": it.id + suffix, "metadata": md})
        return PerturbResult(new, side, variant, ok, why, it)

