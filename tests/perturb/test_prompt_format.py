"""Judge-prompt variants: each parses as a judge template, keeps the placeholders and the
content words, and differs from the base; the chain-of-thought variant and binary
templates too."""

from __future__ import annotations

import re

import pytest

from judgeaudit.judges.templates import parse_template
from judgeaudit.perturb.cot import COT_FINAL_PATTERN, COT_SUFFIX, with_cot
from judgeaudit.perturb.preserve import words
from judgeaudit.perturb.prompt_format import (
    binary_template,
    builtin_template_text,
    fields,
    prompt_variants,
)

FIELDS = {"pairwise_v1": dict(prompt="Q?", response_a="first", response_b="second"),
          "pointwise_v1": dict(prompt="Q?", response="resp", reference_block="", rubric="R",
                               levels="1: bad\n5: good")}


@pytest.mark.parametrize("name,expected", [
    ("pairwise_v1", {"labels_numeric", "clause_order", "wording", "instruction_last"}),
    ("pointwise_v1", {"clause_order", "wording", "rubric_first"}),
])
def test_variants_parse_render_and_differ(name, expected):
    base_text = builtin_template_text(name)
    base = parse_template(name, base_text)
    vs = prompt_variants(base_text)
    assert {v.name for v in vs} == expected
    for v in vs:
        t = parse_template(v.name, v.text)
        assert fields(v.text) == fields(base_text)
        rendered = t.render_user(**FIELDS[name])
        for val in FIELDS[name].values():
            assert val in rendered
        assert t.sha256 != base.sha256
        assert t.prefill == base.prefill
        if v.name in ("clause_order", "instruction_last", "rubric_first"):
            # a reordering: the same words, in another order
            assert words(t.system + t.user) == words(base.system + base.user)
            assert (t.system, t.user) != (base.system, base.user)


def test_labels_numeric_and_clause_order_details():
    vs = {v.name: v for v in prompt_variants(builtin_template_text("pairwise_v1"))}
    num = parse_template("n", vs["labels_numeric"].text)
    assert "Response 1:" in num.user and "Response 2:" in num.user and "A or B" not in num.user
    assert vs["labels_numeric"].choices == ("1", "2")
    assert vs["labels_numeric"].label_map == {"1": "A", "2": "B"}
    co = parse_template("c", vs["clause_order"].text)
    assert "more faithful to the instruction, more helpful and more correct" in co.system
    assert co.system.startswith("You are a careful, impartial judge.")
    last = parse_template("l", vs["instruction_last"].text)
    assert last.user.index("{response_b}") < last.user.index("{prompt}")


def test_binary_templates():
    pf, yn = binary_template(("PASS", "FAIL")), binary_template(("YES", "NO"))
    assert pf.choices == ("PASS", "FAIL") and yn.choices == ("YES", "NO")
    for v in (pf, yn):
        t = parse_template(v.name, v.text)
        assert fields(v.text) == {"prompt", "response", "reference_block"}
        assert all(lab in t.user for lab in v.choices)
    # the same wording apart from the labels
    strip = lambda s: re.sub(r"PASS|FAIL|YES|NO|Verdict|Answer:", "", s)  # noqa: E731
    assert strip(parse_template("a", pf.text).user) == strip(parse_template("b", yn.text).user)


def test_cot_variant():
    t = parse_template("cot", with_cot(builtin_template_text("pairwise_v1")))
    assert t.prefill == "" and t.user.endswith(COT_SUFFIX)
    assert "{response_a}" in t.user and "single letter" not in t.user
    ok = "Both are fine.\nA has an error.\nThe better response is Response B."
    assert re.search(COT_FINAL_PATTERN, ok).group(1) == "B"
    with pytest.raises(ValueError, match="not a pairwise template"):
        with_cot(builtin_template_text("pointwise_v1"))
