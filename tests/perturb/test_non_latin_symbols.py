"""The not-Latin detector (`perturb.base.non_latin_share`, `english_misfit`) measures the
language of a response's prose, not its symbols. English math with Greek variables
(`θ = π/4`), units (µg, Ω), full-width Latin (`Ｈｅｌｌｏ`) and ordinal indicators (`1ª`) used to
read as 67-100% not Latin, so every perturbation that adds English left such answers out.
The rule: NFKC first (look-alike forms become the letters they stand for); a letter standing
alone, with no letter of its script next to it, is a symbol and not counted; a word of two or
more letters counts (Greek, Russian, Arabic, Hindi prose is still not Latin); in Chinese,
Japanese and Korean every character counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgeaudit.data import load
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.perturb import perturb_items
from judgeaudit.perturb.base import MAX_NON_LATIN, english_misfit, non_latin_share

# Each perturbation that adds English to the side it measures (as in test_english_filler.py).
ENGLISH = ("authority", "distraction", "diversity", "fallacy", "injection", "markdown",
           "refinement", "sentiment", "sycophancy", "verbosity")

# English answers whose symbols are not Latin letters: left out by every perturbation above
# before (the reviewer's examples first), applied now.
SYMBOLS = {
    "greek_vars": "θ = π/4",
    "greek_sum": "α + β = γ, so γ = 90°.",
    "fullwidth": "Ｈｅｌｌｏ",
    "fullwidth_sentence": "Ｔｈｅ ａｎｓｗｅｒ ｉｓ ４２.",
    "ordinals": "1ª, 2º, 3º",
    "math_italic": "𝑥 = 2𝑦 + 3",
    "estimator": "θ̂ = 0.5",
    "aleph": "|ℕ| = ℵ₀",
    "ohm": "R = 10 Ω",
}
# English answers heavy in code or LaTeX, with Greek symbols inside: applied, before and now.
CODE_AND_LATEX = {
    "latex": r"We have $\int_0^\pi \sin\theta\,d\theta = 2$, so the area is $2$ (θ in rad).",
    "code": "```python\ndef f(θ, α):\n    return θ * α  # α is the gain\n```",
    "units": "The dose is 5 µg, i.e. 5 µg/ml; ΔG = ΔH − TΔS at 298 K.",
    "ipa": "It is pronounced /ˈθɪŋk/.",
}
# Prose in another script: still left out (share 100%).
PROSE = {
    "zh": "二加二等于五，因为我这样认为。",
    "ja": "私は学生です。",
    "ko": "서울은 한국의 수도입니다.",
    "ar": "اثنان زائد اثنين يساوي خمسة.",
    "fa": "من می\u200cخواهم بروم.",
    "he": "ירושלים היא בירת ישראל.",
    "ru": "Два плюс два равно пяти, я в этом уверен.",
    "hi": "दो और दो पाँच होते हैं।",
    "el": "Η πρωτεύουσα της Ελλάδας είναι η Αθήνα.",
    "zh_math": "设x为角θ，则y=2x+1。",
    "zh_one_character": "对。",
}


def _pair(worse: str) -> PairwiseItem:
    return PairwiseItem(id="x", prompt="Question?", response_1="A different answer here.",
                        response_2=worse, label=1)


@pytest.mark.parametrize("key", sorted(SYMBOLS))
def test_symbols_are_not_a_language(key):
    assert non_latin_share(SYMBOLS[key]) == 0.0, SYMBOLS[key]
    assert english_misfit(SYMBOLS[key], "the padding") is None


@pytest.mark.parametrize("key", sorted(SYMBOLS) + sorted(CODE_AND_LATEX))
@pytest.mark.parametrize("name", ENGLISH)
def test_english_answers_with_symbols_are_perturbed(name, key):
    text = {**SYMBOLS, **CODE_AND_LATEX}[key]
    (r,) = perturb_items([_pair(text)], name, target="worse", seed=0)
    if (name, key) == ("markdown", "code"):
        # left out, but for its code fence (markdown on markdown), not for its language
        assert r.not_applicable and "code fence" in (r.reason or ""), r.reason
        assert "Latin" not in (r.reason or ""), r.reason
        return
    assert not r.not_applicable, (name, key, r.reason)
    assert r.item.response_2 != text, (name, key)


@pytest.mark.parametrize("lang", sorted(PROSE))
def test_prose_in_another_script_still_counts(lang):
    assert non_latin_share(PROSE[lang]) == 1.0, PROSE[lang]
    why = english_misfit(PROSE[lang], "the padding")
    assert why == ("the padding would be English in a text 100% of whose letters are not "
                   "Latin script"), why


@pytest.mark.parametrize("lang", ["el", "ja", "zh_math"])
@pytest.mark.parametrize("name", ENGLISH)
def test_perturbations_still_leave_such_prose_out(name, lang):
    (r,) = perturb_items([_pair(PROSE[lang])], name, target="worse", seed=0)
    assert r.not_applicable and not r.preserved, (name, lang, r.reason)
    assert r.item.response_2 == PROSE[lang]


def test_the_share_counts_letters_of_words():
    """5 Latin letters (Paris) against 6 Chinese characters; the lone θ is not counted,
    the Greek word is (2 Greek letters against 4 Latin)."""
    assert non_latin_share("Paris 是法国的首都。") == pytest.approx(6 / 11)
    assert non_latin_share("Paris θ 是法国的首都。") == pytest.approx(6 / 11)
    assert non_latin_share("said ως") == pytest.approx(2 / 6)
    assert non_latin_share("42 + 7") == 0.0
    assert non_latin_share("") == 0.0


DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
ENGLISH_SETS = [f"llmbar:{DATA}/llmbar?subset=all", f"mtbench:{DATA}/mt_bench",
                f"pandalm:{DATA}/pandalm_testset", f"evalbiasbench:{DATA}/offsetbias_evalbiasbench",
                f"prometheus:{DATA}/prometheus_eval?set=mt_bench"]


@pytest.mark.parametrize("spec", ENGLISH_SETS)
def test_english_data_sets_are_not_left_out(spec):
    """A guard on real English data (0 left out before and after this rule): the responses
    that quote Chinese or use Greek symbols stay well under the limit."""
    if not DATA.is_dir():
        pytest.skip(f"real data not found at {DATA} (see /work/shared/data/README.md)")
    items = load(spec)
    texts = [t for it in items for t in (it.response_1, it.response_2) if t is not None] \
        if isinstance(items[0], PairwiseItem) else [it.response for it in items]
    shares = [non_latin_share(t) for t in texts]
    assert max(shares) <= MAX_NON_LATIN, (spec, max(shares))
    assert max(shares) < 0.1, (spec, max(shares))
