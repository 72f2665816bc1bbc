"""mitigate's marginal fit with tie verdicts: each judge's dispersion kappa.

A verdict that is the mean of two independently drawn orders (0, 0.5 or 1) has variance
p (1 - p) / 2. Counted as one Bernoulli draw inside the integral over the query effect, it
hid that effect (psi-hat about 0.27 where 1.0 was planted) and pulled phi toward 0 (-0.16 on
a planted 1.2, 4 judges, 400 queries; benchmarks/mitigate_ties.py). The fit now counts each
verdict of judge m 1 / kappa_m times, kappa_m estimated by a fixed point (about 0.5 here),
and keeps kappa = 1 for judges whose verdicts are all 0/1, where the numbers are the ones
recorded before the change."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from judgeaudit.hubj import mitigate as M
from judgeaudit.hubj.run import run_mitigate_fit

THETA, PHI = [-0.5, 0.3, 0.0], [1.2, 0.0, -0.6]
JUDGES = ["a", "b", "c"]

# Recorded with the code before kappa (commit f931b7e) on M.simulate(150, THETA, PHI,
# seed=11) (every verdict 0 or 1), marginal fit; and `apply` of its judge "a" (saved as JSON)
# to M.simulate(80, THETA, PHI, seed=12)'s verdicts of judge 0 on new queries.
BEFORE = {
    "a": {"theta": -0.798797003559764, "phi": 1.6289140186674969, "psi": 1.7064800200488879,
          "phi_se": 1.0251524790330417, "bc": 0.37052193281675727,
          "bc_se": 0.04662350980767064, "share_se": 0.012975259190725648},
    "b": {"theta": 0.331739241137476, "phi": -0.21369730636181344, "psi": 0.18096109472949864,
          "phi_se": 0.21233292475522778, "bc": 0.5815261393443375,
          "bc_se": 0.040644712257227746, "share_se": 0.0021525161076421115},
    "c": {"theta": 0.26401605088119773, "phi": -1.0880225405105852, "psi": 0.9588443994572144,
          "phi_se": 0.3679704810208567, "bc": 0.5550674205758938,
          "bc_se": 0.045098384715952976, "share_se": 0.006839976747829973},
    "apply_a": {"theta": -0.4852388362952709, "theta_se": 0.41699927785370056,
                "bc": 0.4201903386003284, "bc_se": 0.06799103639218138,
                "share_se": 0.01312914611505242},
}
# the optimiser's precision across scipy / numpy versions (bit-identical on the recording's)
REL = 1e-9


def _ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def _numbers(r: dict[str, Any]) -> dict[str, float]:
    return {"theta": r["theta"]["value"], "phi": r["phi"]["value"], "psi": r["psi"]["value"],
            "phi_se": r["phi"]["se"], "bc": r["bc"]["value"], "bc_se": r["bc"]["se"],
            "share_se": r["bias_share"]["se"]}


def test_binary_verdicts_give_the_numbers_recorded_before_kappa():
    p = M.simulate(150, THETA, PHI, seed=11)
    assert set(np.unique(p.Y)) == {0.0, 1.0}
    fit = M.fit(p.Y, p.delta, JUDGES, _ids("q", 150))
    doc = fit.as_dict()
    for j in JUDGES:
        got = _numbers(doc["judges"][j])
        for k, v in BEFORE[j].items():
            assert got[k] == pytest.approx(v, rel=REL), (j, k)
        kappa = doc["judges"][j]["kappa"]
        assert kappa["value"] == 1.0 and kappa["estimated"] is False
        assert "every verdict of this judge is 0 or 1" in kappa["meaning"]
    assert fit.kappa_note() is None
    assert not any(n.startswith("dispersion kappa") for n in doc["notes"])
    new = M.simulate(80, THETA, PHI, seed=12)
    out = M.apply(json.loads(json.dumps(doc)), "a", new.Y[0], new.delta, _ids("n", 80))
    got = {"theta": out["theta"]["value"], "theta_se": out["theta"]["se"],
           "bc": out["bc"]["value"], "bc_se": out["bc"]["se"],
           "share_se": out["bias_share"]["se"]}
    for k, v in BEFORE["apply_a"].items():
        assert got[k] == pytest.approx(v, rel=REL), ("apply", k)
    assert out["fixed_from_fit"]["kappa"] == {"value": 1.0, "from": "the fit's"}


def test_with_two_order_ties_phi_and_psi_are_not_pulled_toward_zero():
    """20 simulated runs, 4 judges, 400 queries, every verdict the mean of two draws. Before
    kappa: phi-hat of the judge planted at 1.2 was 0.16 low on average and psi-hat about
    0.27 (planted 1)."""
    theta, phi = [-0.5, 0.3, 0.0, 0.4], [1.2, 0.0, -0.6, 0.5]
    phis, psis, kappas = [], [], []
    for s in range(20):
        p = M.simulate(400, theta, phi, seed=200 + s, orders=2)
        doc = M.fit(p.Y, p.delta, list("abcd"), _ids("q", 400)).as_dict()["judges"]
        phis.append([doc[j]["phi"]["value"] for j in "abcd"])
        psis.append([doc[j]["psi"]["value"] for j in "abcd"])
        kappas.append([doc[j].get("kappa", {}).get("value") for j in "abcd"])
    err = np.mean(phis, axis=0) - np.asarray(phi)
    # the sd of phi-hat is about 0.12 here, so the mean of 20 is known to about 0.03
    assert np.all(np.abs(err) < 0.08), err
    assert np.all(np.abs(np.mean(psis, axis=0) - 1.0) < 0.15), np.mean(psis, axis=0)
    # the mean of two independent draws has half a draw's variance
    assert np.all(np.abs(np.mean(kappas, axis=0) - 0.5) < 0.05), np.mean(kappas, axis=0)


def test_kappa_is_a_fixed_point_per_judge_and_one_for_a_binary_judge():
    """Judges a and b answer in two orders (ties), c once (0/1 only): c's kappa is exactly 1,
    not estimated; a's and b's are the fixed point's, what `_kappa` gives at the final fit."""
    two = M.simulate(300, THETA, PHI, seed=21, orders=2)
    one = M.simulate(300, THETA, PHI, seed=21, orders=1)
    Y = two.Y.copy()
    Y[2] = one.Y[2]
    Y[0, 7] = np.nan  # a missing verdict is no evidence of dispersion
    fit = M.fit(Y, two.delta, JUDGES, _ids("q", 300))
    k = {j: fit.per_judge[j].extra["kappa"] for j in JUDGES}
    assert k["c"]["value"] == 1.0 and k["c"]["estimated"] is False
    assert k["a"]["n"] == 299 and k["b"]["n"] == 300
    for j in "ab":
        assert k[j]["estimated"] and k[j]["converged"] and 0.35 < k[j]["value"] < 0.65
        assert 0 < k[j]["se"] < 0.1
    # at the fit's parameters, one more fixed-point step moves kappa by less than its tolerance
    mask = np.isfinite(Y)
    Yf = np.where(mask, Y, 0.0)
    z, w = M._gh()
    kv = np.array([k[j]["value"] for j in JUDGES])
    params = np.array([getattr(fit.per_judge[j], a) for a in ("theta", "phi", "psi")
                       for j in JUDGES])
    post = M._marginal_terms(params, Yf, mask, two.delta, z, w, 1.0 / kv)[2]
    again, _ = M._kappa(params, Yf, mask, two.delta, z, w, post)
    np.testing.assert_allclose(again[:2], kv[:2], atol=3 * M.KAPPA_TOL)


