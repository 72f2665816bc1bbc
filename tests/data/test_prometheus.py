"""Prometheus-eval loader on the real files: the grading prompt is parsed back into its
parts, scores are the GPT-4 scores, HHH pairs are shuffled."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import judgeaudit.data.loaders.prometheus  # noqa: F401  (registers "prometheus")
from judgeaudit.data import DataError, PairwiseItem, PointwiseItem, load
from judgeaudit.data.loaders.prometheus import parse_rubric

pytestmark = pytest.mark.shared_data


def _shared() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(scope="module")
def folder() -> Path:
    d = _shared() / "prometheus_eval"
    if not (d / "mt_bench_eval.json").exists():
        pytest.skip(f"shared data absent: {d} (set JUDGEAUDIT_SHARED_DATA)")
    return d


@pytest.mark.parametrize("set_name,file", [("mt_bench", "mt_bench_eval.json"),
                                           ("vicuna", "vicuna_eval.json")])
def test_scored_sets(folder: Path, set_name: str, file: str) -> None:
    raw = json.loads((folder / file).read_text())
    items = load(f"prometheus:{folder}?set={set_name}")
    assert len(items) == len(raw) == 320
    for it, r in zip(items, raw, strict=True):
        assert isinstance(it, PointwiseItem)
        assert it.score == pytest.approx(sum(r["gpt4_score"]) / len(r["gpt4_score"]))
        text = r["instruction"]
        # every part is a verbatim piece of the grading prompt, in prompt order
        parts = [it.prompt, it.response, it.reference or "", it.rubric or ""]
        assert all(p in text for p in parts)
        assert text.index(it.prompt) < text.index(it.response) < text.index(it.rubric or "")
        assert sorted(it.rubric_levels or {}) == ["1", "2", "3", "4", "5"]
        assert f"Score 5: {(it.rubric_levels or {})['5']}" in text
        assert "###" not in it.response and it.reference


def test_file_path_picks_the_set(folder: Path) -> None:
    items = load(f"prometheus:{folder / 'vicuna_eval.json'}")
    assert items[0].id.startswith("prometheus:vicuna:")


def test_hhh_pairs_shuffled(folder: Path) -> None:
    raw = json.loads((folder / "hhh_alignment_eval.json").read_text())
    items = load(f"prometheus:{folder}?set=hhh")
    assert len(items) == len(raw) == 221
    assert all(isinstance(i, PairwiseItem) for i in items)
    share = sum(i.label == 1 for i in items) / len(items)
    assert 0.3 < share < 0.7
    for it, r in zip(items, raw, strict=True):
        chosen = r["chosen_instruction"]
        assert it.better() is not None and it.better() in chosen
        worse = it.response_2 if it.label == 1 else it.response_1
        assert worse in r["rejected_instruction"]
        assert it.metadata["category"] == r["source"]


def test_biggen_has_rubrics_but_no_scores(folder: Path) -> None:
    items = load(f"prometheus:{folder}?set=biggen")
    assert len(items) == 765
    assert all(i.score is None and i.rubric and i.metadata["placeholder_response"]
               for i in items)


def test_rubric_parse_errors() -> None:
    crit, levels = parse_rubric("[Is it good?]\nScore 1: no\nScore 2: b\nScore 3: c\n"
                                "Score 4: d\nScore 5: yes\n", "f", 1)
    assert crit == "Is it good?" and levels["5"] == "yes"
    with pytest.raises(DataError, match="expected 'Score 1:' .. 'Score 5:'"):
        parse_rubric("[x]\nScore 1: a\n", "f", 1)


def test_unknown_set(folder: Path) -> None:
    with pytest.raises(DataError, match="parameter 'set'"):
        load(f"prometheus:{folder}?set=flask")
