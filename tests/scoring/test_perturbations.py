"""The scoring-prompt perturbations: what each template shows, and that T agrees with it."""

from __future__ import annotations

import pytest

from judgeaudit.data.schema import PointwiseItem
from judgeaudit.scoring.perturbations import ASCENDING, DESCENDING, parse_scheme, resolve

ITEM = PointwiseItem(id="q:1", prompt="p", response="r", reference="REF5")


def test_all_templates_in_order_with_baseline_first() -> None:
    names = [p.name for p in resolve(None)]
    assert names == ["baseline", "order_desc", "order_random", "ids_letters", "ids_roman",
                     "ref_1", "ref_2", "ref_3", "ref_4", "ref_5"]
    assert [p.name for p in resolve(["ids_roman"])] == ["baseline", "ids_roman"]


def test_orders() -> None:
    t = {p.name: p for p in resolve(None, seed=3)}
    assert t["baseline"].order_for("a") == ASCENDING
    assert t["order_desc"].order_for("a") == DESCENDING
    orders = {t["order_random"].order_for(f"i{i}") for i in range(50)}
    assert len(orders) > 20 and not orders & {ASCENDING, DESCENDING}
    assert t["order_random"].order_for("i1") == t["order_random"].order_for("i1")
    other = {p.name: p for p in resolve(None, seed=4)}["order_random"]
    assert [other.order_for(f"i{i}") for i in range(10)] != [
        t["order_random"].order_for(f"i{i}") for i in range(10)]


def test_task_description_follows_the_scale() -> None:
    t = {p.name: p for p in resolve(None)}
    assert "letter grade: E is the worst and A the best" in t["ids_letters"].scale_note()
    assert "from the highest score to the lowest" in t["order_desc"].scale_note()
    assert "one of i, ii, iii, iv, v" in t["ids_roman"].answer_instruction()
    assert "reference answer" in t["ref_2"].answer_instruction()
    assert "reference" not in t["baseline"].answer_instruction()


def test_reference_templates_use_given_texts_and_the_dataset_reference_for_5() -> None:
    t = {p.name: p for p in resolve(None)}
    assert t["ref_5"].variant_for(ITEM).reference == "REF5"
    assert t["ref_2"].variant_for(ITEM) is None
    v = t["ref_2"].variant_for(ITEM, {"q:1": {2: "TWO"}})
    assert v.reference == "TWO" and v.reference_score == 2
    assert t["ref_5"].variant_for(ITEM, {"q:1": {5: "OVERRIDE"}}).reference == "OVERRIDE"
    assert t["baseline"].variant_for(ITEM).reference is None


def test_user_mapping_and_hashes() -> None:
    ps = resolve(["order_desc"], id_maps=["grades=F,D,C,B,A"])
    assert [p.name for p in ps] == ["baseline", "order_desc", "ids_grades"]
    assert ps[2].scheme.ids == ("F", "D", "C", "B", "A")
    hashes = {p.sha256("t") for p in resolve(None)}
    assert len(hashes) == 10
    assert resolve(None)[0].sha256("t") != resolve(None)[0].sha256("u")


@pytest.mark.parametrize("bad,msg", [
    ("grades", "NAME=id1"), ("g=a,b,c", "5 comma-separated"), ("g=a,b,c,d,d", "distinct"),
    ("g=a,b,c,d,D", "ignoring case"), ("g=*,**,***,****,*****", "letters or digits"),
    # Greek letters are letters: the message said "letters or digits" and refused them
    ("greek=α,β,γ,δ,ε", "ASCII letters or digits"),
])
def test_bad_mappings(bad: str, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        parse_scheme(bad)


def test_unknown_name() -> None:
    with pytest.raises(ValueError, match="unknown scoring perturbation"):
        resolve(["order_sideways"])
