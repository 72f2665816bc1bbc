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

from judgeaudit.data.loaders._common import (
    balanced_swaps,
    check_params,
    existing_path,
    int_param,
    present,
    read_json,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

FILE = "biasbench.json"


def _path(name: str) -> Path:
    p = existing_path(name, "evalbiasbench")
    if p.is_dir():
        p = p / FILE
        if not p.exists():
            raise DataError(str(p), None, f"no such file; expected {FILE} in the folder")
    return p


@register_loader("evalbiasbench")
def load_evalbiasbench(name: str, params: dict[str, str]) -> list[Item]:
    source = f"evalbiasbench:{name}"
    check_params(source, params, {"bias"})
    seed = int_param(source, params, "seed", 0)
    path = _path(name)
    src = str(path)
    data = read_json(path)
    if isinstance(data, dict):
        records = [(key, rec) for key, group in data.items()
                   for rec in (group if isinstance(group, list) else [group])]
    elif isinstance(data, list):
        records = [(None, rec) for rec in data]
    else:
        raise DataError(src, None, f"expected an object keyed by bias type, got "
                        f"{type(data).__name__}")
    wanted = {b.strip() for b in params.get("bias", "").split(",") if b.strip()}
    swaps = balanced_swaps(len(records), seed, "evalbiasbench")
    items: list[Item] = []
    for i, (key, rec) in enumerate(records):
        where = f"record {i}" + (f" ({key})" if key else "")
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        bias = rec.get("bias") or key
        label = rec.get("label")
        label = int(label) if isinstance(label, str) and label.strip() in ("1", "2") else label
        if label not in (1, 2) or isinstance(label, bool):
            raise DataError(src, where, f"field 'label': expected 1 or 2, got {label!r}")
        if wanted and bias not in wanted:
            continue
        better = text_field(rec, f"response{label}", src, where)
        worse = text_field(rec, f"response{3 - label}", src, where)
        r1, r2, lab = present(better, worse, swaps[i])
        items.append(PairwiseItem(
            id=f"evalbiasbench:{i}",
            prompt=text_field(rec, "instruction", src, where),
            response_1=r1, response_2=r2, label=lab,
            metadata={"source": "evalbiasbench", "bias": bias, "index": i,
                      "swapped": swaps[i] != (label == 2)},
        ))
    if wanted and not items:
        known = sorted({r.get("bias") or k for k, r in records if isinstance(r, dict)})
        raise DataError(source, None, f"bias {', '.join(sorted(wanted))} not found; "
                        f"known: {', '.join(known)}")
    return items
