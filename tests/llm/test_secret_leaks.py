"""Keys that leaked (a security tester's findings 4 to 8 and side notes), each checked end to
end against a real loopback server that echoes the credentials it was sent, as hostile or
careless servers do: the canary is looked for in stderr, stdout (--json), results.json and
a dump of the SQLite cache, as written, percent-encoded and inside base64.

- 4: a base_url's userinfo password, echoed decoded ("password CANARY rejected"), reached
  stderr, --json, results.json's first error and the API's Result.reason (the key in
  $OPENAI_API_KEY was masked there; the password was no known secret).
- 5: a key in a percent-encoded base_url query (`%3Fapi-key%3DKEY`, `code`,
  `subscription-key`) was repeated raw in the error's `judge '...'` prefix.
- 6: $OPENAI_API_KEY goes to any base_url (the SDK's convention); over plain http:// to
  another machine that is now warned about, once.
- 7: answers echoing the Authorization header (Basic base64 of user:password, Bearer KEY)
  were stored in calls.response and results.json, a failed batch's message in batches.info.
- 8: ingest printed $OPENAI_API_KEY from an error line of the output file (and its control
  characters raw).
- Side: the anthropic provider sends its key as `x-api-key` (SDK 2.x sends api_key as
  `Authorization: Bearer`); a key with a line break inside is bad input (exit 2), not a
  failed run (exit 3).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fakebatch import FakeBatchServer
from fakeserver import judge_request

from judgeaudit.llm import Cache, Client, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
SRC = Path(__file__).resolve().parents[2] / "src"
PASSWORD = "URLcanaryM5t2Lb"
ENV_KEY = "OAIcanaryQ7x9Zk"
SPEC_KEY = "SPECcanaryH4n6Yd"


class EchoAuthServer:
    """OpenAI- and Anthropic-shaped server on 127.0.0.1 that echoes the credentials of each
    request. The first path segment is the mode: `dec401` answers 401 "password P
    rejected" with P the decoded Basic password (or the key sent); `echo` answers 200 with
    the Authorization and x-api-key headers, the Basic credentials decoded, in the answer.
    `headers` keeps every request's headers."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, obj: Any) -> None:
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                server.headers.append(hdrs)
                auth = hdrs.get("authorization", "")
                secret = hdrs.get("x-api-key") or auth.split(" ", 1)[-1]
                if auth.lower().startswith("basic "):
                    secret = base64.b64decode(auth[6:]).decode().split(":", 1)[-1]
                mode = self.path.strip("/").split("/")[0]
                anthropic = self.path.endswith("/messages")
                if mode == "dec401":
                    err = {"type": "authentication_error" if anthropic else "auth",
                           "message": f"invalid credentials: password {secret} rejected"}
                    self._send(401, {"type": "error", "error": err} if anthropic
                               else {"error": {**err, "code": "invalid_api_key"}})
                    return
                text = (f"A auth={auth} xkey={hdrs.get('x-api-key', '')} decoded={secret} "
                        f"quoted={urllib.parse.quote(secret)}")
                if anthropic:
                    self._send(200, {"id": "msg_1", "type": "message", "role": "assistant",
                                     "model": "m", "content": [{"type": "text", "text": text}],
                                     "stop_reason": "end_turn",
                                     "usage": {"input_tokens": 10, "output_tokens": 2}})
                    return
                self._send(200, {"id": "c1", "object": "chat.completion", "created": 1,
                                 "model": "m", "choices": [{"index": 0, "message": {
                                     "role": "assistant", "content": text},
                                     "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 2}})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def url(self, mode: str, *, password: str | None = None, v1: bool = True) -> str:
        who = f"user:{password}@" if password else ""
        return f"http://{who}127.0.0.1:{self.port}/{mode}" + ("/v1" if v1 else "")

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def echo_server() -> Iterator[EchoAuthServer]:
    srv = EchoAuthServer()
    yield srv
    srv.stop()


def forms(secret: str) -> list[str]:
    """How a secret can appear: as written, percent-encoded, base64 alone and as the Basic
    credentials user:secret."""
    return [secret, urllib.parse.quote(secret, safe=""),
            base64.b64encode(secret.encode()).decode().rstrip("="),
            base64.b64encode(f"user:{secret}".encode()).decode().rstrip("=")]


def leaked(text: str, *secrets: str) -> list[str]:
    """The forms of `secrets` found in `text`."""
    return [f for s in secrets for f in forms(s) if f in text]


def sqlite_dump(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return "\n".join(conn.iterdump())


def cli(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m judgeaudit ARGS` in `tmp_path` with a cache there and `env` added."""
    full = {k: v for k, v in os.environ.items()
            if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
                         "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN")}
    full.update(PYTHONPATH=str(SRC), JUDGEAUDIT_CACHE=str(tmp_path / "cache.sqlite"),
                COLUMNS="200", **env)
    return subprocess.run([sys.executable, "-m", "judgeaudit", *args], cwd=tmp_path,
                          env=full, capture_output=True, text=True, timeout=120)


# ---- 4: a base_url's userinfo password ---------------------------------------------------

@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_base_url_password_echoed_by_the_server_is_masked_everywhere(
        echo_server, tmp_path, kind):
    spec = f"{kind}:m?base_url={echo_server.url('dec401', password=PASSWORD, v1=False)}"
    spec += "/v1" if kind == "openai" else ""
    res = cli(["evaluate", "--judge", spec, "--data", "builtin:facts", "--limit", "2",
               "--out", "out", "--json"], tmp_path, ANTHROPIC_API_KEY="k-anthropic")
    assert res.returncode == 3, res.stderr
    assert "rejected" in res.stderr  # the server's message is shown, its password masked
    doc = (tmp_path / "out" / "results.json").read_text()
    for where, text in (("stderr", res.stderr), ("stdout", res.stdout), ("results", doc)):
        assert not leaked(text, PASSWORD), (where, text[:2000])
    assert "password *** rejected" in json.loads(doc)["calls"]["first_error"]


def test_the_python_api_reason_masks_a_base_url_password(echo_server, tmp_path,
                                                         isolated_cache):
    import judgeaudit

    res = judgeaudit.evaluate(f"openai:m?base_url={echo_server.url('dec401', password=PASSWORD)}",
                              "builtin:facts", limit=2)
    assert not res.ok and "rejected" in (res.reason or "")
    assert not leaked(res.reason or "", PASSWORD), res.reason
    assert not leaked(json.dumps(res.summary()), PASSWORD)


# ---- 5: a key in a percent-encoded base_url query ----------------------------------------

@pytest.mark.parametrize("name", ["api-key", "code", "subscription-key", "sig"])
def test_a_key_in_an_encoded_base_url_query_is_masked_in_the_spec_quoted(
        echo_server, tmp_path, name):
    spec = f"openai:m?base_url={echo_server.url('A')}%3F{name}%3D{SPEC_KEY}"
    res = cli(["evaluate", "--judge", spec, "--data", "builtin:facts", "--limit", "2",
               "--json"], tmp_path)
    assert res.returncode == 2, res.stderr
    assert "has a query string" in res.stderr
    assert not leaked(res.stderr + res.stdout, SPEC_KEY), res.stderr
    assert f"%3F{name}%3D***" in res.stderr and f"?{name}=***" in res.stderr


def test_secret_query_names_are_masked_and_harmless_ones_stay_readable():
    from judgeaudit.llm.redact import redact
    from judgeaudit.spec import public_spec

    assert redact(f"https://f.azurewebsites.net/api/x?code={SPEC_KEY}&page=2") == (
        "https://f.azurewebsites.net/api/x?code=***&page=2")
    assert redact(f"GET /v1?subscription-key={SPEC_KEY}") == "GET /v1?subscription-key=***"
    assert redact(f"x?refresh_token={SPEC_KEY}&sv=2022") == "x?refresh_token=***&sv=2022"
    for text in ("error code=429 from the server", "max_tokens=8&monkey=3",
                 "http://h/v1?page=2&version=3"):
        assert redact(text) == text
    spec = "sim?position=0.5&factor_token_count=3&max_tokens=8"
    assert public_spec(spec) == spec


# ---- 6: the environment's key over plain http:// -----------------------------------------

@pytest.mark.parametrize("kind, env", [("openai", "OPENAI_API_KEY"),
                                       ("anthropic", "ANTHROPIC_API_KEY")])
async def test_a_key_from_the_environment_over_plain_http_to_another_host_is_warned_once(
        monkeypatch, caplog, kind, env):
    monkeypatch.setenv(env, ENV_KEY)
    caplog.set_level(logging.WARNING, logger="judgeaudit")
    remote = "http://192.0.2.7:8000" + ("/v1" if kind == "openai" else "")
    # building the SDK client sends nothing; that is where the key is taken
    for _ in range(2):
        p = make_provider(kind, "m", {"base_url": remote})
        await p.prepare()
        await p.aclose()
    said = [r.getMessage() for r in caplog.records if "plain http://" in r.getMessage()]
    assert len(said) == 1, said
    assert f"${env}" in said[0] and "192.0.2.7" in said[0] and ENV_KEY not in said[0]
    caplog.clear()
    for params in ({"base_url": "http://127.0.0.1:9/v1"}, {"base_url": "https://192.0.2.8/v1"},
                   {"base_url": "http://192.0.2.9/v1", "api_key": "own-key-123"}):
        p = make_provider(kind, "m", params)
        await p.prepare()
        await p.aclose()
    assert not [r for r in caplog.records if "plain http://" in r.getMessage()]


# ---- 7: secrets in what is stored --------------------------------------------------------

def test_answers_echoing_credentials_are_stored_and_written_masked(echo_server, tmp_path):
    spec = f"openai:m?base_url={echo_server.url('echo', password=PASSWORD)}"
    res = cli(["evaluate", "--judge", spec, "--data", "builtin:facts", "--limit", "2",
               "--out", "out", "--json"], tmp_path, OPENAI_API_KEY=ENV_KEY)
    assert echo_server.headers, res.stderr
    # the server did get the credentials (Basic: httpx sends the userinfo; or the key)
    sent = json.dumps(echo_server.headers)
    assert leaked(sent, PASSWORD) or leaked(sent, ENV_KEY)
    doc = (tmp_path / "out" / "results.json").read_text()
    dump = sqlite_dump(tmp_path / "cache.sqlite")
    assert "auth=" in dump and "auth=" in doc  # the answers are there, masked
    for where, text in (("stderr", res.stderr), ("stdout", res.stdout), ("results", doc),
                        ("cache", dump)):
        assert not leaked(text, PASSWORD, ENV_KEY), (where, text[:3000])


async def test_the_anthropic_answers_are_stored_masked_and_the_key_goes_in_x_api_key(
        echo_server, tmp_path):
    p = make_provider("anthropic", "m", {"base_url": echo_server.url("echo", v1=False),
                                         "api_key": SPEC_KEY})
    cache = Cache(tmp_path / "c.sqlite")
    client = Client(p, cache)
    out = await client.call(judge_request(0))
    await client.aclose()
    cache.close()
    sent = echo_server.headers[0]
    assert sent.get("x-api-key") == SPEC_KEY and "authorization" not in sent, sent
    assert out.text.startswith("A ") and not leaked(out.text, SPEC_KEY), out.text
    assert not leaked(sqlite_dump(tmp_path / "c.sqlite"), SPEC_KEY)


async def test_an_answer_cached_before_keys_were_masked_is_masked_on_its_way_out(
        monkeypatch, tmp_path):
    """A cache written by an earlier version keeps an echoed key; read back, the answer
    that goes on to the results has it masked."""
    from judgeaudit.llm import Response

    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    p = make_provider("openai", "m", {"base_url": "http://127.0.0.1:9/v1"})
    cache = Cache(tmp_path / "old.sqlite")
    client = Client(p, cache)
    stored = Response(text=f"A (the key was Bearer {ENV_KEY})")
    with sqlite3.connect(tmp_path / "old.sqlite") as conn:  # as the old client stored it
        conn.execute("INSERT INTO calls(key, provider, model, response, created) "
                     "VALUES (?,?,?,?,?)", (client.key(judge_request(0)), "openai", "m",
                                            stored.to_json(), 0.0))
    out = await client.call(judge_request(0))
    await client.aclose()
    cache.close()
    assert client.stats.cached == 1 and out.text.startswith("A (the key was")
    assert not leaked(out.text, ENV_KEY), out.text


async def test_a_failed_batch_whose_message_echoes_the_key_is_recorded_masked(tmp_path):
    def echo_key(obj: dict[str, Any]) -> dict[str, Any]:
        if obj.get("errors"):
            obj["errors"]["data"][0]["message"] = f"bad key Bearer {SPEC_KEY} ({SPEC_KEY})"
        return obj

    with FakeBatchServer(fail_batches=1, batch_object=echo_key) as srv:
        p = make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": SPEC_KEY,
                                             "batch": "on", "poll": "0.02",
                                             "batch_wait": "0.05"})
        client = Client(p, Cache(tmp_path / "c.sqlite"))
        outs = await client.map([judge_request(i) for i in range(3)])
        await client.aclose()
        client.cache.close()
    assert all("bad key" in str(o) for o in outs)
    dump = sqlite_dump(tmp_path / "c.sqlite")
    assert "bad key" in dump and not leaked(dump, SPEC_KEY), dump[-1500:]


# ---- 8 and 3 (ingest): an output file's error lines --------------------------------------

def test_ingest_masks_the_environment_key_and_shows_control_characters(tmp_path):
    hostile = "\x1b[2J\x1b]8;;http://evil.example/\x07CLICK\x1b]8;;\x07 \rOVER \u202eevil"
    out = tmp_path / "out.jsonl"
    lines = [{"custom_id": "k1", "response": None,
              "error": {"code": "invalid_api_key",
                        "message": f"Incorrect API key provided: {ENV_KEY} {hostile}"}},
             {"custom_id": f"unknown{hostile}", "response": {"status_code": 200, "body": {
                 "choices": [{"message": {"content": "A"}, "finish_reason": "stop"}]}},
              "error": None}]
    out.write_text("".join(json.dumps(x) + "\n" for x in lines))
    res = cli(["ingest", str(out)], tmp_path, OPENAI_API_KEY=ENV_KEY)
    text = res.stdout + res.stderr
    assert "Incorrect API key provided: ***" in text, text
    assert not leaked(text, ENV_KEY), text
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in text, (raw, text)
    assert "\\x1b[2J" in text and "\\u202e" in text and "unknown\\x1b[2J" in text


# ---- side: a key with a line break inside ------------------------------------------------

def test_a_key_with_a_line_break_inside_is_bad_input(tmp_path, echo_server):
    res = cli(["evaluate", "--judge", f"openai:m?base_url={echo_server.url('A')}", "--data",
               "builtin:facts", "--limit", "2", "--json"], tmp_path,
              OPENAI_API_KEY=f"{ENV_KEY}\nsecond-line-{SPEC_KEY}")
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert "$OPENAI_API_KEY" in res.stderr and "line break" in res.stderr
    assert not leaked(res.stderr + res.stdout, ENV_KEY, SPEC_KEY)
    assert not echo_server.headers  # refused before any call
