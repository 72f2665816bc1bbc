"""mitigate's standard errors with tie verdicts (0.5: a tie, or the two orders disagreeing).

A tester found phi's se 1.45 times the spread of phi-hat across seeds when verdicts include
ties: the binomial variance p (1 - p) overstates the variance of a verdict in {0, 0.5, 1}.
Each judge now reports a sandwich se (clustered by query) beside the model's and their ratio
(`dispersion`); the intervals take the model's widened to the sandwich where that is larger
(`se_method` "larger"). The sandwich is not used to narrow them. The marginal fit (the
default) now models the ties' variance itself, per judge (dispersion kappa,
tests/hubj/test_mitigate_kappa.py), so its model se is the spread too; the two-stage fit keeps
the binomial one. These tests check the sandwich against a textbook computation, its size
against the spread of simulated estimates, that it widens an interval and never narrows one,
and that a fit saved before the change still applies."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import statsmodels.api as sm

from judgeaudit.hubj import mitigate as M
from judgeaudit.hubj.run import run_mitigate_fit
from judgeaudit.stats import fit_logistic

THETA, PHI = [-0.5, 0.3, 0.0], [1.2, 0.0, -0.6]
JUDGES = ["a", "b", "c"]


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def _two_order_verdicts(n: int, seed: int) -> M.Planted:
    """Verdicts as a judge asked in both orders gives them: the mean of two draws."""
    return M.simulate(n, THETA, PHI, seed=seed, orders=2)


def test_stage_two_sandwich_is_the_textbook_hc1_on_the_same_input():
    """statsmodels' GLM Binomial with cov_type HC0 on fractional y (ties), times n / (n - k)."""
    rng = np.random.default_rng(0)
    n = 200
    X = np.column_stack([np.ones(n), rng.normal(size=n), rng.normal(size=n)])
    p = M._p(X @ np.array([0.2, 1.0, -0.5]))
    y = ((rng.random(n) < p).astype(float) + (rng.random(n) < p)) / 2
    assert 0.2 < np.mean(y == 0.5) < 0.6  # ties present
    model = sm.GLM(y, X, family=sm.families.Binomial())
    plain = model.fit()
    hc0 = model.fit(cov_type="HC0").cov_params()
    ours = M._logistic_sandwich(X, y, plain.params, plain.cov_params())
    np.testing.assert_allclose(ours, hc0 * n / (n - 3), rtol=1e-5)  # IRLS stops ~1e-6
    # ties: about half the binomial variance, as the mean of two draws has
    ratio = np.diag(ours) / np.diag(plain.cov_params())
    assert np.all((ratio > 0.3) & (ratio < 0.8)), ratio


def test_stage_two_reports_both_standard_errors_and_their_ratio():
    p = _two_order_verdicts(150, seed=3)
    f = M.stage_two(p.Y[0], p.delta, p.gamma)
    X = np.column_stack([np.ones(150), p.delta, p.gamma])
    sm_fit = sm.GLM(p.Y[0], X, family=sm.families.Binomial()).fit(cov_type="HC0")
    e = f.extra
    assert e["se_method"] == "larger"
    # our fit has the weak prior (PRIOR_SD): within 2% of the unpenalised statsmodels one
    assert e["se_sandwich"]["phi"] == pytest.approx(
        float(sm_fit.bse[1]) * np.sqrt(150 / 147), rel=0.02)
    assert e["dispersion"]["phi"] == pytest.approx(
        (e["se_sandwich"]["phi"] / e["se_model"]["phi"]) ** 2, rel=1e-9)
    assert f.as_dict()["phi"]["se"] == pytest.approx(e["se_model"]["phi"])  # not narrowed


