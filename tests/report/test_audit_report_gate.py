"""The audit's report page shows its `--fail-on` gate: the outcome, the probes that tripped
it and those it could not decide. Only the terminal, --json and the compare page said so; a
passing gate with undecided probes looked like a clean pass on the page."""

from __future__ import annotations

import html
import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.report import render_report


def _audit(tmp_path, fail_on: str) -> tuple[int, dict, str]:
    out = tmp_path / fail_on.replace(",", "_")
    got = CliRunner().invoke(app, ["audit", "--judge", "sim?position=1&seed=3", "--n", "10",
                                   "--probes", "position,verbosity", "--fail-on", fail_on,
                                   "--no-cache", "--out", str(out)])
    doc = json.loads((out / "results.json").read_text())
    return got.exit_code, doc, (out / "report.html").read_text()


def test_a_passing_gate_names_its_undecided_probes_on_the_page(tmp_path) -> None:
    code, doc, page = _audit(tmp_path, "biased")
    assert code == 0 and doc["gate"]["outcome"] == "passed" and doc["gate"]["undecided"]
    text = html.unescape(page)
    assert 'id="gate"' in page and "Gate --fail-on biased: passed, undecided:" in \
        text.replace("<code>", "").replace("</code>", "").replace("<strong>", "")
    for name in doc["gate"]["undecided"]:
        assert f"<code>{name}</code>" in page
    assert "--fail-on biased,undecided</code> fails on them" in page


def test_a_tripped_gate_names_the_probes_that_tripped_it(tmp_path) -> None:
    code, doc, page = _audit(tmp_path, "biased,undecided")
    assert code == 1 and doc["gate"]["outcome"] == "tripped"
    assert "tripped" in page and "fails on them" not in page
    assert 'id="gate"' in render_report(doc)  # judgeaudit report rebuilds it from the file
