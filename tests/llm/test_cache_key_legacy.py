"""Caches made before the key named the server in one form (6d2dcc3) keep working. Since then
a spec's base_url is keyed as `server_key` writes it: a spec written `URL/`, with the scheme
or host in capitals or with the default port keyed as written before, so an upgraded user's
cache missed and every answer was paid again. On a miss, such a spec now reads the key the
old code made (the parameters as given: the same server) and copies the answer under the new
key. Not an env-only spec: its old key named no server and may hold another server's
answers. Not a spec already in that form: no second lookup. Real loopback servers, a real
SQLite cache filled under keys built as the old code built them, and keys pinned to their
ffebffa values."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from fakeserver import judge_request

from judgeaudit.llm import Cache, Client, Message, Request, Response, make_provider
from judgeaudit.llm.base import legacy_request_key, request_key
from judgeaudit.spec import parse_spec

pytestmark = pytest.mark.usefixtures("no_key_env")
N = 4
OLD_ANSWER = "B"  # what the old cache holds; the loopback server would answer "A"


def old_key(provider: str, model: str, params: dict[str, Any], request: Request) -> str:
    """The key the code before 6d2dcc3 gave `request`: its identity held the non-secret
    parameters exactly as given (here: base_url only; api_key is secret), built here apart
    from the code under test."""
    material = {"id": {"provider": provider, "model": model, "params": params},
                "req": request.key_material(False)}
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def fill_old_cache(cache: Cache, kind: str, params: dict[str, Any]) -> list[str]:
    """The old cache: N answers OLD_ANSWER stored under the old keys; those keys."""
    keys = [old_key(kind, "fake", params, judge_request(i)) for i in range(N)]
    for k in keys:
        cache.put(k, kind, "fake", Response(text=OLD_ANSWER))
    return keys


async def run(provider, cache) -> tuple[list[str], int, int]:
    """(answers; calls made; calls from the cache) of N judge requests."""
    client = Client(provider, cache, concurrency=2)
    try:
        answers = [(await client.call(judge_request(i))).text.strip() for i in range(N)]
        return answers, client.stats.made, client.stats.cached
    finally:
        await client.aclose()


def url_of(srv, kind: str) -> str:
    return srv.openai_url if kind == "openai" else srv.anthropic_url


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("how", ["trailing slash", "scheme in capitals"])
async def test_a_spec_not_in_one_form_finds_the_answers_its_old_key_holds(
        fake_server, tmp_path, kind, how):
    srv = fake_server()
    url = url_of(srv, kind)  # http://127.0.0.1:PORT[/v1]
    written = url + "/" if how == "trailing slash" else url.replace("http://", "HTTP://", 1)
    cache = Cache(tmp_path / "calls.sqlite")
    old = fill_old_cache(cache, kind, {"base_url": written})
    provider = make_provider(kind, "fake", {"api_key": "k", "base_url": written})
    new = [request_key(provider, judge_request(i)) for i in range(N)]
    assert set(new).isdisjoint(old)  # the key did move
    got, made, cached = await run(provider, cache)
    assert (made, cached, srv.count()) == (0, N, 0), (
        f"base_url={written!r}: the old cache's answers were not found; the server was asked")
    assert got == [OLD_ANSWER] * N
    # copied under the new key (the next lookup is direct); the old rows stay
    assert all(cache.get(k) is not None for k in new + old)
    assert cache.stats().entries == 2 * N
    # and the next run reads the new key alone
    reads = trace_reads(cache)
    got, made, cached = await run(provider, cache)
    assert (got, made, cached, srv.count()) == ([OLD_ANSWER] * N, 0, N, 0)
    assert sorted(reads) == sorted(new), "a second lookup was made for a key already copied"
    cache.close()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_an_env_only_spec_does_not_read_its_old_key(fake_server, tmp_path, monkeypatch,
                                                          kind):
    """Its old key named no server: it may hold another server's answers (the bug 6d2dcc3
    fixed), so the server is asked, once per request, as README says."""
    srv = fake_server()
    monkeypatch.setenv("OPENAI_BASE_URL" if kind == "openai" else "ANTHROPIC_BASE_URL",
                       url_of(srv, kind) + "/")
    cache = Cache(tmp_path / "calls.sqlite")
    old = fill_old_cache(cache, kind, {})
    provider = make_provider(kind, "fake", {"api_key": "k"})
    reads = trace_reads(cache)
    got, made, cached = await run(provider, cache)
    assert (made, cached, srv.count()) == (N, 0, N), "an env-only spec was served old answers"
    assert OLD_ANSWER not in got
    assert not set(reads) & set(old), "an env-only spec read its old key"
    assert legacy_request_key(provider, judge_request(0)) is None
    cache.close()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_spec_in_one_form_makes_no_second_lookup(fake_server, tmp_path, kind):
    """Its key did not move: a miss is one read of the cache, and the server is asked."""
    srv = fake_server()
    url = url_of(srv, kind)
    cache = Cache(tmp_path / "calls.sqlite")
    other = fill_old_cache(cache, kind, {"base_url": url + "/"})  # another form's rows
    provider = make_provider(kind, "fake", {"api_key": "k", "base_url": url})
    new = [request_key(provider, judge_request(i)) for i in range(N)]
    reads = trace_reads(cache)
    got, made, cached = await run(provider, cache)
    assert (made, cached, srv.count()) == (N, 0, N) and OLD_ANSWER not in got
    assert sorted(reads) == sorted(new), (
        f"base_url={url!r} (in one form): {len(reads)} cache reads for {N} misses")
    assert not set(reads) & set(other)
    assert legacy_request_key(provider, judge_request(0)) is None
    cache.close()


def trace_reads(cache: Cache) -> list[str]:
    """The keys of the answers (`calls` rows) `cache` reads from now on, in order, from
    SQLite's own statement trace."""
    reads: list[str] = []

    def seen(sql: str) -> None:
        if sql.startswith("SELECT response FROM calls WHERE key="):
            reads.append(sql.split("'")[1])

    cache._conn.set_trace_callback(seen)
    return reads


