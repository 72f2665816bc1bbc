"""Bad input, for every loader that reads a file: each case either loads (a UTF-8 BOM, CRLF
line endings, U+2028/U+2029/U+0085 inside strings, an absent optional file) or raises a
DataError whose message names the file, the line where a line is involved ("FILE:LINE"), and
the field where a field is involved; never a raw KeyError, TypeError, UnicodeDecodeError,
RecursionError, IsADirectoryError or csv.Error.

Each format writes a minimal valid file (or folder with the loader's fixed file names) into
tmp_path, one record per line so the line of record k is known, then corrupts one file.

Cases: empty file, malformed record (invalid JSON; a CSV row with the wrong number of fields),
missing required field, a number where text is expected, a list where an object (record) is
expected, non-UTF-8 bytes inside line 3, BOM, CRLF, line separators inside strings, JSON
nested 100,000 deep, duplicate ids, a directory where the file is expected, the file absent,
the whole PATH absent.

The replay provider (llm/providers/replay.py) reads recorded verdicts from CSV or JSONL and
raises ReplayFileError, a ValueError of the same "replay file FILE:LINE: ..." shape; its
cases are at the end.

Not applicable (left out of the grid):
- duplicate ids for llmbar, calm, evalbiasbench, mtbench pairs, prometheus hhh: their ids are
  positions in the file (`<subset>:<idx>`, `calm:<stem>:<i>`, ...), so they cannot repeat.
- hf CSV: a wrong type or a list where an object is expected (every CSV cell is text), and
  deep JSON nesting (no JSON in a CSV).
- hf parquet (needs pyarrow, absent here; a corrupt file is tested when it is installed) and
  hub datasets (need the network).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judgeaudit.data import DataError, load
from judgeaudit.llm.providers.replay import ReplayFileError, ReplayProvider

# ---- formats ---------------------------------------------------------------------------------

Records = list[dict[str, Any]]


@dataclass
class Fmt:
    name: str
    target: str                              # the file corrupted, relative to the root
    layout: str                              # jsonl | list | keyed | grouped | csv
    records: Callable[[], Records]           # >= 4 valid records
    field: str                               # a required text field
    spec: Callable[[Path], str]              # root -> data spec
    others: dict[str, str] = field(default_factory=dict)  # other files of a valid folder
    dup: Callable[[Records], str] | None = None  # make record 2 repeat record 0's id
    optional: bool = False                   # the target may be absent


def _grading(instruction: str, response: str) -> str:
    return ("###Task Description:\nGrade the response.\n\n###The instruction to evaluate:\n"
            f"{instruction}\n\n###Response to evaluate:\n{response}\n\n"
            "###Reference Answer (Score 5):\nA reference.\n\n###Score Rubrics:\n[Is it good?]\n"
            "Score 1: bad\nScore 2: weak\nScore 3: fair\nScore 4: good\nScore 5: great\n\n"
            "###Feedback: ")


def _pairs(n: int = 4) -> Records:
    return [{"input": f"Q{k}?", "output_1": f"good {k}", "output_2": f"bad {k}",
             "label": 1 + k % 2} for k in range(n)]


def _ann(s: int) -> dict[str, int]:
    return {"coherence": s, "consistency": s, "fluency": s, "relevance": s}


def _same(key: str, prefix: str = "") -> Callable[[Records], str]:
    def dup(recs: Records) -> str:
        recs[2][key] = recs[0][key]
        return f"{prefix}{recs[0][key]}"
    return dup


def _same2(k1: str, k2: str, fmt: str) -> Callable[[Records], str]:
    def dup(recs: Records) -> str:
        recs[2][k1], recs[2][k2] = recs[0][k1], recs[0][k2]
        return fmt.format(recs[0][k1], recs[0][k2])
    return dup


QUESTIONS = [{"question_id": 81 + k, "category": "writing", "turns": [f"Q{k}?", "More."]}
             for k in range(4)]
REFERENCES = [{"question_id": 81 + k, "model_id": "gpt-4",
               "choices": [{"index": 0, "turns": [f"ref {k}", "ref 2"]}]} for k in range(4)]


def _jsonl(recs: Records) -> str:
    return "".join(json.dumps(r) + "\n" for r in recs)


FORMATS = [
    Fmt("jsonl", "items.jsonl", "jsonl",
        lambda: [{"id": f"p{k}", "prompt": f"Q{k}?", "response_1": "a", "response_2": "b",
                  "label": 1} for k in range(4)],
        "prompt", lambda r: f"jsonl:{r / 'items.jsonl'}", dup=_same("id")),
    Fmt("hf-jsonl", "prefs.jsonl", "jsonl",
        lambda: [{"id": f"r{k}", "question": f"Q{k}?", "response_a": "x", "response_b": "y",
                  "winner": "model_a"} for k in range(4)],
        "question", lambda r: f"hf:{r / 'prefs.jsonl'}", dup=_same("id")),
    Fmt("hf-json", "rows.json", "list",
        lambda: [{"id": f"r{k}", "prompt": f"Q{k}?", "chosen": "g", "rejected": "b"}
                 for k in range(4)],
        "prompt", lambda r: f"hf:{r / 'rows.json'}", dup=_same("id")),
    Fmt("hf-csv", "t.csv", "csv",
        lambda: [{"id": f"r{k}", "question": f"Q{k}?", "response_a": "x", "response_b": "y",
                  "winner": "B"} for k in range(4)],
        "question", lambda r: f"hf:{r / 't.csv'}", dup=_same("id")),
    Fmt("llmbar", "data/LLMBar/Natural/dataset.json", "list", _pairs, "input",
        lambda r: f"llmbar:{r}"),
    Fmt("pandalm", "testset-v1.json", "list",
        lambda: [{"idx": k, "motivation_app": "Grammarly", "cmp_key": "bloom-7b_llama-7b",
                  "instruction": f"Rewrite {k}.", "input": "", "response1": "r1",
                  "response2": "r2", "annotator1": 1, "annotator2": 1, "annotator3": 2}
                 for k in range(4)],
        "instruction", lambda r: f"pandalm:{r}", dup=_same("idx", "pandalm:")),
    Fmt("mtbench", "human_pairwise_subset_llmbar.json", "list", _pairs, "input",
        lambda r: f"mtbench:{r}",
        others={"question.jsonl": _jsonl(QUESTIONS),
                "reference_answer_gpt-4.jsonl": _jsonl(REFERENCES)}),
    Fmt("mtbench-questions", "question.jsonl", "jsonl", lambda: [dict(q) for q in QUESTIONS],
        "turns", lambda r: f"mtbench:{r}",
        others={"human_pairwise_subset_llmbar.json": json.dumps(_pairs())},
        dup=_same("question_id"), optional=True),
    Fmt("mtbench-references", "reference_answer_gpt-4.jsonl", "jsonl",
        lambda: [dict(q) for q in REFERENCES], "choices", lambda r: f"mtbench:{r}",
        others={"human_pairwise_subset_llmbar.json": json.dumps(_pairs()),
                "question.jsonl": _jsonl(QUESTIONS)},
        dup=_same("question_id"), optional=True),
    Fmt("judgebench", "dataset=judgebench,response_model=gpt-4o.jsonl", "jsonl",
        lambda: [{"pair_id": f"u{k}", "original_id": k, "source": "mmlu-pro-math",
                  "question": f"Q{k}?", "response_model": "gpt-4o", "response_A": "A",
                  "response_B": "B", "label": "A>B"} for k in range(4)],
        "question", lambda r: f"judgebench:{r}", dup=_same("pair_id", "judgebench:")),
    Fmt("judgebench-json", "pairs.json", "list",
        lambda: [{"pair_id": f"u{k}", "question": f"Q{k}?", "response_model": "m",
                  "response_A": "A", "response_B": "B", "label": "B>A"} for k in range(4)],
        "question", lambda r: f"judgebench:{r}", dup=_same("pair_id", "judgebench:")),
    Fmt("calm", "base_datasets/fact_related_dataset.json", "list",
        lambda: [{"question": f"Q{k}?", "answer1": f"right {k}", "answer2": f"wrong {k}",
                  "data_resource": "MATH"} for k in range(4)],
        "answer1", lambda r: f"calm:{r}"),
    Fmt("evalbiasbench", "biasbench.json", "grouped",
        lambda: [{"bias": "length bias", "instruction": f"Write {k}.", "response1": "good",
                  "response2": "bad", "label": 1} for k in range(4)],
        "instruction", lambda r: f"evalbiasbench:{r}"),
    Fmt("prometheus", "mt_bench_eval.json", "list",
        lambda: [{"idx": 81 + k, "response_source": "llama2", "category": "writing",
                  "instruction": _grading(f"Task {k}", f"Answer {k}"), "gpt4_score": [3, 4, 4]}
                 for k in range(4)],
        "instruction", lambda r: f"prometheus:{r}?set=mt_bench",
        dup=_same2("idx", "response_source", "prometheus:mt_bench:{}:{}")),
    Fmt("prometheus-hhh", "hhh_alignment_eval.json", "list",
        lambda: [{"source": "harmless", "chosen_instruction": _grading(f"T{k}", "kind"),
                  "rejected_instruction": _grading(f"T{k}", "rude")} for k in range(4)],
        "chosen_instruction", lambda r: f"prometheus:{r}?set=hhh"),
    Fmt("prometheus-biggen", "biggen_bench_instances.json", "keyed",
        lambda: [{"id": f"planning_{k}", "capability": "planning", "task": "travel",
                  "system_prompt": "You plan.", "input": f"Plan {k}.", "response": "Hello World!",
                  "reference_answer": "A plan.",
                  "score_rubric": {"criteria": "Good plan?",
                                   **{f"score{s}_description": f"level {s}"
                                      for s in range(1, 6)}}} for k in range(4)],
        "input", lambda r: f"prometheus:{r}?set=biggen", dup=_same("id", "prometheus:biggen:")),
    Fmt("summeval", "model_annotations.aligned.paired.jsonl", "jsonl",
        lambda: [{"id": f"dm-test-{k}", "model_id": "M11", "decoded": f"summary {k}",
                  "text": f"Article {k}.", "references": ["ref"],
                  "expert_annotations": [_ann(3)] * 3, "turker_annotations": [_ann(4)] * 5}
                 for k in range(4)],
        "decoded", lambda r: f"summeval:{r}",
        dup=_same2("id", "model_id", "summeval:{}:{}")),
    # the per-system layout: errors in one of several system files name that file; with one
    # system's file gone the others still load
    Fmt("summeval-systems", "M11_outputs_annotations.jsonl", "jsonl",
        lambda: [{"id": f"dm-test-{k}", "model_id": "M11", "decoded": f"summary {k}",
                  "text": f"Article {k}.", "references": ["ref"],
                  "expert_annotations": [_ann(3)] * 3, "turker_annotations": [_ann(4)] * 5}
                 for k in range(4)],
        "decoded", lambda r: f"summeval:{r}",
        others={"M8_outputs_annotations.jsonl": _jsonl(
            [{"id": f"dm-test-{k}", "model_id": "M8", "decoded": f"M8 summary {k}",
              "text": f"Article {k}.", "expert_annotations": [_ann(2)] * 3}
             for k in range(2)])},
        dup=_same2("id", "model_id", "summeval:{}:{}"), optional=True),
    Fmt("preference", "prefs.jsonl", "jsonl",
        lambda: [{"id": f"p{k}", "prompt": f"Q{k}?", "response_1": "a", "response_2": "b",
                  "label": k % 3} for k in range(4)],
        "prompt", lambda r: f"preference:{r / 'prefs.jsonl'}", dup=_same("id")),
    Fmt("preference-instruction", "pairs.jsonl", "jsonl",
        lambda: [{"uid": k, "instruction": f"Do {k}.", "input": "", "response_1": "a",
                  "response_2": "b", "label": k % 2} for k in range(4)],
        "instruction",
        lambda r: f"preference:{r / 'pairs.jsonl'}?labels=first_is_0_no_ties&id=uid",
        dup=_same("uid")),
]
BY_NAME = {f.name: f for f in FORMATS}


# ---- writing ---------------------------------------------------------------------------------

def _one(fmt: Fmt, rec: Any, k: int) -> str:
    """Record k as written in the file (in a keyed object, under the key "inst_k")."""
    text = json.dumps(rec, ensure_ascii=False)
    return f'"inst_{k}": {text}' if fmt.layout == "keyed" else text


def encode(fmt: Fmt, recs: list[Any], raw: dict[int, str] | None = None) -> str:
    """The file's text, one record per line; `raw` replaces record k's line."""
    raw = raw or {}
    if fmt.layout == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(list(recs[0]))
        for k, r in enumerate(recs):
            if k in raw:
                buf.write(raw[k] + "\n")
            else:
                w.writerow(list(r.values()))
        return buf.getvalue()
    lines = [raw.get(k) or _one(fmt, r, k) for k, r in enumerate(recs)]
    if fmt.layout == "jsonl":
        return "".join(ln + "\n" for ln in lines)
    body = ",\n".join(lines)
    if fmt.layout == "list":
        return "[\n" + body + "\n]\n"
    if fmt.layout == "keyed":
        return "{\n" + body + "\n}\n"
    return '{\n"length bias": [\n' + body + "\n]\n}\n"  # grouped (EvalBiasBench)


def line_of(fmt: Fmt, k: int) -> int:
    """The line record k is written on."""
    return k + {"jsonl": 1, "csv": 2, "list": 2, "keyed": 2, "grouped": 3}[fmt.layout]


def setup(fmt: Fmt, root: Path, recs: list[Any] | None = None,
          raw: dict[int, str] | None = None) -> Path:
    """Write a valid folder (or the given records) under root; returns the target file."""
    for rel, text in fmt.others.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    target = root / fmt.target
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(encode(fmt, fmt.records() if recs is None else recs, raw)
                       .encode("utf-8"))
    return target


def error(fmt: Fmt, root: Path) -> DataError:
    with pytest.raises(DataError) as e:
        load(fmt.spec(root))
    return e.value


def located(err: DataError, target: Path, line: int | None = None, field: str | None = None,
            ) -> str:
    msg = str(err)
    assert target.name in msg, msg
    if line is not None:
        assert f"{target.name}:{line}" in msg, msg
    if field is not None:
        assert repr(field) in msg or f"'{field}" in msg, msg
    return msg


def grid(*cases: str, skip: dict[str, set[str]] | None = None) -> list[Any]:
    skip = skip or {}
    return [pytest.param(f, c, id=f"{f.name}-{c}") for f in FORMATS for c in cases
            if c not in skip.get(f.name, set())]


# ---- loads fine ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_valid_fixture_loads(fmt: Fmt, tmp_path: Path) -> None:
    setup(fmt, tmp_path)
    assert len(load(fmt.spec(tmp_path))) >= 2


@pytest.mark.parametrize("fmt,case", grid("bom", "crlf", "separators"))
def test_loads_the_same(fmt: Fmt, case: str, tmp_path: Path) -> None:
    target = setup(fmt, tmp_path)
    before = load(fmt.spec(tmp_path))
    data = target.read_bytes()
    if case == "bom":
        target.write_bytes(b"\xef\xbb\xbf" + data)
    elif case == "crlf":
        target.write_bytes(data.replace(b"\n", b"\r\n"))
        assert b"\r\n" in target.read_bytes()
    else:  # U+2028, U+2029, U+0085 are characters inside a string, not line breaks
        odd = "a\u2028b\u2029c\u0085d "
        recs = fmt.records()
        if fmt.name == "mtbench-questions":
            recs[1]["category"] = odd
        elif fmt.name == "mtbench-references":
            recs[1]["choices"][0]["turns"][0] = odd
        else:
            head = "evaluate:\n"  # inside the instruction of a Prometheus grading prompt
            text = recs[1][fmt.field]
            recs[1][fmt.field] = (text.replace(head, head + odd) if head in text
                                  else odd + text)
            if fmt.name == "prometheus-hhh":  # chosen and rejected share the instruction
                recs[1]["rejected_instruction"] = recs[1]["rejected_instruction"].replace(
                    head, head + odd)
        setup(fmt, tmp_path, recs)
        assert "\u2028".encode() in target.read_bytes()
        after = load(fmt.spec(tmp_path))
        assert len(after) == len(before)
        assert any(odd in json.dumps(i.model_dump(), ensure_ascii=False) for i in after)
        return
    assert load(fmt.spec(tmp_path)) == before


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.optional], ids=lambda f: f.name)
def test_optional_file_may_be_absent(fmt: Fmt, tmp_path: Path) -> None:
    setup(fmt, tmp_path).unlink()
    assert load(fmt.spec(tmp_path))


# ---- refused with file, line and field ---------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_empty_file(fmt: Fmt, tmp_path: Path) -> None:
    target = setup(fmt, tmp_path)
    target.write_bytes(b"")
    assert "empty" in located(error(fmt, tmp_path), target)
    target.write_bytes(b"\n  \n\r\n")  # blank lines only
    assert "empty" in located(error(fmt, tmp_path), target)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_malformed_record(fmt: Fmt, tmp_path: Path) -> None:
    bad = {"csv": "r1,only two", "keyed": '"bad": {"oops": }'}.get(fmt.layout, '{"oops": }')
    target = setup(fmt, tmp_path, raw={1: bad})
    msg = located(error(fmt, tmp_path), target, line_of(fmt, 1))
    assert ("invalid JSON" in msg) if fmt.layout != "csv" else ("fewer than the header's 5" in msg)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_missing_field(fmt: Fmt, tmp_path: Path) -> None:
    recs = fmt.records()
    if fmt.layout == "csv":  # a CSV "record" lacks a field only by lacking the column
        for r in recs:
            del r[fmt.field]
        target = setup(fmt, tmp_path, recs)
        assert fmt.field in located(error(fmt, tmp_path), target)
        return
    del recs[1][fmt.field]
    target = setup(fmt, tmp_path, recs)
    assert "missing" in located(error(fmt, tmp_path), target, line_of(fmt, 1), fmt.field)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.layout != "csv"],
                         ids=lambda f: f.name)
def test_number_where_text_is_expected(fmt: Fmt, tmp_path: Path) -> None:
    recs = fmt.records()
    recs[1][fmt.field] = 12345
    target = setup(fmt, tmp_path, recs)
    located(error(fmt, tmp_path), target, line_of(fmt, 1), fmt.field)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.layout != "csv"],
                         ids=lambda f: f.name)
def test_list_where_an_object_is_expected(fmt: Fmt, tmp_path: Path) -> None:
    recs: list[Any] = fmt.records()
    recs[1] = [1, 2]
    target = setup(fmt, tmp_path, recs)
    assert "list" in located(error(fmt, tmp_path), target, line_of(fmt, 1))


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_non_utf8_names_the_line_not_a_byte_offset(fmt: Fmt, tmp_path: Path) -> None:
    target = setup(fmt, tmp_path)
    lines = target.read_bytes().split(b"\n")
    at = lines[2].find(b'": "') + 4 if fmt.layout != "csv" else 0
    lines[2] = lines[2][:at] + b"\xff\xfe" + lines[2][at:]
    target.write_bytes(b"\n".join(lines))
    msg = located(error(fmt, tmp_path), target, 3)
    assert "not valid UTF-8" in msg and "0xff" in msg and f"column {at + 1}" in msg
    assert "position" not in msg  # not the byte offset of UnicodeDecodeError


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.layout != "csv"],
                         ids=lambda f: f.name)
def test_json_nested_too_deeply(fmt: Fmt, tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    recs = fmt.records()
    raw = _one(fmt, recs[1], 1)
    raw = raw[:-1] + f', "extra": {deep}}}'
    target = setup(fmt, tmp_path, recs, raw={1: raw})
    line = line_of(fmt, 1) if fmt.layout == "jsonl" else None
    assert "nested too deeply" in located(error(fmt, tmp_path), target, line)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.dup], ids=lambda f: f.name)
def test_duplicate_ids_name_the_id_and_both_lines(fmt: Fmt, tmp_path: Path) -> None:
    recs = fmt.records()
    assert fmt.dup is not None
    ident = fmt.dup(recs)
    target = setup(fmt, tmp_path, recs)
    msg = located(error(fmt, tmp_path), target, line_of(fmt, 2))
    assert repr(ident) in msg or f" {ident} " in msg, msg
    assert f"line {line_of(fmt, 0)}" in msg, msg


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_directory_where_the_file_is_expected(fmt: Fmt, tmp_path: Path) -> None:
    target = setup(fmt, tmp_path)
    target.unlink()
    target.mkdir()
    assert "directory" in located(error(fmt, tmp_path), target)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if not f.optional], ids=lambda f: f.name)
def test_file_absent(fmt: Fmt, tmp_path: Path) -> None:
    target = setup(fmt, tmp_path)
    target.unlink()
    msg = str(error(fmt, tmp_path))
    # a folder loader names the file it expected or the folder it searched
    assert target.name in msg or str(tmp_path) in msg, msg
    assert "no " in msg


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_path_absent(fmt: Fmt, tmp_path: Path) -> None:
    setup(fmt, tmp_path / "here")
    err = error(fmt, tmp_path / "absent")
    assert "absent" in str(err) and "no such file" in str(err)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("root", ["~nobody-judgeaudit-test/x", "/tmp/" + "x" * 300],
                         ids=["unknown-user-home", "name-too-long"])
def test_unusable_path(fmt: Fmt, root: str) -> None:
    err = error(fmt, Path(root))
    assert "nobody-judgeaudit-test" in str(err) or "xxxx" in str(err)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.layout != "csv"],
                         ids=lambda f: f.name)
def test_nan_is_not_json(fmt: Fmt, tmp_path: Path) -> None:
    recs = fmt.records()
    raw = _one(fmt, recs[1], 1)[:-1] + ', "extra": NaN}'
    target = setup(fmt, tmp_path, recs, raw={1: raw})
    line = line_of(fmt, 1) if fmt.layout == "jsonl" else None
    assert "NaN is not valid JSON" in located(error(fmt, tmp_path), target, line)


# ---- format-specific cases -----------------------------------------------------------------------

def test_duplicate_key_in_a_json_object_names_both_lines(tmp_path: Path) -> None:
    fmt = BY_NAME["prometheus-biggen"]
    recs = fmt.records()
    raw = _one(fmt, recs[2], 0)
    target = setup(fmt, tmp_path, recs, raw={2: raw})  # record 2 reuses record 0's key
    msg = located(error(fmt, tmp_path), target, 4, "inst_0")
    assert "lines 2 and 4" in msg


def test_record_field_given_twice_is_refused(tmp_path: Path) -> None:
    fmt = BY_NAME["llmbar"]
    recs = fmt.records()
    raw = _one(fmt, recs[1], 1)[:-1] + ', "label": 2}'
    target = setup(fmt, tmp_path, recs, raw={1: raw})
    located(error(fmt, tmp_path), target, 3, "label")


def test_jsonl_wrong_types_inside_a_record(tmp_path: Path) -> None:
    """(An integer id is read as its decimal text since 28443f7; a float id is still refused.)"""
    fmt = BY_NAME["jsonl"]
    for key, val in (("metadata", [1, 2]), ("label", [1]), ("id", 7.5), ("annotator_labels", {})):
        recs = fmt.records()
        recs[1][key] = val
        target = setup(fmt, tmp_path, recs)
        located(error(fmt, tmp_path), target, 2, key)


def test_csv_header_naming_a_column_twice(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("id,question,question,response_a,response_b\nr0,Q,Q,x,y\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"t.csv:1: column\(s\) 'question' appear more than once"):
        load(f"hf:{f}")


def test_csv_unterminated_quote_and_more_fields(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text('id,question,response_a,response_b\nr0,Q,x,y\nr1,Q,x,y,extra\n',
                 encoding="utf-8")
    with pytest.raises(DataError, match=r"t.csv:3: 5 fields, more than the header's 4"):
        load(f"hf:{f}")
    f.write_text('id,question,response_a,response_b\nr0,"Q\nstill Q,x,y\nr1,Q,x,y\n',
                 encoding="utf-8")
    with pytest.raises(DataError, match=r"t.csv:2: malformed CSV in the record starting on "
                                        "this line: unexpected end of data"):
        load(f"hf:{f}")


def test_csv_quoted_newline_keeps_line_numbers(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text('id,question,response_a,response_b,winner\nr0,"two\nlines",x,y,A\n'
                 "r1,Q,x,y,maybe\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"t.csv:4: field 'label' \(column 'winner'\)"):
        load(f"hf:{f}")


def test_hf_json_wrong_score_type(tmp_path: Path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text(json.dumps({"prompt": "p", "response": "r", "score": [4]}) + "\n")
    with pytest.raises(DataError, match=r"s.jsonl:1: field 'score' \(column 'score'\): expected "
                                        "a number, got list"):
        load(f"hf:{f}")


def test_utf16_file_is_named_as_such(tmp_path: Path) -> None:
    f = tmp_path / "items.jsonl"
    f.write_bytes('{"id": "a"}\n'.encode("utf-16"))
    with pytest.raises(DataError, match=r"items.jsonl:1: .*UTF-16; save it as UTF-8"):
        load(f"jsonl:{f}")


def test_json_document_errors_name_the_record_line(tmp_path: Path) -> None:
    """In an indented JSON document the line is the line the record starts on."""
    recs = _pairs()
    recs[2]["label"] = 3
    d = tmp_path / "data" / "LLMBar" / "Natural"
    d.mkdir(parents=True)
    text = json.dumps(recs, indent=2)
    (d / "dataset.json").write_text(text)
    start = [n for n, line in enumerate(text.split("\n"), start=1) if line == "  {"][2]
    with pytest.raises(DataError) as e:
        load(f"llmbar:{tmp_path}")
    assert f"dataset.json:{start} (record 2): field 'label'" in str(e.value)


def test_duplicate_ids_across_judgebench_files_name_both_files(tmp_path: Path) -> None:
    fmt = BY_NAME["judgebench"]
    recs = fmt.records()
    (tmp_path / "a.jsonl").write_text(_jsonl(recs[:2]))
    (tmp_path / "b.jsonl").write_text(_jsonl(recs[1:]))
    with pytest.raises(DataError) as e:
        load(f"judgebench:{tmp_path}")
    msg = str(e.value)
    assert "b.jsonl:1" in msg and "a.jsonl, line 2" in msg and "'judgebench:u1'" in msg


def test_duplicate_ids_only_seen_after_loading_are_named(tmp_path: Path) -> None:
    """Two CALM files with the same stem in different folders give the same ids: caught by
    load(), which names the id and the positions."""
    fmt = BY_NAME["calm"]
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "x.json").write_text(json.dumps(fmt.records()))
    with pytest.raises(DataError, match=r"duplicate item id 'calm:x:0' \(items 1 and 5 of 8\)"):
        load(f"calm:{tmp_path}?set=all")


@pytest.mark.parametrize("value", ["-1", "0", "abc", "1.5", "", " "])
def test_limit_must_be_a_positive_integer(value: str) -> None:
    with pytest.raises(DataError, match=r"parameter 'limit': expected an integer >= 1, got"):
        load(f"builtin:facts?limit={value}")
    assert len(load("builtin:facts?limit=3")) == 3


@pytest.mark.parametrize(("given", "says"), [
    ("items.jsonl", "give jsonl:items.jsonl (our fields) or hf:items.jsonl"),
    ("./sub/items.jsonl", "give jsonl:./sub/items.jsonl"),
    ("table.csv", "give hf:table.csv (a table with prompt"),
    ("table.parquet", "give hf:table.parquet"),
])
def test_a_bare_path_as_data_spec_names_the_spec_to_give(given: str, says: str) -> None:
    """`--data items.jsonl` said "bad spec: kind must be a word"; it now says which spec."""
    with pytest.raises(ValueError, match=re.escape(f"{given!r} is a file path, not a data "
                                                    f"SPEC: {says}")):
        load(given)


def test_a_directory_as_data_spec_lists_the_kinds(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"is a directory, not a data SPEC: give KIND:.*"
                                         r"known: .*llmbar"):
        load(str(tmp_path))
    with pytest.raises(ValueError, match="unknown data kind 'nope'"):  # not a path: as before
        load("nope")


def test_a_json_array_in_a_jsonl_file_says_so(tmp_path: Path) -> None:
    f = tmp_path / "items.jsonl"
    f.write_text(json.dumps([{"id": "a", "prompt": "p", "response_1": "x",
                              "response_2": "y", "label": 1}]))
    with pytest.raises(DataError, match=r"items.jsonl:1: expected a JSON object, got list "
                                        r"\(the file is one JSON array"):
        load(f"jsonl:{f}")


def test_other_column_names_in_jsonl_point_to_hf(tmp_path: Path) -> None:
    f = tmp_path / "arena.jsonl"
    row = {"id": "a", "prompt": "p", "response_a": "x", "response_b": "y", "winner": "model_a"}
    f.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=r"are read by hf:"):
        load(f"jsonl:{f}")
    assert load(f"hf:{f}")[0].label == 1  # and hf reads it


def test_builtin_bad_name_and_seed() -> None:
    with pytest.raises(DataError, match="unknown built-in dataset"):
        load("builtin:nope")
    with pytest.raises(DataError, match="parameter 'seed': expected an integer"):
        load("builtin:facts?seed=x")


# ---- the replay provider ------------------------------------------------------------------------

WIDE = ("subset,idx,judge,strategy,sample,label,winner_original_order,winner_swapped_order\n"
        "S,0,J1,V,0,1,1,1\nS,1,J1,V,0,2,2,\nS,2,J1,V,0,1,0,2\nS,0,J2,V,0,1,2,1\n")
LONG = [{"item_id": "x", "judge": "J1", "order": "12", "verdict": "A", "raw": "Output (a)"},
        {"item_id": "x", "judge": "J1", "order": "21", "verdict": 1, "raw": "1"},
        {"item_id": "y", "judge": "J1", "order": "12", "verdict": "tie", "raw": "tie"},
        {"item_id": "y", "judge": "J1", "order": "21", "verdict": "B", "raw": "B"}]


def _replay_file(tmp_path: Path, layout: str, data: str | bytes | None = None) -> Path:
    f = tmp_path / ("v.csv" if layout == "csv" else "v.jsonl")
    if data is None:
        data = WIDE if layout == "csv" else _jsonl(LONG)
    f.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return f


def replay_error(f: Path, params: dict[str, str] | None = None, line: int | None = None,
                 field: str | None = None) -> str:
    with pytest.raises(ReplayFileError) as e:
        ReplayProvider(str(f), {"judge": "J1"} if params is None else params)
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert msg.startswith("replay file ") and f.name in msg, msg
    if line is not None:
        assert f"{f.name}:{line}: " in msg, msg
    if field is not None:
        assert f"'{field}'" in msg, msg
    return msg


@pytest.mark.parametrize("layout", ["csv", "jsonl"])
@pytest.mark.parametrize("case", ["bom", "crlf", "separators"])
def test_replay_loads_the_same(tmp_path: Path, layout: str, case: str) -> None:
    f = _replay_file(tmp_path, layout)
    before = ReplayProvider(str(f), {"judge": "J1"}).index.verdicts
    data = f.read_bytes()
    g = tmp_path / f"{case}{f.suffix}"
    if case == "bom":
        g.write_bytes(b"\xef\xbb\xbf" + data)
    elif case == "crlf":
        g.write_bytes(data.replace(b"\n", b"\r\n"))
    elif layout == "csv":  # a quoted cell holding separators and a newline, another judge
        g.write_text(WIDE + '"a\u2028b\u2029c\u0085d\ne",9,J9,V,0,1,1,2\n', encoding="utf-8")
    else:
        rows = [dict(r, raw=r["raw"] + "\u2028\u2029\u0085") for r in LONG]
        g.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                     encoding="utf-8")
        assert "\u2028".encode() in g.read_bytes()
    assert ReplayProvider(str(g), {"judge": "J1"}).index.verdicts == before


def test_replay_empty_files(tmp_path: Path) -> None:
    for layout in ("csv", "jsonl"):
        assert "empty file" in replay_error(_replay_file(tmp_path, layout, b""))
        assert "empty file" in replay_error(_replay_file(tmp_path, layout, b"\n \r\n"))
    header_only = _replay_file(tmp_path, "csv", WIDE.split("\n")[0] + "\n")
    assert "no rows after the header" in replay_error(header_only)


def test_replay_malformed_records(tmp_path: Path) -> None:
    lines = WIDE.split("\n")
    f = _replay_file(tmp_path, "csv", "\n".join(lines[:2] + ["S,1,J1,V,0,2,2"] + lines[3:]))
    assert "7 fields, fewer than the header's 8" in replay_error(f, line=3)
    f = _replay_file(tmp_path, "csv", WIDE + "S,3,J1,V,0,1,1,1,extra\n")
    assert "9 fields, more than the header's 8" in replay_error(f, line=6)
    f = _replay_file(tmp_path, "jsonl", _jsonl(LONG[:1]) + '{"item_id": "x", \n')
    assert "not valid JSON" in replay_error(f, line=2)
    f = _replay_file(tmp_path, "jsonl", _jsonl(LONG[:2]) + "[1, 2]\n")
    assert "expected a JSON object per line, got a list" in replay_error(f, line=3)
    deep = "[" * 100_000 + "]" * 100_000
    f = _replay_file(tmp_path, "jsonl", _jsonl(LONG[:1]) + f'{{"item_id": "z", "raw": {deep}}}\n')
    assert "nested too deeply" in replay_error(f, line=2)
    # an unclosed quote would swallow every row after it: refused where the record starts
    f = _replay_file(tmp_path, "csv", 'item_id,order,verdict\nx,12,A\ny,12,"B\nz,12,A\n')
    assert "malformed CSV in the record starting on this line: unexpected end of data" in \
        replay_error(f, {}, line=3)


def test_replay_columns(tmp_path: Path) -> None:
    f = _replay_file(tmp_path, "csv", "item_id,judge,winner_original_order\nx,J1,1\n")
    msg = replay_error(f)
    assert "no verdict columns (has winner_original_order without its partner)" in msg
    assert "(columns: item_id, judge, winner_original_order)" in msg
    f = _replay_file(tmp_path, "csv", "id,judge,order,verdict\nx,J1,12,A\n")
    assert "no item key column; expected item_id, or subset and idx (columns: id," in \
        replay_error(f)
    f = _replay_file(tmp_path, "csv")
    msg = replay_error(f, {"jduge": "J1"})
    assert "parameter 'jduge' is neither an option" in msg and "did you mean 'judge'" in msg
    assert "(columns: subset, idx, judge, strategy, sample, label, " in msg
    f = _replay_file(tmp_path, "csv", "item_id,judge,judge,order,verdict\nx,J1,J1,12,A\n")
    assert "column(s) 'judge' appear more than once" in replay_error(f, line=1)


def test_replay_missing_field_and_wrong_types(tmp_path: Path) -> None:
    f = _replay_file(tmp_path, "jsonl", _jsonl([LONG[0], {k: v for k, v in LONG[1].items()
                                                          if k != "item_id"}]))
    replay_error(f, line=2, field="item_id")
    f = _replay_file(tmp_path, "csv", WIDE.replace("S,1,J1", ",1,J1"))
    replay_error(f, line=3, field="subset")
    for key, val in (("verdict", ["A"]), ("order", {"o": 12}), ("item_id", True)):
        f = _replay_file(tmp_path, "jsonl", _jsonl([LONG[0], dict(LONG[1], **{key: val})]))
        assert "expected text or a number" in replay_error(f, line=2, field=key)
    f = _replay_file(tmp_path, "jsonl", _jsonl([LONG[0], dict(LONG[1], order="ab")]))
    assert "expected 12 (response_1 shown first) or 21" in replay_error(f, line=2, field="order")
    f = _replay_file(tmp_path, "csv", WIDE.replace("S,0,J1,V,0,1", "S,0,J1,V,x,1"))
    assert "expected an integer, got 'x'" in replay_error(f, line=2, field="sample")


def test_replay_unreadable_verdicts_say_what_is_accepted(tmp_path: Path) -> None:
    f = _replay_file(tmp_path, "csv", WIDE.replace("S,2,J1,V,0,1,0,2", "S,2,J1,V,0,1,0,A"))
    msg = replay_error(f, line=4, field="winner_swapped_order")
    assert "expected 1 or 2 (the winning output in original numbering), 0 or tie, or empty" in msg
    assert "got 'A'" in msg
    f = _replay_file(tmp_path, "jsonl", _jsonl([LONG[0], dict(LONG[1], verdict=3)]))
    msg = replay_error(f, line=2, field="verdict")
    assert "expected A or B (presented labels), 1 or 2 (original numbering)" in msg
    # free text stays a verdict the judge parses (and may count as invalid)
    f = _replay_file(tmp_path, "jsonl", _jsonl([LONG[0], dict(LONG[1], verdict="Output (b)")]))
    assert ReplayProvider(str(f), {}).index.verdicts["x", "21"] == "Output (b)"


@pytest.mark.parametrize("layout", ["csv", "jsonl"])
def test_replay_non_utf8_names_line_3(tmp_path: Path, layout: str) -> None:
    f = _replay_file(tmp_path, layout)
    lines = f.read_bytes().split(b"\n")
    lines[2] = lines[2][:4] + b"\xff\xfe" + lines[2][4:]
    f.write_bytes(b"\n".join(lines))
    msg = replay_error(f, line=3)
    assert "not valid UTF-8 (byte 0xff at column 5); save the file as UTF-8" in msg


def test_replay_duplicates_name_both_lines(tmp_path: Path) -> None:
    f = _replay_file(tmp_path, "csv", WIDE + "S,1,J1,V,0,2,2,\n")
    msg = replay_error(f, line=6)
    assert "lines 3 and 6 record the same verdict twice for item 'S:1' (sample 0)" in msg
    f = _replay_file(tmp_path, "jsonl", _jsonl([*LONG, dict(LONG[1], verdict="B")]))
    msg = replay_error(f, line=5)
    assert "lines 2 and 5 record different verdicts for item 'x' order 21" in msg
    # a higher sample supersedes; a repeat of a superseded sample is still a repeat
    f = _replay_file(tmp_path, "csv", WIDE + "S,1,J1,V,1,2,1,1\nS,1,J1,V,0,2,2,\n")
    replay_error(f, line=7)


def test_replay_directory_missing_file_and_filters_matching_nothing(tmp_path: Path) -> None:
    for odd in ("~nobody-judgeaudit-test/v.csv", "/tmp/" + "x" * 300 + ".csv"):
        with pytest.raises(ReplayFileError, match="cannot use this path"):
            ReplayProvider(odd, {})
    (tmp_path / "d.csv").mkdir()
    assert "is a directory" in replay_error(tmp_path / "d.csv")
    assert "no such file" in replay_error(tmp_path / "nope.csv")
    f = _replay_file(tmp_path, "csv")
    msg = replay_error(f, {"judge": "J01"})
    assert "parameter judge='J01': no row has this value (column 'judge' has 'J1', 'J2')" in msg
    assert "did you mean judge=J1" in msg
    assert "no row matches judge=J2, strategy=V, idx=1 together" in replay_error(
        f, {"judge": "J2", "strategy": "V", "idx": "1"})


@pytest.mark.parametrize("kind", ["jsonl", "hf"])
def test_a_jsonl_record_giving_a_field_twice_is_refused(kind: str, tmp_path: Path) -> None:
    """JSON Lines kept the last of two "label"s silently (a .json file refused it)."""
    f = tmp_path / "dup.jsonl"
    f.write_text('{"id": "a", "prompt": "p", "response_1": "x", "response_2": "y", '
                 '"label": 1}\n{"id": "b", "prompt": "p", "response_1": "x", '
                 '"response_2": "y", "label": 1, "label": 2}\n')
    with pytest.raises(DataError, match=r"dup.jsonl:2: field 'label' appears twice in one "
                                        r"object; JSON readers would silently keep"):
        load(f"{kind}:{f}")


@pytest.mark.parametrize("given", ["csv:data/t.csv", "json:data/t.json"])
def test_a_format_given_as_the_kind_names_the_spec_to_give(given: str) -> None:
    """`csv:t.csv` said "give hf:csv:t.csv", which does not load either."""
    with pytest.raises(ValueError, match=re.escape(f"give hf:{given.partition(':')[2]} (a")):
        load(given)


def test_jsonl_with_old_mac_line_ends_loads(tmp_path: Path) -> None:
    """CR-only line ends (CSV took them; JSON Lines said "Extra data")."""
    f = tmp_path / "cr.jsonl"
    f.write_text("\r".join(json.dumps({"id": f"i{i}", "prompt": "p", "response_1": "x",
                                       "response_2": "y", "label": 1}) for i in range(3))
                 + "\r", newline="")
    assert [it.id for it in load(f"jsonl:{f}")] == ["i0", "i1", "i2"]


def test_an_unknown_data_kind_names_the_spec_with_or_without_a_colon() -> None:
    for spec, kind in (("nope", "nope"), ("nope:thing", "nope")):
        with pytest.raises(ValueError, match=f"^data {spec!r}: unknown data kind {kind!r}; "):
            load(spec)
