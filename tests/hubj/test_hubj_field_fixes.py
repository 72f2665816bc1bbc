"""Field fixes of HUB-J statistics (tester's findings): quantify adjusts its paired tests
against repeat noise over the (judge x factor) rows of a run (Holm)."""

from __future__ import annotations

import random

from judgeaudit.hubj.quantify import adjust_noise_tests, holm, noise_test

JUDGES, FACTORS, N_TEST = 2, 6, 40


def _run(rng: random.Random, planted: float | None) -> dict[str, dict[str, dict]]:
    """One simulated run's per_judge rows: each test item's rewrite flip at l* and its repeat
    flip are independent draws; null rows flip at the repeat's rate (0.15), the planted row
    (judge 0, factor 0) at `planted`."""
    test = [f"i{k}" for k in range(N_TEST)]
    per: dict[str, dict[str, dict]] = {}
    for j in range(JUDGES):
        repeat = {i: float(rng.random() < 0.15) for i in test}
        per[f"j{j}"] = {}
        for f in range(FACTORS):
            rate = planted if planted is not None and j == 0 and f == 0 else 0.15
            flips = {(i, f"f{f}", 3): float(rng.random() < rate) for i in test}
            per[f"j{j}"][f"f{f}"] = {"vs_repeat_noise": noise_test(flips, f"f{f}", 3, test,
                                                                   repeat)}
    return per


def test_holm_adjusts_step_down_and_caps_at_one():
    assert holm([0.01, 0.04, 0.03, 0.5]) == [0.04, 0.09, 0.09, 0.5]
    assert holm([0.6, 0.6]) == [1.0, 1.0]
    assert holm([]) == []


def test_quantify_rows_are_adjusted_for_multiplicity_null_and_planted():
    """2 unbiased judges x 6 factors: unadjusted, some row was "above repeat noise" in a
    quarter of runs; Holm holds the family-wise rate near 5%, and a planted factor (flip
    rate 0.6 against repeat noise 0.15 on 40 test items) is still flagged."""
    rng = random.Random(20261128)
    runs = 300
    any_raw = any_adj = 0
    for _ in range(runs):
        per = _run(rng, None)
        rows = [r["vs_repeat_noise"] for p in per.values() for r in p.values()]
        any_raw += any(t["p"] < 0.05 for t in rows)
        summary = adjust_noise_tests(per)
        assert summary["m"] == JUDGES * FACTORS and summary["method"] == "holm"
        any_adj += bool(summary["shown_above"])
        assert all(t["p_adjusted"] >= t["p"] for t in rows)
        assert all(t["shown_above"] == (t["p_adjusted"] < 0.05) for t in rows)
    assert any_raw / runs > 0.15  # the old rule's family-wise rate
    assert any_adj / runs <= 0.07, any_adj
    hits = 0
    for _ in range(50):
        per = _run(rng, 0.6)
        summary = adjust_noise_tests(per)
        hits += ["j0", "f0"] in summary["shown_above"]
        others = [x for x in summary["shown_above"] if x != ["j0", "f0"]]
        assert len(others) <= 1
    assert hits >= 45, hits


def test_validate_states_the_smallest_attainable_p():
    """n held-out Deltas, m factors: the smallest exact two-sided Wilcoxon p is 2/2^n; BH at
    0.05 over m needs p <= 0.05/m of a factor alone, or k factors at p <= 0.05 k/m."""
    import numpy as np

    from judgeaudit.hubj.validate import attainable, multiplicity

    a = attainable(6, 14)
    assert a == {"n": 6, "m": 14, "smallest_p": 2 / 64, "factors_needed": 9,
                 "n_for_one_alone": 10, "limited": True}
    assert attainable(3, 14)["factors_needed"] is None  # 0.25 > 0.05: none can pass
    assert attainable(12, 14)["limited"] is False
    d = {f"f{k}": np.array([1.0, 2, 1, 3, 1, 2]) for k in range(14)}
    _per, summary = multiplicity(d)
    assert summary["attainable"]["smallest_p"] == 2 / 64 and summary["m"] == 14
