"""A release gate names the probes that measured nothing (s44 gate finding 1): on 40
Chinese pairs verbosity, authority, beauty and injection are not_run (their perturbations
add English), and `--fail-on biased` passed saying only 'undecided: 2 probes (bandwagon,
position)'; `--fail-on biased,undecided` passed too. Now the gate line, --json and
results.json name them (gate.not_run, also counted in gate.undecided), and
`--fail-on biased,undecided` fails on them (exit 1): a gate cannot vouch for a probe that
measured nothing. A gate naming such a probe stays 'unchecked' (exit 3) as before."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

NOT_RUN = ["authority", "beauty", "injection", "verbosity"]
ZH = [("中国的首都是哪里？", "中国的首都是北京。", "中国的首都是上海。"),
      ("一年有几个月？", "一年有十二个月。", "一年有十个月。")]


def _data(tmp_path):
    path = tmp_path / "zh.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(40):
            q, good, bad = ZH[i % 2]
            label = 1 + i % 2
            r1, r2 = (good, bad) if label == 1 else (bad, good)
            f.write(json.dumps({"id": f"zh{i}", "prompt": q, "response_1": r1,
                                "response_2": r2, "label": label}, ensure_ascii=False) + "\n")
    return path


def _audit(tmp_path, gate: str, name: str):
    out = tmp_path / name
    r = CliRunner().invoke(app, ["audit", "--judge", "sim?seed=0", "--data",
                                 f"jsonl:{_data(tmp_path)}", "--fail-on", gate, "--json",
                                 "--out", str(out), "--no-cache"])
    summary = json.loads(r.stdout.splitlines()[0])
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return r, summary, doc


def test_a_passing_gate_names_the_probes_not_run(tmp_path):
    r, summary, doc = _audit(tmp_path, "biased", "a")
    assert r.exit_code == 0, r.output
    for gate in (summary["gate"], doc["gate"]):
        assert gate["outcome"] == "passed"
        assert gate["not_run"] == NOT_RUN
        assert set(NOT_RUN) <= set(gate["undecided"])
    said = " ".join(r.stderr.split())
    assert ("not run: 4 probes (authority, beauty, injection, verbosity), which measured "
            "nothing, so the gate cannot check them") in said
    assert "--fail-on biased,undecided fails on them" in said
    html = (tmp_path / "a" / "report.html").read_text(encoding="utf-8")
    assert "or not run: measured nothing" in html


def test_fail_on_undecided_fails_on_the_probes_not_run(tmp_path):
    r, summary, doc = _audit(tmp_path, "biased,undecided", "b")
    assert r.exit_code == 1, r.output
    assert summary["exit_code"] == 1
    for gate in (summary["gate"], doc["gate"]):
        assert gate["outcome"] == "tripped"
        assert set(NOT_RUN) <= set(gate["by"])
        assert gate["not_run"] == NOT_RUN
    said = " ".join(r.stderr.split())
    assert "verbosity (not run)" in said and "authority (not run)" in said


def test_a_gate_naming_a_probe_not_run_stays_unchecked(tmp_path):
    r, summary, doc = _audit(tmp_path, "verbosity,position", "c")
    assert r.exit_code == 3, r.output
    assert doc["gate"]["outcome"] == "unchecked" and doc["gate"]["by"] == ["verbosity"]
    assert doc["gate"]["not_run"] == ["verbosity"]
    assert "verbosity" not in doc["gate"].get("undecided", [])  # unchecked, not undecided


def test_a_tripped_gate_names_the_probes_it_did_not_check(tmp_path):
    from judgeaudit.cli.runner import undecided_line

    gate = {"fail_on": "biased", "outcome": "tripped", "by": ["position"],
            "not_run": ["verbosity"], "undecided": ["verbosity"]}
    assert undecided_line(gate, "audit") == (
        "tripped; not run: 1 probe (verbosity), which measured nothing, so the gate did not "
        "check them")
    # without a probe not run the lines are as before
    assert undecided_line({**gate, "not_run": [], "undecided": []}, "audit") is None
    passed = {"fail_on": "biased", "outcome": "passed", "by": [], "undecided": ["position"]}
    assert undecided_line(passed, "audit") == (
        "passed, undecided: 1 probe (position) underpowered, which the gate cannot check (the "
        "data cannot tell); --fail-on biased,undecided fails on them")
