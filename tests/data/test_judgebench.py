"""JudgeBench loader on small files in the published format (no JudgeBench data here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.data import DataError, load


def _rec(pid: str, label: str, **kw: object) -> dict:
    return {"pair_id": pid, "original_id": 7, "source": "mmlu-pro-math",
            "question": f"Question {pid}?", "response_model": "gpt-4o-2024-05-13",
            "response_A": f"A of {pid}", "response_B": f"B of {pid}", "label": label, **kw}


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_labels_ids_and_fields(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "dataset=judgebench,response_model=gpt-4o.jsonl",
               [_rec("u1", "A>B"), _rec("u2", "B>A"), _rec("u3", "A=B"), _rec("u4", "A<B")])
    items = load(f"judgebench:{f}")
    assert [i.id for i in items] == ["judgebench:u1", "judgebench:u2", "judgebench:u3",
                                     "judgebench:u4"]
    assert [i.label for i in items] == [1, 2, 0, 2]
    it = items[1]
    assert (it.prompt, it.response_1, it.response_2) == ("Question u2?", "A of u2", "B of u2")
    assert it.better() == "B of u2"
    assert it.models == ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13")
    assert it.metadata["task_source"] == "mmlu-pro-math" and it.metadata["original_id"] == 7


def test_folder_and_json_list(tmp_path: Path) -> None:
    _jsonl(tmp_path / "a.jsonl", [_rec("a1", "A>B")])
    (tmp_path / "b.json").write_text(json.dumps([_rec("b1", "B>A"), _rec("b2", "A>B")]))
    (tmp_path / "notes.txt").write_text("ignored")
    items = load(f"judgebench:{tmp_path}")
    assert [i.id for i in items] == ["judgebench:a1", "judgebench:b1", "judgebench:b2"]


def test_errors_name_line_and_field(tmp_path: Path) -> None:
    f = _jsonl(tmp_path / "bad.jsonl", [_rec("x", "A>B"), _rec("y", "A>>B")])
    with pytest.raises(DataError) as e:
        load(f"judgebench:{f}")
    assert e.value.where == 2 and "field 'label'" in e.value.problem and "'A>>B'" in e.value.problem
    g = _jsonl(tmp_path / "bad2.jsonl", [{k: v for k, v in _rec("z", "A>B").items()
                                          if k != "response_B"}])
    with pytest.raises(DataError, match=r"bad2.jsonl:1: field 'response_B': missing"):
        load(f"judgebench:{g}")
    with pytest.raises(DataError, match="no .jsonl or .json files"):
        (tmp_path / "empty").mkdir()
        load(f"judgebench:{tmp_path / 'empty'}")
