"""`jsonl:` refuses fields outside its format; when a refused field is one `hf:` reads under
another name ("preference", "winner", "response_a", "chosen"), the refusal says so, naming
the spec that loads the file. It named only the fields it allows."""

from __future__ import annotations

import json

import pytest

from judgeaudit.data import DataError, load


def write(path, rec: dict) -> str:
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("field", "target"), [("preference", "label"), ("winner", "label")])
def test_a_label_under_another_name_points_to_hf(tmp_path, field, target):
    f = write(tmp_path / "p.jsonl", {"id": "a", "prompt": "p", "response_1": "x",
                                     "response_2": "y", field: 1})
    with pytest.raises(DataError) as err:
        load(f"jsonl:{f}")
    msg = str(err.value)
    assert f"field {field!r}: unknown field" in msg
    assert f"hf:{f} reads {field!r} as {target}" in msg
    # and hf: does load it, with that label
    assert load(f"hf:{f}")[0].label == 1


def test_a_field_no_loader_reads_gets_no_hint(tmp_path):
    f = write(tmp_path / "p.jsonl", {"id": "a", "prompt": "p", "response_1": "x",
                                     "response_2": "y", "label": 1, "colour": "red"})
    with pytest.raises(DataError) as err:
        load(f"jsonl:{f}")
    assert "unknown field" in str(err.value) and "hf:" not in str(err.value)
