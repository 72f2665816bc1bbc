"""scoring-bias's --json summary says how many baseline scorings it made per item, how many
were asked for, and what the repeats added (a script read none of it)."""

from __future__ import annotations

import judgeaudit


def test_scoring_summary_gives_repeats(tmp_path):
    res = judgeaudit.scoring_bias("sim?seed=0", "builtin:graded", perturbations=["order_desc"],
                                  limit=8, repeats=2, cache=tmp_path / "c.sqlite")
    rep = res.summary()["repeats"]
    assert rep["repeats"] == 2
    assert rep["repeats_asked"] == 2
    assert "repeat_calls" in rep
