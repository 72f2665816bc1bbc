"""The preservation checks stay near-linear on long texts: the word diff runs only on the
changed window (and only when it is small), a rewrite is answered without any diff, and the
linear paths give the same answers as the definitions they replace. No timings: the test
counts what reaches difflib."""

from __future__ import annotations

import random

import pytest

from judgeaudit.perturb import preserve
from judgeaudit.perturb.preserve import (
    answer_preserved,
    entities,
    final_answer_kept,
    insertions,
    lost_entities,
    words_preserved,
)

_VOCAB = (
    "the", "of", "and", "to", "in", "is", "that", "it", "for", "on", "with", "as", "was", "by",
    "at", "from", "this", "be", "or", "an", "are", "which", "model", "answer", "result",
    "value", "system", "data", "method", "time", "number", "people", "work", "first",
)
_NAMES = ("Canberra", "Walker", "Austen", "Kyoto", "Darwin", "Newton")


def _long_text(nbytes: int, seed: int = 0) -> str:
    """Prose-like text with repeated common words (what makes difflib quadratic), names and
    numbers, about `nbytes` long."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < nbytes:
        ws = rng.choices(_VOCAB, k=rng.randint(8, 16))
        ws.insert(rng.randrange(1, len(ws)), rng.choice(_NAMES))
        ws.insert(rng.randrange(1, len(ws)), str(rng.randint(0, 999)))
        sent = " ".join(ws)
        sent = sent[0].upper() + sent[1:] + "."
        out.append(sent)
        size += len(sent) + 1
    return " ".join(out)


@pytest.fixture(scope="module")
def big() -> str:
    return _long_text(2_000_000)


@pytest.fixture
def diff_sizes(monkeypatch) -> list[tuple[int, int]]:
    """Records the (original, perturbed) word counts of every difflib call."""
    seen: list[tuple[int, int]] = []
    real = preserve._diff_opcodes

    def spy(a, b):
        seen.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(preserve, "_diff_opcodes", spy)
    return seen


def _at_word(text: str, frac: float) -> int:
    return text.index(" ", int(len(text) * frac))


def test_small_insertion_in_a_long_text_diffs_only_the_changed_window(big, diff_sizes):
    i = _at_word(big, 0.5)
    pert = big[:i] + " Indeed, this is clear." + big[i:]
    assert insertions(big, pert) == ["Indeed, this is clear."]
    assert diff_sizes == []  # the window is the inserted words alone: nothing to diff
    assert answer_preserved(big, pert, competitor="Sydney") == (True, None)
    bad = big[:i] + " Some say 123456 and Sydney." + big[i:]
    ok, why = answer_preserved(big, bad, competitor="Sydney")
    assert not ok and "123456" in why
    # two nearby insertions: difflib sees only the words between them, not the 2 MB
    j = _at_word(big, 0.5001)
    pert2 = big[:i] + " Indeed," + big[i:j] + " truly" + big[j:]
    assert insertions(big, pert2) == ["Indeed,", "truly"]
    assert diff_sizes and max(b for _, b in diff_sizes) < 100


def test_long_rewrite_is_answered_without_a_diff(big, diff_sizes):
    orig = big[:_at_word(big, 0.25)]  # 500 KB
    rewrite = " ".join(f"**{w}**" if k % 7 == 0 else w for k, w in enumerate(orig.split()))
    assert insertions(orig, rewrite) is None
    assert answer_preserved(orig, rewrite) == (True, None)
    changed = rewrite.replace(" 417 ", " 4170 ", 1)
    assert " 417 " in rewrite  # the edit above happens
    ok, why = answer_preserved(orig, changed)
    assert not ok and "4170" in why
    assert diff_sizes == []


def test_scattered_insertions_in_a_long_text_are_aligned_linearly(big, diff_sizes):
    ws = big.split()[:60_000]
    orig = " ".join(ws)
    pert = " ".join(w + (" indeed, the data show" if k % 500 == 250 else "")
                    for k, w in enumerate(ws))
    got = insertions(orig, pert)
    assert got == ["indeed, the data show"] * 120
    assert diff_sizes == []  # the window (all but the ends) is far beyond difflib's bound
    assert answer_preserved(orig, pert) == (True, None)


@pytest.mark.parametrize("cells", [0, preserve._DIFF_MAX_CELLS])
def test_linear_alignment_agrees_on_short_edits(monkeypatch, cells):
    monkeypatch.setattr(preserve, "_DIFF_MAX_CELLS", cells)
    orig = "17 + 25 = 42. The answer is 42."
    assert insertions(orig, "Note. " + orig + " Bye.") == ["Note.", "Bye."]
    assert insertions("a b. c d.", "a b.\nX Y\nc d.") == ["X Y"]
    assert insertions("a b c d e", "a X b c Y d e") == ["X", "Y"]
    assert insertions(orig, orig.replace("42.", "43.")) is None
    assert insertions(orig, orig.replace("The answer", "Answer")) is None
    # where an insertion repeats the next original word, the original resumes where its
    # next words follow in order ("the data show" is inserted, not "data show the")
    assert insertions("so the answer is 42 .", "so Indeed the data show the answer is 42 .") \
        == ["Indeed the data show"]


def test_words_all_there_in_order_is_an_insertion_even_where_difflib_misaligns():
    # difflib's longest block ("R S T" at the start) would leave "P Q" unmatched
    assert insertions("P Q R S T", "R S T P Q W R S T") == ["R S T", "W"]


def _lost_by_definition(original: str, perturbed: str) -> list[str]:
    low = perturbed.lower()
    return sorted(e for e in entities(original) if e.lower() not in low)[:5]


@pytest.mark.parametrize("searches", [0, 16])
def test_lost_entities_matches_its_definition(monkeypatch, searches):
    monkeypatch.setattr(preserve, "_SUBSTRING_SEARCHES", searches)
    rng = random.Random(3)
    vocab = ["the", "is", "Walker", "Walkers", "walker", "Dr", "Jean-Paul", "X3", "Köln", "Syd",
             "Sydney", "Mc_Donald", ".", "!"] + [f"N{k}x" for k in range(30)]
    for _ in range(500):
        a = rng.choices(vocab, k=rng.randint(1, 40))
        b = [w if rng.random() > 0.3 else rng.choice(vocab) for w in a]
        orig, pert = " ".join(a), " ".join(b)
        assert lost_entities(orig, pert) == _lost_by_definition(orig, pert), (orig, pert)


def test_many_entities_in_a_long_text(big):
    rng = random.Random(1)
    names = [f"Zq{k:05d}name" for k in range(5000)]
    orig = big[:400_000] + " " + " ".join(f"see {n} here." for n in names)
    assert lost_entities(orig, orig.lower()) == []
    gone = sorted(rng.sample(names, 7))
    pert = orig
    for n in gone:
        pert = pert.replace(f" {n} ", " someone ")
    assert lost_entities(orig, pert) == gone[:5]
    ok, why = answer_preserved(orig, pert)
    assert not ok and gone[0] in why


def test_other_checks_on_a_long_text(big):
    orig = big[:_at_word(big, 0.25)]
    md = " ".join(f"**{w}**" if k % 5 == 0 else w for k, w in enumerate(orig.split()))
    assert words_preserved(orig, md) == (True, None)
    ok, why = words_preserved(orig, md.replace(" Kyoto ", " ", 1))
    assert not ok and "kyoto" in why
    assert final_answer_kept(orig, "Some preamble. " + orig)[0]
    assert not final_answer_kept(orig, orig + " Or 123456.")[0]
