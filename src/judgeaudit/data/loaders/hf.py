"""`hf:NAME` — tabular preference data: a Hugging Face hub dataset, or a local
.jsonl/.json/.csv/.tsv/.parquet file read with the same column mapping (CSV: comma, semicolon
or tab separated; a .gz, .bz2 or .xz of one: `judgeaudit.textfile`).

A local file needs no `datasets` package (json and csv from the standard library; parquet
needs pyarrow). A hub name (`hf:org/dataset?split=test&config=x`) imports `datasets` lazily.

Column mapping: params `prompt=COL`, `response_1=COL`, `response_2=COL`, `label=COL`,
`id=COL` (pointwise: `response=COL`, `score=COL`). Without them the first present of:
- prompt: prompt, question, instruction, input, query
- response_1 / response_2: response_1/response_2, response_a/response_b,
  response_A/response_B, output_1/output_2, answer1/answer2, answer_1/answer_2
- label: label, winner, preference
- otherwise `chosen`/`rejected`: chosen is the better answer. Because it would always come
  first, the pairs are presented in a seeded random order (`seed`, default 0; exactly half
  swapped; `shuffle=0` keeps chosen first). A message list ([{role, content}, ...]) is
  reduced to its last assistant message.
- pointwise (no pair columns): response + optional score (or rating).
Label values: 1/2/0 (also as text), "A"/"B"/"tie", "model_a"/"model_b"/"tie*",
"A>B"/"B>A"/"A=B". Ids from the `id` column when present, else `hf:<name>:<row>`.

Records of a JSON file need not all have the same fields: the columns are those of any record
(in the order first seen), and a record without a column reads as a missing value there (an
unlabelled pair, an item without a gold score; a missing prompt or response is refused). Ids
are all or nothing: when some rows have one, a row without one (absent, null or an empty
cell) is refused, naming its line, unless `ids=auto` names such rows `hf:<name>:<row>`. A
response must not be empty (in a CSV an empty cell is a missing value, as an empty label is).

A NAME that looks like a path (starts with ./, ../, / or ~, has a file extension, or holds a
path separator other than the one of org/name) is a local file: when it is absent that is
said, not taken for a hub dataset.
The hub path is not exercised by the tests (no network here).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judgeaudit.data.loaders._common import (
    UniqueIds,
    balanced_swaps,
    check_params,
    choice_param,
    explain_validation,
    int_param,
    present,
    read_json_doc,
    read_jsonl,
    read_text,
)
from judgeaudit.data.registry import DataError, left_out, register_loader
from judgeaudit.data.schema import Item, PairwiseItem, PointwiseItem
from judgeaudit.textfile import TextProblem, data_suffix, read_csv

LOCAL_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".parquet")
DEFAULTS: dict[str, tuple[str, ...]] = {
    "prompt": ("prompt", "question", "instruction", "input", "query"),
    "response_1": ("response_1", "response_a", "response_A", "output_1", "answer1", "answer_1"),
    "response_2": ("response_2", "response_b", "response_B", "output_2", "answer2", "answer_2"),
    "label": ("label", "winner", "preference"),
    "response": ("response", "output", "answer", "completion"),
    "score": ("score", "rating"),
    "id": ("id",),
}
MAPPED = frozenset(DEFAULTS) | {"chosen", "rejected"}
_LABELS: dict[str, int] = {
    "1": 1, "2": 2, "0": 0, "a": 1, "b": 2, "tie": 0, "model_a": 1, "model_b": 2,
    "tie (bothbad)": 0, "a>b": 1, "b>a": 2, "a=b": 0, "response_1": 1, "response_2": 2,
}


def parse_label(v: Any) -> int | None:
    """A label value in any of the accepted spellings -> 1, 2, 0; None if empty."""
    if v is None or v == "":
        return None
    if isinstance(v, bool):
        raise ValueError(f"expected 1, 2, 0, A, B or tie, got {v!r}")
    if isinstance(v, (int, float)) and v in (0, 1, 2):
        return int(v)
    if isinstance(v, str) and v.strip().lower() in _LABELS:
        return _LABELS[v.strip().lower()]
    if isinstance(v, str) and v.strip() in ("0.0", "1.0", "2.0"):  # a CSV pandas wrote (an
        return int(float(v))  # integer column with a gap becomes float), as JSON's 1.0 is
    raise ValueError(f"expected 1, 2, 0, A, B or tie, got {v!r}")


def as_text(v: Any) -> Any:
    """Chat-format values ([{role, content}, ...]) -> the last assistant message."""
    if isinstance(v, list) and v and all(isinstance(m, dict) and "content" in m for m in v):
        assistant = [m for m in v if m.get("role") == "assistant"]
        return (assistant or v)[-1]["content"]
    return v


Rows = list[tuple[str | int, dict[str, Any]]]  # (line number or "row N" / record, row)


def _read_local(path: Path, split: str | None) -> Rows:
    suf = data_suffix(path)
    src = str(path)
    if suf == ".jsonl":
        return list(read_jsonl(path, "rename it to .json (hf: reads a .json file as one "
                                     "JSON document)"))
    if suf == ".json":
        doc = read_json_doc(path, depth=3)
        data, at = doc.data, ()
        if isinstance(data, dict):  # {"train": [...], "test": [...]} or {"data": [...]}
            keys = [split] if split else ["data", "rows", "train", "test"]
            for key in keys:
                if isinstance(data.get(key), list):
                    data, at = data[key], (key,)
                    break
            else:
                if split:
                    raise DataError(src, None, f"no list under split {split!r}; keys: "
                                    f"{', '.join(map(str, data))}")
        if not isinstance(data, list):
            raise DataError(src, None, f"expected a JSON list of objects, got "
                            f"{type(data).__name__}")
        out: Rows = []
        for i, row in enumerate(data):
            where = doc.where(*at, i)
            if not isinstance(row, dict):
                raise DataError(src, where, f"expected an object, got {type(row).__name__}")
            out.append((where, row))
        return out
    if suf in (".csv", ".tsv"):
        return _read_csv(path)
    if suf == ".parquet":
        try:
            pq = importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise DataError(src, None, "reading parquet needs pyarrow: pip install "
                            "pyarrow (or convert the file to .jsonl/.csv)") from None
        try:
            table = pq.read_table(path)
        except Exception as e:  # pyarrow raises its own kinds (ArrowInvalid, OSError, ...)
            raise DataError(src, None, f"not a readable parquet file: {e}") from None
        return [(f"row {i + 1}", r) for i, r in enumerate(table.to_pylist())]
    raise DataError(src, None, f"unsupported file type {suf!r}; expected one of "
                    f"{', '.join(LOCAL_SUFFIXES)}")


def _read_csv(path: Path) -> Rows:
    """CSV rows keyed by the header, each with the line it starts on (`textfile.read_csv`:
    comma, semicolon or tab separated, every row checked against the header). Rows whose
    every cell is empty are skipped and said in the run's notes: a spreadsheet saved as CSV
    ends in such rows (";;;;"), and they made the whole file unloadable ("field 'id' ...
    empty")."""
    try:
        rows = read_csv(read_text(path))[1]
    except TextProblem as e:
        raise DataError(str(path), e.line, e.problem) from None
    kept = [(line, rec) for line, rec in rows if not _all_empty(rec)]
    empty = [int(line) for line, rec in rows if _all_empty(rec)]
    if empty and not kept:
        raise DataError(str(path), None, f"no rows with a value after the header line: its "
                        f"{len(empty)} row(s) have every cell empty")
    if empty:
        left_out(f"{path.name}: {len(empty)} empty row{'s' if len(empty) > 1 else ''} skipped "
                 f"({_lines_text(empty)}): every cell empty, as a spreadsheet's trailing rows")
    return kept


def _all_empty(rec: dict[str, Any]) -> bool:
    """Every cell of a CSV row empty or spaces only (";;;;" from a spreadsheet)."""
    return all(not (v or "").strip() for v in rec.values())


def _lines_text(lines: list[int]) -> str:
    """"line 7", "lines 31-33", "lines 4, 31-33": runs of consecutive lines joined."""
    runs: list[list[int]] = []
    for n in sorted(lines):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in runs]
    return ("line " if len(lines) == 1 else "lines ") + ", ".join(parts)


