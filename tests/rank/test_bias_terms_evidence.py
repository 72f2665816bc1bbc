"""rank reports c and kappa from a refit at the Laplace evidence's lam (rank.fitting.terms_fit)
while its ranking stays the Laplace-EM fit's, against planted truth: sim judge with 3 logits
per quality step (true theta sd ~6, lam ~0.03) and a planted length bias of 3, 100
comparisons on builtin:controlled (30 items).

Before (seeds 0-9): EM lam 0.27-0.44, c's sd 0.49-0.64, the planted 3 missed and not marked
mostly the prior on 10 of 10. Then: c from lam 0.011-0.068, sd 0.76-0.94, marked on 10 of 10.
Now also with a weak prior on c and kappa (rank.fitting.TERMS_TAU: tau 1 pulled c to ~0.6;
tests/rank/test_rank_c_recovery.py): sd ~2, covering 3, unmarked; top-k, theta, P(top-k) and
recall identical."""

import pytest

import judgeaudit as ja
import judgeaudit.rank.fitting as F
import judgeaudit.rank.live as L


def _rank(seed: int, budget: int = 100, **kw) -> dict:
    return ja.rank(judge="sim?length=3", items=f"builtin:controlled?seed={seed}", k=5,
                   budget=budget, covariates="length", seed=seed, cache=False, samples=200,
                   **kw)


def _ranking_side(r: dict) -> tuple:
    return (r["config"]["lam_final"], r["recall"],
            {m: (d["topk"], d["theta"], d["lam"]) for m, d in r["models"].items()},
            [(x["id"], x["theta"], x["lo"], x["hi"], x["p_topk"]) for x in r["ranking"]])


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_c_is_reported_from_the_evidence_lam_and_the_ranking_is_unchanged(monkeypatch, seed):
    new = _rank(seed)
    with monkeypatch.context() as mp:  # the old code: c and kappa from the ranking's fit
        mp.setattr(L, "terms_fit", lambda fit, *a, **k: (fit, None))
        old = _rank(seed)
    c_old, c_new = (r["models"]["bias_aware"]["c"]["length"] for r in (old, new))
    # before: the planted 3 neither covered nor marked mostly the prior (sd 0.49-0.56)
    assert c_old["planted"] == 3.0 and not c_old["covered"] and not c_old["from_prior"]
    # now: sd ~2 (a weak prior on c, rank.fitting.TERMS_TAU), covering 3 (at tau 1 it was
    # sd 0.82-0.91, marked mostly the prior)
    assert c_new["covered"] and not c_new["from_prior"]
    assert c_new["se"] > c_old["se"] + 0.2
    # the ranking is the Laplace-EM fit's, as before
    assert _ranking_side(new) == _ranking_side(old)
    ba = new["models"]["bias_aware"]
    assert ba["lam_terms_method"] == "evidence" and ba["lam"] > 0.2 > ba["lam_terms"]
    assert new["config"]["lam_terms"] == {"bias_aware": ba["lam_terms"], "method": "evidence"}
    assert ba["c"]["length"]["prior_sd"] == ba["tau_terms"] == F.TERMS_TAU
    note = next(n for n in new["notes"] if "Laplace evidence's prior spread" in n)
    assert f"lam {ba['lam_terms']:.3g}" in note and f"Laplace-EM's {ba['lam']:.3g}" in note
    assert "lam_terms" not in old["models"]["bias_aware"]


def test_a_given_lam_changes_nothing(monkeypatch):
    new = _rank(0, budget=40, lam=1.0)
    with monkeypatch.context() as mp:
        mp.setattr(L, "terms_fit", lambda fit, *a, **k: (fit, None))
        old = _rank(0, budget=40, lam=1.0)
    assert new["models"] == old["models"] and new["notes"] == old["notes"]
    assert new["config"]["lam_terms"] is None


def test_rank_eval_reports_the_same_terms_with_the_same_recall(monkeypatch):
    def run() -> dict:
        return ja.rank_eval(oracle="sim?length=3", items="builtin:controlled?n=14", seeds="0-1",
                            budgets="40", rules="topk", samples=100, cache=False,
                            covariates="length")

    new = run()
    with monkeypatch.context() as mp:
        mp.setattr(F, "terms_fit", lambda fit, *a, **k: (fit, None))
        old = run()
    assert new["recall"] == old["recall"] and new["full_data"] == old["full_data"]
    for m_new, m_old in zip(new["matrices"], old["matrices"], strict=True):
        assert m_new["lam"] == m_old["lam"] and m_new["full_data"] == m_old["full_data"]
        assert m_new["lam_terms_method"] == "evidence"
        assert m_new["lam_terms"] < m_new["lam"]["bias_aware"]
        assert m_new["c"]["length"]["se"] > m_old["c"]["length"]["se"]
    assert any("Laplace evidence's prior spread" in n for n in new["notes"])


def test_the_report_names_both_lams():
    from judgeaudit.report.html import render_report

    r = _rank(0, budget=60)
    ba = r["models"]["bias_aware"]
    html = render_report(dict(r))
    assert 'id="lam-terms"' in html and "Laplace evidence" in html
    assert f"bias terms: lam {ba['lam_terms']:.3f} (evidence)" in html
    assert f"the ranking's lam {ba['lam']:.3f} (Laplace-EM)" in html
    old = {**r, "models": {**r["models"], "bias_aware": {
        k: v for k, v in ba.items() if not k.endswith("_terms") and k != "lam_terms_method"}}}
    assert 'id="lam-terms"' not in render_report(old)  # a document from before: as it was
