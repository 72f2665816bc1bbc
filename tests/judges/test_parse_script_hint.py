"""A judge that answers in another script is told so in the run's error (s44, parsefix7).

"Ответ: B", "回答A更好", "الإجابة A" and "Оценка: 4" stay unreadable: the readers read the
template's Latin labels and ASCII digits only, and a label in another language is not guessed.
But the message naming the first unreadable answer (the verdict watch's stop, the run's
`first_unreadable`) said only "unparseable answer", which does not say what to change. It now
adds that the judge answered in another language and to ask it, in the template, for the label
or the ASCII digits as the template words them. Through a real loopback server."""

from __future__ import annotations

import pytest

from judgeaudit.data import PairwiseItem, PointwiseItem
from judgeaudit.judges import PairwiseJudge, RubricJudge
from tests.judges import test_parse_score_end as _end

# the closing-score tests' loopback server fixture and client, reused as they are
server = _end.server
_client = _end._client


PAIRS = [PairwiseItem(id=f"p{i}", prompt=f"вопрос {i}", response_1=f"один {i}",
                      response_2=f"два {i}") for i in range(12)]
POINTS = [PointwiseItem(id=f"s{i}", prompt=f"вопрос {i}", response=f"ответ {i}")
          for i in range(20)]


@pytest.mark.parametrize(("answer", "script"), [
    ("Ответ: B", "Cyrillic"), ("回答A更好", "CJK"), ("الإجابة A", "Arabic"),
])
async def test_a_verdict_in_another_script_stays_unread_and_the_stop_says_why(
        server, answer: str, script: str) -> None:
    client = _client(server, answer)
    verdicts = await PairwiseJudge(client, "pairwise_v1").judge(PAIRS)
    assert all(v.winner is None for v in verdicts)  # not guessed
    assert client.stopped is not None and "could not be read as verdicts" in client.stopped
    for said in (client.stopped, client.stats.first_unreadable or ""):
        assert f"the judge answered in another language, mostly {script} script" in said
        assert "ask it in the template for the label 'A' or 'B' in Latin letters" in said


async def test_a_score_in_another_script_names_the_ascii_digits(server) -> None:
    client = _client(server, "Оценка: 4")
    scores = await RubricJudge(client).score(POINTS)
    assert all(s.score is None for s in scores)
    assert client.stopped is not None and "could not be read as scores" in client.stopped
    assert "mostly Cyrillic script" in client.stopped
    assert "the score as one of 1, 2, 3, 4, 5 in ASCII digits" in client.stopped
    assert any("another language" in (s.error or "") for s in scores)


@pytest.mark.parametrize("answer", ["Both are good.", "Ответ: B is the better one, since it"
                                    " covers the edge case and A does not"])
async def test_no_language_hint_for_a_mostly_latin_answer(server, answer: str) -> None:
    client = _client(server, answer)
    await PairwiseJudge(client, "pairwise_v1").judge(PAIRS)
    assert client.stopped is not None
    assert "another language" not in client.stopped