def test_marginal_query_scores_are_the_derivatives_of_each_querys_likelihood():
    p = _two_order_verdicts(40, seed=1)
    Y = p.Y.copy()
    Y[1, 5] = np.nan  # a missing verdict has no score
    mask = np.isfinite(Y)
    Yf = np.where(mask, Y, 0.0)
    z, w = M._gh()
    params = np.array([-0.4, 0.2, 0.1, 1.0, 0.1, -0.5, 0.8, 0.6, 1.1])
    _, _, r = M._marginal_parts(params, Yf, mask, p.delta, z, w)
    S = M._query_scores(r, p.delta, z)
    assert S.shape == (40, 9)
    h = 1e-6
    for i in range(9):
        e = np.zeros(9)
        e[i] = h
        up = M._marginal_parts(params + e, Yf, mask, p.delta, z, w)[0]
        dn = M._marginal_parts(params - e, Yf, mask, p.delta, z, w)[0]
        np.testing.assert_allclose(S[:, i], (up - dn) / (2 * h), atol=1e-6)
    # their sum is the likelihood's gradient (the prior's part added back)
    _, grad, _ = M._marginal_terms(params, Yf, mask, p.delta, z, w)
    np.testing.assert_allclose(-grad, S.sum(0) - params / M.PRIOR_SD**2, atol=1e-9)


def test_larger_is_at_least_both_and_the_model_when_the_sandwich_is_smaller():
    rng = np.random.default_rng(4)
    for _ in range(20):
        a, b = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
        model, robust = a @ a.T, b @ b.T
        big = M._larger(model, robust)
        assert np.linalg.eigvalsh(big - model).min() > -1e-9
        assert np.linalg.eigvalsh(big - robust).min() > -1e-9
    model = np.diag([1.0, 2.0, 3.0])
    np.testing.assert_allclose(M._larger(model, 0.5 * model), model, atol=1e-12)


def test_an_interval_is_widened_where_the_sandwich_is_larger():
    """Verdicts whose spread the model understates (its fitted p near 0 or 1 where the judge
    flips a coin): the shown se is the sandwich's, larger than the model's."""
    rng = np.random.default_rng(0)
    d = np.tanh(rng.choice([-3, -1, 0, 1, 3], size=400).astype(float))
    y = (rng.random(400) < np.where(np.abs(d) > 0.9, 0.5, M._p(4 * d))).astype(float)
    f = M.stage_two(y, d, np.zeros(400)).as_dict()
    # the binomial model's se, computed here: the interval was this wide before
    X = np.column_stack([np.ones(400), d])
    model_se = float(fit_logistic(X, y, l2=1.0 / M.PRIOR_SD**2).se[1])
    assert f["phi"]["se"] > 1.03 * model_se
    assert f["phi"]["se"] == pytest.approx(f["se_sandwich"]["phi"], rel=1e-6)
    assert f["se_model"]["phi"] == pytest.approx(model_se, rel=1e-9)
    assert f["dispersion"]["phi"] > 1.05


@pytest.mark.parametrize("estimator", M.ESTIMATORS)
def test_the_point_estimates_do_not_depend_on_the_se_method(estimator):
    p = _two_order_verdicts(120, seed=2)
    fits = {se: M.fit(p.Y, p.delta, JUDGES, _ids("q", 120), estimator=estimator, se=se)
            for se in M.SE_METHODS}
    for j in JUDGES:
        ref = fits["model"].per_judge[j]
        for f in fits.values():
            g = f.per_judge[j]
            assert (g.theta, g.phi, g.psi) == (ref.theta, ref.phi, ref.psi)
            assert (g.bc.value, g.bias_share.value) == (ref.bc.value, ref.bias_share.value)
        larger, robust = fits["larger"].per_judge[j].bc.se, fits["sandwich"].per_judge[j].bc.se
        if estimator == "two_stage":  # binomial model: ties make the sandwich smaller, so
            # "larger" is the model's
            assert larger == pytest.approx(ref.bc.se, rel=1e-9)
            assert robust < ref.bc.se
        else:  # kappa's model: the sandwich about as large; "larger" at least both
            assert 0.75 < robust / ref.bc.se < 1.33
            assert larger >= max(ref.bc.se, robust) * (1 - 1e-9)