def _read_hub(name: str, params: dict[str, str]) -> Rows:
    try:
        datasets = importlib.import_module("datasets")
    except ImportError:
        raise DataError(f"hf:{name}", None, "loading a hub dataset needs the `datasets` "
                        "package: pip install datasets (or give a local .jsonl/.json/.csv/"
                        ".parquet file)") from None
    split = params.get("split") or "train"
    try:
        ds = datasets.load_dataset(name, params.get("config") or None, split=split)
    except Exception as e:  # the hub raises many kinds; report which dataset and why
        raise DataError(f"hf:{name}", None, f"load_dataset failed: {e}") from None
    return [(f"row {i + 1}", dict(r)) for i, r in enumerate(ds)]


def _pick(role: str, params: dict[str, str], columns: Iterable[str], src: str) -> str | None:
    cols = list(columns)
    if role in params:
        if params[role] not in cols:
            raise DataError(src, None, f"column {params[role]!r} (for {role}) not found; "
                            f"columns: {', '.join(cols)}")
        return params[role]
    return next((c for c in DEFAULTS.get(role, (role,)) if c in cols), None)


def columns_of(rows: Rows) -> list[str]:
    """The columns of any row, in the order first seen: a JSON file's records need not share
    their fields, and the first record alone (one without a label) hid the column from all
    the others (their labels were dropped, or `label=winner` was "not found")."""
    return list(dict.fromkeys(c for _, row in rows for c in row))


