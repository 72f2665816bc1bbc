"""`preference:PATH` — pairwise human-preference JSON Lines: one object per line with
`response_1`, `response_2`, the prompt (`prompt`, or `instruction` plus an optional
Alpaca-style `input` joined to it by a blank line when not empty) and a 0/1/2 `label` whose
meaning the file does not say, so the caller declares it:

- `labels=first_is_1` (the default): 1 = response_1 better, 2 = response_2 better, 0 = tie
  (the convention of this package, LLMBar and PandaLM);
- `labels=first_is_0`: 0 = response_1 better, 1 = response_2 better, 2 = tie
  (`zero_is_first` is accepted as another name for it);
- `labels=first_is_0_no_ties`: 0 = response_1 better, 1 = response_2 better, no ties
  (`zero_first_one_second` is accepted as another name for it).

Every label is mapped to this package's meaning (PairwiseItem.label: 1, 2, 0 = tie). A value
outside the declared meaning (3, -1, 2 under `first_is_0_no_ties`, a missing or null label, a
boolean, 1.5, "A") is refused with a DataError naming the file, the line and the field; the
integer-valued spellings 1, 1.0 and "1" are the same label. `metadata` keeps the value as
written (`raw_label`) and the declared meaning (`labels`).

A file whose labels mean the opposite of what is declared loads without any error: every
pair is simply scored against the wrong answer. That is the classic silent error here, and
the one no loader can see. `judgeaudit evaluate` warns "labels may be inverted" when a judge's
accuracy is significantly below chance (its 95% interval below 50%) or its kappa's 95%
interval is below 0; on such a warning, check the `labels=` meaning before blaming the judge.

Ids: `id=COL` names the id column (default `id`; text or an integer). A record without it is
refused unless `ids=auto`, which names it `<file stem>:<line number>`. Ids must be unique.
An optional `reference` text field becomes the item's reference. Errors name the file, the
line and the field; a UTF-8 BOM and CRLF line endings are fine, other encodings are refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgeaudit.data.loaders._common import (
    UniqueIds,
    check_params,
    choice_param,
    describe,
    existing_path,
    key_field,
    make_item,
    opt_text,
    read_records,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

# meaning -> ({value in the file: PairwiseItem label}, in words)
MEANINGS: dict[str, tuple[dict[int, int], str]] = {
    "first_is_1": ({1: 1, 2: 2, 0: 0},
                   "1 = response_1 better, 2 = response_2 better, 0 = tie"),
    "first_is_0": ({0: 1, 1: 2, 2: 0},
                   "0 = response_1 better, 1 = response_2 better, 2 = tie"),
    "first_is_0_no_ties": ({0: 1, 1: 2},
                           "0 = response_1 better, 1 = response_2 better, no ties"),
}
ALIASES = {"zero_is_first": "first_is_0", "zero_first_one_second": "first_is_0_no_ties"}
DEFAULT = "first_is_1"


def meaning_param(source: str, params: dict[str, str]) -> str:
    """The canonical name of the declared label meaning (`labels=`; aliases resolved)."""
    raw = params.get("labels") or DEFAULT
    name = ALIASES.get(raw, raw)
    if name not in MEANINGS:
        spelled = "; ".join(f"{k} ({v[1]})" for k, v in MEANINGS.items())
        raise DataError(source, None, f"parameter 'labels': expected one of {spelled}; "
                        f"got {raw!r}")
    return name


def _label_value(raw: Any) -> int | None:
    """1, 1.0 and "1" -> 1; anything but an integer (a boolean, 1.5, "A", null) -> None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    if isinstance(raw, str) and raw.strip().isdigit() and raw.strip().isascii():
        raw = int(raw.strip())
    return raw if isinstance(raw, int) else None


def to_label(rec: dict[str, Any], meaning: str, src: str, line: int) -> tuple[int, Any]:
    """(PairwiseItem label, the value as written) of a record under the declared meaning."""
    mapping, words = MEANINGS[meaning]
    if "label" not in rec:
        raise DataError(src, line, "field 'label': missing (required)")
    raw = rec["label"]
    value = _label_value(raw)
    if value is None or value not in mapping:
        hint = ""
        if meaning == "first_is_0_no_ties" and value == 2:
            hint = "; if 2 means a tie, load with labels=first_is_0"
        shown = json.dumps(raw) if raw is None or isinstance(raw, bool) else describe(raw)
        raise DataError(src, line, f"field 'label': {shown} is not a label under "
                        f"labels={meaning} ({words}){hint}")
    return mapping[value], raw


def _prompt(rec: dict[str, Any], src: str, line: int) -> str:
    if "prompt" in rec:
        return text_field(rec, "prompt", src, line)
    if "instruction" in rec:
        instruction = text_field(rec, "instruction", src, line)
        inp = opt_text(rec, "input", src, line) or ""
        return instruction + ("\n\n" + inp if inp.strip() else "")
    raise DataError(src, line, "field 'prompt' (or 'instruction'): missing (required)")


def parse_file(path: Path, meaning: str, id_col: str, ids: str) -> list[Item]:
    src = str(path)
    items: list[Item] = []
    seen = UniqueIds()
    for line, rec in read_records(path):
        if rec.get(id_col) is None:
            if ids != "auto":
                raise DataError(src, line, f"field {id_col!r}: missing (required); give every "
                                "pair an id, name the id field with ?id=FIELD, or load with "
                                "?ids=auto to name pairs <file stem>:<line number>")
            item_id = f"{path.stem}:{line}"
        else:
            item_id = str(key_field(rec, id_col, src, line))
        prompt = _prompt(rec, src, line)
        r1 = text_field(rec, "response_1", src, line)
        r2 = text_field(rec, "response_2", src, line)
        label, raw = to_label(rec, meaning, src, line)
        seen.add(item_id, src, line, id_col if rec.get(id_col) is not None else "id")
        items.append(make_item(
            PairwiseItem, src, line,
            id=item_id, prompt=prompt, response_1=r1, response_2=r2, label=label,
            reference=opt_text(rec, "reference", src, line),
            metadata={"source": "preference", "labels": meaning, "raw_label": raw,
                      "file": path.name, "line": line},
        ))
    return items


@register_loader("preference")
def load_preference(name: str, params: dict[str, str]) -> list[Item]:
    source = f"preference:{name}"
    check_params(source, params, {"labels", "id", "ids"})
    meaning = meaning_param(source, params)
    ids = choice_param(source, params, "ids", ("required", "auto"), "required")
    id_col = params.get("id") or "id"
    return parse_file(existing_path(name, "preference"), meaning, id_col, ids)
