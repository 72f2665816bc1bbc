"""`judgeaudit cache stats | clear | forget --invalid`, through typer's CliRunner on a tiny app
that `cache_cmd.register` fills."""

from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli.cache_cmd import register
from judgeaudit.llm import Cache, Response


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()

    @a.callback()
    def _main() -> None:  # a group, as the real app is
        pass

    register(a)
    return a


def run(app: typer.Typer, *args: str):
    res = CliRunner().invoke(app, list(args))
    out = re.sub(r"\s+", " ", res.output)  # rich wraps long paths
    return res.exit_code, out


@pytest.fixture
def filled(tmp_path):
    path = tmp_path / "calls.sqlite"
    c = Cache(path)
    for k, prov, model, text in [("o1", "openai", "a", "C"), ("o2", "openai", "b", ""),
                                 ("o3", "openai", "b", "A"), ("s1", "sim", "default", "x")]:
        c.put(k, prov, model, Response(text=text))
    c.mark_invalid("o1", "unparseable answer: 'C'")
    c.mark_invalid("o2", "empty answer")
    c.mark_invalid("s1", "unparseable answer: 'x'")
    c.close()
    return path


def test_stats_shows_entries_per_model_and_invalid_marks(app, filled):
    code, out = run(app, "cache", "stats", "--cache", str(filled))
    assert code == 0, out
    assert "4 entries" in out and "openai:b: 2" in out and "sim:default: 1" in out
    assert "3 invalid answers marked" in out


def test_forget_invalid_by_provider_and_model_then_all(app, filled):
    code, out = run(app, "cache", "forget", "--invalid", "--provider", "openai", "--model", "b",
                    "--cache", str(filled))
    assert code == 0, out
    assert "forgot 1 invalid answer or too-long refusal (openai:b)" in out
    code, out = run(app, "cache", "forget", "--invalid", "--cache", str(filled))
    assert code == 0 and "forgot 2 invalid answers or too-long refusals (all)" in out
    c = Cache(filled)
    assert c.stats().entries == 1 and c.count_invalid() == 0 and c.get("o3").text == "A"
    c.close()
    code, out = run(app, "cache", "stats", "--cache", str(filled))
    assert "0 invalid answers marked" in out


def test_forget_needs_to_be_told_what(app, filled):
    code, out = run(app, "cache", "forget", "--cache", str(filled))
    assert code == 2 and "--invalid" in out
    code, out = run(app, "cache", "forget", "--invalid", "--model", "b", "--cache", str(filled))
    assert code == 2 and "--model needs --provider" in out
    assert Cache(filled).count_invalid() == 3


def test_clear(app, filled):
    code, out = run(app, "cache", "clear", "--provider", "openai", "--model", "b", "--yes",
                    "--cache", str(filled))
    assert code == 0 and "deleted 2 entries (openai:b)" in out
    code, out = run(app, "cache", "clear", "--model", "a", "--yes", "--cache", str(filled))
    assert code == 2  # a model alone would have cleared everything
    # no terminal to confirm on (a script, CI): without --yes nothing is deleted (it was all)
    code, out = run(app, "cache", "clear", "--cache", str(filled))
    assert code == 2 and "add --yes" in out and Cache(filled).stats().entries == 2
    code, out = run(app, "cache", "clear", "-y", "--cache", str(filled))
    assert code == 0 and "deleted 2 entries (all)" in out
    c = Cache(filled)
    assert c.stats().entries == 0 and c.count_invalid() == 0
    c.close()


def test_an_unusable_cache_path_is_a_clear_usage_error(app, tmp_path):
    code, out = run(app, "cache", "stats", "--cache", str(tmp_path))
    assert code == 2 and "is a directory" in out and "Traceback" not in out
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite at all " * 100)
    code, out = run(app, "cache", "forget", "--invalid", "--cache", str(junk))
    assert code == 2 and "is not a SQLite database" in out


@pytest.mark.parametrize("command", [["stats"], ["clear", "--yes"], ["forget", "--invalid"]])
def test_a_cache_file_that_does_not_exist_is_refused_not_created(app, tmp_path, command):
    """A typo in --cache used to create an empty database and report "0 entries"."""
    missing = tmp_path / "typo.sqlite"
    res = CliRunner().invoke(app, ["cache", *command, "--cache", str(missing)])
    assert res.exit_code == 2 and "no such cache file" in " ".join(res.output.split())
    assert not missing.exists()


