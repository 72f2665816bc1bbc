"""Field-safe runs, part 2: provider parameters are checked at construction (a typo is named
with the closest known parameter), base URLs must be http(s)://host[:port][/path], and an
unknown provider is named before anything else is asked."""

from __future__ import annotations

import pytest

from judgeaudit.judges import make_judge
from judgeaudit.llm import Provider, make_provider
from judgeaudit.llm.registry import available, provider_class

pytestmark = pytest.mark.usefixtures("no_key_env")


@pytest.mark.parametrize("name, model, params, match", [
    ("openai", "m", {"timout": "3"},
     r"unknown parameter 'timout' for provider 'openai'; did you mean 'timeout'\? known: "
     r"api_key, base_url, "),
    ("openai", "m", {"base_ulr": "http://x"}, r"did you mean 'base_url'\?"),
    ("anthropic", "m", {"max_conections": "4"}, r"'anthropic'; did you mean 'max_connections'"),
    ("anthropic", "m", {"logprobs": "auto"}, r"unknown parameter 'logprobs' for provider "
                                             r"'anthropic'; known: api_key"),
    ("sim", "default", {"postion": "1"}, r"unknown sim parameter 'postion'; did you mean "
                                         r"'position'\?"),
    ("simhubj", "default", {"score_frm": "length"}, r"did you mean 'score_from'\?"),
    ("openai", "m", {"zzz": "1", "temprature": "0"},
     r"unknown parameters 'temprature', 'zzz' for provider 'openai'; did you mean "
     r"'temperature' \(for 'temprature'\)\?"),
])
def test_unknown_parameters_are_refused_with_a_suggestion(name, model, params, match):
    with pytest.raises(ValueError, match=match):
        make_provider(name, model, params)


def test_local_refuses_unknown_parameters_before_resolving_the_model():
    with pytest.raises(ValueError, match=r"unknown parameter 'thread' for provider 'local'; "
                                         r"did you mean 'threads'\?"):
        make_provider("local", "qwen-0.5b", {"thread": "2"})


@pytest.mark.parametrize("name", ["openai", "anthropic", "local", "sim", "simhubj"])
def test_known_params_are_declared_and_described(name):
    cls = provider_class(name)
    known = cls.known_params
    assert known and all(isinstance(v, str) and v for v in known.values())
    # each description says what the parameter does and its default
    assert all("default" in v for v in known.values()), known


def test_every_parameter_the_providers_read_is_accepted():
    make_provider("openai", "m", {
        "base_url": "http://127.0.0.1:1/v1", "api_key": "k", "temperature": "0",
        "logprobs": "off", "prefill": "assistant", "timeout": "5", "max_connections": "2",
        "price_in": "1", "price_out": "2"})
    make_provider("anthropic", "m", {
        "base_url": "https://example.org", "api_key": "k", "temperature": "0", "timeout": "5",
        "max_connections": "2", "price_in": "1", "price_out": "2"})
    make_provider("sim", "biased", {"seed": "3", "noise": "0", "probs": "none", "crn": "1"})
    make_provider("simhubj", "default", {"factor_verbosity": "0.5", "score_from": "length",
                                         "position": "0.2"})


def test_providers_without_a_declaration_accept_any_parameter():
    class Free(Provider):
        name = "free"

        async def generate(self, request):  # pragma: no cover - never called
            raise NotImplementedError

    assert Free("m", {"anything": "1"}).params == {"anything": "1"}


@pytest.mark.parametrize("url", ["localhost:8000", "http//x", "ftp://x", "http://", "https://:80",
                                 "http://host:notaport/v1", "127.0.0.1:8000/v1",
                                 "http://ho st/v1"])
@pytest.mark.parametrize("name", ["openai", "anthropic"])
def test_malformed_base_url_is_refused_at_construction(name, url):
    with pytest.raises(ValueError, match=r"base_url .*: expected http\(s\)://host\[:port\]"
                                         r"\[/path\]"):
        make_provider(name, "m", {"base_url": url})


@pytest.mark.parametrize("url", ["http://localhost:8000/v1", "https://api.example.com",
                                 "http://127.0.0.1:9/v1/", "HTTP://[::1]:8080/v1",
                                 "http://user:pw@host:1/v1"])
def test_good_base_urls_are_accepted(url):
    assert make_provider("openai", "m", {"base_url": url}).base_url == url


def test_base_url_error_does_not_show_a_password():
    with pytest.raises(ValueError) as ei:
        make_provider("openai", "m", {"base_url": "ftp://user:SECRETPW@host"})
    assert "SECRETPW" not in str(ei.value)


def test_an_unknown_judge_provider_is_named_first():
    with pytest.raises(ValueError, match="unknown provider 'simm'; known providers: "
                                         "anthropic, local, openai"):
        make_judge("simm")
    assert "simm" not in available()
    with pytest.raises(ValueError, match="needs a model name"):
        make_judge("openai")  # a known provider without its model still says so


def test_judge_level_parameters_never_reach_the_provider():
    b = make_judge("sim?position=0.5&template=pairwise_cot_v1&orders=one"
                   "&score_template=pointwise_scoring_v1")
    assert b.client.provider.params == {"position": "0.5"}
    assert b.pairwise.template.name == "pairwise_cot_v1" and not b.pairwise.both_orders
    # a typo of a judge-level name is matched against it too (it suggested 'temperature')
    with pytest.raises(ValueError, match="unknown parameter 'temlate' for provider 'openai'; "
                                         "did you mean 'template'"):
        make_judge("openai:m?base_url=http://127.0.0.1:1/v1&temlate=pairwise_v1")
