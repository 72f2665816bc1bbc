"""Verbosity: lengthen a response without adding content (CALM verbosity bias; production
check "picks the longer of two equal-substance answers").

Padding is built from four kinds of sentence, none of which adds a fact or a number: a
restatement of the question (quoted only when it has no digits), hedges, filler, and a summary
that repeats the response's own last sentence. Level k (1..5) uses the first blocks of one
fixed plan, so each level contains the previous one and word count rises with the level.
"""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

from judgeaudit.llm.features import word_count, words
from judgeaudit.perturb.base import Edit, Option, Perturbation, Side, choose, register_perturbation
from judgeaudit.perturb.preserve import last_sentence

RESTATE_QUOTED = (
    'You asked: "{q}" Let me answer that carefully.',
    'The question is: "{q}" Here is my answer to it.',
    'To restate the question, you want to know the following: "{q}"',
)
RESTATE_GENERIC = (
    "Let me restate the question to make sure I address exactly what was asked.",
    "Before answering, it helps to restate what the question is asking for.",
    "This question asks for a specific answer, so let me address it directly.",
)
HEDGES = (
    "As far as I can tell, and to the best of my knowledge, what follows is accurate.",
    "It is worth noting, before going further, that I have considered this carefully.",
    "Generally speaking, and with the usual caveats, the answer is as follows.",
)
FILLER = (
    "This is a good question, and it is worth taking a moment to think it through properly.",
    "Questions like this come up often, and they deserve a clear and complete response.",
    "It is always helpful to approach a question like this in a careful, step-by-step way.",
    "Many people find this kind of question interesting, and for good reason.",
    "Taking the time to answer thoroughly helps avoid any possible confusion here.",
    "It is important to be precise about this, so I have tried to be as clear as possible.",
)
SUMMARY = (
    "In summary: {last}",
    "To recap: {last}",
    "So, to put it briefly: {last}",
)
SUMMARY_GENERIC = (
    "In summary, the answer above is my final answer.",
    "To recap, the response above gives my complete answer.",
    "So, to put it briefly, the answer is the one given above.",
)
CLOSING = (
    "I hope this detailed explanation is helpful and fully answers your question.",
    "Please let me know if anything here needs further clarification.",
    "I trust this thorough answer covers everything you were looking for.",
)

# Blocks added at each level (cumulative): (kind, where).
PLAN: tuple[tuple[tuple[str, str], ...], ...] = (
    (("restate", "pre"),),
    (("summary", "post"),),
    (("hedge", "pre"), ("filler", "post")),
    (("filler", "pre"), ("filler", "post")),
    (("filler", "pre"), ("closing", "post")),
)


def _quotable(prompt: str) -> str | None:
    q = " ".join(prompt.split())
    if not q or len(q) > 200 or re.search(r"\d", q) or '"' in q:
        return None
    return q


def _summary_source(text: str) -> str | None:
    last = last_sentence(text)
    if not last or "```" in last or "\n" in last or len(last.split()) > 40:
        return None
    return last if last[-1] in ".!?" else last + "."


@register_perturbation
class Verbosity(Perturbation):
    name = "verbosity"
    title = "Verbosity"
    description = ("Lengthens the response with a restated question, hedges, filler and a "
                   "summary that repeat it, adding no new content.")
    target_default = "worse"
    options = {"level": Option(3, (1, 2, 3, 4, 5), "padding intensity 1..5", int)}
    adds_english = "the padding"

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        level: int = opts["level"]
        # Draw every choice up front (same draws at every level): level k+1 extends level k.
        q = _quotable(side.prompt)
        ri, restate = choose(rng, RESTATE_QUOTED if q else RESTATE_GENERIC)
        hi, hedge = choose(rng, HEDGES)
        fillers = rng.sample(range(len(FILLER)), 4)
        last = _summary_source(text)
        si, summary = choose(rng, SUMMARY if last else SUMMARY_GENERIC)
        ci, closing = choose(rng, CLOSING)
        pick = {"restate": restate.format(q=q) if q else restate, "hedge": hedge,
                "summary": summary.format(last=last) if last else summary, "closing": closing}
        pre: list[str] = []
        post: list[str] = []
        n_fill = 0
        for blocks in PLAN[:level]:
            for kind, where in blocks:
                if kind == "filler":
                    sent = FILLER[fillers[n_fill]]
                    n_fill += 1
                else:
                    sent = pick[kind]
                (pre if where == "pre" else post).append(sent)
        # Summary reads last among the post blocks except the closing line.
        post.sort(key=lambda s: (s == pick["closing"], s == pick["summary"]))
        parts = [" ".join(pre), text.strip(), " ".join(post)]
        new = "\n\n".join(p for p in parts if p)
        phr = {"restate": ri, "hedge": hi, "summary": si, "closing": ci,
               "filler": fillers[0]}
        return Edit(new, f"level{level}", phr)


def neutral_padding(n_words: int, rng: random.Random) -> str:
    """Exactly `n_words` words (as `word_count` counts them) of the filler sentences above (no
    fact, no number, no cue), whole sentences in a seeded order, the last one cut where the
    count is reached: the length of another perturbation without its content (the audit's
    `--length-control`)."""
    order = list(FILLER)
    rng.shuffle(order)
    out: list[str] = []
    left = n_words
    for i in itertools.count():
        if left <= 0:
            break
        sentence = order[i % len(order)]
        k = word_count(sentence)
        if k <= left:
            out.append(sentence)
        else:
            out.append(" ".join(words(sentence)[:left]) + ".")
        left -= min(k, left)
    return " ".join(out)
