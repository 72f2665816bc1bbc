"""`judgeaudit scoring-bias` through typer on a simulated judge: files written, table printed,
bad input refused with a clear message, a second run served from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from judgeaudit.cli.scoring_cmd import register

app = typer.Typer()


@app.callback()
def _root() -> None:
    """Group, so the command keeps its name."""


register(app)
RUN = CliRunner()


def _invoke(*args: str):
    return RUN.invoke(app, ["scoring-bias", *args], catch_exceptions=False)


def test_sim_run_writes_results_and_report(tmp_path: Path) -> None:
    out = tmp_path / "o"
    cache = tmp_path / "c.sqlite"
    args = ("--judge", "sim?quality=6&order_bias=1&crn=1", "--data", "builtin:graded",
            "--limit", "60", "--perturbations", "order_desc,ref_2", "--ids",
            "grades=F,D,C,B,A", "--repeats", "2", "--out", str(out), "--cache", str(cache))
    r = _invoke(*args)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert res["schema_version"] == 1 and res["command"] == "scoring-bias"
    assert list(res["perturbations"]) == ["baseline", "order_desc", "ref_2", "ids_grades"]
    assert res["perturbations"]["order_desc"]["shift"]["value"] > 0.5
    assert res["perturbations"]["ref_2"]["n_missing"] == 0  # graded: its own level-2 answers
    assert res["calls"]["made"] == 60 * 5
    assert res["run"]["status"] == "ok" and res["run"]["n_planned"] == 60 * 5
    html = (out / "report.html").read_text()
    assert "ids_grades" in html and "<svg" in html
    assert "recommended template" in r.output and "calls: 300 made" in r.output
    again = _invoke(*args)
    assert "calls: 0 made, 300 from cache" in again.output


def test_bad_input_is_refused(tmp_path: Path) -> None:
    r = _invoke("--judge", "sim", "--perturbations", "order_up", "--out", str(tmp_path))
    assert r.exit_code == 2 and "unknown scoring perturbation" in r.output
    r = _invoke("--judge", "sim", "--data", "builtin:facts", "--out", str(tmp_path))
    assert r.exit_code == 2 and "no pointwise items" in r.output
    r = _invoke("--judge", "sim", "--ids", "x=1,2", "--out", str(tmp_path))
    assert r.exit_code == 2 and "5 comma-separated ids" in r.output
    r = _invoke("--judge", "sim", "--references", str(tmp_path / "nope.json"),
                "--out", str(tmp_path))
    assert r.exit_code == 2 and "--references" in r.output
    r = _invoke("--judge", "sim", "--repeats", "0", "--out", str(tmp_path))
    assert r.exit_code == 2 and "--repeats" in r.output


def test_generator_or_reviewer_without_generation_is_refused_before_any_call(tmp_path: Path):
    """--generator/--reviewer without --generate-references were ignored: exit 0, no
    Ref-1..4 answers written, nothing said."""
    for extra in (("--generator", "sim"), ("--reviewer", "sim"),
                  ("--generator", "sim", "--reviewer", "sim")):
        out = tmp_path / extra[-2].strip("-")
        r = _invoke("--judge", "sim", "--limit", "2", "--out", str(out), "--no-cache", *extra)
        assert r.exit_code == 2, r.output
        names = " and ".join(a for a in extra if a.startswith("--"))
        assert "used only with --generate-references" in r.output
        assert f"leave {names} out" in r.output
        assert not (out / "results.json").exists()


def test_generated_references_are_shared_per_question_and_reported(
        tmp_path: Path, shared_data: Path, fake_server) -> None:
    """--generate-references with two loopback servers on the first 8 MT-Bench instances
    (5 questions): one Ref-1..4 set per question, every instance scored under ref_1..4, the
    coverage in references.json and in the report."""
    import re

    def gen(prompt: str) -> str:
        k = re.search(r"deserves a score of (\d) exactly", prompt).group(1)
        return f"LEVEL {k} text"

    def judge(prompt: str) -> str:
        m = re.search(r"LEVEL (\d) text", prompt)
        return m.group(1) if m else "3"

    g, j = fake_server(answer=gen, logprobs=False), fake_server(answer=judge, logprobs=False)
    spec = "openai:m?base_url={}&api_key=k"
    out = tmp_path / "o"
    r = _invoke("--judge", spec.format(j.openai_url), "--generator", spec.format(g.openai_url),
                "--data", f"prometheus:{shared_data / 'prometheus_eval'}?set=mt_bench",
                "--limit", "8", "--repeats", "1", "--perturbations", "ref_1,ref_4",
                "--generate-references", "--ref-attempts", "2", "--out", str(out),
                "--no-cache")
    assert r.exit_code == 0, r.output
    refs = json.loads((out / "references.json").read_text())
    s = refs["summary"]
    assert s["n"] == 20 and s["accepted"] == 20  # 5 questions x 4 levels, all first try
    assert s["questions_with_all"] == 5 and s["items_with_all"] == 8
    assert g.count() == 20
    res = json.loads((out / "results.json").read_text())
    assert res["perturbations"]["ref_1"]["n"] == res["perturbations"]["ref_4"]["n"] == 8
    assert "5 questions, covering 8 items" in (out / "report.html").read_text()


def test_too_few_items_warn_and_recommend_nothing(tmp_path: Path) -> None:
    """At --limit 5 the bootstrap intervals collapsed ('Spearman 1.000 [1.00, 1.00]') and a
    template was recommended from them without a word (field test)."""
    r = _invoke("--judge", "sim", "--data", "builtin:graded", "--limit", "5", "--out",
                str(tmp_path / "a"), "--cache", str(tmp_path / "c.sqlite"))
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "a" / "results.json").read_text())
    assert res["warnings"] and "only 5 items" in res["warnings"][0]
    assert "only 5 items" in " ".join(r.output.split())
    rec = res["recommended"]
    assert rec is None or (not rec["clearly_better"] and "no recommendation" in rec["notes"][-1])
    r = _invoke("--judge", "sim", "--data", "builtin:graded", "--limit", "12", "--out",
                str(tmp_path / "b"), "--cache", str(tmp_path / "c.sqlite"))
    assert r.exit_code == 0 and json.loads((tmp_path / "b" / "results.json").read_text())[
        "warnings"] == []


def test_the_json_summary_carries_each_templates_numbers_and_the_caveats(tmp_path: Path):
    from judgeaudit.result import Result

    r = _invoke("--judge", "sim", "--data", "builtin:graded", "--limit", "5", "--out",
                str(tmp_path), "--cache", str(tmp_path / "c.sqlite"))
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "results.json").read_text())
    s = Result.from_document(doc).summary()
    assert s["warnings"] == doc["warnings"] and s["recommended_notes"]
    mad = doc["perturbations"]["order_desc"]["mad"]
    assert s["templates"]["order_desc"]["mad"] == {k: mad[k] for k in ("value", "ci95", "n")}


def _point_var(path: Path) -> Path:
    """T1's point_var.jsonl: 12 items, one with a null gold score."""
    with path.open("w") as f:
        for i in range(12):
            q = 1 + i % 5
            f.write(json.dumps({"id": f"p{i}", "prompt": f"Explain topic {i}",
                                "response": f"An answer of quality {q} " + "x " * i,
                                "score": None if i == 4 else q}) + "\n")
    return path


