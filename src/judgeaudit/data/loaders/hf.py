"""`hf:NAME` — tabular preference data: a Hugging Face hub dataset, or a local
.jsonl/.json/.csv/.parquet file read with the same column mapping.

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
The hub path is not exercised by the tests (no network here).
"""

from __future__ import annotations

import csv
import importlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judgeaudit.data.loaders._common import (
    balanced_swaps,
    check_params,
    int_param,
    present,
    read_json,
    read_jsonl,
)
from judgeaudit.data.loaders.jsonl import explain_validation
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem, PointwiseItem

LOCAL_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
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
    raise ValueError(f"expected 1, 2, 0, A, B or tie, got {v!r}")


def as_text(v: Any) -> Any:
    """Chat-format values ([{role, content}, ...]) -> the last assistant message."""
    if isinstance(v, list) and v and all(isinstance(m, dict) and "content" in m for m in v):
        assistant = [m for m in v if m.get("role") == "assistant"]
        return (assistant or v)[-1]["content"]
    return v


def _read_local(path: Path, split: str | None) -> list[dict[str, Any]]:
    suf = path.suffix.lower()
    if suf == ".jsonl":
        return [rec for _, rec in read_jsonl(path)]
    if suf == ".json":
        data = read_json(path)
        if isinstance(data, dict):  # {"train": [...], "test": [...]} or {"data": [...]}
            keys = [split] if split else ["data", "rows", "train", "test"]
            for key in keys:
                if isinstance(data.get(key), list):
                    data = data[key]
                    break
            else:
                if split:
                    raise DataError(str(path), None, f"no list under split {split!r}; keys: "
                                    f"{', '.join(map(str, data))}")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataError(str(path), None, "expected a JSON list of objects")
        return data
    if suf == ".csv":
        with path.open(newline="", encoding="utf-8-sig") as f:
            return list(csv.DictReader(f))
    if suf == ".parquet":
        try:
            pq = importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise DataError(str(path), None, "reading parquet needs pyarrow: pip install "
                            "pyarrow (or convert the file to .jsonl/.csv)") from None
        return list(pq.read_table(path).to_pylist())
    raise DataError(str(path), None, f"unsupported file type {suf!r}; expected one of "
                    f"{', '.join(LOCAL_SUFFIXES)}")


def _read_hub(name: str, params: dict[str, str]) -> list[dict[str, Any]]:
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
    return [dict(r) for r in ds]


def _pick(role: str, params: dict[str, str], columns: Iterable[str], src: str) -> str | None:
    cols = set(columns)
    if role in params:
        if params[role] not in cols:
            raise DataError(src, None, f"column {params[role]!r} (for {role}) not found; "
                            f"columns: {', '.join(sorted(cols))}")
        return params[role]
    return next((c for c in DEFAULTS.get(role, (role,)) if c in cols), None)


def to_items(rows: list[dict[str, Any]], params: dict[str, str], tag: str, src: str,
             seed: int) -> list[Item]:
    if not rows:
        return []
    columns = list(rows[0])
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
        raise DataError(src, None, f"no prompt column; give prompt=COLUMN (columns: "
                        f"{', '.join(columns)})")
    if not (pair or pref or point):
        raise DataError(src, None, "no response columns; give response_1=COL&response_2=COL "
                        f"(or chosen/rejected, or response) (columns: {', '.join(columns)})")
    shuffle = params.get("shuffle", "1") not in ("0", "false", "no")
    swaps = balanced_swaps(len(rows), seed, f"hf:{tag}") if pref and shuffle else None
    items: list[Item] = []
    for i, row in enumerate(rows):
        where = f"row {i + 1}"
        ident = row.get(col["id"]) if col["id"] else None
        data: dict[str, Any] = {
            "id": str(ident) if ident not in (None, "") else f"hf:{tag}:{i}",
            "prompt": as_text(row.get(col["prompt"])),
            "metadata": {"source": "hf", "dataset": tag, "row": i},
        }
        try:
            if pair:
                data["response_1"] = as_text(row.get(col["response_1"]))
                data["response_2"] = as_text(row.get(col["response_2"]))
                if col["label"]:
                    data["label"] = parse_label(row.get(col["label"]))
            elif pref:
                swap = bool(swaps and swaps[i])
                r1, r2, label = present(as_text(row.get(chosen)), as_text(row.get(rejected)),
                                        swap)
                data.update(response_1=r1, response_2=r2, label=label)
                data["metadata"]["swapped"] = swap
            else:
                data["response"] = as_text(row.get(col["response"]))
                if col["score"] and row.get(col["score"]) not in (None, ""):
                    data["score"] = float(row[col["score"]])
        except ValueError as e:
            field = "score" if point else "label"
            raise DataError(src, where, f"field {field!r} (column "
                            f"{col[field]!r}): {e}") from None
        model = PairwiseItem if (pair or pref) else PointwiseItem
        try:
            items.append(model.model_validate(data))
        except ValidationError as e:
            raise DataError(src, where, explain_validation(e, model)) from None
    return items


@register_loader("hf")
def load_hf(name: str, params: dict[str, str]) -> list[Item]:
    if not name:
        raise DataError("hf", None, "no dataset given; expected hf:ORG/NAME or hf:FILE")
    check_params(f"hf:{name}", params, MAPPED | {"split", "config", "shuffle"})
    seed = int_param(f"hf:{name}", params, "seed", 0)
    path = Path(name).expanduser()
    if path.suffix.lower() in LOCAL_SUFFIXES or path.exists():
        if not path.is_file():
            raise DataError(str(path), None, "no such file")
        rows, tag = _read_local(path, params.get("split") or None), path.stem
        src = str(path)
    else:
        rows, tag = _read_hub(name, params), name
        src = f"hf:{name}"
    return to_items(rows, params, tag, src, seed)
