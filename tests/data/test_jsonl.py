"""Our JSONL format: both item kinds, ids, and errors that name file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.data import DataError, PairwiseItem, PointwiseItem, load


def _write(path: Path, rows: list[object | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


PAIR = {"id": "p1", "prompt": "Q?", "response_1": "a", "response_2": "b", "label": 1}
POINT = {"id": "s1", "prompt": "Q?", "response": "a", "score": 4, "rubric": "r",
         "rubric_levels": {"1": "bad", "5": "good"}}


def test_pairwise_file_round_trips_every_field(tmp_path: Path) -> None:
    full = {**PAIR, "id": "p2", "label": 0, "annotator_labels": [1, 0, 0],
            "quality": [0.5, 0.5], "models": ["m1", "m2"], "reference": "ref",
            "metadata": {"k": 1}}
    f = _write(tmp_path / "pairs.jsonl", [PAIR, "", "   ", full, {**PAIR, "id": "p3",
                                                                  "label": "2"}])
    items = load(f"jsonl:{f}")
    assert [i.id for i in items] == ["p1", "p2", "p3"]
    assert all(isinstance(i, PairwiseItem) for i in items)
    assert items[1] == PairwiseItem(**{**full, "annotator_labels": (1, 0, 0),
                                       "quality": (0.5, 0.5), "models": ("m1", "m2")})
    assert items[2].label == 2  # "2" as text is accepted


def test_pointwise_file(tmp_path: Path) -> None:
    f = _write(tmp_path / "points.jsonl", [POINT, {"id": "s2", "prompt": "P", "response": "r"}])
    items = load(f"jsonl:{f}")
    assert all(isinstance(i, PointwiseItem) for i in items)
    assert items[0].score == 4.0 and items[0].rubric_levels == {"1": "bad", "5": "good"}
    assert items[1].score is None


def test_ids_required_unless_auto(tmp_path: Path) -> None:
    rows = [PAIR, {k: v for k, v in PAIR.items() if k != "id"}]
    f = _write(tmp_path / "mine.jsonl", rows)
    with pytest.raises(DataError) as e:
        load(f"jsonl:{f}")
    assert e.value.where == 2 and "'id'" in str(e.value) and "ids=auto" in str(e.value)
    items = load(f"jsonl:{f}?ids=auto")
    assert [i.id for i in items] == ["p1", "mine:2"]


def _err(tmp_path: Path, rows: list[object | str], name: str = "bad.jsonl") -> DataError:
    f = _write(tmp_path / name, rows)
    with pytest.raises(DataError) as e:
        load(f"jsonl:{f}")
    assert e.value.source == str(f)
    assert str(f) in str(e.value)
    return e.value


def test_bad_json_names_line_and_column(tmp_path: Path) -> None:
    bad = '{"id": "x", "prompt": }'
    err = _err(tmp_path, [PAIR, bad])
    assert err.where == 2
    assert f"invalid JSON at column {bad.index('}') + 1}" in err.problem  # 1-based column


def test_wrong_label_names_line_field_and_value(tmp_path: Path) -> None:
    err = _err(tmp_path, [PAIR, PAIR | {"id": "p2"}, PAIR | {"id": "p3", "label": 3}])
    assert err.where == 3
    assert err.problem == "field 'label': expected 1, 2 or 0, got 3"


def test_boolean_label_is_refused(tmp_path: Path) -> None:
    err = _err(tmp_path, [PAIR | {"label": True}])
    assert err.where == 1 and err.problem == "field 'label': expected 1, 2 or 0, got true"


def test_bad_annotator_label_names_its_position(tmp_path: Path) -> None:
    err = _err(tmp_path, [PAIR | {"annotator_labels": [1, 2, 7]}])
    assert "field 'annotator_labels.2': expected 1, 2 or 0, got 7" in err.problem


def test_missing_field(tmp_path: Path) -> None:
    row = {k: v for k, v in PAIR.items() if k != "prompt"}
    err = _err(tmp_path, [PAIR, row])
    assert err.where == 2 and err.problem == "field 'prompt': missing (required)"


def test_unknown_field_and_wrong_type(tmp_path: Path) -> None:
    err = _err(tmp_path, [PAIR | {"labl": 1}])
    assert "field 'labl': unknown field" in err.problem
    err = _err(tmp_path, [POINT | {"score": "high"}], "b2.jsonl")
    assert err.where == 1 and "field 'score'" in err.problem and "'high'" in err.problem


def test_mixed_kinds_refused(tmp_path: Path) -> None:
    err = _err(tmp_path, [PAIR, "", POINT])
    assert err.where == 3
    assert "pointwise item in a file of pairwise items" in err.problem and "line 1" in err.problem


def test_unknown_kind_and_non_object(tmp_path: Path) -> None:
    err = _err(tmp_path, [{"id": "x", "prompt": "p"}])
    assert err.where == 1 and "cannot tell the item kind" in err.problem
    err = _err(tmp_path, ["[1, 2]"], "b3.jsonl")
    assert err.where == 1 and "expected a JSON object, got list" in err.problem


def test_missing_file_and_bad_param(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        load(f"jsonl:{tmp_path / 'nope.jsonl'}")
    f = _write(tmp_path / "ok.jsonl", [PAIR])
    with pytest.raises(DataError, match="unknown parameter"):
        load(f"jsonl:{f}?idz=auto")


def test_duplicate_ids_caught_by_load(tmp_path: Path) -> None:
    f = _write(tmp_path / "dup.jsonl", [PAIR, PAIR])
    with pytest.raises(DataError, match="duplicate item id 'p1'"):
        load(f"jsonl:{f}")


def test_integer_ids_are_read_as_their_decimal_text(tmp_path: Path) -> None:
    """{"id": 1} was refused ("input should be a valid string, got 1") while labels "1" and 1
    were accepted."""
    f = _write(tmp_path / "pairs.jsonl", [{**PAIR, "id": 1}, {**PAIR, "id": -20}])
    assert [i.id for i in load(f"jsonl:{f}")] == ["1", "-20"]
    f = _write(tmp_path / "points.jsonl", [{**POINT, "id": 7}])
    assert [i.id for i in load(f"jsonl:{f}")] == ["7"]


@pytest.mark.parametrize("bad, got", [(1.0, "1.0"), (True, "True"), (None, "None")])
def test_other_non_text_ids_are_still_refused(tmp_path: Path, bad: object, got: str) -> None:
    f = _write(tmp_path / "pairs.jsonl", [{**PAIR, "id": bad}])
    with pytest.raises(DataError, match=f"pairs.jsonl:1: field 'id': input should be a valid "
                                        f"string, got {got}$"):
        load(f"jsonl:{f}")


def test_an_integer_id_and_its_text_are_one_id_and_the_duplicate_says_so(
        tmp_path: Path) -> None:
    f = _write(tmp_path / "pairs.jsonl", [{**PAIR, "id": 1}, {**PAIR, "id": "1"}])
    with pytest.raises(DataError, match="pairs.jsonl:2: field 'id': duplicate item id '1' "
                       r"\(first at line 1\); ids must be unique \(an integer id is read as "
                       "its decimal text: 1 and \"1\" are the same id\\)"):
        load(f"jsonl:{f}")


def test_make_item_takes_an_integer_id_as_its_text() -> None:
    from judgeaudit.data.loaders._common import make_item

    item = make_item(PointwiseItem, "src", 3, id=12, prompt="q", response="r")
    assert item.id == "12"


def test_a_score_too_large_for_a_float_is_refused_naming_line_and_field(tmp_path: Path) -> None:
    """json reads 1e999 as inf: the gold score failed only after the judging."""
    f = _write(tmp_path / "points.jsonl", [POINT, '{"id": "s2", "prompt": "P", "response": '
                                                  '"r", "score": 1e999}'])
    with pytest.raises(DataError, match="points.jsonl:2: field 'score': expected a finite "
                                        r"number, got inf \(too large for a float\)"):
        load(f"jsonl:{f}")
    f = _write(tmp_path / "points.jsonl", [{**POINT, "metadata": {"w": [1, "-1e999"]}},
                                           '{"id": "s2", "prompt": "P", "response": "r", '
                                           '"metadata": {"w": [1, -1e999]}}'])
    with pytest.raises(DataError, match=r"points.jsonl:2: field 'metadata.w\[1\]': expected a "
                                        "finite number, got -inf"):
        load(f"jsonl:{f}")


def test_a_json_file_with_a_number_too_large_names_its_record(tmp_path: Path) -> None:
    f = tmp_path / "points.json"
    f.write_text('[\n{"prompt": "q", "response": "a", "score": 3},\n'
                 '{"prompt": "q", "response": "b", "score": 1e999}\n]\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"points.json:3 \(record 1\): field 'score': expected "
                                        "a finite number, got inf"):
        load(f"hf:{f}")


@pytest.mark.parametrize("cell", ["nan", "inf", "-Infinity"])
def test_a_csv_gold_score_that_is_not_finite_is_refused_when_loaded(tmp_path: Path,
                                                                    cell: str) -> None:
    f = tmp_path / "points.csv"
    f.write_text(f"id,prompt,response,score\na,q,r,3\nb,q,r,{cell}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"points.csv:item 2 \(id 'b'\): field 'score': "
                                        "expected a finite number, got -?(nan|inf)$"):
        load(f"hf:{f}")


def test_make_item_refuses_a_score_or_quality_that_is_not_finite() -> None:
    from judgeaudit.data.loaders._common import make_item

    with pytest.raises(DataError, match="^src:7: field 'score': expected a finite number, "
                                        "got nan$"):
        make_item(PointwiseItem, "src", 7, id="a", prompt="q", response="r",
                  score=float("nan"))
    with pytest.raises(DataError, match="^src:7: field 'quality': expected a finite number, "
                                        "got inf$"):
        make_item(PairwiseItem, "src", 7, id="a", prompt="q", response_1="r",
                  response_2="s", quality=(1.0, float("inf")))
