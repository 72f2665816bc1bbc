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
