"""`calm:PATH` — CALM ("Justice or Prejudice?", Ye et al. 2024) base pairs and bias sets.

Every CALM file is a JSON list of {question, answer1, answer2, data_resource, ...} where
answer1 is the better answer, always FIRST. Read as is, a judge's accuracy would equal its
first-position rate; so each pair is presented in a seeded random order (`seed`, default 0):
exactly half of each file's pairs are swapped (chosen by the RNG), and `label` follows the
better answer. metadata `swapped` says whether response_1 is the source's answer2.

PATH: the CALM root (default there: the three base_datasets files), a folder, or one file.
Params:
- `set`: comma-separated file-stem prefixes (`verbosity`, `fact_related`, ...) or `all`,
  searched below PATH.
- `variant`: a perturbed field to put in place of its answer, e.g. `answer2_longer`,
  `answer1_cheerful`, `answer2_with_reference_book`, `answer1_fallacy_oversight`; only files
  with that field are read and pairs lacking it are skipped (counted in the log). The order
  is the base pair's order, so base and variant items line up. With the fallacy variant the
  better answer is answer2 (answer1 now argues by fallacies); otherwise answer1 stays better.
- refinement files have no answer2: their pair is answer1 vs answer1_polished, label None.

Ids `calm:<file stem>:<i>` (i = position in the file), `...:<variant>` for variant items.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgeaudit.data.loaders._common import (
    balanced_swaps,
    check_params,
    existing_path,
    int_param,
    make_item,
    present,
    read_json_doc,
    read_text,
    text_field,
)
from judgeaudit.data.registry import DataError, left_out, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

BASE_DIR = "base_datasets"


def bias_name(stem: str) -> str:
    """`verbosity_bias_standardized` -> `verbosity`; `fact_related_dataset` -> `fact_related`."""
    for suffix in ("_bias_standardized", "_dataset"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return stem


def find_files(path: Path, sets: str | None) -> list[Path]:
    if not path.is_dir():
        return [path]
    every = sorted(path.rglob("*.json"))
    if not every:
        raise DataError(str(path), None, "no .json files found")
    for p in every:
        if not p.is_file():
            raise DataError(str(p), None, "is a directory; expected a CALM .json file")
    if sets is None:
        base = [p for p in every if p.parent.name == BASE_DIR]
        return base if (path / BASE_DIR).is_dir() and base else every
    if sets.strip() == "all":
        return every
    prefixes = [s.strip() for s in sets.split(",") if s.strip()]
    chosen = [p for p in every if any(p.stem.startswith(x) for x in prefixes)]
    missing = [x for x in prefixes if not any(p.stem.startswith(x) for p in every)]
    if missing:
        raise DataError(str(path), None, f"set {', '.join(missing)} not found; files: "
                        f"{', '.join(p.stem for p in every)}")
    return chosen


def load_file(path: Path, seed: int, variant: str | None) -> tuple[list[PairwiseItem], int]:
    """Items of one CALM file and the number of pairs skipped for lacking the variant."""
    src, stem = str(path), path.stem
    doc = read_json_doc(path)
    data = doc.data
    if not isinstance(data, list):
        raise DataError(src, None, f"expected a JSON list, got {type(data).__name__}")
    swaps = balanced_swaps(len(data), seed, f"calm:{stem}")
    items: list[PairwiseItem] = []
    skipped = 0
    for i, rec in enumerate(data):
        where = doc.where(i)
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        meta: dict[str, Any] = {"source": "calm", "file": stem, "bias": bias_name(stem),
                                "data_resource": rec.get("data_resource"), "index": i,
                                "swapped": swaps[i]}
        question = text_field(rec, "question", src, where)
        a1 = text_field(rec, "answer1", src, where)
        if "answer2" not in rec and "answer1_polished" in rec:
            # refinement sets: the original answer vs its polished rewrite; no gold order
            first, second = a1, text_field(rec, "answer1_polished", src, where)
            r1, r2, _ = present(first, second, swaps[i])
            label = None
            meta["pair"] = "answer1_vs_answer1_polished"
        else:
            a2 = text_field(rec, "answer2", src, where)
            better = 1
            if variant is not None:
                if variant not in rec:
                    skipped += 1
                    continue
                new = text_field(rec, variant, src, where)
                if variant.startswith("answer1"):
                    a1 = new
                    if "fallacy" in variant:
                        better = 2
                else:
                    a2 = new
                meta["variant"] = variant
            r1, r2, label = present(a1, a2, swaps[i])
            if better == 2:
                label = 3 - label
            meta["pair"] = "answer1_vs_answer2"
            meta["better_source"] = f"answer{better}"
        base_id = f"calm:{stem}:{i}"
        if variant is not None and "variant" in meta:
            meta["base_id"] = base_id
        items.append(make_item(
            PairwiseItem, src, where,
            id=base_id + (f":{variant}" if "variant" in meta else ""),
            prompt=question, response_1=r1, response_2=r2, label=label, metadata=meta,
        ))
    return items, skipped


@register_loader("calm")
def load_calm(name: str, params: dict[str, str]) -> list[Item]:
    source = f"calm:{name}"
    check_params(source, params, {"set", "variant"})
    seed = int_param(source, params, "seed", 0)
    variant = params.get("variant") or None
    if variant is not None and not variant.startswith(("answer1_", "answer2_")):
        raise DataError(source, None, f"parameter 'variant': expected a field name such as "
                        f"answer2_longer or answer1_cheerful, got {variant!r}")
    files = find_files(existing_path(name, "calm"), params.get("set"))
    items: list[Item] = []
    skipped = 0
    for f in files:
        if variant is not None and f'"{variant}"' not in read_text(f):
            continue  # cheap pre-filter: the file has no such field at all
        got, sk = load_file(f, seed, variant)
        items.extend(got)
        skipped += sk
    if variant is not None and not items:
        raise DataError(source, None, f"no pairs have the field {variant!r} in the chosen files")
    if skipped:
        left_out(f"calm {name}: {skipped} pairs lack the field {variant!r} and were left out "
                 f"({len(items)} kept)")
    return items
