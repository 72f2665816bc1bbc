"""An audit's results.json and report.html are readable as the user's umask allows (0644
under 022), like any file the user makes: a web server or another CI user may read them."""

from __future__ import annotations

import os
import stat

from typer.testing import CliRunner

from judgeaudit.cli.main import app


def test_audit_outputs_follow_the_umask(tmp_path, isolated_cache):
    old = os.umask(0o022)
    try:
        r = CliRunner().invoke(app, ["audit", "--judge", "sim?position=1&seed=0", "--data",
                                     "builtin:facts", "--probes", "position", "--n", "20",
                                     "--out", str(tmp_path / "out")])
    finally:
        os.umask(old)
    assert r.exit_code == 0, r.output
    for name in ("results.json", "report.html"):
        assert stat.S_IMODE((tmp_path / "out" / name).stat().st_mode) == 0o644, name


def test_a_default_cache_that_cannot_be_made_says_how_to_go_on(tmp_path, monkeypatch):
    """A container whose HOME is read-only: the default cache cannot be created. The run
    stops before any call (exit 2) and says which options get it going."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(blocker / "calls.sqlite"))
    args = ["evaluate", "--judge", "sim?seed=0", "--data", "builtin:facts", "--limit", "4",
            "--out", str(tmp_path / "out")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2
    # named by where it came from (it said "--cache default" for $JUDGEAUDIT_CACHE's path)
    assert f"$JUDGEAUDIT_CACHE {blocker / 'calls.sqlite'}" in " ".join(r.output.split())
    assert "--no-cache" in r.output
    assert "--cache PATH" in r.output
    assert CliRunner().invoke(app, [*args, "--no-cache"]).exit_code == 0


def test_an_error_shows_acting_characters_in_what_it_quotes(tmp_path):
    """An error quoting a path, an id or a server's message printed its ESC sequences raw:
    the terminal recoloured (or retitled) itself. They read as escapes, as everywhere else."""
    bad = f"jsonl:{tmp_path}/x\x1b[31mred\x07.jsonl"
    r = CliRunner().invoke(app, ["evaluate", "--judge", "sim", "--data", bad,
                                 "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert "\x1b" not in r.output and "\x07" not in r.output
    assert "x\\x1b[31mred\\x07.jsonl" in r.output
