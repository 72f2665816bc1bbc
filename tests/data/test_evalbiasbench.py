"""EvalBiasBench loader on the real file: 80 pairs, shuffled out of the correct-first order."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

import judgeaudit.data.loaders.evalbiasbench  # noqa: F401  (registers "evalbiasbench")
from judgeaudit.data import DataError, load

pytestmark = pytest.mark.shared_data


def _shared() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def folder() -> Path:
    d = _shared() / "offsetbias_evalbiasbench"
    if not (d / "biasbench.json").exists():
        pytest.skip(f"shared data absent: {d} (set JUDGEAUDIT_SHARED_DATA)")
    return d


def test_shuffled_and_unmapped(folder: Path) -> None:
    raw = json.loads((folder / "biasbench.json").read_text())
    flat = [r for group in raw.values() for r in group]
    items = load(f"evalbiasbench:{folder}")
    assert len(items) == len(flat) == 80
    share = sum(i.label == 1 for i in items) / len(items)
    assert 0.3 < share < 0.7
    for k, it in enumerate(items):
        assert it.id == f"evalbiasbench:{k}"
        assert it.metadata["bias"] == flat[k]["bias"]
        assert it.better() == flat[k]["response1"]  # the file's label is 1 for every pair
        first = it.response_2 if it.metadata["swapped"] else it.response_1
        assert first == flat[k]["response1"]
    assert Counter(i.metadata["bias"] for i in items) == Counter(r["bias"] for r in flat)


def test_seed_and_bias_filter(folder: Path) -> None:
    a = load(f"evalbiasbench:{folder / 'biasbench.json'}?seed=3")
    b = load(f"evalbiasbench:{folder}?seed=4")
    assert [i.label for i in a] != [i.label for i in b]
    length = load(f"evalbiasbench:{folder}?bias=length bias")
    assert len(length) == 17 and {i.metadata["bias"] for i in length} == {"length bias"}
    with pytest.raises(DataError, match="bias nope not found"):
        load(f"evalbiasbench:{folder}?bias=nope")
