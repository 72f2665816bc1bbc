"""The hf loader on local files (jsonl, json, csv; parquet when pyarrow is present) with the
column mapping; the hub path needs `datasets` and the network and is not exercised."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

from judgeaudit.data import DataError, PairwiseItem, PointwiseItem, load
from judgeaudit.data.loaders.hf import as_text, parse_label


def test_default_columns_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "prefs.jsonl"
    rows = [{"question": "Q1", "response_a": "x", "response_b": "y", "winner": "model_b"},
            {"question": "Q2", "response_a": "x", "response_b": "y", "winner": "tie"},
            {"question": "Q3", "response_a": "x", "response_b": "y", "winner": "A"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items = load(f"hf:{f}")
    assert [i.label for i in items] == [2, 0, 1]
    assert [i.id for i in items] == ["hf:prefs:0", "hf:prefs:1", "hf:prefs:2"]
    assert items[0].prompt == "Q1" and items[0].response_2 == "y"


def test_explicit_mapping_csv(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    with f.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["uid", "ask", "left", "right", "pref"])
        w.writerow(["r1", "Q?", "L", "R", "2"])
        w.writerow(["r2", "Q2?", "L2", "R2", "1"])
    items = load(f"hf:{f}?prompt=ask&response_1=left&response_2=right&label=pref&id=uid")
    assert [(i.id, i.prompt, i.response_1, i.response_2, i.label) for i in items] == [
        ("r1", "Q?", "L", "R", 2), ("r2", "Q2?", "L2", "R2", 1)]


def test_chosen_rejected_is_shuffled_and_unmappable(tmp_path: Path) -> None:
    f = tmp_path / "dpo.json"
    rows = [{"prompt": f"P{k}", "chosen": [{"role": "user", "content": f"P{k}"},
                                           {"role": "assistant", "content": f"good{k}"}],
             "rejected": f"bad{k}"} for k in range(40)]
    f.write_text(json.dumps(rows))
    items = load(f"hf:{f}")
    assert all(isinstance(i, PairwiseItem) for i in items)
    assert sum(i.label == 1 for i in items) == 20  # exactly balanced
    for k, it in enumerate(items):
        assert it.better() == f"good{k}"  # chat format reduced to the assistant message
        first = it.response_2 if it.metadata["swapped"] else it.response_1
        assert first == f"good{k}"
    assert [i.label for i in load(f"hf:{f}?seed=1")] != [i.label for i in items]
    assert {i.label for i in load(f"hf:{f}?shuffle=0")} == {1}


def test_pointwise_columns(tmp_path: Path) -> None:
    f = tmp_path / "scores.jsonl"
    f.write_text(json.dumps({"id": "a", "instruction": "I", "output": "O", "rating": "4"}) + "\n")
    (it,) = load(f"hf:{f}")
    assert isinstance(it, PointwiseItem)
    assert (it.id, it.prompt, it.response, it.score) == ("a", "I", "O", 4.0)


def test_errors(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text(json.dumps({"prompt": "p", "response_1": "a", "response_2": "b",
                             "label": "maybe"}) + "\n")
    with pytest.raises(DataError, match=r"x.jsonl:1: field 'label' \(column 'label'\)"):
        load(f"hf:{f}")
    with pytest.raises(DataError, match="column 'nope' \\(for prompt\\) not found"):
        load(f"hf:{f}?prompt=nope")
    g = tmp_path / "y.jsonl"
    g.write_text(json.dumps({"text": "t"}) + "\n")
    with pytest.raises(DataError, match="no prompt column"):
        load(f"hf:{g}")
    with pytest.raises(DataError, match="no such file"):
        load(f"hf:{tmp_path / 'absent.jsonl'}")
    with pytest.raises(DataError, match="unknown parameter"):
        load(f"hf:{f}?promt=x")


@pytest.mark.skipif(importlib.util.find_spec("datasets") is not None,
                    reason="datasets is installed: the missing-package message cannot occur")
def test_hub_without_datasets_says_how_to_install() -> None:
    with pytest.raises(DataError, match="pip install datasets"):
        load("hf:some-org/some-dataset?split=test")


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow not installed")
def test_parquet(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = tmp_path / "t.parquet"
    pq.write_table(pa.table({"prompt": ["p"], "chosen": ["g"], "rejected": ["b"]}), f)
    (it,) = load(f"hf:{f}")
    assert it.better() == "g"


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is not None, reason="pyarrow installed")
def test_parquet_without_pyarrow(tmp_path: Path) -> None:
    f = tmp_path / "t.parquet"
    f.write_bytes(b"PAR1")
    with pytest.raises(DataError, match="pip install pyarrow"):
        load(f"hf:{f}")


def test_label_spellings() -> None:
    assert [parse_label(v) for v in (1, "2", 0, "A>B", "b", "model_a", "tie (bothbad)", None)
            ] == [1, 2, 0, 1, 2, 1, 0, None]
    with pytest.raises(ValueError):
        parse_label(True)
    assert as_text([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]) \
        == "a"


def test_json_with_splits(tmp_path: Path) -> None:
    f = tmp_path / "splits.json"
    row = {"prompt": "p", "response_1": "a", "response_2": "b", "label": 1}
    f.write_text(json.dumps({"train": [row, row], "test": [row]}))
    assert len(load(f"hf:{f}?split=test")) == 1
    assert len(load(f"hf:{f}")) == 2  # no split given: the first of data/rows/train/test
    with pytest.raises(DataError, match="no list under split 'dev'; keys: train, test"):
        load(f"hf:{f}?split=dev")


def test_csv_labels_written_as_floats_are_read():
    """pandas writes an integer column with a gap as 1.0/2.0; JSON's 1.0 was read, CSV's
    '1.0' refused."""
    assert [parse_label(v) for v in ("1.0", "2.0", "0.0", " 2.0 ")] == [1, 2, 0, 2]
    with pytest.raises(ValueError):
        parse_label("1.5")