def test_with_ties_both_standard_errors_are_the_spread_of_phi_hat():
    """30 simulated runs (3 judges, 150 queries, two-order verdicts, marginal fit): the
    sandwich se of phi and the model's (with kappa) within 25% of the sd of phi-hat across
    runs, the shown one at least both. Changed on purpose with kappa: the binomial model's
    se was 1.15 to 1.4 times the spread (the factor a tester reported)."""
    phis, se_model, se_rob, shown = [], [], [], []
    for s in range(30):
        p = _two_order_verdicts(150, seed=100 + s)
        f = M.fit(p.Y, p.delta, JUDGES, _ids("q", 150))
        d = f.as_dict()["judges"]
        phis.append([f.per_judge[j].phi for j in JUDGES])
        se_model.append([d[j]["se_model"]["phi"] for j in JUDGES])
        se_rob.append([d[j]["se_sandwich"]["phi"] for j in JUDGES])
        shown.append([d[j]["phi"]["se"] for j in JUDGES])
    sd = np.std(phis, axis=0, ddof=1)
    rob, mod = np.mean(se_rob, axis=0) / sd, np.mean(se_model, axis=0) / sd
    assert np.all((rob > 0.75) & (rob < 1.33)), (rob, sd)
    assert np.all((mod > 0.75) & (mod < 1.33)), (mod, sd)
    assert np.all(np.asarray(shown) >= np.maximum(se_model, se_rob) * (1 - 1e-9))  # never
    # narrowed


def _strip_se(doc: dict[str, Any]) -> dict[str, Any]:
    """A fit as saved before se_method existed: no se keys, the model's covariance."""
    old = json.loads(json.dumps(doc))
    for j in old["judges"].values():
        for k in ("se_method", "se_method_text", "se_model", "se_sandwich", "dispersion",
                  "kappa"):
            j.pop(k, None)
    return old


@pytest.mark.parametrize("estimator", M.ESTIMATORS)
def test_apply_on_a_fit_saved_before_the_change_says_its_se_was_the_models(estimator):
    p = _two_order_verdicts(150, seed=6)
    doc = M.fit(p.Y, p.delta, JUDGES, _ids("q", 150), estimator=estimator, se="model")
    old = _strip_se(doc.as_dict())
    new = _two_order_verdicts(100, seed=7)
    out = M.apply(old, "a", new.Y[0], new.delta, _ids("n", 100))
    assert out["fixed_from_fit"]["se_method"].startswith("model")
    assert out["se_method"] == "larger"
    assert np.isfinite(out["bias_share"]["se"]) and out["bias_share"]["se"] > 0
    now = M.apply(json.loads(json.dumps(doc.as_dict())), "a", new.Y[0], new.delta,
                  _ids("n", 100))
    assert now["fixed_from_fit"]["se_method"] == "model"
    if estimator == "two_stage":  # the same fit saved now applies to the same intervals
        assert now["bias_share"]["se"] == pytest.approx(out["bias_share"]["se"], rel=1e-12)
    else:  # an old marginal fit has no kappa: taken as 1, the binomial variance, so the
        # new verdicts' part is at least as wide as with the fit's kappa (changed on purpose)
        assert out["fixed_from_fit"]["kappa"]["value"] == 1.0
        assert out["fixed_from_fit"]["kappa"]["from"].startswith("the fit predates kappa")
        assert out["bias_share"]["se"] >= now["bias_share"]["se"]
        assert out["bias_share"]["value"] == now["bias_share"]["value"]


def test_results_and_notes_name_the_se_method():
    p = _two_order_verdicts(120, seed=8)
    ctl = M.ControlData(score_candidate=np.arctanh(np.clip(p.delta, -0.999, 0.999)),
                        score_other=np.zeros(120), len_candidate=np.full(120, 50.0),
                        len_other=np.linspace(10, 90, 120))
    doc = run_mitigate_fit(p.Y, ctl, JUDGES, _ids("q", 120))
    for j in JUDGES:
        r = doc["judges"][j]
        # with kappa the model's variance is about the sandwich's (it was below 1: ties)
        assert r["se_method"] == "larger" and 0.6 < r["dispersion"]["phi"] < 1.6
    note = doc["notes"][0]
    assert note.startswith("standard errors: the binomial model's, widened to the sandwich")
    assert "se_method=larger" in note and "(dispersion kappa, below)" in note
    assert doc["notes"][1].startswith("dispersion kappa per judge: a 0.")
