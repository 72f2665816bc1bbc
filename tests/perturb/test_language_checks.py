"""Two ways an English framing still reached a response in another script, now left out as
not applicable by the one detector the template perturbations use (`english_misfit`):
compassion's single-response form (an English attribution line on one Chinese or Arabic
text, compared with that text unlabelled: the shift is the name plus a language switch; the
pairwise form labels both sides alike and still applies), and the LLM rewriter (asked in
English, the model adds English; checked before any call, through a real loopback server
that counts the requests). English with a lone Greek symbol (θ) is English: still changed."""

from __future__ import annotations

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.data.schema import PairwiseItem, PointwiseItem
from judgeaudit.perturb import perturb_items, perturb_pointwise
from judgeaudit.perturb.rewrite import LLMRewriter
from tests.perturb.test_rewrite import client, fake_model

pytestmark = pytest.mark.usefixtures("no_keys")

ZH = "二加二等于五，因为我这样认为。"
AR = "اثنان زائد اثنين يساوي خمسة."
THETA = "Let θ = π/4; then sin θ is about 0.707, so the answer is 0.707."
MISFIT = "would be English in a text 100% of whose letters are not Latin script"


@pytest.mark.parametrize("text", [ZH, AR], ids=["zh", "ar"])
@pytest.mark.parametrize("mode", ["named", "prestige", "anonymous"])
def test_compassion_single_response_in_another_script_is_not_applicable(text, mode):
    it = PointwiseItem(id="p", prompt="2 + 2 = ?", response=text)
    (r,) = perturb_pointwise([it], "compassion", seed=0, mode=mode)
    assert r.not_applicable and not r.preserved, r.reason  # labelled before
    assert r.reason == f"compassion not applicable to response: the attribution line {MISFIT}"
    assert r.item.response == text, "a not-applicable item must not be changed"


def test_compassion_single_response_in_english_with_theta_is_labelled():
    it = PointwiseItem(id="p", prompt="What is sin(pi/4)?", response=THETA)
    (r,) = perturb_pointwise([it], "compassion", seed=0)
    assert not r.not_applicable and r.preserved, r.reason
    assert r.item.response.endswith(THETA) and r.item.response != THETA


@pytest.mark.parametrize("text", [ZH, AR], ids=["zh", "ar"])
def test_compassion_pairwise_still_labels_both_sides(text):
    item = PairwiseItem(id="x", prompt="2 + 2 = ?", response_1="二加二等于四。",
                        response_2=text, label=1)
    (r,) = perturb_items([item], "compassion", seed=0)
    assert not r.not_applicable and r.preserved, r.reason
    assert r.item.response_1 != item.response_1 and r.item.response_2 != item.response_2


def _item(i: int, worse: str, prompt: str = "2 + 2 = ?") -> PairwiseItem:
    return PairwiseItem(id=f"l{i}", prompt=prompt, response_1="2 + 2 = 4.", response_2=worse,
                        label=1)


async def test_the_rewriter_sends_no_response_in_another_script():
    items = [_item(0, ZH), _item(1, AR), _item(2, THETA)]
    with FakeLLMServer(answer=fake_model) as srv:
        c = client(srv)
        rs = await LLMRewriter(c).perturb(items, "confidence", level=3)
        await c.aclose()
        sent = srv.count()
    assert sent == 1  # only the English one; 3 before
    zh, ar, theta = rs
    for r, text in ((zh, ZH), (ar, AR)):
        assert r.not_applicable and not r.preserved
        assert r.reason == ("rewrite not applicable to response_2: what the rewrite adds "
                            f"(asked for in English) {MISFIT}")
        assert r.item.response_2 == text and r.variant == "confidence:level3"
    assert not theta.not_applicable and theta.preserved, theta.reason
    assert theta.item.response_2 == "I am certain. " + THETA


async def test_the_rewriter_still_rewrites_a_prompt_in_another_script():
    """Both responses are judged against the prompt alike, as for bandwagon's."""
    with FakeLLMServer(answer=fake_model) as srv:
        c = client(srv)
        (r,) = await LLMRewriter(c).perturb([_item(0, "2 + 2 = 5.", prompt="二加二等于几？")],
                                            "confidence", target="prompt")
        await c.aclose()
        assert srv.count() == 1
    assert not r.not_applicable and r.preserved, r.reason
