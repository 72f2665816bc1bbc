"""rank-eval gives the c the ranking's own fit corrects by (`c_ranking`: prior sd --tau)
beside c from the evidence refit (prior sd max(--tau, 10)), as rank does: per matrix and
averaged over them in results.json, a terminal line, the --json summary, the note "the
ranking corrects by c[...] = ..." and a row of the report's bias table. It said only the
refit's c, while its recall comes from rankings that correct by the other one."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from judgeaudit.report.html import render_report

POOL = "builtin:controlled?seed=3&n=16&k=3"
ORACLE = "sim?length=1.5&position=0.3"  # fresh verdicts per seed: a matrix each


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def test_rank_eval_reports_the_c_the_ranking_corrects_by(tmp_path):
    doc = judgeaudit.rank_eval(ORACLE, POOL, k=3, budgets=[40], rules="topk", seeds="0-1",
                               samples=100, covariates="length", cache=False)
    mats = doc["matrices"]
    # each matrix: the ranking's c beside the refit's, at their own priors (as rank)
    for m in mats:
        rc, c = m["c_ranking"]["length"], m["c"]["length"]
        assert rc["prior_sd"] == 1.0 and c["prior_sd"] == 10.0
        assert rc["lo"] <= rc["estimate"] <= rc["hi"] and rc["estimate"] != c["estimate"]
    agg = doc["c_ranking"]["length"]
    assert agg["n"] == len(mats) == 2 and agg["prior_sd"] == 1.0
    assert agg["estimate"] == _mean([m["c_ranking"]["length"]["estimate"] for m in mats])
    assert agg["lo"] == _mean([m["c_ranking"]["length"]["lo"] for m in mats])
    assert agg["hi"] == _mean([m["c_ranking"]["length"]["hi"] for m in mats])
    # the note rank gives, with the refit's c beside it
    note = next(n for n in doc["notes"] if n.startswith("the ranking corrects by"))
    assert (f"c[length] = {agg['estimate']:+.2f} [{agg['lo']:+.2f}, {agg['hi']:+.2f}] "
            f"(reported {doc['c']['length']['estimate']:+.2f})") in note
    assert "prior sd on c is 1 (--tau)" in note
    # --json: beside the biases
    s = doc.summary()
    assert s["c_ranking"]["c[length]"]["value"] == agg["estimate"]
    assert s["c_ranking"]["c[length]"]["ci95"] == [agg["lo"], agg["hi"]]
    assert s["c_ranking"]["c[length]"]["prior_sd"] == 1.0
    assert note in s["notes"]
    # the report: a row of the bias table, and the note
    html = render_report(doc.to_dict())
    assert "c[length] (ranking)" in html and "what the ranking corrects by" in html
    assert "the ranking corrects by c[length] = " in html


def test_rank_eval_terminal_shows_the_ranking_s_c(tmp_path):
    res = CliRunner().invoke(app, ["rank-eval", "--oracle", ORACLE, "--items", POOL,
                                   "--k", "3", "--budgets", "40", "--rules", "topk", "--seeds",
                                   "1", "--samples", "100", "--covariates", "length", "--out",
                                   str(tmp_path / "e"), "--cache", str(tmp_path / "c.sqlite"),
                                   "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "e" / "results.json").read_text())
    rc = doc["c_ranking"]["length"]
    text = " ".join(res.output.split())
    assert (f"c[length] the ranking corrects by (c_ranking, prior sd 1, --tau) = "
            f"{rc['estimate']:+.3f} [{rc['lo']:+.3f}, {rc['hi']:+.3f}]") in text, text
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["c_ranking"]["c[length]"]["value"] == rc["estimate"]
