"""A reasoning judge's answer read by its end (reasontest findings 2, 3, 4).

Scores: a reasoning answer that ends "Score: 4", "**Score: 4**", "Final answer: Score: 4" or
"Score: 4" and a remark stays unreadable, counted and shown (parse_score reads the opening).
Reading the last labelled line (df99328) was reverted: a reviewer made it read scores the
judge had withdrawn in another form ("Score: 4 ... Final answer: 2" read 4), scores from an
example or a reference's evaluation, and it backtracked (30 s on a line of spaces).
Verdicts: a content that is only "A" after the provider's reasoning_content was unreadable
under a reasoning template (parse_final). A run stopped for answers that end on the reasoning
template's line under the bare-label template now says to try pairwise_cot_v1; a scorer's
unreadable answers are said to be no score, not no verdict."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.data import PairwiseItem, PointwiseItem
from judgeaudit.judges import PairwiseJudge, RubricJudge
from judgeaudit.judges.parse import parse_final, parse_score, score_off_scale
from judgeaudit.judges.templates import load_template
from judgeaudit.llm import Client, RetryPolicy, make_provider
from judgeaudit.outcome import assess

THINK = ("Let me check the response carefully for correctness and helpfulness. It takes 3 "
         "steps; step 2 is right.\nHmm, at first glance it seems fine, maybe a 2? No.\n\n")

ENDS = [
    ("Score: 4", 4), ("**Score: 4**", 4), ("**Score:** 4", 4), ("Final answer: Score: 4", 4),
    ("Score: 4.\n\nI hope this evaluation helps!", 4), ("**Final score:** 3", 3),
    ("Final score: 4/5", 4), ("Rating: 2 out of 5", 2), ("So, my rating is 5.", 5),
    ("Grade: 1", 1), ("- Score: 4", 4), ("### Final Score: 4", 4), ("Final score: 3.5", 3.5),
    ('Response says "Score: 5" at its end.\n\nScore: 4', 4),
]


@pytest.mark.parametrize(("end", "want"), ENDS)
def test_a_reasoning_answers_closing_score_stays_unread(end: str, want: float) -> None:
    assert parse_score(THINK + end) is None  # invalid and counted, never a guess


@pytest.mark.parametrize("text", [
    "Let me weigh the rubric.\nScore: 4\nHmm, no - it never cites the source.\n\nFinal answer: 2",
    "Let me weigh it.\nScore: 4\nActually it is worse.\n\\boxed{2}",
    "Reference answer evaluation:\nScore: 5\n\nResponse evaluation: it is weak, deserving a two.",
    "The response is weak and deserves a 2.\n\nExample of the required format:\nScore: 3",
    "I would rate this a 2 because of errors.\nOverall rating: 4",
])
def test_a_withdrawn_or_example_score_is_never_read(text: str) -> None:
    assert parse_score(text) is None


def test_long_runs_after_a_lead_in_stay_fast() -> None:
    import time
    t0 = time.perf_counter()
    parse_score("The response is fine.\nOverall" + " " * 20000 + ".")
    parse_score("Analysis\nso" + "*" * 50000 + "x")
    assert time.perf_counter() - t0 < 5  # 30 s and 187 s with df99328's end reader


@pytest.mark.parametrize("end", [
    '"Score: 4"',                                  # a quote, not the judge's line
    "> Score: 4", "```\nScore: 4\n```",          # quoted, fenced
    "> Score: 5\n\nScore: 4",                    # a quoted score that disagrees: none
    "Score: 3\n\nWait, I reconsider.\n\nScore: 4",  # an earlier labelled score disagrees
    "Score: 3 because it is terse.\n\nScore: 4",    # ... also with words after it
    "Score: 4 because it is good",                # more than a score on the line
    "The response takes 4 steps.",                # a number about the answer
    "It deserves a 4.",                           # no label
    "Score: 4 or 5",
])
def test_no_score_from_a_quote_an_unlabelled_number_or_a_disagreement(end: str) -> None:
    assert parse_score(THINK + end) is None


def test_a_heading_word_opening_the_answer_is_not_called_an_off_scale_score() -> None:
    assert parse_score("Analysis\n" + THINK + "**Score:** 4") is None
    assert score_off_scale("Analysis\n" + THINK + "**Score:** 4") is None
    assert parse_score("**Evaluation**\n" + THINK + "Rating: [[3]]") == 3  # a marker


def test_an_answer_read_by_its_opening_reads_as_before() -> None:
    assert parse_score("4\nThe response is clear.") == 4
    assert parse_score("4\nRating: [[3]]") is None
    assert parse_score("Rating: [[4]]\n" + THINK + "Score: 2") is None


PATTERN = load_template("pairwise_cot_v1").final_pattern or ""


@pytest.mark.parametrize(("text", "want"), [("A", "A"), ("B", "B"), (" B\n", "B"),
                                            ("<think>x</think>\n\nA", "A")])
def test_a_bare_label_as_the_whole_content_reads(text: str, want: str) -> None:
    assert parse_final(text, PATTERN) == want


@pytest.mark.parametrize("text", ["C", "a", "A B", "A.\nB", "Both", ""])
def test_anything_but_one_label_alone_stays_unread(text: str) -> None:
    assert parse_final(text, PATTERN) is None


@pytest.fixture
def server() -> Iterator[list[FakeLLMServer]]:
    started: list[FakeLLMServer] = []
    yield started
    for s in started:
        s.stop()


def _client(started: list[FakeLLMServer], answer: str) -> Client:
    srv = FakeLLMServer(answer=answer).start()
    started.append(srv)
    p = make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k",
                                         "logprobs": "off"})
    return Client(p, None, retry=RetryPolicy(max_retries=1, base_delay=0.01), concurrency=1)


PAIRS = [PairwiseItem(id=f"p{i}", prompt=f"question {i}", response_1=f"one {i}",
                      response_2=f"two {i}") for i in range(12)]
POINTS = [PointwiseItem(id=f"s{i}", prompt=f"question {i}", response=f"answer {i}")
          for i in range(20)]


async def test_the_watch_suggests_the_reasoning_template_for_reasoned_answers(server) -> None:
    client = _client(server, THINK + 'Final answer: "The better response is Response B"')
    verdicts = await PairwiseJudge(client, "pairwise_v1").judge(PAIRS)
    assert all(v.winner is None for v in verdicts)
    assert client.stopped is not None and "try template=pairwise_cot_v1" in client.stopped
    assert "could not be read as verdicts" in client.stopped
    assert "try template=pairwise_cot_v1" in (client.stats.first_unreadable or "")
    assert 'ends "The better response is Response B"' in client.stopped


async def test_no_such_hint_for_prose_or_under_the_reasoning_template(server) -> None:
    prose = _client(server, THINK + "Both have merits.")
    await PairwiseJudge(prose, "pairwise_v1").judge(PAIRS)
    assert prose.stopped is not None and "pairwise_cot_v1" not in prose.stopped
    # read under pairwise_cot_v1 itself, an answer it cannot read gets no hint to use it
    cot = _client(server, THINK + "The better response is Response B\n\nBoth are equally good.")
    await PairwiseJudge(cot, "pairwise_cot_v1").judge(PAIRS)
    assert cot.stats.first_unreadable is not None
    assert "pairwise_cot_v1" not in cot.stats.first_unreadable


async def test_a_scorers_unreadable_answers_are_said_to_be_no_scores(server) -> None:
    client = _client(server, THINK + "Overall decent.")
    scores = await RubricJudge(client).score(POINTS)
    assert all(s.score is None for s in scores)
    assert client.stopped is not None and "could not be read as scores" in client.stopped
    run = assess(n_valid=0, n_planned=20, calls=client.stats.as_dict(), what="scores")
    assert "answers could not be read as a score (" in run["message"]
    run = assess(n_valid=0, n_planned=20, calls=client.stats.as_dict(), what="items")
    assert "answers could not be read as a verdict (" in run["message"]


async def test_a_reasoning_scorer_over_http_is_counted_unreadable(server) -> None:
    client = _client(server, THINK + "**Score: 4**\n\nI hope this helps!")
    scores = await RubricJudge(client).score(POINTS[:3])
    assert [s.score for s in scores] == [None, None, None]
    assert client.stats.unreadable == 3
