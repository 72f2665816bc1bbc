"""`features.word_count`, the package's one length measure, counts length in every script:
each Chinese or Japanese character is a word (no spaces separate their words), a combining
mark stays in the word it follows (a Hindi vowel sign split "भारत" into "भ" + "रत"), and
decomposed (NFD) text counts as its composed (NFC) form. Space-separated Latin text counts
exactly as the plain letter/digit runs did: checked on every text of the built-in data and
of the shared real data. The old count gave 8 Chinese answers of 3-56 characters 1-6 words,
so every length control and length covariate saw almost no length on them."""

from __future__ import annotations

import csv
import json
import math
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judgeaudit.llm import features as f

# The count before this change, on which space-separated Latin text must not move.
OLD_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


@pytest.mark.parametrize(("text", "n"), [
    ("中国的首都是北京。", 8),
    ("中国的首都是北京，位于华北平原北部，是全国政治、文化和国际交往中心。", 30),
    ("東京は日本の首都です。", 10),
    ("コーヒーを飲みます", 9),        # kana and the long-vowel mark ー, one each
    ("我用Python写了3个程序", 9),     # 我 用 Python 写 了 3 个 程 序
    ("ｶﾞｲﾄﾞ", 3),                     # half-width kana with their voicing marks: ガ イ ド
])
def test_chinese_and_japanese_count_one_word_per_character(text, n):
    assert f.word_count(text) == n, f.words(text)


def test_a_longer_chinese_answer_has_more_words_and_a_length_difference():
    """Both answers are one clause without a comma: the old count gave each 1 word, so the
    length covariate's pair difference was 0 whatever the lengths."""
    short, long = "北京。", "中国的首都是北京市，位于华北平原北部。"
    assert (f.word_count(short), f.word_count(long)) == (2, 17)
    assert f.pair_differences("", long, short)["length"] == pytest.approx(math.log(18 / 3))


def test_hindi_vowel_signs_stay_in_their_word():
    text = "भारत एक विशाल देश है और इसकी राजधानी नई दिल्ली है"
    assert f.words(text) == text.split()
    assert f.word_count(text) == 11


def test_bengali_arabic_and_persian_marks_and_joiners_stay_in_their_word():
    assert f.words("বাংলাদেশে রাজনীতি") == ["বাংলাদেশে", "রাজনীতি"]
    assert f.words("يخصُّ رجلٌ") == ["يخصُّ", "رجلٌ"]
    assert f.words("می\u200cخواهم بروم") == ["می\u200cخواهم", "بروم"]  # ZWNJ inside a word


def test_decomposed_text_counts_as_its_composed_form():
    nfc = ("Tiếng Việt là ngôn ngữ chính thức của nước Cộng hòa Xã hội chủ nghĩa Việt Nam, "
           "naïve café")
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfd != nfc
    assert f.word_count(nfd) == f.word_count(nfc) == 19
    assert f.length(nfd) == f.length(nfc)


def test_korean_words_are_space_separated_and_thai_grows_with_its_text():
    """Hangul is written with spaces: a word is an eojeol, as before. Thai has no spaces and
    no dictionary here: it counts per letter, so its count grows with the text."""
    assert f.words("한국의 수도는 서울입니다") == ["한국의", "수도는", "서울입니다"]
    one = "กินข้าวแล้วหรือยัง"
    assert f.word_count(one + " " + one) == 2 * f.word_count(one) > 1


def test_english_counts_as_the_letter_digit_runs():
    for text in ["Don't stop — it's 3.5 km to the café, well-being **first**.",
                 "# Title\n\n- item one\n- item two", "naïve résumé, São Paulo", ""]:
        assert f.words(text) == OLD_WORD.findall(text), text


def _strings(x: Any) -> Iterator[str]:
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


def _latin_only(text: str) -> bool:
    return all(not c.isalpha() or unicodedata.name(c, "").startswith("LATIN") for c in text)


def test_every_latin_text_of_the_builtin_and_shared_data_counts_as_before(shared_data: Path):
    """No Latin-script text of the built-in data kinds (3 seeds) or of the shared real data
    (every JSON/JSONL/CSV string: prompts, answers, references) changes its word count."""
    from judgeaudit.data.builtin import DATASETS, generate

    texts: set[str] = set()
    for name in DATASETS:
        for seed in (0, 1, 2):
            for it in generate(name, seed):
                for field in ("prompt", "response_1", "response_2", "response", "reference"):
                    v = getattr(it, field, None)
                    if isinstance(v, str):
                        texts.add(v)
    csv.field_size_limit(10**9)
    for p in sorted(shared_data.rglob("*")):
        if p.suffix == ".json":
            texts.update(_strings(json.loads(p.read_text(encoding="utf-8"))))
        elif p.suffix == ".jsonl":
            for line in p.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    texts.update(_strings(json.loads(line)))
        elif p.suffix == ".csv":
            with p.open(newline="", encoding="utf-8") as fh:
                texts.update(s for row in csv.reader(fh) for s in row)
    latin = [t for t in texts if _latin_only(t)]
    assert len(latin) > 25000, f"expected the shared data's texts, found {len(latin)}"
    changed = [t[:80] for t in latin if f.word_count(t) != len(OLD_WORD.findall(t))]
    assert changed == [], f"{len(changed)} of {len(latin)} Latin texts changed count"
