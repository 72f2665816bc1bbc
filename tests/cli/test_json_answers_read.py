"""`--json` states the total the unreadable answers are counted over (`answers_read`: made +
cached - shared, each distinct answer once), so a script can form the share the terminal
shows; it carried `unreadable` without its total."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app


def test_json_calls_carry_answers_read_beside_unreadable(tmp_path, isolated_cache):
    res = CliRunner().invoke(app, ["audit", "--judge", "sim?invalid=0.3", "--n", "12",
                                   "--max-failed", "1",
                                   "--out", str(tmp_path / "a"), "--json"])
    calls = json.loads(res.stdout)["calls"]
    assert calls["shared"] > 0  # the probes read the baseline answers again
    assert calls["answers_read"] == calls["made"] + calls["cached"] - calls["shared"]
    assert 0 < calls["unreadable"] <= calls["answers_read"]
