"""`mtbench:PATH` — the 200 first-turn MT-Bench pairs with the human-expert majority label
(LLMBar's processed subset; ties removed by its authors).

PATH is the mt_bench folder or human_pairwise_subset_llmbar.json. Each pair's question is
found in question.jsonl by its turn-1 text (question_id and category go into metadata), and
`reference` is the GPT-4 reference answer (turn 1) from reference_answer_gpt-4.jsonl when
there is one for that question (math, reasoning and coding: 57 of the 200 pairs), as
FastChat does for reference-guided judging. Both files are optional beside a pairs file.

Ids `mtbench:<i>`. `?ids=llmbar` names them `Processed/MT-Bench:<i>` instead: the same 200
pairs in the same order carry those ids in llmbar/judge_verdicts.csv (for replay).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgeaudit.data.loaders._common import (
    check_params,
    choice_param,
    existing_path,
    log,
    read_json,
    read_jsonl,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

PAIRS = "human_pairwise_subset_llmbar.json"
QUESTIONS = "question.jsonl"
REFERENCES = "reference_answer_gpt-4.jsonl"


def _questions(folder: Path) -> dict[str, dict[str, Any]]:
    """turn-1 text (stripped) -> question record."""
    p = folder / QUESTIONS
    if not p.exists():
        return {}
    out: dict[str, dict[str, Any]] = {}
    for lineno, q in read_jsonl(p):
        turns = q.get("turns")
        if not isinstance(turns, list) or not turns or not isinstance(turns[0], str):
            raise DataError(str(p), lineno, "field 'turns': expected a list of texts")
        out[turns[0].strip()] = q
    return out


def _references(folder: Path) -> dict[Any, str]:
    """question_id -> GPT-4 turn-1 reference answer."""
    p = folder / REFERENCES
    if not p.exists():
        return {}
    out: dict[Any, str] = {}
    for lineno, r in read_jsonl(p):
        try:
            out[r["question_id"]] = r["choices"][0]["turns"][0]
        except (KeyError, IndexError, TypeError):
            raise DataError(str(p), lineno, "expected fields question_id and "
                            "choices[0].turns[0]") from None
    return out


@register_loader("mtbench")
def load_mtbench(name: str, params: dict[str, str]) -> list[Item]:
    check_params(f"mtbench:{name}", params, {"ids"})
    id_style = choice_param(f"mtbench:{name}", params, "ids", ("mtbench", "llmbar"), "mtbench")
    path = existing_path(name, "mtbench")
    if path.is_dir():
        path = path / PAIRS
        if not path.exists():
            raise DataError(str(path), None, f"no such file; expected {PAIRS} in the folder")
    src = str(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise DataError(src, None, f"expected a JSON list of pairs, got {type(data).__name__}")
    questions, refs = _questions(path.parent), _references(path.parent)
    items: list[Item] = []
    unmatched = 0
    for i, rec in enumerate(data):
        where = f"record {i}"
        if not isinstance(rec, dict):
            raise DataError(src, where, f"expected an object, got {type(rec).__name__}")
        label = rec.get("label")
        if label not in (1, 2) or isinstance(label, bool):
            raise DataError(src, where, f"field 'label': expected 1 or 2, got {label!r}")
        prompt = text_field(rec, "input", src, where)
        q = questions.get(prompt.strip())
        meta: dict[str, Any] = {"source": "mtbench", "idx": i, "turn": 1}
        reference = None
        if q is not None:
            meta["question_id"] = q.get("question_id")
            meta["category"] = q.get("category")
            reference = refs.get(q.get("question_id"))
        else:
            unmatched += 1
        items.append(PairwiseItem(
            id=f"mtbench:{i}" if id_style == "mtbench" else f"Processed/MT-Bench:{i}",
            prompt=prompt,
            response_1=text_field(rec, "output_1", src, where),
            response_2=text_field(rec, "output_2", src, where),
            label=label,
            reference=reference,
            metadata=meta,
        ))
    if questions and unmatched:
        log.warning("mtbench %s: %d of %d pairs match no question.jsonl turn-1 text",
                    src, unmatched, len(data))
    return items
