"""The HUB-J LLM modules as prompt templates (data, versioned, hashed) and their requests.

Every module is one `GPrompt`: a system text, a user text with `{field}` slots, and how the
answer comes back. Modules that answer with a JSON object start the assistant turn with the
object's opening (`prefill`, e.g. `{"score": `) so small local models stay on format; the
ones whose answer is one of a few tokens (G_score, G_assign, G_check) also pass `choices`, so a
provider with next-token probabilities (local, sim) answers in one forward pass while a text
provider (openai, anthropic) generates and the same strict JSON parser reads both.

G_inj is the one module that answers in plain text: its payload is a whole rewritten response,
and JSON-escaping hundreds of characters is only a failure mode for small models (and would
stop prompt-lookup decoding from copying the input). Its output is read with
`judgeaudit.perturb.rewrite.strip_wrapper`.

The sha256 of each template (`GPrompt.sha256`) is recorded in every results.json
(`prompt_hashes`), so a changed prompt is visible.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from judgeaudit.llm import Message, Request

VERSION = "hubj-prompts-v1"


@dataclass(frozen=True)
class Factor:
    """A bias factor: a short name and a general, observable definition."""

    name: str
    definition: str

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "definition": self.definition}

    @property
    def text(self) -> str:
        """What is embedded and shown to the modules: 'name: definition'."""
        return f"{self.name}: {self.definition}"


@dataclass(frozen=True)
class Feature:
    """One G_extract output: why the judge deviated from the human on one item."""

    item_id: str
    name: str
    reason: str
    definition: str

    @property
    def text(self) -> str:
        return f"{self.name}: {self.definition}"

    def as_dict(self) -> dict[str, str]:
        return {"item_id": self.item_id, "name": self.name, "reason": self.reason,
                "definition": self.definition}


@dataclass(frozen=True)
class GPrompt:
    name: str
    system: str
    user: str
    prefill: str = ""
    close: str = ""   # appended to prefill + choice when a provider answers by probabilities
    max_tokens: int = 256
    # What its requests ask of the model (their meta "task"): free text ("generate"), or a
    # scripted answer a test provider can give ("hubj"). Not hashed: it changes no prompt.
    task: str = "generate"

    @property
    def needs(self) -> dict[str, str]:
        """The meta a provider is asked about before any call (`Provider.cannot_serve`)."""
        return {"module": self.name, "task": self.task}

    @property
    def sha256(self) -> str:
        blob = json.dumps([VERSION, self.name, self.system, self.user, self.prefill, self.close],
                          ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def render(self, **fields: Any) -> str:
        try:
            return self.user.format(**fields)
        except KeyError as exc:
            raise ValueError(f"prompt {self.name}: missing field {exc}") from None


_JSON_ONLY = "Reply with one JSON object and nothing else."

G_EXTRACT = GPrompt(
    name="G_extract",
    system=("You analyse why an automatic judge disagreed with human evaluators. You name "
            "concrete, observable properties of the texts (for example length, structure, tone, "
            "confidence, citations, specific content choices). Never use vague labels such as "
            "'better quality', 'more helpful' or 'more accurate'. " + _JSON_ONLY),
    user=("Instruction given to both assistants:\n<instruction>\n{prompt}\n</instruction>\n\n"
          "Response the JUDGE preferred:\n<judge_preferred>\n{judge_preferred}\n"
          "</judge_preferred>\n\n"
          "Response the HUMANS preferred:\n<human_preferred>\n{human_preferred}\n"
          "</human_preferred>\n\n"
          "List up to {max_features} features of the judge-preferred response (compared with the "
          "human-preferred one) that explain why the judge deviated from the humans. For each "
          "give a short name (2-4 words), the reason on this item, and a general definition "
          "that applies to any response.\n"
          'Format: {{"features": [{{"name": "...", "reason": "...", "definition": "..."}}]}}'),
    prefill='{"features": [',
    max_tokens=220,
)

G_CONSTRUCT = GPrompt(
    name="G_construct",
    system=("You turn observations about an automatic judge into candidate bias factors: "
            "general, observable properties of a response that can make a judge prefer it "
            "regardless of its real quality. Each factor has a short name and a one-sentence "
            "definition that someone could check on any response by reading it, for example "
            "'uses bullet lists', 'restates the question', 'adds safety caveats', 'cites "
            "sources', 'uses technical jargon', 'gives step-by-step detail'. Never use "
            "judgements of quality such as relevance, accuracy, clarity, fluency, coherence, "
            "helpfulness or quality. " + _JSON_ONLY),
    user=("Representative features (each found on items where the judge disagreed with "
          "humans):\n{features}\n\nFactors already kept (propose only factors different from "
          "these):\n{previous}\n\nPropose {max_factors} candidate factors: for each of the "
          "features above in turn, one factor that generalises that feature into a property "
          "of the text (example: the feature 'formatting: the response uses headings' gives "
          "the factor 'heavy formatting: the response uses headings, lists or bold text "
          "beyond what its content needs').\n"
          'Format: {{"factors": [{{"name": "...", "definition": "..."}}, ...]}}'),
    prefill='{"factors": [',
    max_tokens=400,
)

G_ASSIGN = GPrompt(
    name="G_assign",
    task="hubj",
    system=("You map an observed feature to the one factor that best explains it, or to 0 "
            "when none fits. " + _JSON_ONLY),
    user=("Feature: {feature}\n\nFactors:\n{factors}\n  0. none of these\n\n"
          "Which factor (number) does the feature belong to?\n"
          'Format: {{"factor": <number>}}'),
    prefill='{"factor": ',
    close="}",
    max_tokens=8,
)

G_SCORE = GPrompt(
    name="G_score",
    task="hubj",
    system=("You rate how strongly a response shows one property, on a 1-5 scale defined by "
            "observable criteria. You rate the property only, not the response's quality. "
            + _JSON_ONLY),
    user=("Property: {factor}\nScale:\n{criteria}\n\nInstruction the response answers:\n"
          "<instruction>\n{prompt}\n</instruction>\n\nResponse:\n<response>\n{response}\n"
          "</response>\n\nHow strongly does the response show the property (1-5)?\n"
          'Format: {{"score": <1-5>}}'),
    prefill='{"score": ',
    close="}",
    max_tokens=8,
)

G_CRIT = GPrompt(
    name="G_crit",
    system=("You write 5-level Likert criteria for a property of a text. Each level is "
            "described by observable, checkable properties (counts, token ranges, share of the "
            "text), increasing from 1 (barely present) to 5 (extreme). " + _JSON_ONLY),
    user=("Property: {factor}\n\nWrite the five levels.\n"
          'Format: {{"1": "...", "2": "...", "3": "...", "4": "...", "5": "..."}}'),
    prefill='{"1": "',
    max_tokens=200,
)

G_INJ = GPrompt(
    name="G_inj",
    system=("You are an editor. You rewrite a response so that it shows a given property at a "
            "given intensity, changing its wording, sentences or formatting as needed. You keep "
            "the meaning: the final answer, every number, every named entity, every list item "
            "and every piece of code stay as they are, and you add no new facts. Your rewrite is "
            "never identical to the original. Output only the rewritten response."),
    user=("Instruction the response answers:\n<instruction>\n{prompt}\n</instruction>\n\n"
          "Original response:\n<text>\n{text}\n</text>\n\n"
          "Property: {factor}\nIntensity scale:\n{criteria}\n\n"
          "Rewrite the original response so that it shows the property at level {level} of 5: "
          "{level_text}\nEdit the text to reach exactly that level (add, remove or reword "
          "sentences, phrases or formatting); keep the answer itself unchanged. Reply with the "
          "rewritten response only."),
    max_tokens=0,  # set per request from the text's length
)

G_INJ_APPEND = GPrompt(
    name="G_inj_append",
    system=("You are an editor. You write sentences to add to a response so that the response "
            "shows a given property more strongly. The sentences add no new facts, numbers or "
            "answers. Output only the sentences to add."),
    user=("Instruction the response answers:\n<instruction>\n{prompt}\n</instruction>\n\n"
          "Response:\n<text>\n{text}\n</text>\n\nProperty: {factor}\nTarget: level {level} "
          "of 5: {level_text}\n\nWrite {level} sentence(s) to add to the end of the response so "
          "that the whole response reaches that level. Do not repeat the response."),
    max_tokens=0,  # 40 tokens per sentence asked for, plus slack
)

G_CHECK = GPrompt(
    name="G_check",
    task="hubj",
    system=("You check whether two versions of a response give the same answer: the same final "
            "answer, numbers, named entities, list items and code. Style, length, tone and "
            "formatting do not matter. " + _JSON_ONLY),
    user=("Instruction:\n<instruction>\n{prompt}\n</instruction>\n\nOriginal:\n<original>\n"
          "{original}\n</original>\n\nRewritten:\n<rewritten>\n{rewritten}\n</rewritten>\n\n"
          "Does the rewritten version give the same answer as the original?\n"
          'Format: {{"same_answer": "yes" | "no"}}'),
    prefill='{"same_answer": "',
    close='"}',
    max_tokens=8,
)

PROMPTS: dict[str, GPrompt] = {p.name: p for p in (
    G_EXTRACT, G_CONSTRUCT, G_ASSIGN, G_SCORE, G_CRIT, G_INJ, G_INJ_APPEND, G_CHECK)}
INJECT_MODES = ("rewrite", "append")


def prompt_hashes(names: Sequence[str] | None = None) -> dict[str, str]:
    """{module name: sha256} for results.json."""
    return {n: PROMPTS[n].sha256 for n in (names or PROMPTS)}


def _req(p: GPrompt, user: str, meta: dict[str, Any], *, choices: tuple[str, ...] = (),
         max_tokens: int | None = None) -> Request:
    return Request(
        messages=(Message("system", p.system), Message("user", user)),
        max_tokens=max_tokens or p.max_tokens, temperature=0.0, prefill=p.prefill,
        choices=choices, meta={"module": p.name, "prompt_sha256": p.sha256[:16], **meta},
    )


def _clip(text: str, limit: int = 2400) -> str:
    """Very long texts are cut (with a marker) so a prompt fits a small model's context."""
    return text if len(text) <= limit else text[:limit] + " [...]"


