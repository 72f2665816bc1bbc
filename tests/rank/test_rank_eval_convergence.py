"""rank-eval says when some of its fits did not converge: per recall cell (rule x model x
budget: k of n fits), per rule's runs (the refits that chose the pairs) and per verdict
matrix, in results.json (`convergence`, `converged`, `warnings` leading the notes), on the
terminal ('warning:' lines naming the cells), in the --json summary (`converged`,
`not_converged`, the notes) and on the report page.

rank-eval fitted models over budgets x rules x seeds and said nothing when a fit stopped
short. As in tests/rank/test_convergence_reported.py, real fits are made to stop: the
sparse posterior is taken by lowering the dense threshold, and its conjugate gradients are
capped at 3 iterations. At 30 items the bias-aware model's then stop in some fits (a few
comparisons: the prior dominates and 3 iterations can be enough) and in all later ones,
while the naive model's (no border: its solves are exact after the deflation) converge: the
cells differ, which the counts must show. The control runs the same solver as shipped:
converged, and quiet.
"""

from __future__ import annotations

import json
import warnings

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli.rank_cmd import register
from judgeaudit.report import render_report
from judgeaudit.result import Result
from judgeaudit.stats import bradley_terry as bt
from judgeaudit.stats import bt_posterior

BUDGETS = ("5", "20")
RULES = ("topk", "random")


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    register(a)
    return a


