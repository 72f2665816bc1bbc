import pytest

from judgeaudit.judges.templates import builtin_templates, load_template, parse_template


def test_builtin_templates_load_and_have_stable_hashes():
    names = builtin_templates()
    assert {"pairwise_v1", "pointwise_v1"} <= set(names)
    t1, t2 = load_template("pairwise_v1"), load_template("pairwise_v1")
    assert t1.sha256 == t2.sha256 and len(t1.sha256) == 64
    assert t1.prefill == "The better response is Response"


def test_changed_wording_changes_hash(tmp_path):
    base = load_template("pairwise_v1")
    text = (f"### system\n{base.system} Be strict.\n### user\n{base.user}\n"
            f"### prefill\n{base.prefill}\n")
    p = tmp_path / "mine.txt"
    p.write_text(text)
    mine = load_template(str(p))
    assert mine.name == "mine" and mine.sha256 != base.sha256


def test_untrusted_text_with_braces_is_inserted_verbatim():
    t = load_template("pairwise_v1")
    evil = "{response_b} {0} {__class__}"
    out = t.render_user(prompt="q", response_a=evil, response_b="x")
    assert evil in out


def test_template_without_user_section_is_refused():
    with pytest.raises(ValueError, match="lacks section"):
        parse_template("bad", "### system\nhello\n")


def test_unknown_template_lists_builtins():
    with pytest.raises(ValueError, match="pairwise_v1"):
        load_template("nope")
