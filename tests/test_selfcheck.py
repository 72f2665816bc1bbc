"""`judgeaudit selfcheck`: every planted-truth scenario passes on this code, a scenario whose
planted bias was removed fails its "flags" check, and the command prints the table on
stderr, the JSON on stdout and exits 0 / 1."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit import selfcheck as S
from judgeaudit.audit.probe import probe_names


@pytest.fixture(scope="module")
def report() -> S.SelfCheckReport:
    return S.run_selfcheck()


def test_every_planted_truth_scenario_passes(report):
    assert report.ok, report.table()
    defaults = set(probe_names(default_only=True))
    checks = {(c.scenario, c.check) for c in report.checks}
    for p in defaults:  # each default probe flags its bias and stays quiet without it
        assert (f"audit: {p} planted", f"{p} flags its planted bias") in checks
        assert ("audit: nothing planted", f"{p} stays quiet") in checks
    assert ("audit: length only, length control",
            "authority: length alone, nothing beyond it") in checks
    assert ("audit: authority and length, length control",
            "authority: the cue moves the judge beyond its length") in checks
    assert any(c.scenario.startswith("rank:") for c in report.checks)
    assert any(c.scenario.startswith("mitigate:") for c in report.checks)
    assert report.seconds < 60


def test_the_report_is_a_table_and_json(report):
    text = report.table()
    assert text.splitlines()[0].split() == ["scenario", "check", "expected", "observed", "pass"]
    assert f"{len(report.checks)} of {len(report.checks)} checks passed" in text
    assert "sim?quality=1.5&position=1.5&seed=0" in text  # the setups are listed
    doc = json.loads(json.dumps(report.as_dict()))
    assert doc["ok"] is True and doc["n_failed"] == 0
    assert set(doc["checks"][0]) == {"scenario", "check", "expected", "observed", "passed",
                                     "setup"}


def test_every_default_probe_has_a_planting():
    assert set(probe_names(default_only=True)) <= set(S.PLANT)


def test_a_scenario_without_its_planted_bias_fails_the_flags_check():
    broken = S.AuditScenario("audit: position not planted", "sim?quality=1.5&seed=0",
                             ("position",), flags=("position",))
    rep = S.run_selfcheck([broken])
    assert not rep.ok
    (c,) = rep.checks
    assert c.check == "position flags its planted bias" and not c.passed
    assert c.observed.startswith(("underpowered", "not_biased"))
    assert "FAIL" in rep.table() and "0 of 1 checks passed" in rep.table()


def test_a_planted_bias_fails_the_quiet_check():
    loud = S.AuditScenario("audit: injection planted, expected quiet",
                           "sim?quality=1.5&injection=1.5&seed=0", ("injection",),
                           quiet=("injection",))
    (c,) = S.run_selfcheck([loud]).checks
    assert c.check == "injection stays quiet" and not c.passed and c.observed.startswith("biased")


def test_the_length_checks_fail_when_truth_and_expectation_are_swapped():
    """Each length-control check can fail: the judge with authority planted fails the
    'nothing beyond length' check, the length-only judge the 'beyond its length' one."""
    swapped = [S.AuditScenario("a", "sim?quality=1.5&length=1.5&authority=1.5&seed=0",
                               ("authority",), n=200, beyond_quiet=("authority",)),
               S.AuditScenario("b", "sim?quality=1.5&length=1.5&seed=0", ("authority",),
                               n=200, beyond_flags=("authority",))]
    checks = S.run_selfcheck(swapped).checks
    assert len(checks) == 2 and not any(c.passed for c in checks), checks


def test_an_error_is_a_failed_check_not_a_crash():
    bad = S.AuditScenario("audit: no such probe", "sim?seed=0", ("nope",), flags=("nope",))
    (c,) = S.run_selfcheck([bad]).checks
    assert not c.passed and c.check == "run" and "unknown probe 'nope'" in c.observed


def _app() -> typer.Typer:
    from judgeaudit.cli.selfcheck_cmd import register

    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        """(a group, so the command keeps its name)"""

    register(app)
    return app


@pytest.mark.parametrize("planted", [True, False])
def test_the_command_exits_0_when_all_pass_and_1_otherwise(monkeypatch, planted):
    judge = "sim?quality=1.5&position=1.5&seed=0" if planted else "sim?quality=1.5&seed=0"
    one = S.AuditScenario("audit: position", judge, ("position",), flags=("position",), n=60)
    monkeypatch.setattr(S, "default_scenarios", lambda: [one])
    res = CliRunner().invoke(_app(), ["selfcheck", "--json"])
    assert res.exit_code == (0 if planted else 1), res.output
    doc = json.loads(res.stdout)
    assert doc["ok"] is planted and doc["n_checks"] == 1
    assert "position flags its planted bias" in res.stderr
    assert ("PASS" if planted else "FAIL") in res.stderr
