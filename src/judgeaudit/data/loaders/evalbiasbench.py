"""`evalbiasbench:PATH` — EvalBiasBench from OffsetBias (Park et al. 2024): 80 pairs over six
bias types (length, concreteness, empty reference, content continuation, nested
instruction, familiar knowledge), each a correct response and a bias bait.

The file (biasbench.json) is an object keyed by bias type, each a list of {bias, instruction,
response1, response2, label}; the label is 1 for every pair (response1 is the correct one).
As with CALM, pairs are presented in a seeded random order (`seed`, default 0; exactly half
swapped) and `label` follows the correct response; metadata `swapped` records the swap.

PATH is the offsetbias_evalbiasbench folder or biasbench.json. Param `bias`: comma-separated
bias types to keep (default all). Ids `evalbiasbench:<i>`, i = position in file order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgeaudit.data.loaders._common import (
    balanced_swaps,
    check_params,
    existing_path,
    file_in,
    int_param,
    make_item,
    opt_text,
    present,
    read_json_doc,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

FILE = "biasbench.json"


def _path(name: str) -> Path:
    p = existing_path(name, "evalbiasbench")
    return file_in(p, FILE) if p.is_dir() else p


@register_loader("evalbiasbench")
def load_evalbiasbench(name: str, params: dict[str, str]) -> list[Item]:
    source = f"evalbiasbench:{name}"
    check_params(source, params, {"bias"})
    seed = int_param(source, params, "seed", 0)
    path = _path(name)
    src = str(path)
    doc = read_json_doc(path, depth=3)
    data = doc.data
    # (bias key, record, its key path in the document)
    records: list[tuple[str | None, Any, tuple[Any, ...]]]
    if isinstance(data, dict):
        records = [(key, rec, (key, j) if isinstance(group, list) else (key,))
                   for key, group in data.items()
                   for j, rec in enumerate(group if isinstance(group, list) else [group])]
    elif isinstance(data, list):
        records = [(None, rec, (j,)) for j, rec in enumerate(data)]
    else:
        raise DataError(src, None, f"expected an object keyed by bias type, got "
                        f"{type(data).__name__}")
    wanted = {b.strip() for b in params.get("bias", "").split(",") if b.strip()}
    swaps = balanced_swaps(len(records), seed, "evalbiasbench")
    items: list[Item] = []
    for i, (key, rec, at) in enumerate(records):
        where = doc.where(*at, label=f"{i}" + (f", {key}" if key else ""))
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        bias = opt_text(rec, "bias", src, where) or key
        label = rec.get("label")
        if isinstance(label, str | float) and str(label).strip() in ("1", "2", "1.0", "2.0"):
            label = int(float(label))
        if label not in (1, 2) or isinstance(label, bool):
            raise DataError(src, where, f"field 'label': expected 1 or 2, got {label!r}")
        if wanted and bias not in wanted:
            continue
        better = text_field(rec, f"response{label}", src, where)
        worse = text_field(rec, f"response{3 - label}", src, where)
        r1, r2, lab = present(better, worse, swaps[i])
        items.append(make_item(
            PairwiseItem, src, where,
            id=f"evalbiasbench:{i}",
            prompt=text_field(rec, "instruction", src, where),
            response_1=r1, response_2=r2, label=lab,
            metadata={"source": "evalbiasbench", "bias": bias, "index": i,
                      "swapped": swaps[i] != (label == 2)},
        ))
    if wanted and not items:
        known = sorted({str(r.get("bias") or k) for k, r, _ in records if isinstance(r, dict)})
        raise DataError(source, None, f"bias {', '.join(sorted(wanted))} not found; "
                        f"known: {', '.join(known)}")
    return items
