"""results.json: plain JSON with a schema version and the methods and build that made it,
written atomically, so a report can be rebuilt from it alone and a crash never leaves half
a file. A neutral module (it imports only the neutral `judgeaudit.methods`): the commands
write results and `audit.compare` reads them without importing the report package (DESIGN's
arrows: audit does not depend on report)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judgeaudit.files import write_atomic

SCHEMA_VERSION = 1

# Decimals a cost in USD keeps in machine output (results.json, --json, a plan's estimate):
# sums of per-call costs carried float residue (0.8909999999999999, 3.940000000000001). A
# ten-billionth of a dollar is far below any price per token, so rounding there loses nothing.
USD_DIGITS = 10


def usd_value(x: Any) -> Any:
    """A cost in USD as machine output writes it: a float rounded to `USD_DIGITS` decimals;
    anything else (None, NaN, a count) as it is."""
    if isinstance(x, float) and math.isfinite(x):
        return round(x, USD_DIGITS)
    return x


def utc_stamp(when: datetime | None = None) -> str:
    """A time as every command's results.json writes `started`: ISO 8601 in UTC to the
    second with a Z ('2026-11-29T05:16:45Z'). Commands wrote '...Z', '+00:00' or nothing."""
    when = datetime.now(UTC) if when is None else when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def started_value(x: Any) -> Any:
    """A `started` as results.json writes it (`utc_stamp`): an ISO 8601 time with an offset
    ('+00:00' from an older file) in UTC with a Z; text without a zone, or not a time, as
    it is (a reader is not told a zone nobody recorded)."""
    if not isinstance(x, str):
        return x
    try:
        t = datetime.fromisoformat(x)
    except ValueError:
        return x
    return x if t.tzinfo is None else utc_stamp(t)


def seconds_value(x: Any) -> Any:
    """A run's `seconds` as results.json writes it: to 0.01 s (a wall time measured no finer;
    commands wrote 2.63 beside 20.65396547317505); anything else as it is."""
    if isinstance(x, float) and math.isfinite(x):
        return round(x, 2)
    return x


def run_stamps(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` (edited in place) with its top-level `started` and `seconds` in the one format
    every command writes (`started_value`, `seconds_value`): the one place they are set,
    for a document written (`write_results`) or returned by the Python API."""
    for key, norm in (("started", started_value), ("seconds", seconds_value)):
        if key in doc:
            doc[key] = norm(doc[key])
    return doc


def _text(s: str) -> str:
    """Lone surrogates (from a reply or an input) cannot be written as UTF-8: U+FFFD."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return s


def plain(obj: Any) -> Any:
    """A value as results.json holds it: NaN and infinities become None, numpy scalars and
    arrays Python numbers and lists, tuples lists, keys text, and text that is not valid
    Unicode gets U+FFFD. A cost (a key starting "cost_usd") is rounded (`usd_value`)."""
    if isinstance(obj, str):
        return _text(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, bool | int):
        return obj
    if isinstance(obj, Mapping):
        return {_text(str(k)): usd_value(plain(v)) if str(k).startswith("cost_usd")
                else plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy arrays and scalars
        return plain(obj.tolist())
    if hasattr(obj, "item") and callable(obj.item):
        return plain(obj.item())
    return obj


def _dumps(obj: Any, depth: int = 0) -> str:
    """JSON indented by 2 like `json.dumps(indent=2)`, except that a list of plain values
    (numbers, text, booleans, nulls) stays on one line: per-item records (quantify's flips,
    mitigate's verdicts per query) took a line per value, 17.6 bytes a flip."""
    def one(x: Any) -> str:
        return json.dumps(x, ensure_ascii=False, allow_nan=False)

    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        return "{\n" + ",\n".join(f"{inner}{one(str(k))}: {_dumps(v, depth + 1)}"
                                   for k, v in obj.items()) + f"\n{pad}}}"
    if isinstance(obj, list):
        if not obj or all(not isinstance(x, dict | list) for x in obj):
            return one(obj)
        return "[\n" + ",\n".join(f"{inner}{_dumps(v, depth + 1)}" for v in obj) + f"\n{pad}]"
    return one(obj)


def write_results(path: str | Path, results: Mapping[str, Any]) -> Path:
    """Write `results` as results.json with its schema version and the methods and build
    that made it (`methods.stamp`: a document read from an older file keeps its own)."""
    from judgeaudit.methods import stamp

    doc = stamp(run_stamps({"schema_version": SCHEMA_VERSION, **plain(results)}))
    return write_atomic(Path(path), _dumps(doc) + "\n")


def read_results(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no results file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text file; expected a results.json") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: invalid JSON at column {e.colno}: {e.msg}; "
                         "expected a results.json written by judgeaudit") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply; not a results.json") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object (a results.json written by "
                         f"judgeaudit), got a JSON {type(doc).__name__}")
    v = doc.get("schema_version")
    if v is None and "command" not in doc:
        raise ValueError(f"{path}: not a results.json written by judgeaudit (it has no "
                         "schema_version and no command)")
    if v != SCHEMA_VERSION:
        import judgeaudit

        raise ValueError(f"{path}: schema_version {v!r}, this judgeaudit reads {SCHEMA_VERSION}; "
                         f"re-run the command with judgeaudit {judgeaudit.__version__}")
    # a file from before the methods stamp reads as methods 0, so a reader can tell it from
    # a document in memory (today's methods) and re-saving it does not stamp it as new
    doc.setdefault("methods", 0)
    return doc
