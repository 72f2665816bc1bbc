"""SummEval loader on a small file written here in the released (paired JSONL) shape: gold
scores are the expert or crowd means for the chosen aspect; bad records are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.data import DataError, PointwiseItem, load


def _rec(i: int, model: str, expert: list[dict], crowd: list[dict], **kw) -> dict:
    rec = {"id": f"dm-test-{i:04x}", "model_id": model, "decoded": f"summary {i} by {model}",
           "text": f"Article {i}: a long news story.", "references": [f" ref summary {i} "],
           "filepath": f"cnndm/dailymail/stories/{i:04x}.story",
           "expert_annotations": expert, "turker_annotations": crowd}
    rec.update(kw)
    return rec


def _ann(c: int, s: int, f: int, r: int) -> dict:
    return {"coherence": c, "consistency": s, "fluency": f, "relevance": r}


EXPERT = [_ann(2, 5, 4, 3), _ann(3, 5, 5, 3), _ann(1, 4, 5, 4)]
CROWD = [_ann(4, 4, 4, 4), _ann(5, 3, 4, 4), _ann(3, 4, 3, 5), _ann(4, 4, 4, 4), _ann(4, 5, 5, 3)]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "model_annotations.aligned.paired.jsonl"
    rows = [_rec(1, "M11", EXPERT, CROWD), _rec(1, "M8", CROWD[:3], EXPERT),
            _rec(2, "M11", [_ann(5, 5, 5, 5)] * 3, [_ann(1, 1, 1, 1)] * 5)]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    return p


def test_expert_means_per_aspect(path: Path) -> None:
    items = load(f"summeval:{path}")
    assert [it.id for it in items] == ["summeval:dm-test-0001:M11", "summeval:dm-test-0001:M8",
                                       "summeval:dm-test-0002:M11"]
    it = items[0]
    assert isinstance(it, PointwiseItem)
    assert it.score == pytest.approx(2.0)  # (2 + 3 + 1) / 3 experts, coherence
    assert it.response == "summary 1 by M11" and "Article 1" in it.prompt
    assert it.reference == "ref summary 1" and it.rubric.startswith("Coherence")
    assert sorted(it.rubric_levels) == ["1", "2", "3", "4", "5"]
    assert it.metadata["crowd_mean"]["coherence"] == pytest.approx(4.0)
    assert it.metadata["expert_scores"]["fluency"] == [4.0, 5.0, 5.0]
    rel = load(f"summeval:{path}?aspect=relevance")[0]
    assert rel.score == pytest.approx(10 / 3) and rel.rubric.startswith("Relevance")


def test_crowd_gold_and_folder(path: Path) -> None:
    crowd = load(f"summeval:{path}?scores=crowd&aspect=consistency")
    assert crowd[0].score == pytest.approx(4.0) and crowd[2].score == 1.0
    assert len(load(f"summeval:{path.parent}?limit=2")) == 2


@pytest.mark.parametrize("mutate,msg", [
    (lambda r: r.pop("text"), "paired release"),
    (lambda r: r["expert_annotations"][1].update(coherence=7), r"expert_annotations\[1\]"),
    (lambda r: r.update(turker_annotations=[]), "turker_annotations"),
    (lambda r: r.update(decoded=None), "'decoded'"),
    (lambda r: r.update(references="x"), "references"),
])
def test_bad_records_are_named(tmp_path: Path, mutate, msg: str) -> None:
    good = _rec(1, "M1", EXPERT, CROWD)
    bad = _rec(2, "M1", [dict(a) for a in EXPERT], CROWD)
    mutate(bad)
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError, match=rf"s.jsonl:2: .*{msg}"):
        load(f"summeval:{p}")


def test_bad_params(path: Path) -> None:
    with pytest.raises(DataError, match="aspect"):
        load(f"summeval:{path}?aspect=style")
    with pytest.raises(DataError, match="unknown parameter"):
        load(f"summeval:{path}?score=expert")
