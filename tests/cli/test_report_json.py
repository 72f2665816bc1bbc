"""`judgeaudit report DIR --json` prints the summary of the result the report was rebuilt
from, exactly as the command that wrote it printed it with `--json` (stdout: one JSON object;
the report's path on stderr)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def _ok(args: list[str]):
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return res


def test_report_json_is_the_commands_own_json(tmp_path, isolated_cache):
    runs = {
        "evaluate": ["evaluate", "--judge", "sim?seed=0", "--limit", "8"],
        "a": ["audit", "--judge", "sim:biased?seed=0", "--probes", "position", "--n", "12"],
        "b": ["audit", "--judge", "sim:biased?seed=0", "--probes", "position", "--n", "12"],
        "rank": ["rank", "--judge", "sim?length=1&position=0.3", "--items",
                 "builtin:controlled?seed=1&n=8&k=2", "--budget", "12", "--samples", "100"],
    }
    own = {}
    for name, args in runs.items():
        own[name] = _ok([*args, "--out", str(tmp_path / name), "--json"]).stdout
    own["compare"] = _ok(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out",
                          str(tmp_path / "compare"), "--json"]).stdout
    for name in ("evaluate", "a", "rank", "compare"):
        res = _ok(["report", str(tmp_path / name), "--out", str(tmp_path / f"{name}.html"),
                   "--json"])
        assert json.loads(res.stdout) == json.loads(own[name]), name
        assert res.stdout.count("\n") == 1  # one JSON object, nothing else on stdout
        assert (tmp_path / f"{name}.html").is_file()
    s = json.loads(own["compare"])
    assert s["command"] == "compare" and set(s["verdicts"]) == {"position"}


def test_report_json_of_a_failed_run_and_of_a_missing_file(tmp_path, isolated_cache):
    res = runner.invoke(app, ["evaluate", "--judge", "sim?seed=0", "--limit", "5",
                              "--min-valid", "50", "--out", str(tmp_path / "f"), "--json"])
    assert res.exit_code == 3, res.output
    rep = _ok(["report", str(tmp_path / "f" / "results.json"), "--json"])  # a rebuild: exit 0
    s, run = json.loads(rep.stdout), json.loads(res.stdout)
    # the summary as the run printed it, its exit code too (the rebuild itself exits 0)
    assert run["exit_code"] == s["exit_code"] == 3
    assert s == run and s["ok"] is False and s["reason"]

    res = runner.invoke(app, ["report", str(tmp_path / "nope"), "--json"])
    assert res.exit_code == 2 and "no results file" in res.output
    assert not res.stdout.strip().startswith("{")
