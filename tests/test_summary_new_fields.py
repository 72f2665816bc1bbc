"""The `--json` summaries carry what this version added to the results: quantify's paired
test against the repeat noise (the summary gave only the two intervals, which are no test),
mitigate's notes and control resolution (what limits its correction), and rank's
`converged` (rank-eval's summary had it; rank's only as a warning in its notes)."""

from __future__ import annotations

import pytest

import judgeaudit
from judgeaudit.result import Result


def test_quantify_summary_has_the_paired_noise_test():
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"
    q = judgeaudit.quantify([judge], "builtin:facts", factors="verbosity", pool=40, limit=10,
                            levels=(1, 3, 5), cache=False)
    got = q.summary()["susceptibility"][judge]["verbosity"]["vs_repeat_noise"]
    doc = q["per_judge"][judge]["verbosity"]["vs_repeat_noise"]
    # p_adjusted (Holm over the run's rows) joined the summary on purpose (c85a1ac)
    assert got == {k: doc[k] for k in ("p", "p_adjusted", "n_pairs", "rewrite_higher",
                                       "repeat_higher", "shown_above")}


def test_mitigate_summary_has_its_notes_and_control_resolution(shared_data):
    m = judgeaudit.mitigate(judges="sim?length=2&seed=1",
                            data=f"pandalm:{shared_data / 'pandalm_testset'}",
                            scorer="simhubj?score_from=length", limit=60, cache=False)
    s = m.summary()
    assert s["control_resolution"] == m["control_resolution"]
    assert s["control_resolution"]["n_queries"] > 0
    assert any("distinct value" in n for n in s["notes"])


@pytest.mark.parametrize("converged", [True, False, None])
def test_rank_summary_says_whether_the_fit_converged(converged):
    doc = {"command": "rank", "schema_version": 1, "run": {"status": "ok"},
           "config": {"k": 2, "budget": 10}, "ranking": [], "models": {}, "notes": []}
    if converged is not None:
        doc["converged"] = converged
    assert Result.from_document(doc).summary()["converged"] is converged
