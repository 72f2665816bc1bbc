"""JSON given where JSON Lines is read: a pretty-printed array or objects written over several
lines said only "FILE:1: invalid JSON at column 2: Expecting value" (the hint that the file is
one JSON array came only for an array on one line). Also jsonl:'s empty ids and responses,
kept consistent with hf:."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.data import DataError, load
from judgeaudit.data.registry import load_noted

RECS = [{"id": f"q{k}", "prompt": f"Q{k}", "response_1": f"a{k}", "response_2": f"b{k}",
         "label": 1 + k % 2} for k in range(3)]


@pytest.mark.parametrize("name", ["array.jsonl", "array.json"])
@pytest.mark.parametrize("lead", ["", "\n  ", "\ufeff"])
def test_a_pretty_printed_array_is_said_to_be_json(tmp_path: Path, name: str,
                                                   lead: str) -> None:
    f = tmp_path / name
    f.write_text(lead + json.dumps(RECS, indent=2), encoding="utf-8")
    with pytest.raises(DataError) as e:
        load(f"jsonl:{f}")
    msg = str(e.value)
    assert "the file is JSON, not JSON Lines (one object per line): a JSON array over lines" \
        in msg
    if name.endswith(".json"):
        assert f"load it with hf:{f}" in msg
    else:
        assert "rename it to .json and load it with hf:FILE.json" in msg
    assert "Expecting value" not in msg


def test_hf_reads_the_same_array_from_a_json_file(tmp_path: Path) -> None:
    f = tmp_path / "array.json"
    f.write_text(json.dumps(RECS, indent=2))
    assert [(it.id, it.label) for it in load(f"hf:{f}")] == [("q0", 1), ("q1", 2), ("q2", 1)]
    g = tmp_path / "array.jsonl"
    g.write_text(json.dumps(RECS, indent=2))
    with pytest.raises(DataError, match=r"the file is JSON, not JSON Lines.*rename it to "
                                        r"\.json"):
        load(f"hf:{g}")


def test_objects_written_over_several_lines_are_said_to_be_json(tmp_path: Path) -> None:
    f = tmp_path / "pretty.jsonl"
    f.write_text("".join(json.dumps(r, indent=2) + "\n" for r in RECS))
    with pytest.raises(DataError, match=r"pretty.jsonl:1: the file is JSON, not JSON Lines "
                                        r"\(each object on one line\): an object written over "
                                        r"lines 1-7; write each object on one line"):
        load(f"jsonl:{f}")


def test_a_broken_array_names_where_it_breaks(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text('[\n{"id": "a",\n "x": }\n]\n')
    with pytest.raises(DataError, match=r"bad.jsonl:1: the file is JSON, not JSON Lines .*"
                                        r"a JSON array from line 1 \(invalid JSON on line 3 "
                                        r"at column 7: Expecting value\)"):
        load(f"jsonl:{f}")


def test_other_bad_lines_keep_their_json_error(tmp_path: Path) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text(json.dumps(RECS[0]) + "\n[1, \n")  # a later line opening an array: not JSON
    with pytest.raises(DataError, match=r"x.jsonl:2: invalid JSON at column"):
        load(f"jsonl:{f}")
    f.write_text(json.dumps(RECS[0]) + '\n{"id": }\n')
    with pytest.raises(DataError, match=r"x.jsonl:2: invalid JSON at column 8"):
        load(f"jsonl:{f}")


@pytest.mark.parametrize("ident", ["", "  "])
def test_an_empty_id_is_refused_as_in_hf(tmp_path: Path, ident: str) -> None:
    f = tmp_path / "x.jsonl"
    f.write_text("".join(json.dumps(r | ({"id": ident} if k == 1 else {})) + "\n"
                         for k, r in enumerate(RECS)))
    with pytest.raises(DataError, match=r"x.jsonl:2: field 'id': empty; ids must not be empty"):
        load(f"jsonl:{f}")


def test_an_empty_response_is_kept_and_counted(tmp_path: Path) -> None:
    """jsonl: takes "" as an empty answer (a missing one, absent or null, is refused), and
    says how many; hf: refuses it (there an empty CSV cell is a missing value)."""
    f = tmp_path / "x.jsonl"
    recs = [dict(r) for r in RECS]
    recs[1]["response_2"] = ""
    recs[2]["response_1"] = " "
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    items, notes = load_noted(f"jsonl:{f}")
    assert items[1].response_2 == "" and len(items) == 3
    assert notes == [f"jsonl {f}: 2 of 3 items have an empty response (first: line 2, "
                     "field 'response_2'); they are judged as empty answers"]
    recs[1]["response_2"] = "b"
    recs[2]["response_1"] = "a"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert load_noted(f"jsonl:{f}")[1] == []
