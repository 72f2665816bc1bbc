"""Verdict file formats for the `replay` provider.

Reading a file gives a `Table` (records with their line numbers: CSV cells as text, JSON
values as they are). Each format is one small pure function from the table (and, for some,
companion data) to `Row`s of the one internal table: an item key, verdicts by presentation
order ("12" = response_1 shown first, "21" = response_2 first) as the presented label the
judge gave ("A" = the response shown first, "B", "tie", "" = unparseable, or raw text the
judge layer parses), an optional pointwise score, and the record's sample number. Formats are
registered by name in `FORMATS`; `sniff` picks one from a file's fields.

Item keys are data item ids, or, for records matched by content (`alpaca_eval`, `fastchat`
with answer texts), a text key `text:<hash>` of (prompt, response shown first, response shown
second) under order "12": the provider finds those from the texts a request shows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgeaudit.textfile import (
    KeyTwice,
    NotFinite,
    TextProblem,
    data_suffix,
    decode_text,
    read_csv,
    strict_json,
)

WIDE = ("winner_original_order", "winner_swapped_order")
LONG = ("order", "verdict")
ORDERS = ("12", "21")
# Columns that carry values, not the identity of the run that produced them.
VALUE_COLUMNS = frozenset(
    {*WIDE, *LONG, "score", "score_1", "score_2", "label", "sample", "item_id", "subset", "idx",
     # free text that differs from record to record without naming a different run
     "completion", "completions", "raw", "raw_output", "output", "model_output", "explanation",
     "rationale", "reasoning", "text", "prompt", "input", "instruction", "output_1", "output_2",
     "response_1", "response_2", "timestamp"}
)
_TIE = {"0", "tie", "TIE", "Tie"}
# Columns whose values are read as keys or verdicts: a JSON list, object or true/false there
# is an error, not text.
SCALAR_COLUMNS = frozenset({*WIDE, *LONG, "score", "sample", "item_id", "subset", "idx"})
TEXT_PREFIX = "text:"

Record = dict[str, Any]


class ReplayFileError(ValueError):
    """Bad replay input. The message has the shape of the data loaders' DataError (llm does
    not import data): "replay file FILE:LINE: what was expected, what came"."""

    def __init__(self, source: str, where: int | None, problem: str):
        loc = source if where is None else f"{source}:{where}"
        super().__init__(f"replay file {loc}: {problem}")
        self.source, self.where, self.problem = source, where, problem


# ---- reading ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Table:
    """One read file: `kind` csv | jsonl | json; records as (line number, record)."""

    src: str
    kind: str
    columns: tuple[str, ...]
    records: tuple[tuple[int, Record], ...]

    def where(self, records: tuple[tuple[int, Record], ...]) -> Table:
        return Table(self.src, self.kind, self.columns, records)


def decode(src: str, data: bytes) -> str:
    """The file's text (`textfile.decode_text`: decompressed, UTF-8, a leading BOM
    dropped); bad bytes are named by line and column."""
    try:
        return decode_text(data)
    except TextProblem as e:
        raise ReplayFileError(src, e.line, e.problem) from None


def read_table(src: str, path: Path, data: bytes) -> Table:
    """A verdict file's records. JSON Lines (.jsonl/.ndjson, or text starting with "{"), one
    JSON document holding a list of records (.json, or text starting with "["), else CSV."""
    text = decode(src, data)
    suffix = data_suffix(path)
    head = text.lstrip()[:1]
    if suffix == ".csv":
        kind = "csv"
    elif suffix in {".jsonl", ".ndjson"}:
        kind = "jsonl"
    elif head == "[" or (suffix == ".json" and head == "{" and _one_document(text)):
        kind = "json"
    elif head == "{" or suffix == ".json":
        kind = "jsonl"
    else:
        kind = "csv"
    if not text.strip():
        expected = {"jsonl": "one JSON object per line", "json": "a JSON list of records",
                    "csv": "a CSV header line"}[kind]
        raise ReplayFileError(src, None, f"empty file; expected {expected}")
    if kind == "csv":
        try:
            columns, rows = read_csv(text)
        except TextProblem as e:
            raise ReplayFileError(src, e.line, e.problem) from None
    elif kind == "jsonl":
        columns, rows = _read_jsonl(src, text)
    else:
        columns, rows = _read_json_list(src, text)
    return Table(src, kind, tuple(columns), tuple(rows))


def _loads(src: str, text: str, lineno: int | None) -> Any:
    try:
        return strict_json(text)
    except KeyTwice as exc:
        raise ReplayFileError(src, lineno, f"field {exc.args[0]!r} appears twice in one "
                              "object; JSON readers would silently keep only the last") from None
    except json.JSONDecodeError as exc:
        raise ReplayFileError(src, exc.lineno if lineno is None else lineno,
                              f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ReplayFileError(src, lineno, "JSON nested too deeply") from None
    except NotFinite as exc:
        raise ReplayFileError(src, lineno, f"{exc.args[0]} is not valid JSON (a number must "
                              "be finite; write null for a missing value)") from None


def _one_document(text: str) -> bool:
    """Whether a .json text starting with "{" is one (pretty-printed) object, not JSONL."""
    try:
        json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def _read_jsonl(src: str, text: str) -> tuple[list[str], list[tuple[int, Record]]]:
    rows: list[tuple[int, Record]] = []
    columns: dict[str, None] = {}
    # Lines end at "\n" only: U+2028, U+2029 and U+0085 may stand inside a JSON string.
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        obj = _loads(src, line, lineno)
        if not isinstance(obj, dict):
            raise ReplayFileError(src, lineno, f"expected a JSON object per line, got "
                                  f"{kind_of(obj)}")
        columns.update(dict.fromkeys(obj))
        rows.append((lineno, obj))
    return list(columns), rows


def _read_json_list(src: str, text: str) -> tuple[list[str], list[tuple[int, Record]]]:
    """A JSON document: a list of objects (each named by the line it starts on), or one
    object (a single record)."""
    data = _loads(src, text, None)
    if isinstance(data, dict):
        return list(data), [(text[:len(text) - len(text.lstrip())].count("\n") + 1, data)]
    if not isinstance(data, list):
        raise ReplayFileError(src, None, f"expected a JSON list of records, got {kind_of(data)}")
    lines = _element_lines(text, len(data))
    rows: list[tuple[int, Record]] = []
    columns: dict[str, None] = {}
    for i, obj in enumerate(data):
        if not isinstance(obj, dict):
            raise ReplayFileError(src, lines[i], f"record {i}: expected a JSON object, got "
                                  f"{kind_of(obj)}")
        columns.update(dict.fromkeys(obj))
        rows.append((lines[i], obj))
    return list(columns), rows


def _element_lines(text: str, n: int) -> list[int]:
    """The line each top-level list element starts on (the text is known to parse)."""
    dec = json.JSONDecoder()
    lines: list[int] = []
    pos, line = 0, 1

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    i = skip(0) + 1  # past "["
    try:
        for _ in range(n):
            i = skip(i)
            line += text.count("\n", pos, i)
            pos = i
            lines.append(line)
            i = skip(dec.raw_decode(text, i)[1])
            if i < len(text) and text[i] == ",":
                i += 1
    except (ValueError, RecursionError):  # best effort: the document itself parsed
        lines += [lines[-1] if lines else 1] * (n - len(lines))
    return lines


def kind_of(v: Any) -> str:
    """A JSON value's kind for messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "text"}.get(type(v), "a number")


