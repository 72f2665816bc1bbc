"""A judge whose probabilities and answer text name different responses: the probabilities
give the verdict (as before) and the disagreement is recorded per order and counted in the
evaluate summary with its n. Also: JSON and lower-case answers read end to end."""

import json

from fakeserver import FakeLLMServer, default_answer

from judgeaudit.audit.evaluate import summarize
from judgeaudit.data import PairwiseItem, PointwiseItem
from judgeaudit.judges.binary import BinaryJudge
from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.llm import Client, Response, make_provider

ITEMS = [PairwiseItem(id=f"t{i}", prompt=f"q{i}", response_1=f"yes <<GOOD>> {i}",
                      response_2=f"no {i}", label=1) for i in range(6)]


def _client(srv: FakeLLMServer) -> Client:
    return Client(make_provider("openai", "m", {"base_url": srv.openai_url, "api_key": "k"}))


def test_read_records_what_the_text_said_when_probs_decide():
    # text B, probabilities A: the verdict stays A, the disagreement is kept
    v = PairwiseJudge.read("12", Response(text="B", probs={"A": 0.7, "B": 0.3}))
    assert v.choice == "A" and v.winner == 1 and v.p_first == 0.7
    assert v.text_choice == "B" and v.text_disagrees is True
    agree = PairwiseJudge.read("12", Response(text=" A", probs={"A": 0.7, "B": 0.3}))
    assert agree.text_choice == "A" and agree.text_disagrees is False
    # an unreadable text is no disagreement (nothing definite to disagree with)
    prose = PairwiseJudge.read("12", Response(text="Hmm", probs={"A": 0.7, "B": 0.3}))
    assert prose.text_choice is None and prose.text_disagrees is False and prose.valid
    # text only: nothing to compare
    text_only = PairwiseJudge.read("12", Response(text="B"))
    assert text_only.text_choice is None and text_only.text_disagrees is False
    # a tie in the text is a definite answer the probabilities overrule
    tie = PairwiseJudge.read("21", Response(text="tie", probs={"A": 0.4, "B": 0.6}))
    assert tie.choice == "B" and tie.text_choice == "tie" and tie.text_disagrees is True
    # the template's own labels
    num = PairwiseJudge.read("12", Response(text="2", probs={"1": 0.8, "2": 0.2}), ("1", "2"))
    assert num.choice == "A" and num.text_choice == "B" and num.text_disagrees


async def test_logprobs_that_disagree_with_the_text_are_counted_on_a_real_server():
    """The server samples the GOOD response's letter (the text) while its top logprobs put
    more mass on the other letter (confidence 0.3 on the sampled token, 0.56 on the other):
    every order's verdict follows the logprobs, and every one is counted as disagreeing."""
    with FakeLLMServer(confidence=0.3) as srv:
        client = _client(srv)
        verdicts = await PairwiseJudge(client).judge(ITEMS)
        await client.aclose()
    orders = [o for v in verdicts for o in v.orders]
    assert len(orders) == 12 and all(o.p_first is not None for o in orders)
    # probabilities win: every order names the response without the marker
    assert [v.winner for v in verdicts] == [2] * 6
    assert all(o.text_disagrees and o.text_choice != o.choice for o in orders)
    s = summarize(ITEMS, verdicts, kappa_boot=0)
    assert s["text_vs_probs"]["n_disagree"] == 12 and s["text_vs_probs"]["n"] == 12
    assert s["text_vs_probs"]["rate"]["n"] == 12 and s["text_vs_probs"]["rate"]["value"] == 1.0
    assert s["text_vs_probs"]["examples"][0]["text_choice"] in ("A", "B")
    assert s["n_invalid"] == 0
    # the verdict documents carry the flag
    doc = verdicts[0].as_dict()["orders"][0]
    assert doc["text_disagrees"] is True and doc["text_choice"] in ("A", "B")


async def test_logprobs_that_agree_count_zero_and_numbers_stay_the_same():
    with FakeLLMServer(confidence=0.9) as srv:
        client = _client(srv)
        verdicts = await PairwiseJudge(client).judge(ITEMS)
        await client.aclose()
    assert [v.winner for v in verdicts] == [1] * 6
    s = summarize(ITEMS, verdicts, kappa_boot=0)
    assert s["text_vs_probs"]["n_disagree"] == 0 and s["text_vs_probs"]["n"] == 12
    assert s["accuracy"]["value"] == 1.0


async def test_text_only_judges_have_no_probs_to_compare():
    with FakeLLMServer(logprobs=False) as srv:
        client = _client(srv)
        verdicts = await PairwiseJudge(client).judge(ITEMS)
        await client.aclose()
    s = summarize(ITEMS, verdicts, kappa_boot=0)
    assert s["text_vs_probs"]["n"] == 0 and s["text_vs_probs"]["n_disagree"] == 0
    assert s["text_vs_probs"]["rate"]["value"] is None


async def test_json_and_lower_case_answers_are_read_end_to_end():
    """A chat model answering in JSON (fenced or not) or with a bare lower-case letter gets
    its verdicts read in both orders; before, every one was an invalid verdict."""
    forms = iter([
        lambda x: "```json\n" + json.dumps({"verdict": x}) + "\n```",
        lambda x: json.dumps({"winner": x, "reason": "the other one is wrong"}),
        lambda x: x.lower(),
    ] * 4)

    def answer(prompt: str) -> str:
        return next(forms)(default_answer(prompt))

    with FakeLLMServer(answer=answer, logprobs=False) as srv:
        client = _client(srv)
        verdicts = await PairwiseJudge(client).judge(ITEMS)
        await client.aclose()
    assert [v.winner for v in verdicts] == [1] * 6
    assert all(o.valid for v in verdicts for o in v.orders)


async def test_binary_json_verdicts_are_read_end_to_end():
    answers = {"r0": '{"verdict": "PASS"}', "r1": '```json\n{"result": "fail"}\n```',
               "r2": '{"verdict": "PASS", "label": "FAIL"}', "r3": "pass"}
    items = [PointwiseItem(id=f"b{k}", prompt="2+2?", response=f"answer {k}") for k in answers]

    def answer(prompt: str) -> str:
        return next(a for k, a in answers.items() if f"answer {k}" in prompt)

    with FakeLLMServer(answer=answer, logprobs=False) as srv:
        client = _client(srv)
        got = await BinaryJudge(client).judge(items)
        await client.aclose()
    assert [v.passed for v in got] == [True, False, None, True]


def test_the_count_and_its_n_by_hand():
    """Three items: both orders from probabilities, one overruled; one order from
    probabilities (overruled) and one from text; text only. n = 3 read from probabilities,
    2 of them against their text."""
    from judgeaudit.audit.metrics import text_vs_probs
    from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict

    def ov(order, choice, text_choice=None, p=0.6):
        return OrderVerdict(order, "x", choice, 1, p_first=p, text_choice=text_choice)

    verdicts = [
        PairwiseVerdict("i1", [ov("12", "A", "B"), ov("21", "B", "B")]),
        PairwiseVerdict("i2", [ov("12", "A", "tie"), ov("21", "B", None, p=None)]),
        PairwiseVerdict("i3", [ov("12", "A", None, p=None), ov("21", "B", None, p=None)]),
    ]
    got = text_vs_probs(verdicts)
    assert (got["n_disagree"], got["n"]) == (2, 3)
    assert abs(got["rate"]["value"] - 2 / 3) < 1e-12 and got["rate"]["n"] == 3
    assert [(e["item_id"], e["text_choice"]) for e in got["examples"]] == [("i1", "B"),
                                                                          ("i2", "tie")]
