"""Unreadable verdicts are counted and kept, but left out of the ranking fit: they were fed
into it as ties (y = 0.5) while the terminal said "5 invalid, 0 ties", which read as if they
were left out. Real ties stay half a win for each side. Checked against a fit of only the
valid comparisons (rank, the loop, and rank-eval's verdict matrices)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import judgeaudit
from judgeaudit.judges import make_judge
from judgeaudit.rank.fitting import fit_model
from judgeaudit.rank.live import full_matrix, judge_pair, ordered_pairs
from judgeaudit.rank.loop import run_active
from judgeaudit.rank.pool import load_pool
from judgeaudit.rank.simulate import SimOracle

POOL = "builtin:controlled?seed=2&n=10&k=3"


async def test_an_invalid_verdict_has_no_y_and_keeps_its_raw_answer():
    pool = load_pool(POOL)
    bundle = make_judge("sim?invalid=0.3")
    vs = [await judge_pair(bundle, pool, f, s) for f, s in ordered_pairs(pool)]
    bad = [v for v in vs if v.invalid]
    assert 10 < len(bad) < 45
    assert all(v.y is None and v.choice is None and v.raw == "I cannot decide" for v in bad)
    assert all(v.as_dict(pool)["y"] is None and v.as_dict(pool)["invalid"] for v in bad)
    assert all(v.y in (0.0, 0.5, 1.0) for v in vs if not v.invalid)


def _valid_rows(doc: dict) -> np.ndarray:
    return np.array([(c["first"], c["second"], c["y"]) for c in doc["comparisons"]
                     if not c["invalid"]], dtype=float)


def test_rank_fits_only_the_valid_comparisons():
    r = judgeaudit.rank("sim?invalid=0.1&length=1&position=0.5&seed=3", POOL, k=3, budget=60,
                        samples=200, seed=1, cache=False, covariates="length")
    doc = r.to_dict()
    comps = doc["comparisons"]
    n_bad = sum(c["invalid"] for c in comps)
    assert n_bad == doc["n_invalid"] > 0 and len(comps) == doc["n_comparisons"] == 60
    assert doc["n_fitted"] == 60 - n_bad
    assert all(c["y"] is None and c["raw"] for c in comps if c["invalid"])
    assert "left out of the fit" in doc["config"]["invalid"]
    assert "invalid" not in doc["config"]["ties"]
    valid = _valid_rows(doc)
    pool = load_pool(POOL)
    ids = [it.id for it in pool.items]
    naive = fit_model("naive", pool.n_items, valid, eb_lam=True)
    got = np.array([doc["models"]["naive"]["theta"][i] for i in ids])
    np.testing.assert_allclose(got, naive.theta, atol=2e-3)
    assert doc["models"]["naive"]["lam"] == pytest.approx(naive.lam, rel=1e-2)
    # the old coercion: the same comparisons with the invalid ones as ties fit otherwise
    tied = np.array([(c["first"], c["second"], 0.5 if c["invalid"] else c["y"])
                     for c in comps], dtype=float)
    coerced = fit_model("naive", pool.n_items, tied, eb_lam=True)
    assert np.max(np.abs(coerced.theta - naive.theta)) > 0.02


def test_the_loop_leaves_a_nan_verdict_out_of_its_fits_and_counts_it_as_asked():
    rng = np.random.default_rng(4)
    theta = 2.0 * rng.standard_normal(12)
    o = SimOracle(theta, seed=4)
    bad = np.random.default_rng(9)

    def sometimes_nothing(i, j, first):
        y = o(i, j, first)
        return math.nan if bad.random() < 0.25 else y

    res = run_active(sometimes_nothing, 12, 60, 3, n_samples=200, seed=0, eb_lam=True)
    invalid = [s for s in res.steps if s.get("invalid")]
    assert len(res.steps) == 60 and 5 < len(invalid) < 30
    assert all(s["y"] is None for s in invalid)
    assert res.comparisons.shape[0] == 60 - len(invalid)
    assert not np.isnan(res.comparisons).any()
    ref = fit_model("naive", 12, res.comparisons, eb_lam=True)
    np.testing.assert_allclose(res.naive.theta, ref.theta, atol=2e-3)


async def test_a_verdict_matrix_replays_invalid_as_nan_and_fits_without_them():
    pool = load_pool(POOL)
    m = await full_matrix(make_judge("sim?invalid=0.2&seed=1"), pool)
    assert m.n_invalid > 0 and m.invalid.sum() == m.n_invalid
    assert m.comparisons().shape[0] == len(m.verdicts) - m.n_invalid
    o = m.oracle()
    f, s = np.argwhere(m.invalid)[0]
    assert math.isnan(o(int(f), int(s), int(f))) and o.calls == 1
    ok = next(v for v in m.verdicts if not v.invalid)
    assert o(ok.first, ok.second, ok.first) == ok.y


def test_rank_eval_counts_invalid_and_fits_full_data_without_them():
    ev = judgeaudit.rank_eval("sim?invalid=0.1&seed=5", POOL, k=3, budgets=[20, 40],
                              rules="topk", seeds=2, samples=100, cache=False)
    doc = ev.to_dict()
    m = doc["matrices"][0]
    assert m["n_invalid"] > 0 and m["n_comparisons"] == 90
    assert m["n_fitted"] == 90 - m["n_invalid"]
    assert doc["n_invalid"] == m["n_invalid"]
    assert "left out of the fit" in doc["config"]["invalid"]


def test_terminal_and_report_say_invalid_verdicts_are_left_out(tmp_path):
    import json

    import typer
    from typer.testing import CliRunner

    from judgeaudit.cli.rank_cmd import register
    from judgeaudit.report import render_report

    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["rank", "--judge", "sim?invalid=0.1&seed=3", "--items", POOL,
                                 "--budget", "40", "--samples", "100", "--out",
                                 str(tmp_path / "o"), "--cache", str(tmp_path / "c.sqlite")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    n_bad = doc["n_invalid"]
    assert n_bad > 0
    out = " ".join(r.output.split())
    assert (f"40 comparisons ({n_bad} invalid: left out of the fit; {doc['n_ties']} ties: half "
            "a win for each side)") in out
    html = " ".join(render_report(doc).split())
    assert f"{n_bad} invalid (left out of the fit)" in html
    assert "0.5 for a tie or an invalid answer" not in html
    assert "is left out of the fit (counted, and listed above with its raw output)" in html
    # a document written when they were fitted as ties says so
    old = {**doc, "config": {k: v for k, v in doc["config"].items() if k != "invalid"}}
    assert "counted as ties: written before" in " ".join(render_report(old).split())
    ev = CliRunner().invoke(app, ["rank-eval", "--oracle", "sim?invalid=0.1&seed=3", "--items",
                                  POOL, "--budgets", "10", "--rules", "topk", "--seeds", "1",
                                  "--samples", "100", "--out", str(tmp_path / "e"),
                                  "--cache", str(tmp_path / "c.sqlite")])
    assert ev.exit_code == 0, ev.output
    edoc = json.loads((tmp_path / "e" / "results.json").read_text())
    assert f"{edoc['n_invalid']} invalid verdicts (left out of every fit)" in " ".join(
        ev.output.split())
    assert "left out of every fit" in " ".join(render_report(edoc).split())
