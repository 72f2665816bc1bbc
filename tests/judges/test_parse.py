import pytest

from judgeaudit.judges.parse import parse_choice, parse_score


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A", "A"), (" B", "B"), ("B.", "B"), ("**A**", "A"), ("[[B]]", "B"),
        ("Response A", "A"), ("Output (b)", "B"), ("A is better.", "A"),
        ("B\nBecause it is correct.", "B"), ("tie", "tie"), ("Tie.", "tie"),
    ],
)
def test_parse_choice_accepts_clear_verdicts(text, expected):
    assert parse_choice(text, allow_tie=True) == expected


@pytest.mark.parametrize(
    "text",
    ["", "   ", "C", "A or B", "A and B are both fine", "Both", "Neither", "a tie",
     "I cannot decide", "The answer is clear", "AB"],
)
def test_parse_choice_rejects_everything_else(text):
    assert parse_choice(text, allow_tie=True) is None


def test_tie_is_invalid_when_not_allowed():
    assert parse_choice("tie", allow_tie=False) is None


@pytest.mark.parametrize(
    ("text", "ids", "expected"),
    [
        ("4", ("1", "2", "3", "4", "5"), 4), ("Score: 2", ("1", "2", "3", "4", "5"), 2),
        ("**5**", ("1", "2", "3", "4", "5"), 5), ("3/5", ("1", "2", "3", "4", "5"), 3),
        ("B", ("E", "D", "C", "B", "A"), 4), ("iv", ("i", "ii", "iii", "iv", "v"), 4),
        ("IV", ("i", "ii", "iii", "iv", "v"), 4),
    ],
)
def test_parse_score_maps_ids_back_to_1_to_5(text, ids, expected):
    assert parse_score(text, ids) == expected


@pytest.mark.parametrize("text", ["", "6", "0", "four", "3 or 4", "5.5", "0.5", "Score: high",
                                  "3/10", "4.5/10"])
def test_parse_score_rejects_non_scores(text):
    assert parse_score(text) is None


@pytest.mark.parametrize(("text", "expected"), [("3.5", 3.5), ("Score: 4.5", 4.5),
                                                ("2.0", 2), ("1.25/5", 1.25)])
def test_parse_score_takes_decimals_within_a_numeric_scale(text, expected):
    assert parse_score(text) == expected


def test_decimals_need_numeric_ids():
    assert parse_score("3.5", ("i", "ii", "iii", "iv", "v")) is None
    assert parse_score("3.5", ("E", "D", "C", "B", "A")) is None


# ---- reasoning models: thinking before the verdict ------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("<think>\nA is longer, but B answers the question.\n</think>\n\nB", "B"),
    ("<thinking>Both fine? No: A.</thinking>A", "A"),
    # the chat template opened the block in the prompt: only its close is in the answer
    ("Okay, the user wants... A cites a source, B does not.\n</think>\n\n**A**", "A"),
    ("<think>hmm</think>\nTie.", "tie"),
])
def test_a_verdict_after_a_closed_thinking_block_is_read(text, expected):
    assert parse_choice(text, allow_tie=True) == expected


@pytest.mark.parametrize("text", [
    "<think>\nA is longer, but",              # cut off while thinking: no verdict
    "<think>A</think>\nA or B",               # after the block, still strict
    "<think>B is right</think>",              # nothing after the block
])
def test_thinking_is_never_read_as_the_verdict(text):
    assert parse_choice(text, allow_tie=True) is None


def test_a_score_after_a_closed_thinking_block_is_read():
    assert parse_score("<think>3 or 4? The answer has one error.</think>\n4") == 4
    assert parse_score("<think>It deserves a 5") is None


def test_a_verdict_cut_off_while_thinking_says_so():
    from judgeaudit.judges.parse import invalid_reason
    from judgeaudit.llm import Response

    why = invalid_reason(Response(text="<think>\nLet me compare the two responses"), False)
    assert why is not None and why.startswith("reasoning cut off before a verdict")
    assert "turn its thinking off" in why
    assert invalid_reason(Response(text="C"), False).startswith("unparseable answer")


async def test_a_reasoning_judge_on_a_real_server_gets_its_verdicts_read():
    """A server answering as a reasoning model does (thinking, then the letter): the pairwise
    judge reads the letter after the thinking in both orders."""
    from fakeserver import FakeLLMServer

    from judgeaudit.data import PairwiseItem
    from judgeaudit.judges.pairwise import PairwiseJudge
    from judgeaudit.llm import Client, make_provider

    def think_then_answer(prompt: str) -> str:
        first_good = prompt.index("Response A") < prompt.index("GOOD")
        first_good = first_good and prompt.index("GOOD") < prompt.index("Response B")
        return "<think>\nB looks longer; A is right.\n</think>\n\n" + ("A" if first_good else "B")

    items = [PairwiseItem(id=f"r{i}", prompt=f"q{i}", response_1=f"yes <<GOOD>> {i}",
                          response_2=f"no {i}", label=1) for i in range(4)]
    with FakeLLMServer(answer=think_then_answer, logprobs=False) as srv:
        client = Client(make_provider("openai", "m", {"base_url": srv.openai_url,
                                                      "api_key": "k"}))
        verdicts = await PairwiseJudge(client).judge(items)
        await client.aclose()
    assert [v.winner for v in verdicts] == [1, 1, 1, 1]
    assert all(o.valid for v in verdicts for o in v.orders)
