"""LLMBar loader on the real files: counts, ids that match judge_verdicts.csv, subset
selection, and the path forms it accepts."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from judgeaudit.data import DataError, load

pytestmark = pytest.mark.shared_data


def _shared() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def root() -> Path:
    d = _shared() / "llmbar"
    if not (d / "data" / "LLMBar").is_dir():
        pytest.skip(f"shared data absent: {d} (set JUDGEAUDIT_SHARED_DATA)")
    return d


def test_counts(root: Path) -> None:
    assert len(load(f"llmbar:{root}?subset=LLMBar/Natural")) == 100
    adv = load(f"llmbar:{root}?subset=LLMBar/Adversarial")
    assert len(adv) == 319
    assert {i.metadata["subset"] for i in adv} == {
        "LLMBar/Adversarial/Neighbor", "LLMBar/Adversarial/GPTInst",
        "LLMBar/Adversarial/GPTOut", "LLMBar/Adversarial/Manual"}
    proper = load(f"llmbar:{root}")
    assert len(proper) == 419
    assert {i.id for i in proper} == {i.id for i in adv} | {
        i.id for i in load(f"llmbar:{root}?subset=LLMBar/Natural")}
    several = load(f"llmbar:{root}?subset=Processed/MT-Bench,CaseStudy/Normal")
    assert len(several) == 200 + 59


def test_item_fields_come_from_the_file(root: Path) -> None:
    raw = json.loads((root / "data/LLMBar/Natural/dataset.json").read_text())
    item = next(i for i in load(f"llmbar:{root}") if i.id == "LLMBar/Natural:17")
    assert (item.prompt, item.response_1, item.response_2, item.label) == (
        raw[17]["input"], raw[17]["output_1"], raw[17]["output_2"], raw[17]["label"])
    assert item.metadata == {"source": "llmbar", "subset": "LLMBar/Natural", "idx": 17}


def test_ids_and_labels_match_judge_verdicts_csv(root: Path) -> None:
    items = {i.id: i for i in load(f"llmbar:{root}?subset=all")}
    assert "LLMBar/Natural:17" in items
    seen: dict[str, str] = {}
    with (root / "judge_verdicts.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            seen.setdefault(f"{row['subset']}:{row['idx']}", row["label"])
    assert seen["LLMBar/Natural:17"] == str(items["LLMBar/Natural:17"].label)
    # every verdict row names an item we load, with the same gold label
    missing = [k for k in seen if k not in items]
    assert not missing, missing[:5]
    wrong = [k for k, lab in seen.items() if str(items[k].label) != lab]
    assert not wrong, wrong[:5]


def test_path_forms(root: Path) -> None:
    natural = root / "data" / "LLMBar" / "Natural"
    a = load(f"llmbar:{natural}")
    b = load(f"llmbar:{natural / 'dataset.json'}")
    c = load(f"llmbar:{root / 'data'}?subset=LLMBar/Natural")
    assert [i.id for i in a] == [i.id for i in b] == [i.id for i in c]
    assert a[0].id == "LLMBar/Natural:0"


def test_unknown_subset_and_missing_path(root: Path) -> None:
    with pytest.raises(DataError, match="subset LLMBar/Nope not found; available:"):
        load(f"llmbar:{root}?subset=LLMBar/Nope")
    # prefixes match whole path components, not partial names
    with pytest.raises(DataError, match="not found"):
        load(f"llmbar:{root}?subset=LLMBar/Nat")
    with pytest.raises(DataError, match="no such file"):
        load(f"llmbar:{root / 'absent'}")
