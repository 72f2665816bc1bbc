"""Seeded arithmetic problems (+, -, x with small numbers; unit conversions), each with its
correct answer and a plausible wrong one, plus worked steps for `builtin:graded`."""

from __future__ import annotations

import random
from dataclasses import dataclass

# (larger unit plural, singular, smaller unit plural, factor, wrong factor people confuse)
CONVERSIONS = [
    ("metres", "metre", "centimetres", 100, 10), ("kilometres", "kilometre", "metres", 1000, 100),
    ("kilograms", "kilogram", "grams", 1000, 100), ("hours", "hour", "minutes", 60, 100),
    ("minutes", "minute", "seconds", 60, 100), ("days", "day", "hours", 24, 12),
    ("weeks", "week", "days", 7, 5), ("litres", "litre", "millilitres", 1000, 100),
    ("centimetres", "centimetre", "millimetres", 10, 100), ("feet", "foot", "inches", 12, 10),
    ("years", "year", "months", 12, 10),
]


@dataclass(frozen=True)
class Problem:
    topic: str  # addition, subtraction, multiplication, units
    question: str
    expression: str  # "17 + 26", or "3 metres in centimetres"
    answer: int
    wrong: int
    operands: tuple[int, int]
    unit: tuple[str, str, str] | None = None  # (big plural, big singular, small plural)

    def statement(self, value: int | str) -> str:
        if self.unit:
            big, _, small = self.unit
            return f"{self.operands[0]} {big} is {value} {small}."  # the answer comes last
        return f"{self.expression} = {value}."

    def steps(self, final: int) -> str:
        """Correct working that ends in `final` (the right answer, or a slip for level 2)."""
        a, b = self.operands
        if self.topic == "units":
            _, one, small = self.unit  # type: ignore[misc]
            return f"Each {one} has {b} {small}, so {a} × {b} = {final}."
        if self.topic == "multiplication":
            return f"{a} × {b} is {a} × {b - 1} plus one more {a}: {a * (b - 1)} + {a} = {final}."
        tens, ones = b // 10 * 10, b % 10
        if self.topic == "addition":
            if tens and ones:
                return f"Start from {a}, add {tens} to get {a + tens}, then add {ones} to get " \
                       f"{final}."
            return f"Start from {a} and add {b} to get {final}."
        if tens and ones:
            return f"Start from {a}, take away {tens} to get {a - tens}, then take away " \
                   f"{ones} to get {final}."
        return f"Start from {a} and take away {b} to get {final}."


def _wrong(rng: random.Random, correct: int, avoid: set[int], deltas: list[int]) -> int | None:
    for d in rng.sample(deltas, len(deltas)):
        w = correct + d
        if w > 0 and w not in avoid and w != correct:
            return w
    return None


def problems(rng: random.Random, counts: dict[str, int]) -> list[Problem]:
    """Distinct problems per topic; the correct answer never equals an operand and the wrong
    answer never equals an operand or the correct answer (so answers can be told apart)."""
    out: list[Problem] = []
    seen: set[str] = set()
    for topic, n in counts.items():
        made = tries = 0
        while made < n:
            tries += 1
            if tries > 100 * n + 100:
                raise ValueError(f"cannot make {n} distinct {topic} problems")
            p = _one(rng, topic)
            if p is None or p.question in seen:
                continue
            seen.add(p.question)
            out.append(p)
            made += 1
    return out


def _one(rng: random.Random, topic: str) -> Problem | None:
    if topic == "addition":
        a, b = rng.randint(2, 60), rng.randint(2, 60)
        c = a + b
        w = _wrong(rng, c, {a, b}, [-10, -2, -1, 1, 2, 10])
        expr = f"{a} + {b}"
    elif topic == "subtraction":
        a = rng.randint(12, 99)
        b = rng.randint(2, a - 2)
        c = a - b
        if c in (a, b):
            return None
        w = _wrong(rng, c, {a, b}, [-10, -2, -1, 1, 2, 10])
        expr = f"{a} - {b}"
    elif topic == "multiplication":
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        c = a * b
        w = _wrong(rng, c, {a, b}, [-a, a, -b, b, -1, 1, 10])
        expr = f"{a} × {b}"
    elif topic == "units":
        big, one, small, factor, wrong_factor = rng.choice(CONVERSIONS)
        q = rng.randint(2, 9)
        c, w = q * factor, q * wrong_factor
        return Problem(topic, f"How many {small} are in {q} {big}?", f"{q} {big} in {small}",
                       c, w, (q, factor), (big, one, small))
    else:
        raise ValueError(f"unknown arithmetic topic {topic!r}")
    if w is None:
        return None
    return Problem(topic, f"What is {expr}?", expr, c, w, (a, b))
