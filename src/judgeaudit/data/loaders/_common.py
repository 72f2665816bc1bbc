"""Helpers shared by the loaders: reading files with located errors, parameter checks, and
the seeded, balanced order shuffle for sources that put the better answer first."""

from __future__ import annotations

import bisect
import json
import logging
import math
import random
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from judgeaudit.data.registry import DataError
from judgeaudit.data.schema import PairwiseItem, PointwiseItem
from judgeaudit.textfile import KeyTwice, NotFinite, TextProblem, decode_text, strict_json

log = logging.getLogger("judgeaudit.data")

# Parameters every loader accepts: `limit` is applied by registry.load, `seed` is passed
# everywhere by callers that shuffle and is harmless where nothing is shuffled.
COMMON_PARAMS = frozenset({"limit", "seed"})


def check_params(source: str, params: Mapping[str, str], allowed: Iterable[str]) -> None:
    """Refuse unknown parameters: a typo (`subst=`) must not silently load the default set."""
    ok = COMMON_PARAMS | set(allowed)
    bad = sorted(set(params) - ok)
    if bad:
        raise DataError(source, None, f"unknown parameter(s) {', '.join(bad)}; "
                                      f"allowed: {', '.join(sorted(ok))}")


def int_param(source: str, params: Mapping[str, str], key: str, default: int) -> int:
    raw = params.get(key)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise DataError(source, None, f"parameter {key!r}: expected an integer, got {raw!r}")\
            from None


def choice_param(source: str, params: Mapping[str, str], key: str, choices: tuple[str, ...],
                 default: str) -> str:
    val = params.get(key, default) or default
    if val not in choices:
        raise DataError(source, None,
                        f"parameter {key!r}: expected one of {', '.join(choices)}, got {val!r}")
    return val


def existing_path(name: str, kind: str) -> Path:
    """The path a loader was given, or a DataError saying it does not exist."""
    if not name:
        raise DataError(kind, None, f"no path given; expected {kind}:PATH")
    try:
        p = Path(name).expanduser()
        found = p.exists()
    except (OSError, RuntimeError, ValueError) as e:  # "~nobody/x", a NUL byte, EACCES, ...
        raise DataError(name, None, f"cannot use this path: {e}") from None
    if not found:
        raise DataError(str(p), None, "no such file or directory")
    return p


def file_in(folder: Path, name: str, hint: str = "") -> Path:
    """`folder/name`, which must be a file: a DataError naming it when it is absent or is a
    directory. `hint` says what the folder should hold."""
    p = folder / name
    if p.is_dir():
        raise DataError(str(p), None, "is a directory; expected a file")
    if not p.exists():
        raise DataError(str(p), None, "no such file" + (f"; {hint}" if hint else
                                                        f"; expected {name} in the folder"))
    return p


# ---- reading text -------------------------------------------------------------------------

def decode_utf8(data: bytes, source: str) -> str:
    """Bytes -> text (`textfile.decode_text`: decompressed, UTF-8, BOM dropped); bad bytes
    -> DataError naming the line."""
    try:
        return decode_text(data)
    except TextProblem as e:
        raise DataError(source, e.line, e.problem) from None


def read_text(path: Path) -> str:
    """A file's text (UTF-8, BOM dropped; gzip, bzip2 or xz opened); a directory, a missing
    or unreadable file or undecodable bytes are a DataError naming the file (and the
    line)."""
    src = str(path)
    try:
        if path.is_dir():
            raise IsADirectoryError
        data = path.read_bytes()
    except IsADirectoryError:
        raise DataError(src, None, "is a directory; expected a file") from None
    except FileNotFoundError:
        raise DataError(src, None, "no such file") from None
    except OSError as e:
        raise DataError(src, None, f"cannot read: {e.strerror or e}") from None
    return decode_utf8(data, src)


