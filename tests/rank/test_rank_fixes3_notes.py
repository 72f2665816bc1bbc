"""rank-eval's notes carry the sentence rank prints about the bias terms' weak prior (their
fit's prior sd is rank.fitting.TERMS_TAU, the ranking's is --tau): it was missing, so c read
as measured at the ranking's prior."""

from __future__ import annotations

import judgeaudit


def test_rank_eval_notes_say_the_terms_weak_prior():
    res = judgeaudit.rank_eval("sim?length=1.5&position=0.5",
                               "builtin:controlled?seed=1&n=12&k=3", k=3, budgets=[30],
                               rules=["random"], seeds=2, covariates="length", cache=False,
                               samples=100)
    notes = " | ".join(res.summary()["notes"])
    assert "prior on them is weak (sd 10; the ranking's is 1" in notes, notes
