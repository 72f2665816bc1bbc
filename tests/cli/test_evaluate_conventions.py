"""`judgeaudit evaluate` states its conventions (pair rule, tie handling) in results.json, the
terminal and the report; evaluates pointwise data (correlations with gold scores at item,
group and system level); samples items with a seed; breaks results down by a field."""

from __future__ import annotations

import copy
import json
import re
from html import unescape
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.report.html import render_report

runner = CliRunner()
FIXTURES = Path(__file__).resolve().parents[1] / "report" / "fixtures"


def _text(html: str) -> str:
    html = re.sub(r"<style.*?</style>|<svg.*?</svg>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def write_pairs(path: Path, n: int = 24) -> None:
    """Pairwise items, every fourth labelled a tie, with a category in metadata (one of them
    carrying markup, which the report must escape)."""
    with open(path, "w") as f:
        for i in range(n):
            label = 0 if i % 4 == 0 else 1 + (i % 2)
            cat = "<b>odd</b>" if i % 3 == 0 else "plain"
            f.write(json.dumps({"id": f"p:{i}", "prompt": f"q {i}", "response_1": f"a {i}",
                                "response_2": f"b {i} longer answer", "label": label,
                                "metadata": {"cat": cat}}) + "\n")


def run(tmp_path: Path, *args: str, out: str = "out"):
    res = runner.invoke(app, ["evaluate", *args, "--out", str(tmp_path / out)])
    doc = None
    if (tmp_path / out / "results.json").exists():
        doc = json.loads((tmp_path / out / "results.json").read_text())
    return res, doc


def test_pairwise_rule_and_ties_are_stated_everywhere(tmp_path, isolated_cache):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data)
    res, doc = run(tmp_path, "--judge", "sim?seed=2", "--data", f"jsonl:{data}",
                   "--pair-rule", "both", "--by", "cat")
    assert res.exit_code == 0, res.output
    conv = doc["conventions"]
    assert conv["pair_rule"] == "both" and conv["ties"] == "keep" and conv["ties_default"]
    assert conv["n_tie_labels"] == 6 and "three-way accuracy" in conv["description"]
    out = " ".join(res.output.split())
    assert "pair rule both, ties keep (default), 6 tie-labelled" in out
    assert "conventions: both: the pair is right only when every asked order is right" in out
    assert doc["accuracy"] == doc["accuracy_by_rule"]["both"] and doc["accuracy"]["n"] == 24
    rows = {r["value"]: r for r in doc["breakdown"]["rows"]}
    assert set(rows) == {"<b>odd</b>", "plain"} and rows["plain"]["n_items"] == 16
    html = render_report(doc)
    text = _text(html)
    assert "Conventions" in text and "Pair rule both" in text and "Tie labels keep" in text
    assert "both (used above)" in text and "By cat" in text
    assert "&lt;b&gt;odd&lt;/b&gt;" in html and "<b>odd</b>" not in html

    dropped, doc2 = run(tmp_path, "--judge", "sim?seed=2", "--data", f"jsonl:{data}",
                        "--ties", "drop", out="out2")
    assert dropped.exit_code == 0, dropped.output
    assert doc2["conventions"]["ties"] == "drop" and doc2["accuracy"]["n"] == 18
    assert doc2["conventions"]["pair_rule"] == "mean"
    assert "ties drop, 6 tie-labelled" in " ".join(dropped.output.split())


def test_pointwise_data_gives_correlations_at_every_level(tmp_path, isolated_cache):
    res, doc = run(tmp_path, "--judge", "sim?seed=0", "--data", "builtin:graded", "--limit",
                   "100", "--group-by", "question_group", "--system-field", "level", "--by",
                   "source")
    assert res.exit_code == 0, res.output
    assert doc["task"] == "pointwise" and doc["n"] == 100 and doc["n_valid"] == 100
    corr = doc["correlation"]
    for level in ("item", "group", "system"):
        for stat in ("pearson", "spearman", "kendall"):
            est = corr[level][stat]
            assert est["value"] is not None and est["n"] >= 2, (level, stat, est)
    assert corr["item"]["pearson"]["value"] > 0.5
    assert "Fisher z" in corr["item"]["method"]["pearson"]
    assert "bootstrap over items" in corr["item"]["method"]["kendall"]
    assert corr["group"]["n_groups_used"] <= corr["group"]["n_groups"]
    assert corr["system"]["n_systems"] == 5  # one "system" per planted level
    assert doc["conventions"]["pair_rule"] is None and "pointwise" in doc["conventions"][
        "description"]
    assert doc["run"]["status"] == "ok" and doc["run"]["n_valid"] == 100
    out = " ".join(res.output.split())
    assert "pointwise scores vs gold" in out and "Kendall tau-b, group level" in out
    assert "invalid scores of 100" in out
    text = _text(render_report(doc))
    assert "Correlation with the gold scores" in text and "System level" in text
    assert "By source" in text and "Exact agreement" in text
    assert "averaged over" in text and "groups" in text


