"""Beauty/format: markdown and back keeps every word; stripping removes the markup."""

from __future__ import annotations

import random
import re

from judgeaudit.perturb import perturb_items
from judgeaudit.perturb.markdown import has_markdown, to_markdown, to_plain
from judgeaudit.perturb.preserve import words

TEXT = ("The capital of France is Paris. It has about 2,100,000 inhabitants. "
        "Its famous tower was built in 1889!")


def test_to_markdown_structure():
    md, _ = to_markdown(TEXT, random.Random(0))
    assert re.search(r"^## \w+", md, re.M)
    assert "**The capital of France is Paris.**" in md
    assert len(re.findall(r"^[-*] ", md, re.M)) == 2
    assert has_markdown(md) and not has_markdown(TEXT)


def test_round_trip_keeps_all_words(items):
    for it in items:
        for text in (it.response_1, it.response_2, TEXT):
            md, _ = to_markdown(text, random.Random(1))
            back = to_plain(md)
            assert not (words(text) - words(back)), (text, back)
            assert not has_markdown(back) or "```" in text


def test_to_plain_strips_markup_keeps_code_and_numbered_lists():
    md = ("# Title\n\n- **bold** item with `code`\n* [a link](http://x.y)\n1. first\n\n"
          "> quoted\n\n---\n\n```python\nxs = [1, 2]\nxs.reverse()\n```\n")
    plain = to_plain(md)
    assert "#" not in plain and "**" not in plain and "`" not in plain and "---" not in plain
    assert "bold item with code" in plain and "a link (http://x.y)" in plain
    assert "1. first" in plain and "quoted" in plain
    assert "xs = [1, 2]\nxs.reverse()" in plain


def test_markdown_perturbation_both_directions(items):
    rs = perturb_items(items, "markdown", seed=0)
    assert all(r.preserved for r in rs)
    assert all(has_markdown(getattr(r.item, r.changed)) for r in rs)
    md_items = [r.item.model_copy(update={"id": r.item.id + "!"}) for r in rs]
    back = perturb_items(md_items, "markdown", direction="to_plain")
    for r, orig in zip(back, items, strict=True):
        assert r.preserved, r.reason
        text = getattr(r.item, r.changed)
        assert not (words(getattr(orig, r.changed)) - words(text))
        assert "**" not in text and "## " not in text
