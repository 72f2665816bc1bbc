"""`summeval:PATH` — SummEval (Fabbri et al. 2021): CNN/DailyMail summaries of 100 test
articles by 16 systems, each rated 1-5 on coherence, consistency, fluency and relevance by 3
experts and 5 crowd workers.

Two file layouts, each one JSON object per summary with `id` (the document id), `model_id`
(the system), `decoded` (the summary), `text` (the source article), `references`,
`expert_annotations` and `turker_annotations` (lists of {dimension: score} objects):
- the paired file `model_annotations.aligned.paired.jsonl` (all systems in one file);
- per-system files `M<n>_outputs_annotations.jsonl` (`M0_...` to `M23_...`), one per system,
  the layout of some redistributions. A record there may leave out `model_id` (the file name
  gives it; a `model_id` that contradicts the file name is refused).

PATH is one such file or a folder. In a folder the paired file is read when present,
otherwise every `M<n>_outputs_annotations.jsonl` in it (systems in numeric order, records in
file order); `layout=paired|systems` (default `auto`) picks one explicitly when both are
there. A record without `text` (absent, null or blank) takes the article of another record of
the same document (the article belongs to the document, not the system); when no record of
that document has it, the record is refused (the unpaired release
`model_annotations.aligned.jsonl` has no articles at all: use the paired file).

Parameters: `dimension=coherence|consistency|fluency|relevance` (default coherence; `aspect=`
is the older name of the same parameter) picks the rubric and the gold score;
`scores=expert|crowd` (default expert) picks whose mean is the gold `score` (crowd needs
`turker_annotations` in every record). Both raters' per-dimension scores and means stay in
metadata (`expert_scores`, `crowd_scores`, `expert_mean`, `crowd_mean`; the crowd ones are
null where a record has no crowd ratings). `reference` = the first human reference summary.

Grouping: every item's metadata has `doc_id` (the document) and `model_id` (the system), so a
caller can correlate per document (summary level: rank the systems' summaries of one article)
and per system (system level: mean score per system). Ids `summeval:<doc_id>:<model_id>`,
unique across the files of a folder. Errors name the file, the line and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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
DIMENSIONS = ASPECTS
PAIRED = "model_annotations.aligned.paired.jsonl"
SYSTEM_FILE = re.compile(r"(M(\d+))_outputs_annotations\.jsonl")
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


def _ratings(rec: dict[str, Any], key: str, src: str, line: int,
             required: bool = True) -> dict[str, list[float]] | None:
    """The {dimension: [scores]} of one annotation list; None when absent and not required."""
    raw = rec.get(key)
    if raw is None and not required:
        return None
    if not isinstance(raw, list) or not raw:
        if key not in rec:
            got = "missing (required)"
        else:
            got = "got an empty list" if isinstance(raw, list) else f"got {type(raw).__name__}"
        raise DataError(src, line, f"field {key!r}: expected a non-empty list of "
                                   f"{{dimension: score}} objects; {got}")
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


@dataclass
class _Row:
    src: str
    line: int
    rec: dict[str, Any]
    doc_id: str
    model_id: str
    text: str | None


def system_of(path: Path) -> str | None:
    """"M8" for M8_outputs_annotations.jsonl; None for any other file name."""
    m = SYSTEM_FILE.fullmatch(path.name)
    return m.group(1) if m else None


def _rows(path: Path) -> list[_Row]:
    src = str(path)
    system = system_of(path)
    out: list[_Row] = []
    for line, rec in read_records(path):
        doc_id = text_field(rec, "id", src, line, allow_empty=False)
        if system is not None and rec.get("model_id") is None:
            model_id = system
        else:
            model_id = text_field(rec, "model_id", src, line, allow_empty=False)
            if system is not None and model_id != system:
                raise DataError(src, line, f"field 'model_id': {model_id!r} in the file of "
                                f"system {system!r} (its name says {system})")
        text = None  # absent, null or blank: taken from another record of the document
        if rec.get("text") is not None:
            text = text_field(rec, "text", src, line)
            text = text if text.strip() else None
        out.append(_Row(src, line, rec, doc_id, model_id, text))
    return out


def parse_records(paths: Path | list[Path], aspect: str, scores: str) -> list[Item]:
    """Items from one SummEval file or several (the per-system files of one release)."""
    files = [paths] if isinstance(paths, Path) else paths
    rows = [r for p in files for r in _rows(p)]
    articles: dict[str, str] = {}
    for r in rows:
        if r.text is not None:
            articles.setdefault(r.doc_id, r.text)
    items: list[Item] = []
    ids = UniqueIds()
    for r in rows:
        src, line, rec = r.src, r.line, r.rec
        text = r.text if r.text is not None else articles.get(r.doc_id)
        if text is None:
            raise DataError(src, line, f"field 'text' (the source article): missing, and no "
                            f"other record of document {r.doc_id!r} has it; use the paired "
                            f"release {PAIRED}, which has the articles")
        summary = text_field(rec, "decoded", src, line)
        expert = _ratings(rec, "expert_annotations", src, line)
        crowd = _ratings(rec, "turker_annotations", src, line, required=scores == "crowd")
        refs = rec.get("references") or []
        if not isinstance(refs, list) or not all(isinstance(x, str) for x in refs):
            raise DataError(src, line, "field 'references': expected a list of texts")
        gold = expert if scores == "expert" else crowd
        assert gold is not None and expert is not None
        item_id = f"summeval:{r.doc_id}:{r.model_id}"
        ids.add(item_id, src, line, "id")
        items.append(make_item(
            PointwiseItem, src, line,
            id=item_id, prompt=PROMPT.format(text=text),
            response=summary, score=mean(gold[aspect]), rubric=DEFINITIONS[aspect],
            rubric_levels=levels(aspect), reference=refs[0].strip() if refs else None,
            metadata={"source": "summeval", "doc_id": r.doc_id, "model_id": r.model_id,
                      "dimension": aspect, "aspect": aspect, "gold": scores,
                      "expert_scores": expert, "crowd_scores": crowd,
                      "expert_mean": {a: mean(v) for a, v in expert.items()},
                      "crowd_mean": ({a: mean(v) for a, v in crowd.items()}
                                     if crowd is not None else None),
                      "article_from_other_record": r.text is None,
                      "filepath": rec.get("filepath"), "file": Path(src).name,
                      "line": line},
        ))
    if not items:
        raise DataError(str(files[0]), None, "no records")
    return items


def system_files(folder: Path) -> list[Path]:
    """The per-system files of a folder, in system order (M0, M1, ..., M23)."""
    try:
        found = [p for p in folder.iterdir() if SYSTEM_FILE.fullmatch(p.name)]
    except OSError as e:
        raise DataError(str(folder), None, f"cannot list the folder: {e.strerror or e}") \
            from None
    return sorted(found, key=_system_number)


def _system_number(path: Path) -> int:
    m = SYSTEM_FILE.fullmatch(path.name)
    return int(m.group(2)) if m else -1


def files_of(folder: Path, layout: str) -> list[Path]:
    paired = folder / PAIRED
    if layout == "paired" or (layout == "auto" and (paired.exists() or paired.is_symlink())):
        return [file_in(folder, PAIRED, "give the paired SummEval JSONL")]
    found = system_files(folder)
    if not found:
        want = ("per-system files M<n>_outputs_annotations.jsonl" if layout == "systems"
                else f"{PAIRED} or per-system files M<n>_outputs_annotations.jsonl")
        raise DataError(str(folder), None, f"no SummEval file in this folder; expected {want}")
    return found


@register_loader("summeval")
def load_summeval(name: str, params: dict[str, str]) -> list[Item]:
    source = f"summeval:{name}"
    check_params(source, params, {"dimension", "aspect", "scores", "layout"})
    aspect = choice_param(source, params, "aspect", ASPECTS, "coherence")
    dimension = choice_param(source, params, "dimension", DIMENSIONS, aspect)
    if params.get("aspect") and params.get("dimension") and aspect != dimension:
        raise DataError(source, None, f"parameters 'dimension' ({dimension}) and 'aspect' "
                        f"({aspect}) disagree; give one (aspect= is the older name)")
    scores = choice_param(source, params, "scores", ("expert", "crowd"), "expert")
    layout = choice_param(source, params, "layout", ("auto", "paired", "systems"), "auto")
    path = existing_path(name, "summeval")
    files = files_of(path, layout) if path.is_dir() else [path]
    return parse_records(files, dimension, scores)
