"""A wide file whose score_1/score_2 are filled on only some rows (a user's file: winner
columns on every row, scores on a few) reads each row from its scores when it has any score
text and from its winner columns when both score cells are empty. 34aed6f read every row from
the scores once any row had one, so 18 of 20 rows became 'unreadable scores' and the run failed
with exit 3 (at 1b8a59b: 100.0%, n = 20, exit 0). LLMBar's Rating rows with one score missing
stay invalid."""

from __future__ import annotations

import json
from pathlib import Path

from judgeaudit.llm import Request
from judgeaudit.llm.providers.replay import SCORE_READING, ReplayProvider
from tests.cli.test_plan_ingest import invoke

HEADER = "item_id,winner_original_order,winner_swapped_order,score_1,score_2\n"


def _files(tmp_path: Path, n: int = 20) -> tuple[Path, Path]:
    """The reviewer's case: n items labelled 1, winners 1,1 on every row, scores 8/5 on the
    first two rows only."""
    rows = [f"q{k},1,1,{'8,5' if k < 2 else ','}" for k in range(n)]
    csv = tmp_path / "wide.csv"
    csv.write_text(HEADER + "\n".join(rows) + "\n", encoding="utf-8")
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"q{k}", "prompt": f"Question {k}?",
                                         "response_1": f"one {k}", "response_2": f"two {k}",
                                         "label": 1}) + "\n" for k in range(n)),
                     encoding="utf-8")
    return csv, items


def req(item: str, order: str) -> Request:
    return Request(messages=(), meta={"task": "pairwise", "item_id": item, "order": order})


async def test_rows_without_scores_are_read_from_their_winner_columns(tmp_path):
    csv, _ = _files(tmp_path)
    p = ReplayProvider(str(csv), {})
    # q5 has no score: its winner columns say output 1 in both orders
    assert [(await p.generate(req("q5", o))).text for o in ("12", "21")] == ["A", "B"]
    # q0 has scores 8 > 5: output 1 wins in both orders
    assert [(await p.generate(req("q0", o))).text for o in ("12", "21")] == ["A", "B"]


async def test_a_row_with_one_score_is_still_an_unreadable_score(tmp_path):
    csv = tmp_path / "wide.csv"
    csv.write_text(HEADER + "q0,1,1,8,5\nq1,1,2,,0\nq2,2,2,,\n", encoding="utf-8")
    p = ReplayProvider(str(csv), {})
    for order in ("12", "21"):
        text = (await p.generate(req("q1", order))).text
        assert text.startswith("no readable recorded scores") and "score_2='0'" in text
    assert [(await p.generate(req("q2", o))).text for o in ("12", "21")] == ["B", "A"]
    (note,) = [n for n in p.index.notes if "score_1/score_2" in n]
    assert "verdicts of 2 of 3 records read from score_1/score_2" in note
    assert "1 with an unreadable score invalid" in note
    assert "1 of 3 records, with both score cells empty, read from their winner columns" in note


def test_the_note_counts_both_readings_and_the_cache_identity_changes(tmp_path):
    csv, _ = _files(tmp_path)
    p = ReplayProvider(str(csv), {})
    (note,) = [n for n in p.index.notes if "score_1/score_2" in n]
    assert "verdicts of 2 of 20 records read from score_1/score_2" in note
    assert "18 of 20 records, with both score cells empty, read from their winner columns" in note
    # a cache written when those rows were read as unreadable scores is not served
    assert p.cache_identity()["reading"] != SCORE_READING
    scored = tmp_path / "scored.csv"
    scored.write_text(HEADER + "q0,1,1,8,5\n", encoding="utf-8")
    assert ReplayProvider(str(scored), {}).cache_identity()["reading"] == SCORE_READING


def test_evaluate_of_the_partly_scored_file_succeeds_with_every_pair(tmp_path, monkeypatch):
    csv, items = _files(tmp_path)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = invoke("evaluate", "--judge", f"replay:{csv}", "--data", f"jsonl:{items}",
                 "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 0, res.output
    out = json.loads((tmp_path / "o" / "results.json").read_text())
    assert out["accuracy"]["value"] == 1.0 and out["accuracy"]["n"] == 20
    assert out["n_invalid"] == 0