def _rank_eval(app, tmp_path, name):
    out = tmp_path / name
    r = CliRunner().invoke(app, [
        "rank-eval", "--oracle", "sim?quality=1&length=1&position=0.3",
        "--items", "builtin:controlled?n=30&k=3", "--budgets", ",".join(BUDGETS),
        "--rules", ",".join(RULES), "--seeds", "3", "--samples", "200", "--lam", "1",
        "--out", str(out), "--cache", str(tmp_path / "cache.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "results.json").read_text())
    summary = json.loads(r.output[r.output.index('{"command"'):].splitlines()[0])
    return r, doc, summary, (out / "report.html").read_text()


def test_rank_eval_counts_and_names_the_cells_whose_fits_did_not_converge(
        app, tmp_path, monkeypatch):
    monkeypatch.setattr(bt, "DENSE_MAX", 10)  # 30 items: the sparse posterior
    monkeypatch.setattr(bt_posterior, "_CG_MAXITER", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the solver's own warning
        r, doc, summary, html = _rank_eval(app, tmp_path, "stopped")
    conv = doc["convergence"]
    # the counts agree with the cases: each case lists its fits that did not converge
    bad = [x for case in doc["cases"] for x in case.get("not_converged", [])]
    for m in ("naive", "bias_aware"):
        for rule in RULES:
            for b in BUDGETS:
                t = conv["recall"][m][rule][b]
                assert t["n"] == 3
                assert t["not_converged"] == sum(
                    (x["model"], x["rule"], str(x["budget"])) == (m, rule, b) for x in bad)
    assert all(conv["recall"]["naive"][rule][b]["not_converged"] == 0
               for rule in RULES for b in BUDGETS)  # the naive fits converge: quiet
    for rule in RULES:
        late = conv["recall"]["bias_aware"][rule]["20"]
        assert late["not_converged"] == late["cg_not_converged"] == 3
        assert late["map_not_converged"] == 0  # the MAP alone would have said converged
        assert 0 < conv["recall"]["bias_aware"][rule]["5"]["not_converged"] <= 3
    assert conv["matrices"]["bias_aware"]["not_converged"] == 3
    assert conv["matrices"]["naive"]["not_converged"] == 0
    assert all(x["converged"]["bias_aware"]["cg_converged"] is False for x in doc["matrices"])
    assert doc["converged"] is False and len(doc["warnings"]) == 2
    cells, matrices = doc["warnings"]
    k5 = conv["recall"]["bias_aware"]["topk"]["5"]["not_converged"]
    total = sum(t["not_converged"] for rules in conv["recall"].values()
                for by_b in rules.values() for t in by_b.values())
    assert total == len(bad)
    assert cells.startswith(f"{total} of 24 fits behind the recall table did not converge")
    assert (f"bias-aware model, rule topk: B=5: {k5} of 3 (CG {k5}), B=20: 3 of 3 (CG 3)"
            in cells) and "naive model" not in cells
    assert "their theta and recall stand" in cells and "The MAP did not" not in cells
    assert matrices.startswith("the fits on the full verdict matrices did not converge")
    assert "bias-aware model in 3 of 3 matrices (CG 3)" in matrices
    assert "intervals of c and kappa are approximate" in matrices
    assert doc["notes"][:2] == doc["warnings"]  # the --json summary carries the notes

    out = " ".join(r.output.split())
    assert f"warning: {' '.join(cells.split())}" in out
    assert f"warning: {' '.join(matrices.split())}" in out
    assert "note: " + cells[:40] not in out  # printed once, as a warning

    assert summary == Result.from_document(doc).summary()
    assert summary["converged"] is False and summary["notes"][:2] == doc["warnings"]
    rows = {(x["fits"], x["model"], x.get("rule"), x.get("budget")): (x["not_converged"],
                                                                        x["n"])
            for x in summary["not_converged"]}
    assert rows[("recall", "bias_aware", "topk", 20)] == (3, 3)
    assert rows[("recall", "bias_aware", "topk", 5)] == (k5, 3)
    assert rows[("matrices", "bias_aware", None, None)] == (3, 3)
    assert not any(m == "naive" for _, m, _, _ in rows)

    html = " ".join(html.split())
    assert 'id="warnings"' in html and "Warning: " + " ".join(cells.split())[:60] in html
    assert html.count("fits behind the recall table did not converge") == 1  # not as a note
    n_cells = sum(t["not_converged"] > 0 for rules in conv["recall"].values()
                  for by_b in rules.values() for t in by_b.values())
    assert html.count('class="warn small not-converged"') == n_cells
    assert '<span class="warn small not-converged">3 of 3 fits not converged</span>' in html
    assert html.count("fit not converged: bias aware") == 3  # each matrix's row
    assert (f'recall-table fits: <span class="warn">{total} of 24 not converged</span>'
            in html)
    assert 'full-matrix fits: <span class="warn">3 of 6 not converged</span>' in html


def test_rank_eval_whose_fits_converged_stays_quiet(app, tmp_path, monkeypatch):
    monkeypatch.setattr(bt, "DENSE_MAX", 10)  # the same sparse path, the solver as shipped
    r, doc, summary, html = _rank_eval(app, tmp_path, "ok")
    conv = doc["convergence"]
    cells = [t for rules in conv["recall"].values() for by_b in rules.values()
             for t in by_b.values()]
    assert len(cells) == 8 and all(t == {"n": 3, "not_converged": 0, "map_not_converged": 0,
                                         "cg_not_converged": 0} for t in cells)
    assert all(x["converged"]["bias_aware"]["cg_converged"] is True for x in doc["matrices"])
    assert doc["converged"] is True and doc["warnings"] == []
    assert not any(c.get("not_converged") for c in doc["cases"])
    assert "warning:" not in r.output and "did not converge" not in r.output
    assert summary["converged"] is True and summary["not_converged"] == []
    html = " ".join(html.split())
    assert 'id="warnings"' not in html and "not-converged" not in html
    assert ("recall-table fits: all 24 converged &middot; runs (their pair-choosing refits): "
            "all 12 converged &middot; full-matrix fits: all 6 converged") in html


def test_the_warnings_say_what_a_map_that_did_not_converge_touches():
    """The MAP and the refits choosing the pairs, which the forced runs above leave
    converged: each is named with its cells and what it does to the numbers."""
    from judgeaudit.rank.evaluate import convergence_warnings, tally_convergence
    from judgeaudit.rank.run_eval import matrix_convergence_warnings

    ok = {"converged": True, "map_converged": True, "cg_converged": None}
    no_map = {"converged": False, "map_converged": False, "cg_converged": None}
    conv = {"recall": {"naive": {"global": {60: tally_convergence([ok, no_map, ok]),
                                            120: tally_convergence([ok, ok, ok])}}},
            "acquisition": {"naive": {"global": tally_convergence([{"converged": False},
                                                                   {"converged": True}])}},
            "full_data": {"naive": tally_convergence([no_map, ok])}}
    cells, runs, full = convergence_warnings(conv)
    assert cells.startswith("1 of 6 fits behind the recall table did not converge")
    assert "naive model, rule global: B=60: 1 of 3 (MAP 1)" in cells and "B=120" not in cells
    assert "The MAP did not converge in 1: their recall is that of a theta short" in cells
    assert "conjugate gradients" not in cells.split(". ", 1)[1]
    assert runs.startswith("the refits that chose the pairs did not all converge")
    assert "naive model, rule global: 1 of 2 runs" in runs
    assert full.startswith("the fits on the full data did not converge: naive model 1 of 2 "
                           "(MAP 1)")
    assert "the full-data recall comes from a theta short" in full
    assert "intervals of c and kappa" not in full  # no CG stopped
    (m,) = matrix_convergence_warnings({"naive": tally_convergence([ok]),
                                        "bias_aware": tally_convergence([no_map, ok])})
    assert "bias-aware model in 1 of 2 matrices (MAP 1)" in m and "naive model" not in m
    assert convergence_warnings({"recall": {"naive": {"topk": {5: tally_convergence([ok])}}},
                                 "acquisition": {}}) == []
    assert matrix_convergence_warnings({"naive": tally_convergence([ok])}) == []


def test_a_document_written_before_convergence_was_counted_says_unknown():
    doc = {"command": "rank-eval", "recall": {}, "budgets": [5], "rules": ["topk"],
           "seeds": [0], "k": 2}
    s = Result.from_document(doc).summary()
    assert s["converged"] is None and s["not_converged"] is None
    html = render_report({**doc, "schema_version": 1})
    assert 'id="fits-converged"' not in html and 'id="warnings"' not in html
