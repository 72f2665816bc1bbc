"""`commands.load_data` given a list refuses a gold score or quality that is no finite number,
naming the record by index, as `judgeaudit.evaluate(data=[...])` and the file loaders do: it
took dicts and items with NaN or inf (only the API's own check caught them, and that one not
the text "nan", which pydantic reads as NaN), to fail after the judging with "correlation: x
and y must be finite", no item named."""

from __future__ import annotations

import math

import pytest

import judgeaudit
from judgeaudit.commands import load_data
from judgeaudit.data.schema import PairwiseItem, PointwiseItem


def _points(n: int = 6) -> list[dict]:
    return [{"id": f"p{i}", "prompt": "q", "response": f"answer {i}", "score": 3.0}
            for i in range(n)]


def _pairs(n: int = 4) -> list[dict]:
    return [{"id": f"a{i}", "prompt": "q", "response_1": "x", "response_2": "y", "label": 1,
             "quality": [1.0, 0.0]} for i in range(n)]


@pytest.mark.parametrize("field, value, shown", [
    ("score", math.nan, "nan"), ("score", math.inf, "inf"), ("score", -math.inf, "-inf"),
    ("score", "nan", "nan"), ("score", "Infinity", "inf"), ("quality", math.nan, "nan"),
    ("quality", "-inf", "-inf"),
])
def test_a_pointwise_dict_with_a_nonfinite_number_is_refused_by_index(field, value, shown):
    data = _points()
    data[2][field] = value
    with pytest.raises(ValueError, match=f"^data\\[2\\]: field {field!r}: expected a finite "
                                         f"number, got {shown}$"):
        load_data(data)


def test_a_pairwise_quality_and_items_given_as_items_are_refused_too():
    data = _pairs()
    data[3]["quality"] = [1.0, math.nan]
    with pytest.raises(ValueError, match=r"^data\[3\]: field 'quality': expected a finite "
                                         r"number, got nan$"):
        load_data(data)
    items = [PairwiseItem(**p) for p in _pairs()]
    items[1] = PairwiseItem(**{**_pairs()[1], "quality": [math.inf, 0.0]})
    with pytest.raises(ValueError, match=r"^data\[1\]: field 'quality': .* got inf$"):
        load_data(items)
    points = [PointwiseItem(**p) for p in _points()]
    points[0] = PointwiseItem(**{**_points()[0], "score": math.nan})
    with pytest.raises(ValueError, match=r"^data\[0\]: field 'score': .* got nan$"):
        load_data(points)


def test_the_first_bad_record_is_named_and_finite_data_loads():
    data = _points()
    data[1]["score"] = math.nan
    del data[4]["response"]  # a later record's own problem is not the one named
    with pytest.raises(ValueError, match=r"^data\[1\]: field 'score'"):
        load_data(data)
    items, spec = load_data(_points())
    assert spec == "memory:6 items" and [it.score for it in items] == [3.0] * 6


def test_the_api_refuses_the_text_nan_before_any_call(isolated_cache):
    """The API's own check looked at floats only: {"score": "nan"} went through it to be
    judged, and the run failed in the statistics."""
    data = _points(8)
    data[5]["score"] = "nan"
    heard: list[object] = []
    with pytest.raises(ValueError, match=r"^data\[5\]: field 'score': expected a finite "
                                         r"number, got nan$"):
        judgeaudit.evaluate("sim?position=1&seed=0", data, progress=heard.append, cache=False)
    assert heard == []
