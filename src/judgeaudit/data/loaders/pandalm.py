"""`pandalm:PATH` — the PandaLM human test set (Wang et al., ICLR 2024): 999 pairs, three
independent human labels each (1, 2, 0 = tie).

PATH is the pandalm_testset folder or testset-v1.json. prompt = instruction, plus "\\n\\n" +
input when the input is not empty. `annotator_labels` keeps the three labels; `label` is the
majority: the label at least two of the three annotators gave. Items without such a majority
(all three differ) are dropped, and so are majority ties under `ties=drop` (default
`ties=keep`: label 0). What was kept and dropped is logged on the "judgeaudit.data" logger
and kept in `LAST_LOAD`. `models` comes from cmp_key ("bloom-7b_llama-7b" = the models behind
response1, response2). Ids `pandalm:<idx>`. Six responses are stored as JSON `true` (the model
answered "True"); they are read as the text "True".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from judgeaudit.data.loaders._common import (
    UniqueIds,
    check_params,
    choice_param,
    existing_path,
    file_in,
    key_field,
    make_item,
    opt_text,
    read_json_doc,
    text_field,
)
from judgeaudit.data.registry import DataError, left_out, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

FILE = "testset-v1.json"
# Counts of the most recent load: total, kept, no_majority, ties_dropped, by_label.
LAST_LOAD: dict[str, Any] = {}


def majority(labels: tuple[int, ...]) -> int | None:
    """The label given by at least half of the annotators (>= 2 of 3), or None."""
    label, n = Counter(labels).most_common(1)[0]
    if 2 * n < len(labels):
        return None
    # with an even count two labels could both reach half: no majority then
    if sum(1 for c in Counter(labels).values() if c == n) > 1:
        return None
    return label


def split_models(cmp_key: str) -> tuple[str, str] | None:
    """"bloom-7b_llama-7b" -> ("bloom-7b", "llama-7b"); model names hold no underscore."""
    parts = cmp_key.split("_")
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


def _path(name: str) -> Path:
    p = existing_path(name, "pandalm")
    return file_in(p, FILE) if p.is_dir() else p


@register_loader("pandalm")
def load_pandalm(name: str, params: dict[str, str]) -> list[Item]:
    check_params(f"pandalm:{name}", params, {"ties"})
    ties = choice_param(f"pandalm:{name}", params, "ties", ("keep", "drop"), "keep")
    path = _path(name)
    src = str(path)
    doc = read_json_doc(path)
    data = doc.data
    if not isinstance(data, list):
        raise DataError(src, None, f"expected a JSON list, got {type(data).__name__}")
    items: list[Item] = []
    ids = UniqueIds()
    no_majority = ties_dropped = 0
    dropped: list[str] = []  # their ids, the first few named in the warning
    for pos, rec in enumerate(data):
        where = doc.where(pos)
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        idx = key_field(rec, "idx", src, where, default=pos)
        ids.add(f"pandalm:{idx}", src, where, "idx")
        labels: list[int] = []
        for key in ("annotator1", "annotator2", "annotator3"):
            v = rec.get(key)
            if isinstance(v, str) and v.strip() in ("0", "1", "2"):
                v = int(v)
            if v not in (0, 1, 2) or isinstance(v, bool):
                raise DataError(src, where, f"field {key!r}: expected 1, 2 or 0, got {v!r}")
            labels.append(v)
        label = majority(tuple(labels))
        if label is None:
            no_majority += 1
            dropped.append(f"pandalm:{idx}")
            continue
        if label == 0 and ties == "drop":
            ties_dropped += 1
            dropped.append(f"pandalm:{idx}")
            continue
        instruction = text_field(rec, "instruction", src, where)
        inp = opt_text(rec, "input", src, where) or ""
        prompt = instruction + ("\n\n" + inp if inp.strip() else "")
        cmp_key = opt_text(rec, "cmp_key", src, where) or ""
        items.append(make_item(
            PairwiseItem, src, where,
            id=f"pandalm:{idx}",
            prompt=prompt,
            response_1=text_field(rec, "response1", src, where, scalars=True),
            response_2=text_field(rec, "response2", src, where, scalars=True),
            label=label,
            annotator_labels=tuple(labels),
            models=split_models(cmp_key),
            metadata={"source": "pandalm", "idx": idx, "cmp_key": cmp_key,
                      "motivation_app": rec.get("motivation_app"),
                      "unanimous": len(set(labels)) == 1},
        ))
    by_label = Counter(it.label for it in items if isinstance(it, PairwiseItem))
    LAST_LOAD.clear()
    LAST_LOAD.update(total=len(data), kept=len(items), no_majority=no_majority,
                     ties_dropped=ties_dropped, by_label=dict(sorted(by_label.items())))
    if no_majority or ties_dropped:
        left_out(f"pandalm {src}: {len(items)} of {len(data)} pairs kept ({no_majority} "
                 f"without a 2-of-3 majority of the annotators, {ties_dropped} whose majority "
                 f"is a tie, left out: {', '.join(dropped[:5])}"
                 f"{', ...' if len(dropped) > 5 else ''})")
    return items