def test_results_and_notes_report_kappa_and_what_it_means():
    p = M.simulate(120, THETA, PHI, seed=8, orders=2)
    ctl = M.ControlData(score_candidate=np.arctanh(np.clip(p.delta, -0.999, 0.999)),
                        score_other=np.zeros(120), len_candidate=np.full(120, 50.0),
                        len_other=np.linspace(10, 90, 120))
    doc = run_mitigate_fit(p.Y, ctl, JUDGES, _ids("q", 120))
    note = next(n for n in doc["notes"] if n.startswith("dispersion kappa per judge: "))
    for j in JUDGES:
        k = doc["judges"][j]["kappa"]
        assert k["estimated"] and k["n"] == 120 and 0.3 < k["value"] < 0.7
        assert k["meaning"].startswith("kappa: the variance of this judge's verdicts")
        assert f"{j} {k['value']:.2f} (se {k['se']:.2f}, n 120)" in note
    assert "counts each verdict 1 / kappa times" in note
    # the two-stage fit has none (its Stage II estimates do not depend on a weight per judge)
    two = M.fit(p.Y, p.delta, JUDGES, _ids("q", 120), estimator="two_stage")
    assert all("kappa" not in f.extra for f in two.per_judge.values())
    assert two.kappa_note() is None


def test_apply_takes_the_fits_kappa_and_an_old_fit_without_one_as_1():
    p = M.simulate(200, THETA, PHI, seed=31, orders=2)
    doc = json.loads(json.dumps(M.fit(p.Y, p.delta, JUDGES, _ids("q", 200)).as_dict()))
    new = M.simulate(150, THETA, PHI, seed=32, orders=2)
    now = M.apply(doc, "a", new.Y[0], new.delta, _ids("n", 150))
    kappa = doc["judges"]["a"]["kappa"]["value"]
    assert now["fixed_from_fit"]["kappa"] == {"value": kappa, "from": "the fit's"}
    old = json.loads(json.dumps(doc))
    del old["judges"]["a"]["kappa"]
    before = M.apply(old, "a", new.Y[0], new.delta, _ids("n", 150))
    assert before["fixed_from_fit"]["kappa"]["value"] == 1.0
    assert before["fixed_from_fit"]["kappa"]["from"].startswith("the fit predates kappa")
    # the same estimates; the new verdicts' model variance is kappa's (smaller with ties),
    # never below the sandwich's
    assert now["bc"]["value"] == before["bc"]["value"]
    assert now["theta"]["se"] < before["theta"]["se"]
    assert now["bias_share"]["se"] <= before["bias_share"]["se"]
    assert np.isfinite(now["bias_share"]["se"]) and now["bias_share"]["se"] > 0