def test_sample_is_reproducible_and_recorded(tmp_path, isolated_cache):
    args = ["--judge", "sim?seed=1", "--data", "builtin:facts", "--sample", "15", "--seed", "7"]
    r1, d1 = run(tmp_path, *args, out="a")
    r2, d2 = run(tmp_path, *args, out="b")
    r3, d3 = run(tmp_path, *args[:-1], "8", out="c")
    assert r1.exit_code == r2.exit_code == r3.exit_code == 0, r1.output
    ids = [[v["item_id"] for v in d["verdicts"]] for d in (d1, d2, d3)]
    assert ids[0] == ids[1] != ids[2] and len(ids[0]) == 15
    assert d1["selection"] == {"kind": "sample", "n": 15, "requested": 15, "seed": 7,
                               "by": "id_hash", "of": d1["selection"]["of"]}
    assert "random sample of 15" in r1.output
    assert "a random sample of 15" in _text(render_report(d1))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--limit", "5", "--sample", "5"], "--limit and --sample"),
        (["--data", "builtin:graded", "--pair-rule", "sum"], "apply to pairwise data"),
        (["--data", "builtin:graded", "--ties", "drop"], "apply to pairwise data"),
        (["--group-by", "topic"], "apply to pointwise data"),
        (["--system-field", "topic"], "apply to pointwise data"),
        (["--by", "nosuch"], "no item has a field or metadata key 'nosuch'"),
        (["--data", "builtin:graded", "--group-by", "nosuch"], "--group-by nosuch"),
        (["--pair-rule", "avg"], "expected one of mean, sum, both"),
        (["--ties", "maybe"], "expected one of keep, drop"),
        (["--sample", "0"], "--sample"),
    ],
)
def test_bad_combinations_are_usage_errors_before_any_call(args, needle, tmp_path,
                                                           isolated_cache):
    full = ["--judge", "sim", *args] if "--data" in args else ["--judge", "sim", "--data",
                                                                "builtin:facts", *args]
    res, doc = run(tmp_path, *full)
    assert res.exit_code == 2, res.output
    flat = " ".join(re.sub("[\u2500-\u257f]", " ", res.output).split())  # no box lines
    assert needle in flat, res.output
    assert doc is None


async def test_mixed_pairwise_and_pointwise_items_are_refused(tmp_path):
    """The loaders keep one kind per file; evaluate() refuses a mixed list too."""
    from judgeaudit.audit.evaluate import evaluate
    from judgeaudit.data import PairwiseItem, PointwiseItem
    from judgeaudit.judges import make_judge

    items = [PairwiseItem(id="a", prompt="q", response_1="x", response_2="y", label=1),
             PointwiseItem(id="b", prompt="q", response="x", score=3)]
    with pytest.raises(ValueError, match="mixes 1 pairwise and 1 pointwise"):
        await evaluate(make_judge("sim"), items)


def test_results_from_before_conventions_still_render():
    doc = json.loads((FIXTURES / "evaluate_results.json").read_text("utf-8"))
    assert "conventions" not in doc
    text = _text(render_report(doc))
    assert "Not recorded in this results file" in text and "LLMBar's rule" in text
    assert "Accuracy 0.763" in text


def test_report_of_a_pointwise_run_with_missing_pieces_renders():
    """Levels and breakdown rows without values (too few units) show dashes, not errors."""
    doc = {"command": "evaluate", "task": "pointwise", "judge": "j", "data": "d",
           "conventions": {"pair_rule": None, "ties": None, "description": "pointwise: x"},
           "correlation": {"item": {"pearson": {"value": 0.5, "ci95": [None, None], "n": 3},
                                    "spearman": {"value": None, "ci95": [None, None], "n": 3},
                                    "kendall": None, "n": 3, "method": {}},
                           "group": None, "system": None},
           "breakdown": {"by": "k", "metric": "correlation",
                         "rows": [{"value": "v", "n_items": 1, "pearson": None}]},
           "exact_agreement": {"value": 1.0, "ci95": [0.2, 1.0], "n": 1}}
    text = _text(render_report(copy.deepcopy(doc)))
    assert "Item level Pearson r +0.500" in text and "By k" in text


@pytest.mark.parametrize(("rows", "needle"), [
    ([{"id": f"p{i}", "prompt": "q", "response_1": "a", "response_2": "b"} for i in range(4)],
     "none of the 4 pairs has a label"),
    ([{"id": f"s{i}", "prompt": "q", "response": "a"} for i in range(3)],
     "none of the 3 items has a gold score"),
    ([{"id": f"s{i}", "prompt": "q", "response": "a"} for i in range(3)],
     "the gold score is read from a field 'score' or 'rating'; for a column of another name: "
     "hf:PATH?score=COLUMN"),
])
def test_data_with_nothing_to_evaluate_against_is_refused_before_any_call(
        rows, needle, tmp_path, isolated_cache):
    """Unlabelled pairs (or unscored items) made every call and passed (exit 0) with every
    metric at n=0; now a usage error before any call."""
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    res, doc = run(tmp_path, "--judge", "sim", "--data", f"jsonl:{path}")
    assert res.exit_code == 2, res.output
    assert needle in " ".join(res.output.split()) and doc is None


def test_the_terminal_counts_the_items_left_out_for_want_of_a_label(tmp_path, isolated_cache):
    """Unlabelled pairs (unscored items) were counted only in results.json."""
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"id": f"p{i}", "prompt": "q", "response_1": "a",
                                         "response_2": "b", **({"label": 1} if i else {})})
                             + "\n" for i in range(3)), "utf-8")
    scored = tmp_path / "scored.jsonl"
    scored.write_text("".join(json.dumps({"id": f"s{i}", "prompt": "q", "response": "a",
                                          **({"score": 3} if i < 3 else {})}) + "\n"
                              for i in range(5)), "utf-8")
    res, doc = run(tmp_path, "--judge", "sim", "--data", f"jsonl:{pairs}", out="p")
    assert res.exit_code == 0 and doc["n_labelled"] == 2, res.output
    assert "left out: 1 of 3 pairs unlabelled" in " ".join(res.output.split())
    res, doc = run(tmp_path, "--judge", "sim", "--data", f"jsonl:{scored}", out="s")
    assert res.exit_code == 0 and doc["n_unscored"] == 2, res.output
    assert "left out: 2 of 5 items without a gold score" in " ".join(res.output.split())
