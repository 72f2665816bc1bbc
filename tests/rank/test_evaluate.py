"""rank_eval output shape, its aggregation, and the paired tests against scipy."""

import numpy as np
import pytest
from scipy import stats

from judgeaudit.rank.evaluate import controlled_sim_case, paired_test, rank_eval


@pytest.fixture(scope="module")
def result():
    return rank_eval({"sim": controlled_sim_case(c=1.0, kappa=0.3)}, budgets=[16, 32],
                     rules=["topk", "global"], seeds=[0, 1, 2], n_samples=300)


def test_structure_and_aggregation(result):
    for m in ("naive", "bias_aware"):
        for rule in ("topk", "global"):
            for b in (16, 32):
                cell = result["recall"][m][rule][b]
                per = [c["recall"][m][rule][b] for c in result["cases"]]
                assert cell["n"] == 3 and cell["mean"] == pytest.approx(np.mean(per))
                assert cell["se"] == pytest.approx(np.std(per, ddof=1) / np.sqrt(3))
        assert result["full_data"][m]["n"] == 3
    assert set(result["tests"]["naive"][32]) == {"topk vs global"}
    ab = result["ablation"][32]
    assert ab["gain_both"] == pytest.approx(ab["bias_aware+topk"] - ab["naive+global"])
    c = result["estimates"]["c"]
    assert len(c["coverage"]) == 1 and 0 <= c["coverage"][0] <= 1
    assert result["estimates"]["kappa"]["n"] == 3


def test_bias_aware_beats_naive_on_full_data_with_planted_bias(result):
    assert result["full_data"]["bias_aware"]["mean"] > result["full_data"]["naive"]["mean"]


def test_paired_test_matches_scipy():
    x = [0.8, 0.6, 1.0, 0.8, 0.6, 0.4]
    y = [0.6, 0.6, 0.8, 0.4, 0.4, 0.4]
    t = paired_test(x, y)
    ref = stats.ttest_rel(x, y)
    assert t["p_t"] == pytest.approx(ref.pvalue) and t["t"] == pytest.approx(ref.statistic)
    assert t["p_wilcoxon"] == pytest.approx(stats.wilcoxon(np.subtract(x, y)).pvalue)
    assert paired_test(x, x)["p_t"] == 1.0
    # the same non-zero difference on every seed: no t-test (its p was 0 on two seeds)
    same = paired_test([0.8, 0.6], [0.6, 0.4])
    assert np.isnan(same["p_t"]) and same["p_wilcoxon"] == pytest.approx(0.5)
