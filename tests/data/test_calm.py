"""CALM loader on the real files: the better-first order is shuffled (seeded, balanced) and
un-mapping the shuffle gives back the better answer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import judgeaudit.data.loaders.calm  # noqa: F401  (registers kind "calm")
from judgeaudit.data import DataError, PairwiseItem, load

pytestmark = pytest.mark.shared_data


def _shared() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def root() -> Path:
    d = _shared() / "calm"
    if not (d / "base_datasets").is_dir():
        pytest.skip(f"shared data absent: {d} (set JUDGEAUDIT_SHARED_DATA)")
    return d


def _source(root: Path, item: PairwiseItem) -> dict:
    stem = item.metadata["file"]
    path = next(root.rglob(f"{stem}.json"))
    return json.loads(path.read_text())[item.metadata["index"]]


def test_base_sets_shuffled_and_unmapped(root: Path) -> None:
    items = load(f"calm:{root}")
    assert len(items) == 439 + 500 + 150
    labelled = [i for i in items if i.label is not None]
    share = sum(i.label == 1 for i in labelled) / len(labelled)
    assert 0.3 < share < 0.7
    for it in labelled[::7]:
        src = _source(root, it)
        # after un-mapping, the originally-first answer is the one the label names
        assert it.better() == src["answer1"]
        first = it.response_2 if it.metadata["swapped"] else it.response_1
        assert first == src["answer1"]
        assert it.id == f"calm:{it.metadata['file']}:{it.metadata['index']}"
    # refinement pairs: original vs polished, no gold order
    refine = [i for i in items if i.metadata["file"] == "refinement_aware_dataset"]
    assert len(refine) == 150 and all(i.label is None for i in refine)


def test_seed_changes_order_and_is_deterministic(root: Path) -> None:
    spec = f"calm:{root / 'base_datasets' / 'fact_related_dataset.json'}"
    a, b = load(spec), load(spec + "?seed=0")
    c = load(spec + "?seed=1")
    assert [i.label for i in a] == [i.label for i in b]
    assert [i.label for i in a] != [i.label for i in c]
    assert sum(i.label == 1 for i in a) == 250  # exactly balanced in a 500-pair file


def test_variants_keep_the_base_order(root: Path) -> None:
    base = {i.id: i for i in load(f"calm:{root}?set=verbosity")}
    longer = load(f"calm:{root}?set=verbosity&variant=answer2_longer")
    assert len(longer) == 500
    for it in longer[::25]:
        src = _source(root, it)
        b = base[it.metadata["base_id"]]
        assert it.metadata["swapped"] == b.metadata["swapped"] and it.label == b.label
        assert it.better() == src["answer1"]
        worse = it.response_2 if it.label == 1 else it.response_1
        assert worse == src["answer2_longer"]
    fallacy = load(f"calm:{root}?set=fallacy&variant=answer1_fallacy_oversight")
    for it in fallacy[::50]:
        src = _source(root, it)
        assert it.better() == src["answer2"]  # answer1 now argues by fallacy


def test_variant_missing_in_some_pairs_and_bad_params(root: Path) -> None:
    quote = load(f"calm:{root}?set=authority&variant=answer2_with_reference_quote")
    raw = json.loads((root / "bias_datasets/authority_bias_standardized.json").read_text())
    assert len(quote) == sum(1 for r in raw if "answer2_with_reference_quote" in r)
    with pytest.raises(DataError, match="set nope not found"):
        load(f"calm:{root}?set=nope")
    with pytest.raises(DataError, match="parameter 'variant'"):
        load(f"calm:{root}?variant=longer")
    with pytest.raises(DataError, match="no pairs have the field"):
        load(f"calm:{root}?set=verbosity&variant=answer1_cheerful")
