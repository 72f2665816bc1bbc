"""`replay`: verdicts recorded elsewhere (CSV, JSONL or a JSON list), served by item id and
presentation order, so published judge outputs run through the same judging and statistics
code as live calls.

Spec: `replay:PATH?format=NAME&col=value&...`. `format=` names the file's format; without it
the format is sniffed from the file's fields (`ReplayIndex.detected` says which and why; a
file no format fits is refused with the list of formats). Each format's own options (below)
are options; every other parameter is a column filter: only records whose column equals the
value are kept (`judge=GPT-4&strategy=Vanilla` on LLMBar's judge_verdicts.csv).

Formats (replay_formats.py, one small parser each, registered by name):
- `long` (ours): one row per (item, order): `order` ("12"/"21") + `verdict`: "A"/"B" are
  presented labels, "1"/"2" original output numbering, "tie", "" = unparseable, anything
  else is returned verbatim (raw text, which the judge parses and may count as invalid).
  Pointwise: `score` (one per item; returned as text, a number k mapped to score id k).
- `wide` (the LLMBar judge_verdicts.csv layout): `winner_original_order` (verdict when
  response_1 was shown first) and `winner_swapped_order` (when response_2 was shown first),
  both in ORIGINAL output numbering: "1", "2", "0"/"tie", "" = unparseable. Where the file
  has `score_1` and `score_2` with a score in a kept record (LLMBar's Rating strategies:
  each output rated alone), a row's scores decide instead: the higher wins in both orders,
  equal scores are a tie, an unreadable score is an invalid verdict (LLMBar's winner columns
  record equal scores as a win of the output shown second and unreadable ones as a
  first-shown pick). A row with both score cells empty is read from its winner columns.
  For both, the item key is `item_id`, or `subset` + `idx` joined as "<subset>:<idx>".
- `nested`: one record per item (`id`/`item_id`) with `judgments` [{order, verdict}], or
  `game1`/`game2` (`g1`/`g2`) holding the two orders' verdicts.
- `two_files`: one file per order: `replay:FILE_12?second=FILE_21`, or `{order}` in the path.
- `alpaca_eval`: annotation files, one order per record, matched by instruction + outputs
  text (or `item=FIELD`).
- `fastchat`: MT-Bench pairwise judgments (g1 = model_1 shown first, g2 swapped), matched
  by question and answer texts from FastChat's question.jsonl and model_answer/.
- `columns`: item=COL, order=COL, verdict=COL, score=COL, verdict_map=A:1,B:2,tie:0.
Records matched by text are found from the texts a request shows (`Request.meta` prompt and
shown), whatever the data's item ids; everything else by `Request.meta` item_id and order.

A `sample` column orders repeated records of one run: the highest sample supersedes lower ones
(LLMBar Swap strategies record a second "review" verdict as sample 1 where the first two
conflicted). Columns other than the item key, the verdict/score columns, `label`, `sample` and
common free-text columns (completion, explanation, output_1, ...: see VALUE_COLUMNS and each
format's value fields) describe the run; if after filtering an item still has records from
several runs (e.g. no `strategy=` filter), loading fails naming the columns that still vary.

Bad input is a `ReplayFileError` (a ValueError) shaped like the data loaders' errors,
"replay file FILE:LINE: what was expected, what came": a missing file or a directory, an
empty file, bytes that are not UTF-8 (named by line and column), NaN/Infinity in JSON, a CSV
row with the wrong number of fields, a column named twice, no item key or verdict columns
(the file's columns are listed), a parameter that is no option and no column, a filter that
matches no row (the values the column has are listed), a verdict value outside those above,
and the same record (item, order, run and sample) given twice (both lines named). A UTF-8
BOM and CRLF line endings are fine.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from judgeaudit.llm.base import (
    FatalProviderError,
    Provider,
    Request,
    RequestRejected,
    Response,
)
from judgeaudit.llm.providers.replay_formats import (
    FORMATS,
    LONG,
    SCALAR_COLUMNS,
    TEXT_PREFIX,
    VALUE_COLUMNS,
    WIDE,
    Format,
    Inputs,
    ReplayFileError,
    Row,
    Table,
    formats_help,
    no_verdict_columns,
    presented,
    read_table,
    sniff,
    text_key,
    text_of,
)
from judgeaudit.llm.registry import register

log = logging.getLogger("judgeaudit.llm")

# Spec parameters that are options rather than column filters, for every format: name ->
# meaning. Each format adds its own (FORMATS[name].options).
OPTIONS: dict[str, str] = {"format": "the file's format: " + ", ".join(FORMATS)}

# What `judgeaudit judges` lists for replay: every option with the formats that read it, its
# meaning and default (tests/llm/test_provider_params.py keeps it in step with OPTIONS and the
# formats' options). Not a whitelist: any other parameter is a column filter.
PARAM_HELP: dict[str, str] = {
    "format": f"{OPTIONS['format']} (default: detected from the file's columns)",
    "item": "the item key field (default item_id, or subset + idx; nested also id; "
            "alpaca_eval and fastchat match by texts, question and models)",
    "verdict": "columns, two_files: the verdict column (default: a column named verdict)",
    "verdict_map": "columns, two_files: FROM:TO,... mapping verdict values to A/B "
                   "(presented), 1/2 (original), 0/tie; *:TO for every other value (default: "
                   "none, values read as in long)",
    "order": "columns: the order column, or 12 / 21 for every record (no default: needed with "
             "verdicts); alpaca_eval: a field holding 12 / 21 (default: every record order 12)",
    "order_map": "columns: FROM:TO,... mapping order values to 12 / 21 (default: none)",
    "score": "columns: the pointwise score column (default: none)",
    "second": "two_files: the file of order 21, the path given being order 12 (default: none; "
              "or a {order} placeholder in the path)",
    "order_names": "two_files: the two texts {order} stands for (default 12,21)",
    "soft": "alpaca_eval: round: read a weighted annotator's preference as the nearer of 1 and "
            "2 (default: off)",
    "answers": "fastchat: FastChat's model_answer folder (default ../model_answer beside the "
               "judgment folder)",
    "questions": "fastchat: FastChat's question.jsonl (default ../question.jsonl)",
    "COLUMN": "any other parameter: keep only the records whose COLUMN equals the value "
              "(default: every record)",
}


@dataclass
class ReplayIndex:
    """One loaded, filtered file: verdicts by (item key, order) and scores by item key.
    Keys starting with `text:` are content keys (`find` derives them from the texts shown);
    `labels` says what each stands for."""

    path: Path
    sha256: str
    size: int
    columns: tuple[str, ...]
    verdicts: dict[tuple[str, str], str]   # presented-label text ("A", "B", "tie", "", raw)
    scores: dict[str, str]
    n_rows: int                            # records kept by the filters
    format: str = "long"
    detected: str = ""                     # "format long (detected: columns order, verdict)"
    labels: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    files: tuple[Path, ...] = ()
    n_records: int = 0                     # records in the file(s) before filtering
    # how verdicts were read when not from the verdict columns as written ("" = as written):
    # SCORE_READING when a wide file's score_1/score_2 decided them (`_rating_rows`)
    reading: str = ""

    def __post_init__(self) -> None:
        self.by_text = any(k.startswith(TEXT_PREFIX) for k, _ in self.verdicts)

    def find(self, item_id: str, order: str, prompt: str | None = None,
             shown: Sequence[str] | None = None) -> str | None:
        """The recorded verdict for an item shown in `order`: by item id, else (for files
        matched by content) by the prompt and the two texts in the order shown."""
        at = self.locate(item_id, order, prompt, shown)
        return None if at is None else self.verdicts[at]

    def locate(self, item_id: str, order: str, prompt: str | None = None,
               shown: Sequence[str] | None = None) -> tuple[str, str] | None:
        """The (key, order) of the table that `find` reads, or None."""
        if (item_id, order) in self.verdicts:
            return item_id, order
        if not self.by_text or prompt is None or not shown or len(shown) != 2:
            return None
        a, b = str(shown[0]), str(shown[1])
        for at in ((text_key(prompt, a, b), "12"),
                   # recorded with the outputs numbered the other way round
                   (text_key(prompt, b, a), "21")):
            if at in self.verdicts:
                return at
        return None

    def item_keys(self) -> set[str]:
        return {k for k, _ in self.verdicts} | set(self.scores)


_FileKey = tuple[str, int, int]  # resolved path, size, mtime_ns
_PARSED: dict[_FileKey, tuple[Table, str, int]] = {}
_INDEXES: dict[tuple[tuple[_FileKey, ...], tuple[tuple[str, str], ...]], ReplayIndex] = {}


def describe_filters(filters: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in filters.items()) if filters else "no filters"


def _stat(src: str) -> tuple[Path, _FileKey]:
    try:
        p = Path(src).expanduser().resolve()
        p.exists()
    except (OSError, RuntimeError, ValueError) as exc:  # "~nobody/x", a NUL byte, EACCES
        raise ReplayFileError(src, None, f"cannot use this path: {exc}") from None
    if p.is_dir():
        raise ReplayFileError(src, None, "is a directory; expected a .csv, .jsonl or .json file "
                              "of recorded verdicts")
    try:
        st = p.stat()
    except FileNotFoundError:
        raise ReplayFileError(src, None, "no such file") from None
    except OSError as exc:
        raise ReplayFileError(src, None, f"cannot read: {exc.strerror or exc}") from None
    return p, (str(p), st.st_size, st.st_mtime_ns)


def _read(src: str, p: Path, fkey: _FileKey) -> tuple[Table, str, int]:
    """A file's table, sha256 and size; parsed once per file version, whatever the filters."""
    if fkey not in _PARSED:
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise ReplayFileError(src, None, f"cannot read: {exc.strerror or exc}") from None
        _PARSED[fkey] = (read_table(src, p, data), hashlib.sha256(data).hexdigest(), len(data))
    return _PARSED[fkey]


