"""`prometheus:PATH` — the prometheus-eval benchmark files (Kim et al. 2024).

PATH is the prometheus_eval folder (then `set=` picks the file) or one of its files.
- `set=mt_bench` (default) / `set=vicuna`: mt_bench_eval.json / vicuna_eval.json, 320
  PointwiseItems each. The file stores the full Prometheus grading prompt; it is parsed back
  into prompt (the instruction, which for MT-Bench turn 2 includes the dialogue), response,
  reference answer, rubric (the criteria line) and rubric_levels ("1".."5"). score = mean of
  the three GPT-4 scores (a MODEL label, not a human one); the three are in
  metadata `gpt4_scores`. Ids `prometheus:<set>:<idx>:<response_source>`.
- `set=hhh`: hhh_alignment_eval.json, 221 PairwiseItems (chosen vs rejected, HHH gold),
  presented in a seeded random order like CALM (`seed`, default 0; exactly half swapped).
  The rubric goes into metadata. Ids `prometheus:hhh:<i>`.
- `set=biggen`: biggen_bench_instances.json, 765 PointwiseItems with rubric, levels and
  reference but NO real response (the file holds the placeholder "Hello World!") and no
  score: usable as instructions + rubrics only. Ids `prometheus:biggen:<id>`.
"""

from __future__ import annotations

import re
from pathlib import Path
from statistics import mean
from typing import Any