def split_lines(text: str) -> list[str]:
    r"""Lines split on "\n" only (a trailing "\r" dropped): U+2028, U+2029 and U+0085 are
    ordinary characters inside JSON strings, not line breaks, whatever str.splitlines says.
    A text with no "\n" but "\r"s has old Mac line ends: split on those (a raw "\r" cannot
    be inside a JSON string, so nothing else splits)."""
    lines = text.split("\n" if "\n" in text or "\r" not in text else "\r")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _loads(text: str, source: str, line: int | None, unique: bool = False) -> Any:
    """Parse JSON text; errors name the source and line. `unique`: refuse a key given twice
    in one object (a JSON Lines record: its line is known, no scan needed)."""
    try:
        return strict_json(text, unique=unique)
    except KeyTwice as e:
        raise DataError(source, line, f"field {e.args[0]!r} appears twice in one object; "
                        "JSON readers would silently keep only the last") from None
    except json.JSONDecodeError as e:
        at = e.lineno if line is None else line
        raise DataError(source, at, f"invalid JSON at column {e.colno}: {e.msg}") from None
    except RecursionError:
        raise DataError(source, line, "JSON nested too deeply") from None
    except NotFinite as e:
        raise DataError(source, line, f"{e.args[0]} is not valid JSON (a number must be "
                        "finite; write null for a missing value)") from None


# ---- JSON documents -------------------------------------------------------------------------

class JsonDoc:
    """A parsed JSON document and the line where each value near the top starts, so errors
    about a record name its line: `doc.where(3)` -> "57 (record 3)"."""

    def __init__(self, source: str, data: Any, lines: dict[tuple[Any, ...], int]):
        self.source, self.data, self._lines = source, data, lines

    def line(self, *key: Any) -> int | None:
        return self._lines.get(key)

    def where(self, *key: Any, label: str | None = None) -> str:
        """Location of the value at `key` for DataError: "LINE (record LABEL)"."""
        name = f"record {label if label is not None else key[-1]}"
        line = self.line(*key)
        return f"{line} ({name})" if line is not None else name


_WS = re.compile(r"[ \t\n\r]*")


class _Scan:
    """Walks the top `depth` levels of a JSON text (already known to parse) to record the
    line where each value starts, and refuses a key given twice in one object there (json
    would silently keep the last)."""

    def __init__(self, text: str, source: str):
        self.text, self.source = text, source
        self.dec = json.JSONDecoder()
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.lines: dict[tuple[Any, ...], int] = {}

    def line_at(self, idx: int) -> int:
        return bisect.bisect_left(self.newlines, idx) + 1

    def ws(self, idx: int) -> int:
        m = _WS.match(self.text, idx)
        return m.end() if m else idx

    def value(self, idx: int, key: tuple[Any, ...], depth: int) -> int:
        t = self.text
        idx = self.ws(idx)
        self.lines[key] = self.line_at(idx)
        if depth == 0 or t[idx] not in "[{":
            return self.dec.raw_decode(t, idx)[1]
        close = "]" if t[idx] == "[" else "}"
        idx = self.ws(idx + 1)
        if t[idx] == close:
            return idx + 1
        n = 0
        seen: dict[str, int] = {}
        while True:
            if close == "]":
                child: Any = n
                n += 1
            else:
                child, idx = self.dec.raw_decode(t, self.ws(idx))
                kline = self.line_at(idx)
                if child in seen:
                    where = (f"twice on line {kline}" if seen[child] == kline
                             else f"on lines {seen[child]} and {kline}")
                    raise DataError(self.source, kline, f"field {child!r} appears {where} in "
                                    "one object; JSON readers would silently keep only the "
                                    "last")
                seen[child] = kline
                idx = self.ws(idx) + 1  # the ":"
            idx = self.ws(self.value(idx, (*key, child), depth - 1))
            if t[idx] == close:
                return idx + 1
            idx += 1  # the ","


