"""A replay file that records the position the judge picked (first/second shown) must be
mapped to A/B; the README's example mapped it to 1/2 (response_1/response_2), which read a
judge right on 9 of 10 pairs in both orders as 50% accuracy with position consistency 0%,
and nothing said so. The README's example now gives the right numbers, and evaluate warns
when a replay's two orders disagree on most pairs."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
README = Path(__file__).resolve().parents[2] / "README.md"


def _write(tmp_path: Path) -> tuple[Path, Path]:
    """T1's mine.csv pattern: 10 items labelled 1, 2, 1, 2, ...; the judge picks the right
    response in both orders except on q3, and the file records the position it picked."""
    items, rows = tmp_path / "items.jsonl", ["qid,pos,pick"]
    with items.open("w") as f:
        for i in range(10):
            label = 1 + i % 2
            f.write(json.dumps({"id": f"q{i}", "prompt": f"Q{i}: capital of France?",
                                "response_1": f"{'Paris' if label == 1 else 'Lyon'} ({i})",
                                "response_2": f"{'Lyon' if label == 1 else 'Paris'} ({i})",
                                "label": label}) + "\n")
            picked = label if i != 3 else 3 - label  # the response the judge picked
            for order in ("12", "21"):
                shown_first = 1 if order == "12" else 2
                rows.append(f"q{i},{order},{'first' if picked == shown_first else 'second'}")
    mine = tmp_path / "mine.csv"
    mine.write_text("\n".join(rows) + "\n")
    return items, mine


def _evaluate(tmp_path: Path, judge: str, items: Path) -> tuple[dict, str]:
    out = tmp_path / "out"
    res = runner.invoke(app, ["evaluate", "--judge", judge, "--data", f"jsonl:{items}",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output
    return json.loads((out / "results.json").read_text()), " ".join(res.output.split())


def test_the_readme_replay_example_reads_positions_as_positions(tmp_path, isolated_cache):
    items, mine = _write(tmp_path)
    example = re.search(r"--judge '(replay:mine\.csv\?[^']*)'", README.read_text()).group(1)
    doc, text = _evaluate(tmp_path, example.replace("mine.csv", str(mine)), items)
    assert doc["accuracy"]["value"] == 0.9
    assert doc["position_consistency_valid"]["value"] == 1.0
    assert "verdict_map may read" not in text


def test_a_replay_whose_orders_disagree_on_most_pairs_warns(tmp_path, isolated_cache):
    items, mine = _write(tmp_path)
    judge = f"replay:{mine}?item=qid&order=pos&verdict=pick&verdict_map=first:1,second:2,tie:0"
    doc, text = _evaluate(tmp_path, judge, items)
    assert doc["accuracy"]["value"] == 0.5 and doc["position_consistency_valid"]["value"] == 0
    assert "warning: the replayed verdicts of the two orders disagree on 10 of 10 pairs" in text
    assert "the verdict_map may read the shown positions as responses" in text
    assert f"judgeaudit replay-check '{mine}?item=qid" in text


def test_no_warning_for_a_live_judge_or_a_consistent_replay(tmp_path, isolated_cache):
    items, mine = _write(tmp_path)
    judge = f"replay:{mine}?item=qid&order=pos&verdict=pick&verdict_map=first:A,second:B"
    _, text = _evaluate(tmp_path, judge, items)
    assert "verdict_map may read" not in text
    # a live judge always picking the first position: position bias, not a mapping
    _, text = _evaluate(tmp_path, "sim?position=20&seed=0", items)
    assert "verdict_map may read" not in text
