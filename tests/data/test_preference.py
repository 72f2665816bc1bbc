"""Pairwise human-preference JSONL (`preference:PATH?labels=...`) on small files written here:
each declared label meaning maps to the right PairwiseItem label, values outside it are refused
with file:line, ids come from the named field or the line. BOM, CRLF and non-UTF-8 bytes are
in the bad-input sweep (tests/data/test_bad_input_sweep.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.data import DataError, PairwiseItem, load


def _write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def _pair(k: int, label, **kw) -> dict:
    rec = {"id": f"p{k}", "prompt": f"Q{k}?", "response_1": f"first {k}",
           "response_2": f"second {k}", "label": label}
    rec.update(kw)
    return rec


def _labels(path: Path, params: str = "") -> list[int | None]:
    items = load(f"preference:{path}{params}")
    assert all(isinstance(it, PairwiseItem) for it in items)
    return [it.label for it in items]


@pytest.mark.parametrize("meaning,values,expected", [
    # the file's value -> this package's label (1 = response_1 better, 2 = response_2, 0 tie)
    ("first_is_1", [1, 2, 0], [1, 2, 0]),
    ("first_is_0", [0, 1, 2], [1, 2, 0]),
    ("zero_is_first", [0, 1, 2], [1, 2, 0]),
    ("first_is_0_no_ties", [0, 1, 1, 0], [1, 2, 2, 1]),
    ("zero_first_one_second", [0, 1], [1, 2]),
])
def test_each_meaning_maps_to_the_right_label(tmp_path: Path, meaning: str, values: list[int],
                                              expected: list[int]) -> None:
    f = _write(tmp_path / "prefs.jsonl", [_pair(k, v) for k, v in enumerate(values)])
    assert _labels(f, f"?labels={meaning}") == expected
    items = load(f"preference:{f}?labels={meaning}")
    canonical = {"zero_is_first": "first_is_0",
                 "zero_first_one_second": "first_is_0_no_ties"}.get(meaning, meaning)
    assert [it.metadata["raw_label"] for it in items] == values
    assert {it.metadata["labels"] for it in items} == {canonical}
    # the better response really is the one the file meant
    for it, v in zip(items, values, strict=True):
        first_better = v == (1 if meaning == "first_is_1" else 0)
        if it.label != 0:
            assert it.better() == (it.response_1 if first_better else it.response_2)


def test_default_is_first_is_1_and_items_are_whole(tmp_path: Path) -> None:
    f = _write(tmp_path / "prefs.jsonl",
               [_pair(0, 2, reference="gold answer"), _pair(1, 1), _pair(2, 0)])
    items = load(f"preference:{f}")
    assert [it.label for it in items] == [2, 1, 0]
    it = items[0]
    assert (it.id, it.prompt, it.response_1, it.response_2, it.reference) == \
        ("p0", "Q0?", "first 0", "second 0", "gold answer")
    assert it.metadata == {"source": "preference", "labels": "first_is_1", "raw_label": 2,
                           "file": "prefs.jsonl", "line": 1}


def test_label_spellings(tmp_path: Path) -> None:
    f = _write(tmp_path / "prefs.jsonl",
               [_pair(0, "1"), _pair(1, 2.0), _pair(2, " 0 "), _pair(3, "2")])
    assert _labels(f) == [1, 2, 0, 2]
    assert _labels(f, "?labels=first_is_0") == [2, 0, 1, 0]


@pytest.mark.parametrize("meaning,bad", [
    ("first_is_1", 3), ("first_is_1", -1), ("first_is_1", "A"), ("first_is_1", 1.5),
    ("first_is_1", True), ("first_is_1", None), ("first_is_1", [1]), ("first_is_1", "½"),
    ("first_is_0", 3), ("first_is_0", "tie"),
    ("first_is_0_no_ties", 2), ("first_is_0_no_ties", -1),
])
def test_values_outside_the_declared_meaning_are_refused(tmp_path: Path, meaning: str,
                                                        bad) -> None:
    f = _write(tmp_path / "prefs.jsonl", [_pair(0, 1), _pair(1, 0), _pair(2, bad)])
    with pytest.raises(DataError) as e:
        load(f"preference:{f}?labels={meaning}")
    msg = str(e.value)
    shown = json.dumps(bad) if bad is None or isinstance(bad, bool) else repr(bad)
    assert f"prefs.jsonl:3: field 'label': {shown} is not a label under labels={meaning} (" \
        in msg, msg


def test_no_ties_says_how_to_load_ties(tmp_path: Path) -> None:
    f = _write(tmp_path / "prefs.jsonl", [_pair(0, 0), _pair(1, 2)])
    with pytest.raises(DataError, match=r"prefs.jsonl:2: .*no ties\); if 2 means a tie, load "
                                        r"with labels=first_is_0"):
        load(f"preference:{f}?labels=first_is_0_no_ties")


def test_missing_label_is_refused(tmp_path: Path) -> None:
    rec = _pair(1, 1)
    del rec["label"]
    f = _write(tmp_path / "prefs.jsonl", [_pair(0, 1), rec])
    with pytest.raises(DataError, match=r"prefs.jsonl:2: field 'label': missing \(required\)"):
        load(f"preference:{f}")


def test_unknown_meaning_lists_the_known_ones(tmp_path: Path) -> None:
    f = _write(tmp_path / "prefs.jsonl", [_pair(0, 1)])
    with pytest.raises(DataError) as e:
        load(f"preference:{f}?labels=one_is_first")
    msg = str(e.value)
    assert "parameter 'labels': expected one of first_is_1 (1 = response_1 better" in msg
    assert "first_is_0 (0 = response_1 better, 1 = response_2 better, 2 = tie)" in msg
    assert "got 'one_is_first'" in msg
    with pytest.raises(DataError, match="unknown parameter"):
        load(f"preference:{f}?label=first_is_1")


def test_instruction_and_input_as_the_prompt(tmp_path: Path) -> None:
    recs = [{"id": 1, "instruction": "Rewrite this.", "input": "the text",
             "response_1": "a", "response_2": "b", "label": 0},
            {"id": 2, "instruction": "Say hi.", "input": "  ", "response_1": "hi",
             "response_2": "", "label": 1},
            {"id": 3, "prompt": "P", "instruction": "ignored", "response_1": "x",
             "response_2": "y", "label": 2}]
    items = load(f"preference:{_write(tmp_path / 'alpaca.jsonl', recs)}?labels=first_is_0")
    assert [it.prompt for it in items] == ["Rewrite this.\n\nthe text", "Say hi.", "P"]
    assert [it.id for it in items] == ["1", "2", "3"] and items[1].response_2 == ""
    del recs[1]["instruction"]
    _write(tmp_path / "alpaca.jsonl", recs)
    with pytest.raises(DataError, match=r"alpaca.jsonl:2: field 'prompt' \(or 'instruction'\): "
                                        r"missing \(required\)"):
        load(f"preference:{tmp_path / 'alpaca.jsonl'}")


def test_ids_named_field_and_auto(tmp_path: Path) -> None:
    recs = [{k: v for k, v in _pair(k, 1).items() if k != "id"} for k in range(3)]
    recs[1]["uid"] = "u-1"
    f = _write(tmp_path / "prefs.jsonl", recs)
    with pytest.raises(DataError, match=r"prefs.jsonl:1: field 'id': missing .*ids=auto"):
        load(f"preference:{f}")
    assert [it.id for it in load(f"preference:{f}?ids=auto")] == \
        ["prefs:1", "prefs:2", "prefs:3"]
    assert [it.id for it in load(f"preference:{f}?id=uid&ids=auto")] == \
        ["prefs:1", "u-1", "prefs:3"]
    with pytest.raises(DataError, match=r"prefs.jsonl:1: field 'uid': missing"):
        load(f"preference:{f}?id=uid")
    for r in recs:
        r["uid"] = "same"
    _write(f, recs)
    with pytest.raises(DataError, match=r"prefs.jsonl:2: field 'uid': duplicate item id "
                                        r"'same' \(first at line 1\)"):
        load(f"preference:{f}?id=uid")


def test_wrong_types_are_named(tmp_path: Path) -> None:
    for key, val, msg in (("response_2", 7, "expected text, got int"),
                          ("prompt", ["Q"], "expected text, got list"),
                          ("id", {"a": 1}, "expected text or an integer, got dict"),
                          ("reference", 3, "expected text, got int")):
        rec = _pair(1, 1)
        rec[key] = val
        f = _write(tmp_path / "prefs.jsonl", [_pair(0, 1), rec])
        with pytest.raises(DataError, match=rf"prefs.jsonl:2: field '{key}': {msg}"):
            load(f"preference:{f}")


def test_a_folder_or_an_empty_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is a directory; expected a file"):
        load(f"preference:{tmp_path}")
    f = tmp_path / "prefs.jsonl"
    f.write_text("\n")
    with pytest.raises(DataError, match="prefs.jsonl: empty file"):
        load(f"preference:{f}")
