"""Per-bias templates: citations, bandwagon sentences, injections, names, tones, identities,
refinement framing, and the pointwise form."""

from __future__ import annotations

import random
import re

import pytest

from judgeaudit.data import PointwiseItem
from judgeaudit.perturb import (
    PerturbError,
    get,
    needs_order,
    perturb_items,
    perturb_pointwise,
    render_order,
)
from judgeaudit.perturb.bandwagon import bandwagon_sentence
from judgeaudit.perturb.compassion import ALIASES, FAMOUS, WEAK
from judgeaudit.perturb.diversity import GROUPS
from judgeaudit.perturb.refinement import FRAMINGS, refinement_pair
from judgeaudit.perturb.sentiment import TONES


@pytest.mark.parametrize("style,pattern", [
    ("inline", r"\((?:[A-Z]\w+ et al\.|[A-Z]\w+ & [A-Z]\w+|[A-Z]\w+), (?:19|20)\d\d\)"),
    ("study", r"(?:19|20)\d\d.*\b(?:Journal|Review)\b|\b(?:Journal|Review)\b.*(?:19|20)\d\d"),
    ("reference", r"\[1\].*\((?:19|20)\d\d\).*doi:10\.\d{4}/"),
])
def test_authority_styles(items, style, pattern):
    for r in perturb_items(items, "authority", style=style, seed=0):
        text = getattr(r.item, r.changed)
        assert re.search(pattern, text, re.S), text
        assert r.preserved, r.reason
        assert r.item.metadata["perturbation"]["citation"] in text


def test_authority_mixes_styles_when_not_fixed(items):
    styles = {r.variant for r in perturb_items(items, "authority", seed=0)}
    assert len(styles) >= 2


def test_bandwagon_sentence_and_percent(items):
    s = bandwagon_sentence("B", random.Random(0))
    assert "90%" in s and "Response B" in s
    r = perturb_items(items[:1], "bandwagon", percent=75, favour="better")[0]
    assert r.item.metadata["perturbation"]["bandwagon_target"] == "response_1"
    assert "75%" in render_order(r.item, "12").prompt
    assert "Response A" in render_order(r.item, "12").prompt   # response_1 shown first
    assert r.item.prompt.startswith(items[0].prompt)


@pytest.mark.parametrize("placement", ["append", "prepend", "middle", "comment"])
def test_injection_placements(items, placement):
    for r in perturb_items(items, "injection", placement=placement, seed=0):
        inj = r.item.metadata["perturbation"]["injection"]
        text = getattr(r.item, r.changed)
        assert inj in text and r.preserved
        assert not needs_order(r.item)
        if placement == "append":
            assert text.endswith(inj)
        elif placement == "prepend":
            assert text.startswith(inj)
        elif placement == "comment":
            assert text.endswith(f"<!-- {inj} -->")
        else:
            assert f"\n{inj}\n" in text or text.endswith(f"\n{inj}")


def test_injection_letter_kind_names_the_target_per_order(items):
    for r in perturb_items(items, "injection", kind="letter", seed=0):
        assert needs_order(r.item)
        target_first = r.changed == "response_1"
        for order, first_letter in (("12", "A"), ("21", "B")):
            shown = render_order(r.item, order)  # type: ignore[arg-type]
            want = first_letter if target_first else ("B" if first_letter == "A" else "A")
            text = getattr(shown, r.changed)
            assert re.search(rf"\b{want}\b", text.replace(getattr(r.original, r.changed), ""))


def test_compassion_modes(items):
    it = items[0]  # response_2 is the worse side
    named = perturb_items([it], "compassion", seed=0)[0]
    names = named.item.metadata["perturbation"]["display_names"]
    assert names["response_2"] in FAMOUS and names["response_1"] in ALIASES
    assert named.item.response_2.split("\n")[0].count(names["response_2"]) == 1
    fmt = named.item.metadata["perturbation"]["name_format"]
    assert named.item.response_1.startswith(fmt.format(name=names["response_1"]))
    prest = perturb_items([it], "compassion", mode="prestige", seed=0)[0]
    assert prest.item.metadata["perturbation"]["display_names"]["response_1"] in WEAK
    anon = perturb_items([it], "compassion", mode="anonymous", seed=0)[0]
    dn = anon.item.metadata["perturbation"]["display_names"]
    assert set(dn.values()) <= set(ALIASES) and len(set(dn.values())) == 2
    pinned = perturb_items([it], "compassion", model="GPT-4", seed=0)[0]
    assert "GPT-4" in pinned.item.response_2 and pinned.preserved
    assert named.item.models == it.models


def test_sentiment_tones(items):
    for tone, (opens, closes) in TONES.items():
        for r in perturb_items(items, "sentiment", tone=tone, seed=0):
            text = getattr(r.item, r.changed)
            assert r.variant == tone
            assert any(text.startswith(o) for o in opens)
            assert any(text.endswith(c) for c in closes)


def test_diversity_groups(items):
    r = perturb_items(items[:1], "diversity", group="refugee")[0]
    assert GROUPS["refugee"] in r.item.response_2 and r.variant == "refugee"
    assert len({r.variant for r in perturb_items(items, "diversity", seed=0)}) >= 3


def test_distraction_position(items):
    for r in perturb_items(items, "distraction", position="start", seed=0):
        assert getattr(r.item, r.changed).endswith(getattr(r.original, r.changed).strip())


def test_sycophancy_adds_certainty_without_content(items):
    for r in perturb_items(items, "sycophancy", seed=0):
        assert re.search(r"certain|definitely|fact|confidence|guaranteed|verified|question",
                         getattr(r.item, r.changed))
        assert r.preserved


def test_refinement_pair_and_pointwise_form():
    item = PointwiseItem(id="p:1", prompt="What is 2 + 2?", response="2 + 2 = 4.",
                         metadata={"answer": "4"})
    plain, framed = refinement_pair(item, random.Random(0))
    assert plain is item
    assert framed.preserved and framed.changed == "response"
    assert framed.item.response.endswith(item.response)
    assert any(framed.item.response.startswith(f) for f in FRAMINGS)
    assert framed.item.id == "p:1~refinement"
    for name in ("authority", "sentiment", "verbosity", "markdown", "sycophancy"):
        (r,) = perturb_pointwise([item], name, seed=0)
        assert r.preserved and r.item.response != item.response and r.item.prompt == item.prompt
    with pytest.raises(PerturbError, match="no pointwise form"):
        perturb_pointwise([item], "bandwagon")
    with pytest.raises(PerturbError, match="needs a pairwise item"):
        perturb_pointwise([item], "injection", kind="letter")


def test_info_for_reports():
    info = get("verbosity").info()
    assert info["options"]["level"]["choices"] == [1, 2, 3, 4, 5]
    assert info["target_default"] == "worse" and info["description"]
