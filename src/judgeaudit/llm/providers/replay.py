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
"""

from __future__ import annotations

import csv
import hashlib
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


def _read_rows(path: Path, data: bytes) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Rows as (line number, {column: text}); JSONL values are turned into text."""
    text = data.decode("utf-8-sig")
    is_jsonl = path.suffix.lower() in {".jsonl", ".ndjson"} or (
        path.suffix.lower() != ".csv" and text.lstrip().startswith("{")
    )
    rows: list[tuple[int, dict[str, str]]] = []
    if is_jsonl:
        columns: dict[str, None] = {}
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object per line")
            row = {k: _text(v) for k, v in obj.items()}
            columns.update(dict.fromkeys(row))
            rows.append((lineno, row))
        return list(columns), rows
    reader = csv.DictReader(text.splitlines())
    if reader.fieldnames is None:
        raise ValueError(f"{path}: empty file, expected a CSV header")
    for row in reader:
        if None in row:
            raise ValueError(f"{path}:{reader.line_num}: more fields than the header has")
        rows.append((reader.line_num, {k: v or "" for k, v in row.items()}))
    return list(reader.fieldnames), rows


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


def _item_id(path: Path, lineno: int, row: dict[str, str]) -> str:
    if row.get("item_id"):
        return row["item_id"]
    if row.get("subset") and row.get("idx") not in (None, ""):
        return f"{row['subset']}:{row['idx']}"
    raise ValueError(f"{path}:{lineno}: no item key (expected `item_id`, or `subset` and `idx`)")


def _sample(path: Path, lineno: int, row: dict[str, str]) -> int:
    s = row.get("sample", "")
    if s == "":
        return 0
    try:
        return int(s)
    except ValueError:
        raise ValueError(f"{path}:{lineno}: column sample={s!r}, expected an integer") from None


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
    p = Path(path).expanduser().resolve()
    try:
        st = p.stat()
    except OSError as exc:
        raise ValueError(f"replay file {path}: {exc.strerror or exc}") from None
    fkey = (str(p), st.st_size, st.st_mtime_ns)
    key = (fkey, tuple(sorted(filters.items())))
    if key in _INDEXES:
        return _INDEXES[key]
    if fkey not in _PARSED:  # parse each file version once, whatever the filters
        data = p.read_bytes()
        _PARSED[fkey] = (*_read_rows(p, data), hashlib.sha256(data).hexdigest(), len(data))
    columns, rows, sha, size = _PARSED[fkey]
    unknown = [k for k in filters if k not in columns]
    if unknown:
        raise ValueError(
            f"replay file {p.name}: filter column(s) {', '.join(unknown)} not in the file; "
            f"columns are: {', '.join(columns)}"
        )
    wide = all(c in columns for c in WIDE)
    long = all(c in columns for c in LONG)
    if not (wide or long or "score" in columns):
        raise ValueError(
            f"replay file {p.name}: no verdict columns; expected {' + '.join(WIDE)} "
            f"(original output numbering), or {' + '.join(LONG)}, or score; "
            f"columns are: {', '.join(columns)}"
        )
    run_cols = tuple(c for c in columns if c not in VALUE_COLUMNS and c not in filters)

    # (item, order-or-"*") -> {run tuple -> (sample, lineno, row)}; highest sample wins per run.
    best: dict[tuple[str, str], dict[tuple[str, ...], tuple[int, int, dict[str, str]]]] = (
        defaultdict(dict))
    kept = 0
    for lineno, row in rows:
        if any(row.get(k, "") != v for k, v in filters.items()):
            continue
        kept += 1
        item = _item_id(p, lineno, row)
        if long and not wide:
            order = row["order"].strip()
            if order not in {"12", "21"}:
                raise ValueError(f"{p}:{lineno}: column order={order!r}, expected '12' or '21'")
        else:
            order = "*"
        run = tuple(row.get(c, "") for c in run_cols)
        s = _sample(p, lineno, row)
        prev = best[item, order].get(run)
        if prev is None or s > prev[0]:
            best[item, order][run] = (s, lineno, row)
        elif s == prev[0] and _values(prev[2]) != _values(row):
            raise ValueError(
                f"{p}: lines {prev[1]} and {lineno} record different verdicts for item "
                f"{item!r} (sample {s}) with {describe_filters(filters)}"
            )

    verdicts: dict[tuple[str, str], str] = {}
    scores: dict[str, str] = {}
    ambiguous: list[tuple[str, dict[tuple[str, ...], Any]]] = []
    for (item, order), runs in best.items():
        if len(runs) > 1:
            ambiguous.append((item, runs))
            continue
        (_, _, row), = runs.values()
        if wide:
            verdicts[item, "12"] = _presented(row["winner_original_order"], "12")
            verdicts[item, "21"] = _presented(row["winner_swapped_order"], "21")
        elif long:
            verdicts[item, order] = _presented(row["verdict"], order)
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


def _values(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row.get(c, "") for c in (*WIDE, "verdict", "score", "score_1", "score_2"))


@register
class ReplayProvider(Provider):
    """Serves recorded verdicts; `model` is the file path, every parameter a column filter."""

    name: ClassVar[str] = "replay"
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


__all__ = ["ReplayIndex", "ReplayProvider", "load_index"]
