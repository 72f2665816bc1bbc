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
    file_in,
    key_field,
    log,
    make_item,
    read_json_doc,
    read_records,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PairwiseItem

PAIRS = "human_pairwise_subset_llmbar.json"
QUESTIONS = "question.jsonl"
REFERENCES = "reference_answer_gpt-4.jsonl"


def _optional(folder: Path, name: str) -> Path | None:
    """A companion file that may be absent (then None); present, it must be a file."""
    p = folder / name
    return file_in(folder, name) if p.exists() or p.is_symlink() else None


def _questions(folder: Path) -> dict[str, dict[str, Any]]:
    """turn-1 text (stripped) -> question record."""
    p = _optional(folder, QUESTIONS)
    if p is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    ids: dict[Any, int] = {}
    for lineno, q in read_records(p):
        if "turns" not in q:
            raise DataError(str(p), lineno, "field 'turns': missing (required)")
        turns = q.get("turns")
        if not isinstance(turns, list) or not turns or not isinstance(turns[0], str):
            raise DataError(str(p), lineno, "field 'turns': expected a list of texts")
        qid = key_field(q, "question_id", str(p), lineno)
        if qid in ids:
            raise DataError(str(p), lineno, f"field 'question_id': {qid!r} repeated (first "
                            f"at line {ids[qid]}); question ids must be unique")
        ids[qid] = lineno
        out[turns[0].strip()] = q
    return out


def _references(folder: Path) -> dict[Any, str]:
    """question_id -> GPT-4 turn-1 reference answer."""
    p = _optional(folder, REFERENCES)
    if p is None:
        return {}
    out: dict[Any, str] = {}
    lines: dict[Any, int] = {}
    for lineno, r in read_records(p):
        qid = key_field(r, "question_id", str(p), lineno)
        if "choices" not in r:
            raise DataError(str(p), lineno, "field 'choices': missing (required)")
        choices = r.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        turns = first.get("turns") if isinstance(first, dict) else None
        if not isinstance(turns, list) or not turns or not isinstance(turns[0], str):
            raise DataError(str(p), lineno, "field 'choices': expected a list whose first "
                            "entry has 'turns', a list of texts")
        if qid in lines:
            raise DataError(str(p), lineno, f"field 'question_id': {qid!r} repeated (first "
                            f"at line {lines[qid]}); question ids must be unique")
        lines[qid] = lineno
        out[qid] = turns[0]
    return out


@register_loader("mtbench")
def load_mtbench(name: str, params: dict[str, str]) -> list[Item]:
    check_params(f"mtbench:{name}", params, {"ids"})
    id_style = choice_param(f"mtbench:{name}", params, "ids", ("mtbench", "llmbar"), "mtbench")
    path = existing_path(name, "mtbench")
    if path.is_dir():
        path = file_in(path, PAIRS)
    src = str(path)
    doc = read_json_doc(path)
    data = doc.data
    if not isinstance(data, list):
        raise DataError(src, None, f"expected a JSON list of pairs, got {type(data).__name__}")
    questions, refs = _questions(path.parent), _references(path.parent)
    items: list[Item] = []
    unmatched = 0
    for i, rec in enumerate(data):
        where = doc.where(i)
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
        items.append(make_item(
            PairwiseItem, src, where,
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
