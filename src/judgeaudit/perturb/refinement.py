"""Refinement-aware: the response is introduced as a refined version of an earlier answer
(CALM refinement-aware bias; pointwise: ErrorRate_RA = |1 - score of the refined answer /
score when told it is a refinement|).

The probe scores the same text twice, without and with the framing: `refinement_pair(item,
rng)` returns both pointwise items. Registered as a perturbation too, so the framing can be
put on one side of a pairwise item (default: the worse one) or on a pointwise response.
"""

from __future__ import annotations

import random
from typing import Any

from judgeaudit.data.schema import PointwiseItem
from judgeaudit.perturb.base import (
    Edit,
    Option,
    Perturbation,
    PerturbResult,
    Side,
    choose,
    register_perturbation,
)

FRAMINGS = (
    "This is a refined version of a previous answer:",
    "The following answer has been revised and improved from an earlier draft:",
    "Refined answer (after reviewing and correcting an initial attempt):",
)


def frame(text: str, rng: random.Random) -> tuple[str, int]:
    """(the text with a refinement framing line before it, phrasing index)."""
    i, line = choose(rng, FRAMINGS)
    return f"{line}\n\n{text.strip()}", i


@register_perturbation
class Refinement(Perturbation):
    name = "refinement"
    title = "Refinement-aware"
    description = "Introduces the response as a refined version of a previous answer."
    target_default = "worse"
    options = {"framing": Option(None, tuple(range(len(FRAMINGS))),
                                 "index of the framing line (None: per item)", int)}
    adds_english = "the refinement framing line"

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        if opts["framing"] is None:
            new, i = frame(text, rng)
        else:
            i = opts["framing"]
            new = f"{FRAMINGS[i]}\n\n{text.strip()}"
        return Edit(new, "framed", i, meta={"framing": FRAMINGS[i]})


def refinement_pair(
    item: PointwiseItem, rng: random.Random
) -> tuple[PointwiseItem, PerturbResult]:
    """(the item as is, the item told it is a refinement): the pointwise probe scores both."""
    return item, Refinement().apply_pointwise(item, rng)
