"""`replay`: verdicts recorded elsewhere (CSV or JSONL), served by item id and presentation
order, so published judge outputs run through the same judging and statistics code as live
calls.

Spec: `replay:PATH?col=value&...`. Every parameter is a column filter: only rows whose column
equals the value are kept (`judge=GPT-4&strategy=Vanilla` on LLMBar's judge_verdicts.csv).

Recognised file layouts (columns for CSV, fields for JSONL):
- item key: `item_id`, or `subset` + `idx` joined as "<subset>:<idx>".
- wide (the LLMBar judge_verdicts.csv layout): `winner_original_order` (verdict when
  response_1 was shown first) and `winner_swapped_order` (when response_2 was shown first),
  both in ORIGINAL output numbering: "1", "2", "0"/"tie", "" = unparseable.
- long: `order` ("12"/"21") + `verdict`: "A"/"B" are presented labels, "1"/"2" original
  output numbering, "tie", "" = unparseable, anything else is returned verbatim (raw text,
  which the judge parses and may count as invalid).
- pointwise: `score` (one per item; returned as text, a number k mapped to score id k).
A `sample` column orders repeated records of one run: the highest sample supersedes lower ones
(LLMBar Swap strategies record a second "review" verdict as sample 1 where the first two
conflicted). Columns other than the item key, the verdict/score columns, `label`, `sample` and
common free-text columns (completion, explanation, output_1, ...: see VALUE_COLUMNS)
describe the run; if after filtering an item still has records from several runs (e.g. no
`strategy=` filter), loading fails naming the columns that still vary.

Bad input is a `ReplayFileError` (a ValueError) shaped like the data loaders' errors,
"replay file FILE:LINE: what was expected, what came": a missing file or a directory, an
empty file, bytes that are not UTF-8 (named by line and column), a CSV row with the wrong
number of fields, a column named twice, no item key or verdict columns (the file's columns
are listed), a parameter that is no column, a filter that matches no row (the values the
column has are listed), a verdict value outside those above, and the same record (item,
order, run and sample) given twice (both lines named). A UTF-8 BOM and CRLF line endings are
fine.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from judgeaudit.llm.base import FatalProviderError, Provider, Request, Response
from judgeaudit.llm.registry import register

WIDE = ("winner_original_order", "winner_swapped_order")
LONG = ("order", "verdict")
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
# Spec parameters that are options rather than column filters (none yet): name -> meaning.
OPTIONS: dict[str, str] = {}
_BOM = b"\xef\xbb\xbf"


class ReplayFileError(ValueError):
    """Bad replay input. The message has the shape of the data loaders' DataError (llm does
    not import data): "replay file FILE:LINE: what was expected, what came"."""

    def __init__(self, source: str, where: int | None, problem: str):
        loc = source if where is None else f"{source}:{where}"
        super().__init__(f"replay file {loc}: {problem}")
        self.source, self.where, self.problem = source, where, problem


@dataclass
class ReplayIndex:
    """One loaded, filtered file: verdicts by (item_id, order) and scores by item_id."""

    path: Path
    sha256: str
    size: int
    columns: tuple[str, ...]
    verdicts: dict[tuple[str, str], str]   # presented-label text ("A", "B", "tie", "", raw)
    scores: dict[str, str]
    n_rows: int


_FileKey = tuple[str, int, int]  # resolved path, size, mtime_ns
_PARSED: dict[_FileKey, tuple[list[str], list[tuple[int, dict[str, str]]], str, int]] = {}
_INDEXES: dict[tuple[_FileKey, tuple[tuple[str, str], ...]], ReplayIndex] = {}


def _decode(src: str, data: bytes) -> str:
    """UTF-8 text, a leading BOM dropped; bad bytes are named by line and column."""
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        off = exc.start
        line = data.count(b"\n", 0, off) + 1
        start = data.rfind(b"\n", 0, off) + 1
        col = len(data[start:off].decode("utf-8", errors="replace")) + 1
        if off < 2 and data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            problem = "not valid UTF-8: the file looks like UTF-16; save it as UTF-8"
        else:
            problem = (f"not valid UTF-8 (byte 0x{data[off]:02x} at column {col}); save the "
                       "file as UTF-8")
        raise ReplayFileError(src, line, problem) from None


def _read_rows(src: str, path: Path, data: bytes
               ) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Rows as (line number, {column: text}); JSONL values are turned into text."""
    text = _decode(src, data)
    is_jsonl = path.suffix.lower() in {".jsonl", ".ndjson"} or (
        path.suffix.lower() != ".csv" and text.lstrip().startswith("{")
    )
    if not text.strip():
        expected = "one JSON object per line" if is_jsonl else "a CSV header line"
        raise ReplayFileError(src, None, f"empty file; expected {expected}")
    return _read_jsonl(src, text) if is_jsonl else _read_csv(src, text)


