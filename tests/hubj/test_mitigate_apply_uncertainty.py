"""`mitigate --apply` carries the saved fit's uncertainty in phi and psi into its intervals,
and applies a marginal fit as it was fitted (z integrated, not gamma plugged in). It treated
phi as known, though phi drives the bias share: applied to the fit's own verdicts the share
read 0.018 [0.02, 0.02] (se 0.0011) where the fit said [0.008, 0.040] (se 0.0081), and in a
well-specified simulation it covered the planted share in 9 of 20 runs."""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.hubj import mitigate as M

THETA, PHI = [-1.0, 0.0, 0.5], [1.5, 0.75, 0.0]


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def _saved(seed: int, psi: float, n: int = 150, estimator: str = "marginal") -> dict:
    p = M.simulate(n, THETA, PHI, psi=[psi] * 3, seed=seed)
    return M.fit(p.Y, p.delta, ["a", "b", "c"], _ids("q", n), estimator=estimator).as_dict()


def _planted_share(delta: np.ndarray, psi: float) -> float:
    """E[win] - BC of judge a on these queries' controls, z ~ N(0, 1) integrated."""
    z, w = M._gh()
    full = (M._p(THETA[0] + PHI[0] * delta[:, None] + psi * z[None]) @ w).mean()
    return float(full - M._p(THETA[0] + psi * z) @ w)


@pytest.mark.parametrize("estimator", M.ESTIMATORS)
def test_applied_to_the_fits_own_verdicts_the_share_is_the_fits(estimator):
    p = M.simulate(300, THETA, PHI, psi=[0.5] * 3, seed=5)
    saved = M.fit(p.Y, p.delta, ["a", "b", "c"], _ids("q", 300),
                  estimator=estimator).as_dict()
    out = M.apply(saved, "a", p.Y[0], p.delta, _ids("q", 300))
    fit = saved["judges"]["a"]["bias_share"]
    # the same verdicts and queries: as uncertain as the fit (the old interval, theta' only,
    # was a fifth as wide), most of it the fit's phi and psi
    assert out["bias_share"]["se"] == pytest.approx(fit["se"], rel=0.3)
    assert out["share_var_from_fit"] > 0.5
    assert out["fixed_from_fit"]["phi"]["se"] == pytest.approx(
        saved["judges"]["a"]["phi"]["se"])
    if estimator == "marginal":  # applied as fitted: the same share
        assert out["bias_share"]["value"] == pytest.approx(fit["value"], abs=0.005)


@pytest.mark.parametrize("estimator", M.ESTIMATORS)
def test_the_added_variance_is_the_delta_method_of_the_shares_dependence_on_phi(estimator):
    """With psi's se set to 0 and no covariance saved, var(share) - var(theta' only) equals
    (d share / d phi)^2 se(phi)^2, the derivative taken by refitting at phi +- h (the
    two-stage path takes it analytically, from theta''s score equation)."""
    p = M.simulate(400, THETA, PHI, psi=[0.5] * 3, seed=7)
    saved = M.fit(p.Y, p.delta, ["a", "b", "c"], _ids("q", 400),
                  estimator=estimator).as_dict()
    j = dict(saved["judges"]["a"])
    j.pop("cov")
    j["psi"] = {**j["psi"], "se": 0.0}
    new = M.simulate(400, THETA, PHI, psi=[0.5] * 3, seed=8)

    def run(phi: float, se: float) -> dict:
        jj = {**j, "phi": {**j["phi"], "value": phi, "se": se}}
        return M.apply({"judges": {"a": jj}, "gamma": saved["gamma"]}, "a", new.Y[0],
                       new.delta, _ids("n", 400))

    phi, se_phi, h = j["phi"]["value"], j["phi"]["se"], 1e-3
    slope = (run(phi + h, 0.0)["bias_share"]["value"]
             - run(phi - h, 0.0)["bias_share"]["value"]) / (2 * h)
    with_phi, without = run(phi, se_phi)["bias_share"]["se"], run(phi, 0.0)["bias_share"]["se"]
    assert slope > 0.005  # a larger phi leaves less to BC
    assert with_phi**2 - without**2 == pytest.approx((slope * se_phi) ** 2, rel=1e-3)
    assert "uncorrelated" in run(phi, se_phi)["fixed_from_fit"]["uncertainty_from"]


def test_the_saved_covariance_of_phi_and_psi_is_used():
    saved = _saved(3, 0.5)
    j = saved["judges"]["a"]
    assert j["cov"]["params"] == ["theta", "phi", "psi"]
    m = np.array(j["cov"]["matrix"])
    assert m[1, 1] == pytest.approx(j["phi"]["se"] ** 2)
    assert m[1, 2] != 0.0  # phi and psi are correlated in the fit
    p = M.simulate(200, THETA, PHI, psi=[0.5] * 3, seed=4)
    out = M.apply(saved, "a", p.Y[0], p.delta, _ids("n", 200))
    assert out["fixed_from_fit"]["uncertainty_from"] == "the fit's covariance of phi and psi"


@pytest.mark.parametrize("psi", [0.0, 1.0])
def test_applied_share_interval_covers_the_planted_share_without_bias(psi):
    """Fit three judges on 150 queries, apply judge a to 300 new ones. Measured over 60 runs
    (psi 0 / 1 / 1.5): covered 56 / 56 / 54, mean error +0.002 / +0.003 / +0.001; the
    intervals of theta' alone covered 22 / 19 / 31, and plugging in the marginal fit's
    posterior-mean gamma gave +0.018 / +0.033 / +0.036."""
    hits, errs = 0, []
    runs = 15
    for s in range(runs):
        saved = _saved(100 + s, psi)
        new = M.simulate(300, THETA, PHI, psi=[psi] * 3, seed=5000 + s)
        out = M.apply(saved, "a", new.Y[0], new.delta, _ids("n", 300))
        truth = _planted_share(new.delta, psi)
        v, se = out["bias_share"]["value"], out["bias_share"]["se"]
        hits += abs(v - truth) <= M.Z95 * se
        errs.append(v - truth)
    # nominal 95%: >= 12 of 15 holds with probability ~0.99 at a true 90%
    assert hits >= 12, (hits, errs)
    # the error's sd is ~0.02 / 0.015, so its mean over 15 runs is within ~0.01
    assert abs(float(np.mean(errs))) < 0.012, errs
