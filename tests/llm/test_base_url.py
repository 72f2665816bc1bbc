"""A base_url pasted with the endpoint on it (".../v1/chat/completions") sent every call to
.../chat/completions/chat/completions, a 404 each, and the first one ended the run. It is
refused when the judge is made, with the base to give; a 404 from an OpenAI-compatible
server says where such servers answer."""

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


@pytest.mark.parametrize("url", ["http://gpu1:8000/v1", "http://gpu1:8000", "http://h/openai/v1"])
def test_ordinary_base_urls_pass(url):
    make_provider("openai", "m", {"base_url": url})


async def test_a_404_says_where_openai_compatible_servers_answer(fake_server):
    srv = fake_server(faults=["404"])
    client = Client(make_provider("openai", "m", {"base_url": srv.openai_url, "api_key": "k"}))
    with pytest.raises(CallFailed, match=r"answer under /v1: http://HOST:PORT/v1") as err:
        await client.call(judge_request(0))
    assert err.value.fatal and err.value.kind == "bad_request"
    await client.aclose()
