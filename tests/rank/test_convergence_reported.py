"""A fit whose sparse posterior's conjugate gradients stopped short is reported as not
converged: results.json (each model's `converged`, `map_converged`, `cg_converged`, the
document's `converged` and `warnings`), the terminal, the --json summary and the report.

`converged` was the MAP search's flag alone, so a run whose intervals and P(top-k) came from
stopped solves said converged=true and printed nothing. Two real fits stop the CG: a chain
of comparisons with a tiny ridge (ill-conditioned; no solver setting changed), and a `rank`
run with the solver's iteration cap lowered to 3 (the rank loop picks well-linked pairs, so
nothing short of that stops it at test size). The sparse path is taken by lowering the dense
threshold, as tests/rank/test_summary_sparse.py does.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli.rank_cmd import register
from judgeaudit.rank.fitting import fit_model
from judgeaudit.rank.pool import load_pool
from judgeaudit.rank.summary import convergence_warnings, model_summary, ranking
from judgeaudit.result import Result
from judgeaudit.stats import bradley_terry as bt
from judgeaudit.stats import bt_posterior

N = 500


def _chain_pool(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"id": f"i{i}", "prompt": "P", "response": "w " * int(rng.integers(2, 60)),
             "quality": 3.0 * i / N} for i in range(N)]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    pool = load_pool(f"jsonl:{tmp_path / 'p.jsonl'}")
    q = pool.quality
    comps = [(a, b, float(rng.random() < 1 / (1 + np.exp(-(q[a] - q[b])))))
             for r in range(4) for i in range(N - 1)
             for a, b in [(i, i + 1) if r % 2 == 0 else (i + 1, i)]]
    return pool, np.array(comps)


def test_a_stopped_cg_makes_the_model_summary_not_converged(tmp_path, monkeypatch):
    pool, comps = _chain_pool(tmp_path)
    X, info = pool.covariates(["length"])
    monkeypatch.setattr(bt, "DENSE_MAX", 50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the solver's own warning
        fit = fit_model("bias_aware", N, comps, X, lam=1e-6)
        ranking(pool, fit, 5, X, info, comps, n_samples=200)  # variances, P(top-k)
    d = model_summary(pool, fit, 5, info)
    assert fit.converged and d["map_converged"] is True
    assert d["cg_converged"] is False and d["converged"] is False
    assert d["cg"]["failed_solves"] >= 1 and d["cg"]["max_iterations"] == 2000
    assert d["cg"]["relative_residual"] > d["cg"]["target"]
    (w,) = convergence_warnings({"bias_aware": d})
    assert w.startswith("bias-aware model: conjugate gradients of its sparse posterior did "
                        "not reach their tolerance") and "converged is false" in w


def test_a_dense_fit_has_no_cg_and_reports_the_map_alone(tmp_path):
    pool = load_pool("builtin:controlled?seed=1&n=12&k=3")
    X, info = pool.covariates(["length"])
    rng = np.random.default_rng(1)
    a = rng.integers(0, 12, 60)
    b = (a + rng.integers(1, 12, 60)) % 12
    comps = np.column_stack([a, b, rng.random(60) < 0.5]).astype(float)
    fit = fit_model("bias_aware", 12, comps, X)
    d = model_summary(pool, fit, 3, info)
    assert d["converged"] is True and d["map_converged"] is True and d["cg_converged"] is None
    assert convergence_warnings({"bias_aware": d}) == []


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    register(a)
    return a


def _rank(app, tmp_path, name):
    out = tmp_path / name
    r = CliRunner().invoke(app, [
        "rank", "--judge", "sim?quality=1&length=1&position=0.3",
        "--items", "builtin:controlled?seed=1&n=30&k=3", "--budget", "60", "--samples", "200",
        "--lam", "1", "--out", str(out), "--cache", str(tmp_path / "cache.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    return r, json.loads((out / "results.json").read_text()), (out / "report.html").read_text()


def test_rank_says_its_fit_did_not_converge_when_the_cg_stopped(app, tmp_path, monkeypatch):
    monkeypatch.setattr(bt, "DENSE_MAX", 10)  # 30 items: the sparse posterior
    r, doc, _ = _rank(app, tmp_path, "ok")  # the solver as shipped: converged, no warning
    assert doc["converged"] is True and doc["warnings"] == []
    assert all(m["cg_converged"] is True for m in doc["models"].values())
    assert "warning:" not in r.output

    monkeypatch.setattr(bt_posterior, "_CG_MAXITER", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r, doc, html = _rank(app, tmp_path, "stopped")
    ba = doc["models"]["bias_aware"]
    assert ba["map_converged"] is True  # the MAP alone said converged=true before
    assert ba["cg_converged"] is False and ba["converged"] is False
    assert doc["converged"] is False and len(doc["warnings"]) == 1
    w = doc["warnings"][0]
    assert "bias-aware model: conjugate gradients" in w and "stopped at 3 iterations" in w
    assert doc["notes"][0] == w  # the --json summary carries the notes
    out = " ".join(r.output.split())
    assert "warning: bias-aware model: conjugate gradients of its sparse posterior did not " \
           "reach their tolerance" in out
    assert out.count("conjugate gradients of its sparse posterior") == 2  # warning + --json
    summary = json.loads(r.output[r.output.index('{"command"'):].splitlines()[0])
    assert summary == Result.from_document(doc).summary() and summary["notes"][0] == w
    assert 'id="warnings"' in html and "Warning: bias-aware model: conjugate gradients" in html
    assert html.count("conjugate gradients of its sparse posterior") == 1  # not again as a note
    assert '<span class="warn">no</span> <span class="muted small">(MAP yes; conjugate ' \
           'gradients no)' in html
