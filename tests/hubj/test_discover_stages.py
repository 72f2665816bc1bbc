"""discover's outcome stage by stage: a G-module stage whose answers could not be read, a
held-out set too small to validate on, and the real cause of "no consensus disagreement"
first (T4's findings on `judgeaudit discover`)."""

from __future__ import annotations

import json
import re
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm.base import Provider, Request, Response
from judgeaudit.llm.registry import register

runner = CliRunner()
ASKED: dict[str, int] = {"n": 0}
ANSI = "red \x1b[31mcolor\x1b[0m \x1b]0;pwned\x07 [bold]name[/bold]"


@pytest.fixture(autouse=True)
def _stub_embedder(stub_embedder, isolated_cache):
    ASKED["n"] = 0


@register
class _StageScript(Provider):
    """The G modules as a chat model answers them: whole objects (the prefill not
    continued). Model "noscore" answers G_score in prose, as T4's server did."""

    name: ClassVar[str] = "test-hubj-stages"
    deterministic: ClassVar[bool] = True

    async def generate(self, request: Request) -> Response:
        ASKED["n"] += 1
        mod = request.meta["module"]
        if mod == "G_extract":
            return Response(text='{"features": [{"name": "longer response", "reason": "more '
                                 'words", "definition": "The response has many more words."}]}')
        if mod == "G_construct":
            if self.model == "ansi":  # a name with acting characters and Rich markup
                return Response(text=json.dumps({"factors": [{"name": ANSI, "definition":
                                                              "Color codes inside."}]}))
            return Response(text='{"factors": [{"name": "longer response", "definition": '
                                 '"The response has many more words."}]}')
        if mod == "G_assign":
            return Response(text='{"factor": 1}')
        if mod == "G_crit":
            return Response(text=json.dumps({str(k): f"level {k}" for k in range(1, 6)}))
        if self.model == "noscore":
            return Response(text="It is rather strong, I would say.")
        return Response(text='{"score": 3}')


def _pairs(path, n: int, n_agree: int = 4) -> str:
    """n items where the humans prefer the short response, which sim?length=5 never picks
    (n consensus disagreements), then `n_agree` items where they prefer the long one."""
    long = " ".join(["word"] * 120)
    rows = [{"id": f"d{i}", "prompt": f"q {i}", "response_1": f"ok {i}",
             "response_2": f"{long} {i}", "label": 1} for i in range(n)]
    rows += [{"id": f"a{i}", "prompt": f"p {i}", "response_1": f"fine {i}",
              "response_2": f"{long} {i}", "label": 2} for i in range(n_agree)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def _discover(tmp_path, data: str, llm: str = "ok", *extra: str):
    return runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0", "--llm",
                               f"test-hubj-stages:{llm}", "--data", data, "--iterations", "1",
                               *extra, "--out", str(tmp_path / "o")])


def test_unreadable_g_score_answers_fail_the_run_naming_the_stage(tmp_path):
    """Every G_score answer unreadable: every factor n = 0, yet exit 0 (--min-valid met by
    the G_extract answers, G-module answers counted against --max-failed nowhere, the
    client's stop never firing after readable first answers)."""
    res = _discover(tmp_path, _pairs(tmp_path / "p.jsonl", 8), "noscore")
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    st = doc["json_stats"]["G_score"]
    assert st["failed"] == st["calls"] > 0
    msg = doc["run"]["message"]
    assert "no factor could be validated: none of the 4 held-out items" in msg, msg
    assert (f"{st['failed']} of {st['calls']} G_score requests got no usable answer "
            "(--max-failed 0.2 allows") in msg, msg
    assert "G_extract requests" not in msg  # only the stage that failed


