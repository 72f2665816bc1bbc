"""A score answer in digits of another script ("५", Devanagari 5) is unreadable, counted as
such by the judge layer, the client and evaluate alike.

A tester's judge answered Hindi data in Devanagari digits: `parse_score("५")` is None, but
evaluate read each raw answer again with a `\\d` regex and float() and took it as 5.0, and
counted it as a decimal score ("n_decimal: 12" of 12 whole answers). At 80 items the client
stopped after 16 answers it could not read, and the failed run said "0 of 20 answers
unreadable; 60 of 80 calls failed ... unparseable answer: '१'". Scores are read in ASCII
digits, the rubric's ids "1".."K"; evaluate takes the judge layer's reading and does not read
the answer a second time. A real OpenAI-shaped server on loopback answers the scores."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.audit.evaluate import decimal_score, judge_score, summarize_pointwise
from judgeaudit.data import PointwiseItem
from judgeaudit.judges.pointwise import ScoreVerdict

runner = CliRunner()
IDS = ("1", "2", "3", "4", "5")
DEVANAGARI = str.maketrans("0123456789", "०१२३४५६७८९")


def test_the_decimal_reader_reads_ascii_digits_only() -> None:
    assert decimal_score("3.5", IDS) == 3.5
    assert decimal_score("Score: **4.5** / 5", IDS) == 4.5
    assert decimal_score("३", IDS) is None          # Devanagari 3
    assert decimal_score("४.५", IDS) is None        # Devanagari 4.5
    assert decimal_score("٣", IDS) is None          # Arabic-Indic 3
    assert decimal_score("3.5 / ५", IDS) is None    # a scale's top in another script


@pytest.mark.parametrize("raw", ["५", "३", "٣", "3.5\nScore: 2", "3.5\n\\boxed{2}"])
def test_evaluate_counts_an_answer_the_judge_layer_did_not_read_as_unreadable(raw: str) -> None:
    # the judge layer gave no score (parse_score is None on each); evaluate must not find one
    v = ScoreVerdict("a", raw, None)
    assert judge_score(v, IDS) == (None, False)
    items = [PointwiseItem(id=i, prompt="p", response="r", score=3) for i in "abc"]
    verdicts = [ScoreVerdict("a", raw, None), ScoreVerdict("b", "3.5", 3.5),
                ScoreVerdict("c", "4", 4)]
    res = summarize_pointwise(items, verdicts, n_boot=50)
    assert res["n_invalid"] == 1 and res["n_valid"] == 2
    assert res["n_decimal"] == 1          # the 3.5, not the unreadable answer
    assert res["invalid_examples"][0]["raw"] == raw


def _write_points(path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"hi-{i}", "prompt": f"प्रश्न {i}",
                                "response": f"उत्तर {i}", "score": 1 + i % 5},
                               ensure_ascii=False) + "\n")


def _evaluate(tmp_path, n: int) -> tuple[object, dict]:
    from judgeaudit.cli.main import app

    data = tmp_path / "points.jsonl"
    _write_points(data, n)
    out = tmp_path / f"out{n}"
    with FakeLLMServer(answer=lambda text: str(1 + len(text) % 5).translate(DEVANAGARI)) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        r = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                "--concurrency", "1", "--out", str(out)])
    return r, json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.mark.usefixtures("no_keys", "isolated_cache")
def test_devanagari_scores_are_unreadable_and_not_decimal(tmp_path) -> None:
    r, res = _evaluate(tmp_path, 6)  # under the client's watch (8 at --concurrency 1)
    assert res["calls"]["made"] == 6 and res["calls"]["unreadable"] == 6
    assert res["n_invalid"] == 6 and res["n_valid"] == 0
    assert res["n_decimal"] == 0          # was 6: whole answers counted as half points
    assert res["run"]["answers"] == 6 and res["run"]["unreadable"] == 6
    assert res["run"]["status"] == "failed"
    assert "6 of 6 answers could not be read as a score" in res["run"]["message"]
    said = " ".join(r.output.split())
    assert "6 of 6 answers unreadable" in said, r.output


@pytest.mark.usefixtures("no_keys", "isolated_cache")
def test_a_run_the_client_stopped_counts_the_answers_it_could_not_read(tmp_path) -> None:
    r, res = _evaluate(tmp_path, 40)  # the watch stops sending after 8 unreadable answers
    calls, run = res["calls"], res["run"]
    assert calls["made"] == 8 and calls["not_sent"] == 32
    # evaluate's count of unreadable answers is the client's: 8, not 0
    assert run["answers"] == calls["made"] + calls["cached"] == 8
    assert run["unreadable"] == calls["unreadable"] == 8
    assert res["n_invalid"] == 40 and res["n_failed_calls"] == 32 and res["n_decimal"] == 0
    said = " ".join(r.output.split())
    assert "8 of 8 answers unreadable; 32 of 40 calls failed" in said, r.output
    assert "0 of 8 answers unreadable" not in said
    assert "the first 8 answers could not be read as scores" in said
