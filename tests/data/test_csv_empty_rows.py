"""A spreadsheet saved as CSV ends in rows whose every cell is empty (";;;;" from a
semicolon-separated Excel export, ",,,," from a comma one). Such a file was unloadable
("field 'id' ... empty", and with ?ids=auto "field 'response_1' ... empty"); now those rows
are skipped and the run's notes say how many and on which lines. A row with any value stays
a row and is checked as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.data import DataError
from judgeaudit.data.registry import load_noted

runner = CliRunner()
HEADER = ["id", "prompt", "response_1", "response_2", "label"]


def write(path: Path, rows: list[list[str]], sep: str = ";", crlf: bool = True) -> Path:
    end = "\r\n" if crlf else "\n"
    path.write_text(end.join(sep.join(r) for r in [HEADER, *rows]) + end, encoding="utf-8")
    return path


def pairs(n: int) -> list[list[str]]:
    return [[f"x{i}", f"Q{i}", f"good {i}", f"bad {i}", "1"] for i in range(n)]


@pytest.mark.parametrize("sep", [";", ",", "\t"])
def test_trailing_empty_rows_are_skipped_and_noted(tmp_path, sep):
    f = write(tmp_path / "t.csv", pairs(5) + [[""] * 5] * 3, sep=sep)
    items, notes = load_noted(f"hf:{f}")
    assert [it.id for it in items] == [f"x{i}" for i in range(5)]
    assert notes == ["t.csv: 3 empty rows skipped (lines 7-9): every cell empty, as a "
                     "spreadsheet's trailing rows"]


def test_with_generated_ids_too(tmp_path):
    f = write(tmp_path / "t.csv", pairs(4) + [[""] * 5] * 2)
    items, notes = load_noted(f"hf:{f}?ids=auto")
    assert len(items) == 4 and notes and "2 empty rows skipped (lines 6-7)" in notes[0]


def test_an_empty_row_between_rows_and_cells_of_spaces_are_skipped_too(tmp_path):
    rows = pairs(2) + [[" ", "", "  ", "", ""]] + pairs(4)[2:] + [[""] * 5]
    f = write(tmp_path / "t.csv", rows)
    items, notes = load_noted(f"hf:{f}")
    assert len(items) == 4
    assert "2 empty rows skipped (lines 4, 7)" in notes[0]


def test_one_empty_row_says_line_not_lines(tmp_path):
    f = write(tmp_path / "t.csv", pairs(3) + [[""] * 5], crlf=False)
    _, notes = load_noted(f"hf:{f}")
    assert "1 empty row skipped (line 5)" in notes[0]


def test_a_row_with_one_value_is_still_checked(tmp_path):
    f = write(tmp_path / "t.csv", pairs(3) + [["", "", "", "", "1"]])
    with pytest.raises(DataError, match=r"t\.csv:5: field .id."):
        load_noted(f"hf:{f}")


def test_a_file_of_empty_rows_only_says_so(tmp_path):
    f = write(tmp_path / "t.csv", [[""] * 5] * 3)
    with pytest.raises(DataError, match=r"every cell empty"):
        load_noted(f"hf:{f}")


def test_the_run_records_the_skipped_rows(tmp_path, isolated_cache):
    from judgeaudit.cli.main import app

    f = write(tmp_path / "t.csv", pairs(6) + [[""] * 5] * 3)
    out = tmp_path / "ev"
    res = runner.invoke(app, ["evaluate", "--judge", "sim?seed=1", "--data", f"hf:{f}",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "3 empty rows skipped (lines 8-10)" in " ".join(res.output.split())
    doc = json.loads((out / "results.json").read_text())
    assert "3 empty rows skipped (lines 8-10)" in json.dumps(doc)
