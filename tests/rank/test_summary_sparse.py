"""The ranking summary and the trusted-anchor gate read a sparse posterior (above the dense
threshold: no N x N covariance) and agree with the dense path on the same input. The
threshold is set low here so that N = 200 takes the sparse path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgeaudit.rank.gate import anchor_gate, pair_probabilities
from judgeaudit.rank.membership import screen_topk, topk_membership_screened
from judgeaudit.rank.pool import load_pool
from judgeaudit.rank.simulate import SimOracle
from judgeaudit.rank.summary import membership, ranking
from judgeaudit.stats import bradley_terry as bt
from judgeaudit.stats.bradley_terry import fit_map, fit_naive

N, PER_GROUP = 200, 50


def _pool(tmp_path):
    rng = np.random.default_rng(0)
    rows = [{"id": f"{p}{i}", "prompt": p, "response": "w " * int(rng.integers(2, 60)),
             "quality": float(2.5 * rng.normal())}
            for p in ("P", "Q", "R", "S") for i in range(PER_GROUP)]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    return load_pool(f"jsonl:{tmp_path / 'p.jsonl'}")


def _comparisons(pool, X, m=15000, seed=1):
    o = SimOracle(pool.quality, X, c=0.5, kappa=0.2, seed=seed)
    rng = np.random.default_rng(seed)
    g = pool.groups
    a = rng.integers(0, N, 4 * m)
    b = rng.integers(0, N, 4 * m)
    ok = (g[a] == g[b]) & (a != b)
    a, b = a[ok][:m], b[ok][:m]
    return np.column_stack([a, b, o.matrix[a, b]]).astype(float)


@pytest.fixture
def fits(tmp_path, monkeypatch):
    pool = _pool(tmp_path)
    X, info = pool.covariates(["length"])
    comps = _comparisons(pool, X)
    dense = fit_map(N, comps, X=X)
    naive_d = fit_naive(N, comps, lam=1.0)
    monkeypatch.setattr(bt, "DENSE_MAX", 50)
    sparse = fit_map(N, comps, X=X)
    naive_s = fit_naive(N, comps, lam=1.0)
    assert dense.is_dense and not sparse.is_dense and not naive_s.is_dense
    return pool, X, info, comps, dense, sparse, naive_d, naive_s


def test_ranking_from_the_sparse_posterior_matches_the_dense_one(fits):
    pool, X, info, comps, dense, sparse, _, _ = fits
    S = 4000
    rd = {r["id"]: r for r in ranking(pool, dense, 3, X, info, comps, n_samples=S, seed=0)}
    rs = {r["id"]: r for r in ranking(pool, sparse, 3, X, info, comps, n_samples=S, seed=1)}
    assert not sparse.is_dense  # no dense covariance was built
    assert rd.keys() == rs.keys()
    for key, d in rd.items():
        s = rs[key]
        assert s["theta"] == pytest.approx(d["theta"], abs=1e-5)
        sd_d = (d["hi"] - d["lo"]) / (2 * 1.959964)
        sd_s = (s["hi"] - s["lo"]) / (2 * 1.959964)
        # sd: the Hutchinson estimate of diag(A^-1) (a Monte-Carlo error ~1e-3 relative)
        assert sd_s == pytest.approx(sd_d, rel=2e-2)
        p = 0.5 * (d["p_topk"] + s["p_topk"])
        assert abs(d["p_topk"] - s["p_topk"]) <= 5 * np.sqrt(2 * p * (1 - p) / S) + 2.0 / S
        assert (s["rank"], s["in_topk"], s["group"]) == (d["rank"], d["in_topk"], d["group"])
    assert sum(r["p_topk"] for r in rs.values()) == pytest.approx(12.0)


def test_screened_membership_with_the_exact_covariance_matches_the_full_draws(fits):
    pool, _, _, _, dense, _, _, _ = fits
    S = 6000
    full = membership(dense, 3, pool.groups, S, seed=0)
    sd = np.sqrt(dense.theta_var)
    scr = topk_membership_screened(dense.theta, sd, 3, pool.groups, dense.theta_cov_block, S, 1)
    keep = screen_topk(dense.theta, sd, 3, pool.groups)
    assert keep.sum() < N  # the screen drops items, and those have p = 0 on the full draws
    assert np.all(full[~keep] == 0.0)
    p = 0.5 * (full + scr)
    assert np.all(np.abs(full - scr) <= 5 * np.sqrt(2 * p * (1 - p) / S) + 2.0 / S)


def test_sparse_theta_cov_block_is_the_dense_block(fits):
    _, _, _, _, dense, sparse, _, _ = fits
    idx = np.array([0, 7, 51, 120, 199, 3])
    np.testing.assert_allclose(sparse.theta_cov_block(idx), dense.theta_cov_block(idx),
                               rtol=1e-5, atol=1e-8)


def test_gate_from_the_sparse_posterior_matches_the_dense_one(fits):
    pool, _, _, _, dense, sparse, naive_d, naive_s = fits
    rng = np.random.default_rng(3)
    g = pool.groups
    a = rng.integers(0, N, 400)
    b = rng.integers(0, N, 400)
    ok = (g[a] == g[b]) & (a != b)
    q = pool.quality
    trusted = np.column_stack([a[ok], b[ok], (q[a[ok]] > q[b[ok]]).astype(float)])
    pd_, ps = pair_probabilities(dense, trusted), pair_probabilities(sparse, trusted)
    np.testing.assert_allclose(ps, pd_, atol=1e-5)
    gd = anchor_gate(naive_d, dense, trusted, names=["length"])
    gs = anchor_gate(naive_s, sparse, trusted, names=["length"])
    assert not sparse.is_dense and not naive_s.is_dense
    assert (gs.enabled, gs.basis) == (gd.enabled, gd.basis)
    assert gs.difference["estimate"] == pytest.approx(gd.difference["estimate"], abs=1e-5)
