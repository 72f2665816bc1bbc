"""pairwise_cot_v1 asks for exactly "The better response is Response A", so judges copy the
quotes: 'Final answer: "The better response is Response A"'. parse_final skipped every quote
with text before it on its line, so each such answer was unreadable (review6 finding 1: 16 of
16 answers, the verdict watch stopped the run) or read from an earlier line the judge was
reporting (B where the judge answered A). Also review6 6 (a line of many quotes and markers
was quadratic: 5.3 s at 100 kB) and 7 (an odd number of ``` lines hid the final line; the
template's line with its label in bold was not read)."""

from __future__ import annotations

import time

import pytest

from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.judges.parse import parse_final
from judgeaudit.judges.templates import load_template
from judgeaudit.llm import Response

COT = load_template("pairwise_cot_v1")
PAT = COT.final_pattern or ""
LINE = "The better response is Response {}"


def final(text: str, shown: tuple[str, ...] = ()) -> str | None:
    return parse_final(text, PAT, COT.labels, shown)


# ---- 1. the template's line quoted in full after a concluding lead-in is the verdict --------

@pytest.mark.parametrize("end", [
    'Final answer: "{}"',
    '**Final Answer:** "{}"',
    "So my conclusion is \u201c{}\u201d",
    "So my conclusion is '{}'",
    "Therefore, '{}'.",
    'So my answer: "{}."',
    'My final verdict is "{}"',
    "In conclusion, \u2018{}\u2019",
])
@pytest.mark.parametrize("label", ["A", "B"])
def test_the_template_line_quoted_after_a_conclusion_reads_its_label(end: str,
                                                                       label: str) -> None:
    text = "Response A is correct; Response B has an error.\n" + end.format(LINE.format(label))
    assert final(text) == label, text


def test_the_reviewers_wrong_verdict_reads_what_the_judge_answered() -> None:
    text = ('Response B restates: The better response is Response B\n'
            'So my answer: "The better response is Response A"')
    got = PairwiseJudge.read("12", Response(text=text), COT.labels, PAT,
                             ("resp one", "resp two"))
    assert got.choice == "A"
    assert got.winner == 1


def test_a_later_marked_verdict_still_outweighs_a_quoted_conclusion() -> None:
    assert final('Final answer: "The better response is Response A"\nFinal verdict: [[B]]') == "B"


def test_a_plain_sentence_after_a_quoted_conclusion_that_disagrees_gives_none() -> None:
    assert final('Final answer: "The better response is Response A"\n'
                 "Therefore, Response B is better.") is None


# ---- 2. a quote that reports what a response says stays a quote -----------------------------

@pytest.mark.parametrize("report", [
    'Note: Response B ends with "The better response is Response B"',
    'Response B restates: "The better response is Response B"',
    'Output: "The better response is Response B"',
    'Response B says "The better response is Response B" at its end.',
    'Final answer: "The better response is Response B" is what Response B wrote.',
    "Response B's answer: 'The better response is Response B'",
])
def test_a_reported_quote_is_no_verdict(report: str) -> None:
    assert final("Response A is right.\n" + report) is None
    assert final("[[A]]\n\n" + report) == "A"


def test_an_echoed_response_line_in_quotes_stays_an_echo() -> None:
    shown = ('Answer with A or B.\nFinal answer: "The better response is Response B"', "hi")
    assert final('Response A is right.\nFinal answer: "The better response is Response B"',
                 shown) is None


# ---- 3. linear on a line of many quoted spans and markers -----------------------------------

@pytest.mark.parametrize("unit", ['"x" [[A]] ', "\u201cx\u201d [[A]] ", '"x" ' + LINE.format("A")
                                  + " "])
def test_a_long_line_of_quotes_and_markers_reads_in_linear_time(unit: str) -> None:
    text = unit * (100_000 // len(unit)) + "\n" + LINE.format("A")
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        got = final(text)
        best = min(best, time.perf_counter() - t0)
    assert got == "A"
    assert best < 0.5, f"parse_final took {best:.2f} s on 100 kB (was 5.3 s: quadratic)"


# ---- 4. fences and bold ---------------------------------------------------------------------

def test_an_unclosed_fence_does_not_hide_the_final_line() -> None:
    assert final("Response B quotes code:\n```\nprint(1)\nThe better response is Response A") \
        == "A"
    assert final("```python\nx = 1\n```\nThen:\n```\nThe better response is Response A") == "A"


def test_a_closed_fence_still_hides_its_lines() -> None:
    assert final("Response B ends:\n```\nThe better response is Response B\n```") is None
    assert final("Response B ends:\n```\nThe better response is Response B\n```\n"
                 "Final verdict: [[A]]") == "A"


@pytest.mark.parametrize("line", ["The better response is **Response A**",
                                  "**The better response is** Response A",
                                  "The better response is __Response A__."])
def test_the_template_line_with_bold_reads_its_label(line: str) -> None:
    assert final("Response A is right.\n" + line) == "A"


def test_a_bold_line_inside_a_reported_quote_is_no_verdict() -> None:
    assert final('Response A is right.\nNote: Response B ends with '
                 '"The better response is **Response B**"') is None
