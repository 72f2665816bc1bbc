"""`judgeaudit scoring-bias` through typer on a simulated judge: files written, table printed,
bad input refused with a clear message, a second run served from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from judgeaudit.cli.scoring_cmd import register

app = typer.Typer()


@app.callback()
def _root() -> None:
    """Group, so the command keeps its name."""


register(app)
RUN = CliRunner()


def _invoke(*args: str):
    return RUN.invoke(app, ["scoring-bias", *args], catch_exceptions=False)


def test_sim_run_writes_results_and_report(tmp_path: Path) -> None:
    out = tmp_path / "o"
    cache = tmp_path / "c.sqlite"
    args = ("--judge", "sim?quality=6&order_bias=1&crn=1", "--data", "builtin:graded",
            "--limit", "60", "--perturbations", "order_desc,ref_2", "--ids",
            "grades=F,D,C,B,A", "--repeats", "2", "--out", str(out), "--cache", str(cache))
    r = _invoke(*args)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert res["schema_version"] == 1 and res["command"] == "scoring-bias"
    assert list(res["perturbations"]) == ["baseline", "order_desc", "ref_2", "ids_grades"]
    assert res["perturbations"]["order_desc"]["shift"]["value"] > 0.5
    assert res["perturbations"]["ref_2"]["n_missing"] == 0  # graded: its own level-2 answers
    assert res["calls"]["made"] == 60 * 5
    html = (out / "report.html").read_text()
    assert "ids_grades" in html and "<svg" in html
    assert "recommended template" in r.output and "calls: 300 made" in r.output
    again = _invoke(*args)
    assert "calls: 0 made, 300 from cache" in again.output


def test_bad_input_is_refused(tmp_path: Path) -> None:
    r = _invoke("--judge", "sim", "--perturbations", "order_up", "--out", str(tmp_path))
    assert r.exit_code == 2 and "unknown scoring perturbation" in r.output
    r = _invoke("--judge", "sim", "--data", "builtin:facts", "--out", str(tmp_path))
    assert r.exit_code == 2 and "no pointwise items" in r.output
    r = _invoke("--judge", "sim", "--ids", "x=1,2", "--out", str(tmp_path))
    assert r.exit_code == 2 and "5 comma-separated ids" in r.output
    r = _invoke("--judge", "sim", "--references", str(tmp_path / "nope.json"),
                "--out", str(tmp_path))
    assert r.exit_code == 2 and "--references" in r.output
    r = _invoke("--judge", "sim", "--repeats", "0", "--out", str(tmp_path))
    assert r.exit_code == 2 and "--repeats" in r.output
