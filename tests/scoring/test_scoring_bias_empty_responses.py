"""scoring-bias warns of empty or whitespace-only responses, as evaluate does on the same file.

The jsonl loader notes them ("judged as empty answers"); evaluate and audit put the note in
their warnings, scoring-bias dropped it, so 2 of 6 responses judged as "Response:\\n\\n\\n"
went unsaid. The sim judge (no server needed: the loader's note is what is checked)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

RUN = CliRunner()


@pytest.fixture(autouse=True)
def _cache(isolated_cache):
    return isolated_cache


def _write(path) -> None:
    rows = [("a", "Capital of Italy?", "Rome", 5), ("b", "Capital of Italy?", "", 1),
            ("c", "2+2?", "   ", 1), ("d", "2+2?", "4", 5), ("e", "Sky?", "blue", 4),
            ("f", "Sky?", "green", 2)]
    path.write_text("".join(json.dumps({"id": i, "prompt": p, "response": r, "score": s}) + "\n"
                            for i, p, r, s in rows), encoding="utf-8")


def test_scoring_bias_warns_of_empty_responses_as_evaluate_does(tmp_path):
    data = tmp_path / "point.jsonl"
    _write(data)
    out = tmp_path / "out"
    res = RUN.invoke(app, ["scoring-bias", "--judge", "sim?seed=1", "--data", f"jsonl:{data}",
                           "--perturbations", "order_desc", "--out", str(out)],
                     catch_exceptions=False)
    assert res.exit_code == 0, res.output
    want = "2 of 6 items have an empty response (first: line 2, field 'response')"
    warnings = json.loads((out / "results.json").read_text())["warnings"]
    assert any(want in w for w in warnings), warnings
    assert want in " ".join(res.output.split())
    ev = RUN.invoke(app, ["evaluate", "--judge", "sim?seed=1", "--data", f"jsonl:{data}",
                          "--out", str(tmp_path / "ev")], catch_exceptions=False)
    assert want in " ".join(ev.output.split())