def _two_paths(src: str, params: dict[str, str]) -> tuple[str, str]:
    if "{order}" in src:
        if "second" in params:
            raise ReplayFileError(src, None, "give either a {order} placeholder in the path or "
                                  "second=PATH, not both")
        tokens = [t.strip() for t in params.get("order_names", "12,21").split(",")]
        if len(tokens) != 2 or not all(tokens) or tokens[0] == tokens[1]:
            raise ReplayFileError(src, None, "parameter order_names="
                                  f"{params.get('order_names')!r}: expected two different "
                                  "texts, for orders 12 and 21")
        return src.replace("{order}", tokens[0]), src.replace("{order}", tokens[1])
    if not params.get("second"):
        raise ReplayFileError(src, None, "format two_files needs the order-21 file: second=PATH, "
                              "or a {order} placeholder in the path")
    return src, params["second"]


def load_index(path: str | Path, filters: dict[str, str]) -> ReplayIndex:
    """Read, filter and index a verdict file; cached per (file versions, parameters) per
    process. `filters` holds every spec parameter: options of the format and column filters."""
    src = str(path)
    params = dict(filters)
    name = params.get("format") or None
    if name is not None and name not in FORMATS:
        raise ReplayFileError(src, None, f"parameter format={name!r}: expected one of "
                              f"{', '.join(FORMATS)}")
    two = name == "two_files" or (name is None and ("{order}" in src or "second" in params))
    srcs = list(_two_paths(src, params)) if two else [src]
    stats = [_stat(s) for s in srcs]
    read = [_read(s, p, k) for s, (p, k) in zip(srcs, stats, strict=True)]
    tables = [t for t, _, _ in read]
    columns = tuple(dict.fromkeys(c for t in tables for c in t.columns))
    if name is None:
        found = sniff(columns, params, src)
        if found is None:
            raise no_verdict_columns(srcs[0], columns)
        name, why = found
        detected = f"format {name} (detected: {why})"
    else:
        detected = f"format {name} (given: format={name})"
    fmt = FORMATS[name]
    options = {k: v for k, v in params.items() if k in OPTIONS or k in fmt.options}
    column_filters = {k: v for k, v in params.items() if k not in options}
    _check_filters(srcs[0], columns, column_filters, fmt)

    companions: list[tuple[str, Path, _FileKey]] = []
    inputs_extra: dict[str, Any] = {}
    notes: list[str] = []
    kept_tables = [t.where(tuple((ln, r) for ln, r in t.records
                                 if _passes(r, column_filters))) for t in tables]
    kept = sum(len(t.records) for t in kept_tables)
    if not kept:
        raise ReplayFileError(srcs[0], None, _no_match(tables, column_filters))
    if name == "fastchat":
        inputs_extra, companions, notes = _fastchat_texts(stats[0][0], kept_tables[0], options)
    key = (tuple(k for _, k in stats) + tuple(k for _, _, k in companions),
           tuple(sorted(params.items())))
    if key in _INDEXES:
        return _INDEXES[key]

    inputs = Inputs(kept_tables[0], options, kept_tables[1] if two else None, **inputs_extra)
    rows = fmt.parse(inputs)
    reading = ""
    if name == "wide":
        rows, reading = _rating_rows(rows, columns, notes)
    verdicts, scores, labels = _index(rows, fmt, columns, params, options, column_filters,
                                      stats[0][0].name)
    shas = [sha for _, sha, _ in read] + [_read(s, p, k)[1] for s, p, k in companions]
    sha = shas[0] if len(shas) == 1 else hashlib.sha256("\n".join(shas).encode()).hexdigest()
    size = sum(n for _, _, n in read) + sum(_read(s, p, k)[2] for s, p, k in companions)
    idx = ReplayIndex(stats[0][0], sha, size, columns, verdicts, scores, kept, name, detected,
                      labels, notes, tuple(p for p, _ in stats) + tuple(p for _, p, _ in
                                                                        companions),
                      sum(len(t.records) for t in tables), reading)
    _INDEXES[key] = idx
    return idx


