"""A JSON verdict (score) with prose around it, and JSON that holds a second verdict inside.

Judges often write one JSON verdict and then (or before it) a sentence; that answer holds
one verdict and reads. It must stay the only verdict: a second JSON object, a second fence,
or prose the plain-text rule reads as another choice (score) make the answer unreadable, and
so does a verdict-like key nested anywhere in the object naming something else, or a value
spanning two lines. Nothing is coerced."""

import pytest

from judgeaudit.judges.parse import parse_choice, parse_score

F = "```"

# ---- choices: one JSON verdict with prose around it reads ----------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    # the forms a regression tester (t-regress) found unreadable
    ('{"verdict": "A"}\nBecause A is more accurate.', "A"),
    (f'Sure!\n{F}json\n{{"verdict": "B"}}\n{F}', "B"),
    (f'{F}json\n{{"verdict": "A"}}\n{F}\nExplanation: A is right.', "A"),
    (f'{F}json\n{{"verdict": "A"}}{F}', "A"),                  # closing fence on its line
    # more of the same shape
    ('Here is my verdict:\n{"verdict": "B"}', "B"),
    ('Here is my verdict:\n{\n  "verdict": "B",\n  "reason": "shorter"\n}\nDone.', "B"),
    (f'Here is my verdict: {F}json\n{{"verdict": "A"}}\n{F}', "A"),  # prose before the fence
    (f'{F}json\n{{"verdict": "B"}}\n{F}\n\nB cites its source; A does not.', "B"),
    ('{"winner": "Response B"}\nThe second response is correct.', "B"),
    ('<think>A or B?</think>\nMy answer:\n{"verdict": "A"}\nA is right.', "A"),
    ('{"verdict": "tie"}\nBoth are equally good.', "tie"),
])
def test_one_json_verdict_with_prose_around_it_is_read(text, expected):
    assert parse_choice(text, allow_tie=True) == expected


# ---- choices: refused ---------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    # a second verdict somewhere: JSON, fence or prose the plain rule reads
    '{"verdict": "A"}\nB',
    '{"verdict": "A\\n"}\nB',                                 # (one line once trimmed)
    'B\n{"verdict": "A"}',
    '{"verdict": "A"}\nResponse B',
    '{"verdict": "A"}\nb',
    f'{F}json\n{{"verdict": "A"}}\n{F}\nB is better.',
    '{"verdict": "A"}\nSome text.\n{"verdict": "B"}',          # two objects
    '{"verdict": "A"}\nSome text.\n{"verdict": "A"}',          # two objects, even agreeing
    '{"verdict": "A"}\n{"note": "x"}',                        # two objects
    f'{F}json\n{{"verdict": "A"}}\n{F}\nText.\n{F}json\n{{"verdict": "A"}}\n{F}',  # two fences
    f'{F}json\n{{"verdict": "A"}}\n{F}\n{F}python\nprint(1)\n{F}',  # a second fence
    f'{F}json\n{{"verdict": "A"}}\n{F}\n{{"verdict": "A"}}',   # a fence and a bare object
    f'{F}json\n{{"verdict": "A"}}',                            # a fence never closed
    # JSON inside prose on its line: prose before must be a fence or a line break
    'Here is my verdict: {"verdict": "B"}',
    '{"verdict": "A"} I chose A.',
    f'{F}json\n{{"verdict": "A"}}{F} but B is close',
    # a JSON verdict that is itself unreadable stays so with prose around it
    '{"verdict": "A or B"}\nHard to say.',
    '{"verdict": "A", "winner": "B"}\nExplanation.',
    '{"verdict": "A"\nExplanation.',                           # broken JSON
])
def test_a_json_verdict_with_a_second_verdict_around_it_is_refused(text):
    assert parse_choice(text, allow_tie=True) is None


@pytest.mark.parametrize("text", [
    # a verdict-like key nested inside naming another choice (t-regress found these coerced)
    '{"analysis": {"verdict": "B"}, "verdict": "A"}',
    '{"verdict": "A", "explanation": {"verdict": "B"}}',
    '{"verdict": "A", "steps": [{"winner": "B"}]}',
    '{"verdict": "A", "details": {"result": "correct"}}',     # nested, names no choice
    '{"verdict": "A", "x": {"y": {"winner": "B"}}}',
    # a value spanning two lines
    '{"verdict": "A\\nB"}',
    '{"verdict": "A\\r\\nexplained"}',
])
def test_json_with_a_nested_or_multi_line_verdict_is_refused(text):
    assert parse_choice(text, allow_tie=True) is None


