"""Fallacy-oversight: the reasoning is really flawed, the final answer is the right one."""

from __future__ import annotations

import re

from judgeaudit.perturb import perturb_items
from judgeaudit.perturb.fallacy import ARITH_CHAINS, VERBAL, arithmetic_chain
from judgeaudit.perturb.preserve import numbers

_EQ = re.compile(r"(\d+) ([+\-×÷]) (\d+) = (\d+)")


def _true(a: int, op: str, b: int) -> float:
    return {"+": a + b, "-": a - b, "×": a * b, "÷": a / b}[op]


def test_every_arithmetic_chain_is_flawed_but_ends_in_the_answer():
    cases = [(17, 25, "+", 42), (48, 19, "-", 29), (12, 7, "×", 84), (96, 8, "÷", 12)]
    for a, b, op, n in cases:
        c0 = arithmetic_chain(0, a, b, op, n, 3)
        # chain 0 states a false equation
        (x, o, y, z), = _EQ.findall(c0)
        assert _true(int(x), o, int(y)) != int(z), c0
        # chain 1: the "estimate" is off by the claimed exact overshoot (an invented rule)
        c1 = arithmetic_chain(1, a, b, op, n, 3)
        assert f"about {n + 3}" in c1 and "always overshoot by exactly 3" in c1
        for c in (c0, c1, arithmetic_chain(2, a, b, op, n, 3)):
            assert c is not None
            nums = [m for m in re.findall(r"\d+", c)]
            assert nums[-1] == str(n)
    # chain 2's "usual amount" is not a constant: it differs between two problems with the
    # same first operand, so the method is invented to hit the answer
    assert "usual amount, 8" in arithmetic_chain(2, 17, 25, "+", 42, 3)
    assert "usual amount, 11" in arithmetic_chain(2, 17, 28, "+", 45, 3)
    assert arithmetic_chain(2, 9, 9, "+", 18, 3) is None  # doubling would be correct here
    assert len(ARITH_CHAINS) == 3


def test_arithmetic_items_get_a_computation_fact_items_a_fallacy(items):
    rs = {r.original.id: r for r in perturb_items(items, "fallacy", seed=0)}
    for it in items:
        r = rs[it.id]
        text = getattr(r.item, r.changed)
        assert r.preserved, r.reason
        if it.id.startswith("arith"):
            assert r.variant == "arithmetic"
            assert re.findall(r"\d+", text)[-1] == it.metadata["answer"]
            assert set(numbers(text)) - set(numbers(getattr(it, r.changed)))  # new steps
            assert it.metadata["wrong_answer"] not in re.findall(r"\d+", text)
        else:
            assert r.variant == "verbal"
            assert any(text.startswith(v) for v in VERBAL)
            if "answer" in it.metadata:
                assert it.metadata["answer"] in text
            else:  # no known answer: the whole response is kept after the fallacy
                assert getattr(it, r.changed).strip() in text


def test_add_mode_keeps_the_original(items):
    for r in perturb_items(items, "fallacy", mode="add", seed=0):
        assert r.preserved, r.reason
        assert getattr(r.original, r.changed).strip() in getattr(r.item, r.changed)


def test_worse_side_chain_lands_on_its_own_wrong_answer(items):
    for r in perturb_items([it for it in items if it.id.startswith("arith")], "fallacy",
                           target="worse", seed=0):
        text = getattr(r.item, r.changed)
        assert r.preserved and r.variant == "arithmetic", r.reason
        nums = re.findall(r"\d+", text)
        assert nums[-1] == r.original.metadata["wrong_answer"]
        assert r.original.metadata["answer"] not in nums  # the right answer is not introduced