def read_json_doc(path: Path, depth: int = 2) -> JsonDoc:
    """Parse one JSON document, noting the line of every value in its top `depth` levels
    (2: the records of a list and their fields). An empty file, invalid JSON, too deep
    nesting, bad bytes: a DataError naming file and line."""
    src = str(path)
    text = read_text(path)
    if not text.strip():
        raise DataError(src, None, "empty file; expected a JSON document")
    data = _loads(text, src, None)
    scan = _Scan(text, src)
    try:
        scan.value(0, (), depth)
    except DataError:
        raise
    except (ValueError, IndexError, RecursionError):
        pass  # locating is best effort; the document itself parsed
    bad = _nonfinite(data)
    if bad is not None:  # 1e999: json reads inf (NaN and Infinity are refused by _loads)
        path = bad[0]
        line = next((scan.lines[path[:n]] for n in range(len(path), 0, -1)
                     if path[:n] in scan.lines), None)
        rec = next((i for i, k in enumerate(path[:2]) if isinstance(k, int)), None)
        where: str | int | None = line
        if rec is not None:  # a record of a list (at the top or under "train", "data")
            where = f"{line} (record {path[rec]})" if line else f"record {path[rec]}"
            path = path[rec + 1:]
        field = f"field {_path_text(path)!r}: " if path else ""
        raise DataError(src, where, f"{field}expected a finite number, got {bad[1]!r} (too "
                        "large for a float)")
    return JsonDoc(src, data, scan.lines)


# ---- JSON Lines -----------------------------------------------------------------------------

def read_jsonl(path: Path, json_hint: str = "") -> list[tuple[int, dict[str, Any]]]:
    r"""(line number, object) for every non-empty line of a JSON Lines file. Lines end at
    "\n" (CRLF is fine); a BOM is dropped; errors name the file and the line. An integer
    "id" is read as its decimal text (`as_id`: {"id": 1} is item "1"). A JSON document
    spread over lines (a pretty-printed array or object) is said to be JSON, not JSON
    Lines, with `json_hint` (what the caller reads it with) for an array."""
    src = str(path)
    out: list[tuple[int, dict[str, Any]]] = []
    text = read_text(path)
    lines = split_lines(text)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = _loads(line, src, lineno, unique=True)
        except DataError as e:
            raise DataError(src, lineno, _spread_json(lines, lineno, json_hint, e.problem)
                            ) from None
        if not isinstance(obj, dict):
            whole = (" (the file is one JSON array: JSON Lines holds one object per line"
                     f"{'; ' + json_hint if json_hint else ''})"
                     if isinstance(obj, list) and obj and isinstance(obj[0], dict) else "")
            raise DataError(src, lineno,
                            f"expected a JSON object, got {type(obj).__name__}{whole}")
        bad = _nonfinite(obj)
        if bad is not None:  # 1e999: json reads inf (NaN and Infinity are refused above)
            raise DataError(src, lineno, f"field {_path_text(bad[0])!r}: expected a finite "
                            f"number, got {bad[1]!r} (too large for a float)")
        if "id" in obj:
            obj["id"] = as_id(obj["id"])
        out.append((lineno, obj))
    return out


def _spread_json(lines: list[str], lineno: int, json_hint: str, error: str) -> str:
    """The problem to report for a JSON error on line `lineno` of a JSON Lines file: when
    that line starts a JSON value written over several lines (pretty-printed JSON: an array
    of records, or objects of several lines each) that the file is JSON, not JSON Lines, and
    how to load it (`json_hint`, the caller's); else `error`. The error alone ("invalid JSON
    at column 2: Expecting value" on a lone "[") did not say so."""
    line = lines[lineno - 1]
    start = line.lstrip()
    first = not any(ln.strip() for ln in lines[:lineno - 1])  # the file starts here
    if not (start.startswith("{") or (first and start.startswith("["))):
        return error
    indent = len(line) - len(start)
    rest = "\n".join([start, *lines[lineno:]])
    try:
        value, end = json.JSONDecoder().raw_decode(rest)
    except json.JSONDecodeError as e:
        value, end = None, 0
        whole_error = (f"invalid JSON on line {lineno + e.lineno - 1} at column "
                       f"{e.colno + (indent if e.lineno == 1 else 0)}: {e.msg}")
    except (ValueError, RecursionError):
        value, end, whole_error = None, 0, error
    last = lineno + rest.count("\n", 0, end)
    whole = end > 0 and not rest[end:].strip()  # the value is all the file holds from here
    hint = f"; {json_hint}" if json_hint else ""
    if start.startswith("["):
        shape = (f"a JSON array over lines {lineno}-{last}" if end else
                 f"a JSON array from line {lineno} ({whole_error})")
        return (f"the file is JSON, not JSON Lines (one object per line): {shape}{hint}; "
                f"{'or ' if hint else ''}write one object per line (jq -c '.[]' FILE)")
    if isinstance(value, dict) and last > lineno:
        return (f"the file is JSON, not JSON Lines (each object on one line): an object "
                f"written over lines {lineno}-{last}; write each object on one line (jq -c . "
                f"FILE){hint.replace('; ', '; or ', 1) if whole and lineno == 1 else ''}")
    return error


