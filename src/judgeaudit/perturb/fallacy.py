"""Fallacy-oversight: the correct final answer reached by flawed reasoning (CALM
fallacy-oversight bias: a judge should not reward a right answer for wrong reasons).

The target (by default the better response) is replaced by a short reasoning chain that is
wrong but ends with the same final answer:
- arithmetic items (the prompt holds one "a op b" and the side's answer is a whole number):
  an actually flawed computation (a false intermediate equation, then a false claim that
  rounding needs no correction; an invented "exact overshoot"; an invented "usual
  adjustment") ending in that side's own answer: on the better side two errors cancel into
  the right number, on the worse side (target="worse") the chain lands on its wrong number;
- other items: a logical fallacy (circular reasoning, appeal to popularity, affirming the
  consequent, false authority of intuition) followed by the response's own final sentence
  (the sentence holding the known answer; without a known answer, the whole response).
The flawed chain adds intermediate numbers on purpose, so the check is `final_answer_kept`
(the final answer is still the last number / in the last sentence, and the other side's answer
is not introduced), not the no-new-numbers rule.
"""

from __future__ import annotations

import random
import re
from typing import Any

from judgeaudit.perturb.base import Edit, Option, Perturbation, Side, choose, register_perturbation
from judgeaudit.perturb.preserve import (
    contains_answer,
    final_answer_kept,
    last_sentence,
    normalize_number,
)

_ARITH = re.compile(r"(?<![\w.])(\d+)\s*([+\-−*×x/÷])\s*(\d+)(?![\w.])")
_OPS = {"+": "+", "-": "-", "−": "-", "*": "×", "×": "×", "x": "×", "/": "÷", "÷": "÷"}
_WORD = {"+": "sum", "-": "difference", "×": "product", "÷": "quotient"}

ARITH_CHAINS = (
    # rounding error + false "no correction needed"
    "To work out {a} {op} {b}, round {b} up to {br}: {a} {op} {br} = {n}. Rounding does not "
    "change a {word}, so no correction is needed, and the answer is {n}.",
    # false estimate + false "estimates always overshoot by exactly d"
    "First estimate: {a} {op} {b} is about {nd}. Estimates like this always overshoot by "
    "exactly {d}, so subtracting {d} gives the exact answer: {n}.",
    # doubling shortcut with an unjustified adjustment
    "A quick way to get {a} {op} {b} is to double {a}, which gives {a2}, and then adjust by the "
    "usual amount, {adj}, which gives {n}. So the answer is {n}.",
)
VERBAL = (
    "This answer is correct because it is the right answer, and we know it is the right "
    "answer because it is correct.",
    "Most people I asked gave this same answer, and so many people cannot all be wrong.",
    "If this were the answer, it would sound reasonable. It does sound reasonable, so it "
    "must be the answer.",
    "My first instinct said this was right, and first instincts are always correct.",
)


def _arith(prompt: str, answer: str | None) -> tuple[int, int, str, int] | None:
    """(a, b, op, n) when the prompt holds exactly one "a op b" and this side's answer n is
    a whole number: the true result on the better side, the wrong one on the worse side (the
    chain is flawed either way)."""
    ms = list(_ARITH.finditer(prompt))
    if len(ms) != 1 or answer is None:
        return None
    n_txt = normalize_number(answer.strip())
    if not re.fullmatch(r"\d+", n_txt):
        return None
    a, op, b = int(ms[0].group(1)), _OPS[ms[0].group(2)], int(ms[0].group(3))
    return a, b, op, int(n_txt)


def arithmetic_chain(i: int, a: int, b: int, op: str, n: int, d: int) -> str | None:
    """Flawed chain number `i` for `a op b = n` (d: the fake overshoot of chain 1), or None
    when that chain would not be flawed for these numbers."""
    if i == 2 and n == 2 * a:
        return None  # doubling a is a correct method here, not a flawed one
    chain = ARITH_CHAINS[i].format(a=a, b=b, op=op, br=(b // 10 + 1) * 10, n=n, word=_WORD[op],
                                   nd=n + d, d=d, a2=2 * a, adj=n - 2 * a)
    return chain.replace("usual amount, -", "usual amount, minus ")


@register_perturbation
class Fallacy(Perturbation):
    name = "fallacy"
    title = "Fallacy-oversight"
    description = ("Replaces the reasoning with a short, flawed chain that still ends in the "
                   "same final answer.")
    target_default = "better"
    options = {"mode": Option("replace", ("replace", "add"),
                              "replace the reasoning with the flawed chain, or add the chain "
                              "to it")}
    adds_english = "the flawed reasoning"

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        arith = _arith(side.prompt, side.answer)
        add = opts["mode"] == "add"
        if arith is not None:
            a, b, op, n = arith
            d = rng.randint(2, 9)
            for i in rng.sample(range(len(ARITH_CHAINS)), len(ARITH_CHAINS)):
                chain = arithmetic_chain(i, a, b, op, n, d)
                if chain and not (side.competitor and contains_answer(chain, side.competitor)):
                    # "add": the chain goes after the original so its last number stays the
                    # answer.
                    new = f"{text.strip()}\n\n{chain}" if add else chain
                    return Edit(new, "arithmetic", i, meta={"fallacy_chain": chain})
        # Not arithmetic (or every chain would mention the other side's answer): a fallacy.
        i, fallacy = choose(rng, VERBAL)
        final = last_sentence(text)
        if side.answer and not contains_answer(final, side.answer):
            final = f"So the answer is {side.answer}."
        # Without a known answer the last sentence may not be the whole answer: keep it all.
        keep_all = add or side.answer is None
        new = f"{fallacy}\n\n{text.strip()}" if keep_all else f"{fallacy} {final}"
        return Edit(new, "verbal", i, meta={"fallacy_chain": fallacy})

    def check(self, original: str, edit: Edit, side: Side) -> tuple[bool, str | None]:
        return final_answer_kept(original, edit.text, side.answer, competitor=side.competitor)
