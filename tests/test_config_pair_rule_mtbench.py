"""`--pair-rule mtbench` (MT-Bench's agreement without tie) is accepted by the CLI, the config
model and the API: evaluate computed it but the config refused the name."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app


def test_the_cli_takes_the_mtbench_rule_as_its_headline(tmp_path) -> None:
    out = tmp_path / "ev"
    got = CliRunner().invoke(app, ["evaluate", "--judge", "sim?position=1&seed=3",
                                   "--data", "builtin:facts", "--limit", "30",
                                   "--pair-rule", "mtbench", "--no-cache", "--out", str(out)])
    assert got.exit_code == 0, got.output
    doc = json.loads((out / "results.json").read_text())
    assert "mtbench" in json.dumps(doc["conventions"])


def test_the_api_takes_the_mtbench_rule(tmp_path) -> None:
    res = judgeaudit.evaluate(judge="sim?position=1&seed=3", data="builtin:facts", limit=30,
                              pair_rule="mtbench", cache=tmp_path / "c.db")
    assert "mtbench" in json.dumps(res.to_json())