# A wide file with per-output scores (LLMBar's Rating strategies: each output rated on its
# own, so neither order exists) is read from the scores: LLMBar's evaluate.py writes
# `"1" if score_1 > score_2 else "2"` (and the swapped order likewise), so equal scores are
# recorded as a win of the output shown second in both orders, and an unreadable score (its
# `except` branch) as a win of the output shown first. Read from the winner columns, both
# looked like position bias; read from the scores they are a tie and an invalid verdict.
SCORE_COLUMNS = ("score_1", "score_2")
SCORE_READING = ("score_1/score_2 decide: the higher score wins in both orders, equal scores "
                 "are a tie, an unreadable score is an invalid verdict")
# A row with both score cells empty recorded no rating: its winner columns are its verdicts.
# Said in the cache identity only when such a row exists (a cache written when those rows
# were read as unreadable scores is then not served; an all-scored file's cache still is).
WINNER_FALLBACK = "; a row with both score cells empty is read from its winner columns"
UNREADABLE_SCORES = "no readable recorded scores"


def _number(text: str) -> float | None:
    """A recorded score in ASCII digits (float() reads "५" as 5.0, which a live judge's
    answer would not give: `parse_score` reads ASCII digits only); None otherwise."""
    if not text.isascii():
        return None
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _rating_rows(rows: list[Row], columns: tuple[str, ...], notes: list[str]
                 ) -> tuple[list[Row], str]:
    """Wide rows whose file holds score_1 and score_2, with a score in any kept record: a row
    with any score text is read from its two scores (SCORE_READING; an unreadable score is an
    invalid verdict, as LLMBar's Rating rows with one score missing are), a row with both
    score cells empty from its winner columns (a user's file that rated only some rows); the
    reading and a note with its counts. A winner column that names the other output where the
    scores differ is refused: the file then means something else by its scores."""
    if not all(c in columns for c in SCORE_COLUMNS) or not any(
            text_of(r.record.get(c)).strip() for r in rows for c in SCORE_COLUMNS):
        return rows, ""
    out: list[Row] = []
    n_tie = n_bad = n_winners = 0
    for row in rows:
        raw = [text_of(row.record.get(c)).strip() for c in SCORE_COLUMNS]
        if not any(raw):
            n_winners += 1
            out.append(row)
            continue
        s1, s2 = (_number(x) for x in raw)
        if s1 is None or s2 is None:
            n_bad += 1
            text = f"{UNREADABLE_SCORES}: score_1={raw[0]!r} score_2={raw[1]!r}"
            out.append(replace(row, verdicts=tuple((o, text) for o, _ in row.verdicts)))
            continue
        if s1 == s2:
            n_tie += 1
            out.append(replace(row, verdicts=tuple((o, "tie") for o, _ in row.verdicts)))
            continue
        better = "1" if s1 > s2 else "2"
        for (order, recorded), col in zip(row.verdicts, WIDE, strict=True):
            if recorded and recorded != presented(better, order):
                raise ReplayFileError(
                    row.src, row.line, f"field {col!r}: the scores (score_1={raw[0]}, "
                    f"score_2={raw[1]}) make output {better} the winner, but the column "
                    f"records {text_of(row.record.get(col))!r}; a wide file's score_1/score_2 "
                    "are read as the scores of the two outputs (LLMBar's Rating strategies)")
        out.append(replace(row, verdicts=tuple((o, presented(better, o))
                                               for o, _ in row.verdicts)))
    n_scores = len(rows) - n_winners
    notes.append(f"verdicts of {n_scores} of {len(rows)} records read from score_1/score_2, "
                 f"not the winner columns: the higher score wins in both orders; {n_tie} with "
                 f"equal scores are ties and {n_bad} with an unreadable score invalid, where "
                 "the winner columns record LLMBar's tie-break (the output shown second wins) "
                 "and a first-shown pick; each output was rated alone, so the orders always "
                 "agree" + (f"; {n_winners} of {len(rows)} records, with both score cells "
                            "empty, read from their winner columns" if n_winners else ""))
    return out, SCORE_READING + (WINNER_FALLBACK if n_winners else "")


