"""RubricJudge with prompt variants: the variant's ids become the choices, the rubric is shown
in the variant's order, a reference is labelled with its score's id, and every id scheme is
parsed back to 1..5 (unparseable answers stay invalid)."""

from __future__ import annotations

import asyncio

import pytest

from judgeaudit.data.schema import PointwiseItem
from judgeaudit.judges.pointwise import PromptVariant, RubricJudge
from judgeaudit.llm import CallFailed, Client, Response, make_provider

ITEM = PointwiseItem(id="x:1", prompt="What is 2+2?", response="4.", score=4.0,
                     rubric="Correct?", reference="DATASET REF",
                     rubric_levels={str(k): f"level {k} text" for k in range(1, 6)})
LETTERS = ("E", "D", "C", "B", "A")


def _judge(**params: str) -> RubricJudge:
    return RubricJudge(Client(make_provider("sim", "default", params)), "pointwise_scoring_v1")


def test_plain_request_is_unchanged_by_the_variant_support() -> None:
    req = RubricJudge(None, "pointwise_v1").request(ITEM)  # type: ignore[arg-type]
    user = req.messages[1].content
    assert "DATASET REF" in user and "1: level 1 text\n2: level 2 text" in user
    assert req.choices == ("1", "2", "3", "4", "5")
    assert "variant" not in req.meta and "rubric_order" not in req.meta


def test_variant_sets_choices_order_reference_and_meta() -> None:
    v = PromptVariant(name="t", order=(5, 4, 3, 2, 1), order_kind="descending",
                      score_ids=LETTERS, reference="MY REF", reference_score=2,
                      scale_note="NOTE", answer_instruction="ANSWER")
    req = RubricJudge(None, "pointwise_scoring_v1").request(ITEM, 3, v)  # type: ignore[arg-type]
    user = req.messages[1].content
    assert req.choices == LETTERS and req.repeat == 3
    assert user.index("A: level 5 text") < user.index("E: level 1 text")
    assert "would receive a score of D" in user and "MY REF" in user
    assert "DATASET REF" not in user
    assert "NOTE" in user and user.rstrip().endswith("ANSWER")
    assert req.meta["rubric_order"] == "descending" and req.meta["reference_score"] == 2
    assert req.meta["score_ids"] == list(LETTERS) and req.meta["rubric_shown"] == [5, 4, 3, 2, 1]


def test_baseline_variant_shows_no_reference() -> None:
    req = RubricJudge(None, "pointwise_scoring_v1").request(  # type: ignore[arg-type]
        ITEM, 0, PromptVariant())
    assert "Reference" not in req.messages[1].content
    assert req.meta["reference"] is None


@pytest.mark.parametrize("ids,text,want", [
    (LETTERS, "B", 4), (LETTERS, "Score: e", 1), (("i", "ii", "iii", "iv", "v"), "iv", 4),
    (("i", "ii", "iii", "iv", "v"), "V.", 5), (LETTERS, "F", None), (LETTERS, "4", None),
    (("1", "2", "3", "4", "5"), "B", None),
])
def test_read_maps_every_scheme_back(ids, text, want) -> None:
    j = RubricJudge(None, "pointwise_scoring_v1")  # type: ignore[arg-type]
    assert j.read("x", Response(text=text), ids).score == want


def test_read_prefers_probabilities_over_ids() -> None:
    j = RubricJudge(None, "pointwise_scoring_v1")  # type: ignore[arg-type]
    probs = {"E": 0.1, "D": 0.6, "C": 0.1, "B": 0.1, "A": 0.1}
    v = j.read("x", Response(text="D", probs=probs), LETTERS)
    assert v.score == 2 and v.expected == pytest.approx(0.1 + 1.2 + 0.3 + 0.4 + 0.5)
    assert j.read("x", CallFailed("boom", fatal=False), LETTERS).score is None


def test_sim_answers_in_the_variant_ids_and_scores_map_back() -> None:
    j = _judge(quality="8", crn="1", score_noise="0")
    items = [ITEM.model_copy(update={"id": f"x:{q}", "quality": q}) for q in (0.0, 0.5, 1.0)]
    plain = asyncio.run(j.score_variants([(it, PromptVariant(), 0) for it in items]))
    letters = asyncio.run(j.score_variants(
        [(it, PromptVariant(name="l", score_ids=LETTERS), 0) for it in items]))
    assert [v.raw for v in letters] == ["E", "C", "A"]
    assert [v.score for v in letters] == [v.score for v in plain] == [1, 3, 5]


@pytest.mark.parametrize("kw,msg", [
    ({"score_ids": ("a", "a", "b", "c", "d")}, "distinct"),
    ({"order": (1, 2, 3, 4)}, "permutation"),
    ({"reference_score": 6}, "reference_score"),
])
def test_bad_variants_are_refused(kw, msg) -> None:
    with pytest.raises(ValueError, match=msg):
        PromptVariant(**kw)
