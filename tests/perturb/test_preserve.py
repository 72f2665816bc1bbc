"""The answer-preservation check: it passes honest template edits and catches perturbations
that change, drop or compete with the answer, including through the perturb_items path."""

from __future__ import annotations

import random
from typing import Any

import pytest

from judgeaudit.perturb import perturb_items
from judgeaudit.perturb.base import _REGISTRY, Edit, Perturbation, Side, register_perturbation
from judgeaudit.perturb.preserve import (
    answer_preserved,
    entities,
    final_answer_kept,
    insertions,
    numbers,
    words_preserved,
)

ORIG = "17 + 25 = 42. The answer is 42."


def test_numbers_are_normalised():
    assert numbers("1,565 and 1565 and 42.0 and 3.50 and 007") == {"1565": 2, "42": 1,
                                                                   "3.5": 1, "7": 1}
    assert set(numbers("GPT-4 and v2 and x1.5")) == {"4"}  # digits inside words are not numbers
    assert set(numbers("Pay <<LETTER:response_2>> now")) == set()  # letter slots are not numbers


def test_insertions_found_at_word_level():
    assert insertions(ORIG, "Note. " + ORIG + " Bye.") == ["Note.", "Bye."]
    assert insertions("a b. c d.", "a b.\nX Y\nc d.") == ["X Y"]
    assert insertions(ORIG, ORIG.replace("42.", "43.")) is None
    assert insertions(ORIG, ORIG.replace("The answer", "Answer")) is None  # a deletion


def test_additive_edit_passes():
    assert answer_preserved(ORIG, "I am sure.\n\n" + ORIG, "42", competitor="32") == (True, None)


def test_additive_edit_with_a_new_number_fails():
    ok, why = answer_preserved(ORIG, ORIG + " Or maybe 43.", "42")
    assert not ok and "43" in why


def test_additive_edit_repeating_its_own_numbers_passes():
    assert answer_preserved(ORIG, ORIG + " To recap: the answer is 42.", "42")[0]


def test_additive_edit_mentioning_the_competing_answer_fails():
    orig = "The capital of Australia is Canberra."
    ok, why = answer_preserved(orig, orig + " Some say Sydney.", "Canberra", competitor="Sydney")
    assert not ok and "Sydney" in why


def test_citation_digits_are_allowed_only_when_declared():
    cite = "(Smith et al., 2019)"
    pert = ORIG[:-1] + f" {cite}."
    assert not answer_preserved(ORIG, pert, "42")[0]
    assert answer_preserved(ORIG, pert, "42", ignore=(cite,)) == (True, None)


def test_rewrite_changing_the_answer_fails():
    ok, why = answer_preserved(ORIG, "17 + 25 = 43. The answer is 43.", "42")
    assert not ok and "43" in why


def test_rewrite_dropping_the_answer_fails():
    orig = "Mars is known as the Red Planet."
    ok, why = answer_preserved(orig, "It is known as the Red Planet.", "Mars")
    assert not ok and "Mars" in why


def test_rewrite_swapping_in_the_competitor_fails():
    orig = "The capital of Australia is Canberra, not Sydney."
    pert = "Sydney, not Sydney, is the capital; Canberra is a city."
    ok, why = answer_preserved(orig, pert, "Canberra", competitor="Sydney")
    assert not ok and "competing" in why


def test_rewrite_without_answer_checks_numbers_and_entities():
    orig = "Keep a regular schedule. Avoid screens for 30 minutes, as Dr Walker advises."
    good = "Stick to a regular schedule! Skip screens for 30 minutes, as Dr Walker advises."
    assert answer_preserved(orig, good) == (True, None)
    ok, why = answer_preserved(orig, good.replace("30", "thirty"))
    assert not ok and "30" in why
    ok, why = answer_preserved(orig, good.replace("Walker", "Smith"))
    assert not ok and "Walker" in why
    assert "Walker" in entities(orig) and "Keep" not in entities(orig)


def test_rewrite_keeping_the_answer_passes():
    pert = "**17 + 25 = 42.**\n\n- The answer is 42."
    assert answer_preserved(ORIG, pert, "42", competitor="32") == (True, None)


def test_empty_result_fails():
    assert answer_preserved(ORIG, "  ", "42")[0] is False


def test_final_answer_kept():
    assert final_answer_kept(ORIG, "Round 25 up to 30: 17 + 30 = 42. So it is 42.", "42")[0]
    ok, why = final_answer_kept(ORIG, "17 + 25 = 42, so the answer is 41.", "42")
    assert not ok and "41" in why
    ok, why = final_answer_kept(ORIG, "It is 32 or 42.", "42", competitor="32")
    assert not ok and "32" in why
    orig = "Pride and Prejudice was written by Jane Austen."
    assert final_answer_kept(orig, "Everyone knows it. It was Jane Austen.", "Jane Austen")[0]
    assert not final_answer_kept(orig, "Jane Austen? No. It was someone else.", "Jane Austen")[0]


def test_words_preserved():
    assert words_preserved("A b c.", "## X\n\n**A b** c.") == (True, None)
    ok, why = words_preserved("A b c b.", "A b c.")
    assert not ok and "b" in why


class _AnswerSwap(Perturbation):
    """A deliberately bad perturbation: states the other side's answer instead."""

    name = "test_bad_answer_swap"
    title = "bad"
    description = "Replaces the answer with the competing one."

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        assert side.answer and side.competitor
        return Edit(text.replace(side.answer, side.competitor), "swap", 0)


class _AddsNumber(Perturbation):
    name = "test_bad_adds_number"
    title = "bad"
    description = "Appends a sentence with a new number."

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        return Edit(text + f" Some sources say {rng.randint(100, 999)}.", "add", 0)


@pytest.fixture
def bad_perturbations():
    for cls in (_AnswerSwap, _AddsNumber):
        register_perturbation(cls)
    yield
    for cls in (_AnswerSwap, _AddsNumber):
        _REGISTRY.pop(cls.name, None)


def test_check_catches_bad_perturbations_through_perturb_items(items, bad_perturbations):
    answered = [it for it in items if "answer" in it.metadata]
    for name in ("test_bad_answer_swap", "test_bad_adds_number"):
        rs = perturb_items(answered, name, seed=0)
        assert rs and not any(r.preserved for r in rs), [r.reason for r in rs if r.preserved]
        assert all(r.reason and r.reason.startswith(r.changed) for r in rs)
        assert all(r.item.metadata["perturbation"]["preserved"] is False for r in rs)


def test_insertions_respect_word_boundaries():
    # "5" occurs inside "1.5": the original is the last word, not part of the model name
    assert insertions("5", "Model: Gemini 1.5 Pro\n5") == ["Model: Gemini 1.5 Pro"]
    assert answer_preserved("5", "Model: Gemini 1.5 Pro\n5", "5",
                            ignore=("Gemini 1.5 Pro",)) == (True, None)
    assert insertions("5", "15") is None


def test_ignored_strings_match_across_whitespace():
    cite = "References:\n[1] Smith, J. (2014). Title. Journal 47:301-316. doi:10.1469/x1"
    pert = ORIG + " [1]\n\n" + cite
    assert answer_preserved(ORIG, pert, "42", ignore=(cite, "[1]")) == (True, None)
    assert not answer_preserved(ORIG, pert, "42", ignore=("[1]",))[0]


def test_empty_original_is_not_perturbed(items):
    empty = items[0].model_copy(update={"response_2": "   \n ", "id": "empty"})
    r = perturb_items([empty], "authority")[0]
    assert not r.preserved and "empty" in r.reason
