"""CSV files as spreadsheets write them (`judgeaudit.textfile`): the separator is read off the
header line, so a semicolon CSV (Excel in many European locales) or a tab-separated export
reads as a comma one does, through the data loader and the replay provider alike."""

from __future__ import annotations

import pytest

import judgeaudit
from judgeaudit.data import load
from judgeaudit.textfile import TextProblem, delimiter_of, read_csv

ROWS = [["id", "prompt", "response_1", "response_2", "label"],
        ["q1", "Say hi; politely", "Hello, friend", "hi", "1"],
        ["q2", "Count", "1, 2, 3", "one", "2"]]


def as_text(sep: str) -> str:
    def cell(c: str) -> str:
        return f'"{c}"' if sep in c or "," in c or ";" in c else c
    return "\r\n".join(sep.join(cell(c) for c in row) for row in ROWS) + "\r\n"


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_each_separator_reads_the_same_table(sep):
    assert delimiter_of(as_text(sep)) == sep
    header, rows = read_csv(as_text(sep))
    assert header == ROWS[0]
    assert [r for _, r in rows] == [dict(zip(ROWS[0], row, strict=True)) for row in ROWS[1:]]
    assert [line for line, _ in rows] == [2, 3]


def test_separators_inside_quotes_do_not_count():
    assert delimiter_of('"a;b;c",d\nx,y\n') == ","
    assert delimiter_of("only_one_column\n1\n") == ","
    assert delimiter_of("\n\n a;b\n") == ";"  # the first line that is not blank


def test_an_excel_separator_line_names_the_separator_and_is_not_the_header():
    header, rows = read_csv('sep=;\r\nid;note\r\nq1;"a, b"\r\nq2;c\r\n')
    assert header == ["id", "note"]
    assert rows == [(3, {"id": "q1", "note": "a, b"}), (4, {"id": "q2", "note": "c"})]
    with pytest.raises(TextProblem) as err:
        read_csv("sep=,\nid,note\nq1\n")
    assert err.value.line == 3  # lines counted in the file, the sep= line included


def test_a_row_that_does_not_fit_names_its_line_and_the_separator():
    with pytest.raises(TextProblem) as err:
        read_csv("a;b;c\n1;2;3\n1;2\n")
    assert err.value.line == 3
    assert "2 fields, fewer than the header's 3 (a, b, c; fields separated by ';')" in str(
        err.value)


@pytest.mark.parametrize(("sep", "suffix"), [(";", "csv"), ("\t", "csv"), ("\t", "tsv")])
def test_the_data_loader_and_the_replay_judge_read_a_semicolon_or_tab_file(tmp_path, sep,
                                                                            suffix):
    data = tmp_path / f"items.{suffix}"
    data.write_text(as_text(sep), encoding="utf-8-sig")  # with Excel's byte-order mark
    items = load(f"hf:{data}")
    assert [it.id for it in items] == ["q1", "q2"]
    assert items[0].prompt == "Say hi; politely" and items[1].response_1 == "1, 2, 3"

    verdicts = tmp_path / "mine.csv"
    verdicts.write_text(sep.join(["qid", "pos", "pick"]) + "\r\n"
                        + "\r\n".join(sep.join([f"q{i}", o, "first"]) for i in (1, 2)
                                      for o in ("12", "21")) + "\r\n", encoding="utf-8-sig")
    res = judgeaudit.evaluate(
        f"replay:{verdicts}?item=qid&order=pos&verdict=pick&verdict_map=first:1,second:2",
        f"hf:{data}", cache=False)
    assert res.ok and res.calls["made"] == 4 and res.to_dict()["n_invalid"] == 0


def test_a_field_longer_than_pythons_default_limit_is_read(tmp_path):
    """A response over 131,072 characters was refused ("field larger than field limit")."""
    long = "x" * 200_000
    header, rows = read_csv(f"id,text\na,{long}\nb,short\n")
    assert header == ["id", "text"] and rows[0][1]["text"] == long and rows[1][0] == 3
