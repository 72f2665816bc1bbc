"""The readers' last silent misreadings (s44 review10): each case here read a label or a score
the judge did not settle on, or left unread an answer whose second verdict was a response's.

1. dbf6ef3 took any line ending with ':' or 'is' as introducing a response's text, so the
   judge's own 'In conclusion:\\nFinal answer: 2' after an opening 4 read 4. Now only a line
   naming a response and how it says it ('The response's last line is:') introduces one.
2. 1e34cc8's parse_final self-correction rule read bullets, fenced and quoted 'Wait,' lines
   and 'Actually, both have issues.' as a retraction of the opening verdict: dropped.
3. 1e34cc8's parse_choice revision reader read a response's blockquoted, fenced or
   introduced 'However, Response B is better.' as the judge's: skipped, as parse_final does.
4. A blockquoted 'Final answer: 2' ('> ' or the full-width '＞') is the judge's own unless
   introduced as a response's: both forms read alike (unread after an opening 4).
"""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_choice, parse_final, parse_score, score_off_scale

PAT = r"The better response is Response ([AB])\W*$"

JUDGES_OWN_LEADS = [
    "Overall:", "In conclusion:", "Conclusion:", "**Conclusion:**", "To summarize:", "Thus:",
    "Based on the above:", "The score is", "Hence the score is",
    "After careful consideration, my final answer is", "My final score, after reflection:",
]


@pytest.mark.parametrize("lead", JUDGES_OWN_LEADS)
@pytest.mark.parametrize("tail", ["Final answer: 2", "\\boxed{2}"])
def test_the_judges_own_lead_in_does_not_hide_its_later_score(lead: str, tail: str) -> None:
    text = f"4\nThe response is clear.\n{lead}\n{tail}"
    got = parse_score(text)
    assert got is None, f"{text!r} read as {got}: the judge's own later score disagrees"
    why = score_off_scale(text)
    assert why is not None and "disagree" in why


@pytest.mark.parametrize("text", [
    "5\nThe response's last line is:\nFinal answer: 3",
    "5\nThe response ends with:\n**Final Answer:** 3",
    "5\nThe response solves the equation step by step and arrives at\n\\boxed{3}",
    "5\nResponse B's answer, verbatim:\nFinal answer: 3",
    "5\nThe student writes:\n\\boxed{3}",
    "5\nIt concludes with:\nFinal answer: 3",
])
def test_a_line_naming_the_response_still_introduces_its_text(text: str) -> None:
    assert parse_score(text) == 5


@pytest.mark.parametrize("text", [
    "The better response is Response B\n- Actually, Response A handles nulls.\n"
    "The better response is Response A",
    "The better response is Response B\n```\nWait, Response A is better.\n```\n"
    "The better response is Response A",
    "The better response is Response B\nResponse B's answer, verbatim:\nWait, actually the "
    "capital is Lyon.\nThe better response is Response A",
    "B\nActually, both have issues.\nThe better response is Response A",
    "The better response is Response B\n\nWait, re-reading: Response B has a factual error.\n\n"
    "The better response is Response A",
])
def test_parse_final_takes_no_line_as_a_retraction(text: str) -> None:
    got = parse_final(text, PAT)
    assert got is None, f"{text!r} read as {got}: an opening B and a last A are not guessed"


def test_parse_final_still_reads_an_agreeing_opening() -> None:
    assert parse_final("B\nActually, both have issues.\nThe better response is Response B",
                       PAT) == "B"


@pytest.mark.parametrize("text", [
    "A\n\nResponse B's self-review:\n> However, Response B is better.",
    "A\n```\nWait, Response B is better.\n```",
    "A\nResponse B ends with this line:\nActually, Response B is better.",
    'A\nResponse B\'s note reads "However, Response B is better."',
])
def test_parse_choice_reads_no_revision_in_a_responses_text(text: str) -> None:
    assert parse_choice(text) == "A"


@pytest.mark.parametrize("text", [
    "A\nHowever, Response B is better.",
    "A\nLet me check once more:\nActually, Response B is better.",
    "I choose **Response A**\nOn reflection, I choose **Response B**",
])
def test_parse_choice_still_leaves_the_judges_own_revision_unread(text: str) -> None:
    assert parse_choice(text) is None


@pytest.mark.parametrize("mark", [">", "\uff1e"])
def test_a_blockquoted_final_answer_reads_alike_in_either_width(mark: str) -> None:
    text = f"Score: 4\n\n{mark} Final answer: 2"
    assert parse_score(text) is None, f"{text!r}: the judge's own final answer disagrees"
    assert parse_score(f"4\nThe response writes:\n{mark} line one\n{mark} Final answer: 12") \
        == 4
