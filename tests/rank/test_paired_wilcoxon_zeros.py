"""rank-eval's paired Wilcoxon drops the seeds where two rules tied before it ranks, and is
exact then: scipy's default chose the normal approximation by the count with the zeros, so
five seeds where one rule won by the same margin gave p = 0.025 with 9 ties beside them and
0.0625 with 8 (exact: 2 / 2^5 = 0.0625 whatever the ties)."""

from __future__ import annotations

import pytest

from judgeaudit.rank.evaluate import paired_test


@pytest.mark.parametrize("ties", [0, 8, 9, 20])
def test_tied_seeds_do_not_change_the_wilcoxon_p(ties):
    x = [0.8] * 5 + [0.6] * ties
    y = [0.6] * 5 + [0.6] * ties
    assert paired_test(x, y)["p_wilcoxon"] == pytest.approx(0.0625)
