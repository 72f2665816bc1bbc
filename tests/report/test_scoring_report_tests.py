"""The scoring-bias page shows what the terminal shows: the Holm-adjusted questions (which
templates move scores, which change agreement with gold) and the heatmap's own columns (half
points such as "2.5" were dropped from the shares: the page used fixed columns 1-5)."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def _text(path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", path.read_text()))


def test_the_page_gives_the_adjusted_questions_and_the_run_s_columns(tmp_path,
                                                                     isolated_cache):
    res = runner.invoke(app, ["scoring-bias", "--judge", "sim?seed=1", "--data",
                              "builtin:graded", "--limit", "20", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    text = _text(tmp_path / "report.html")
    m = re.search(r"moves scores \(shift\) Wilcoxon signed-rank [^0-9]*(\d+)", text)
    assert m and int(m.group(1)) >= 2, text[:2000]
    assert "significant after holm (alpha 0.05)" in text
    # a result whose scores include half points: its heatmap has the column
    doc = json.loads((tmp_path / "results.json").read_text())
    doc["heatmap"]["cols"] = ["1", "2", "2.5", "3", "4", "5", "invalid"]
    for p in doc["perturbations"].values():
        p["distribution"]["2.5"] = 7
    (tmp_path / "results.json").write_text(json.dumps(doc))
    assert runner.invoke(app, ["report", str(tmp_path)]).exit_code == 0
    assert ">2.5<" in (tmp_path / "report.html").read_text()