def _read_jsonl(src: str, text: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    rows: list[tuple[int, dict[str, str]]] = []
    columns: dict[str, None] = {}
    # Lines end at "\n" only: U+2028, U+2029 and U+0085 may stand inside a JSON string.
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReplayFileError(src, lineno, f"not valid JSON ({exc.msg} at column "
                                  f"{exc.colno})") from None
        except RecursionError:
            raise ReplayFileError(src, lineno, "JSON nested too deeply") from None
        if not isinstance(obj, dict):
            raise ReplayFileError(src, lineno, f"expected a JSON object per line, got "
                                  f"{_kind(obj)}")
        for k, v in obj.items():
            if k in SCALAR_COLUMNS and (isinstance(v, bool) or not isinstance(
                    v, str | int | float | None)):
                raise ReplayFileError(src, lineno, f"field {k!r}: expected text or a number, "
                                      f"got {_kind(v)}")
        row = {k: _text(v) for k, v in obj.items()}
        columns.update(dict.fromkeys(row))
        rows.append((lineno, row))
    return list(columns), rows


def _read_csv(src: str, text: str) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    rows: list[tuple[int, dict[str, str]]] = []
    end = 0
    try:
        for cells in reader:
            start, end = end + 1, reader.line_num
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue  # a blank line
            if header is None:
                header = cells
                twice = sorted({c for c in header if header.count(c) > 1})
                if twice:
                    raise ReplayFileError(src, start, f"column(s) {', '.join(map(repr, twice))} "
                                          "appear more than once in the header")
                continue
            if len(cells) != len(header):
                more = "more" if len(cells) > len(header) else "fewer"
                raise ReplayFileError(src, start, f"{len(cells)} fields, {more} than the "
                                      f"header's {len(header)} ({', '.join(header)})")
            rows.append((start, dict(zip(header, cells, strict=True))))
    except csv.Error as exc:  # strict: an unclosed quote must not swallow the rows after it
        raise ReplayFileError(src, end + 1, "malformed CSV in the record starting on this "
                              f"line: {exc}") from None
    if header is None:
        raise ReplayFileError(src, None, "empty file; expected a CSV header line")
    if not rows:
        raise ReplayFileError(src, None, "no rows after the header line")
    return header, rows


def _kind(v: Any) -> str:
    """A JSON value's kind for messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "text"}.get(type(v), "a number")


def _text(v: Any) -> str:
    """A JSON value as the text a CSV cell would hold (1 and 1.0 both -> "1")."""
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


def _item_id(src: str, lineno: int, row: dict[str, str]) -> str:
    if row.get("item_id"):
        return row["item_id"]
    if row.get("subset") and row.get("idx") not in (None, ""):
        return f"{row['subset']}:{row['idx']}"
    field = "item_id" if "item_id" in row or "subset" not in row else (
        "subset" if not row.get("subset") else "idx")
    raise ReplayFileError(src, lineno, f"field {field!r}: empty or missing; every record "
                          "needs an item key (`item_id`, or `subset` and `idx`)")


def _sample(src: str, lineno: int, row: dict[str, str]) -> int:
    s = row.get("sample", "").strip()
    if s == "":
        return 0
    try:
        return int(s)
    except ValueError:
        raise ReplayFileError(src, lineno, f"field 'sample': expected an integer, got "
                              f"{s!r}") from None


def _original(src: str, lineno: int, column: str, value: str) -> str:
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


def _long_verdict(src: str, lineno: int, value: str) -> str:
    """A long-layout verdict checked: a number must be 1, 2 (original numbering) or 0 (tie);
    A/B, tie, empty and free text are kept."""
    v = value.strip()
    try:
        num = float(v)
    except ValueError:
        return value
    if num in (0, 1, 2):
        return str(int(num))
    raise ReplayFileError(src, lineno, f"field 'verdict': expected A or B (presented labels), "
                          f"1 or 2 (original numbering), 0 or tie, empty (unparseable) or the "
                          f"judge's raw text, got the number {value!r}")


def _presented(original: str, order: str) -> str:
    """A recorded verdict in original numbering -> the label presented in `order`."""
    v = original.strip()
    if v == "":
        return ""
    if v in _TIE:
        return "tie"
    if v in {"1", "2"}:
        first = v == "1" if order == "12" else v == "2"
        return "A" if first else "B"
    if v in {"A", "B"}:
        return v
    return original  # raw text: the judge layer parses it (and counts it invalid if unclear)


def describe_filters(filters: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in filters.items()) if filters else "no filters"


def load_index(path: str | Path, filters: dict[str, str]) -> ReplayIndex:
    """Read, filter and index a verdict file; cached per (file version, filters) per process."""
    src = str(path)
    try:
        p = Path(path).expanduser().resolve()
        p.exists()
    except (OSError, RuntimeError, ValueError) as exc:  # "~nobody/x", a NUL byte, EACCES
        raise ReplayFileError(src, None, f"cannot use this path: {exc}") from None
    if p.is_dir():
        raise ReplayFileError(src, None, "is a directory; expected a .csv or .jsonl file of "
                              "recorded verdicts")
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ReplayFileError(src, None, "no such file") from None
    except OSError as exc:
        raise ReplayFileError(src, None, f"cannot read: {exc.strerror or exc}") from None
    fkey = (str(p), st.st_size, st.st_mtime_ns)
    key = (fkey, tuple(sorted(filters.items())))
    if key in _INDEXES:
        return _INDEXES[key]
    if fkey not in _PARSED:  # parse each file version once, whatever the filters
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise ReplayFileError(src, None, f"cannot read: {exc.strerror or exc}") from None
        _PARSED[fkey] = (*_read_rows(src, p, data), hashlib.sha256(data).hexdigest(), len(data))
    columns, rows, sha, size = _PARSED[fkey]
    _check_columns(src, columns, filters)
    wide = all(c in columns for c in WIDE)
    long = all(c in columns for c in LONG)
    run_cols = tuple(c for c in columns if c not in VALUE_COLUMNS and c not in filters)

    # (item, order-or-"*") -> {run tuple -> (sample, lineno, row)}; highest sample wins per run.
    best: dict[tuple[str, str], dict[tuple[str, ...], tuple[int, int, dict[str, str]]]] = (
        defaultdict(dict))
    # every (item, order, run, sample) once: its line and row
    seen: dict[tuple[str, str, tuple[str, ...], int], tuple[int, dict[str, str]]] = {}
    kept = 0
    for lineno, row in rows:
        if any(row.get(k, "") != v for k, v in filters.items()):
            continue
        kept += 1
        item = _item_id(src, lineno, row)
        if long and not wide:
            order = row["order"].strip()
            if order not in {"12", "21"}:
                raise ReplayFileError(src, lineno, f"field 'order': expected 12 (response_1 "
                                      f"shown first) or 21, got {row['order']!r}")
        else:
            order = "*"
        run = tuple(row.get(c, "") for c in run_cols)
        s = _sample(src, lineno, row)
        twice = seen.get((item, order, run, s))
        if twice is not None:
            first, other = twice
            what = ("different verdicts" if _values(other) != _values(row)
                    else "the same verdict twice")
            at = "" if order == "*" else f" order {order}"
            raise ReplayFileError(
                src, lineno,
                f"lines {first} and {lineno} record {what} for item {item!r}{at} (sample {s}) "
                f"with {describe_filters(filters)}; a record must appear once (number repeated "
                "verdicts in a `sample` column)")
        seen[item, order, run, s] = (lineno, row)
        prev = best[item, order].get(run)
        if prev is None or s > prev[0]:
            best[item, order][run] = (s, lineno, row)
    if not kept:
        raise ReplayFileError(src, None, _no_match(columns, rows, filters))

    verdicts: dict[tuple[str, str], str] = {}
    scores: dict[str, str] = {}
    ambiguous: list[tuple[str, dict[tuple[str, ...], Any]]] = []
    for (item, order), runs in best.items():
        if len(runs) > 1:
            ambiguous.append((item, runs))
            continue
        (_, lineno, row), = runs.values()
        if wide:
            for col, shown in zip(WIDE, ("12", "21"), strict=True):
                verdicts[item, shown] = _presented(_original(src, lineno, col, row[col]), shown)
        elif long:
            verdicts[item, order] = _presented(_long_verdict(src, lineno, row["verdict"]), order)
        if "score" in columns and row.get("score", "") != "":
            scores[item] = row["score"].strip()
    if ambiguous:
        item, runs = ambiguous[0]
        varying = [c for i, c in enumerate(run_cols) if len({r[i] for r in runs}) > 1]
        example = "; ".join(
            f"{c}=" + "/".join(sorted({r[i] for r in runs}))
            for i, c in enumerate(run_cols) if c in varying
        )
        raise ValueError(
            f"replay file {p.name} with {describe_filters(filters)}: {len(ambiguous)} item(s) "
            f"have records from several runs that differ in column(s) {', '.join(varying)} "
            f"(e.g. item {item!r}: {example}); add a filter such as {varying[0]}=..."
        )
    idx = ReplayIndex(p, sha, size, tuple(columns), verdicts, scores, kept)
    _INDEXES[key] = idx
    return idx


def _check_columns(src: str, columns: list[str], filters: dict[str, str]) -> None:
    """Every parameter is an option or a column; the file has an item key and verdicts."""
    cols = ", ".join(columns)
    for name in filters:
        if name in OPTIONS or name in columns:
            continue
        close = difflib.get_close_matches(name, columns, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        options = ", ".join(OPTIONS) or "replay has none: every parameter filters a column"
        raise ReplayFileError(src, None, f"parameter {name!r} is neither an option ({options}) "
                              f"nor a column of the file (columns: {cols}){hint}")
    if "item_id" not in columns and not ("subset" in columns and "idx" in columns):
        raise ReplayFileError(src, None, "no item key column; expected item_id, or subset and "
                              f"idx (columns: {cols})")
    wide = all(c in columns for c in WIDE)
    long = all(c in columns for c in LONG)
    if not (wide or long or "score" in columns):
        half = [c for c in (*WIDE, *LONG) if c in columns]
        has = f" (has {', '.join(half)} without its partner)" if half else ""
        raise ReplayFileError(
            src, None, f"no verdict columns{has}; expected {' + '.join(WIDE)} (original output "
            f"numbering), or {' + '.join(LONG)}, or score (columns: {cols})")


def _no_match(columns: list[str], rows: list[tuple[int, dict[str, str]]],
              filters: dict[str, str]) -> str:
    """Why no row passes the filters: a value the column never has (listing those it has),
    or values that never occur together."""
    for name, want in filters.items():
        values = sorted({row.get(name, "") for _, row in rows})
        if want not in values:
            shown = ", ".join(repr(v) for v in values[:12]) + (", ..." if len(values) > 12 else "")
            close = difflib.get_close_matches(want, values, n=1, cutoff=0.6)
            hint = f"; did you mean {name}={close[0]}?" if close else ""
            return (f"parameter {name}={want!r}: no row has this value (column {name!r} has "
                    f"{shown}){hint}")
    return f"no row matches {describe_filters(filters)} together"


def _values(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row.get(c, "") for c in (*WIDE, "verdict", "score", "score_1", "score_2"))


@register
class ReplayProvider(Provider):
    """Serves recorded verdicts; `model` is the file path, every parameter a column filter."""

    name: ClassVar[str] = "replay"
    # Every parameter is a column filter (`judge=GPT-4&strategy=Vanilla`), open-ended, so the
    # base class checks nothing; load_index refuses a parameter that is neither an option
    # (OPTIONS: none yet) nor a column of the file, naming the file's columns.
    known_params: ClassVar[dict[str, str] | None] = None
    uses_meta: ClassVar[bool] = True
    deterministic: ClassVar[bool] = True
    default_concurrency: ClassVar[int] = 64

    def __init__(self, model: str, params: dict[str, str] | None = None):
        super().__init__(model, params)
        if not model:
            raise ValueError("replay needs a file: replay:PATH?column=value&...")
        self.filters = dict(self.params)
        self.index = load_index(model, self.filters)

    def cache_identity(self) -> dict[str, Any]:
        # The file's content hash: an edited file is never served from a stale cache.
        return {
            "provider": self.name,
            "model": str(self.index.path),
            "params": dict(sorted(self.filters.items())),
            "file": {"size": self.index.size, "sha256": self.index.sha256},
        }

    def _where(self) -> str:
        return f"in {self.index.path.name} with {describe_filters(self.filters)}"

    async def generate(self, request: Request) -> Response:
        meta = request.meta or {}
        item = meta.get("item_id")
        if not item:
            raise FatalProviderError("replay needs Request.meta['item_id'] (and 'order')")
        task = meta.get("task", "pairwise")
        if task == "pointwise":
            if item not in self.index.scores:
                raise FatalProviderError(
                    f"no recorded score for item {item!r} {self._where()}")
            return Response(text=self._score_text(self.index.scores[item], meta))
        if task != "pairwise":
            raise FatalProviderError(f"replay cannot serve task {task!r} (only pairwise, "
                                     "pointwise)")
        order = str(meta.get("order", ""))
        if order not in {"12", "21"}:
            raise FatalProviderError(
                f"replay: item {item!r} has order={order!r}; expected '12' or '21'")
        try:
            text = self.index.verdicts[item, order]
        except KeyError:
            raise FatalProviderError(
                f"no recorded verdict for item {item!r} order {order} {self._where()}"
            ) from None
        return Response(text=text, probs=None)

    @staticmethod
    def _score_text(score: str, meta: dict[str, Any]) -> str:
        """A recorded id is returned as is; a number k becomes the k-th score id."""
        ids = [str(s) for s in (meta.get("score_ids") or ["1", "2", "3", "4", "5"])]
        if score in ids:
            return score
        try:
            k = float(score)
        except ValueError:
            return score
        if k.is_integer() and 1 <= k <= len(ids):
            return ids[int(k) - 1]
        return score


__all__ = ["OPTIONS", "ReplayFileError", "ReplayIndex", "ReplayProvider", "load_index"]
