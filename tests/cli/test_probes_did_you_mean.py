"""`--probes positon` says which probe was meant, as `--fail-on positon` and a config
file's key do (it listed the known probes with no hint)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from judgeaudit.audit.probe import did_you_mean, get_probe, probe_names
from judgeaudit.cli.main import app


def test_the_probes_option_names_the_closest_probe(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = CliRunner().invoke(app, ["audit", "--judge", "sim", "--data", "builtin:facts",
                                   "--probes", "verbosity,positon", "--out",
                                   str(tmp_path / "out")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "unknown probe 'positon'; did you mean position?; known: authority," in text


def test_the_api_and_every_option_share_one_hint():
    with pytest.raises(ValueError, match=r"unknown probe 'verbosty'; did you mean "
                                         r"verbosity\?; known: "):
        get_probe("verbosty")
    with pytest.raises(ValueError, match=r"unknown probe 'zzzz'; known: authority"):
        get_probe("zzzz")  # nothing close: no hint
    known = probe_names()
    assert did_you_mean(["positon", "verbosty"], known) == \
        "; did you mean position, verbosity?"
    assert did_you_mean(["zzzz"], known) == ""
