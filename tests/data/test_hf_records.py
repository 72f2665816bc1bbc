"""hf: on files whose records differ: the columns are those of any record (the first record
alone decided them, so one without a label dropped every label); ids are all or nothing (a
missing or empty id is refused, not silently generated); an empty response is refused; a
path-like NAME that does not exist is "no such file", not a hub dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.data import DataError, load
from judgeaudit.data.registry import load_noted


def _rows(n: int = 10) -> list[dict[str, object]]:
    return [{"id": f"q{k}", "prompt": f"Q{k}", "response_a": f"a{k}", "response_b": f"b{k}",
             "winner": "AB"[k % 2]} for k in range(n)]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_a_first_record_without_a_label_keeps_the_other_labels(tmp_path: Path,
                                                                fmt: str) -> None:
    rows = _rows()
    del rows[0]["winner"]
    f = tmp_path / f"firstnolabel.{fmt}"
    if fmt == "json":
        f.write_text(json.dumps(rows, indent=1))
    else:
        _jsonl(f, rows)
    items = load(f"hf:{f}")
    assert [it.label for it in items] == [None] + [2, 1] * 4 + [2]
    assert [it.label for it in load(f"hf:{f}?label=winner")] == [it.label for it in items]


def test_columns_are_listed_from_every_record(tmp_path: Path) -> None:
    rows = _rows(3)
    del rows[0]["winner"]
    f = _jsonl(tmp_path / "x.jsonl", rows)
    with pytest.raises(DataError, match=r"column 'verdict' \(for label\) not found; columns: "
                                        r"id, prompt, response_a, response_b, winner$"):
        load(f"hf:{f}?label=verdict")


def test_a_record_without_a_needed_text_column_is_refused_at_its_line(tmp_path: Path) -> None:
    rows = _rows(3)
    del rows[1]["response_b"]
    f = _jsonl(tmp_path / "x.jsonl", rows)
    with pytest.raises(DataError, match=r"x.jsonl:2: field 'response_2' \(column 'response_b'"
                                        r"\): missing \(required\)"):
        load(f"hf:{f}")


def test_a_first_record_without_an_id_is_refused_not_renaming_all(tmp_path: Path) -> None:
    rows = _rows()
    del rows[0]["id"]
    f = _jsonl(tmp_path / "firstnoid.jsonl", rows)
    with pytest.raises(DataError, match=r"firstnoid.jsonl:1: field 'id' \(the id\): missing "
                                        r"\(9 of 10 rows have an id, 1 not\).*\?ids=auto"):
        load(f"hf:{f}")
    items = load(f"hf:{f}?ids=auto")
    assert [it.id for it in items] == ["hf:firstnoid:0"] + [f"q{k}" for k in range(1, 10)]


def test_a_null_id_in_a_later_record_is_refused(tmp_path: Path) -> None:
    rows = _rows(4)
    rows[2]["id"] = None
    f = _jsonl(tmp_path / "x.jsonl", rows)
    with pytest.raises(DataError, match=r"x.jsonl:3: field 'id' \(the id\): null"):
        load(f"hf:{f}")


def test_a_blank_id_cell_is_refused_naming_file_line_and_field(tmp_path: Path) -> None:
    f = _csv(tmp_path / "blankid.csv", "id,prompt,response_a,response_b,winner\n"
             "q1,P1,Paris,Lyon,A\n,P2,Lyon,Paris,B\nq3,P3,Paris,Lyon,A\n")
    with pytest.raises(DataError, match=r"blankid.csv:3: field 'id' \(the id\): empty; ids "
                                        r"must not be empty"):
        load(f"hf:{f}")
    assert [it.id for it in load(f"hf:{f}?ids=auto")] == ["q1", "hf:blankid:1", "q3"]


def test_no_ids_at_all_are_generated_and_an_all_empty_column_is_said(tmp_path: Path) -> None:
    f = _csv(tmp_path / "noid.csv", "prompt,response_a,response_b,winner\nP1,x,y,A\nP2,x,y,B\n")
    items, notes = load_noted(f"hf:{f}")
    assert [it.id for it in items] == ["hf:noid:0", "hf:noid:1"] and notes == []
    g = _csv(tmp_path / "emptyid.csv", "id,prompt,response_a,response_b,winner\n"
             ",P1,x,y,A\n,P2,x,y,B\n")
    items, notes = load_noted(f"hf:{g}")
    assert [it.id for it in items] == ["hf:emptyid:0", "hf:emptyid:1"]
    assert len(notes) == 1 and "column 'id' (the id) is empty in every row" in notes[0]


@pytest.mark.parametrize("cell", ["", "  "])
def test_an_empty_response_cell_is_refused(tmp_path: Path, cell: str) -> None:
    f = _csv(tmp_path / "missing_resp.csv", "id,prompt,response_a,response_b,winner\n"
             f"q0,Q0,Paris,Lyon,A\nq1,Q1,{cell},Paris,B\n")
    with pytest.raises(DataError, match=r"missing_resp.csv:3: field 'response_1' \(column "
                                        r"'response_a'\): empty; a response must not be empty"):
        load(f"hf:{f}")


def test_an_empty_chosen_in_json_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "dpo.json"
    f.write_text(json.dumps([{"prompt": "p", "chosen": "g", "rejected": "b"},
                             {"prompt": "p2", "chosen": "", "rejected": "b"}]))
    with pytest.raises(DataError, match=r"field 'chosen': empty"):
        load(f"hf:{f}")


@pytest.mark.parametrize("name", ["./nope", "../nope", "nope.txt", "org/nope.csv", "a/b/c",
                                  "sub\\nope", "~/surely-absent-h13.jsonl.gz"])
def test_an_absent_path_is_no_such_file_not_a_hub_dataset(name: str) -> None:
    with pytest.raises(DataError, match="no such file") as e:
        load(f"hf:{name}")
    assert "datasets" not in str(e.value)
    if not name.startswith("~"):
        assert str(e.value).startswith(f"{name}: no such file")
