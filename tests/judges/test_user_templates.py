"""A user's judge template that its judge would fill wrongly is refused when it is loaded,
before any call: a placeholder the judge needs missing (the judge never saw Response B and
still answered: exit 0 with numbers), one it does not fill or braces that are no placeholder
(str.format failed mid-run as "a bug in judgeaudit", exit 3), verdict labels it never names
(every call paid, every answer unreadable), a score template on another scale than the
judge's 1..5 (read on 1..5 without a word). Through the real CLI, against a loopback server
that counts the requests: a refused template sends none and exits 2 naming the file. The
built-in templates render as before (their prompts are cache keys)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.data import PairwiseItem, PointwiseItem
from judgeaudit.judges import PairwiseJudge, RubricJudge
from judgeaudit.judges.binary import BinaryJudge
from tests.cli.test_cli import write_items

pytestmark = pytest.mark.usefixtures("no_keys", "isolated_cache")

SYSTEM = "### system\nYou are a judge.\n"
ASK = "Which response is better? Answer with a single letter: A or B."
PAIR_USER = ("### user\nInstruction:\n{prompt}\n\nResponse A:\n{response_a}\n\n"
             "Response B:\n{response_b}\n\n")
SCORE_USER = ("### user\nInstruction:\n{prompt}\n\nResponse:\n{response}\n{reference_block}\n"
              "Rubric: {rubric}\n{levels}\n\n")


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def write_points(path: Path, n: int = 4) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"s{i}", "prompt": f"question {i}",
                                "response": f"answer {i}", "score": 1 + i % 5}) + "\n")


def run(tmp_path: Path, srv: FakeLLMServer, kind: str, tpl: Path | str,
        command: str = "evaluate") -> Any:
    """`command` on 4 items with the template as the judge's pairwise (`kind` "pair") or
    scoring template; returns the CLI result."""
    data = tmp_path / ("pairs.jsonl" if kind == "pair" else "points.jsonl")
    if kind == "pair":
        write_items(data, 4)
    else:
        write_points(data)
    judge = f"openai:m?base_url={srv.openai_url}&api_key=k"
    args = [command, "--data", f"jsonl:{data}", "--out", str(tmp_path / "out")]
    if command == "scoring-bias":
        args += ["--judge", judge, "--template", str(tpl)]
    else:
        key = "template" if kind == "pair" else "score_template"
        args += ["--judge", f"{judge}&{key}={tpl}"]
    return CliRunner().invoke(app, args)


def text(res: Any) -> str:
    return " ".join(res.output.split())


def refused(res: Any, srv: FakeLLMServer, path: Path, *words: str) -> str:
    """Exit 2, no request sent, the file and each of `words` named, no 'bug' wording."""
    out = text(res)
    assert res.exit_code == 2, res.output
    assert srv.count() == 0
    assert str(path) in out and "a bug" not in out
    for w in words:
        assert w in out, (w, out)
    return out


MUST_PAIR = "must use {prompt}, {response_a} and {response_b}"


@pytest.mark.parametrize(("body", "named"), [
    (PAIR_USER.replace("Response B:\n{response_b}\n\n", "") + ASK, "lacks {response_b}"),
    (PAIR_USER.replace("{prompt}", "") + ASK, "lacks {prompt}"),
    (PAIR_USER.replace("{response_b}", "{response_B}") + ASK, "names {response_B}"),
    (PAIR_USER.replace("{prompt}\n", "{prompt}\nDomain: {domain}\n") + ASK, "names {domain}"),
])
def test_a_pairwise_template_missing_or_naming_a_wrong_placeholder_is_refused(
        tmp_path, body, named):
    tpl = write(tmp_path, "mine.txt", SYSTEM + body + "\n")
    with FakeLLMServer() as srv:
        res = run(tmp_path, srv, "pair", tpl)
        refused(res, srv, tpl, named, MUST_PAIR)


def test_a_placeholder_in_the_system_section_is_refused(tmp_path):
    tpl = write(tmp_path, "sys.txt", "### system\nYou are a judge for {domain}.\n"
                + PAIR_USER + ASK + "\n")
    with FakeLLMServer() as srv:
        out = refused(run(tmp_path, srv, "pair", tpl), srv, tpl, "system section names "
                      "{domain}", "sent as written")
    assert "user section only" in out


def test_json_braces_in_the_user_section_are_refused_with_the_doubling_hint(tmp_path):
    body = PAIR_USER + 'Answer as JSON: {"verdict": "A"} or {"verdict": "B"}.'
    tpl = write(tmp_path, "json.txt", SYSTEM + body + "\n")
    with FakeLLMServer() as srv:
        refused(run(tmp_path, srv, "pair", tpl), srv, tpl, """'{"verdict": "A"}'""",
                "no placeholder", "written doubled: {{ and }}")


def test_doubled_braces_are_sent_as_single_ones_and_system_braces_as_written(tmp_path):
    body = PAIR_USER + 'Answer as JSON: {{"verdict": "A"}} or {{"verdict": "B"}}.'
    tpl = write(tmp_path, "json2.txt", '### system\nYou are a judge. Answer like {"v": 1}.\n'
                + body + "\n")
    with FakeLLMServer(answer='{"verdict": "A"}') as srv:
        res = run(tmp_path, srv, "pair", tpl)
        assert res.exit_code == 0, res.output
        assert srv.count() == 8
        sent = srv.requests[0].prompt_text
    assert 'Answer as JSON: {"verdict": "A"} or {"verdict": "B"}.' in sent
    assert 'Answer like {"v": 1}.' in sent


@pytest.mark.parametrize(("ask", "answer"), [("Answer 1 or 2.", "2"), ("Answer X or Y.", "X")])
def test_labels_the_template_never_names_are_refused_with_what_the_reader_takes(
        tmp_path, ask, answer):
    first, second = ask.split()[1], ask.split()[3].rstrip(".")
    body = (PAIR_USER.replace("Response A", f"Response {first}")
            .replace("Response B", f"Response {second}") + "Which response is better? " + ask)
    tpl = write(tmp_path, "labels.txt", SYSTEM + body + "\n")
    with FakeLLMServer(answer=answer) as srv:
        refused(run(tmp_path, srv, "pair", tpl), srv, tpl, "never names the verdict label",
                "'B'", "'### labels'", "1, 2")
    # declared, the same template runs and its answers are read
    tpl.write_text(SYSTEM + body + f"\n### labels\n{first}, {second}\n", encoding="utf-8")
    with FakeLLMServer(answer=answer) as srv:
        res = run(tmp_path, srv, "pair", tpl)
        assert res.exit_code == 0, res.output
        assert srv.count() == 8 and "0 invalid verdicts of 8" in text(res)


def test_answers_in_labels_the_template_does_not_declare_name_it_when_the_run_fails(tmp_path):
    # Names A and B (so the load check passes), yet asks for 1/2: every answer unreadable.
    body = PAIR_USER + "Which is better? Answer 1 if Response A is, 2 if Response B is."
    tpl = write(tmp_path, "onetwo.txt", SYSTEM + body + "\n")
    with FakeLLMServer(answer="2") as srv:
        res = run(tmp_path, srv, "pair", tpl)
    out = text(res)
    assert res.exit_code == 3, res.output
    assert f"no verdict label of template '{tpl}' (A or B;" in out
    assert "declares them under '### labels'" in out


def test_a_score_template_missing_the_response_is_refused(tmp_path):
    body = SCORE_USER.replace("{response}", "") + "Score the response from 1 to 5."
    tpl = write(tmp_path, "noresp.txt", SYSTEM + body + "\n### prefill\nScore:\n")
    with FakeLLMServer(answer="3") as srv:
        refused(run(tmp_path, srv, "point", tpl), srv, tpl, "lacks {response}",
                "must use {prompt} and {response}", "may also use {reference_block}")


@pytest.mark.parametrize("command", ["evaluate", "scoring-bias"])
@pytest.mark.parametrize("scale", ["Score the response from 1 to 10.",
                                   "Give a score out of 10.", "Rate it on a 0-10 scale."])
def test_a_score_template_on_another_scale_is_refused(tmp_path, command, scale):
    tpl = write(tmp_path, "ten.txt", SYSTEM + SCORE_USER + scale + "\n### prefill\nScore:\n")
    with FakeLLMServer(answer="4") as srv:
        refused(run(tmp_path, srv, "point", tpl, command), srv, tpl,
                "another scale than 1..5", repr(scale), "Rewrite the template")


@pytest.mark.parametrize(("line", "refused"), [
    ("Score between 1 and 10.", True), ("Give it a score like 7/10.", True),
    ("Rate it on a 10-point scale.", True), ("Score from 0 to 5.", True),
    ("Score the response from 1 to 5.", False), ("Give a score out of 5.", False),
    ("Explain in 1-2 sentences, then score it.", False), ("Use 1-10 words.", False),
])
def test_the_scale_check_reads_lines_about_scores(tmp_path, line, refused):
    from judgeaudit.judges.templates import check_template, load_template

    tpl = load_template(str(write(tmp_path, "s.txt", SYSTEM + SCORE_USER + line + "\n")))
    if refused:
        with pytest.raises(ValueError, match="another scale than 1..5"):
            check_template(tpl, "pointwise")
    else:
        check_template(tpl, "pointwise")


def test_an_off_scale_answer_to_a_user_template_names_it(tmp_path):
    tpl = write(tmp_path, "five.txt", SYSTEM + SCORE_USER + "Score it from 1 to 5.\n")
    with FakeLLMServer(answer="8") as srv:
        res = run(tmp_path, srv, "point", tpl)
    assert res.exit_code == 3, res.output
    assert (f"score 8 is not on the scale 1..5 (the scale of template '{tpl}')"
            in text(res))


def test_a_user_template_that_fits_runs(tmp_path):
    tpl = write(tmp_path, "fine.txt", SYSTEM + PAIR_USER + ASK + "\n")
    with FakeLLMServer() as srv:
        res = run(tmp_path, srv, "pair", tpl)
        assert res.exit_code == 0, res.output
        assert srv.count() == 8 and "accuracy" in text(res)


# sha256 of the requests the built-ins render for items whose text holds braces, taken
# before the load checks were added: the prompts (and so the cache keys) did not change.
BUILTIN_RENDERED = {
    "pairwise_v1": "b34e4ee02df52f8d",
    "pairwise_cot_v1": "bf458ac52d529dd2",
    "pointwise_v1": "2761dd123fb069e5",
    "pointwise_scoring_v1": "72736b9b036e07cd",
    "binary_pass_fail_v1": "ec53691fc240d88a",
    "binary_yes_no_v1": "51552269c9a285ac",
}
PAIR = PairwiseItem(id="p", prompt="q {x} {{y}}", response_1="one {response_b}",
                    response_2="two }{")
POINT = PointwiseItem(id="s", prompt="q {prompt}", response="r {0}", reference="ref {")


def _digest(reqs: list[Any]) -> str:
    blob = json.dumps([[(m.role, m.content) for m in r.messages] + [r.prefill, list(r.choices)]
                       for r in reqs])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(BUILTIN_RENDERED))
def test_builtin_templates_render_as_before(name):
    if name.startswith("pairwise"):
        j = PairwiseJudge(None, name)
        reqs = [j.request(PAIR, "12"), j.request(PAIR, "21")]
    elif name.startswith("pointwise"):
        reqs = [RubricJudge(None, name).request(POINT)]
    else:
        reqs = [BinaryJudge(None, name).request(POINT)]
    assert _digest(reqs) == BUILTIN_RENDERED[name]
