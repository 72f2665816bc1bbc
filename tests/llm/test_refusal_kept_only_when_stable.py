"""A too-long refusal is kept in the cache only while its cause is part of the cache key.

0ac0fe4 kept every live refusal of kind too_long (`Client._keep_refusal`), so a re-run was
served it without sending it again. That is right for a remote model's context (HTTP 400
context_length_exceeded: the request and the model in the key decide it) and wrong for
refusals whose cause the key does not hold: the embedded llama.cpp/ik backends' length
check ("exceeds the llamacpp context of N tokens; raise it with local?ctx=N", while ctx is
a runtime parameter left out of the key: the re-run with the larger ctx the message asks
for got the kept refusal), llama.cpp's server's "available context size" (its --ctx-size)
and a 413 (a proxy's body-size limit). Those are sent again by a re-run now. So is a
self-hosted server's (review7 finding 6: vLLM's "This model's maximum context length is 64
tokens" is its --max-model-len, a runtime setting; kept, the re-run after raising it failed
every prompt from the cache): only a hosted API's (api.openai.com, *.openai.azure.com,
api.anthropic.com, openrouter.ai), whose model's context its name fixes, is kept. The hosted
cases reach the loopback server under a hosted API's host name through a real HTTP proxy
on loopback ($HTTP_PROXY), as a user behind a proxy does.

Real parts: loopback servers (tests/llm/fakeserver.py) and a real SQLite cache. The local
case runs the provider's own length check (`gguf_backend.check_length`) through the real
`LocalProvider` and `Client`; only the model load is replaced (no weights in unmarked
tests) by a `LlamaCppModel` over the scripted llama.cpp server of
tests/llm/test_llamacpp_backend.py, its context sized from the spec's ctx as `load` sizes it.
"""

from __future__ import annotations

import threading
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urlsplit

import pytest
from fakeserver import judge_request

from judgeaudit.llm import CallFailed, Client, Message, Request, RetryPolicy, make_provider
from judgeaudit.llm.cache import Cache
from judgeaudit.llm.providers.openai import fixed_context
from tests.llm.test_llamacpp_backend import ScriptedServer, tiny_meta

pytestmark = pytest.mark.usefixtures("no_key_env")

def _rule(rec, attempt: int) -> str | None:
    """Item 5's prompt is over the context (as tests/llm/test_live_refusals_kept.py's)."""
    return "too_long" if "question item 5\n" in rec.prompt_text else None


def _long_sent(srv) -> int:
    return sum("question item 5\n" in r.prompt_text for r in srv.snapshot())


LLAMACPP_SERVER = "the request exceeds the available context size, try increasing it"


def _openai(srv):
    return make_provider("openai", "m", {"base_url": srv.openai_url, "api_key": "k"})


def _anthropic(srv):
    return make_provider("anthropic", "claude-m", {"base_url": srv.anthropic_url,
                                                   "api_key": "k"})


async def _outcome(client: Client, req: Request) -> object:
    """The call's answer, or the CallFailed it raised."""
    try:
        return await client.call(req)
    except CallFailed as exc:
        return exc


async def _run(provider, cache: Cache) -> tuple[object, str]:
    """One run of item 5's request (over the context, `_rule`) with its own client, as a
    re-run of a command makes one: (its outcome, its cache key)."""
    client = Client(provider, cache=cache, concurrency=1,
                    retry=RetryPolicy(max_retries=2, base_delay=0.001))
    req = judge_request(5)
    out = await _outcome(client, req)
    key = client.key(req)
    await client.aclose()
    return out, key


@pytest.mark.parametrize(("fault", "message"), [("413", None), ("too_long", LLAMACPP_SERVER)],
                         ids=["413", "llamacpp-server-ctx"])
