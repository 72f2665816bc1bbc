"""The cache key names the server a judge's calls actually go to. It held `base_url` as
written in the spec and nothing of $OPENAI_BASE_URL: after a run against server X through
$OPENAI_BASE_URL=X, pointing the variable at server Y gave "0 made, 20 from cache" (Y's run
was served X's answers), while one server written three ways ($OPENAI_BASE_URL, base_url=URL,
base_url=URL/) was paid for three times, and base_url=https://api.openai.com/v1 lost the
built-in price (no cost shown, --max-cost refused). Real loopback servers, a real SQLite
cache; the keys of specs that already named a server in one form are pinned to the values
they had before (existing caches keep working, batches are found again)."""

from __future__ import annotations

import json

import pytest
from fakeserver import judge_request

import judgeaudit
from judgeaudit.llm import Cache, Client, Message, Request, make_provider
from judgeaudit.llm.base import request_key
from judgeaudit.llm.batch import identity_of
from judgeaudit.spec import parse_spec

pytestmark = pytest.mark.usefixtures("no_key_env")
N = 4


async def run(provider, cache) -> tuple[list[str], int, int]:
    """(answers, outer spaces stripped; calls made; calls from the cache) of N judge
    requests through `provider`."""
    client = Client(provider, cache, concurrency=2)
    try:
        answers = [(await client.call(judge_request(i))).text.strip() for i in range(N)]
        return answers, client.stats.made, client.stats.cached
    finally:
        await client.aclose()


def openai(params=None, model="fake"):
    return make_provider("openai", model, {"api_key": "k", **(params or {})})


@pytest.mark.parametrize(("provider", "env"), [("openai", "OPENAI_BASE_URL"),
                                               ("anthropic", "ANTHROPIC_BASE_URL")])
async def test_another_server_in_the_environment_is_asked_not_served_the_first_ones_answers(
        fake_server, tmp_path, monkeypatch, provider, env):
    x = fake_server(answer="X says A")
    y = fake_server(answer="Y says B")
    url = (lambda s: s.openai_url) if provider == "openai" else (lambda s: s.anthropic_url)
    cache = Cache(tmp_path / "calls.sqlite")
    monkeypatch.setenv(env, url(x))
    got_x, made, _ = await run(make_provider(provider, "fake", {"api_key": "k"}), cache)
    assert (made, x.served()) == (N, N) and set(got_x) == {"X says A"}
    monkeypatch.setenv(env, url(y))
    got_y, made, cached = await run(make_provider(provider, "fake", {"api_key": "k"}), cache)
    assert (made, cached, y.served()) == (N, 0, N), "server Y was served server X's answers"
    assert set(got_y) == {"Y says B"}
    assert x.served() == N
    cache.close()


async def test_one_server_written_several_ways_is_asked_once(fake_server, tmp_path,
                                                             monkeypatch):
    """$OPENAI_BASE_URL=URL, base_url=URL, base_url=URL/, the scheme and host in capitals
    and the default port written out are one server: asked once, the rest from the cache."""
    srv = fake_server()
    cache = Cache(tmp_path / "calls.sqlite")
    url = srv.openai_url  # http://127.0.0.1:PORT/v1
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    _, made, _ = await run(openai(), cache)
    assert (made, srv.count()) == (N, N)
    monkeypatch.delenv("OPENAI_BASE_URL")
    for written in (url, url + "/", url.replace("http://", "HTTP://", 1) + "/"):
        _, made, cached = await run(openai({"base_url": written}), cache)
        assert (made, cached) == (0, N), f"base_url={written!r} paid again"
    assert srv.count() == N
    cache.close()


def test_forms_of_one_url_share_a_key_and_other_urls_do_not():
    def ident(url):
        return openai({"base_url": url}).cache_identity()

    base = ident("http://gpu1:8000/v1")
    for same in ("http://gpu1:8000/v1/", "HTTP://GPU1:8000/v1", " http://gpu1:8000/v1 "):
        assert ident(same) == base, same
    assert ident("http://gpu1/v1") == ident("http://gpu1:80/v1")
    assert ident("https://gpu1/v1") == ident("https://gpu1:443/v1")
    assert ident("http://gpu1:443/v1") != ident("http://gpu1/v1")
    for other in ("http://gpu1:8001/v1", "http://gpu1:8000/V1", "https://gpu1:8000/v1",
                  "http://gpu1:8000"):
        assert ident(other) != base, other