from judgeaudit.data.loaders._common import (
    UniqueIds,
    balanced_swaps,
    check_params,
    choice_param,
    existing_path,
    file_in,
    int_param,
    key_field,
    log,
    make_item,
    opt_text,
    present,
    read_json_doc,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem, PointwiseItem

FILES = {"mt_bench": "mt_bench_eval.json", "vicuna": "vicuna_eval.json",
         "hhh": "hhh_alignment_eval.json", "biggen": "biggen_bench_instances.json"}
SECTIONS = {
    "instruction": "###The instruction to evaluate:",
    "response": "###Response to evaluate:",
    "reference": "###Reference Answer (Score 5):",
    "rubric": "###Score Rubrics:",
    "feedback": "###Feedback:",
}
_LEVEL = re.compile(r"^Score ([1-5]):\s*(.*)$")


def parse_prompt(text: str, src: str, where: str) -> dict[str, Any]:
    """Split a Prometheus grading prompt into its sections; errors name the missing one."""
    found = sorted((text.find(h), key) for key, h in SECTIONS.items() if h in text)
    pos = dict((k, i) for i, k in found)
    for key in ("instruction", "response", "rubric"):
        if key not in pos:
            raise DataError(src, where, f"grading prompt has no {SECTIONS[key]!r} section")
    out: dict[str, Any] = {}
    for n, (start, key) in enumerate(found):
        end = found[n + 1][0] if n + 1 < len(found) else len(text)
        out[key] = text[start + len(SECTIONS[key]):end].strip()
    criteria, levels = parse_rubric(out["rubric"], src, where)
    out["criteria"], out["levels"] = criteria, levels
    return out


def parse_rubric(block: str, src: str, where: str) -> tuple[str, dict[str, str]]:
    """'[criteria]\\nScore 1: ...\\n...Score 5: ...' -> (criteria, {"1": ..., "5": ...})."""
    # "\n" only: a U+2028 inside a level's text is part of it, not a line break
    lines = [ln.strip() for ln in block.split("\n") if ln.strip()]
    criteria_lines: list[str] = []
    levels: dict[str, str] = {}
    current: str | None = None
    for ln in lines:
        m = _LEVEL.match(ln)
        if m:
            current = m.group(1)
            levels[current] = m.group(2).strip()
        elif current is None:
            criteria_lines.append(ln)
        else:
            levels[current] += "\n" + ln
    if sorted(levels) != ["1", "2", "3", "4", "5"]:
        raise DataError(src, where, f"rubric: expected 'Score 1:' .. 'Score 5:' lines, found "
                        f"{', '.join(sorted(levels)) or 'none'}")
    criteria = " ".join(criteria_lines)
    if criteria.startswith("[") and criteria.endswith("]"):
        criteria = criteria[1:-1].strip()
    return criteria, levels


def _scored(path: Path, set_name: str) -> list[Item]:
    src = str(path)
    doc = read_json_doc(path)
    data = doc.data
    if not isinstance(data, list):
        raise DataError(src, None, f"expected a JSON list, got {type(data).__name__}")
    items: list[Item] = []
    ids = UniqueIds()
    for i, rec in enumerate(data):
        where = doc.where(i)
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        sec = parse_prompt(text_field(rec, "instruction", src, where), src, where)
        scores = rec.get("gpt4_score")
        if (not isinstance(scores, list) or not scores
                or not all(isinstance(s, int) and 1 <= s <= 5 for s in scores)):
            raise DataError(src, where, f"field 'gpt4_score': expected a list of integers "
                            f"1-5, got {scores!r}")
        item_id = (f"prometheus:{set_name}:{key_field(rec, 'idx', src, where, i)}:"
                   f"{key_field(rec, 'response_source', src, where, i)}")
        ids.add(item_id, src, where, "idx")
        items.append(make_item(
            PointwiseItem, src, where,
            id=item_id,
            prompt=sec["instruction"], response=sec["response"],
            score=float(mean(scores)), rubric=sec["criteria"], rubric_levels=sec["levels"],
            reference=sec.get("reference") or None,
            metadata={"source": "prometheus", "set": set_name, "idx": rec.get("idx"),
                      "category": rec.get("category"),
                      "response_source": rec.get("response_source"), "gpt4_scores": scores},
        ))
    return items


def _hhh(path: Path, seed: int) -> list[Item]:
    src = str(path)
    doc = read_json_doc(path)
    data = doc.data
    if not isinstance(data, list):
        raise DataError(src, None, f"expected a JSON list, got {type(data).__name__}")
    swaps = balanced_swaps(len(data), seed, "prometheus:hhh")
    items: list[Item] = []
    for i, rec in enumerate(data):
        where = doc.where(i)
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        ch = parse_prompt(text_field(rec, "chosen_instruction", src, where), src, where)
        rj = parse_prompt(text_field(rec, "rejected_instruction", src, where), src, where)
        if ch["instruction"] != rj["instruction"]:
            raise DataError(src, where, "chosen and rejected prompts differ in the instruction")
        r1, r2, label = present(ch["response"], rj["response"], swaps[i])
        items.append(make_item(
            PairwiseItem, src, where,
            id=f"prometheus:hhh:{i}", prompt=ch["instruction"], response_1=r1, response_2=r2,
            label=label,
            metadata={"source": "prometheus", "set": "hhh", "category": rec.get("source"),
                      "index": i, "swapped": swaps[i], "rubric": ch["criteria"],
                      "rubric_levels": ch["levels"]},
        ))
    return items


def _biggen(path: Path) -> list[Item]:
    src = str(path)
    doc = read_json_doc(path)
    data = doc.data
    if not isinstance(data, dict):
        raise DataError(src, None, f"expected an object keyed by id, got {type(data).__name__}")
    items: list[Item] = []
    ids = UniqueIds()
    for key, rec in data.items():
        where = doc.where(key)
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        rub = rec.get("score_rubric")
        if not isinstance(rub, dict):
            raise DataError(src, where, "field 'score_rubric': expected an object")
        levels: dict[str, str] = {}
        for k in range(1, 6):
            field = f"score{k}_description"
            if field not in rub:
                raise DataError(src, where, f"field 'score_rubric.{field}': missing")
            if not isinstance(rub[field], str):
                raise DataError(src, where, f"field 'score_rubric.{field}': expected text, "
                                f"got {type(rub[field]).__name__}")
            levels[str(k)] = rub[field]
        criteria = opt_text(rub, "criteria", src, where)
        item_id = f"prometheus:biggen:{key_field(rec, 'id', src, where, key)}"
        ids.add(item_id, src, where)
        items.append(make_item(
            PointwiseItem, src, where,
            id=item_id,
            prompt=text_field(rec, "input", src, where),
            response=text_field(rec, "response", src, where),
            rubric=criteria, rubric_levels=levels,
            reference=opt_text(rec, "reference_answer", src, where) or None,
            metadata={"source": "prometheus", "set": "biggen",
                      "capability": rec.get("capability"), "task": rec.get("task"),
                      "system_prompt": rec.get("system_prompt"), "placeholder_response": True},
        ))
    log.warning("prometheus biggen %s: responses are placeholders and there are no scores; "
                "use these items for their instructions and rubrics only", src)
    return items


@register_loader("prometheus")
def load_prometheus(name: str, params: dict[str, str]) -> list[Item]:
    source = f"prometheus:{name}"
    check_params(source, params, {"set"})
    seed = int_param(source, params, "seed", 0)
    path = existing_path(name, "prometheus")
    if path.is_dir():
        set_name = choice_param(source, params, "set", tuple(FILES), "mt_bench")
        path = file_in(path, FILES[set_name], f"set={set_name} expects {FILES[set_name]} in "
                       "the folder")
    else:
        by_file = {v: k for k, v in FILES.items()}
        guessed = by_file.get(path.name)
        if "set" in params:
            set_name = choice_param(source, params, "set", tuple(FILES), "mt_bench")
        elif guessed is not None:
            set_name = guessed
        else:
            raise DataError(str(path), None, f"unknown file; give set= one of "
                            f"{', '.join(FILES)}")
    if set_name == "hhh":
        return _hhh(path, seed)
    if set_name == "biggen":
        return _biggen(path)
    return _scored(path, set_name)
