"""`jsonl:PATH` — our own format: one JSON object per line, each a PairwiseItem or a
PointwiseItem (the fields of data/schema.py).

The kind is told per line by its fields (`response_1`/`response_2` = pairwise, `response` =
pointwise); one file holds one kind. Every item needs an `id` unless `?ids=auto` is given,
which names id-less items `<file stem>:<line number>`; an empty id is refused. Labels may be
written 1, 2, 0 or the strings "1", "2", "0". Errors name the file, the line and the field.

An empty response ("") is read as given, an empty answer (the schema allows it, and a model
can answer nothing; a missing one, absent or null, is refused), but counted and said with
the run's data notes: `hf:` refuses one, as there an empty CSV cell is a missing value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judgeaudit.data.loaders._common import (
    UniqueIds,
    check_params,
    choice_param,
    existing_path,
    explain_validation,
    read_records,
)
from judgeaudit.data.registry import DataError, left_out, register_loader
from judgeaudit.data.schema import Item, PairwiseItem, PointwiseItem
from judgeaudit.textfile import data_suffix

__all__ = ["explain_validation", "load_items", "load_jsonl"]

_PAIR_FIELDS = frozenset(PairwiseItem.model_fields)
_POINT_FIELDS = frozenset(PointwiseItem.model_fields)
_LABEL_TEXT = {"0": 0, "1": 1, "2": 2}


def _kind_of(obj: Mapping[str, Any]) -> str | None:
    if "response_1" in obj or "response_2" in obj:
        return "pairwise"
    if "response" in obj:
        return "pointwise"
    return None


class _BadValue(Exception):
    def __init__(self, field: str, problem: str):
        super().__init__(problem)
        self.field, self.problem = field, problem


def _normalise_labels(obj: dict[str, Any]) -> dict[str, Any]:
    """Accept "1"/"2"/"0" for labels; refuse booleans (pydantic would read true as 1)."""
    out = dict(obj)
    for key in ("label", "annotator_labels"):
        if key not in out:
            continue
        vals = out[key] if key == "annotator_labels" else [out[key]]
        if not isinstance(vals, list):
            continue
        fixed = []
        for v in vals:
            if isinstance(v, bool):
                raise _BadValue(key, f"expected 1, 2 or 0, got {json.dumps(v)}")
            fixed.append(_LABEL_TEXT.get(v, v) if isinstance(v, str) else v)
        out[key] = fixed if key == "annotator_labels" else fixed[0]
    return out


def load_items(path: Path, ids: str = "required") -> list[Item]:
    source = str(path)
    if path.is_dir():
        raise DataError(source, None, "is a directory; expected a .jsonl file")
    items: list[Item] = []
    kind: str | None = None
    first_line = 0
    ids_seen = UniqueIds()
    empty: list[tuple[int, str]] = []  # (line, field) of each item with an empty response
    for lineno, obj in read_records(path, json_hint(path)):
        k = _kind_of(obj)
        if k is None:
            raise DataError(source, lineno, "cannot tell the item kind: expected fields "
                            "'response_1' and 'response_2' (pairwise) or 'response' (pointwise)"
                            f"; other column names (response_a/response_b, chosen/rejected, "
                            f"winner) are read by hf:{path}")
        if kind is None:
            kind, first_line = k, lineno
        elif k != kind:
            raise DataError(source, lineno, f"{k} item in a file of {kind} items (the first "
                            f"item, line {first_line}, is {kind}); a file holds one kind")
        if "id" not in obj:
            if ids != "auto":
                raise DataError(source, lineno, "field 'id': missing (required); give every "
                                "item an id, or load with ?ids=auto to name items "
                                "<file stem>:<line number>")
            obj = {**obj, "id": f"{path.stem}:{lineno}"}
        elif isinstance(obj["id"], str) and not obj["id"].strip():
            raise DataError(source, lineno, "field 'id': empty; ids must not be empty")
        blank = [f for f in ("response_1", "response_2", "response")
                 if isinstance(obj.get(f), str) and not obj[f].strip()]
        if blank:
            empty.append((lineno, blank[0]))
        model = PairwiseItem if kind == "pairwise" else PointwiseItem
        try:
            item = model.model_validate(_normalise_labels(obj))
        except _BadValue as e:
            raise DataError(source, lineno, f"field {e.field!r}: {e.problem}") from None
        except ValidationError as e:
            raise DataError(source, lineno, explain_validation(e, model)
                            + _hf_reads(e, path)) from None
        off = _levels_off_scale(item)
        if off:
            raise DataError(source, lineno, off)
        ids_seen.add(item.id, source, lineno)
        items.append(item)
    if empty:
        line, field = empty[0]
        left_out(f"jsonl {source}: {len(empty)} of {len(items)} items have an empty response "
                 f"(first: line {line}, field {field!r}); they are judged as empty answers")
    return items


def _levels_off_scale(item: PairwiseItem | PointwiseItem) -> str | None:
    """Why a pointwise item's rubric levels cannot be shown, or None: the rubric judge's
    scale is 1..5 (scoring/perturbations.K), and levels keyed otherwise ("6".."10") were cut
    from the prompt without a word, so a 1-10 rubric was judged as its first half."""
    levels = getattr(item, "rubric_levels", None)
    if not levels:
        return None
    scale = [str(k) for k in range(1, 6)]
    off = [k for k in levels if k not in scale]
    if not off:
        return None
    shown = ", ".join(repr(k) for k in off[:5]) + (", ..." if len(off) > 5 else "")
    return (f"field 'rubric_levels': {len(off)} level(s) the rubric judge cannot show "
            f"({shown}); its scale is 1..5, so levels are keyed '1'..'5' (a 1-10 rubric "
            "would be judged on its first five levels); map the rubric onto 1..5 or leave "
            "rubric_levels out")


def _hf_reads(err: ValidationError, path: Path) -> str:
    """For unknown fields that `hf:` reads under another name ("preference", "winner",
    "response_a", "chosen"): where to load the file instead (empty when there are none).
    The refusal named the allowed fields only, not the loader that takes the user's."""
    from judgeaudit.data.loaders.hf import DEFAULTS

    reads = {alias: target for target, aliases in DEFAULTS.items() for alias in aliases
             if alias != target}
    reads.update(chosen="response_1/response_2 (shuffled)",
                 rejected="response_1/response_2 (shuffled)")
    found = [str(e["loc"][0]) for e in err.errors(include_url=False)
             if e["type"] == "extra_forbidden" and e["loc"] and str(e["loc"][0]) in reads]
    if not found:
        return ""
    what = ", ".join(f"{f!r} as {reads[f]}" for f in found)
    return f"; hf:{path} reads {what}"


def json_hint(path: Path) -> str:
    """How a JSON document given as JSON Lines is loaded instead (`read_jsonl`)."""
    how = (f"load it with hf:{path}" if data_suffix(path) == ".json" else
           "rename it to .json and load it with hf:FILE.json")
    return (f"{how} (hf: reads a .json file's records by column: prompt, response_1/"
            "response_2, label, id; other fields are not read)")


@register_loader("jsonl")
def load_jsonl(name: str, params: dict[str, str]) -> list[Item]:
    """Items from our JSONL format; params: `ids=auto|required` (default required)."""
    check_params(f"jsonl:{name}", params, {"ids"})
    ids = choice_param(f"jsonl:{name}", params, "ids", ("required", "auto"), "required")
    return load_items(existing_path(name, "jsonl"), ids)
