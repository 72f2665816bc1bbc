"""PandaLM loader on the real file: the majority rule, ties, models and prompt assembly,
checked against counts computed here from the raw JSON."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from judgeaudit.data import PairwiseItem, load
from judgeaudit.data.loaders import pandalm

pytestmark = pytest.mark.shared_data


def _shared() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def folder() -> Path:
    d = _shared() / "pandalm_testset"
    if not (d / "testset-v1.json").exists():
        pytest.skip(f"shared data absent: {d} (set JUDGEAUDIT_SHARED_DATA)")
    return d


@pytest.fixture(scope="module")
def raw(folder: Path) -> list[dict]:
    return json.loads((folder / "testset-v1.json").read_text())


def _expected_majority(r: dict) -> int | None:
    votes = [int(r["annotator1"]), int(r["annotator2"]), int(r["annotator3"])]
    for lab in (0, 1, 2):
        if votes.count(lab) >= 2:
            return lab
    return None


def test_majority_filtering_matches_raw_count(folder: Path, raw: list[dict]) -> None:
    expected = {r["idx"]: _expected_majority(r) for r in raw}
    survivors = {k: v for k, v in expected.items() if v is not None}
    items = load(f"pandalm:{folder}")
    assert len(items) == len(survivors)  # 999 on the shipped file: no 1/2/0 three-way splits
    assert pandalm.LAST_LOAD["kept"] == len(survivors)
    assert pandalm.LAST_LOAD["no_majority"] == len(raw) - len(survivors)
    assert {i.id: i.label for i in items} == {f"pandalm:{k}": v for k, v in survivors.items()}
    # the published majority split (PROVENANCE: 2 -> 472, 1 -> 422, tie -> 105)
    assert Counter(i.label for i in items) == Counter(survivors.values())


def test_ties_drop(folder: Path, raw: list[dict]) -> None:
    n_ties = sum(1 for r in raw if _expected_majority(r) == 0)
    kept = load(f"pandalm:{folder / 'testset-v1.json'}?ties=drop")
    assert len(kept) == sum(1 for r in raw if _expected_majority(r) in (1, 2))
    assert pandalm.LAST_LOAD["ties_dropped"] == n_ties
    assert all(i.label in (1, 2) for i in kept)


def test_fields(folder: Path, raw: list[dict]) -> None:
    items = {i.id: i for i in load(f"pandalm:{folder}")}
    r0 = raw[0]
    it = items["pandalm:0"]
    assert isinstance(it, PairwiseItem)
    assert it.models == tuple(r0["cmp_key"].split("_"))
    assert it.annotator_labels == (r0["annotator1"], r0["annotator2"], r0["annotator3"])
    with_input = next(r for r in raw if r["input"].strip())
    without = next(r for r in raw if not r["input"].strip())
    assert items[f"pandalm:{with_input['idx']}"].prompt == (
        with_input["instruction"] + "\n\n" + with_input["input"])
    assert items[f"pandalm:{without['idx']}"].prompt == without["instruction"]
    # responses the file stores as JSON true are read as the text "True"
    booleans = [r["idx"] for r in raw if r["response1"] is True]
    assert booleans and all(items[f"pandalm:{k}"].response_1 == "True" for k in booleans)


def test_majority_rule_unit() -> None:
    assert pandalm.majority((1, 1, 2)) == 1
    assert pandalm.majority((0, 0, 2)) == 0
    assert pandalm.majority((0, 1, 2)) is None
    assert pandalm.majority((1, 2)) is None  # a 1-1 split of two annotators


def test_pairs_the_loader_leaves_out_reach_the_results(raw, tmp_path, isolated_cache):
    """A pair without a 2-of-3 majority was dropped with a debug log only: evaluate said
    "9 of 9" for a file of 10. Now it is a warning in the terminal and in results.json."""
    from typer.testing import CliRunner

    from judgeaudit.cli.main import app

    rows = [dict(r) for r in raw[:10]]
    rows[3].update(annotator1=1, annotator2=2, annotator3=0)
    (tmp_path / "testset-v1.json").write_text(json.dumps(rows), "utf-8")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["evaluate", "--judge", "sim", "--data",
                                   f"pandalm:{tmp_path}", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "results.json").read_text("utf-8"))
    assert doc["n"] == 9
    said = "9 of 10 pairs kept (1 without a 2-of-3 majority of the annotators"
    named = f"left out: pandalm:{rows[3]['idx']})"
    assert any(said in w for w in doc["warnings"]), doc["warnings"]
    assert said in " ".join(res.output.split())
    assert any(named in w for w in doc["warnings"]), doc["warnings"]  # which pair, by id
