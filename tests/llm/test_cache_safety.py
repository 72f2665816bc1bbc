"""Field-safe runs, part 3: what reaches the cache. Lone surrogates in prompts and replies,
the response size cap (a server ignoring max_tokens), cache files that cannot be used, and
invalid answers marked so they can be forgotten and asked again."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import replace
from typing import ClassVar

import pytest
from fakeserver import judge_request

from judgeaudit.llm import (
    MAX_RESPONSE_CHARS,
    Cache,
    CacheError,
    Client,
    Message,
    Provider,
    Request,
    Response,
    RetryPolicy,
    make_provider,
)
from judgeaudit.llm.base import request_key

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)


def openai(srv, **params):
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k",
                                            **params})


def db_size(path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def req(text: str) -> Request:
    return Request(messages=(Message("user", text),))


# ---- lone surrogates ---------------------------------------------------------------------------

def test_request_key_takes_lone_surrogates_and_keeps_keys_distinct():
    p = make_provider("sim", "default")
    keys = {request_key(p, req(t)) for t in ("a\ud800", "a\ud801", "a\ufffd", "a", "a\udfff")}
    assert len(keys) == 5
    # valid text keys exactly as before (plain UTF-8): existing caches stay valid
    material = {"id": p.cache_identity(), "req": req("ünï").key_material(p.uses_meta)}
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    assert request_key(p, req("ünï")) == hashlib.sha256(blob.encode("utf-8")).hexdigest()


async def test_a_reply_with_a_lone_surrogate_is_cleaned_before_it_is_cached(fake_server,
                                                                            tmp_path):
    srv = fake_server(faults=["surrogate"])
    cache = Cache(tmp_path / "c.sqlite")
    client = Client(openai(srv), cache, retry=FAST)
    out = await client.call(judge_request(1))
    assert out.text == "A \ufffd broken"
    assert out.raw["sanitized"] == "lone surrogate replaced"
    (tmp_path / "out.txt").write_text(out.text + json.dumps(out.raw, ensure_ascii=False),
                                      encoding="utf-8")  # nothing downstream crashes on it
    again = await Client(openai(srv), cache).call(judge_request(1))
    assert again.cached and again.text == out.text and srv.count() == 1
    assert client.stats.made == 1 and client.stats.failed == 0
    await client.aclose()
    cache.close()


# ---- the response size cap -----------------------------------------------------------------------

async def test_a_server_ignoring_max_tokens_cannot_fill_the_cache(fake_server, tmp_path):
    srv = fake_server(rule=lambda rec, attempt: "huge", huge_chars=5_000_000)
    path = tmp_path / "c.sqlite"
    cache = Cache(path)
    # stop_after=0: ten unusable answers in a row would stop the client (test_breaker.py)
    client = Client(openai(srv), cache, concurrency=2, retry=replace(FAST, stop_after=0))
    outs = await client.map([judge_request(i) for i in range(10)])
    assert srv.count() == 10 and client.stats.made == 10 and client.stats.failed == 0
    for o in outs:
        assert len(o.text) == MAX_RESPONSE_CHARS
        assert o.raw["truncated_from"] == 5_000_000
        assert o.invalid == f"response of 5000000 chars exceeds the cap of {MAX_RESPONSE_CHARS}"
    cached = cache.get(request_key(client.provider, judge_request(3)))
    assert cached.invalid == outs[3].invalid  # still invalid when read back
    assert db_size(path) < 4_000_000  # 10 x 5 MB would be 50 MB
    await client.aclose()
    cache.close()


async def test_the_cap_comes_from_the_environment(fake_server, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_MAX_RESPONSE_CHARS", "1000")
    srv = fake_server(faults=["huge"], huge_chars=50_000)
    client = Client(openai(srv), retry=FAST)
    assert client.max_response_chars == 1000
    out = await client.call(judge_request(1))
    assert len(out.text) == 1000 and out.raw["truncated_from"] == 50_000
    assert "exceeds the cap of 1000" in out.invalid
    ok = await client.call(judge_request(2))  # a normal answer is untouched
    assert ok.invalid is None and "truncated_from" not in (ok.raw or {})
    monkeypatch.setenv("JUDGEAUDIT_MAX_RESPONSE_CHARS", "lots")
    with pytest.raises(ValueError, match="JUDGEAUDIT_MAX_RESPONSE_CHARS"):
        Client(openai(srv))
    await client.aclose()


class _BigRaw(Provider):
    name: ClassVar[str] = "bigraw"

    async def generate(self, request: Request) -> Response:
        return Response(text="A", raw={"blob": "x" * 300_000, "note": "\ud800"})


async def test_a_huge_raw_payload_is_dropped_and_the_answer_kept(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    client = Client(_BigRaw("m"), cache)
    out = await client.call(req("q"))
    assert out.text == "A" and out.invalid is None
    assert out.raw["dropped_raw_chars"] > 300_000 and "blob" not in out.raw
    assert db_size(tmp_path / "c.sqlite") < 1_000_000
    cache.close()


# ---- opening the cache ---------------------------------------------------------------------------

def test_a_directory_is_not_a_cache(tmp_path):
    with pytest.raises(CacheError, match=rf"cache {tmp_path}: is a directory"):
        Cache(tmp_path)


def test_a_file_that_is_not_sqlite_is_named(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 200)
    with pytest.raises(CacheError, match=r"notes.txt: is not a SQLite database \(file is not "
                                         r"a database\)"):
        Cache(path)
    assert path.read_text().startswith("these are my notes")  # left as it was


def test_a_cache_that_cannot_be_created_is_named(tmp_path):
    (tmp_path / "plain").write_text("a file, not a directory")
    with pytest.raises(CacheError, match=r"plain/calls.sqlite: cannot be created: "):
        Cache(tmp_path / "plain" / "calls.sqlite")
    assert issubclass(CacheError, ValueError)


def test_an_old_cache_file_keeps_working(tmp_path):
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE calls (key TEXT PRIMARY KEY, provider TEXT NOT NULL, "
                      "model TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL);")
    con.execute("INSERT INTO calls VALUES ('k', 'openai', 'm', ?, 0)",
                (Response(text="C").to_json(),))
    con.commit()
    con.close()
    cache = Cache(path)
    assert cache.get("k").text == "C" and cache.count_invalid() == 0
    assert cache.mark_invalid("k", "unparseable answer: 'C'")
    assert cache.count_invalid() == 1 and cache.stats().invalid == 1
    cache.close()


# ---- invalid answers -----------------------------------------------------------------------------

def test_mark_count_and_forget_invalid(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    for k, prov, model in [("o1", "openai", "a"), ("o2", "openai", "b"), ("o3", "openai", "b"),
                           ("s1", "sim", "default")]:
        cache.put(k, prov, model, Response(text="C"))
    assert cache.mark_invalid("o1", "unparseable answer: 'C'")
    assert cache.mark_invalid("o2", "empty answer")
    assert cache.mark_invalid("s1", "unparseable answer: 'C'")
    assert not cache.mark_invalid("nope", "x")  # nothing cached under that key
    assert cache.invalid_reason("o2") == "empty answer"
    assert cache.count_invalid() == 3 and cache.count_invalid("openai") == 2
    assert cache.stats().invalid == 3
    assert cache.forget_invalid("openai", "b") == 1
    assert cache.get("o2") is None and cache.get("o3") is not None
    assert cache.forget_invalid("openai") == 1 and cache.get("o1") is None
    cache.put("s1", "sim", "default", Response(text="A"))  # a new answer clears the mark
    assert cache.count_invalid() == 0 and cache.forget_invalid() == 0
    assert cache.stats().entries == 2
    with pytest.raises(ValueError, match="provider"):
        cache.forget_invalid(model="b")
    cache.close()


def test_clear_drops_the_marks_of_what_it_deletes(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    cache.put("o1", "openai", "a", Response(text="C"))
    cache.put("s1", "sim", "default", Response(text="C"))
    cache.mark_invalid("o1", "x")
    cache.mark_invalid("s1", "x")
    assert cache.clear("openai") == 1 and cache.count_invalid() == 1
    cache.put("o1", "openai", "a", Response(text="C"))
    assert cache.count_invalid() == 1  # the old mark did not come back
    cache.close()


async def test_client_mark_invalid(fake_server, tmp_path):
    srv = fake_server(answer="C")
    cache = Cache(tmp_path / "c.sqlite")
    client = Client(openai(srv), cache, retry=FAST)
    r = judge_request(1)
    await client.call(r)
    client.mark_invalid(r, "unparseable answer: 'C' (key sk-proj-SECRETSECRET)")
    assert cache.count_invalid() == 1
    assert "SECRETSECRET" not in cache.invalid_reason(client.key(r))
    assert cache.forget_invalid() == 1
    await client.call(r)
    assert srv.count() == 2  # asked again
    no_cache = Client(openai(srv))
    no_cache.mark_invalid(r, "x")  # a no-op without a cache
    await client.aclose()
    cache.close()


async def test_an_old_cache_entry_with_a_lone_surrogate_is_cleaned_when_read(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    p = make_provider("sim", "default")
    r = req("q")
    cache.put(request_key(p, r), "sim", "default", Response(text="B \udc80", raw={"x": 1}))
    client = Client(p, cache)
    out = await client.call(r)
    assert out.cached and out.text == "B \ufffd" and out.raw["sanitized"]
    assert client.stats.cached == 1 and client.stats.made == 0
    cache.close()
