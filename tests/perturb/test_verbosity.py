"""Verbosity: word count rises strictly with the level and no number is added."""

from __future__ import annotations

from judgeaudit.perturb import perturb_items
from judgeaudit.perturb.preserve import numbers


def test_word_count_rises_with_level_and_no_new_numbers(items):
    by_level = {lv: perturb_items(items, "verbosity", level=lv, seed=5) for lv in range(1, 6)}
    for k, it in enumerate(items):
        counts = [len(it.response_1.split() if it.label == 2 else it.response_2.split())]
        for lv in range(1, 6):
            r = by_level[lv][k]
            text = getattr(r.item, r.changed)
            orig = getattr(it, r.changed)
            assert r.preserved, r.reason
            assert orig.strip() in text  # the answer itself is untouched
            assert not set(numbers(text)) - set(numbers(orig)), (it.id, lv)
            counts.append(len(text.split()))
        assert counts == sorted(counts) and len(set(counts)) == 6, (it.id, counts)
    # level 5 is substantially longer than the original
    r = by_level[5][0]
    assert len(r.item.response_2.split()) > 5 * len(items[0].response_2.split())


def test_digit_free_prompts_are_restated_and_digit_prompts_are_not(items):
    fact = next(it for it in items if it.id == "facts:0")
    arith = items[0]
    rf = perturb_items([fact], "verbosity", level=1)[0]
    ra = perturb_items([arith], "verbosity", level=1)[0]
    assert fact.prompt in getattr(rf.item, rf.changed)
    assert arith.prompt not in getattr(ra.item, ra.changed)