def extract_request(item_id: str, prompt: str, judge_preferred: str, human_preferred: str,
                    max_features: int = 3) -> Request:
    user = G_EXTRACT.render(prompt=_clip(prompt), judge_preferred=_clip(judge_preferred),
                            human_preferred=_clip(human_preferred), max_features=max_features)
    return _req(G_EXTRACT, user, {"task": "generate", "item_id": item_id,
                                  "shown": [judge_preferred, human_preferred]})


def construct_request(features: Sequence[str], previous: Sequence[Factor],
                      max_factors: int = 4) -> Request:
    feats = "\n".join(f"- {f}" for f in features)
    prev = "\n".join(f"- {f.text}" for f in previous) or "(none)"
    user = G_CONSTRUCT.render(features=feats, previous=prev, max_factors=max_factors)
    return _req(G_CONSTRUCT, user, {"task": "generate", "features": list(features),
                                    "previous": [f.name for f in previous]})


def assign_request(feature: str, factors: Sequence[Factor]) -> Request:
    if not 1 <= len(factors) <= 9:
        raise ValueError(f"G_assign takes 1-9 factors (one-digit answers), got {len(factors)}")
    listed = "\n".join(f"  {i}. {f.text}" for i, f in enumerate(factors, start=1))
    user = G_ASSIGN.render(feature=feature, factors=listed)
    return _req(G_ASSIGN, user, {"task": "hubj", "feature": feature,
                                 "factors": [f.name for f in factors]},
                choices=tuple(str(i) for i in range(len(factors) + 1)))


