"""`judgeaudit replay-check` on hand-made files, through typer's CliRunner on a tiny app that
only has the command `register` adds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli import replay_cmd

runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _main() -> None:  # a group, so the command is called by its name
        pass

    replay_cmd.register(app)
    return app


def run(app: typer.Typer, *args: str) -> tuple[int, str]:
    res = runner.invoke(app, ["replay-check", *args])
    return res.exit_code, re.sub(r"\s+", " ", res.output)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def data_file(tmp_path: Path, labels: dict[str, int], name: str = "items.jsonl") -> str:
    rows = [{"id": i, "prompt": f"question {i}", "response_1": f"first {i}",
             "response_2": f"second {i}", "label": lab} for i, lab in labels.items()]
    p = write(tmp_path / name, "".join(json.dumps(r) + "\n" for r in rows))
    return f"jsonl:{p}"


def test_reports_format_matches_coverage_values_and_accuracy(app, tmp_path):
    data = data_file(tmp_path, {"a": 1, "b": 2, "c": 1, "d": 2})
    v = write(tmp_path / "v.csv", "item_id,judge,order,verdict\n"
              "a,J,12,A\na,J,21,B\n"        # a: 1 and 1 -> right twice
              "b,J,12,A\nb,J,21,A\n"        # b: 1 (wrong), 2 (right)
              "c,J,12,tie\n"                # c: one order only, a tie (wrong)
              "zz,J,12,B\nzz,K,12,???\n")   # no such item; the K row is filtered out
    code, out = run(app, str(v), "judge=J", "--data", data)
    assert code == 0, out
    assert f"verdict file: {v} (judge=J)" in out
    assert "format long (detected: columns order, verdict)" in out
    assert "records read: 7; kept by the filters: 6; verdicts (item, order): 6" in out
    assert "items matched: 3 of 4" in out
    assert "items in the data without verdicts: 1 (e.g. d)" in out
    assert "verdict records without items: 1 (e.g. zz)" in out
    assert "per-order coverage of matched items: both 2, 12 only 1, 21 only 0" in out
    assert "verdict values (all 6 recorded): A 3, B 2, tie 1, invalid 0" in out
    # credit: a 1, b 0.5, c 0 -> 0.5 on n=3
    assert re.search(r"label sanity: accuracy of the recorded verdicts 0\.500 \[0\.\d+, 0\.\d+\] "
                     r"\(n=3 items labelled 1 or 2", out), out
    assert "labels may be inverted" not in out

    # --json: the same counts on stdout, for a script checking a file before a paid run
    res = runner.invoke(app, ["replay-check", str(v), "judge=J", "--data", data, "--json"])
    doc = json.loads(res.stdout)
    assert doc["ok"] is True and doc["exit_code"] == 0 and doc["matched"] == 3
    assert (doc["n_items"], doc["records"], doc["records_kept"], doc["verdicts"]) == (4, 7, 6, 6)
    assert doc["items_without_verdicts"] == 1 and doc["records_without_items"] == 1
    assert doc["coverage"] == {"both": 2, "12 only": 1}
    assert doc["accuracy"]["value"] == 0.5 and doc["accuracy"]["n"] == 3
    res = runner.invoke(app, ["replay-check", str(v), "judge=K", "--data", data, "--json"])
    assert res.exit_code == 3 and json.loads(res.stdout)["ok"] is False
    assert "no item of the data has a recorded verdict" in json.loads(res.stdout)["reason"]


def test_inverted_labels_are_flagged(app, tmp_path):
    ids = [f"i{k}" for k in range(12)]
    data = data_file(tmp_path, dict.fromkeys(ids, 1))
    # every verdict names response_2 (so against labels that say 1)
    rows = "".join(f"{i},{o},2\n" for i in ids for o in ("12", "21"))
    v = write(tmp_path / "v.csv", "item_id,order,verdict\n" + rows)
    code, out = run(app, str(v), "--data", data)
    assert code == 0, out
    assert "accuracy of the recorded verdicts 0.000" in out
    assert "labels may be inverted (A/B or 1/2 swapped?): accuracy 0.0% with its 95% " \
           "interval below 50%" in out
    assert "verdict values (all 24 recorded): A 12, B 12, tie 0, invalid 0" in out


def test_nothing_matched_exits_3(app, tmp_path):
    data = data_file(tmp_path, {"a": 1})
    v = write(tmp_path / "v.csv", "item_id,order,verdict\nLLMBar/Natural:0,12,A\n")
    code, out = run(app, str(v), "--data", data)
    assert code == 3, out
    assert "items matched: 0 of 1" in out and "(e.g. LLMBar/Natural:0)" in out
    assert "no item of the data has a recorded verdict; records are matched by item id" in out


def test_unreadable_input_exits_2(app, tmp_path):
    data = data_file(tmp_path, {"a": 1})
    code, out = run(app, str(tmp_path / "absent.csv"), "--data", data)
    assert code == 2 and "replay file" in out and "no such file" in out
    odd = write(tmp_path / "odd.csv", "item_id,pick\na,A\n")
    code, out = run(app, str(odd), "--data", data)
    assert code == 2 and "No format fits this file" in out and "fastchat (" in out
    code, out = run(app, str(odd), "--data", f"jsonl:{tmp_path / 'nope.jsonl'}")
    assert code == 2 and "nope.jsonl" in out
    code, out = run(app, str(odd), "oops", "--data", data)
    assert code == 2 and "parameter 'oops': expected KEY=VALUE" in out
    code, out = run(app, str(odd))
    assert code == 2 and "--data SPEC is required" in out


def test_format_option_params_and_spec_forms(app, tmp_path):
    data = data_file(tmp_path, {"a": 1, "b": 2})
    v = write(tmp_path / "mine.csv", "qid,pick\na,first\nb,second\n")
    args = ["item=qid", "verdict=pick", "order=12", "verdict_map=first:1,second:2"]
    code, out = run(app, str(v), *args, "--format", "columns", "--data", data)
    assert code == 0, out
    assert "format columns (given: format=columns)" in out
    assert "items matched: 2 of 2" in out and "12 only 2" in out
    assert "accuracy of the recorded verdicts 1.000" in out
    # the same as one spec, format detected from the mapping parameters
    code, out = run(app, f"replay:{v}?{'&'.join(args)}", "--data", data)
    assert code == 0 and "format columns (detected: parameter(s) item, verdict, verdict_map)" in out


def test_one_fixed_order_selects_the_columns_format(app, tmp_path):
    """item_id + verdict with order=12 (one order recorded, as alpaca_eval files): it read
    "no verdict columns (has verdict without its partner)" unless format=columns was given."""
    data = data_file(tmp_path, {"a": 1, "b": 2})
    v = write(tmp_path / "one.csv", "item_id,verdict\na,A\nb,B\n")
    code, out = run(app, f"{v}?order=12", "--data", data)
    assert code == 0, out
    assert "format columns (detected: parameter(s) order)" in out and "12 only 2" in out


def test_two_files_by_placeholder(app, tmp_path):
    data = data_file(tmp_path, {"a": 1, "b": 2})
    write(tmp_path / "run_12.jsonl", '{"item_id": "a", "verdict": "A"}\n'
                                     '{"item_id": "b", "verdict": "B"}\n')
    write(tmp_path / "run_21.jsonl", '{"item_id": "a", "verdict": "B"}\n')
    code, out = run(app, str(tmp_path / "run_{order}.jsonl"), "--data", data)
    assert code == 0, out
    assert "format two_files (detected: a {order} placeholder in the path)" in out
    assert "both 1, 12 only 1, 21 only 0" in out and "accuracy of the recorded verdicts 1.000" \
        in out


def test_alpaca_eval_matched_by_text(app, tmp_path):
    data = data_file(tmp_path, {"a": 1, "b": 2})
    recs: list[dict[str, Any]] = [
        {"instruction": "question a", "output_1": "first a", "output_2": "second a",
         "preference": 1.0},
        {"instruction": "question b", "output_1": "first b", "output_2": "second b",
         "preference": 1.0},   # against the label
        {"instruction": "question c", "output_1": "x", "output_2": "y", "preference": 2.0},
    ]
    for r in recs:
        r.update(generator_1="base", generator_2="model", annotator="gpt4")
    v = write(tmp_path / "annotations.json", json.dumps(recs, indent=2))
    code, out = run(app, str(v), "--data", data)
    assert code == 0, out
    assert "format alpaca_eval (detected: fields preference, output_1, output_2)" in out
    assert "items matched: 2 of 2" in out
    assert "verdict records without items: 1 (e.g. instruction 'question c' (base vs model))" \
        in out
    assert "accuracy of the recorded verdicts 0.500" in out
    # nothing in common -> exit 3 with the text-matching hint
    other = data_file(tmp_path, {"q": 1}, "other.jsonl")
    code, out = run(app, str(v), "--data", other)
    assert code == 3, out
    assert "records are matched by their texts (prompt and the two responses)" in out


def test_tie_labelled_items_are_counted_out_of_the_accuracy(app, tmp_path):
    """The accuracy is over pairs labelled 1 or 2: tie-labelled pairs it leaves out were
    not counted anywhere (0.774 on n=894 of PandaLM's 999, said to be evaluate's)."""
    data = data_file(tmp_path, {"a": 1, "b": 0, "c": 0})
    v = write(tmp_path / "v.csv", "item_id,order,verdict\na,12,A\nb,12,A\nc,12,tie\n")
    code, out = run(app, str(v), "--data", data)
    assert code == 0, out
    assert "(n=1 items labelled 1 or 2" in out
    assert "2 tie-labelled items left out, as evaluate --ties drop does" in out


def test_score_files_count_unreadable_scores_and_read_benchmark_formats(app, tmp_path):
    """Recorded scores: Prometheus's "[RESULT] N" and FastChat's "[[N]]" are read (they were
    all invalid); an empty or unreadable score is counted here (it was not) and invalid when
    judged, not a failed call."""
    rows = [{"id": f"s{k}", "prompt": "q", "response": "a", "score": 3} for k in range(5)]
    data = write(tmp_path / "pw.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    v = write(tmp_path / "s.csv", "item_id,score\ns0,Feedback: fine. [RESULT] 3\n"
              "s1,Rating: [[3]]\ns2,3\ns3,\ns4,so-so\n")
    code, out = run(app, str(v), "--data", f"jsonl:{data}")
    assert code == 0, out
    assert "score values (all 5 recorded): 3 read as 1-5, 2 unreadable" in out
    assert "s3: ''" in out and "s4: 'so-so'" in out
    assert "verdict values" not in out and "label sanity" not in out
