"""A user's template that cannot show text the run's items carry is refused before any
call (exit 2, naming the file, the field, how many items carry it, and the fix): a scoring
template without {rubric} on items with a rubric, without {levels} on items with rubric
levels, without {reference_block} on items with a reference, and a pairwise template without
{reference_block} on pairs with a reference. Before, the text dropped out silently: the judge
scored without the item's rubric and the run passed. A template that states its own fixed
rubric runs on items that carry none; a pairwise template may show the reference. Through
the real CLI against a loopback server that counts requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import GOOD, FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app

pytestmark = pytest.mark.usefixtures("no_keys", "isolated_cache")

SYSTEM = "### system\nYou are a judge.\n"
OWN_RUBRIC = ("### user\nInstruction:\n{prompt}\n\nResponse:\n{response}\n\n"
              "Rubric: is the answer correct?\n1: wrong\n2: mostly wrong\n3: partly right\n"
              "4: right, some gaps\n5: right\n\nScore the response from 1 to 5.\n"
              "### prefill\nScore:\n")
PAIR = ("### user\nInstruction:\n{prompt}\n\nResponse A:\n{response_a}\n\nResponse B:\n"
        "{response_b}\n\nWhich response is better? Answer with a single letter: A or B.\n")


def points(path: Path, n: int = 4, **fields: Any) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            extra = {k: v for k, v in fields.items() if i % 2 == 0 or k == "all"}
            extra.pop("all", None)
            f.write(json.dumps({"id": f"s{i}", "prompt": f"question {i}",
                                "response": f"answer {i}", "score": 1 + i % 5, **extra}) + "\n")
    return path


def pairs(path: Path, n: int = 4, reference: str | None = None) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            good, bad = f"right {i} {GOOD}", f"wrong {i}"
            rec = {"id": f"t:{i}", "prompt": f"question {i}", "response_1": good,
                   "response_2": bad, "label": 1}
            if reference and i < 3:
                rec["reference"] = reference
            f.write(json.dumps(rec) + "\n")
    return path


def run(tmp_path: Path, srv: FakeLLMServer, data: Path, tpl: Path, key: str,
        command: str = "evaluate") -> Any:
    judge = f"openai:m?base_url={srv.openai_url}&api_key=k"
    args = [command, "--data", f"jsonl:{data}", "--out", str(tmp_path / "out"), "--json"]
    if command == "scoring-bias":
        args += ["--judge", judge, "--template", str(tpl), "--perturbations", "order_desc"]
    else:
        args += ["--judge", f"{judge}&{key}={tpl}"]
    return CliRunner().invoke(app, args)


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "mine.txt"
    p.write_text(text, encoding="utf-8")
    return p


def warned(res: Any, srv: FakeLLMServer, tpl: Path, tmp_path: Path, *words: str,
           where: tuple[str, ...] = ("warnings",)) -> None:
    """The run went on (exit 0, its calls made) and said the drop: in the terminal, in
    results.json under `where`, and in --json's warnings."""
    out = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert srv.count() > 0
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    texts = {"terminal": out, "--json": " ".join(summary["warnings"]),
             **{f"results.json {k}": " ".join(doc[k]) for k in where}}
    for name, text in texts.items():
        for w in (str(tpl), *words, "to the user section"):
            assert w in text, (name, w, text)


@pytest.mark.parametrize(("fields", "words"), [
    ({"rubric": "Is it polite?"},
     ["drops a rubric (field 'rubric') that 2 of 4 items carry", "no {rubric}",
      "add {rubric}"]),
    ({"reference": "the answer"},
     ["drops a reference answer (field 'reference') that 2 of 4 items carry",
      "no {reference_block}", "add {reference_block}"]),
    ({"rubric_levels": {str(k): f"level {k}" for k in range(1, 6)}},
     ["drops per-score rubric levels (field 'rubric_levels') that 2 of 4 items carry",
      "no {levels}", "add {levels}"]),
])
def test_a_score_template_that_drops_the_items_text_runs_and_says_so(tmp_path, fields, words):
    tpl = write(tmp_path, SYSTEM + OWN_RUBRIC)
    data = points(tmp_path / "p.jsonl", **fields)
    with FakeLLMServer(answer="4") as srv:
        warned(run(tmp_path, srv, data, tpl, "score_template"), srv, tpl, tmp_path, *words)
        assert srv.count() == 4


def test_a_score_template_with_its_own_rubric_runs_on_items_without_one(tmp_path):
    tpl = write(tmp_path, SYSTEM + OWN_RUBRIC)
    with FakeLLMServer(answer="4") as srv:
        res = run(tmp_path, srv, points(tmp_path / "p.jsonl"), tpl, "score_template")
        assert res.exit_code == 0, res.output
        assert srv.count() == 4
    assert "drops" not in res.output
    assert json.loads(res.stdout.strip().splitlines()[-1])["warnings"] == []


