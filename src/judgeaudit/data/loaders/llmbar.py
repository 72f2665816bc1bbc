"""`llmbar:PATH` — LLMBar (Zeng et al., ICLR 2024) and the sets shipped in its layout.

PATH is the data root (the folder holding `data/`, the `data/` folder itself, or the
original repo's `Dataset/`), one subset folder, or one `dataset.json`. A subset is the path
below `data/` (`LLMBar/Natural`, `LLMBar/Adversarial/GPTInst`, `Processed/MT-Bench`, ...).

Item ids are `<subset>:<idx>` with idx the 0-based position in that dataset.json: exactly
the `subset` and `idx` columns of judge_verdicts.csv, so the replay provider finds them.

Param `subset`: comma-separated prefixes (by path component: `LLMBar/Adversarial` selects its
four sets), or `all`. Default: when LLMBar/ sets are present, LLMBar proper = Natural +
Adversarial (419 pairs); otherwise everything under PATH.
"""

from __future__ import annotations

from pathlib import Path

from judgeaudit.data.loaders._common import (
    check_params,
    existing_path,
    make_item,
    read_json_doc,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

_ROOT_NAMES = ("data", "Dataset")
DEFAULT_PREFIX = "LLMBar"


def _subset_name(ds: Path, base: Path) -> str:
    """Path of the dataset's folder below the nearest `data/` (or `Dataset/`) ancestor."""
    folder = ds.parent.resolve()
    for anc in [folder, *folder.parents]:
        if anc.name in _ROOT_NAMES:
            rel = folder.relative_to(anc).as_posix()
            return rel if rel != "." else folder.name
    try:
        rel = folder.relative_to(base.resolve()).as_posix()
    except ValueError:
        rel = "."
    return rel if rel != "." else folder.name


def find_subsets(path: Path) -> dict[str, Path]:
    """{subset name: dataset.json} under PATH, sorted by name."""
    if path.is_file():
        if path.suffix != ".json":
            raise DataError(str(path), None, "expected a dataset.json file or an LLMBar folder")
        files = [path]
        base = path.parent
    else:
        base = path
        for name in _ROOT_NAMES:
            if (path / name).is_dir() and path.name not in _ROOT_NAMES:
                base = path / name
                break
        files = sorted(base.rglob("dataset.json"))
        for f in files:
            if not f.is_file():
                raise DataError(str(f), None, "is a directory; expected a dataset.json file")
    if not files:
        raise DataError(str(path), None, "no dataset.json found (expected the LLMBar data root, "
                        "a subset folder, or a dataset.json)")
    return dict(sorted((_subset_name(f, base), f) for f in files))


def _matches(subset: str, prefix: str) -> bool:
    prefix = prefix.strip("/")
    return subset == prefix or subset.startswith(prefix + "/")


def select(subsets: dict[str, Path], spec: str | None, source: str = "llmbar") -> dict[str, Path]:
    if spec is None:
        chosen = {s: p for s, p in subsets.items() if _matches(s, DEFAULT_PREFIX)}
        return chosen or subsets
    if spec.strip() == "all":
        return subsets
    prefixes = [p.strip() for p in spec.split(",") if p.strip()]
    chosen = {s: p for s, p in subsets.items() if any(_matches(s, x) for x in prefixes)}
    missing = [x for x in prefixes if not any(_matches(s, x) for s in subsets)]
    if missing:
        raise DataError(source, None, f"subset {', '.join(missing)} not found; available: "
                        f"{', '.join(subsets)}")
    return chosen


def load_subset(subset: str, path: Path) -> list[PairwiseItem]:
    doc = read_json_doc(path)
    data = doc.data
    src = str(path)
    if not isinstance(data, list):
        raise DataError(src, None, f"expected a JSON list of pairs, got {type(data).__name__}")
    items = []
    for idx, rec in enumerate(data):
        where = doc.where(idx)
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        label = rec.get("label")
        if label not in (1, 2) or isinstance(label, bool):
            raise DataError(src, where, f"field 'label': expected 1 or 2, got {label!r}")
        items.append(make_item(
            PairwiseItem, src, where,
            id=f"{subset}:{idx}",
            prompt=text_field(rec, "input", src, where),
            response_1=text_field(rec, "output_1", src, where),
            response_2=text_field(rec, "output_2", src, where),
            label=label,
            metadata={"source": "llmbar", "subset": subset, "idx": idx},
        ))
    return items


@register_loader("llmbar")
def load_llmbar(name: str, params: dict[str, str]) -> list[Item]:
    check_params(f"llmbar:{name}", params, {"subset"})
    path = existing_path(name, "llmbar")
    subsets = select(find_subsets(path), params.get("subset"), str(path))
    items: list[Item] = []
    for subset, path in subsets.items():
        items.extend(load_subset(subset, path))
    return items
