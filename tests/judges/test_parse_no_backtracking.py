"""Answers built to make the readers' regexes backtrack read in about linear time. A judge
that degenerates into a run of spaces or brackets is an ordinary failure; the score reader
took 21 s on "The" + 500 spaces + "score" (its whitespace runs were ambiguous between five
adjacent \\s*), and the choice reader 1.7 s on "[[" x 6,000 (each position re-scanned the
run). These are hang guards with a bound far above the fixed cost (milliseconds), not
speed targets: the old code takes minutes to hours on the same input."""

from __future__ import annotations

import time

import pytest

from judgeaudit.judges.parse import parse_choice, parse_score

BOUND_S = 3.0


@pytest.mark.parametrize("text", [
    "The" + " " * 5000 + "score",
    "4" + " " * 5000 + "x",
    "Score: x" + " \n" * 3000 + "x",
])
def test_a_long_whitespace_run_is_read_by_the_score_reader_without_backtracking(text):
    start = time.perf_counter()
    assert parse_score(text) is None
    assert time.perf_counter() - start < BOUND_S


@pytest.mark.parametrize("text", [
    "[[" + "\t" * 12000 + "A",
    "[[" * 12000 + "A",
    "((" * 12000 + "A is better",
])
def test_a_long_bracket_run_is_read_by_the_choice_reader_without_backtracking(text):
    start = time.perf_counter()
    parse_choice(text)
    assert time.perf_counter() - start < BOUND_S


def test_the_bounded_runs_still_read_their_usual_markup() -> None:
    assert parse_score("**4**") == 4 and parse_score("[[ 3 ]]") == 3
    assert parse_score("4   out of   5 .") == 4
    assert parse_choice("**[[A]]** is better") == "A"
    assert parse_choice("Output (a) is short.\nTherefore, Output (b) is better than "
                        "Output (a).") == "B"


def test_evaluates_decimal_score_reader_does_not_backtrack_on_a_run_of_spaces() -> None:
    from judgeaudit.audit.evaluate import decimal_score
    start = time.perf_counter()
    assert decimal_score("4" + " " * 5000 + "5", ("1", "2", "3", "4", "5")) is None
    assert time.perf_counter() - start < BOUND_S
    assert decimal_score("Score: **3.5** / 5.", ("1", "2", "3", "4", "5")) == 3.5


def test_many_labels_are_read_without_slicing_the_rest_for_each() -> None:
    """Each "answer:" label was read from a slice of the whole rest of the answer: 7,000 labels
    in 56 kB took about 6 s."""
    start = time.perf_counter()
    assert parse_choice("A\n" + "answer:\n" * 7000) == "A"
    assert time.perf_counter() - start < BOUND_S
    assert parse_choice("A\nVerdict:\n\n\nB") is None  # a later label naming the other
    assert parse_choice("A\nVerdict:\n\nA\nmore text") == "A"
