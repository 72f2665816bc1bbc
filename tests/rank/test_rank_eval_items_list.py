"""`judgeaudit.rank_eval` takes the pool in every form `rank` takes it: a list of item dicts
too (it raised `items: expected a string`), with the same results as the same records in a
JSON Lines file and the same messages for a bad record."""

from __future__ import annotations

import json

import pytest

import judgeaudit

ORACLE = "sim?quality=1&length=0.5&seed=2"


def _records(n: int) -> list[dict]:
    return [{"id": f"it-{i:02d}", "prompt": "question", "quality": float(i),
             "response": "word " * (3 + i % 4) + f"answer {i}"} for i in range(n)]


def _eval(items):
    return judgeaudit.rank_eval(ORACLE, items, k=2, budgets=[6, 12], rules="random,topk",
                                seeds=2, samples=100, lam=1.0, cache=False)


def test_rank_eval_takes_a_list_of_item_dicts_as_rank_does(tmp_path):
    recs = _records(6)
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    listed, filed = _eval(recs), _eval(f"jsonl:{path}")
    assert listed["items"] == "a list of 6 items" and listed.summary()["ok"] is True
    assert json.loads(json.dumps(listed.to_dict()))["items"] == "a list of 6 items"
    # one fixed pool for every seed (not a pool per seed, as builtin:controlled without
    # seed= gets): the same numbers as the file holding the same records
    assert listed["recall"] == filed["recall"]
    assert listed.summary()["recall"] == filed.summary()["recall"]
    assert listed["calls"]["made"] == 30  # the matrix: every ordered pair of 6 items, once


def test_a_bad_record_or_type_is_named_as_rank_names_it():
    recs = _records(6)
    with pytest.raises(ValueError, match=r"items\[1\]: field 'response': missing"):
        _eval([recs[0], {"id": "z", "prompt": "question"}, *recs[2:]])
    with pytest.raises(ValueError, match="expected a pool SPEC or a list of item dicts"):
        _eval({"id": "z"})
    no_quality = [{k: v for k, v in r.items() if k != "quality"} for r in recs]
    with pytest.raises(ValueError, match="quality"):
        _eval(no_quality)


def test_a_list_of_items_names_records_not_lines():
    """A duplicate id in a list of items said "already used on line 0", and a trusted pair
    naming no item "not an item id of the pool a list of 3 items"."""
    recs = [{"id": "a", "prompt": "q", "response": "x"}, {"id": "b", "prompt": "q",
            "response": "y"}, {"id": "a", "prompt": "q", "response": "z"}]
    with pytest.raises(ValueError) as err:
        judgeaudit.rank("sim", recs, k=1, budget=2, cache=False)
    assert "items[2]: field 'id': 'a' already used at items[0]" in str(err.value)
    with pytest.raises(ValueError) as err:
        judgeaudit.rank("sim", recs[:2], k=1, budget=2, cache=False, trusted=[("a", "zz")])
    assert "not an item id of the pool (a list of 2 items)" in str(err.value)
