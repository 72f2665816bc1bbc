"""The HUB-J report says what the terminal and --json say: the items loaded and left out by
why (human_filter: 105 tie labels vanished from the page) and, where quantify's rows are
Holm-adjusted, the adjusted p beside the raw one (the page printed only the raw p under a
label that follows the adjusted one)."""

from __future__ import annotations

from typer.testing import CliRunner

from judgeaudit.cli.main import app


def test_quantify_report_gives_the_human_filter_and_the_adjusted_p(shared_data, tmp_path,
                                                                   isolated_cache):
    data = f"pandalm:{shared_data / 'pandalm_testset'}"
    res = CliRunner().invoke(app, [
        "quantify", "--judges", "simhubj?factor_verbosity=0,0.5,3,1,0,simhubj?seed=3",
        "--data", data, "--limit", "12", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = " ".join((tmp_path / "report.html").read_text().split())
    assert "999 loaded, 105 left out (tie); 894 kept, 60 used" in page
    assert "Holm-adjusted over 4 rows p =" in page