def test_an_invalid_mark_is_copied_with_the_answer(tmp_path):
    """`judgeaudit cache forget --invalid` still finds an answer marked unusable under the
    old key once it has been copied under the new one."""
    written = "http://127.0.0.1:9/v1/"
    cache = Cache(tmp_path / "calls.sqlite")
    req = judge_request(0)
    old = old_key("openai", "fake", {"base_url": written}, req)
    cache.put(old, "openai", "fake", Response(text="no verdict here"))
    assert cache.mark_invalid(old, "no verdict")
    provider = make_provider("openai", "fake", {"api_key": "k", "base_url": written})
    assert legacy_request_key(provider, req) == old
    new = request_key(provider, req)
    assert cache.adopt(old, new).text == "no verdict here"
    assert cache.invalid_reason(new) == "no verdict"
    assert cache.count_invalid() == 2
    cache.close()


# ---- the old keys, pinned ------------------------------------------------------------------
# request_key of each spec as computed at ffebffa (before 6d2dcc3): legacy_request_key must
# give it, and the new key differs (else no second lookup is made).

REQ = Request(messages=(Message("system", "s"), Message("user", "which? A or B")),
              prefill="The better response is Response", choices=("A", "B"), max_tokens=8,
              temperature=0.0)
PINNED_OLD: dict[str, str] = {
    "openai:m?base_url=https://openrouter.ai/api/v1/":
        "cd3143d39ab5fee1a5bead603cd945ba6c58df2033f756c62fc76dd403d5c5af",
    "openai:m?base_url=http://LocalHost:8000/v1":
        "f4e457fdaf40d030966beea9732d3d7fed25a44baa5784063be836e46bd502b1",
    "openai:m?base_url=https://x.example:443/v1":
        "ce4f3aff42e37248aa052cd26545df4f95ca9d4e1cfd19d3b314a3949db90019",
    "openai:m?base_url=http://user:pw@gpu1:8000/v1/":
        "29e7fe66690f128a82ca843df4335a546fb11a326657bc0a041bb8ffa14fb98f",
    "openai:gpt-4o-mini?base_url=https://api.openai.com/v1":
        "6c44c43372ff97db9a4c122bfef5d9f1aa7427fb66ac98e2937d581fb38415eb",
    "openai:m?base_url=http://b:2/v1|http://a:1/v1":
        "a87ffce2087943d1b3a9a3285a8dedd8f62964789a7d458bc735d2462b54ab1a",
    "openai:m?base_url=http://h.example/v1/&batch=on":
        "a0d7b9e6929ebb0e8867ec210066b865d971fc1bd2ca1a55f4c1cace23b66845",
    "anthropic:m?base_url=HTTPS://gw.example.com/anthropic/":
        "1dd69e405f602569d2df3e6efd52572b9c65bffc0bd998d282452e4f6e43ebbb",
    "anthropic:claude-3-5-haiku-latest?base_url=https://api.anthropic.com":
        "dcbff4331fdc9fc6c1563c96b77852b2e8bd781af5c321951fdd3fd8e3ad2e79",
}


@pytest.mark.parametrize("spec", list(PINNED_OLD))
def test_the_old_key_is_the_one_ffebffa_made(monkeypatch, spec):
    """With or without a $..._BASE_URL set (a base_url given wins, as in the SDKs)."""
    sp = parse_spec(spec)
    for env in (False, True):
        if env:
            monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.9:8000/v1")
            monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://10.0.0.9:9000")
        p = make_provider(sp.kind, sp.name, dict(sp.params))
        assert legacy_request_key(p, REQ) == PINNED_OLD[spec], f"{spec}: not ffebffa's key"
        assert request_key(p, REQ) != PINNED_OLD[spec]


@pytest.mark.parametrize("spec", ["openai:m?base_url=https://openrouter.ai/api/v1",
                                  "openai:m?base_url=http://127.0.0.1:8000/v1&temperature=0",
                                  "anthropic:m?base_url=http://127.0.0.1:9",
                                  "openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest",
                                  "sim:biased"])
def test_specs_whose_key_did_not_move_have_no_old_key(spec):
    sp = parse_spec(spec)
    assert legacy_request_key(make_provider(sp.kind, sp.name, dict(sp.params)), REQ) is None