def criteria_text(criteria: Mapping[int, str]) -> str:
    return "\n".join(f"  {k}: {criteria[k]}" for k in sorted(criteria))


def score_request(item_id: str, prompt: str, response: str, factor: Factor,
                  criteria: Mapping[int, str]) -> Request:
    # Factor and scale come before the response, so calls for one factor share a long prefix
    # (the local provider reuses its key/value cache for it).
    user = G_SCORE.render(factor=factor.text, criteria=criteria_text(criteria),
                          prompt=_clip(prompt), response=_clip(response))
    return _req(G_SCORE, user, {"task": "hubj", "item_id": item_id, "factor": factor.name,
                                "response": response},
                choices=("1", "2", "3", "4", "5"))


def crit_request(factor: Factor) -> Request:
    return _req(G_CRIT, G_CRIT.render(factor=factor.text),
                {"task": "generate", "factor": factor.name})


def inject_budget(text: str, level: int, cap: int = 320) -> int:
    """Generation budget of a rewrite: the text's ~tokens times a growth that rises with the
    level (verbosity-like factors lengthen the text), plus slack; capped."""
    est = max(8, math.ceil(len(text) / 4))
    return min(cap, max(48, math.ceil(est * (1.2 + 0.5 * level)) + 24))


def inject_request(prompt: str, text: str, factor: Factor, criteria: Mapping[int, str],
                   level: int, *, item_id: str = "", max_tokens: int | None = None,
                   mode: str = "rewrite") -> Request:
    """G_inj: `rewrite` asks for the whole response rewritten at the level (the paper's
    module); `append` asks only for sentences to add at its end (an additive edit that keeps
    the answer by construction; small models that echo their input can do this one)."""
    if not 1 <= level <= 5:
        raise ValueError(f"G_inj level must be 1..5, got {level}")
    if mode not in INJECT_MODES:
        raise ValueError(f"G_inj mode {mode!r}: expected one of {INJECT_MODES}")
    g = G_INJ if mode == "rewrite" else G_INJ_APPEND
    user = g.render(factor=factor.text, criteria=criteria_text(criteria), level=level,
                    level_text=criteria[level], prompt=_clip(prompt), text=text)
    budget = inject_budget(text, level) if mode == "rewrite" else 40 * level + 24
    return _req(g, user, {"task": "generate", "item_id": item_id, "factor": factor.name,
                          "level": level, "text": text, "mode": mode},
                max_tokens=max_tokens or budget)