def test_a_judge_with_too_few_verdicts_keeps_kappa_1():
    """Two tie-bearing verdicts (0.5, 1.0): the fit matched them almost exactly, kappa fell to
    its floor (0.05) and each counted 20 times: BC 0.94 [0.79, 1.00] from two verdicts (a
    reviewer). Below KAPPA_MIN_N verdicts kappa is 1 (not estimated), and the notes say so."""
    p = M.simulate(150, THETA, PHI, seed=3, orders=2)
    Y = p.Y.copy()
    Y[2, :] = np.nan
    Y[2, :2] = [0.5, 1.0]
    fit = M.fit_marginal(Y, p.delta, JUDGES, [f"q{i}" for i in range(150)])
    k = fit.per_judge["c"].extra["kappa"]
    assert (k["value"], k["estimated"], k.get("too_few"), k["n"]) == (1.0, False, True, 2)
    assert fit.per_judge["c"].bc.se > 0.3  # two verdicts say little: an interval to match
    assert fit.per_judge["a"].extra["kappa"]["estimated"]  # the others are still estimated
    note = fit.kappa_note() or ""
    assert "c 1 (n 2: too few verdicts to estimate it)" in note
    assert f"kept at 1 below {M.KAPPA_MIN_N} verdicts: c" in note


def test_a_kappa_that_did_not_converge_is_said_in_the_notes(monkeypatch):
    """The fixed point stopped at its step cap with converged false only in results.json's
    kappa record; the notes (terminal, report) said nothing."""
    p = M.simulate(150, THETA, PHI, seed=3, orders=2)
    monkeypatch.setattr(M, "KAPPA_STEPS", 1)
    fit = M.fit_marginal(p.Y, p.delta, JUDGES, [f"q{i}" for i in range(150)])
    assert not fit.per_judge["a"].extra["kappa"]["converged"]
    assert "NOT CONVERGED after 1 steps" in (fit.kappa_note() or "")


def test_sparse_verdicts_converge_within_the_step_cap():
    """85% of the verdicts missing: 30 steps stopped short (converged at step 49)."""
    p = M.simulate(150, THETA, PHI, seed=3, orders=2)
    Y = p.Y.copy()
    Y[np.random.default_rng(0).random(Y.shape) < 0.85] = np.nan
    fit = M.fit_marginal(Y, p.delta, JUDGES, [f"q{i}" for i in range(150)])
    ks = [f.extra["kappa"] for f in fit.per_judge.values()]
    assert all(k["converged"] for k in ks if k["estimated"]), ks
