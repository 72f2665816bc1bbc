"""A perturbation whose cue the text already has (markdown on markdown, a citation on a cited
answer) or cannot take (English filler on a Chinese answer) is not applied: the item is
counted as not applicable and left out, the way an empty answer is, never scored."""

from __future__ import annotations

import pytest

from judgeaudit.audit.battery import run_battery
from judgeaudit.data import load
from judgeaudit.data.schema import PairwiseItem, PointwiseItem
from judgeaudit.judges import make_judge
from judgeaudit.perturb import perturb_items, perturb_pointwise

MD = "# Primes\n\n- **4**\n- **6**"
ZH = "质数是只能被一和它本身整除的大于一的自然数，例如二、三、五和七。"


def _pair(worse: str, better: str = "The answer is 7.") -> PairwiseItem:
    return PairwiseItem(id="x", prompt="Name a prime.", response_1=better, response_2=worse,
                        label=1)


@pytest.mark.parametrize("name,worse,why", [
    ("markdown", MD, "markdown structure (a heading)"),
    ("markdown", "Pick **4**, it is even.", "markdown structure (bold text)"),
    ("markdown", "1. four\n2. six", "markdown structure (a numbered list)"),
    ("markdown", "- 4\n- 6", "markdown structure (a bullet list)"),
    ("markdown", "- four is even", "markdown structure (a bullet list)"),
    ("markdown", "> Four is even.", "markdown structure (a block quote)"),
    ("markdown", "Pick __four__ here, __Four__ is even.", "markdown structure (bold text)"),
    ("authority", "Four is prime (Smith et al., 2019).", 'cites a source ("et al.")'),
    ("authority", "Four is prime, see https://example.org/primes.", "cites a source (a URL)"),
    ("authority", "Four is prime (Chen, 2020).", "(an author-year citation)"),
    ("authority", "Four is prime [1].\n\n[1] Chen, A. (2020). Primes.",
     "(a numbered reference)"),
    ("authority", "Four is prime [1] and even [2].", "(a numbered reference)"),
    ("authority", "Four is prime (see 10.1038/nature12373).", "(a DOI or arXiv id)"),
    # a suffix of digits with a dot is a DOI too (review7 finding 8: b9b03a5 missed these)
    ("authority", "See 10.1145/3290605.3300233 for the proof.", "(a DOI or arXiv id)"),
    ("authority", "IEEE paper 10.1109/5.771073 shows it.", "(a DOI or arXiv id)"),
    ("authority", "According to a 2021 study in the Review of Numbers, four is prime.",
     "(a cited study)"),
    ("verbosity", ZH, "not Latin script"),
])
def test_the_cue_already_there_is_not_applicable(name, worse, why):
    (r,) = perturb_items([_pair(worse)], name, seed=0)
    assert r.not_applicable and not r.preserved, (name, r.reason)
    assert why in (r.reason or ""), r.reason
    assert r.item.response_2 == worse, "a not-applicable item must not be changed"


@pytest.mark.parametrize("name,worse", [
    ("markdown", "Four is prime. It is even, so it is not."),
    ("authority", "Four is prime. In 2019 it was still four."),
    ("authority", "Use arr[1] = 4 in the code."),
    # content that only looks like markup or a citation (review6 finding 5)
    ("markdown", "Use __init__ and __main__ in Python."),
    ("markdown", "- 5 degrees is cold."),
    ("markdown", "> 5 means greater than five"),
    ("markdown", "Two to the power ten is 2**10**1 in Python."),
    ("authority", "See section [1] of the manual."),
    ("authority", "The ratio is 10.1234/5678 here."),
    ("authority", "The ratio is 10.1234/5678."),
    ("authority", "The ratios are 10.1234/5678. 3.5/7 is half."),
    ("verbosity", "Quatre est un nombre premier, très connu."),
    ("verbosity", "The answer is 质数 four."),
])
def test_plain_text_is_still_perturbed(name, worse):
    (r,) = perturb_items([_pair(worse)], name, seed=0)
    assert not r.not_applicable and r.preserved, (name, r.reason)
    assert r.item.response_2 != worse


def test_pointwise_not_applicable_is_reported_not_raised():
    it = PointwiseItem(id="p", prompt="Name a prime.", response=ZH)
    (r,) = perturb_pointwise([it], "verbosity", seed=0)
    assert r.not_applicable and not r.preserved and r.item.response == ZH


@pytest.mark.parametrize("name", ["markdown", "authority", "verbosity"])
def test_builtin_data_has_no_item_these_do_not_apply_to(name):
    """The built-in facts and arithmetic answers are plain English: the audit's numbers on
    them are those the perturbations gave before the check existed."""
    items = load("builtin:mixed")
    for tgt in ("worse", "better"):
        hit = [r.reason for r in perturb_items(items, name, target=tgt) if r.not_applicable]
        assert not hit, hit[:3]


def test_builtin_format_still_leaves_out_its_markdown_answers():
    """The tightened detectors (review6 finding 5) leave out the same markdown answers of
    builtin:format as before: 80 of 320 worse sides, 61 by a heading, 19 by bold."""
    rs = perturb_items(load("builtin:format"), "markdown", target="worse")
    why = [r.reason or "" for r in rs if r.not_applicable]
    assert len(rs) == 320 and len(why) == 80, len(why)
    assert sum("(a heading)" in w for w in why) == 61
    assert sum("(bold text)" in w for w in why) == 19


async def test_the_probe_leaves_them_out_and_says_why():
    items = load("builtin:facts?seed=1")[:10]
    cited = items[0]
    worse = "response_2" if cited.label == 1 else "response_1"
    items[0] = cited.model_copy(update={
        worse: getattr(cited, worse).rstrip(".") + " (Smith et al., 2019)."})
    zh = items[1]
    worse_zh = "response_2" if zh.label == 1 else "response_1"
    items[1] = zh.model_copy(update={worse_zh: ZH})
    judge = make_judge("sim?quality=1.5&seed=5")
    res = await run_battery(judge, items, ["authority", "verbosity"], seed=5)
    auth, verb = res["probes"]["authority"], res["probes"]["verbosity"]
    # the Chinese answer too: the fake citation is English (authority adds_english)
    assert auth["dropped"]["perturbation_not_applicable"] == 2
    assert auth["n"] == 8
    assert any('2 item(s) not perturbed, left out: the text already cites a source ("et al.")'
               " (1); the citation would be English in a text 100% of whose letters are not "
               "Latin script (1)" in n for n in auth["notes"]), auth["notes"]
    assert verb["dropped"]["perturbation_not_applicable"] == 1 and verb["n"] == 9
    assert any("not Latin script" in n for n in verb["notes"]), verb["notes"]
