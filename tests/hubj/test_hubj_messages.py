"""HUB-J messages name the part that failed: the --scorer (not the judges' verdicts), a
G-module's unreadable answers (not "verdicts"), the option of a model spec that cannot be
made (not "judge"), and what --apply expected (T4's findings, item 7)."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
LONG = " ".join(["word"] * 120)


def _items(path, n: int = 10) -> str:
    rows = [{"id": f"i{i}", "prompt": f"q {i}", "response_1": f"ok {i}" + " x" * (i % 4),
             "response_2": f"{LONG} {i}", "label": 1 + i % 2} for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def test_a_garbage_scorer_is_named_as_the_cause(tmp_path, isolated_cache):
    """It read "only 0 of 20 judge verdicts on queries with factor scores have a valid
    verdict", and the client's stop said the answers "could not be read as verdicts"."""
    with FakeLLMServer(answer="I like turtles very much.") as srv:
        scorer = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = runner.invoke(app, ["mitigate", "--judges", "sim?length=2&seed=1", "--scorer",
                                  scorer, "--data", _items(tmp_path / "d.jsonl"), "--factor",
                                  "length", "--out", str(tmp_path / "o")])
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    msg = doc["run"]["message"]
    assert msg.startswith(f"run failed: the factor scorer (--scorer {doc['scorer']}) failed: "
                          "20 of 20 G_score requests got no usable answer"), msg
    assert "so 0 of 10 queries have factor scores" in msg
    assert "judge verdicts" not in msg
    assert "could not be read as G_score JSON objects" in doc["calls"]["not_sent_why"]
    assert "verdicts" not in doc["calls"]["not_sent_why"]


def test_an_unreachable_scorer_is_told_to_wait_in_its_own_spec():
    """The client's advice for a server still loading is worded for a judge ("let the judge
    wait for it: wait=SECONDS in its spec"); for the scorer it names --scorer."""
    from types import SimpleNamespace

    from judgeaudit.hubj.llmjson import JSONStats
    from judgeaudit.hubj.run import _scorer_failed

    first = ("openai: connection to http://127.0.0.1:9/v1 failed (ConnectError); if the "
             "server is still starting (loading its model), let the judge wait for it: "
             "wait=SECONDS in its spec")
    scorer = SimpleNamespace(stats=SimpleNamespace(not_sent=20, not_sent_why=None,
                                                   first_error=first, first_unreadable=None))
    run = {"status": "failed", "message": "run failed: only 0 of 20 judge verdicts on queries "
                                          "with factor scores have a valid verdict"}
    got = _scorer_failed(run, JSONStats(calls=20, failed=20), scorer, 10, 0, 0.2,
                         "openai:m?base_url=http://127.0.0.1:9/v1")
    assert got["message"] == (
        "run failed: the factor scorer (--scorer openai:m?base_url=http://127.0.0.1:9/v1) "
        "failed: 20 of 20 G_score requests got no usable answer (--max-failed 0.2 allows 4), "
        "so 0 of 10 queries have factor scores; the first: openai: connection to "
        "http://127.0.0.1:9/v1 failed (ConnectError); if the server is still starting "
        "(loading its model), let the scorer wait for it: wait=SECONDS in its --scorer spec")
    ok = {"status": "ok", "message": ""}  # a scorer within --max-failed is no cause
    assert _scorer_failed(ok, JSONStats(calls=20, strict=18, failed=2), scorer, 10, 9, 0.2,
                          "x") is ok


@pytest.mark.parametrize(("args", "said"), [
    (["discover", "--judges", "sim", "--llm", "replay:foo.csv"], "--llm 'replay:foo.csv': "),
    (["discover", "--judges", "sim", "--llm", "nosuch:x"], "--llm 'nosuch:x': unknown"),
    (["mitigate", "--judges", "sim", "--scorer", "nosuch:x"], "--scorer 'nosuch:x': unknown"),
    (["quantify", "--judges", "sim", "--generator", "nosuch:x"],
     "--generator 'nosuch:x': unknown"),
    (["quantify", "--judges", "sim", "--generator", "simhubj", "--checker", "nosuch:x"],
     "--checker 'nosuch:x': unknown"),
])
def test_a_model_spec_that_cannot_be_made_is_named_by_its_option(args, said, tmp_path,
                                                                 isolated_cache):
    res = runner.invoke(app, [*args, "--data", _items(tmp_path / "d.jsonl"), "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert said in text and "judge '" not in text, text


def test_apply_given_a_jsonl_file_says_a_mitigate_result_was_expected(tmp_path,
                                                                      isolated_cache):
    data = _items(tmp_path / "d.jsonl")
    res = runner.invoke(app, ["mitigate", "--judges", "sim", "--apply",
                              str(tmp_path / "d.jsonl"), "--data", data, "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "not the results.json of a `mitigate` run (a fit)" in text, text
    (tmp_path / "list.json").write_text("[1, 2]")
    res = runner.invoke(app, ["mitigate", "--judges", "sim", "--apply",
                              str(tmp_path / "list.json"), "--data", data, "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert "not the results.json of a `mitigate` run" in " ".join(res.output.split())
