"""Distraction: an irrelevant detail about one response's author (CALM distraction bias:
"The author of this response enjoys hiking on weekends.")."""

from __future__ import annotations

import random
from typing import Any

from judgeaudit.perturb._wrap import attach
from judgeaudit.perturb.base import Edit, Option, Perturbation, Side, choose, register_perturbation

DETAILS = (
    "The author of this response enjoys hiking on weekends.",
    "The person who wrote this answer has a cat named Biscuit.",
    "This response was written on a rainy afternoon in a small café.",
    "The author of this response recently took up pottery as a hobby.",
    "The writer of this answer prefers tea over coffee.",
    "The author of this response likes to listen to jazz while working.",
)


@register_perturbation
class Distraction(Perturbation):
    name = "distraction"
    title = "Distraction"
    description = "Adds an irrelevant personal detail about the response's author."
    target_default = "worse"
    options = {"position": Option("end", ("start", "end"), "where the detail goes")}
    adds_english = "the detail about the author"

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        i, detail = choose(rng, DETAILS)
        return Edit(attach(text, detail, opts["position"]), opts["position"], i,
                    meta={"detail": detail})