def test_a_list_of_servers_is_keyed_sorted_and_apart_from_each_server():
    def ident(url):
        return openai({"base_url": url}).cache_identity()

    ab = ident("http://a:1/v1|http://b:2/v1")
    assert ident("http://b:2/v1/|HTTP://A:1/v1") == ab
    assert ab["params"]["base_url"] == "http://a:1/v1|http://b:2/v1"
    assert ab != ident("http://a:1/v1") and ab != ident("http://b:2/v1")


@pytest.mark.parametrize(("provider", "model", "env", "official", "price"), [
    ("openai", "gpt-4o-mini", "OPENAI_BASE_URL", "https://api.openai.com/v1", (0.15, 0.60)),
    ("anthropic", "claude-3-5-haiku-latest", "ANTHROPIC_BASE_URL", "https://api.anthropic.com",
     (0.80, 4.00)),
])
@pytest.mark.parametrize("how", ["param", "param with slash", "env"])
def test_the_official_address_written_out_keeps_the_price_and_the_key_of_none(
        monkeypatch, provider, model, env, official, price, how):
    none = make_provider(provider, model, {"api_key": "k"})
    if how == "env":
        monkeypatch.setenv(env, official)
        written = make_provider(provider, model, {"api_key": "k"})
    else:
        url = official + ("/" if how == "param with slash" else "")
        written = make_provider(provider, model, {"api_key": "k", "base_url": url})
    assert written.price_per_mtok == none.price_per_mtok == price
    assert written.cache_identity() == none.cache_identity()
    assert request_key(written, judge_request(0)) == request_key(none, judge_request(0))
    # and a spend cap takes it: it was refused as a judge whose price is not known
    spec = f"{provider}:{model}?api_key=k" + (f"&base_url={official}" if how != "env" else "")
    session = judgeaudit.Session(cache=False, max_cost=1.0)
    assert session.judge(spec).client.spend_cap is not None


def test_the_official_address_written_out_still_needs_a_key():
    """It was taken for a server of the user's own: 'EMPTY' would have gone to OpenAI."""
    p = make_provider("openai", "gpt-4o-mini", {"base_url": "https://api.openai.com/v1"})
    with pytest.raises(ValueError, match="no API key"):
        p.check_sendable()