def _passes(rec: dict[str, Any], filters: dict[str, str]) -> bool:
    return all(text_of(rec.get(k)) == v for k, v in filters.items())


def _index(rows: list[Row], fmt: Format, columns: tuple[str, ...], params: dict[str, str],
           options: dict[str, str], filters: dict[str, str], file_name: str
           ) -> tuple[dict[tuple[str, str], str], dict[str, str], dict[str, str]]:
    """Rows -> verdicts, scores and text-key labels: the highest sample of each run wins, a
    record given twice is refused, several runs left after the filters are refused."""
    mapped = {options[k] for k in ("item", "order", "verdict", "score") if options.get(k)}
    run_cols = tuple(c for c in columns if c not in VALUE_COLUMNS and c not in fmt.values
                     and c not in params and c not in mapped)
    # (item, order-or-"*") -> {run -> row}; "*" = a record holding both orders (or a score)
    best: dict[tuple[str, str], dict[tuple[str, ...], Row]] = defaultdict(dict)
    seen: dict[tuple[str, str, tuple[str, ...], int], Row] = {}
    for row in rows:
        unit = row.verdicts[0][0] if len(row.verdicts) == 1 else "*"
        run = tuple(text_of(row.record.get(c)) for c in run_cols)
        twice = seen.get((row.item, unit, run, row.sample))
        if twice is not None:
            what = ("different verdicts" if twice.recorded != row.recorded
                    else "the same verdict twice")
            at = "" if unit == "*" else f" order {unit}"
            lines = (f"lines {twice.line} and {row.line}" if twice.src == row.src
                     else f"{twice.src}:{twice.line} and {row.src}:{row.line}")
            if twice.src == row.src and twice.line == row.line:  # a one-line JSON list
                lines = f"two records on line {row.line}"
            raise ReplayFileError(
                row.src, row.line,
                f"{lines} record {what} for item {_item(row.item, row.label)}{at} (sample "
                f"{row.sample}) with {describe_filters(filters)}; a record must appear once "
                "(number repeated verdicts in a `sample` column)")
        seen[row.item, unit, run, row.sample] = row
        prev = best[row.item, unit].get(run)
        if prev is None or row.sample > prev.sample:
            best[row.item, unit][run] = row

    verdicts: dict[tuple[str, str], str] = {}
    origin: dict[tuple[str, str], Row] = {}
    scores: dict[str, str] = {}
    labels: dict[str, str] = {}
    ambiguous: list[tuple[str, dict[tuple[str, ...], Row]]] = []
    for (item, _unit), runs in best.items():
        if len(runs) > 1:
            ambiguous.append((item, runs))
            continue
        (row,) = runs.values()
        for order, v in row.verdicts:
            other = origin.get((item, order))
            if other is not None:
                raise ReplayFileError(row.src, row.line, f"lines {other.line} and {row.line} both "
                                      f"record item {_item(item, row.label)} order {order}")
            verdicts[item, order] = v
            origin[item, order] = row
        if row.score is not None:
            scores[item] = row.score
        if row.label:
            labels[item] = row.label
    if ambiguous:
        item, runs = ambiguous[0]
        vals = [tuple(text_of(r.record.get(c)) for c in run_cols) for r in runs.values()]
        varying = [c for i, c in enumerate(run_cols) if len({v[i] for v in vals}) > 1]
        example = "; ".join(
            f"{c}=" + "/".join(sorted({v[i] for v in vals}))
            for i, c in enumerate(run_cols) if c in varying
        )
        raise ValueError(
            f"replay file {file_name} with {describe_filters(filters)}: {len(ambiguous)} item(s) "
            f"have records from several runs that differ in column(s) {', '.join(varying)} "
            f"(e.g. item {item!r}: {example}); add a filter such as {varying[0]}=..."
        )
    return verdicts, scores, labels


