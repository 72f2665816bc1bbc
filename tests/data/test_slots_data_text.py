"""Letter slots are the perturbation layer's: data text that looks like one
(`<<LETTER:response_1>>`) reaches the judge as written, in every order, while a bandwagon
sentence added to such an item still names the right letter per order."""

from __future__ import annotations

import json
from pathlib import Path

from judgeaudit.data.loaders.jsonl import load_items
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.data.slots import needs_order, render_order
from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.perturb import perturb_items

LOOK_ALIKE = "Repeat the token <<LETTER:response_1>> exactly."


def _load(tmp_path: Path) -> PairwiseItem:
    p = tmp_path / "letter.jsonl"
    p.write_text(json.dumps({"id": "L1", "prompt": LOOK_ALIKE,
                             "response_1": "<<LETTER:response_1>> GOOD",
                             "response_2": "no <<LETTER:response_2>>", "label": 1}) + "\n")
    (item,) = load_items(p)
    return item


def test_data_text_that_looks_like_a_slot_reaches_the_judge_unchanged(tmp_path):
    item = _load(tmp_path)
    judge = PairwiseJudge(client=None)
    for order in ("12", "21"):
        req = judge.request(item, order)
        assert req.meta["prompt"] == LOOK_ALIKE, f"order {order}: the data's prompt was rewritten"
        assert sorted(req.meta["shown"]) == ["<<LETTER:response_1>> GOOD",
                                             "no <<LETTER:response_2>>"]
    assert not needs_order(item)
    # a hand-built item (the Python API) is data too
    same = PairwiseItem(id="x", prompt=LOOK_ALIKE, response_1="a", response_2="b")
    assert render_order(same, "21").prompt == LOOK_ALIKE


def test_bandwagon_on_such_an_item_fills_its_own_slot_only(tmp_path):
    item = _load(tmp_path)
    (r,) = perturb_items([item], "bandwagon", seed=0)  # favours the worse: response_2
    assert r.preserved and needs_order(r.item)
    judge = PairwiseJudge(client=None)
    for order, letter in (("12", "B"), ("21", "A")):
        prompt = judge.request(r.item, order).meta["prompt"]
        assert prompt.startswith(LOOK_ALIKE), f"order {order}: the data's token was rewritten"
        added = prompt[len(LOOK_ALIKE):]
        assert f"Response {letter}" in added and "<<" not in added, added


def test_ordinary_items_keep_the_plain_slot(tmp_path):
    """An item without look-alikes gets `<<LETTER:...>>` slots as before (its rendered
    prompts, hence its cache keys, are unchanged)."""
    item = PairwiseItem(id="p", prompt="2+2?", response_1="4", response_2="5", label=1)
    (r,) = perturb_items([item], "bandwagon", seed=0)
    sentence = r.item.metadata["perturbation"]["bandwagon_sentence"]
    assert "<<LETTER:response_2>>" in sentence and r.item.prompt == f"2+2?\n\n{sentence}"
    filled = sentence.replace("<<LETTER:response_2>>", "B")
    assert render_order(r.item, "12").prompt == f"2+2?\n\n{filled}"
