"""format_sensitivity counts every variant's unreadable answers, not only the reported one's.

Its effect is the variant that moves accuracy most; the other variants' left-out items went
uncounted, so a variant whose every answer was unreadable (labels_numeric on a judge that
answers only letters: 14/14) showed n = 0 beside the probe's n_invalid 0, dropped {} and no
note. A real OpenAI-shaped server on loopback: prompts with numeric labels get prose, and the
wording variant's prompts of items 2 and 3 too."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, default_answer, write_pairs
from typer.testing import CliRunner

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _answer(text: str) -> str:
    if "Response 1:" in text:
        return "Both responses have merit."
    if "reply with one letter only" in text and re.search(r"question item [23]\n", text):
        return "Hard to say."
    return default_answer(text)


def test_every_variants_unreadable_answers_are_counted_and_named(tmp_path):
    from judgeaudit.cli.main import app

    write_pairs(tmp_path / "pairs.jsonl", 10)
    out = tmp_path / "out"
    with FakeLLMServer(answer=_answer) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, ["audit", "--judge", spec, "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--probes",
                                  "format_sensitivity", "--concurrency", "2",
                                  "--max-failed", "0.9", "--out", str(out)])
    assert res.exit_code == 0, res.output
    fs = json.loads((out / "results.json").read_text())["probes"]["format_sensitivity"]
    assert fs["rates"]["labels_numeric: accuracy change"]["n"] == 0
    # every item left out of labels_numeric: all 10 distinct items counted as unparseable
    assert fs["dropped"] == {"unparseable": 10}
    assert fs["n_invalid"] == 10
    notes = " ".join(fs["notes"])
    assert ("variant 'labels_numeric' measured nothing: 10 of 10 items without a valid verdict "
            "(unparseable 10)") in notes
    assert "variant 'wording': 2 of 10 items left out (unparseable 2)" in notes