def read_records(path: Path, json_hint: str = "") -> list[tuple[int, dict[str, Any]]]:
    """read_jsonl, refusing a file with no records (empty, or blank lines only)."""
    rows = read_jsonl(path, json_hint)
    if not rows:
        raise DataError(str(path), None, "empty file; expected one JSON object per line")
    return rows


# ---- records --------------------------------------------------------------------------------

_INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")


def as_id(value: Any) -> Any:
    """An item id as the schema takes it: an integer (not a bool) as its decimal text, 1 ->
    "1", as a CSV cell reads; anything else as given (a float, a bool, None: refused by the
    schema with its message)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


def same_id_note(item_id: str) -> str:
    """What a duplicate message adds for an id that may have been given as an integer."""
    if _INT_TEXT.fullmatch(item_id):
        return (f" (an integer id is read as its decimal text: {item_id} and "
                f"\"{item_id}\" are the same id)")
    return ""


class UniqueIds:
    """Item ids seen so far with where each came from; a repeat is a DataError naming the id
    and both places."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, str | int]] = {}

    def add(self, item_id: str, source: str, where: str | int, field: str = "id") -> None:
        prev = self._seen.get(item_id)
        if prev is None:
            self._seen[item_id] = (source, where)
            return
        psrc, pwhere = prev
        first = at_line(pwhere)
        if psrc != source:
            first = f"{psrc}, {first}"
        raise DataError(source, where, f"field {field!r}: duplicate item id {item_id!r} (first "
                        f"at {first}); ids must be unique{same_id_note(item_id)}")


def at_line(where: str | int) -> str:
    """A DataError location as words: 3 -> "line 3", "57 (record 3)" -> "line 57 (record 3)",
    "row 4" stays."""
    text = str(where)
    return f"line {text}" if text[:1].isdigit() else text


def explain_validation(err: ValidationError, model: type) -> str:
    """One readable sentence per pydantic error: which field, what was expected, what came."""
    allowed = ", ".join(model.model_fields)  # type: ignore[attr-defined]
    parts: list[str] = []
    for e in err.errors(include_url=False):
        loc = e["loc"]
        field = ".".join(str(x) for x in loc) if loc else "(item)"
        top = str(loc[0]) if loc else ""
        typ = e["type"]
        got = e.get("input")
        if typ == "missing":
            parts.append(f"field {field!r}: missing (required)")
        elif typ == "extra_forbidden":
            parts.append(f"field {field!r}: unknown field (allowed: {allowed})")
        elif typ == "literal_error" and top in ("label", "annotator_labels"):
            parts.append(f"field {field!r}: expected 1, 2 or 0, got {describe(got)}")
        else:
            parts.append(f"field {field!r}: {e['msg'].lower()}, got {describe(got)}")
    return "; ".join(parts)


NUMBER_FIELDS = ("score", "quality")


