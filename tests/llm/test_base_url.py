"""A base_url pasted with the endpoint on it (".../v1/chat/completions") sent every call to
.../chat/completions/chat/completions, a 404 each, and the first one ended the run. It is
refused when the judge is made, with the base to give; a 404 from an OpenAI-compatible
server says where such servers answer. A model name the server does not serve is named with
the names it does serve; a redirect (a plain-HTTP port sending to HTTPS) is reported with the
base_url to give, not followed (followed, the POST became a GET whose 404 read as a wrong
model name)."""

from __future__ import annotations

import pytest
from fakeserver import judge_request

from judgeaudit.llm import CallFailed, Client, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")


@pytest.mark.parametrize(("provider", "url", "base"), [
    ("openai", "http://gpu1:8000/v1/chat/completions", "'http://gpu1:8000/v1'"),
    ("openai", "https://api.example.com/v1/chat/completions/", "'https://api.example.com/v1'"),
    ("openai", "http://gpu1:8000/v1/completions", "'http://gpu1:8000/v1'"),
    ("anthropic", "https://api.anthropic.com/v1/messages", "'https://api.anthropic.com'"),
])
def test_a_base_url_naming_the_endpoint_is_refused_with_the_base(provider, url, base):
    with pytest.raises(ValueError, match="names the endpoint itself") as err:
        make_provider(provider, "m", {"base_url": url, "api_key": "k"})
    assert str(err.value).endswith(base)


def test_a_list_of_servers_is_checked_each():
    with pytest.raises(ValueError, match="names the endpoint itself"):
        make_provider("openai", "m", {"base_url": "http://a:1/v1|http://b:2/v1/chat/completions"})


@pytest.mark.parametrize(("url", "azure"), [
    ("https://res.openai.azure.com/openai/deployments/gpt4o?api-version=2024-06-01", True),
    ("http://gpu1:8000/v1?x=1", False),
    ("http://gpu1:8000/v1#frag", False),
])
def test_a_base_url_with_a_query_string_is_refused(url, azure):
    """The SDK adds the endpoint to the URL's path, so a query (Azure's ?api-version=...)
    ended inside the path: a 404 on every call, reported as a wrong model name."""
    with pytest.raises(ValueError, match="has a query string") as err:
        make_provider("openai", "m", {"base_url": url, "api_key": "k"})
    assert ("https://RESOURCE.openai.azure.com/openai/v1" in str(err.value)) is azure


@pytest.mark.parametrize("url", ["http://gpu1:8000/v1", "http://gpu1:8000", "http://h/openai/v1",
                                 "https://res.openai.azure.com/openai/v1"])
def test_ordinary_base_urls_pass(url):
    make_provider("openai", "m", {"base_url": url})


async def test_a_404_says_where_openai_compatible_servers_answer(fake_server):
    srv = fake_server(faults=["404"])
    client = Client(make_provider("openai", "m", {"base_url": srv.openai_url, "api_key": "k"}))
    with pytest.raises(CallFailed, match=r"answer under /v1: http://HOST:PORT/v1") as err:
        await client.call(judge_request(0))
    assert err.value.fatal and err.value.kind == "bad_request"
    await client.aclose()
    assert str(err.value).startswith("openai: HTTP 404")  # named once, not "openai: openai:"


@pytest.mark.parametrize("model", ["qwen2.5-7b", "Qwen2.5-7B-Instruct"])
async def test_a_model_the_server_does_not_serve_is_named_with_those_it_does(fake_server,
                                                                             model):
    srv = fake_server(models=["Qwen/Qwen2.5-7B-Instruct", "other"])
    client = Client(make_provider("openai", model, {"base_url": srv.openai_url,
                                                    "api_key": "k"}))
    with pytest.raises(CallFailed) as err:
        await client.call(judge_request(0))
    assert err.value.fatal and err.value.kind == "bad_request"
    assert (f"does not serve model {model!r}; it serves 'Qwen/Qwen2.5-7B-Instruct', 'other': "
            "give one as MODEL, e.g. openai:Qwen/Qwen2.5-7B-Instruct") in str(err.value)
    await client.aclose()
    ok = Client(make_provider("openai", "other", {"base_url": srv.openai_url, "api_key": "k"}))
    assert (await ok.call(judge_request(0))).text
    await ok.aclose()


@pytest.mark.parametrize(("provider", "base"), [("openai", "/v1"), ("anthropic", "")])
async def test_a_redirect_is_reported_with_the_base_url_to_give(fake_server, provider, base):
    target = fake_server()
    srv = fake_server(redirect_to=target.url)
    url = srv.openai_url if provider == "openai" else srv.anthropic_url
    client = Client(make_provider(provider, "m", {"base_url": url, "api_key": "k"}))
    with pytest.raises(CallFailed) as err:
        await client.call(judge_request(0))
    assert err.value.fatal and err.value.kind == "bad_request"
    assert f"the server redirects to {target.url}" in str(err.value)
    assert str(err.value).endswith(f"give base_url={target.url}{base}")
    assert target.count() == 0  # not followed
    await client.aclose()
