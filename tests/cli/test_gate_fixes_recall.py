"""`rank`'s recall carries its 95% interval (CI tester, point 8): `--json` gave recall
{value 0.8, hits 4, n 5} with none, and every number a user sees carries its uncertainty."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.stats.intervals import wilson

runner = CliRunner()


def test_rank_recall_has_a_wilson_interval_in_json_and_terminal(tmp_path):
    out = tmp_path / "rk"
    res = runner.invoke(app, ["rank", "--judge", "sim?length=1&position=0.3&seed=1",
                              "--items", "builtin:controlled?n=16&k=4", "--budget", "40",
                              "--samples", "200", "--no-cache", "--out", str(out), "--json"],
                        terminal_width=250)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.splitlines()[0])
    doc = json.loads((out / "results.json").read_text())
    assert summary["recall"]
    for m, r in summary["recall"].items():
        lo, hi = wilson(r["hits"], r["n"])
        assert r["ci95"] == [lo, hi] and r["method"] == "wilson"
        assert lo <= r["value"] <= hi
        assert doc["recall_hits"][m] == {"hits": r["hits"], "n": r["n"]}
        text = " ".join(res.output.split())
        assert f"{m} {r['value']:.2f} [{lo:.2f}, {hi:.2f}] ({r['hits']} of {r['n']} true top" \
            in text
    assert "95% Wilson interval" in res.output
    assert "builtin:controlled, or a pool file with a quality field" in summary["recall_note"]


def test_recall_interval_of_a_document_written_before_it():
    """The summary derives it from hits of n, so older results.json get it too."""
    from judgeaudit.result import recall_interval

    assert recall_interval(4, 5) == {"ci95": list(map(float, wilson(4, 5))),
                                     "method": "wilson"}
    assert recall_interval(None, 5) == {} and recall_interval(1, 0) == {}
