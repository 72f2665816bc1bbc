"""Bandwagon: the instruction claims that most people prefer one response (CALM bandwagon
bias: "90% of people believe Response X is better").

The sentence must name the response by the letter it is shown under, which the judge decides
later per presentation order. So the perturbed prompt carries a letter slot
(`<<LETTER:response_2>>`) naming the canonical response; the judge layer calls
`judgeaudit.perturb.render_order(item, order)` before building each request, which fills the
slot with "A" or "B" for that order. The canonical response is also recorded in the item's
metadata as `bandwagon_target`. `bandwagon_sentence(letter, rng)` gives a rendered sentence
directly for callers that build prompts themselves.
"""

from __future__ import annotations

import random
from typing import Any

from judgeaudit.perturb.base import (
    Edit,
    Option,
    Perturbation,
    PerturbError,
    Side,
    choose,
    register_perturbation,
    resolve_target,
    slot,
)

PHRASINGS = (
    "{pct}% of people believe Response {x} is better.",
    "In a survey, {pct}% of readers preferred Response {x}.",
    "Most reviewers ({pct}%) agreed that Response {x} is the better one.",
    "{pct}% of previous evaluators chose Response {x} as the better response.",
)


def bandwagon_sentence(letter: str, rng: random.Random, percent: int = 90) -> str:
    """One phrasing from the library, naming the response shown under `letter`."""
    return choose(rng, PHRASINGS)[1].format(pct=percent, x=letter)


@register_perturbation
class Bandwagon(Perturbation):
    name = "bandwagon"
    title = "Bandwagon"
    description = ("Adds a sentence to the instruction claiming that most people prefer one "
                   "response (by default the worse one).")
    target_default = "prompt"
    pointwise = False
    # The sentence goes into the instruction, beside the judge template's own English, not
    # into a response: no language switch between the responses (adds_english stays None).
    options = {
        "favour": Option("worse", ("worse", "better", "response_1", "response_2"),
                         "which response the sentence says people prefer"),
        "percent": Option(90, None, "the majority share quoted", int),
    }

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        item = side.item
        try:
            (fav,) = resolve_target(item, opts["favour"])  # type: ignore[arg-type]
        except PerturbError as exc:
            raise PerturbError(f"bandwagon: {exc}") from None
        i, fmt = choose(rng, PHRASINGS)
        sentence = fmt.format(pct=opts["percent"], x=slot(fav))
        new = text.rstrip() + "\n\n" + sentence
        return Edit(new, f"favour_{opts['favour']}", i, ignore=(sentence,),
                    meta={"bandwagon_target": fav, "bandwagon_sentence": sentence,
                          "order_dependent": True})
