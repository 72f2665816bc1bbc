"""Sentiment: the same answer in a cheerful, angry or fearful tone (CALM sentiment bias).

Templates wrap the unchanged answer in an opening and a closing line of that tone; the
LLM rewriter (`rewrite.py`, bias "sentiment") can recast the whole text instead.
"""

from __future__ import annotations

import random
from typing import Any

from judgeaudit.perturb._wrap import wrap
from judgeaudit.perturb.base import Edit, Option, Perturbation, Side, register_perturbation

TONES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "cheerful": (
        ("Oh, what a fun question! I'm so happy to help with this!",
         "Great question! I absolutely love answering things like this!",
         "Yay, this one is a delight to answer!"),
        ("Hope that brightens your day, have a wonderful time!",
         "Isn't that lovely? Happy to help anytime!",
         "Have a fantastic day, and keep those great questions coming!"),
    ),
    "angry": (
        ("Ugh, honestly, this is obvious and I'm tired of answering it.",
         "Seriously? Fine. I'll spell it out for you.",
         "I can't believe I have to explain this again."),
        ("Now stop asking me things you could have looked up yourself.",
         "There. Don't make me repeat it.",
         "That's it. Try to remember it next time."),
    ),
    "fearful": (
        ("I'm really nervous about getting this wrong, but here goes...",
         "Oh no, I'm scared this might be a trick question, but I'll try.",
         "I'm anxious about answering this, please bear with me."),
        ("Please don't be upset with me if I've made a mistake.",
         "I really hope I didn't mess this up; I'm worried about it.",
         "I'm so afraid this might cause trouble, I'm sorry if it does."),
    ),
}


@register_perturbation
class Sentiment(Perturbation):
    name = "sentiment"
    title = "Sentiment (tone)"
    description = ("Wraps the unchanged answer in an opening and closing line of a cheerful, "
                   "angry or fearful tone.")
    target_default = "worse"
    options = {"tone": Option(None, tuple(TONES), "cheerful | angry | fearful (None: per item)")}
    adds_english = "the tone lines"

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        tone = opts["tone"] or sorted(TONES)[rng.randrange(len(TONES))]
        opens, closes = TONES[tone]
        i, j = rng.randrange(len(opens)), rng.randrange(len(closes))
        return Edit(wrap(text, opens[i], closes[j]), tone, i * len(closes) + j,
                    meta={"tone": tone})