def _item(key: str, label: str) -> str:
    return f"{key!r} ({label})" if label else repr(key)


def _check_filters(src: str, columns: tuple[str, ...], filters: dict[str, str],
                   fmt: Format) -> None:
    """Every parameter that is no option of the format must be a column."""
    cols = ", ".join(columns)
    for name in filters:
        if name in columns:
            continue
        close = difflib.get_close_matches(name, columns, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        elsewhere = [f.name for f in FORMATS.values() if name in f.options]
        if elsewhere and not close:
            hint = f"; {name} is an option of format {', '.join(elsewhere)}"
        options = ", ".join([*OPTIONS, *fmt.options])
        raise ReplayFileError(src, None, f"parameter {name!r} is neither an option of format "
                              f"{fmt.name} ({options}) nor a column of the file (columns: "
                              f"{cols}){hint}")


def _no_match(tables: list[Table], filters: dict[str, str]) -> str:
    """Why no record passes the filters: a value the column never has (listing those it
    has), or values that never occur together."""
    records = [r for t in tables for _, r in t.records]
    for name, want in filters.items():
        values = sorted({text_of(r.get(name)) for r in records})
        if want not in values:
            shown = ", ".join(repr(v) for v in values[:12]) + (", ..." if len(values) > 12 else "")
            close = difflib.get_close_matches(want, values, n=1, cutoff=0.6)
            hint = f"; did you mean {name}={close[0]}?" if close else ""
            return (f"parameter {name}={want!r}: no row has this value (column {name!r} has "
                    f"{shown}){hint}")
    return f"no row matches {describe_filters(filters)} together"


# ---- fastchat: question and answer texts ----------------------------------------------------

def _jsonl_records(src: str, p: Path, fkey: _FileKey) -> tuple[tuple[int, dict[str, Any]], ...]:
    table = _read(src, p, fkey)[0]
    return table.records


def _fastchat_texts(path: Path, table: Table, options: dict[str, str]
                    ) -> tuple[dict[str, Any], list[tuple[str, Path, _FileKey]], list[str]]:
    """FastChat's question.jsonl (question_id -> turns) and model_answer/<model>.jsonl
    ((question_id, model) -> turns) for the models the judgments name. Defaults: the
    FastChat layout data/mt_bench/{question.jsonl, model_answer/, model_judgment/FILE}."""
    base = path.parent.parent
    files: list[tuple[str, Path, _FileKey]] = []
    notes: list[str] = []
    q_src = options.get("questions") or (str(base / "question.jsonl")
                                         if (base / "question.jsonl").is_file() else None)
    a_src = options.get("answers") or (str(base / "model_answer")
                                       if (base / "model_answer").is_dir() else None)
    questions: dict[str, list[str]] = {}
    answers: dict[tuple[str, str], list[str]] = {}
    if q_src is not None:
        p, k = _stat(q_src)
        files.append((q_src, p, k))
        for lineno, rec in _jsonl_records(q_src, p, k):
            turns = rec.get("turns")
            if "question_id" not in rec or not isinstance(turns, list) or not all(
                    isinstance(x, str) for x in turns):
                raise ReplayFileError(q_src, lineno, "expected a FastChat question: "
                                      "question_id and turns (a list of texts)")
            questions[text_of(rec["question_id"]).strip()] = turns
    if a_src is not None:
        adir = Path(a_src).expanduser()
        if not adir.is_dir():
            raise ReplayFileError(a_src, None, "parameter answers: expected FastChat's "
                                  "model_answer folder (one <model>.jsonl per model)")
        models = sorted({text_of(r.get(m)).strip() for _, r in table.records
                         for m in ("model_1", "model_2")} - {""})
        missing = []
        for model in models:
            f = adir / f"{model}.jsonl"
            if not f.is_file():
                missing.append(model)
                continue
            p, k = _stat(str(f))
            files.append((str(f), p, k))
            for lineno, rec in _jsonl_records(str(f), p, k):
                choices = rec.get("choices")
                first = choices[0] if isinstance(choices, list) and choices else None
                turns = first.get("turns") if isinstance(first, dict) else None
                if "question_id" not in rec or not isinstance(turns, list) or not all(
                        isinstance(x, str) for x in turns):
                    raise ReplayFileError(str(f), lineno, "expected a FastChat answer: "
                                          "question_id and choices[0].turns (a list of texts)")
                answers[text_of(rec["question_id"]).strip(), model] = turns
        if missing:
            notes.append(f"no answers for model(s) {', '.join(missing)} in {a_src}: their "
                         "judgments keep ids mtbench:q<question_id>:<model_1>:<model_2>:t<turn>")
    if q_src is None or a_src is None:
        need = " and ".join(x for x, v in (("questions=FILE", q_src), ("answers=DIR", a_src))
                            if v is None)
        notes.append(f"no answer texts ({need} not given and not found beside the file): "
                     "judgments are keyed by id mtbench:q<question_id>:<model_1>:<model_2>:"
                     "t<turn>, which matches only data whose ids follow it")
    return {"questions": questions, "answers": answers}, files, notes


# Prometheus's answer ends "[RESULT] N"; FastChat's single-answer grading holds "[[N]]" once.
# ASCII digits, as `parse_score` reads them: a recorded "५" is passed on and counted invalid.
_BENCH_SCORE = re.compile(r"\[RESULT\]\s*\(?\s*([0-9]+(?:\.[0-9]+)?)\s*\)?\s*$"
                          r"|^(?!.*\[\[.*\[\[).*?\[\[\s*([0-9]+(?:\.[0-9]+)?)\s*\]\]", re.S)
_LEAD_NUMBER = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(?:\n|$)")


def _score_ids(meta: dict[str, Any]) -> list[str]:
    return [str(s) for s in (meta.get("score_ids") or ["1", "2", "3", "4", "5"])]


@register
class ReplayProvider(Provider):
    """Serves recorded verdicts; `model` is the file path; `format=` and the format's own
    options are options, every other parameter a column filter."""

    name: ClassVar[str] = "replay"
    # Column filters are open-ended, so the base class checks nothing; load_index refuses a
    # parameter that is neither an option of the format nor a column of the file, naming the
    # file's columns.
    known_params: ClassVar[dict[str, str] | None] = None
    # The options, for `judgeaudit judges` (known_params cannot list them: it is a whitelist).
    param_help: ClassVar[dict[str, str]] = PARAM_HELP
    uses_meta: ClassVar[bool] = True
    deterministic: ClassVar[bool] = True
    recorded_only: ClassVar[bool] = True
    default_concurrency: ClassVar[int] = 64

    def __init__(self, model: str, params: dict[str, str] | None = None):
        super().__init__(model, params)
        if not model:
            raise ValueError("replay needs a file: replay:PATH?column=value&...")
        self.filters = dict(self.params)
        self.index = load_index(model, self.filters)
        self._orders: dict[str, set[str]] | None = None
        log.info("replay %s: %s, %d records kept", self.index.path.name, self.index.detected,
                 self.index.n_rows)
        for note in self.index.notes:
            log.warning("replay %s: %s", self.index.path.name, note)

    def cache_identity(self) -> dict[str, Any]:
        # The files' content hash: an edited file is never served from a stale cache.
        return {
            "provider": self.name,
            "model": str(self.index.path),
            "params": dict(sorted(self.filters.items())),
            "file": {"size": self.index.size, "sha256": self.index.sha256},
            # verdicts read from scores differ from the winner columns' (a cache written
            # before they were is not served)
            **({"reading": self.index.reading} if self.index.reading else {}),
        }

    def recorded_orders(self, item_id: str, prompt: str | None = None,
                        responses: Sequence[str] | None = None) -> list[str] | None:
        """The orders the file records for an item (by id, else for a file matched by
        content by its prompt and responses), for the pairwise judge to ask those: a one-order
        recording (alpaca_eval, `order=12`) is judged in its order. None when the item is not
        recorded (a perturbed copy, another data set): the judge then asks as usual."""
        if self._orders is None:
            self._orders = {}
            for key, order in self.index.verdicts:
                self._orders.setdefault(key, set()).add(order)
        got = self._orders.get(item_id)
        if not got and self.index.by_text and prompt is not None and responses:
            a, b = str(responses[0]), str(responses[1])
            got = {o for o in ("12", "21")
                   if self.index.locate(item_id, o, prompt, (a, b) if o == "12" else (b, a))}
        return sorted(got) if got else None

    def _where(self) -> str:
        return f"in {self.index.path.name} with {describe_filters(self.filters)}"

    def cannot_serve(self, meta: Mapping[str, Any]) -> str | None:
        task = meta.get("task", "pairwise")
        if task in ("pairwise", "pointwise"):
            return None
        return f"replay cannot serve task {task!r} (only pairwise, pointwise)"

    async def generate(self, request: Request) -> Response:
        meta = request.meta or {}
        item = meta.get("item_id")
        if not item:
            raise FatalProviderError("replay needs Request.meta['item_id'] (and 'order')")
        task = meta.get("task", "pairwise")
        if task == "pointwise":
            if item not in self.index.scores:  # this item only: the others are recorded
                raise RequestRejected(f"no recorded score for item {item!r} {self._where()}",
                                      kind="not_recorded")
            return Response(text=self._score_text(self.index.scores[item], meta))
        if task != "pairwise":
            raise FatalProviderError(str(self.cannot_serve(meta)))
        order = str(meta.get("order", ""))
        if order not in {"12", "21"}:
            raise FatalProviderError(
                f"replay: item {item!r} has order={order!r}; expected '12' or '21'")
        text = self.index.find(item, order, meta.get("prompt"), meta.get("shown"))
        if text is None:  # this item only: the others are recorded (the run counts it)
            how = " (nor by its prompt and response texts)" if self.index.by_text else ""
            raise RequestRejected(
                f"no recorded verdict for item {item!r} order {order}{how} {self._where()}",
                kind="not_recorded")
        return Response(text=text, probs=None)

    @staticmethod
    def _score_text(score: str, meta: dict[str, Any]) -> str:
        """A recorded id is returned as is; a number k becomes the k-th score id, also where a
        judge's whole answer was recorded in a benchmark's own score format (Prometheus's
        "... [RESULT] 4", FastChat's "Rating: [[4]]"); anything else is passed on to be
        counted invalid."""
        ids = _score_ids(meta)
        if score in ids:
            return score
        m = _BENCH_SCORE.search(score)
        if m is not None:
            lead = _LEAD_NUMBER.match(score)
            marked = m.group(1) or m.group(2)
            if lead is not None and float(lead.group(1)) != float(marked):
                return score  # an opening score and a marker that disagree: left invalid
            score = marked
        if not score.isascii():  # float() reads "५" as 5.0; a live answer "५" is unreadable
            return score
        try:
            k = float(score)
        except ValueError:
            return score
        if k.is_integer() and 1 <= k <= len(ids):
            return ids[int(k) - 1]
        return score


__all__ = ["FORMATS", "LONG", "OPTIONS", "PARAM_HELP", "SCALAR_COLUMNS", "WIDE",
           "ReplayFileError", "ReplayIndex", "ReplayProvider", "formats_help", "load_index",
           "text_key"]
