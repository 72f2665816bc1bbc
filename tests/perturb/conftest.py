"""Items like the built-in generated data (arithmetic and facts with known right and wrong
answers, in metadata "answer" / "wrong_answer"), plus free-text items without an answer."""

from __future__ import annotations

import pytest

from judgeaudit.data import PairwiseItem


def _arith(i: int, a: int, op: str, b: int, right: int, wrong: int, label: int) -> PairwiseItem:
    good = f"{a} {op} {b} = {right}. The answer is {right}."
    bad = f"{a} {op} {b} = {wrong}. The answer is {wrong}."
    r1, r2 = (good, bad) if label == 1 else (bad, good)
    return PairwiseItem(
        id=f"arith:{i}", prompt=f"What is {a} {op} {b}?", response_1=r1, response_2=r2,
        label=label, metadata={"answer": str(right), "wrong_answer": str(wrong)},
    )


def _fact(i: int, q: str, good: str, bad: str, right: str, wrong: str, label: int):
    r1, r2 = (good, bad) if label == 1 else (bad, good)
    return PairwiseItem(id=f"facts:{i}", prompt=q, response_1=r1, response_2=r2, label=label,
                        metadata={"answer": right, "wrong_answer": wrong})


def make_items() -> list[PairwiseItem]:
    items = [
        _arith(0, 17, "+", 25, 42, 32, 1),
        _arith(1, 48, "-", 19, 29, 31, 2),
        _arith(2, 12, "×", 7, 84, 74, 1),
        _arith(3, 96, "÷", 8, 12, 14, 2),
        _arith(4, 305, "+", 1260, 1565, 1575, 1),
        _arith(5, 9, "+", 9, 18, 19, 2),
        _fact(0, "What is the capital of Australia?", "The capital of Australia is Canberra.",
              "The capital of Australia is Sydney.", "Canberra", "Sydney", 1),
        _fact(1, "Which planet is known as the Red Planet?",
              "Mars is known as the Red Planet because of the iron oxide on its surface.",
              "Venus is known as the Red Planet because of its thick clouds.", "Mars", "Venus", 2),
        _fact(2, "Who wrote Pride and Prejudice?", "Pride and Prejudice was written by Jane "
              "Austen and published in 1813.", "It was written by Charlotte Brontë in 1813.",
              "Jane Austen", "Charlotte Brontë", 1),
        _fact(3, "How many legs does a spider have?", "A spider has 8 legs.",
              "A spider has 6 legs, like other insects.", "8", "6", 1),
        PairwiseItem(
            id="free:0", prompt="Give me two tips for sleeping better.",
            response_1="Keep a regular schedule, going to bed at the same time every night. "
                       "Avoid screens for about 30 minutes before bed.",
            response_2="Sleep is important. You should sleep.", label=1),
        PairwiseItem(
            id="free:1", prompt="How do I reverse a list in Python?",
            response_1="Use slicing.",
            response_2="Call the reverse method, which works in place:\n\n```python\n"
                       "xs = [1, 2, 3]\nxs.reverse()\n```\n\nOr use reversed(xs) for a copy.",
            label=2),
    ]
    return items


@pytest.fixture
def items() -> list[PairwiseItem]:
    return make_items()