def test_a_stage_over_max_failed_fails_the_run_though_some_scores_were_read(tmp_path):
    """Per stage: half the G_score answers unreadable is more than --max-failed 0.2."""
    res = _discover(tmp_path, _pairs(tmp_path / "p.jsonl", 8), "ok")
    assert res.exit_code == 0, res.output  # all readable: ok
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    from judgeaudit.hubj.llmjson import JSONStats
    from judgeaudit.hubj.run import _stage_reasons

    st = JSONStats(calls=10, strict=5, failed=5)
    st.examples.append({"module": "G_score", "item_id": "x", "raw": "r",
                        "error": "bad \x1b[31mscore"})
    why = _stage_reasons({"G_score": st}, 0.2, doc["validation"])
    assert why == ["5 of 10 G_score requests got no usable answer (--max-failed 0.2 allows 2; "
                   "the first: bad \\x1b[31mscore)"]
    assert _stage_reasons({"G_score": JSONStats(calls=10, strict=8, failed=2)}, 0.2,
                          doc["validation"]) == []


@pytest.mark.parametrize("n_dis", [0, 1])
def test_too_few_disagreements_to_hold_out_fail_before_any_g_module_call(tmp_path, n_dis):
    """One consensus disagreement: round(0.5 * 1) = 0 held out, "G_score on 0 held-out
    items", every row n = 0, exit 0."""
    res = _discover(tmp_path, _pairs(tmp_path / "p.jsonl", n_dis))
    assert res.exit_code == 3, res.output
    msg = json.loads((tmp_path / "o" / "results.json").read_text())["run"]["message"]
    if n_dis:
        assert ("too few consensus disagreements with the humans: 1 on the 5 items, of which "
                "--holdout 0.5 holds out 0 to validate on and leaves 1 to discover from; "
                "discover needs at least 2") in msg, msg
    else:
        assert "no consensus disagreement" in msg
    assert ASKED["n"] == 0


def test_a_p_value_on_one_item_is_a_dash_with_its_reason_not_nan(tmp_path):
    res = _discover(tmp_path, _pairs(tmp_path / "p.jsonl", 2))
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    row = doc["validation"]["sets"]["found"]["factors"][0]
    assert row["n"] == 1 and row["p_t"] is None and row["p_t_note"] == "n < 2"
    text = " ".join(res.output.split())
    assert "nan" not in text and "- (n < 2)" in text


def test_garbage_judge_leads_with_its_unreadable_answers(tmp_path):
    """The judge's unreadable answers are why there is no consensus disagreement: they came
    last, after "no consensus disagreement ... use more or harder items"."""
    from fakeserver import FakeLLMServer

    with FakeLLMServer(answer="I like turtles very much.") as srv:
        res = runner.invoke(app, ["discover", "--judges",
                                  f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off",
                                  "--llm", "test-hubj-stages:ok", "--data",
                                  _pairs(tmp_path / "p.jsonl", 6), "--out",
                                  str(tmp_path / "o")])
    assert res.exit_code == 3, res.output
    msg = json.loads((tmp_path / "o" / "results.json").read_text())["run"]["message"]
    assert re.match(r"run failed: (\d+) of \1 judge answers could not be read as a verdict",
                    msg), msg
    assert "; so no consensus disagreement with the humans" in msg, msg


def test_model_written_factor_names_show_their_escapes_in_the_terminal(tmp_path):
    """A G-module's factor name with ESC sequences printed raw in discover's table (and in
    quantify's, given the discover result): the terminal recoloured, its title set."""
    res = _discover(tmp_path, _pairs(tmp_path / "p.jsonl", 8), "ansi")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [f["name"] for f in doc["discover"]["factors"]] == [ANSI]
    assert "\x1b" not in res.output and "\x07" not in res.output
    for shown in (r"\x1b[31mcolor", r"\x07", "[bold]name"):  # escapes, markup as written
        assert shown in res.output, res.output
    q = runner.invoke(app, ["quantify", "--judges", "simhubj", "--data",
                            _pairs(tmp_path / "q.jsonl", 0, 12), "--factors", "found",
                            "--factors-from", str(tmp_path / "o" / "results.json"),
                            "--out", str(tmp_path / "q")])
    assert q.exit_code == 0, q.output
    assert "\x1b" not in q.output and "\x07" not in q.output
    assert "pwned" in q.output