def nonfinite_field(rec: Mapping[str, Any]) -> str | None:
    """None when the item fields holding numbers (a gold score, a latent quality, a number
    or a pair of them) are finite or absent; else what is wrong, naming the field:
    "field 'score': expected a finite number, got nan"."""
    for key in NUMBER_FIELDS:
        val = rec.get(key)
        vals = val if isinstance(val, list | tuple) else [val]
        for v in vals:
            if isinstance(v, float) and not math.isfinite(v):
                return f"field {key!r}: expected a finite number, got {v!r}"
    return None


def _nonfinite(value: Any, path: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], float] | None:
    """The path to the first number of a parsed JSON value that is not finite (json reads
    1e999 as inf), and that number; None when there is none."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        found = _nonfinite(v, (*path, k))
        if found is not None:
            return found
    return None


def _path_text(path: tuple[Any, ...]) -> str:
    """(3, "score") -> "[3].score"; ("score",) -> "score"."""
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def describe(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


M = TypeVar("M", PairwiseItem, PointwiseItem)


def make_item(model: type[M], source: str, where: str | int, **fields: Any) -> M:
    """Build an item; a value the schema refuses is a DataError naming record and field. An
    integer id is taken as its decimal text (`as_id`); a gold score or quality that is not a
    finite number (NaN, inf) is refused here, as the schema would let it through to fail
    only after the judging."""
    if "id" in fields:
        fields["id"] = as_id(fields["id"])
    bad = nonfinite_field(fields)
    if bad is not None:
        raise DataError(source, where, bad)
    try:
        return model(**fields)
    except ValidationError as e:
        raise DataError(source, where, explain_validation(e, model)) from None


def opt_text(rec: Mapping[str, Any], key: str, source: str, where: str | int) -> str | None:
    """An optional text field: absent or null -> None; anything but text -> DataError."""
    val = rec.get(key)
    if val is None:
        return None
    if not isinstance(val, str):
        raise DataError(source, where, f"field {key!r}: expected text, got {type(val).__name__}")
    return val


def key_field(rec: Mapping[str, Any], key: str, source: str, where: str | int,
              default: Any = None) -> str | int:
    """An identifier field (text or integer) used to build an item id."""
    val = rec.get(key, default)
    if isinstance(val, bool) or not isinstance(val, str | int) or val == "":
        got = "nothing" if val in (None, "") else type(val).__name__
        raise DataError(source, where, f"field {key!r}: expected text or an integer, got {got}")
    return val


def text_field(rec: Mapping[str, Any], key: str, source: str, where: str | int,
               *, allow_empty: bool = True, scalars: bool = False) -> str:
    """A required string field of a record, or a DataError naming record and field.
    `scalars=True` reads a JSON true/false/number as its text (a source that stored the
    answer "True" as a boolean)."""
    if key not in rec:
        raise DataError(source, where, f"field {key!r}: missing (required)")
    val = rec[key]
    if scalars and isinstance(val, (bool, int, float)):
        val = str(val)
    if not isinstance(val, str):
        raise DataError(source, where,
                        f"field {key!r}: expected text, got {type(val).__name__}")
    if not allow_empty and not val.strip():
        raise DataError(source, where, f"field {key!r}: empty")
    return val


def balanced_swaps(n: int, seed: int, key: str) -> list[bool]:
    """Which of n items to present swapped: exactly n//2 (or n//2+1 when n is odd) chosen by
    an RNG seeded from (seed, key), so each item is swapped with probability 1/2 and the
    label share is as close to 50/50 as n allows. Derived from the full list before any
    filtering, so the same item keeps its order whatever subset or variant is loaded."""
    rng = random.Random(f"judgeaudit-swap|{key}|{seed}")
    flags = [i < n // 2 for i in range(n)]
    if n % 2:
        flags[-1] = rng.random() < 0.5
    rng.shuffle(flags)
    return flags


def present(first: str, second: str, swap: bool) -> tuple[str, str, int]:
    """(response_1, response_2, label) for a source pair whose FIRST answer is the better."""
    return (second, first, 2) if swap else (first, second, 1)
