"""The help of quantify --factors and mitigate --factor says what --factors-from allows
(since 86cf6f7: 'found' among other names, and --factor naming one of the file's factors),
in `judgeaudit schema` (which carries the field descriptions) and in --help."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def _description(command: str, field: str) -> str:
    res = runner.invoke(app, ["schema", command])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)["properties"][field]["description"]


def test_quantify_factors_help_says_found_may_stand_among_others():
    d = _description("quantify", "factors")
    assert "'found' with --factors-from, alone or among others (found,verbosity)" in d
    res = runner.invoke(app, ["quantify", "--help"], env={"COLUMNS": "300"})
    assert "alone or among others (found,verbosity)" in " ".join(res.output.split())


def test_mitigate_factor_help_says_it_names_one_of_the_files_factors():
    d = _description("mitigate", "factor")
    assert "with --factors-from, one of its factors" in d
    assert "default verbosity" in d
