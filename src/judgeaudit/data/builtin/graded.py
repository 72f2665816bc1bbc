"""`builtin:graded` — pointwise items with a known score: answers to fact and arithmetic
questions degraded on purpose to five quality levels.

5 = correct and complete (the answer stated, with a short explanation or working)
4 = correct but terse (the bare answer, nothing explained)
3 = hedged / partly correct (names the correct answer and the wrong one, commits to neither)
2 = wrong, with the right reasoning steps (a sound method with a slip at the end)
1 = wrong and irrelevant (does not address the question)

QUESTIONS_PER_SOURCE fact questions (those with a known explanation: capitals, chemical
symbols, units) and as many arithmetic problems, each at all five levels, in a seeded order.
score = level; quality = (level - 1) / 4.
"""

from __future__ import annotations

import random
import re
from typing import Any

from judgeaudit.data.builtin.arithmetic import Problem
from judgeaudit.data.builtin.bank import FACTS, Fact, sentence
from judgeaudit.data.builtin.pairs import arithmetic_problems, rng_for
from judgeaudit.data.schema import PointwiseItem

QUESTIONS_PER_SOURCE = 30

RUBRIC = "Does the response answer the question correctly, completely and to the point?"
RUBRIC_LEVELS = {
    "1": "The response is wrong and irrelevant: it does not address the question at all.",
    "2": "The response addresses the question with a sensible method but reaches a wrong "
         "final answer.",
    "3": "The response is hedged or only partly correct: it mentions the correct answer "
         "but does not commit to it.",
    "4": "The response gives the correct answer, but tersely, with no explanation or "
         "working.",
    "5": "The response gives the correct answer, clearly stated, with a short correct "
         "explanation or working.",
}

IRRELEVANT = [
    "Many people enjoy a walk in the park on a sunny afternoon.",
    "Cats often sleep for most of the day and play at night.",
    "A good breakfast can make the whole morning feel easier.",
    "The weather can change very quickly in the mountains.",
    "Reading a book before bed helps some people relax.",
    "Fresh bread smells wonderful when it comes out of the oven.",
    "Gardening is a calm and rewarding hobby for many people.",
    "Music can change the mood of a room very quickly.",
]

_REASONING = {
    "capitals": "The capital is the city where the national government sits.",
    "chemistry": "Chemical symbols are short codes of one or two letters, often taken from "
                 "the element's Latin name.",
    "units": "To answer, recall how many of the smaller unit make up the larger one.",
}


def contains(text: str, answer: str) -> bool:
    """Whether `answer` occurs in `text` as a whole word or number (case-insensitive)."""
    return re.search(rf"(?<![\w.]){re.escape(answer)}(?![\w])", text, re.IGNORECASE) is not None


def _hedge(right: str, wrong: str, rng: random.Random) -> str:
    a, b = (right, wrong) if rng.random() < 0.5 else (wrong, right)
    return f"It might be {a}, but it could also be {b}; I am not completely sure."


def fact_levels(f: Fact, rng: random.Random) -> dict[int, str]:
    return {
        5: f"{f.statement(f.answer)} {f.why}",
        4: sentence(f.answer),
        3: _hedge(f.answer, f.wrong, rng),
        2: f"{_REASONING[f.topic]} {f.statement(f.wrong)}",
        1: rng.choice(IRRELEVANT),
    }


def problem_levels(p: Problem, rng: random.Random) -> dict[int, str]:
    return {
        5: f"{p.statement(p.answer)} {p.steps(p.answer)}",
        4: f"{p.answer}.",
        3: _hedge(str(p.answer), str(p.wrong), rng),
        2: f"{p.steps(p.wrong)} So the answer is {p.wrong}.",
        1: rng.choice(IRRELEVANT),
    }


def _consistent(levels: dict[int, str], answer: str, wrong: str) -> bool:
    """The levels say what they claim: the correct answer is in 5, 4, 3 and nowhere else;
    the wrong answer is in 3 and 2 and not in 5 or 4."""
    want_right = {5: True, 4: True, 3: True, 2: False, 1: False}
    want_wrong = {5: False, 4: False, 3: True, 2: True}
    return (all(contains(levels[k], answer) == v for k, v in want_right.items())
            and all(contains(levels[k], wrong) == v for k, v in want_wrong.items()))


def graded(seed: int) -> list[PointwiseItem]:
    rng = rng_for("graded:content", seed)
    groups: list[tuple[str, dict[int, str], dict[str, Any]]] = []
    fact_pool = [(i, f) for i, f in enumerate(FACTS) if f.why and f.topic in _REASONING]
    rng.shuffle(fact_pool)
    for i, f in fact_pool:
        if sum(1 for g in groups if g[2]["source"] == "facts") >= QUESTIONS_PER_SOURCE:
            break
        levels = fact_levels(f, rng)
        if _consistent(levels, f.answer, f.wrong):
            groups.append((f.question, levels, {"topic": f.topic, "answer": f.answer,
                                                "wrong_answer": f.wrong, "source": "facts",
                                                "bank_index": i}))
    made = 0
    problem_pool = arithmetic_problems(seed)
    rng.shuffle(problem_pool)
    for p in problem_pool:
        if made >= QUESTIONS_PER_SOURCE:
            break
        levels = problem_levels(p, rng)
        if _consistent(levels, str(p.answer), str(p.wrong)):
            groups.append((p.question, levels, {"topic": p.topic, "answer": str(p.answer),
                                                "wrong_answer": str(p.wrong),
                                                "source": "arithmetic",
                                                "expression": p.expression}))
            made += 1
    rows = [(g, level) for g in range(len(groups)) for level in (1, 2, 3, 4, 5)]
    rng_for("graded:order", seed).shuffle(rows)
    items = []
    for pos, (g, level) in enumerate(rows):
        question, levels, meta = groups[g]
        items.append(PointwiseItem(
            id=f"builtin:graded:{pos}", prompt=question, response=levels[level],
            score=float(level), rubric=RUBRIC, rubric_levels=dict(RUBRIC_LEVELS),
            quality=(level - 1) / 4,
            metadata={**meta, "dataset": "graded", "level": level, "question_group": g},
        ))
    return items