def test_scoring_bias_says_a_template_drops_the_items_rubric(tmp_path):
    tpl = write(tmp_path, SYSTEM + OWN_RUBRIC.replace("Score the response from 1 to 5.\n",
                                                      "{levels}\n"))
    data = points(tmp_path / "p.jsonl", rubric="Is it polite?")
    with FakeLLMServer(answer="4") as srv:
        warned(run(tmp_path, srv, data, tpl, "", "scoring-bias"), srv, tpl, tmp_path,
               "drops a rubric (field 'rubric') that 2 of 4 items carry", "add {rubric}",
               where=("warnings", "notes"))  # the scoring report shows the notes


def test_a_pairwise_template_that_drops_the_reference_runs_and_says_so(tmp_path):
    tpl = write(tmp_path, SYSTEM + PAIR)
    data = pairs(tmp_path / "pairs.jsonl", reference="Paris")
    with FakeLLMServer() as srv:
        warned(run(tmp_path, srv, data, tpl, "template"), srv, tpl, tmp_path,
               "drops a reference answer (field 'reference') that 3 of 4 items carry",
               "no {reference_block}", "add {reference_block}")
        assert srv.count() == 8


def test_a_pairwise_template_shows_the_reference_where_it_asks_for_it(tmp_path):
    tpl = write(tmp_path, SYSTEM + PAIR.replace("\nWhich", "{reference_block}\nWhich"))
    data = pairs(tmp_path / "pairs.jsonl", reference="Paris is the capital")
    with FakeLLMServer() as srv:
        res = run(tmp_path, srv, data, tpl, "template")
        assert res.exit_code == 0, res.output
        texts = [r.prompt_text for r in srv.snapshot()]
    assert len(texts) == 8
    assert sum("Reference answer:\nParis is the capital" in t for t in texts) == 6


def test_a_builtin_pairwise_template_is_not_refused_on_pairs_with_a_reference(tmp_path):
    data = pairs(tmp_path / "pairs.jsonl", reference="Paris")
    with FakeLLMServer() as srv:
        res = CliRunner().invoke(app, ["evaluate", "--data", f"jsonl:{data}", "--out",
                                       str(tmp_path / "out"), "--judge",
                                       f"openai:m?base_url={srv.openai_url}&api_key=k"])
        assert res.exit_code == 0, res.output
        assert srv.count() == 8


def test_audit_says_a_pairwise_template_drops_the_reference(tmp_path):
    """audit: counted over the data's items, each probe judging the first --n it can use;
    in the terminal, results.json, --json and the report."""
    tpl = write(tmp_path, SYSTEM + PAIR)
    data = pairs(tmp_path / "pairs.jsonl", reference="Paris")
    with FakeLLMServer() as srv:
        res = CliRunner().invoke(app, [
            "audit", "--data", f"jsonl:{data}", "--out", str(tmp_path / "out"),
            "--probes", "position", "--n", "2", "--json", "--judge",
            f"openai:m?base_url={srv.openai_url}&api_key=k&template={tpl}"])
        assert res.exit_code == 0, res.output
        assert srv.count() > 0
    words = (str(tpl), "drops a reference answer (field 'reference') that 3 of 4 items carry",
             "add {reference_block}", "each probe judges the first 2 it can use")
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    report = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    for text in (" ".join(res.output.split()), " ".join(doc["warnings"]),
                 " ".join(summary["warnings"]), report.replace("&#39;", "'")):
        for w in words:
            assert w in text, (w, text[:3000])


def test_a_custom_score_template_runs_on_builtin_data_with_a_rubric(tmp_path):
    """The reviewer's case: builtin:graded carries a rubric and levels on every item and
    cannot lose them; a template of one's own without {rubric} runs and says so."""
    tpl = write(tmp_path, SYSTEM + OWN_RUBRIC)
    res = CliRunner().invoke(app, [
        "evaluate", "--data", "builtin:graded", "--limit", "20", "--out", str(tmp_path / "out"),
        "--json", "--judge", f"sim:biased?seed=0&score_template={tpl}"])
    assert res.exit_code == 0, res.output
    warnings = json.loads(res.stdout.strip().splitlines()[-1])["warnings"]
    assert any("drops a rubric (field 'rubric') that 20 of 20 items carry" in w
               for w in warnings), warnings
    assert any("drops per-score rubric levels (field 'rubric_levels') that 20 of 20 items "
               "carry" in w for w in warnings), warnings
