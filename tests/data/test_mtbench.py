"""MT-Bench human pairs: count, labels, question matching and GPT-4 references."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from judgeaudit.data import load

pytestmark = pytest.mark.shared_data


def _shared() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def folder() -> Path:
    d = _shared() / "mt_bench"
    if not (d / "human_pairwise_subset_llmbar.json").exists():
        pytest.skip(f"shared data absent: {d} (set JUDGEAUDIT_SHARED_DATA)")
    return d


def _jsonl(p: Path) -> list[dict]:
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def test_pairs_labels_and_references(folder: Path) -> None:
    items = load(f"mtbench:{folder}")
    raw = json.loads((folder / "human_pairwise_subset_llmbar.json").read_text())
    assert len(items) == 200
    assert [i.id for i in items] == [f"mtbench:{k}" for k in range(200)]
    assert [i.label for i in items] == [r["label"] for r in raw]
    questions = {q["turns"][0]: q for q in _jsonl(folder / "question.jsonl")}
    refs = {r["question_id"]: r["choices"][0]["turns"][0]
            for r in _jsonl(folder / "reference_answer_gpt-4.jsonl")}
    with_ref = 0
    for it in items:
        q = questions[it.prompt]
        assert it.metadata["question_id"] == q["question_id"]
        assert it.metadata["category"] == q["category"]
        assert it.reference == refs.get(q["question_id"])
        with_ref += it.reference is not None
    assert with_ref == sum(1 for r in raw if questions[r["input"]]["question_id"] in refs) > 0


def test_llmbar_ids_line_up_with_the_llmbar_copy(folder: Path) -> None:
    items = load(f"mtbench:{folder / 'human_pairwise_subset_llmbar.json'}?ids=llmbar")
    assert items[5].id == "Processed/MT-Bench:5"
    llmbar = _shared() / "llmbar"
    if (llmbar / "data").is_dir():
        other = {i.id: i for i in load(f"llmbar:{llmbar}?subset=Processed/MT-Bench")}
        assert all(other[i.id].prompt == i.prompt and other[i.id].label == i.label
                   for i in items)


def test_pairs_file_alone_still_loads(folder: Path, tmp_path: Path) -> None:
    lone = tmp_path / "pairs.json"
    lone.write_text((folder / "human_pairwise_subset_llmbar.json").read_text())
    items = load(f"mtbench:{lone}")
    assert len(items) == 200 and all(i.reference is None for i in items)