def test_a_default_cache_that_does_not_exist_is_not_created(app, tmp_path, monkeypatch):
    """With no --cache, `cache stats` under a $JUDGEAUDIT_CACHE that does not exist created
    the file (and its folder) to report 0 entries."""
    missing = tmp_path / "nowhere" / "c.sqlite"
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(missing))
    res = CliRunner().invoke(app, ["cache", "stats"])
    assert res.exit_code == 2 and "no cache yet at" in " ".join(res.output.split())
    assert not missing.parent.exists()


def test_stats_tells_the_embedded_judges_backends_apart(app, tmp_path):
    """`local` judges key each backend apart (`LocalProvider.cache_identity`) but every row
    says provider "local": stats showed one `local:qwen-1.5b: N` line whatever made them.
    The entries are made as the providers key them (no model is loaded); the answers are
    stored as each backend writes them: the integer backends name themselves in
    `raw.backend`, transformers writes nothing of the kind."""
    import sqlite3

    from judgeaudit.llm.base import Message, Request, request_key
    from judgeaudit.llm.providers.local import LocalProvider

    req = Request(messages=(Message("user", "A or B?"),), max_tokens=1, choices=("A", "B"))
    gen = Request(messages=(Message("user", "Say hi"),), max_tokens=8)
    path = tmp_path / "calls.sqlite"
    c = Cache(path)
    keys = set()
    raws = {"transformers": {"logits": {"A": 1.0, "B": 0.0}},
            "ik": {"logits": {"A": 1.0, "B": 0.0}, "backend": "ik"},
            "llamacpp": {"logprobs": {"A": -0.1, "B": -2.0}, "backend": "llamacpp"}}
    for backend, raw in raws.items():
        p = LocalProvider("qwen-1.5b", {"backend": backend})
        assert p.backend == backend
        for r, resp in ((req, Response(text="A", probs={"A": 0.7, "B": 0.3}, raw=raw)),
                        (gen, Response(text="hi", raw=None if backend == "transformers"
                                       else {"finish_reason": "stop", "backend": backend}))):
            key = request_key(p, r)
            keys.add(key)
            c.put(key, "local", p.model, resp)
    assert len(keys) == 6  # the backends key apart
    # an answer ingested from a plan that another server ran (it names no backend)
    c.put_planned([("planned1", "local", "qwen-1.5b", '{"choices": ["A", "B"]}')])
    c.put("planned1", "local", "qwen-1.5b", Response(text="B"))
    c.put("s1", "sim", "default", Response(text="x"))
    c.close()
    with sqlite3.connect(path) as db:  # a row whose answer is not readable JSON
        db.execute("INSERT INTO calls(key, provider, model, response, created) "
                   "VALUES ('bad', 'local', 'qwen-0.5b', '{not json', 0)")

    code, out = run(app, "cache", "stats", "--cache", str(path))
    assert code == 0, out
    assert ("local:qwen-1.5b: 7 (backend ik 2, llamacpp 2, transformers 2, ingested 1)"
            in out)
    assert "local:qwen-0.5b: 1 (backend unknown 1)" in out
    assert "sim:default: 1" in out and "sim:default: 1 (" not in out  # only local's
    s = Cache(path).stats()
    assert s.by_backend == {"local:qwen-1.5b": {"ik": 2, "llamacpp": 2, "transformers": 2,
                                                "ingested": 1},
                            "local:qwen-0.5b": {"unknown": 1}}
    # the same reading without SQLite's JSON functions (an SQLite built without them)
    class NoJson:
        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *args):
            if "json_" in sql:
                raise sqlite3.OperationalError("no such function: json_valid")
            return self.conn.execute(sql, *args)

    c = Cache(path)
    c._conn = NoJson(c._conn)
    assert c.local_backends() == s.by_backend
    c._conn = c._conn.conn
    c.close()
    from judgeaudit.llm.cache import _backend_of

    assert [_backend_of(x) for x in ('{"raw": {"backend": "ik"}}', '{"raw": null}',
                                     '{"text": "A"}', "{not json", '{"raw": {"backend": 3}}')
            ] == ["ik", "", "", None, None]
