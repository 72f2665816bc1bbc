"""Consensus, order mapping and invalid handling of pairwise verdicts (pure logic)."""

from judgeaudit.data import PairwiseItem
from judgeaudit.data.slots import SLOTS_KEY, LetterSlots
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseJudge, PairwiseVerdict, to_canonical
from judgeaudit.llm import CallFailed, Response

ITEM = PairwiseItem(id="x:1", prompt="2+2?", response_1="4", response_2="5", label=1,
                    quality=(1.0, 0.0))


def test_presented_labels_map_back_to_canonical_responses():
    assert to_canonical("A", "12") == 1 and to_canonical("B", "12") == 2
    assert to_canonical("A", "21") == 2 and to_canonical("B", "21") == 1
    assert to_canonical("tie", "21") == 0 and to_canonical(None, "12") is None


def test_request_shows_responses_in_the_asked_order():
    judge = PairwiseJudge(client=None)  # request() does not touch the client
    r12, r21 = judge.request(ITEM, "12"), judge.request(ITEM, "21")
    assert r12.meta["shown"] == ["4", "5"] and r21.meta["shown"] == ["5", "4"]
    assert r21.meta["quality"] == [0.0, 1.0]
    user = r21.messages[1].content
    assert user.index("Response A:\n5") < user.index("Response B:\n4")
    assert r12.prefill == "The better response is Response" and r12.choices == ("A", "B")


def _ov(order, choice):
    return OrderVerdict(order, raw=choice or "??", choice=choice,
                        winner=to_canonical(choice, order))


def test_consensus_agree_disagree_and_invalid():
    agree = PairwiseVerdict("x", [_ov("12", "A"), _ov("21", "B")])
    assert agree.winner == 1 and agree.consistent is True
    position_biased = PairwiseVerdict("x", [_ov("12", "A"), _ov("21", "A")])
    assert position_biased.winner == 0 and position_biased.consistent is False
    invalid = PairwiseVerdict("x", [_ov("12", "A"), _ov("21", None)])
    assert invalid.winner is None and invalid.consistent is False


def test_read_uses_probabilities_and_keeps_them():
    v = PairwiseJudge.read("21", Response(text="A", probs={"A": 0.8, "B": 0.2}))
    assert v.choice == "A" and v.winner == 2 and v.p_first == 0.8


def test_read_never_coerces_garbage_or_failures():
    garbage = PairwiseJudge.read("12", Response(text="Both are good"))
    assert garbage.winner is None and garbage.raw == "Both are good"
    failed = PairwiseJudge.read("12", CallFailed("gave up", fatal=False))
    assert failed.winner is None and failed.error == "gave up"


def test_p1_averages_orders_so_position_cancels():
    v = PairwiseVerdict("x", [
        OrderVerdict("12", "A", "A", 1, p_first=0.9),
        OrderVerdict("21", "A", "A", 2, p_first=0.7),
    ])
    # P(resp1) = (0.9 + (1 - 0.7)) / 2
    assert abs(v.p1 - 0.6) < 1e-12


def test_single_order_mode_picks_a_seeded_random_order_per_item():
    judge = PairwiseJudge(client=None, both_orders=False, seed=3)
    items = [ITEM.model_copy(update={"id": f"x:{i}"}) for i in range(200)]
    orders = [judge.orders_for(it)[0] for it in items]
    assert orders == [judge.orders_for(it)[0] for it in items]
    assert 60 < orders.count("12") < 140


def test_letter_slots_are_filled_per_presentation_order():
    # the slots of a perturbation (an item marked with LetterSlots; since bfc4e1d a data
    # item's literal "<<LETTER:...>>" is left as written: tests/data/test_slots_data_text.py)
    item = ITEM.model_copy(update={
        "prompt": "2+2? 90% of people believe Response <<LETTER:response_2>> is better.",
        "metadata": {**ITEM.metadata, SLOTS_KEY: LetterSlots()}})
    judge = PairwiseJudge(client=None)
    assert "Response B is better" in judge.request(item, "12").meta["prompt"]
    assert "Response A is better" in judge.request(item, "21").meta["prompt"]
    assert "<<LETTER" not in judge.request(item, "21").messages[1].content


def test_numeric_labels_map_to_presented_positions():
    from judgeaudit.judges.templates import load_template, parse_template
    base = load_template("pairwise_v1")
    text = (f"### system\n{base.system}\n### user\n"
            + base.user.replace("Response A", "Response 1").replace("Response B", "Response 2")
            + "\n### prefill\nThe better response is Response\n### labels\n1, 2\n")
    t = parse_template("numeric", text)
    judge = PairwiseJudge(client=None, template=t)
    req = judge.request(ITEM, "21")
    assert req.choices == ("1", "2") and "Response 1:\n5" in req.messages[1].content
    v = PairwiseJudge.read("21", Response(text="1", probs={"1": 0.7, "2": 0.3}), t.labels)
    assert v.choice == "A" and v.winner == 2
    v = PairwiseJudge.read("12", Response(text="2"), t.labels)
    assert v.winner == 2


def test_reasoning_template_reads_the_last_verdict_line():
    from judgeaudit.judges.templates import load_template
    t = load_template("pairwise_cot_v1")
    judge = PairwiseJudge(client=None, template=t)
    req = judge.request(ITEM, "12")
    assert req.choices == () and req.prefill == "" and req.max_tokens > 100
    text = ("Response A says 4. The better response is Response B? No.\n"
            "The better response is Response A")
    v = PairwiseJudge.read("12", Response(text=text), t.labels, t.final_pattern)
    assert v.winner == 1
    assert PairwiseJudge.read("12", Response(text="I think A."), t.labels,
                              t.final_pattern).winner is None
