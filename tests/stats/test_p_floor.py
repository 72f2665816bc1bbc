"""No p- or q-value of a test on finite data is recorded as 0.

A tester's 20,000-item audit recorded p = 0 and q = 0.0 (verbosity, authority): the exact
sign test's p underflowed double precision. A test on finitely many items never gives 0,
so an underflowed p is recorded as P_FLOOR (1e-300), read "p < 1e-300"; its q likewise."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judgeaudit.audit.paired import paired_stats
from judgeaudit.stats.multiple import benjamini_hochberg
from judgeaudit.stats.tests import (
    P_FLOOR,
    binomial_test,
    floor_p,
    mcnemar_exact,
    normal_p,
    one_sample_t,
    p_text,
    wilcoxon_signed_rank,
)


def test_an_exact_sign_test_at_20000_items_is_never_0() -> None:
    # 15,000 up, 5,000 down: the exact p is ~1e-1000, far below a double
    assert binomial_test(15000, 20000) == P_FLOOR
    assert mcnemar_exact(15000, 5000) == P_FLOOR
    st = paired_stats(np.r_[np.ones(15000), -np.ones(5000)], mde=False)
    assert st["p"] == P_FLOOR
    assert json.loads(json.dumps({"p": st["p"]}))["p"] == 1e-300  # a number in JSON, not 0.0


def test_asymptotic_and_normal_p_values_are_floored_too() -> None:
    x = np.arange(1, 3001)  # 3000 differences, all up: the normal path, z ~ 95
    assert wilcoxon_signed_rank(x) == P_FLOOR
    assert wilcoxon_signed_rank(x, zero_method="pratt") == P_FLOOR
    assert one_sample_t(np.r_[np.full(5000, 1.0), np.full(5000, 1.01)])[1] == P_FLOOR
    assert normal_p(40.0) == P_FLOOR and math.erfc(40.0 / math.sqrt(2)) == 0.0
    assert normal_p(2.0) == pytest.approx(0.0455, abs=1e-4)


def test_p_values_a_double_holds_are_kept_as_computed() -> None:
    p = binomial_test(900, 1000)
    assert 1e-200 < p < 1e-100 and p == floor_p(p)
    assert floor_p(2e-305) == 2e-305 and floor_p(0.0) == P_FLOOR
    assert math.isnan(floor_p(float("nan")))
    # an outcome impossible under the null: p is 0 exactly, not a bound
    assert binomial_test(3, 3, 0.0) == 0.0


def test_a_floored_p_gives_a_floored_q_never_0_nor_a_multiple_of_the_floor() -> None:
    q = benjamini_hochberg([P_FLOOR, P_FLOOR, 0.01, 0.5, float("nan")])
    assert q[0] == P_FLOOR and q[1] == P_FLOOR  # not 4 * 1e-300 / 1 read as an estimate
    assert q[2] == pytest.approx(0.01 * 4 / 3) and q[3] == 0.5 and math.isnan(q[4])
    assert (q[:4] > 0).all()


def test_p_text_shows_the_floor_as_a_bound() -> None:
    assert p_text(P_FLOOR, ".1g") == "< 1e-300"
    assert p_text(0.0) == "< 1e-300"  # an older results file's 0: no finite test gives it
    assert p_text(2e-305) == "< 1e-300"
    assert p_text(9e-288, ".1g") == "9e-288" and p_text(0.2, ".1g") == "0.2"
    assert p_text(None) == "n/a" and p_text(float("nan")) == "n/a"