def test_prose_or_nested_keys_naming_the_same_verdict_still_read():
    # these read on the old code too (by the first line, or ignoring the nested key)
    assert parse_choice('A is better.\n{"verdict": "A"}') == "A"
    assert parse_choice('{"verdict": "A", "explanation": {"verdict": "A"}}') == "A"
    assert parse_score('Score: 4\n{"score": 4}') == 4
    assert parse_score('{"score": 4, "criteria": {"score": 4}}') == 4


def test_json_in_prose_that_holds_no_verdict_leaves_the_plain_reading():
    # an answer that only shows some JSON reads by its first line, as before
    assert parse_choice('A\n{"example": 1}') == "A"
    assert parse_choice(f'B\n{F}python\nd = {{"x": 1}}\n{F}') == "B"
    assert parse_choice('A\nThe JSON: {"verdict": "B"}') == "A"  # not on its own line


# ---- scores -------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ('{"score": 4}\nGood answer, one small slip.', 4),
    (f'Here is my rating:\n{F}json\n{{"score": 3}}\n{F}', 3),
    (f'{F}json\n{{"score": 5}}\n{F}\nFeedback: complete and correct.', 5),
    (f'{F}json\n{{"rating": 2}}{F}', 2),
])
def test_one_json_score_with_prose_around_it_is_read(text, expected):
    assert parse_score(text) == expected


@pytest.mark.parametrize("text", [
    '{"score": 4}\n3',                                        # prose read as another score
    'Score: 2\n{"score": 4}',
    '{"score": 4}\n{"score": 4}',                             # two objects
    f'{F}json\n{{"score": 4}}\n{F}\n{F}json\n{{"score": 4}}\n{F}',
    'My score: {"score": 4}',
    '{"score": 4} out of 5',
    '{"rating": {"score": 3}, "score": 4}',                  # a score key holding an object
])
def test_a_json_score_with_a_second_score_is_refused(text):
    assert parse_score(text) is None


@pytest.mark.parametrize("text", [
    # nested score-like keys naming another score; a value on two lines (t-regress: coerced)
    '{"score": 4, "criteria": [{"name": "accuracy", "score": 5}]}',
    '{"score": 4, "details": {"rating": 2}}',
    '{"score": "4\\n3"}',
])
def test_a_json_score_with_a_nested_or_multi_line_score_is_refused(text):
    assert parse_score(text) is None


@pytest.mark.parametrize("text", [
    '{"a":' * 5000 + '1' + '}' * 5000,                        # deeper than json reads
    'Sure:\n' + '{"verdict":' * 5000 + '"A"' + '}' * 5000,
    '{"verdict": "A", "x": ' + '[' * 3000 + ']' * 3000 + '}',
])
def test_json_nested_too_deep_is_refused_not_a_crash(text):
    # the old code raised RecursionError out of the judge on such an answer
    assert parse_choice(text) is None
    assert parse_score(text) is None


async def test_a_judge_on_a_real_server_answering_json_with_prose_gets_every_verdict_read():
    """A server answering as chat models often do (a ```json verdict, then a sentence; or a
    sentence, then the bare object): the pairwise judge reads every answer in both orders.
    On the old code one such answer form gave no verdict at all."""
    from fakeserver import FakeLLMServer

    from judgeaudit.data import PairwiseItem
    from judgeaudit.judges.pairwise import PairwiseJudge
    from judgeaudit.llm import Client, make_provider

    def json_with_prose(prompt: str) -> str:
        first_good = prompt.index("Response A") < prompt.index("GOOD")
        first_good = first_good and prompt.index("GOOD") < prompt.index("Response B")
        pick = "A" if first_good else "B"
        if "<<GOOD>> 0" in prompt or "<<GOOD>> 2" in prompt:
            return f'{F}json\n{{"verdict": "{pick}"}}\n{F}\nExplanation: {pick} is right.'
        return f'Sure! Here is my verdict:\n{{"verdict": "{pick}"}}'

    items = [PairwiseItem(id=f"r{i}", prompt=f"q{i}", response_1=f"yes <<GOOD>> {i}",
                          response_2=f"no {i}", label=1) for i in range(4)]
    with FakeLLMServer(answer=json_with_prose, logprobs=False) as srv:
        client = Client(make_provider("openai", "m", {"base_url": srv.openai_url,
                                                      "api_key": "k"}))
        verdicts = await PairwiseJudge(client).judge(items)
        await client.aclose()
    assert [v.winner for v in verdicts] == [1, 1, 1, 1]
    assert all(o.valid for v in verdicts for o in v.orders)
