"""Release-gate faults a CI tester found (its report, points 2, 4 and 5): a `--fail-on PROBE`
gate that passed on a probe which measured nothing, per-probe unreadable answers missing from
`--json`, and `compare` silent about audits written by different judgeaudit versions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
ONE_ORDER = "sim?position=3&seed=0&orders=one"


def _audit(out: Path, judge: str, *extra: str) -> object:
    return runner.invoke(app, ["audit", "--judge", judge, "--n", "20", "--no-cache",
                               "--out", str(out), *extra])


def _nolabel(path: Path, n: int = 12) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"q{i}", "prompt": f"What is {i} + {i}?",
                                "response_1": f"It is {2 * i}.",
                                "response_2": f"It is {2 * i + 1}."}) + "\n")
    return path


def test_position_of_a_judge_answering_in_one_order_is_not_run_with_its_reason(tmp_path):
    """Every pair judged in one order only: position said "underpowered", n = 0, beside
    "single_order 40"; the README promises a probe that cannot run says not_run and why."""
    res = _audit(tmp_path / "a", ONE_ORDER)
    assert res.exit_code == 0, res.output
    p = json.loads((tmp_path / "a" / "results.json").read_text())["probes"]["position"]
    assert p["verdict"] == "not_run" and p["n"] == 0
    assert any(n.startswith("not run:") and "one order only" in n for n in p["notes"])
    assert "position: not run:" in " ".join(res.output.split())


def test_fail_on_a_probe_that_measured_nothing_does_not_pass(tmp_path):
    """`--fail-on position` exited 0 when position had n = 0 (the judge answered each pair
    in one order only): a gate it could not check cannot pass."""
    res = _audit(tmp_path / "a", ONE_ORDER, "--fail-on", "position", "--json")
    assert res.exit_code == 3, res.output
    text = " ".join(res.output.split())
    assert "fail-on position: position measured nothing" in text
    assert "one order only" in text and "the gate cannot pass" in text
    summary = json.loads(res.stdout.splitlines()[0])
    gate = summary["gate"]
    assert gate["outcome"] == "unchecked" and gate["by"] == ["position"]
    assert "one order only" in gate["why"]["position"]
    assert summary["ok"] is False and "position measured nothing" in summary["reason"]
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    assert doc["gate"]["outcome"] == "unchecked"


def test_fail_on_a_probe_not_run_for_want_of_labels_does_not_pass(tmp_path):
    """`--fail-on authority` on data without labels exited 0 with authority not_run."""
    data = _nolabel(tmp_path / "nolabel.jsonl")
    res = runner.invoke(app, ["audit", "--data", f"jsonl:{data}", "--judge", "sim?authority=5",
                              "--probes", "position,authority", "--fail-on", "authority",
                              "--no-cache", "--out", str(tmp_path / "a")])
    assert res.exit_code == 3, res.output
    text = " ".join(res.output.split())
    assert "authority measured nothing" in text and "without a label" in text


def test_fail_on_a_probe_that_measured_passes_when_another_measured_nothing(tmp_path):
    """Only the probes the gate names count: position measuring nothing does not stop a
    `--fail-on authority` gate that authority passes."""
    res = _audit(tmp_path / "a", ONE_ORDER, "--fail-on", "authority")
    assert res.exit_code == 0, res.output


@pytest.fixture(scope="module")
def two_audits(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("audits")
    for name, judge in (("a", "sim?position=3&seed=0"), ("b", ONE_ORDER)):
        res = _audit(base / name, judge)
        assert res.exit_code == 0, res.output
    return base / "a", base / "b"


def test_compare_fail_on_a_probe_b_measured_nothing_fails_the_gate(two_audits, tmp_path):
    """`compare A B --fail-on position` exited 0 although B's position had n = 0, and the
    title said "(20 items, all matched by id)"."""
    a, b = two_audits
    res = runner.invoke(app, ["compare", str(a), str(b), "--fail-on", "position", "--out",
                              str(tmp_path / "c"), "--json"])
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "position measured nothing in B" in text and "one order only" in text
    assert "all matched by id; position used no item in B" in text
    gate = json.loads(res.stdout.splitlines()[0])["gate"]
    assert gate["outcome"] == "tripped" and gate["unmeasured"] == {"position": "B"}
    doc = json.loads((tmp_path / "c" / "results.json").read_text())
    assert doc["items"]["unused"] == {"position": "B"}
    # the reverse: A measured nothing
    rev = runner.invoke(app, ["compare", str(b), str(a), "--fail-on", "position", "--out",
                              str(tmp_path / "r")])
    assert rev.exit_code == 1 and "position measured nothing in A" in " ".join(
        rev.output.split())
    # a gate on a probe both measured is not affected
    other = runner.invoke(app, ["compare", str(a), str(b), "--fail-on", "authority", "--out",
                                str(tmp_path / "o")])
    assert other.exit_code == 0, other.output


def test_json_summary_carries_each_probes_unreadable_answers(tmp_path):
    """--json had no per-probe n_invalid (a passing run had beauty at n = 3 with 17 of 20
    answers unreadable) and no baseline counts."""
    res = _audit(tmp_path / "a", "sim?seed=0&invalid=0.15", "--json", "--max-failed", "0.9")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.splitlines()[0])
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    for name, p in doc["probes"].items():
        assert summary["effects"][name]["n_invalid"] == p["n_invalid"]
    assert sum(p["n_invalid"] for p in doc["probes"].values()) > 0
    base = summary["baseline"]
    assert base["n_invalid"] == doc["baseline"]["n_invalid"] > 0
    assert base["n_verdicts"] == doc["baseline"]["n_verdicts"]
    assert base["accuracy"]["n"] == doc["baseline"]["accuracy"]["n"]


def test_compare_says_when_the_audits_were_written_by_different_versions(two_audits,
                                                                          tmp_path):
    """A/B results of judgeaudit 0.0.1 and 0.1.0 were compared without a word."""
    a, _ = two_audits
    old = tmp_path / "old"
    shutil.copytree(a, old)
    doc = json.loads((old / "results.json").read_text())
    doc["version"] = "0.0.1"
    (old / "results.json").write_text(json.dumps(doc))
    res = runner.invoke(app, ["compare", str(old), str(a), "--out", str(tmp_path / "c"),
                              "--json", "--fail-on", "worse"])
    assert res.exit_code == 0, res.output  # not a failure
    import judgeaudit

    said = f"A was written by judgeaudit 0.0.1 and B by judgeaudit {judgeaudit.__version__}"
    assert said in " ".join(res.output.split())
    out = json.loads((tmp_path / "c" / "results.json").read_text())
    assert out["versions_differ"] == {"a": "0.0.1", "b": judgeaudit.__version__}
    assert any(said in n for n in out["notes"])
    assert said in " ".join((tmp_path / "c" / "report.html").read_text().split())
    assert json.loads(res.stdout.splitlines()[0])["versions_differ"]["a"] == "0.0.1"
    same = runner.invoke(app, ["compare", str(a), str(a), "--out", str(tmp_path / "s")])
    assert "was written by" not in same.output


def test_a_tripped_gate_still_says_which_named_probe_measured_nothing(tmp_path):
    res = _audit(tmp_path / "a", ONE_ORDER + "&authority=5", "--fail-on",
                 "position,authority", "--n", "40", "--json")
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "fail-on: authority" in text and "note: fail-on position,authority: position " \
        "measured nothing" in text
    assert json.loads(res.stdout.splitlines()[0])["gate"]["outcome"] == "tripped"
