"""`summeval:PATH` — SummEval (Fabbri et al. 2021): CNN/DailyMail summaries from 16 systems,
each rated 1-5 on coherence, consistency, fluency and relevance by 3 experts and 5 crowd
workers.

PATH is a JSON Lines file in the released shape (`model_annotations.aligned.paired.jsonl`:
one line per summary with `id`, `model_id`, `decoded`, `text` (the source article),
`references`, `expert_annotations` and `turker_annotations`, each a list of
{aspect: score} objects). The unpaired release has no `text`; it is refused with a message
naming the paired file.

Parameters: `aspect=coherence|consistency|fluency|relevance` (default coherence) picks the
rubric and the gold score; `scores=expert|crowd` (default expert) picks whose mean is the
gold `score`. Both raters' per-aspect scores and means stay in metadata (`expert_scores`,
`crowd_scores`, `expert_mean`, `crowd_mean`). `reference` = the first human reference summary.
Ids `summeval:<id>:<model_id>`.
"""

from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Any

from judgeaudit.data.loaders._common import (
    UniqueIds,
    check_params,
    choice_param,
    existing_path,
    file_in,
    make_item,
    read_records,
    text_field,
)
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item, PointwiseItem

ASPECTS = ("coherence", "consistency", "fluency", "relevance")
# Definitions as given to SummEval's annotators (Fabbri et al. 2021, section 4.1).
DEFINITIONS = {
    "coherence": "Coherence: the collective quality of all sentences. The summary should be "
                 "well-structured and well-organized, building from sentence to sentence to a "
                 "coherent body of information about the topic.",
    "consistency": "Consistency: the factual alignment between the summary and the source. A "
                   "factually consistent summary contains only statements that are entailed by "
                   "the source document; hallucinated facts are penalized.",
    "fluency": "Fluency: the quality of individual sentences. Sentences should have no "
               "formatting problems, capitalization errors or obviously ungrammatical parts "
               "that make the text difficult to read.",
    "relevance": "Relevance: selection of important content from the source. The summary "
                 "should include only important information from the source document; "
                 "redundancies and excess information are penalized.",
}
_LEVEL_WORDS = {"1": "very poor", "2": "poor", "3": "fair", "4": "good", "5": "excellent"}
_LEVEL_DETAIL = {
    "coherence": {"1": "a heap of unrelated statements", "5": "a well-organized whole"},
    "consistency": {"1": "mostly unsupported or contradicted by the article",
                    "5": "every statement supported by the article"},
    "fluency": {"1": "most sentences ungrammatical or hard to read",
                "5": "every sentence grammatical and easy to read"},
    "relevance": {"1": "misses the important content or is mostly filler",
                  "5": "covers the key points with no excess"},
}
PROMPT = "Summarize the following news article.\n\nArticle:\n{text}"


def levels(aspect: str) -> dict[str, str]:
    out = {}
    for k, word in _LEVEL_WORDS.items():
        extra = _LEVEL_DETAIL[aspect].get(k)
        out[k] = f"The summary's {aspect} is {word}" + (f": {extra}." if extra else ".")
    return out


def _ratings(rec: dict[str, Any], key: str, src: str, line: int) -> dict[str, list[float]]:
    raw = rec.get(key)
    if not isinstance(raw, list) or not raw:
        raise DataError(src, line, f"field {key!r}: expected a non-empty list of "
                                   "{aspect: score} objects")
    out: dict[str, list[float]] = {a: [] for a in ASPECTS}
    for j, ann in enumerate(raw):
        if not isinstance(ann, dict):
            raise DataError(src, line, f"field {key}[{j}]: expected an object")
        for a in ASPECTS:
            v = ann.get(a)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 1 <= v <= 5:
                raise DataError(src, line, f"field {key}[{j}].{a}: expected a score 1-5, "
                                           f"got {v!r}")
            out[a].append(float(v))
    return out


def parse_records(path: Path, aspect: str, scores: str) -> list[Item]:
    src = str(path)
    items: list[Item] = []
    ids = UniqueIds()
    for line, rec in read_records(path):
        if "text" not in rec:
            raise DataError(src, line, "field 'text' (the source article): missing; use the "
                                       "paired release model_annotations.aligned.paired.jsonl")
        text = text_field(rec, "text", src, line, allow_empty=False)
        summary = text_field(rec, "decoded", src, line)
        doc_id = text_field(rec, "id", src, line, allow_empty=False)
        model_id = text_field(rec, "model_id", src, line, allow_empty=False)
        expert = _ratings(rec, "expert_annotations", src, line)
        crowd = _ratings(rec, "turker_annotations", src, line)
        refs = rec.get("references") or []
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise DataError(src, line, "field 'references': expected a list of texts")
        gold = expert if scores == "expert" else crowd
        item_id = f"summeval:{doc_id}:{model_id}"
        ids.add(item_id, src, line, "id")
        items.append(make_item(
            PointwiseItem, src, line,
            id=item_id, prompt=PROMPT.format(text=text),
            response=summary, score=mean(gold[aspect]), rubric=DEFINITIONS[aspect],
            rubric_levels=levels(aspect), reference=refs[0].strip() if refs else None,
            metadata={"source": "summeval", "doc_id": doc_id, "model_id": model_id,
                      "aspect": aspect, "gold": scores, "expert_scores": expert,
                      "crowd_scores": crowd,
                      "expert_mean": {a: mean(v) for a, v in expert.items()},
                      "crowd_mean": {a: mean(v) for a, v in crowd.items()},
                      "filepath": rec.get("filepath"), "line": line},
        ))
    if not items:
        raise DataError(src, None, "no records")
    return items


@register_loader("summeval")
def load_summeval(name: str, params: dict[str, str]) -> list[Item]:
    source = f"summeval:{name}"
    check_params(source, params, {"aspect", "scores"})
    aspect = choice_param(source, params, "aspect", ASPECTS, "coherence")
    scores = choice_param(source, params, "scores", ("expert", "crowd"), "expert")
    path = existing_path(name, "summeval")
    if path.is_dir():
        path = file_in(path, "model_annotations.aligned.paired.jsonl",
                       "give the paired SummEval JSONL")
    return parse_records(path, aspect, scores)
