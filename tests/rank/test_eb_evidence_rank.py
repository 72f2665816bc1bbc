"""Empirical-Bayes lam by the Laplace evidence in `rank` (rank.fitting, the option
``EB_METHOD = "auto"``; the default stays Laplace-EM, which ranks better), against planted
truth: a sharp judge (sim, 3 logits per quality step: true theta sd ~6, lam ~0.03) with a
planted length bias of 3, seen through 100 comparisons (30 items).

Laplace-EM reads lam 0.29-0.44 there (seeds 0-4), a theta prior ~10x too tight: c's
interval shrinks to sd 0.49-0.64, misses the planted 3 on every seed and is not marked as
mostly the prior. c on a covariate that does not track quality is told from quality only by
the priors, so its honest sd here is near the prior's (tau = 1). At 50 comparisons the
evidence is flat (lam 0.1-0.4 on actively chosen pairs) and only 1 of 5 seeds is marked: not
tested here."""

import numpy as np
import pytest

import judgeaudit as ja
import judgeaudit.rank.fitting as F
from judgeaudit.rank.fitting import evidence_path, fit_model
from judgeaudit.rank.loop import run_active
from judgeaudit.rank.simulate import SimOracle
from judgeaudit.stats.bradley_terry import DENSE_MAX, evidence_lam


def _c(seed: int, budget: int = 100) -> tuple[float, dict]:
    r = ja.rank(judge="sim?length=3", items=f"builtin:controlled?seed={seed}", k=5,
                budget=budget, covariates="length", seed=seed, cache=False, samples=200)
    return r["config"]["lam_final"]["bias_aware"], r["models"]["bias_aware"]["c"]["length"]


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_evidence_lam_keeps_c_interval_honest_at_a_small_budget(monkeypatch, seed):
    # the default ranks at Laplace-EM's lam (0.29-0.44) and reports c from a refit at the
    # evidence's with a weak prior on c (rank.fitting.terms_fit, TERMS_TAU;
    # tests/rank/test_bias_terms_evidence.py): sd of c ~2, covering 3 and unmarked (before
    # the refit: sd 0.49-0.64, unmarked and missing 3; at tau 1: sd 0.82-0.91, marked)
    lam, c = _c(seed)
    assert lam > 0.2 and c["covered"] and not c["from_prior"]
    # lam from the Laplace evidence for the whole run: lam 0.03-0.11, sd of c 0.72-0.90,
    # every term marked from_prior
    monkeypatch.setattr(F, "EB_METHOD", "auto")
    lam, c = _c(seed)
    assert c["planted"] == 3.0 and lam < 0.2
    assert c["covered"] or c["from_prior"]


def test_the_loop_ends_at_the_evidence_maximum_in_few_fits(monkeypatch):
    """Driving refits search lam only every EVIDENCE_EVERY-th time (warm, bracketed); the
    final fits are the evidence's maximisers to 0.1%."""
    import judgeaudit.rank.fitting as F
    import judgeaudit.stats.bradley_terry as B

    calls = {"n": 0}
    once, le = F._once, B.log_evidence

    def c_once(*a, **k):
        calls["n"] += 1
        return once(*a, **k)

    def c_le(*a, **k):
        calls["n"] += 1
        return le(*a, **k)

    monkeypatch.setattr(F, "_once", c_once)
    monkeypatch.setattr(B, "log_evidence", c_le)
    rng = np.random.default_rng(3)
    o = SimOracle(6.0 * rng.standard_normal(20), seed=3)
    res = run_active(o, 20, 80, 3, eb_lam=True, n_samples=200, seed=0, eb_method="auto")
    n_fits = len(res.refits) + 3
    assert calls["n"] <= 10 * n_fits  # measured 96 for these 12 (Laplace-EM: 72)
    monkeypatch.setattr(B, "log_evidence", le)
    for fit, pos in ((res.naive, False), (res.bias_aware, True)):
        lam, _ = evidence_lam(20, res.comparisons, position=pos)
        assert fit.lam == pytest.approx(lam, rel=5e-3)


def test_naive_and_large_pools():
    comps = SimOracle(np.linspace(-6, 6, 12), seed=0).full_comparisons()
    for model in ("naive", "bias_aware"):
        ev = fit_model(model, 12, comps, eb_lam=True, eb_method="auto")
        em = fit_model(model, 12, comps, eb_lam=True)  # EB_METHOD: "em"
        assert ev.converged and 0.01 <= ev.lam <= 100 and em.lam != ev.lam
    # no comparisons: the evidence is flat, the start is kept
    assert fit_model("naive", 12, np.zeros((0, 3)), eb_lam=True, lam=0.5,
                     eb_method="auto").lam == 0.5
    # "auto": the dense evidence only up to DENSE_MAX parameters; Laplace-EM above
    assert not evidence_path("naive", DENSE_MAX, None)  # the default: Laplace-EM
    assert evidence_path("naive", DENSE_MAX, None, eb_method="auto")
    assert not evidence_path("naive", DENSE_MAX + 1, None, eb_method="auto")
    assert not evidence_path("bias_aware", DENSE_MAX - 1, np.zeros((DENSE_MAX - 1, 1)),
                             eb_method="auto")
    assert evidence_path("bias_aware", DENSE_MAX + 1, None, eb_method="evidence")
    with pytest.raises(ValueError, match="eb_method"):
        fit_model("naive", 12, comps, eb_lam=True, eb_method="newton")


@pytest.mark.parametrize("sd", [0.7, 3.0])
def test_evidence_lam_recovers_the_spread_of_theta_as_em_does(sd):
    rng = np.random.default_rng(1)
    theta = sd * rng.standard_normal(40)
    X = (rng.random((40, 1)) < 0.5).astype(float)
    comps = np.vstack([SimOracle(theta, X, c=0.5, kappa=0.2, seed=10 + r).full_comparisons()
                       for r in range(3)])
    true_lam = 1.0 / np.mean(theta ** 2)
    ev = fit_model("bias_aware", 40, comps, X=X, eb_lam=True, eb_method="auto")
    em = fit_model("bias_aware", 40, comps, X=X, eb_lam=True)
    assert 0.6 * true_lam < ev.lam < 1.6 * true_lam
    # plenty of data: the two agree (measured 1.5% and 5% apart)
    assert ev.lam == pytest.approx(em.lam, rel=0.1)
