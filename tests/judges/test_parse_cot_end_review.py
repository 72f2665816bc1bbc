"""Wrong readings a review found in the chain-of-thought end reader (ae7813f): a last line
taken as the winner when it names the loser or is a heading, a last line read by its first
clause only, and per-criterion or restricted verdicts read as the answer's verdict. Each
read a choice there (and None at 1b8a59b, before the end reader); each must stay invalid,
counted, never coerced."""

from __future__ import annotations

import time

import pytest

from judgeaudit.judges.parse import parse_choice

# Two sentences of reasoning before the end, as in the review's cases.
R = "Output (a) answers the question directly. Output (b) adds unrelated detail.\n\n"


# ---- 1. a last line that is no verdict: the loser, a ranking, a heading ---------------------

@pytest.mark.parametrize("end", [
    "Ranking (best first):\nOutput (a)\nOutput (b)",   # the loser, last in a ranking
    "Worse output:\nOutput (b)",                        # the loser, under its heading
    "The weaker response:\n\nResponse B",
    "Output (b):",                                      # a heading (an answer cut off)
    "**Conciseness**\nOutput (b)",                      # a criterion's heading
    "Output (a).\nOutput (b).",                         # a list of choices
])
def test_a_last_line_that_is_no_verdict_stays_invalid(end: str) -> None:
    assert parse_choice(R + end) is None
    assert parse_choice(R + end, allow_tie=True) is None


@pytest.mark.parametrize(("end", "want"), [
    ("Final verdict: [[A]]", "A"),
    ("Final verdict:\nOutput (b)", "B"),      # the label on the line before
    ("Verdict:\n\nB", "B"),
    ("Answer:\nOutput (a)", "A"),
    ("## Final Verdict\nOutput (b)", "B"),    # a verdict heading without a colon
    ("**Conciseness**\n[[B]]", "B"),          # a [[X]] marker is a verdict anywhere
    ("B", "B"),                               # a bare choice after the reasoning's prose
])
def test_an_explicit_verdict_on_the_last_line_still_reads(end: str, want: str) -> None:
    assert parse_choice(R + end) == want


def test_a_bare_last_line_still_contradicts_an_opening_verdict() -> None:
    # not read as the end's verdict, but still a second choice against the opening's
    assert parse_choice("A\n" + R + "Worse output:\nOutput (b)") is None
    assert parse_choice("A\nB") is None


# ---- 2. the whole last line is read, not its first clause -----------------------------------

@pytest.mark.parametrize("end", [
    "B is better? No, the first one is.",
    "Output (a) is better, said the user, but I disagree.",
    "Output (b) is better, but only for formatting.",
    "Output (b) wins, if we ignore accuracy. Since accuracy matters most, that changes "
    "things.",
    "Final verdict: B, but only for formatting.",
    "Verdict: B? No, the first one is.",
    "Final verdict:\nOutput (b), unless accuracy matters.",
])
def test_a_last_line_turned_after_its_first_clause_stays_invalid(end: str) -> None:
    assert parse_choice(R + end) is None
    assert parse_choice(R + end, allow_tie=True) is None


@pytest.mark.parametrize(("end", "want"), [
    ("Output (b) is better because it answers the question.", "B"),
    ("Final verdict: Output (a), as it answers the question.", "A"),
    ("Therefore, Output (a) is better.", "A"),
])
def test_a_last_line_with_only_a_reason_after_it_still_reads(end: str, want: str) -> None:
    assert parse_choice(R + end) == want


# ---- 3. per-criterion winners and restricted conclusions ------------------------------------

@pytest.mark.parametrize("text", [
    "**Accuracy**\nOutput (a) is better.\n\n**Conciseness**\nOutput (b) is better.",
    R + "Output (a) is better.\n\nTherefore, Output (b) is better.",
    R + "Considering only style, Output (b) is better.",
    R + "Based on conciseness alone, Output (b) is better.",
    R + "Therefore, judging solely by length, Output (b) is better.",
])
def test_a_per_criterion_or_restricted_verdict_stays_invalid(text: str) -> None:
    assert parse_choice(text) is None
    assert parse_choice(text, allow_tie=True) is None


def test_verdict_sentences_that_agree_still_read() -> None:
    text = ("**Accuracy**\nOutput (b) is better.\n\n**Conciseness**\nOutput (b) is better.\n\n"
            "Therefore, Output (b) is better.")
    assert parse_choice(text) == "B"
    assert parse_choice(R + "Considering the instruction, Output (a) is better.") == "A"


# ---- linear time on the new paths -----------------------------------------------------------

def test_long_last_lines_and_many_verdict_sentences_read_in_linear_time() -> None:
    start = time.perf_counter()
    assert parse_choice(R + "Verdict:\n" + "B" + ", but x" * 50_000) is None
    assert parse_choice(R + "Output (a) is better. " * 20_000 + "\nOutput (b)") is None
    assert parse_choice(R + "Output (b), " * 20_000 + ":") is None
    assert parse_choice(R + "Output (b) is better, " * 20_000 + "but") is None
    assert time.perf_counter() - start < 4.0
