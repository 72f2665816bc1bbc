"""A task that starts without a total (the audit plans each probe's calls as it reaches it)
gets a bar marked growing from its start, so its first ETA is a lower bound: a tester's audit
read 'eta 36 s' at 30 s and took 1018 s, marked only once its total first grew."""

from __future__ import annotations

import contextlib

from typer.testing import CliRunner

import judgeaudit.cli.runner as runner_mod
from judgeaudit.cli.main import app


def test_an_audit_bar_is_growing_from_its_start(tmp_path, isolated_cache, monkeypatch):
    seen: list[tuple[str, bool]] = []
    real = runner_mod.growing_bar

    @contextlib.contextmanager
    def spy(description: str, growing: bool = False):
        seen.append((description, growing))
        with real(description, growing=growing) as bar:
            yield bar

    monkeypatch.setattr(runner_mod, "growing_bar", spy)
    res = CliRunner().invoke(app, ["audit", "--judge", "sim", "--n", "8",
                                   "--out", str(tmp_path / "a")])
    assert res.exit_code in (0, 1), res.output
    assert seen and all(growing for _, growing in seen), seen