def text_of(v: Any) -> str:
    """A value as the text a CSV cell would hold (1 and 1.0 both -> "1")."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, int | float):
        return str(v)
    return json.dumps(v, ensure_ascii=False)


def text_key(prompt: str, first: str, second: str) -> str:
    """The key of records matched by content: (prompt, response shown first, shown second),
    each with CRLF read as LF and surrounding whitespace dropped."""
    parts = [s.replace("\r\n", "\n").strip() for s in (prompt, first, second)]
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()
    return TEXT_PREFIX + digest[:24]


# ---- the internal table ---------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One record of the internal table. `verdicts`: (order, presented verdict) pairs;
    `recorded`: the values as written (tells a repeated record from a conflicting one);
    `label`: what a text key stands for (shown by replay-check)."""

    src: str
    line: int
    item: str
    verdicts: tuple[tuple[str, str], ...] = ()
    score: str | None = None
    sample: int = 0
    recorded: tuple[str, ...] = ()
    label: str = ""
    record: Record = field(default_factory=dict, compare=False, repr=False)


@dataclass
class Inputs:
    """What a format's parser reads: the filtered records of the file (and of the second
    file for `two_files`), the format's options, and for `fastchat` the question and answer
    texts (question_id -> turns; (question_id, model) -> turns)."""

    main: Table
    options: dict[str, str] = field(default_factory=dict)
    second: Table | None = None
    questions: dict[str, list[str]] = field(default_factory=dict)
    answers: dict[tuple[str, str], list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Format:
    name: str
    parse: Callable[[Inputs], list[Row]]
    summary: str
    options: Mapping[str, str]
    values: frozenset[str]  # fields that carry values, not the identity of a run


FORMATS: dict[str, Format] = {}


def register_format(name: str, summary: str, options: Mapping[str, str] | None = None,
                    values: frozenset[str] | set[str] = frozenset()
                    ) -> Callable[[Callable[[Inputs], list[Row]]], Callable[[Inputs], list[Row]]]:
    def deco(fn: Callable[[Inputs], list[Row]]) -> Callable[[Inputs], list[Row]]:
        FORMATS[name] = Format(name, fn, summary, dict(options or {}), frozenset(values))
        return fn
    return deco


def formats_help() -> str:
    return "; ".join(f"{f.name} ({f.summary})" for f in FORMATS.values())


# ---- shared value rules -------------------------------------------------------------------

def item_id(src: str, lineno: int, row: Mapping[str, str]) -> str:
    if row.get("item_id"):
        return row["item_id"]
    if row.get("subset") and row.get("idx") not in (None, ""):
        return f"{row['subset']}:{row['idx']}"
    field_ = "item_id" if "item_id" in row or "subset" not in row else (
        "subset" if not row.get("subset") else "idx")
    raise ReplayFileError(src, lineno, f"field {field_!r}: empty or missing; every record "
                          "needs an item key (`item_id`, or `subset` and `idx`)")


def sample_of(src: str, lineno: int, rec: Record) -> int:
    s = text_of(rec.get("sample")).strip()
    if s == "":
        return 0
    try:
        return int(s)
    except ValueError:
        raise ReplayFileError(src, lineno, f"field 'sample': expected an integer, got "
                              f"{s!r}") from None


def original(src: str, lineno: int, column: str, value: str) -> str:
    """A wide-layout verdict (original output numbering) checked: "1", "2", "0", "" ."""
    v = value.strip()
    if v.lower() in {"tie", "0", "0.0"}:
        return "0"
    if v in {"", "1", "2"}:
        return v
    if v in {"1.0", "2.0"}:
        return v[0]
    raise ReplayFileError(src, lineno, f"field {column!r}: expected 1 or 2 (the winning output "
                          "in original numbering), 0 or tie, or empty (unparseable), got "
                          f"{value!r}")


def long_verdict(src: str, lineno: int, value: str, column: str = "verdict") -> str:
    """A long-layout verdict checked: a number must be 1, 2 (original numbering) or 0 (tie);
    A/B, tie, empty and free text are kept."""
    v = value.strip()
    if not v.isascii():  # "२": free text (float() would read it as 2)
        return value
    try:
        num = float(v)
    except ValueError:
        return value
    if num in (0, 1, 2):
        return str(int(num))
    raise ReplayFileError(src, lineno, f"field {column!r}: expected A or B (presented labels), "
                          f"1 or 2 (original numbering), 0 or tie, empty (unparseable) or the "
                          f"judge's raw text, got the number {value!r}")


def presented(orig: str, order: str) -> str:
    """A recorded verdict in original numbering -> the label presented in `order`."""
    v = orig.strip()
    if v == "":
        return ""
    if v in _TIE:
        return "tie"
    if v in {"1", "2"}:
        first = v == "1" if order == "12" else v == "2"
        return "A" if first else "B"
    if v in {"A", "B"}:
        return v
    return orig  # raw text: the judge layer parses it (and counts it invalid if unclear)


def _check_scalars(src: str, lineno: int, rec: Record, names: frozenset[str] | set[str]
                   ) -> None:
    for k in names:
        v = rec.get(k)
        if k in rec and (isinstance(v, bool) or not isinstance(v, str | int | float | None)):
            raise ReplayFileError(src, lineno, f"field {k!r}: expected text or a number, got "
                                  f"{kind_of(v)}")


def _texts(rec: Record) -> dict[str, str]:
    return {k: text_of(v) for k, v in rec.items()}


def _need_item_key(t: Table, item_col: str | None = None) -> None:
    cols = ", ".join(t.columns)
    if item_col is not None:
        if item_col not in t.columns:
            raise ReplayFileError(t.src, None, f"parameter item={item_col!r}: no such column "
                                  f"(columns: {cols})")
        return
    if "item_id" not in t.columns and not ("subset" in t.columns and "idx" in t.columns):
        raise ReplayFileError(t.src, None, "no item key column; expected item_id, or subset and "
                              f"idx (columns: {cols}); name another key column with item=COL "
                              "and format=columns")


def _key(src: str, lineno: int, rec: Record, item_col: str | None) -> str:
    if item_col is None:
        return item_id(src, lineno, _texts(rec))
    _check_scalars(src, lineno, rec, {item_col})
    key = text_of(rec.get(item_col)).strip()
    if not key:
        raise ReplayFileError(src, lineno, f"field {item_col!r}: empty or missing; every "
                              "record needs an item key")
    return key


def no_verdict_columns(src: str, columns: tuple[str, ...] | list[str]) -> ReplayFileError:
    """The error for a file no format fits: what the tabular layouts need, the file's
    columns, and every format by name."""
    cols = ", ".join(columns)
    half = [c for c in (*WIDE, *LONG) if c in columns]
    has = f" (has {', '.join(half)} without its partner)" if half else ""
    return ReplayFileError(
        src, None, f"no verdict columns{has}; expected {' + '.join(WIDE)} (original output "
        f"numbering), or {' + '.join(LONG)}, or score (columns: {cols}). No format fits this "
        f"file; the formats are: {formats_help()}. Name one with format=NAME")


# ---- long and wide: our own tables ----------------------------------------------------------

def _tabular(inp: Inputs, wide: bool) -> list[Row]:
    t = inp.main
    _need_item_key(t)
    has_long = all(c in t.columns for c in LONG)
    if not (wide or has_long or "score" in t.columns):
        raise no_verdict_columns(t.src, t.columns)
    rows: list[Row] = []
    for lineno, rec in t.records:
        _check_scalars(t.src, lineno, rec, SCALAR_COLUMNS)
        r = _texts(rec)
        item = item_id(t.src, lineno, r)
        verdicts: tuple[tuple[str, str], ...] = ()
        if wide:
            verdicts = tuple((o, presented(original(t.src, lineno, col, r[col]), o))
                             for col, o in zip(WIDE, ORDERS, strict=True))
        elif has_long:
            order = r["order"].strip()
            if order not in ORDERS:
                raise ReplayFileError(t.src, lineno, f"field 'order': expected 12 (response_1 "
                                      f"shown first) or 21, got {r['order']!r}")
            verdicts = ((order, presented(long_verdict(t.src, lineno, r["verdict"]), order)),)
        # an empty score on a row without verdicts is a recorded answer that cannot be read
        # (counted invalid), not a missing record (it counted as a failed call)
        score = ((r.get("score") or "").strip() if "score" in r and (
            r.get("score") or not verdicts) else None)
        recorded = tuple(r.get(c, "") for c in (*WIDE, "verdict", "score", "score_1", "score_2"))
        rows.append(Row(t.src, lineno, item, verdicts, score, sample_of(t.src, lineno, rec),
                        recorded, record=rec))
    return rows


@register_format("long", "item_id (or subset + idx), order 12/21, verdict; or a score")
def parse_long(inp: Inputs) -> list[Row]:
    return _tabular(inp, wide=False)


@register_format("wide", "winner_original_order + winner_swapped_order, as in LLMBar")
def parse_wide(inp: Inputs) -> list[Row]:
    return _tabular(inp, wide=True)


# ---- nested: one record per item, the orders inside ---------------------------------------

NESTED_GAMES = (("game1", "game2"), ("g1", "g2"))
_NESTED_VERDICT = ("verdict", "winner", "choice")
_NESTED_RAW = ("judgment", "output", "text", "completion")


def _nested_value(src: str, lineno: int, where: str, v: Any) -> str:
    """A nested verdict: as in long (A/B presented, 1/2 original, tie, empty, raw text),
    plus FastChat's model_1 / model_2 (original numbering) and error (unparseable)."""
    if isinstance(v, dict):
        for k in _NESTED_VERDICT:
            if k in v:
                return _nested_value(src, lineno, f"{where}.{k}", v[k])
        for k in _NESTED_RAW:
            if k in v:
                return _nested_value(src, lineno, f"{where}.{k}", v[k])
        raise ReplayFileError(src, lineno, f"field {where!r}: an object needs one of "
                              f"{', '.join(_NESTED_VERDICT + _NESTED_RAW)}")
    if isinstance(v, bool) or not isinstance(v, str | int | float | None):
        raise ReplayFileError(src, lineno, f"field {where!r}: expected a verdict (text or a "
                              f"number) or an object holding one, got {kind_of(v)}")
    s = text_of(v)
    low = s.strip().lower()
    if low in {"model_1", "model_a"}:
        return "1"
    if low in {"model_2", "model_b"}:
        return "2"
    if low == "error":
        return ""
    return long_verdict(src, lineno, s, where)


@register_format(
    "nested", "one record per item: judgments [{order, verdict}], or game1/game2 or g1/g2",
    options={"item": "the item key field (default id, item_id, or subset + idx)"},
    values={"id", "judgments", *(g for pair in NESTED_GAMES for g in pair)})
def parse_nested(inp: Inputs) -> list[Row]:
    t = inp.main
    item_col = inp.options.get("item")
    rows: list[Row] = []
    for lineno, rec in t.records:
        if item_col is None and rec.get("id") not in (None, "") and not rec.get("item_id"):
            item = _key(t.src, lineno, rec, "id")
        else:
            item = _key(t.src, lineno, rec, item_col)
        found: dict[str, str] = {}
        recorded: list[str] = []
        if "judgments" in rec:
            js = rec["judgments"]
            if not isinstance(js, list):
                raise ReplayFileError(t.src, lineno, "field 'judgments': expected a list of "
                                      f"{{order, verdict}} objects, got {kind_of(js)}")
            for k, j in enumerate(js):
                where = f"judgments[{k}]"
                if not isinstance(j, dict) or "order" not in j:
                    raise ReplayFileError(t.src, lineno, f"field {where!r}: expected an object "
                                          "with order (12 or 21) and verdict")
                order = text_of(j["order"]).strip()
                if order not in ORDERS:
                    raise ReplayFileError(t.src, lineno, f"field '{where}.order': expected 12 "
                                          f"(response_1 shown first) or 21, got {j['order']!r}")
                if order in found:
                    raise ReplayFileError(t.src, lineno, f"field 'judgments': order {order} "
                                          "appears twice")
                v = _nested_value(t.src, lineno, where, j.get("verdict", j))
                found[order] = presented(v, order)
                recorded.append(text_of(j))
        else:
            for names in NESTED_GAMES:
                for name, order in zip(names, ORDERS, strict=True):
                    if name in rec and order not in found:
                        found[order] = presented(_nested_value(t.src, lineno, name, rec[name]),
                                                 order)
                        recorded.append(text_of(rec[name]))
        if not found:
            raise ReplayFileError(t.src, lineno, "no verdicts in this record; expected "
                                  "judgments [{order, verdict}], game1/game2 or g1/g2")
        rows.append(Row(t.src, lineno, item, tuple(sorted(found.items())), None,
                        sample_of(t.src, lineno, rec), tuple(recorded), record=rec))
    return rows


# ---- columns and two_files: a mapping for anything else -------------------------------------

def parse_map(src: str, name: str, spec: str) -> dict[str, str]:
    """`A:1,B:2,tie:0` (or `;`-separated, for a --panel list) -> {"A": "1", ...}; the value
    side may be empty (`error:` = unparseable), `*` on the left matches any other value."""
    out: dict[str, str] = {}
    for part in spec.replace(";", ",").split(","):
        if not part.strip():
            continue
        if ":" not in part:
            raise ReplayFileError(src, None, f"parameter {name}={spec!r}: expected FROM:TO pairs "
                                  "separated by commas, e.g. A:1,B:2,tie:0")
        k, v = part.rsplit(":", 1)
        out[k.strip()] = v.strip()
    if not out:
        raise ReplayFileError(src, None, f"parameter {name}: empty mapping")
    return out


def _mapped(src: str, lineno: int, column: str, value: str, mapping: dict[str, str] | None,
            name: str) -> str:
    if mapping is None:
        return value
    v = value.strip()
    if v in mapping:
        return mapping[v]
    if "*" in mapping:
        return mapping["*"]
    raise ReplayFileError(src, lineno, f"field {column!r}: value {value!r} is not in {name} "
                          f"({', '.join(map(repr, mapping))}); add it, or *:TO for every other "
                          "value")


def _column_rows(t: Table, opts: dict[str, str], fixed_order: str | None) -> list[Row]:
    item_col = opts.get("item")
    _need_item_key(t, item_col)
    cols = ", ".join(t.columns)
    for name in ("verdict", "score"):
        if opts.get(name) and opts[name] not in t.columns:
            raise ReplayFileError(t.src, None, f"parameter {name}={opts[name]!r}: no such column "
                                  f"(columns: {cols})")
    verdict_col = opts.get("verdict") or ("verdict" if "verdict" in t.columns else None)
    score_col = opts.get("score") or None
    order_col: str | None = None
    order_opt = opts.get("order")
    if fixed_order is None and order_opt:
        if order_opt in t.columns:
            order_col = order_opt
        elif order_opt in ORDERS:
            fixed_order = order_opt
        else:
            raise ReplayFileError(t.src, None, f"parameter order={order_opt!r}: neither a column "
                                  f"(columns: {cols}) nor 12 / 21 (every record one order)")
    elif fixed_order is not None and "order" in t.columns:
        order_col = "order"  # checked against the file's order
    if verdict_col is None and score_col is None:
        raise ReplayFileError(t.src, None, f"no verdict column: name it with verdict=COL (or a "
                              f"score with score=COL) (columns: {cols})")
    if verdict_col is not None and fixed_order is None and order_col is None:
        raise ReplayFileError(t.src, None, "no presentation order: name its column with "
                              "order=COL (values 12 / 21, or mapped with order_map=), or give "
                              f"order=12 or order=21 when every record has one (columns: {cols})")
    vmap = parse_map(t.src, "verdict_map", opts["verdict_map"]) if opts.get("verdict_map") \
        else None
    omap = parse_map(t.src, "order_map", opts["order_map"]) if opts.get("order_map") else None
    rows: list[Row] = []
    for lineno, rec in t.records:
        names = {c for c in (item_col, verdict_col, score_col, order_col) if c}
        _check_scalars(t.src, lineno, rec, names)
        item = _key(t.src, lineno, rec, item_col)
        verdicts: tuple[tuple[str, str], ...] = ()
        recorded: list[str] = []
        if verdict_col is not None:
            order = fixed_order
            if order_col is not None:
                raw_order = text_of(rec.get(order_col))
                got = _mapped(t.src, lineno, order_col, raw_order, omap if fixed_order is None
                              else None, "order_map").strip()
                if fixed_order is not None and got != fixed_order:
                    raise ReplayFileError(t.src, lineno, f"field {order_col!r}: this file holds "
                                          f"order {fixed_order}, got {raw_order!r}")
                if got not in ORDERS:
                    raise ReplayFileError(t.src, lineno, f"field {order_col!r}: expected 12 "
                                          f"(response_1 shown first) or 21, got {raw_order!r}"
                                          + ("" if omap else "; map other values with "
                                             "order_map=FIRST:12,SECOND:21"))
                order = got
            assert order is not None
            raw = text_of(rec.get(verdict_col))
            value = _mapped(t.src, lineno, verdict_col, raw, vmap, "verdict_map")
            verdicts = ((order, presented(long_verdict(t.src, lineno, value, verdict_col),
                                          order)),)
            recorded.append(raw)
        score = None
        if score_col is not None:
            score = text_of(rec.get(score_col)).strip()
            recorded.append(score)
            if not score and verdicts:  # a verdict row: no score recorded, none missing
                score = None
        rows.append(Row(t.src, lineno, item, verdicts, score, sample_of(t.src, lineno, rec),
                        tuple(recorded), record=rec))
    return rows


MAP_OPTIONS = {
    "item": "the item key column (default item_id, or subset + idx)",
    "verdict": "the verdict column (values as in long, after verdict_map)",
    "verdict_map": "FROM:TO,... mapping verdict values to A/B (presented), 1/2 (original), "
                   "0/tie or empty (unparseable); *:TO for every other value",
}


@register_format(
    "columns", "item=COL, order=COL, verdict=COL, score=COL, verdict_map=A:1,B:2,tie:0",
    options={**MAP_OPTIONS,
             "order": "the order column (values 12 / 21, after order_map), or 12 / 21 for all",
             "order_map": "FROM:TO,... mapping order values to 12 / 21",
             "score": "the pointwise score column"})
def parse_columns(inp: Inputs) -> list[Row]:
    return _column_rows(inp.main, inp.options, None)


@register_format(
    "two_files", "one file per order: FILE_12?second=FILE_21, or {order} in the path",
    options={**MAP_OPTIONS,
             "second": "the file of order 21 (the path given is order 12)",
             "order_names": "the two texts {order} stands for (default 12,21; the judge's "
                            "own orders= parameter is another thing)"})
def parse_two_files(inp: Inputs) -> list[Row]:
    if inp.second is None:
        raise ReplayFileError(inp.main.src, None, "two_files needs a second file: second=PATH "
                              "or a {order} placeholder in the path")
    return (_column_rows(inp.main, inp.options, "12")
            + _column_rows(inp.second, inp.options, "21"))


# ---- alpaca_eval annotations --------------------------------------------------------------

ALPACA_TEXTS = ("instruction", "output_1", "output_2")


def _preference(src: str, lineno: int, v: Any, soft: bool) -> str:
    """alpaca_eval's preference -> presented label: 1 -> A (output_1), 2 -> B, 1.5 (or 0) ->
    tie, null -> unparseable; a weighted annotator's value in between only with soft=round."""
    if v is None or (isinstance(v, str) and not v.strip()):
        return ""
    try:
        if isinstance(v, bool):
            raise ValueError
        p = float(v)
    except (TypeError, ValueError):
        raise ReplayFileError(src, lineno, f"field 'preference': expected 1 (output_1 "
                              f"preferred), 2, 1.5 (tie) or null, got {v!r}") from None
    if p == 1:
        return "A"
    if p == 2:
        return "B"
    if p in (1.5, 0):
        return "tie"
    if 1 < p < 2 and soft:
        return "A" if p < 1.5 else "B"
    hint = (" (a weighted annotator's 1 + P(output_2 better): add soft=round to read it as the "
            "nearer of 1 and 2)" if 1 < p < 2 else "")
    raise ReplayFileError(src, lineno, f"field 'preference': expected 1 (output_1 preferred), "
                          f"2, 1.5 (tie) or null, got {v!r}{hint}")


@register_format(
    "alpaca_eval", "records with instruction, output_1, output_2, preference",
    options={"item": "match by this id field instead of the texts",
             "order": "a field holding 12 / 21 (default: every record is order 12 of its pair)",
             "soft": "round: read a weighted annotator's preference as the nearer of 1 and 2"},
    values={*ALPACA_TEXTS, "preference", "raw_completion", "price_per_example",
            "time_per_example", "dataset", "datasplit", "index"})
def parse_alpaca_eval(inp: Inputs) -> list[Row]:
    t = inp.main
    item_col = inp.options.get("item")
    order_col = inp.options.get("order")
    soft = inp.options.get("soft", "")
    if soft not in ("", "round"):
        raise ReplayFileError(t.src, None, f"parameter soft={soft!r}: expected round")
    if item_col is not None:
        _need_item_key(t, item_col)
    if order_col is not None and order_col not in t.columns:
        raise ReplayFileError(t.src, None, f"parameter order={order_col!r}: no such field "
                              f"(fields: {', '.join(t.columns)})")
    rows: list[Row] = []
    for lineno, rec in t.records:
        if "preference" not in rec:
            raise ReplayFileError(t.src, lineno, "field 'preference': missing (1, 2, 1.5 or "
                                  "null)")
        verdict = _preference(t.src, lineno, rec["preference"], soft == "round")
        order = "12"
        if order_col is not None:
            order = text_of(rec.get(order_col)).strip()
            if order not in ORDERS:
                raise ReplayFileError(t.src, lineno, f"field {order_col!r}: expected 12 or 21, "
                                      f"got {rec.get(order_col)!r}")
        label = ""
        if item_col is not None:
            item = _key(t.src, lineno, rec, item_col)
        else:
            for f in ALPACA_TEXTS:
                if not isinstance(rec.get(f), str):
                    raise ReplayFileError(t.src, lineno, f"field {f!r}: expected text, got "
                                          f"{kind_of(rec.get(f))} (matching by text needs "
                                          "instruction, output_1 and output_2; or give item=COL)")
            item = text_key(rec["instruction"], rec["output_1"], rec["output_2"])
            gens = " vs ".join(text_of(rec.get(g)) or "?" for g in ("generator_1", "generator_2"))
            label = f"instruction {_short(rec['instruction'])} ({gens})"
        rows.append(Row(t.src, lineno, item, ((order, verdict),), None,
                        sample_of(t.src, lineno, rec), (text_of(rec["preference"]),), label,
                        record=rec))
    return rows


def _short(s: str, n: int = 40) -> str:
    s = " ".join(s.split())
    return repr(s if len(s) <= n else s[: n - 3] + "...")


# ---- FastChat MT-Bench pairwise judgments -------------------------------------------------

FASTCHAT_FIELDS = ("question_id", "model_1", "model_2", "g1_winner", "g2_winner")


def fastchat_id(question_id: str, model_1: str, model_2: str, turn: int) -> str:
    """The item id of a FastChat judgment whose answer texts are not at hand."""
    return f"mtbench:q{question_id}:{model_1}:{model_2}:t{turn}"


def _winner(src: str, lineno: int, name: str, v: Any) -> str:
    """g1_winner / g2_winner (model naming) -> original numbering "1", "2", "0", ""."""
    s = text_of(v).strip().lower()
    if s == "model_1":
        return "1"
    if s == "model_2":
        return "2"
    if s.startswith("tie"):
        return "0"
    if s in ("error", ""):
        return ""
    raise ReplayFileError(src, lineno, f"field {name!r}: expected model_1, model_2, tie or "
                          f"error, got {v!r}")


@register_format(
    "fastchat", "MT-Bench pair judgments: question_id, model_1, model_2, g1_winner, g2_winner",
    options={"answers": "FastChat's model_answer folder (default ../model_answer beside the "
                        "judgment folder)",
             "questions": "FastChat's question.jsonl (default ../question.jsonl)",
             "item": "match by this id field instead"},
    values={*FASTCHAT_FIELDS, "turn", "tstamp", "g1_judgment", "g2_judgment", "g1_user_prompt",
            "g2_user_prompt", "g1_score", "g2_score"})
def parse_fastchat(inp: Inputs) -> list[Row]:
    t = inp.main
    item_col = inp.options.get("item")
    rows: list[Row] = []
    for lineno, rec in t.records:
        for f in FASTCHAT_FIELDS:
            if f not in rec:
                raise ReplayFileError(t.src, lineno, f"field {f!r}: missing (a FastChat pairwise "
                                      f"judgment has {', '.join(FASTCHAT_FIELDS)}, turn)")
        _check_scalars(t.src, lineno, rec, {"question_id", "model_1", "model_2", "turn"})
        qid, m1, m2 = (text_of(rec[f]).strip() for f in ("question_id", "model_1", "model_2"))
        try:
            turn = int(text_of(rec.get("turn", 1)) or 1)
        except ValueError:
            raise ReplayFileError(t.src, lineno, f"field 'turn': expected 1 or 2, got "
                                  f"{rec.get('turn')!r}") from None
        w1 = _winner(t.src, lineno, "g1_winner", rec["g1_winner"])
        w2 = _winner(t.src, lineno, "g2_winner", rec["g2_winner"])
        verdicts = (("12", presented(w1, "12")), ("21", presented(w2, "21")))
        label = ""
        q = inp.questions.get(qid)
        a1, a2 = inp.answers.get((qid, m1)), inp.answers.get((qid, m2))
        if item_col is not None:
            item = _key(t.src, lineno, rec, item_col)
        elif turn == 1 and q and a1 and a2:
            item = text_key(q[0], a1[0], a2[0])
            label = f"question {qid} turn 1: {m1} vs {m2}"
        else:
            item = fastchat_id(qid, m1, m2, turn)
        rows.append(Row(t.src, lineno, item, verdicts, None, sample_of(t.src, lineno, rec),
                        (text_of(rec["g1_winner"]), text_of(rec["g2_winner"])), label,
                        record=rec))
    return rows


# ---- sniffing ---------------------------------------------------------------------------------

def sniff(columns: tuple[str, ...] | list[str], params: Mapping[str, str], path: str
          ) -> tuple[str, str] | None:
    """(format, why) for a file's fields and the spec's parameters, or None when none fits."""
    cols = set(columns)

    def named(names: tuple[str, ...] | list[str]) -> str:
        return ", ".join(names)

    if "{order}" in path:
        return "two_files", "a {order} placeholder in the path"
    if "second" in params:
        return "two_files", "a second= file"
    if cols >= {"g1_winner", "g2_winner"}:
        return "fastchat", "fields g1_winner, g2_winner"
    if cols >= {"preference", "output_1", "output_2"}:
        return "alpaca_eval", "fields preference, output_1, output_2"
    games = [g for pair in NESTED_GAMES for g in pair if g in cols]
    if "judgments" in cols or games:
        return "nested", f"field(s) {named(['judgments'] if 'judgments' in cols else games)}"
    mapping = [k for k in ("item", "order", "verdict", "score") if params.get(k) in cols]
    mapping += [k for k in ("verdict_map", "order_map") if k in params]
    if params.get("order") in ORDERS and "verdict" in cols:  # one fixed order (order=12):
        mapping.append("order")  # the columns format's; it read "verdict without its partner"
    if mapping:
        return "columns", f"parameter(s) {named(mapping)}"
    if cols >= set(WIDE):
        return "wide", f"columns {named(WIDE)}"
    if cols >= set(LONG):
        return "long", f"columns {named(LONG)}"
    if "score" in cols:
        return "long", "a score column (pointwise)"
    return None


__all__ = ["FORMATS", "Format", "Inputs", "ReplayFileError", "Row", "Table", "fastchat_id",
           "formats_help", "parse_map", "read_table", "register_format", "sniff", "text_key"]