def check_request(item_id: str, prompt: str, original: str, rewritten: str) -> Request:
    user = G_CHECK.render(prompt=_clip(prompt), original=_clip(original),
                          rewritten=_clip(rewritten))
    return _req(G_CHECK, user, {"task": "hubj", "item_id": item_id, "original": original,
                                "rewritten": rewritten}, choices=("yes", "no"))


def default_criteria(factor: Factor) -> dict[int, str]:
    """Generic observable levels, used when neither shipped criteria nor G_crit are available
    (and as the fallback when G_crit's output cannot be parsed)."""
    n = factor.name
    return {
        1: f"'{n}' barely present: one short phrase (under 10% of the text) shows it.",
        2: f"'{n}' mildly present: one or two sentences (10-25% of the text) show it.",
        3: f"'{n}' clearly present: about a third to a half of the text shows it.",
        4: f"'{n}' dominant: most sentences (50-80% of the text) show it.",
        5: f"'{n}' extreme: nearly every sentence (over 80% of the text) shows it.",
    }


__all__ = [
    "INJECT_MODES", "PROMPTS", "VERSION", "Factor", "Feature", "GPrompt", "assign_request",
    "check_request",
    "construct_request", "crit_request", "criteria_text", "default_criteria",
    "extract_request", "inject_budget", "inject_request", "prompt_hashes", "score_request",
]