async def test_a_refusal_of_the_route_or_the_servers_ctx_is_sent_again(
        fake_server, tmp_path, fault, message):
    """A 413 (a proxy's body-size limit) and llama.cpp's server's context (--ctx-size) are
    not the model's: the next run sends the prompt again (once per run, no retry)."""
    srv = fake_server(rule=lambda rec, attempt: fault if _rule(rec, attempt) else None,
                      too_long_message=message)
    cache = Cache(tmp_path / "cache.sqlite")
    for run in (1, 2):
        out, key = await _run(_openai(srv), cache)
        assert isinstance(out, CallFailed) and out.kind == "too_long" and not out.fatal, out
        assert cache.refusal(key) is None, f"run {run}: a {fault} refusal was kept in the cache"
        assert _long_sent(srv) == run, f"run {run} did not send the refused prompt again"
    if fault == "413":
        assert "HTTP 413: over a body-size limit" in str(out) and "a re-run sends it" in str(out)


class _Proxy(BaseHTTPRequestHandler):
    """A forward HTTP proxy: a request for http://HOST/PATH goes to the loopback server at
    `server.to` (the hosted API's host name never resolved), its answer comes back as is."""

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = urlsplit(self.path)._replace(scheme="", netloc="").geturl()
        req = urllib.request.Request(self.server.to + path, data=body, method="POST",  # type: ignore[attr-defined]
                                     headers={k: v for k, v in self.headers.items()
                                              if k.lower() not in ("host", "proxy-connection")})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=10) as resp:
                status, data, ctype = resp.status, resp.read(), resp.headers["Content-Type"]
        except HTTPError as exc:
            status, data, ctype = exc.code, exc.read(), exc.headers["Content-Type"]
        self.send_response(status)
        self.send_header("Content-Type", ctype or "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def via_proxy(monkeypatch) -> Iterator:
    """`via_proxy(srv)`: $HTTP_PROXY names a loopback proxy to `srv` (one per test)."""
    started: list[ThreadingHTTPServer] = []

    def start(srv) -> None:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
        httpd.to = srv.url  # type: ignore[attr-defined]
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        started.append(httpd)
        for var in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{httpd.server_address[1]}")

    yield start
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


HOSTED = [("openai", "m", "http://api.openai.com/v1"),
          ("openai", "m", "http://judges.openai.azure.com/v1"),
          ("anthropic", "claude-m", "http://api.anthropic.com")]


@pytest.mark.parametrize(("name", "model", "url"), HOSTED,
                         ids=["openai-400", "azure-400", "anthropic-400"])
async def test_a_remote_models_context_refusal_is_still_kept(fake_server, via_proxy, tmp_path,
                                                             name, model, url):
    """HTTP 400 context_length_exceeded (OpenAI's words, Anthropic's 'prompt is too long')
    from a hosted API: kept, the re-run fails it from the cache without sending it, and says
    how to ask again."""
    srv = fake_server(rule=_rule)
    via_proxy(srv)
    cache = Cache(tmp_path / "cache.sqlite")

    def make(srv):
        return make_provider(name, model, {"base_url": url, "api_key": "k"})

    out, key = await _run(make(srv), cache)
    assert isinstance(out, CallFailed) and out.kind == "too_long"
    assert cache.refusal(key) is not None
    again, _ = await _run(make(srv), cache)
    assert _long_sent(srv) == 1  # the re-run did not send it
    assert isinstance(again, CallFailed) and again.kind == "too_long" and not again.fatal
    assert "`judgeaudit cache forget --invalid`" in str(again)
    assert "a refusal kept in the cache" in str(again)


VLLM = ("This model's maximum context length is 64 tokens. However, you requested 300 tokens "
        "(292 in the messages, 8 in the completion). Please reduce the length of the messages "
        "or completion.")


@pytest.mark.parametrize("make", [_openai, _anthropic], ids=["openai", "anthropic"])
async def test_a_self_hosted_servers_context_refusal_is_sent_again(fake_server, tmp_path, make):
    """vLLM's 400 over its --max-model-len (review7 finding 6) from a server of the user's own:
    not kept, its message says a re-run asks again, and the re-run after the server's limit
    was raised sends the prompt and gets its answer."""
    small = {"on": True}
    srv = fake_server(rule=lambda rec, attempt: _rule(rec, attempt) if small["on"] else None,
                      too_long_message=VLLM)
    cache = Cache(tmp_path / "cache.sqlite")
    out, key = await _run(make(srv), cache)
    assert isinstance(out, CallFailed) and out.kind == "too_long" and not out.fatal, out
    assert cache.refusal(key) is None, "a self-hosted server's refusal was kept in the cache"
    assert "self-hosted server's context is its own setting" in str(out)
    assert "vLLM's --max-model-len" in str(out) and "a re-run asks again" in str(out)
    small["on"] = False  # the server restarted with a larger --max-model-len
    again, _ = await _run(make(srv), cache)
    assert not isinstance(again, CallFailed), again
    assert _long_sent(srv) == 2


@pytest.mark.parametrize(("where", "hosted"), [
    ("api.openai.com", True),  # the openai provider with no base_url
    ("https://api.openai.com/v1", True), ("https://judges.openai.azure.com/openai", True),
    ("https://api.anthropic.com", True), ("https://openrouter.ai/api/v1", True),
    ("http://127.0.0.1:8000/v1", False), ("http://gpu-box:8080/v1", False),
    ("https://api.openai.com.example.net/v1", False), ("https://together.example/v1", False),
    ("2 servers (http://127.0.0.1:1/v1|http://127.0.0.1:2/v1)", False),
])
def test_only_a_hosted_apis_context_is_fixed_by_the_model_name(where, hosted):
    assert fixed_context(where) is hosted


def test_the_openai_provider_without_base_url_is_hosted():
    p = make_provider("openai", "gpt-4o-mini", {"api_key": "sk-" + "x" * 40})
    assert p.where == "api.openai.com" and fixed_context(p.where)


def _local(ctx: str):
    """The embedded judge on the llamacpp backend with `ctx`, its model 'loaded' as
    `llamacpp_backend.load` would size it (`context_size`), over a scripted server."""
    from judgeaudit.llm.gguf_backend import context_size
    from judgeaudit.llm.gguf_tokenizer import GGUFTokenizer
    from judgeaudit.llm.llamacpp_backend import LlamaCppModel
    from judgeaudit.llm.providers.local import LocalProvider

    provider = LocalProvider("qwen-0.5b", {"backend": "llamacpp", "ctx": ctx})
    provider._extra_checked = True  # whether llama.cpp is installed is not this test's matter
    server = ScriptedServer({})
    provider._lm = LlamaCppModel(  # type: ignore[assignment]
        source=provider.source, gguf=Path("x.gguf"), server=server,
        tokenizer=GGUFTokenizer(tiny_meta()), slots=1, n_ctx=context_size(ctx, 1),
        n_ctx_train=32768, threads=1, load_seconds=0.0, system_info="test",
        file_type="Q4_K_M", executor=ThreadPoolExecutor(1))
    return provider, server


async def test_an_embedded_backends_length_refusal_is_not_kept_and_a_larger_ctx_answers(
        tmp_path):
    """Refused at ctx=256 ('raise it with local?ctx=N'), not kept: the re-run with ctx=512
    (the same cache key: ctx is a runtime parameter) runs the prompt and answers it."""
    cache = Cache(tmp_path / "cache.sqlite")
    req = Request(messages=(Message("user", "x" * 300),), max_tokens=8)
    small, small_server = _local("256")
    client = Client(small, cache=cache, concurrency=1)
    out = await _outcome(client, req)
    key = client.key(req)
    await client.aclose()
    assert isinstance(out, CallFailed) and out.kind == "too_long" and not out.fatal, out
    assert "exceeds the llama.cpp context of 256 tokens; raise it with local?ctx=N" in str(out)
    assert small_server.bodies == []  # the length check refused it before the model ran
    assert cache.refusal(key) is None, "a local length refusal was kept in the cache"

    large, large_server = _local("512")
    client = Client(large, cache=cache, concurrency=1)
    assert client.key(req) == key  # ctx is not in the key: a kept refusal would answer it
    resp = await _outcome(client, req)
    await client.aclose()
    assert not isinstance(resp, CallFailed), resp
    assert resp.text == "xy" and len(large_server.bodies) == 1