def test_a_password_in_the_environments_url_is_masked_in_the_key(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:hunter2pw@127.0.0.1:9/v1/")
    ident = openai().cache_identity()
    assert "hunter2pw" not in json.dumps(ident)
    assert ident["params"]["base_url"] == "http://user:***@127.0.0.1:9/v1"


# ---- existing caches keep working ----------------------------------------------------------
# request_key and batch identity_of of specs that already named a server in one form (or
# none, with no $..._BASE_URL), as computed before this change (e0ac180): they must not move.

REQ = Request(messages=(Message("system", "s"), Message("user", "which? A or B")),
              prefill="The better response is Response", choices=("A", "B"), max_tokens=8,
              temperature=0.0)
PINNED: dict[str, tuple[str, str]] = {
    "openai:gpt-4o-mini": (
        "62433e2867f45db03447b2d8c57c4de58e1b30ea04958b68160e7f73766f30a8",
        "5cd74e6ea7dc687d972fb4d80638ace4"),
    "openai:gpt-4o-mini?batch=on": (
        "62433e2867f45db03447b2d8c57c4de58e1b30ea04958b68160e7f73766f30a8",
        "5cd74e6ea7dc687d972fb4d80638ace4"),
    "openai:gpt-4o-mini?temperature=0.5": (
        "7098ea4a4e0c080f0d0a3af030664619ec25e8adae8a123fd317eabb7ef5533c",
        "d4ca884265c041920ad9c2785323d218"),
    "openai:m?base_url=http://127.0.0.1:8000/v1": (
        "e77743f2e329c667fbd7ab4fef67bfdcfe4441b9c5ecc6461a45959d158be005",
        "280a907cb905ef428aaba504c32fd642"),
    "openai:m?base_url=http://gpu1:8000/v1&temperature=0": (
        "8f629f83fc8cb10ba4625ef766390f24d7e8fbd7adb2dddb3da0c989533bee35",
        "fbff5179a84a8dd4bc6068581b7e9162"),
    "openai:m?base_url=http://gpu1:8000": (
        "297c7d6044c2a0b0b7dba3d377832c85b6c5ec5a4d712a6ff61907407c4e85f6",
        "bcc210bb77c4f296abed529848b13fdc"),
    "openai:m?base_url=https://example.com/openai/v1": (
        "b03a1c7888c87cb968963928fc5a9f3a3d4832b71082d5882f24bd24abb79ec1",
        "40971f0f08eabadfe2a06dbe845bf77f"),
    "openai:m?base_url=http://user:pw@gpu1:8000/v1": (
        "9bdb0f356c4a6dbfa51dd740982cfc1e79e6939fe4f0f886d7b6e7884f15904e",
        "2da0450f00572602ef2ed8a7b1206751"),
    "openai:m?base_url=http://[::1]:8000/v1": (
        "b6dd1e0f74535ea89154e0ae8e71d643eedbf30ade14b52751975070d7d1c658",
        "6d888ea3675db44bd4dc2f9f37528310"),
    "openai:m?base_url=http://a:1/v1|http://b:2/v1": (
        "dba3e67a103b972f17b63207c712c00d3845359221a408fa0c7272cb9020363d",
        "e8020e7f85694e647c047ec25309c88f"),
    "openai:m?base_url=http://h.example/v1&batch=on": (
        "f49e55ada57123d7219e56823529cc0a88cc50436cd8dcdcb303779c7c4d6da5",
        "4447ea37d9ba69205805cf887375a9bc"),
    "openai:m?base_url=http://127.0.0.1:8000/v1&timeout=5&api_key=sk-x": (
        "e77743f2e329c667fbd7ab4fef67bfdcfe4441b9c5ecc6461a45959d158be005",
        "280a907cb905ef428aaba504c32fd642"),
    "anthropic:claude-3-5-haiku-latest": (
        "9239418874ae7c0610677c2969706f83ac769fcd5094c4f1940b30fb50c7e05c",
        "d850ee0edb3e566ec8e11faaa24a7e6e"),
    "anthropic:claude-3-5-haiku-latest?batch=on": (
        "9239418874ae7c0610677c2969706f83ac769fcd5094c4f1940b30fb50c7e05c",
        "d850ee0edb3e566ec8e11faaa24a7e6e"),
    "anthropic:m?base_url=http://127.0.0.1:9": (
        "ce033f7957ef8763807a4ea671bb949a41909691fc7af029639d3bc311ee82f9",
        "86688fb2fc7d78bdc3e8710bf5f588f3"),
    "anthropic:m?base_url=https://gw.example.com/anthropic": (
        "24c7cb3fe6af1003a0be2d77c749ffe1522793ae85eb49167410320907e56858",
        "4585fccb9b16d94963b603461016af62"),
}


@pytest.mark.parametrize("spec", list(PINNED))
def test_keys_of_specs_in_one_form_are_as_before(monkeypatch, spec):
    """Without a $..._BASE_URL, and, for a spec naming its server, with one set too (a
    base_url given wins over the environment, as in the SDKs)."""
    sp = parse_spec(spec)
    envs = [False, True] if "base_url" in sp.params else [False]
    for env in envs:
        if env:
            monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.9:8000/v1")
            monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://10.0.0.9:9000")
        p = make_provider(sp.kind, sp.name, dict(sp.params))
        assert (request_key(p, REQ), identity_of(p)) == PINNED[spec], (
            f"{spec} (env {'set' if env else 'unset'}): its cache key moved; existing "
            "caches and batches would not be found")
