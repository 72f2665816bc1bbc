"""A perturbation that adds English prose to a response (a tone line, a detail about the
author, a framing line, a note to the judge, flawed reasoning, a citation sentence, a
heading) is not applied to a response mostly in another script: the measured shift would be
the bias plus a switch of language. Such items are left out as not applicable, with the
reason, by the one detector in `perturb.base` (`english_misfit`)."""

from __future__ import annotations

import pytest

from judgeaudit.data import load
from judgeaudit.data.schema import PairwiseItem, PointwiseItem
from judgeaudit.perturb import available, get, perturb_items, perturb_pointwise

# The same worse answer ("2 + 2 is 5") in four scripts, and in French (Latin script).
TEXTS = {
    "zh": "二加二等于五，因为我这样认为。",
    "ar": "اثنان زائد اثنين يساوي خمسة.",
    "ru": "Два плюс два равно пяти, я в этом уверен.",
    "hi": "दो और दो पाँच होते हैं।",
}
FRENCH = "Deux plus deux font cinq. Je le sais."

# Each perturbation that adds English to the side it measures, and what its reason calls it.
ENGLISH = {
    "authority": "the citation",
    "distraction": "the detail about the author",
    "diversity": "the identity statement",
    "fallacy": "the flawed reasoning",
    "injection": "the note to the judge",
    "markdown": "the heading",
    "refinement": "the refinement framing line",
    "sentiment": "the tone lines",
    "sycophancy": "the certainty claims",
    "verbosity": "the padding",
}
# Changes a response but adds no English to one side only (both sides get the same
# attribution line), or changes the prompt.
NO_ENGLISH = {"compassion", "bandwagon"}


def _pair(worse: str, prompt: str = "2 + 2 = ?") -> PairwiseItem:
    return PairwiseItem(id="x", prompt=prompt, response_1="2 + 2 = 4.", response_2=worse,
                        label=1)


def test_every_perturbation_says_whether_it_adds_english():
    """A new perturbation has to be put in one table or the other: the check cannot be
    forgotten silently."""
    assert set(available()) == set(ENGLISH) | NO_ENGLISH


@pytest.mark.parametrize("lang", sorted(TEXTS))
@pytest.mark.parametrize("name", sorted(ENGLISH))
def test_english_is_not_added_to_a_text_in_another_script(name, lang):
    text = TEXTS[lang]
    (r,) = perturb_items([_pair(text)], name, target="worse", seed=0)
    assert r.not_applicable and not r.preserved, (name, lang, r.reason)
    assert f"{ENGLISH[name]} would be English in a text 100% of whose letters are not " \
           "Latin script" in (r.reason or ""), r.reason
    assert r.item.response_2 == text, "a not-applicable item must not be changed"


@pytest.mark.parametrize("name", sorted(ENGLISH))
def test_a_text_in_latin_script_is_still_perturbed(name):
    """French is not English either, but the check is the script: the same rule verbosity
    had, now shared (a finer language test would change which items every probe keeps)."""
    (r,) = perturb_items([_pair(FRENCH)], name, target="worse", seed=0)
    assert not r.not_applicable, (name, r.reason)
    assert r.item.response_2 != FRENCH


@pytest.mark.parametrize("name", ["sycophancy", "refinement", "sentiment", "distraction"])
def test_pointwise_form_leaves_them_out_too(name):
    it = PointwiseItem(id="p", prompt="2 + 2 = ?", response=TEXTS["zh"])
    (r,) = perturb_pointwise([it], name, seed=0)
    assert r.not_applicable and not r.preserved and r.item.response == TEXTS["zh"]
    assert ENGLISH[name] in (r.reason or "")


def test_an_inline_citation_still_applies_to_another_script():
    """"(Chen et al., 2019)" is how a Chinese or Russian text cites an English-language
    paper: style=inline adds no English sentence."""
    for text in TEXTS.values():
        (r,) = perturb_items([_pair(text)], "authority", target="worse", seed=0,
                             style="inline")
        assert not r.not_applicable and r.preserved, r.reason
        assert "et al." in r.item.response_2 or ", 20" in r.item.response_2


def test_markdown_to_plain_adds_nothing_and_still_applies():
    md = "# 答案\n\n- 二加二等于五"
    (r,) = perturb_items([_pair(md)], "markdown", target="worse", seed=0,
                         direction="to_plain")
    assert not r.not_applicable and r.preserved, r.reason
    assert "#" not in r.item.response_2 and "二加二等于五" in r.item.response_2


def test_both_sides_labelled_and_the_prompt_still_apply():
    """Compassion labels both responses alike; bandwagon writes into the instruction."""
    item = PairwiseItem(id="x", prompt="二加二等于几？", response_1="二加二等于四。",
                        response_2=TEXTS["zh"], label=1)
    (c,) = perturb_items([item], "compassion", seed=0)
    assert not c.not_applicable and c.preserved, c.reason
    assert c.item.response_1 != item.response_1 and c.item.response_2 != item.response_2
    (b,) = perturb_items([item], "bandwagon", seed=0)
    assert not b.not_applicable and b.preserved, b.reason


def test_the_cue_already_there_is_said_first():
    """A Chinese answer that already has markdown is left out for its markdown (the reason
    the item could never take the cue), not for its script."""
    (r,) = perturb_items([_pair("# 答案\n\n二加二等于五。")], "markdown", seed=0)
    assert r.not_applicable and "markdown structure (a heading)" in (r.reason or "")


def test_mostly_english_with_a_few_other_letters_is_perturbed():
    (r,) = perturb_items([_pair("The answer is 五 (five), I am sure.")], "sentiment", seed=0)
    assert not r.not_applicable and r.preserved, r.reason


@pytest.mark.parametrize("name", sorted(ENGLISH))
def test_builtin_data_keeps_every_item(name):
    """The built-in data is English: the audit's numbers on it are unchanged."""
    items = load("builtin:mixed")
    for tgt in ("worse", "better"):
        hit = [r.reason for r in perturb_items(items, name, target=tgt) if r.not_applicable]
        assert not hit, hit[:3]


def test_one_detector():
    """Every perturbation reaches the script check through the base class, none keeps its
    own copy (verbosity had one)."""
    import inspect
    import sys

    for name in available():
        mod = sys.modules[type(get(name)).__module__]
        src = inspect.getsource(mod)
        assert "unicodedata" not in src and "def non_latin_share" not in src, mod.__name__
