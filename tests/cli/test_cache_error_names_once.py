"""A cache that cannot be opened is named once in the error: the CLI's "--cache X:" and the
cache's own "cache X:" both prefixed it ("--cache f: cache f: holds table users ...")."""

from __future__ import annotations

import sqlite3

from typer.testing import CliRunner

from judgeaudit.cli.main import app


def test_a_refused_cache_file_is_named_once(tmp_path):
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("create table users(id integer primary key, name text)")
    con.commit()
    con.close()
    res = CliRunner().invoke(app, ["evaluate", "--judge", "sim", "--data", "builtin:facts",
                                   "--limit", "2", "--cache", str(other),
                                   "--out", str(tmp_path / "o")])
    text = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert f"--cache {other}: holds table users" in text, text
    assert text.count(str(other)) == 1, text
