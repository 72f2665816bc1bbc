"""A probe left with one usable item ends underpowered with a note that names n=1; it never
crashes the run (field finding: refinement_aware passed a single pair to `bootstrap_ci`,
which needs 2, and the whole audit exited 2 with no results)."""

from __future__ import annotations

import judgeaudit
from judgeaudit.audit.battery import run_battery
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.llm import Response


def test_refinement_aware_on_one_item_is_underpowered_not_a_crash():
    res = judgeaudit.audit(judge="sim?position=0.1", n=1, probes=["refinement_aware"],
                           cache=False)
    assert res.ok and res.summary()["exit_code"] == 0
    p = res.to_dict()["probes"]["refinement_aware"]
    assert p["n"] == 1 and p["verdict"] == "underpowered"
    assert "error_rate_ra" not in p["rates"]
    assert any("ErrorRate_RA not computed: n=1" in note for note in p["notes"]), p["notes"]


async def test_self_preference_on_one_own_answer_is_underpowered_not_a_crash(monkeypatch):
    """The sim cannot write answers, so the judge's own answer is stubbed (as in
    test_estimate_methods)."""
    items = [it for it in load("builtin:facts?seed=1") if it.label in (1, 2)][:1]
    judge = make_judge("sim?seed=1")
    monkeypatch.setattr(judge.client.provider, "cannot_serve", lambda meta: None)
    real = judge.client.map

    async def answers(reqs, *a, **k):
        if reqs and reqs[0].meta.get("task") == "generate":
            return [Response(text=f"My own answer number {i}.") for i in range(len(reqs))]
        return await real(reqs, *a, **k)

    monkeypatch.setattr(judge.client, "map", answers)
    res = await run_battery(judge, items, ["self_preference"], seed=1,
                            panel=[make_judge("sim?seed=2")])
    p = res["probes"]["self_preference"]
    assert p["n"] == 1 and p["verdict"] == "underpowered"
    assert "error_rate_se" not in p["rates"]
    assert any("ErrorRate_SE not computed: n=1" in note for note in p["notes"]), p["notes"]
