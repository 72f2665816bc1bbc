"""The pairwise built-in sets: facts, arithmetic, mixed, format.

Every set is built the same way: a list of canonical pairs (better response first, or a tie),
then `assemble` shuffles the item order and presents exactly half of each stratum swapped,
both with an RNG seeded from (set name, seed). Labels therefore split ~50/50 between 1 and
2 and a judge that always picks one position scores ~50%.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from judgeaudit.data.builtin.arithmetic import Problem, problems
from judgeaudit.data.builtin.bank import FACTS, Fact, sentence
from judgeaudit.data.schema import PairwiseItem

ARITHMETIC_COUNTS = {"addition": 70, "subtraction": 60, "multiplication": 60, "units": 60}
FORMAT_PER_VARIANT = 80


@dataclass(frozen=True)
class Pair:
    """A canonical pair: `first` is the better response (label_first=1) or either of two
    equally good ones (label_first=0)."""

    prompt: str
    first: str
    second: str
    label_first: int
    quality: tuple[float, float]
    meta: dict[str, Any]
    stratum: str = "all"
    # metadata keys whose value is a side (1 = first, 2 = second), remapped on a swap
    sides: dict[str, int] = field(default_factory=dict)


def rng_for(name: str, seed: int) -> random.Random:
    return random.Random(f"judgeaudit-builtin|{name}|{seed}")


def assemble(name: str, pairs: list[Pair], seed: int) -> list[PairwiseItem]:
    rng = rng_for(name + ":order", seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    by_stratum: dict[str, list[int]] = {}
    for pos, k in enumerate(order):
        by_stratum.setdefault(pairs[k].stratum, []).append(pos)
    swapped = [False] * len(pairs)
    for stratum in sorted(by_stratum):
        positions = by_stratum[stratum]
        flags = [i < len(positions) // 2 for i in range(len(positions))]
        if len(positions) % 2:
            flags[-1] = rng.random() < 0.5
        rng.shuffle(flags)
        for pos, f in zip(positions, flags, strict=True):
            swapped[pos] = f
    items = []
    for pos, k in enumerate(order):
        p, s = pairs[k], swapped[pos]
        r1, r2 = (p.second, p.first) if s else (p.first, p.second)
        q1, q2 = (p.quality[1], p.quality[0]) if s else p.quality
        label = 0 if p.label_first == 0 else (2 if s else 1)
        meta = {**p.meta, "dataset": name, "swapped": s}
        meta.update({k2: (3 - v if s else v) for k2, v in p.sides.items()})
        items.append(PairwiseItem(
            id=f"builtin:{name}:{pos}", prompt=p.prompt, response_1=r1, response_2=r2,
            label=label, quality=(q1, q2), metadata=meta,
        ))
    return items


# -- facts and arithmetic ----------------------------------------------------------------

def fact_meta(i: int, f: Fact) -> dict[str, Any]:
    return {"topic": f.topic, "answer": f.answer, "wrong_answer": f.wrong, "source": "facts",
            "bank_index": i}


def fact_pairs() -> list[Pair]:
    return [Pair(f.question, f.statement(f.answer), f.statement(f.wrong), 1, (1.0, 0.0),
                 fact_meta(i, f), stratum=f.topic)
            for i, f in enumerate(FACTS)]


def arithmetic_problems(seed: int) -> list[Problem]:
    return problems(rng_for("arithmetic:problems", seed), ARITHMETIC_COUNTS)


def problem_meta(p: Problem) -> dict[str, Any]:
    return {"topic": p.topic, "answer": str(p.answer), "wrong_answer": str(p.wrong),
            "source": "arithmetic", "expression": p.expression}


def arithmetic_pairs(seed: int) -> list[Pair]:
    return [Pair(p.question, p.statement(p.answer), p.statement(p.wrong), 1, (1.0, 0.0),
                 problem_meta(p), stratum=p.topic)
            for p in arithmetic_problems(seed)]


def facts(seed: int) -> list[PairwiseItem]:
    return assemble("facts", fact_pairs(), seed)


def arithmetic(seed: int) -> list[PairwiseItem]:
    return assemble("arithmetic", arithmetic_pairs(seed), seed)


def mixed(seed: int) -> list[PairwiseItem]:
    return assemble("mixed", fact_pairs() + arithmetic_pairs(seed), seed)


# -- format ------------------------------------------------------------------------------

OPENERS = [
    "That is a good question, and it deserves a careful answer.",
    "Thank you for asking; here is a clear and complete answer.",
    "Let me answer this question clearly and directly for you.",
]
CLOSERS = [
    "I hope this helps, and feel free to ask if you have any other questions.",
    "This is a well-known fact that is easy to check in any good reference.",
    "I am confident in this answer and happy to explain further if needed.",
]


def markdown(say: Callable[[str], str], answer: str, style: int) -> str:
    """The statement of `answer` in one of three markdown styles, the answer in bold."""
    b = say(f"**{answer}**")
    return [f"**Answer:** {b}", f"## Answer\n\n- {b}", f"### Answer\n\n> {b}"][style % 3]


def terse(answer: str) -> str:
    return sentence(answer)


def padded(statement: str, rng: random.Random) -> str:
    return f"{rng.choice(OPENERS)} {statement} {rng.choice(CLOSERS)}"


@dataclass(frozen=True)
class _Base:
    prompt: str
    say: Callable[[str], str]  # the one-sentence statement of a given answer
    answer: str
    wrong_answer: str
    meta: dict[str, Any]

    @property
    def right(self) -> str:
        return self.say(self.answer)

    @property
    def wrong(self) -> str:
        return self.say(self.wrong_answer)


def _bases(seed: int) -> list[_Base]:
    out = [_Base(f.question, f.statement, f.answer, f.wrong, fact_meta(i, f))
           for i, f in enumerate(FACTS)]
    out += [_Base(p.question, p.statement, str(p.answer), str(p.wrong), problem_meta(p))
            for p in arithmetic_problems(seed)]
    return out


def format_pairs(seed: int) -> list[Pair]:
    """Four variants, FORMAT_PER_VARIANT each, every one drawn from facts + arithmetic:
    - markdown_tie: the same correct answer, plain vs markdown (label 0, equal quality);
    - padding_tie: the same correct answer, terse vs padded with filler (label 0);
    - wrong_markdown: correct plain vs wrong in markdown (label = the correct one);
    - wrong_padded: correct terse vs wrong padded (label = the correct one).
    metadata `styled_side` is the side carrying the markdown or the padding."""
    rng = rng_for("format:content", seed)
    bases = _bases(seed)
    out: list[Pair] = []
    for variant in ("markdown_tie", "padding_tie", "wrong_markdown", "wrong_padded"):
        for b in rng.sample(bases, FORMAT_PER_VARIANT):
            meta = {**b.meta, "variant": variant}
            if variant == "markdown_tie":
                first, second = b.right, markdown(b.say, b.answer, rng.randrange(3))
                label, quality = 0, (1.0, 1.0)
                meta.pop("wrong_answer")
            elif variant == "padding_tie":
                first, second = terse(b.answer), padded(b.right, rng)
                label, quality = 0, (1.0, 1.0)
                meta.pop("wrong_answer")
            elif variant == "wrong_markdown":
                first, second = b.right, markdown(b.say, b.wrong_answer, rng.randrange(3))
                label, quality = 1, (1.0, 0.0)
            else:
                first, second = terse(b.answer), padded(b.wrong, rng)
                label, quality = 1, (1.0, 0.0)
            out.append(Pair(b.prompt, first, second, label, quality, meta, stratum=variant,
                            sides={"styled_side": 2}))
    return out


def format_set(seed: int) -> list[PairwiseItem]:
    return assemble("format", format_pairs(seed), seed)