def _blank(v: Any) -> bool:
    """No value: absent, null, or empty (a CSV's empty cell, or one of spaces only)."""
    return v is None or (isinstance(v, str) and not v.strip())


def _ids(rows: Rows, column: str | None, params: dict[str, str], tag: str,
         src: str) -> list[str]:
    """Each row's id: from `column`; every row its generated `hf:<tag>:<i>` when no row has
    one. When some rows have one, a row without one is refused (it was silently named
    `hf:<tag>:<i>`, and when the first row had none so were all the others, their own ids
    dropped), unless `ids=auto` names just those rows."""
    auto = [f"hf:{tag}:{i}" for i in range(len(rows))]
    if column is None:
        return auto
    given = [row.get(column) for _, row in rows]
    for (where, _), ident in zip(rows, given, strict=True):
        if isinstance(ident, bool) or not isinstance(ident, str | int | float | None):
            raise DataError(src, where, f"field {column!r} (the id): expected text or a "
                            f"number, got {type(ident).__name__}")
    n_with = sum(not _blank(v) for v in given)
    if n_with == 0:
        if any(column in row for _, row in rows):  # the column is there, every cell empty
            left_out(f"hf {src}: column {column!r} (the id) is empty in every row; the items "
                     f"are named hf:{tag}:<row> (0-based)")
        return auto
    if n_with < len(rows) and params.get("ids", "required") != "auto":
        i = next(i for i, v in enumerate(given) if _blank(v))
        where, row = rows[i]
        what = ("missing" if column not in row else "null" if given[i] is None
                else "empty; ids must not be empty")
        raise DataError(src, where, f"field {column!r} (the id): {what} ({n_with} of "
                        f"{len(rows)} rows have an id, {len(rows) - n_with} not); give every "
                        f"row an id, or load with ?ids=auto to name the rows without one "
                        f"hf:{tag}:<row>")
    return [a if _blank(v) else str(v) for v, a in zip(given, auto, strict=True)]


def to_items(rows: Rows, params: dict[str, str], tag: str, src: str, seed: int) -> list[Item]:
    """Items from (where, row) pairs; `where` (a line number, "row N") locates errors."""
    if not rows:
        return []
    columns = columns_of(rows)
    col = {r: _pick(r, params, columns, src) for r in DEFAULTS}
    if "chosen" in params or "rejected" in params:
        chosen = _pick("chosen", params, columns, src)
        rejected = _pick("rejected", params, columns, src)
    else:
        chosen = "chosen" if "chosen" in columns else None
        rejected = "rejected" if "rejected" in columns else None
    pair = col["response_1"] and col["response_2"]
    pref = not pair and chosen and rejected
    point = not pair and not pref and col["response"]
    if col["prompt"] is None:
        raise DataError(src, None, f"no prompt column (none of {', '.join(DEFAULTS['prompt'])}); "
                        f"give prompt=COLUMN (columns: {', '.join(columns)})")
    if not (pair or pref or point):
        raise DataError(src, None, "no response columns; give response_1=COL&response_2=COL "
                        f"(or chosen/rejected, or response) (columns: {', '.join(columns)})")
    shuffle = params.get("shuffle", "1") not in ("0", "false", "no")
    swaps = balanced_swaps(len(rows), seed, f"hf:{tag}") if pref and shuffle else None
    texts: dict[str, str] = {"prompt": col["prompt"]}
    if pair:
        texts.update(response_1=col["response_1"], response_2=col["response_2"])
    elif pref:
        texts.update(chosen=chosen, rejected=rejected)
    else:
        texts["response"] = col["response"]
    items: list[Item] = []
    ids = UniqueIds()
    row_ids = _ids(rows, col["id"], params, tag, src)
    for i, (where, row) in enumerate(rows):
        text = {role: _text_value(row, c, role, src, where) for role, c in texts.items()}
        data: dict[str, Any] = {
            "id": row_ids[i],
            "prompt": text["prompt"],
            "metadata": {"source": "hf", "dataset": tag, "row": i},
        }
        try:
            if pair:
                data["response_1"] = text["response_1"]
                data["response_2"] = text["response_2"]
                if col["label"]:
                    data["label"] = parse_label(row.get(col["label"]))
            elif pref:
                swap = bool(swaps and swaps[i])
                r1, r2, label = present(text["chosen"], text["rejected"], swap)
                data.update(response_1=r1, response_2=r2, label=label)
                data["metadata"]["swapped"] = swap
            else:
                data["response"] = text["response"]
                score = row.get(col["score"]) if col["score"] else None
                if score not in (None, ""):
                    if isinstance(score, bool) or not isinstance(score, str | int | float):
                        raise ValueError(f"expected a number, got {type(score).__name__}")
                    if isinstance(score, str) and not score.isascii():
                        # float() reads "५" as 5.0; a JSONL file's "५" is refused (the schema)
                        raise ValueError(f"expected a number in ASCII digits, got {score!r}")
                    try:
                        data["score"] = float(score)
                    except ValueError:
                        raise ValueError(f"expected a number, got {score!r}") from None
        except ValueError as e:
            field = "score" if point else "label"
            raise DataError(src, where, f"field {field!r} (column "
                            f"{col[field]!r}): {e}") from None
        model = PairwiseItem if (pair or pref) else PointwiseItem
        try:
            items.append(model.model_validate(data))
        except ValidationError as e:
            raise DataError(src, where, explain_validation(e, model)) from None
        ids.add(items[-1].id, src, where, col["id"] or "id")
    return items


