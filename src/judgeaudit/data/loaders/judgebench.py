"""`judgebench:PATH` — JudgeBench (Tan et al., ICLR 2025) response pairs.

The public files (ScalerLab/JudgeBench, data/dataset=judgebench,response_model=*.jsonl; the
hub dataset has the same fields) hold one record per line: `pair_id`, `original_id`,
`source` (e.g. mmlu-pro-law, livebench-math), `question`, `response_model`, `response_A`,
`response_B`, `label` ("A>B" or "B>A"; "A=B" is read as a tie, "A<B"/"B<A" as their
mirror). The order is already randomised by the authors, so nothing is shuffled here.

PATH is one .jsonl (or .json list) file or a folder of them (all loaded, sorted by name).
Ids `judgebench:<pair_id>`; both responses come from `response_model`, kept in `models`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgeaudit.data.loaders._common import (
    UniqueIds,
    check_params,
    existing_path,
    key_field,
    make_item,
    read_json_doc,
    read_records,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

LABELS = {"A>B": 1, "B<A": 1, "B>A": 2, "A<B": 2, "A=B": 0, "B=A": 0}


def _records(path: Path) -> list[tuple[str | int, dict[str, Any]]]:
    if path.suffix == ".json":
        doc = read_json_doc(path)
        data = doc.data
        if not isinstance(data, list):
            raise DataError(str(path), None, f"expected a JSON list, got {type(data).__name__}")
        out: list[tuple[str | int, dict[str, Any]]] = []
        for i, rec in enumerate(data):
            if not isinstance(rec, dict):
                raise DataError(str(path), doc.where(i),
                                f"expected an object, got {type(rec).__name__}")
            out.append((doc.where(i), rec))
        return out
    return list(read_records(path))


def _item(rec: dict[str, Any], src: str, where: str | int) -> PairwiseItem:
    raw = rec.get("label")
    label = LABELS.get(raw.replace(" ", "")) if isinstance(raw, str) else None
    if label is None:
        raise DataError(src, where, f"field 'label': expected \"A>B\", \"B>A\" or \"A=B\", "
                        f"got {raw!r}")
    if rec.get("pair_id") in (None, ""):
        raise DataError(src, where, "field 'pair_id': missing (required)")
    pair_id = key_field(rec, "pair_id", src, where)
    model = rec.get("response_model")
    return make_item(
        PairwiseItem, src, where,
        id=f"judgebench:{pair_id}",
        prompt=text_field(rec, "question", src, where),
        response_1=text_field(rec, "response_A", src, where),
        response_2=text_field(rec, "response_B", src, where),
        label=label,
        models=(model, model) if isinstance(model, str) and model else None,
        metadata={"source": "judgebench", "pair_id": pair_id,
                  "original_id": rec.get("original_id"), "task_source": rec.get("source")},
    )


@register_loader("judgebench")
def load_judgebench(name: str, params: dict[str, str]) -> list[Item]:
    check_params(f"judgebench:{name}", params, ())
    path = existing_path(name, "judgebench")
    files = ([path] if not path.is_dir()
             else sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".json")))
    if not files:
        raise DataError(str(path), None, "no .jsonl or .json files in the folder")
    items: list[Item] = []
    ids = UniqueIds()
    for f in files:
        for where, rec in _records(f):
            item = _item(rec, str(f), where)
            ids.add(item.id, str(f), where, "pair_id")
            items.append(item)
    return items
