"""Proxies from the environment ($HTTP_PROXY, $HTTPS_PROXY, $ALL_PROXY, $NO_PROXY).

Behind a corporate proxy, a judge served on this machine (vLLM or llama.cpp on localhost)
was sent through the proxy, which cannot reach this machine's loopback: the server was up,
yet every call failed as "connection failed" and the run stopped as "could not be reached".
A server on this machine is now always reached directly. A remote server the proxy cannot
reach says that the call went through the proxy, and how to bypass it; a SOCKS proxy the
HTTP library cannot use is a clear fatal error, not an ImportError out of the pipeline.

Real servers on loopback (tests/llm/fakeserver.py); the "proxy" is a closed port.
"""

from __future__ import annotations

import socket

import pytest
from fakeserver import judge_request

from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider
from judgeaudit.llm.providers.openai import env_proxy, is_loopback

pytestmark = pytest.mark.usefixtures("no_key_env")
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy",
              "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def env(monkeypatch):
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(kind: str, url: str) -> Client:
    p = make_provider(kind, "m", {"base_url": url, "api_key": "k"})
    return Client(p, retry=RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01))


@pytest.mark.parametrize("var", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_server_on_this_machine_is_reached_without_the_proxy(env, fake_server, var,
                                                                     kind):
    env.setenv(var, f"http://127.0.0.1:{closed_port()}")
    srv = fake_server()
    url = srv.openai_url if kind == "openai" else srv.anthropic_url
    c = client(kind, url.replace("127.0.0.1", "localhost"))
    out = await c.call(judge_request(0))
    await c.aclose()
    assert out.text and srv.count() == 1


async def test_a_socks_proxy_for_this_machine_is_not_used_either(env, fake_server):
    env.setenv("ALL_PROXY", f"socks5://127.0.0.1:{closed_port()}")
    srv = fake_server()
    c = client("openai", srv.openai_url)
    assert (await c.call(judge_request(0))).text
    await c.aclose()


async def test_a_remote_server_behind_a_proxy_that_fails_says_so(env):
    env.setenv("HTTP_PROXY", f"http://user:pw@127.0.0.1:{closed_port()}")
    c = client("openai", "http://gpu1.example:8000/v1")
    with pytest.raises(CallFailed) as err:
        await c.call(judge_request(0))
    await c.aclose()
    msg = str(err.value)
    assert "went through the proxy http://user:***@127.0.0.1:" in msg
    assert "add the host to $NO_PROXY" in msg and "pw@" not in msg


async def test_a_socks_proxy_without_its_library_is_a_clear_fatal_error(env):
    try:
        import socksio  # noqa: F401
        pytest.skip("socksio is installed: httpx can use SOCKS proxies here")
    except ImportError:
        pass
    env.setenv("ALL_PROXY", f"socks5://127.0.0.1:{closed_port()}")
    c = client("openai", "http://gpu1.example:8000/v1")
    with pytest.raises(CallFailed) as err:
        await c.call(judge_request(0))
    await c.aclose()
    assert err.value.fatal
    assert "the proxy socks5://127.0.0.1:" in str(err.value) and "socksio" in str(err.value)


def test_env_proxy_follows_no_proxy(env):
    env.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    assert env_proxy("https://api.openai.com") == "http://proxy.corp:3128"
    assert env_proxy("api.openai.com") == "http://proxy.corp:3128"  # no scheme: https
    assert env_proxy("http://gpu1:8000/v1") is None  # no HTTP_PROXY
    env.setenv("NO_PROXY", "openai.com,gpu1")
    assert env_proxy("https://api.openai.com") is None


@pytest.mark.parametrize(("url", "local"), [
    ("http://localhost:8000/v1", True), ("http://127.0.0.1:8000", True),
    ("http://127.1.2.3/v1", True), ("http://[::1]:8000/v1", True),
    ("http://gpu1:8000/v1", False), ("https://api.openai.com", False),
    ("http://localhost.evil.com/v1", False), ("http://127.evil.com/v1", False),
])
def test_is_loopback(url, local):
    assert is_loopback(url) is local


@pytest.fixture
def self_signed(tmp_path):
    """A self-signed certificate for 127.0.0.1 and localhost (the openssl command line)."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate with")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return str(cert), str(key)


async def test_an_untrusted_certificate_is_refused_at_once_naming_the_fix(env, fake_server,
                                                                          self_signed):
    """A server with a self-signed (or private-CA) certificate failed as a connection error,
    retried, then 'could not be reached'; retrying cannot make it trusted."""
    srv = fake_server(tls=self_signed)
    c = client("openai", srv.openai_url)
    with pytest.raises(CallFailed) as err:
        await c.call(judge_request(0))
    await c.aclose()
    assert err.value.fatal and c.stats.retries == 0
    assert "is not trusted (self-signed certificate)" in str(err.value)
    assert "SSL_CERT_FILE=/path/to/ca.pem" in str(err.value)


@pytest.mark.parametrize("proxy", [False, True])
async def test_ssl_cert_file_makes_a_local_https_server_trusted(env, fake_server, self_signed,
                                                                proxy):
    """The fix the message names works, also with a proxy set: reaching this machine
    directly drops only the proxy, not the rest of the environment."""
    env.setenv("SSL_CERT_FILE", self_signed[0])
    if proxy:
        env.setenv("HTTPS_PROXY", f"http://127.0.0.1:{closed_port()}")
    srv = fake_server(tls=self_signed)
    c = client("openai", srv.openai_url.replace("127.0.0.1", "localhost"))
    assert (await c.call(judge_request(0))).text
    await c.aclose()