def _text_value(row: dict[str, Any], column: str, role: str, src: str,
                where: str | int) -> str:
    """The text of `column` in a row (a chat message list reduced to its last assistant
    message); a missing or non-text value is a DataError naming the field and the column."""
    name = f"field {role!r}" + (f" (column {column!r})" if column != role else "")
    if column not in row:
        raise DataError(src, where, f"{name}: missing (required)")
    val = as_text(row[column])
    if not isinstance(val, str):
        got = "null" if val is None else type(val).__name__
        raise DataError(src, where, f"{name}: expected text, got {got}")
    if role != "prompt" and not val.strip():
        # an empty CSV cell is how a missing value is written (an empty label reads as
        # none); it was judged as an empty answer
        raise DataError(src, where, f"{name}: empty; a response must not be empty (a pair "
                        "with a missing answer says nothing about the judge)")
    return val


# a file's extension (the last suffix, lower case): a NAME ending so is a path, whatever else
_FILE_SUFFIXES = frozenset(LOCAL_SUFFIXES) | {
    ".txt", ".gz", ".bz2", ".xz", ".zip", ".zst", ".tar", ".ndjson", ".xls", ".xlsx",
    ".arrow", ".feather", ".md", ".html", ".yaml", ".yml", ".toml"}


def looks_like_path(name: str) -> bool:
    """A NAME that is a file path, not a hub dataset id (`org/name`, or a bare `name`):
    it starts with ./, ../, /, ~ (or .\\, ..\\), holds a backslash or more than one "/",
    or ends in a file extension (`nope.txt`, `org/x.csv`; a bare name with any alphabetic
    extension). An absent one said the `datasets` package was needed."""
    n = name.strip()
    if n in (".", "..") or n.startswith(("./", "../", "/", "~", ".\\", "..\\")):
        return True
    if "\\" in n or n.count("/") > 1 or n.endswith("/"):
        return True
    suffix = Path(n).suffix.lower()
    return suffix in _FILE_SUFFIXES or ("/" not in n and suffix[1:].isalpha())


@register_loader("hf")
def load_hf(name: str, params: dict[str, str]) -> list[Item]:
    if not name:
        raise DataError("hf", None, "no dataset given; expected hf:ORG/NAME or hf:FILE")
    check_params(f"hf:{name}", params, MAPPED | {"split", "config", "shuffle", "ids"})
    choice_param(f"hf:{name}", params, "ids", ("required", "auto"), "required")
    seed = int_param(f"hf:{name}", params, "seed", 0)
    try:
        path = Path(name).expanduser()
        path.exists()
    except (OSError, RuntimeError, ValueError) as e:  # "~nobody/x", a NUL byte, EACCES, ...
        raise DataError(name, None, f"cannot use this path: {e}") from None
    if path.is_dir():
        raise DataError(str(path), None, "is a directory; expected a .jsonl, .json, .csv or "
                        ".parquet file, or a hub dataset name (org/name)")
    if data_suffix(path) in LOCAL_SUFFIXES or path.exists() or looks_like_path(name):
        if not path.is_file():
            kinds = "" if data_suffix(path) in LOCAL_SUFFIXES else (
                f" (hf: reads {', '.join(LOCAL_SUFFIXES)} files, or a hub dataset org/name)")
            shown = str(path) if name.startswith("~") else name  # "./nope" as given
            raise DataError(shown, None, f"no such file{kinds}")
        rows, tag = _read_local(path, params.get("split") or None), path.stem
        src = str(path)
        if not rows:
            raise DataError(src, None, "no rows (the file is empty)")
    else:
        rows, tag = _read_hub(name, params), name
        src = f"hf:{name}"
        if not rows:
            raise DataError(src, None, f"no rows in split {params.get('split') or 'train'!r}")
    return to_items(rows, params, tag, src, seed)
