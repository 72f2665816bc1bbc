"""`rank` reports P(top-k) from the Laplace evidence's refit (`LiveRun.p_fit`), not from the
Laplace-EM fit whose lam is too tight (underconfident probabilities:
tests/rank/test_membership_calibration.py); its order and top k stay the EM fit's. A real
rank run with the simulated judge, its results read back."""

from __future__ import annotations

import json

import numpy as np

import judgeaudit
from judgeaudit.rank import live
from judgeaudit.rank.live import LiveRun


def test_rank_draws_p_topk_from_the_evidence_fit(monkeypatch):
    asked: list[str] = []
    real = LiveRun.p_fit

    def spy(self, model):
        asked.append(model)
        return real(self, model)

    monkeypatch.setattr(live.LiveRun, "p_fit", spy)
    res = judgeaudit.rank("sim?position=1&seed=0", "builtin:controlled?seed=0", k=5,
                          budget=80, samples=400, cache=False)
    doc = json.loads(res.to_json())
    assert asked and asked[0] == doc["reported_model"]  # the reported model's P(top-k) fit
    rows = doc["ranking"]
    p = np.array([r["p_topk"] for r in rows])
    assert [r["in_topk"] for r in rows][:5] == [True] * 5  # the EM fit's order, top k first
    assert np.all((p >= 0) & (p <= 1)) and abs(p.sum() - 5) < 1e-6
