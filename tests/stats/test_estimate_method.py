"""Estimate carries an optional `se` and `method` (what produced the interval): written only
when set, so results files keep their shape, and files written before they existed load."""

from __future__ import annotations

import json
import math

import pytest

from judgeaudit.stats.types import Estimate


def test_without_se_or_method_the_dict_has_its_old_shape():
    d = Estimate(0.25, (0.1, 0.4), 20).as_dict()
    assert d == {"value": 0.25, "ci95": [0.1, 0.4], "n": 20}


def test_se_and_method_are_written_when_set():
    e = Estimate(0.25, (0.1, 0.4), 20, se=0.07, method="delta")
    assert e.as_dict() == {"value": 0.25, "ci95": [0.1, 0.4], "n": 20, "se": 0.07,
                           "method": "delta"}
    assert Estimate(0.5, (0.2, 0.8), 9, method="wilson").as_dict()["method"] == "wilson"
    assert "se" not in Estimate(0.5, (0.2, 0.8), 9, method="wilson").as_dict()
    assert Estimate(math.nan, (math.nan, 1.0), 0, se=math.inf).as_dict() == {
        "value": None, "ci95": [None, 1.0], "n": 0, "se": None}


def test_positional_construction_and_equality_are_unchanged():
    e = Estimate(0.25, (0.1, 0.4), 20)
    assert (e.se, e.method) == (None, None)
    assert e == Estimate(value=0.25, ci95=(0.1, 0.4), n=20)
    assert e != Estimate(0.25, (0.1, 0.4), 20, method="wilson")


def test_from_dict_round_trips_through_json():
    e = Estimate(0.25, (0.1, 0.4), 20, se=0.07, method="delta")
    assert Estimate.from_dict(json.loads(json.dumps(e.as_dict()))) == e


def test_a_dict_written_before_method_existed_still_loads():
    # bc of a mitigate fit as results.json held it before this change: "se", no "method"
    old = json.loads('{"value": 0.5332269956896188, "ci95": [0.4367059558593183, '
                     '0.6297480355199193], "se": 0.049246333009331046, "n": 120}')
    e = Estimate.from_dict(old)
    assert e.method is None and e.se == pytest.approx(0.049246333009331046)
    assert (e.value, e.ci95, e.n) == (0.5332269956896188,
                                      (0.4367059558593183, 0.6297480355199193), 120)
    assert e.as_dict() == old
    # a plain rate (no se, no method) and missing bounds
    assert Estimate.from_dict({"value": 0.5, "ci95": [0.2, 0.8], "n": 9}) == Estimate(
        0.5, (0.2, 0.8), 9)
    nan = Estimate.from_dict({"value": None, "ci95": [None, None], "n": 0})
    assert math.isnan(nan.value) and all(math.isnan(x) for x in nan.ci95)
    # phi of an old fit had no n: the caller supplies the enclosing one
    phi = {"value": 0.8, "se": 0.29, "ci95": [0.25, 1.38]}
    assert Estimate.from_dict(phi, n=120).n == 120
    with pytest.raises(ValueError, match="without n"):
        Estimate.from_dict(phi)
