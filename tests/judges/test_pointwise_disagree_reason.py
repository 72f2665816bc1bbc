"""An answer to a user's score template that gives two scores says so without naming the
template's scale (parsefix3's note on 0a060ce): pointwise.check appended "(the scale of
template FILE)" to every reason score_off_scale gave, and a judge that wrote '4' and then
'Final answer: 2' read as if its scale were at fault. Through the real CLI against a
loopback server; an off-scale score still names the template (test_user_templates)."""

from __future__ import annotations

import pytest
from fakeserver import FakeLLMServer

from tests.judges.test_user_templates import SCORE_USER, SYSTEM, run, text, write

pytestmark = pytest.mark.usefixtures("no_keys", "isolated_cache")


def test_scores_that_disagree_do_not_blame_the_templates_scale(tmp_path):
    tpl = write(tmp_path, "five.txt", SYSTEM + SCORE_USER + "Score it from 1 to 5.\n")
    answer = "4\nReasoning: it misses one requirement.\nFinal answer: 2"
    with FakeLLMServer(answer=answer, logprobs=False) as srv:  # read from the text
        res = run(tmp_path, srv, "point", tpl)
    out = text(res)
    assert "the answer gives scores that disagree (4 first, then 2; neither is guessed)" in out, \
        res.output
    assert "the scale of template" not in out, res.output


def test_an_off_scale_score_still_names_the_template(tmp_path):
    tpl = write(tmp_path, "five.txt", SYSTEM + SCORE_USER + "Score it from 1 to 5.\n")
    with FakeLLMServer(answer="8") as srv:
        res = run(tmp_path, srv, "point", tpl)
    assert f"score 8 is not on the scale 1..5 (the scale of template '{tpl}')" in text(res)
