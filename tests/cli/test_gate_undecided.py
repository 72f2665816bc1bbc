"""A release gate with probes the data could not decide: `compare --fail-on worse` on a change
+0.200 [-0.308, +0.738] "underpowered", and `audit --adaptive --max-calls 500 --fail-on
biased` with every probe stopped by the budget undecided, passed with exit 0 and no word. The
gate now lists them (`gate.undecided`, in results.json and --json), says so on the terminal,
and `--fail-on worse,underpowered` / `--fail-on biased,undecided` fails on them (exit 1)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.report import read_results, write_results

runner = CliRunner()


def _probe(value: float, lo: float, hi: float) -> dict:
    return {"title": "Position", "metric": "m", "direction": "d", "no_bias_range": [-0.05, 0.05],
            "effect": {"value": value, "ci95": [lo, hi]}, "n": 20, "p": 0.5, "q": 0.5,
            "verdict": "underpowered", "notes": []}


def _audit(value: float, lo: float, hi: float) -> dict:
    return {"command": "audit", "version": "0.1.0", "judge": "sim", "data": "builtin:facts",
            "n_items": 20, "template": {"name": "pairwise_v1", "sha256": "cd" * 32},
            "run": {"status": "ok", "message": "", "n_valid": 20, "n_planned": 20,
                    "calls_failed": 0, "calls_asked": 0},
            "alpha": 0.05, "summary": {"biased": []},
            "probes": {"position": _probe(value, lo, hi)}}


def _pair(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_results(a / "results.json", _audit(0.0, -0.2, 0.2))
    write_results(b / "results.json", _audit(0.2, -0.1, 0.5))
    return a, b


def _json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_compare_gate_that_passes_says_which_probes_were_undecided(tmp_path):
    a, b = _pair(tmp_path)
    out = tmp_path / "cmp"
    r = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out), "--fail-on",
                            "worse", "--json"])
    assert r.exit_code == 0, r.output
    gate = _json(r.stdout)["gate"]
    assert gate["outcome"] == "passed" and gate["undecided"] == ["position"]
    assert read_results(out)["gate"]["undecided"] == ["position"]
    text = " ".join(r.output.split())
    assert "passed, undecided: 1 probe (position) underpowered" in text
    assert "--fail-on worse,underpowered fails on them" in text


def test_compare_fail_on_worse_underpowered_fails_on_an_undecided_probe(tmp_path):
    a, b = _pair(tmp_path)
    out = tmp_path / "cmp"
    r = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out), "--fail-on",
                            "worse,underpowered", "--json"])
    assert r.exit_code == 1, r.output
    doc = _json(r.stdout)
    assert doc["exit_code"] == 1
    assert doc["gate"]["outcome"] == "tripped" and doc["gate"]["by"] == ["position"]
    assert doc["gate"]["worse"] == []
    assert "position underpowered" in " ".join(r.output.split())
    # a named probe takes the word too; the word alone is no gate (exit 2)
    r = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out), "--fail-on",
                            "position,underpowered"])
    assert r.exit_code == 1, r.output
    r = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out), "--fail-on",
                            "underpowered"])
    assert r.exit_code == 2, r.output
    assert "not a gate alone" in " ".join(r.output.split())


def test_audit_stopped_by_the_budget_undecided_passes_with_a_word_or_fails_on_undecided(
        tmp_path):
    args = ["audit", "--judge", "sim?position=1&seed=0", "--adaptive", "--max-calls", "500",
            "--no-cache", "--json", "--probes", "position,verbosity"]
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "a"), "--fail-on", "biased"])
    assert r.exit_code == 0, r.output
    gate = _json(r.stdout)["gate"]
    assert gate["outcome"] == "passed"
    assert gate["undecided"] == ["position", "verbosity"], gate
    assert "passed, undecided: 2 probes" in " ".join(r.output.split())
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--fail-on",
                            "biased,undecided"])
    assert r.exit_code == 1, r.output
    gate = _json(r.stdout)["gate"]
    assert gate["outcome"] == "tripped" and gate["by"] == ["position", "verbosity"]
    assert "position (undecided)" in " ".join(r.output.split())