def test_the_table_shows_the_n_each_number_uses_and_why_rows_are_empty(tmp_path: Path):
    """The n column said 12 beside Spearman and Pearson over 11 (one item has no gold score),
    and nothing said so; ref_1..ref_5 showed dashes and n 0 with no reason."""
    data = _point_var(tmp_path / "point_var.jsonl")
    r = _invoke("--judge", "sim?order_bias=0.5", "--data", f"jsonl:{data}", "--out",
                str(tmp_path / "o"), "--cache", str(tmp_path / "c.sqlite"))
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["n_gold"] == 11 and res["perturbations"]["ids_letters"]["spearman"]["n"] == 11
    row = next(line for line in r.output.splitlines() if line.startswith("│ ids_letters"))
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[7:9] == ["12", "11"], cells  # n, n gold
    text = " ".join(r.output.split())
    assert "1 item has no gold score (left out of the correlations" in text
    assert ("ref_1..ref_5: not run on any item (n 0): no --references given and the data has "
            "no level-k answers") in text

    # references for some items at one level: the rest say where they come from
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({f"p{i}": {"2": f"a level-2 answer {i}"} for i in range(6)}))
    r = _invoke("--judge", "sim?order_bias=0.5", "--data", f"jsonl:{data}", "--references",
                str(refs), "--out", str(tmp_path / "o2"), "--cache", str(tmp_path / "c.sqlite"))
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "ref_2: 6 of 12 items have no Ref-2 answer (left out of its row)" in text
    assert f"ref_1, ref_3, ref_4, ref_5: not run on any item (n 0): --references {refs}" in text
