"""Edges of the secret masking a review found (findings 1-5, 7, 9, 11), each against the real
parts: a subprocess CLI run, a loopback server, SQLite caches.

- 1: a byte that is not UTF-8 in a key variable (Python keeps it as a lone surrogate,
  \\udce9) made the masking raise: any uncached run failed with exit 2.
- 2: placeholder keys (api_key=ollama) and short keys masked hostnames and parts of words
  ("http://***:11434", "12 ***s; la***").
- 3: the registry kept every key ever given, refused ones too, across tests.
- 5: a raw payload was dropped whole when a secret was found in it, a key of digits ate a
  timestamp.
- 7: answers were masked from 8 characters, the reasons quoting them from 4.
- 9: a malformed $OPENAI_API_KEY failed runs that send nothing (cached, --plan-only).
- 11: anthropic sends its key in the header `auth=` names (x-api-key, or bearer).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer, judge_request
from test_secret_leaks import EchoAuthServer, cli, leaked

from judgeaudit.llm import Cache, Client, Response, make_provider
from judgeaudit.llm.client import clean_response
from judgeaudit.llm.providers.openai import redact as provider_redact
from judgeaudit.llm.redact import (
    RedactingFilter,
    known_secrets,
    mask_known,
    redact,
    register_secret,
)

pytestmark = pytest.mark.usefixtures("no_key_env")
SRC = Path(__file__).resolve().parents[2] / "src"
LONG_KEY = "sk-proj-EDGEcanaryR8w3Nq5Vt"
NOT_UTF8 = "abcd\udce9fghijk"  # b"abcd\xe9fghijk" as os.environ decodes it


# ---- 1: a key variable holding a byte that is not UTF-8 ----------------------------------

def test_a_key_variable_with_a_byte_that_is_not_utf8_does_not_break_a_run(tmp_path):
    res = cli(["audit", "--judge", "sim?position=1", "--data", "builtin:facts", "--n", "20",
               "--out", "out", "--no-cache", "--json"], tmp_path, OPENAI_API_KEY=NOT_UTF8)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "codec" not in res.stderr


def test_masking_a_secret_that_is_not_utf8_never_raises(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", NOT_UTF8)
    assert NOT_UTF8 in known_secrets()
    text = f"echo {NOT_UTF8} and %-encoded abcd%E9fghijk"
    assert redact(text) == "echo *** and %-encoded ***"
    assert mask_known(text) == "echo *** and %-encoded ***"
    answer = clean_response(Response(text=f"A {NOT_UTF8}", raw={"e": NOT_UTF8}), 10_000)
    assert answer.raw is not None and answer.raw["e"] == "***"
    # the logging filter redacts the record instead of raising into the code that logged
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "key %s", (NOT_UTF8,), None)
    assert RedactingFilter().filter(record) and record.getMessage() == "key ***"


# ---- 2: placeholders and short keys ------------------------------------------------------

@pytest.mark.parametrize("placeholder", ["EMPTY", "none", "dummy", "ollama", "lm-studio",
                                         "not-needed", "sk-no-key-required"])
def test_a_placeholder_key_masks_no_hostname_and_no_word(monkeypatch, placeholder):
    host = placeholder.lower()
    monkeypatch.setenv("OPENAI_API_KEY", placeholder)
    make_provider("openai", "m", {"base_url": f"http://{host}:11434/v1",
                                  "api_key": placeholder})
    text = f"connection to http://{host}:11434/v1 failed; {placeholder} said {host}"
    assert mask_known(text) == text
    assert provider_redact(text, [placeholder]) == redact(text)  # the first-error line's
    if not host.startswith("sk-"):  # redact's key-shaped pattern masks sk-... anyway
        assert redact(text) == text


def test_a_key_a_server_was_started_with_is_no_placeholder(monkeypatch):
    """vLLM's documented --api-key token-abc123 is that server's key."""
    make_provider("openai", "m", {"base_url": "http://127.0.0.1:9/v1",
                                  "api_key": "token-abc123"})
    assert redact("key token-abc123 refused") == "key *** refused"


def test_a_short_key_is_masked_only_as_a_whole_token(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    assert redact("12 tests; latest; test_case") == "12 tests; latest; test_case"
    assert redact("the key test was refused") == "the key *** was refused"
    assert provider_redact("latest run: key test refused", ["test"]) == (
        "latest run: key *** refused")


# ---- 3: the registry -----------------------------------------------------------------------

def test_a_refused_key_is_never_registered():
    make_provider("openai", "m", {"base_url": "http://127.0.0.1:9/v1", "api_key": "wrong key"})
    assert "wrong key" not in known_secrets()
    assert redact("a wrong key host or port") == "a wrong key host or port"


def test_registered_secrets_are_forgotten_between_tests_1_of_2():
    register_secret("leftover-EDGE-7Qz")
    assert "leftover-EDGE-7Qz" in known_secrets()


def test_registered_secrets_are_forgotten_between_tests_2_of_2():
    """The autouse fixture of tests/conftest.py (`reset_secrets`) ran between the two."""
    assert "leftover-EDGE-7Qz" not in known_secrets()
    assert redact("leftover-EDGE-7Qz") == "leftover-EDGE-7Qz"


# ---- 5: the raw payload is kept -------------------------------------------------------------

def test_a_secret_in_the_raw_payload_is_masked_in_place_and_the_payload_kept(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "12345678")
    monkeypatch.setenv("ANTHROPIC_API_KEY", LONG_KEY)
    raw = {"created": 1712345678, "backend": "llama.cpp", "id": "run-12345678x",
           "echo": [f"Bearer {LONG_KEY}", {"k": f"x{LONG_KEY}y"}]}
    out = clean_response(Response(text="Score: 91234567812", raw=raw), 100_000)
    assert out.raw == {"created": 1712345678, "backend": "llama.cpp", "id": "run-12345678x",
                       "echo": ["Bearer ***", {"k": "x***y"}]}
    assert out.text == "Score: 91234567812"  # a number holding the key's digits stays


# ---- 7: one length rule --------------------------------------------------------------------

@pytest.mark.parametrize("key", ["k9x2mq", "passw0rd9"])
async def test_answers_and_the_reasons_quoting_them_are_masked_by_one_rule(
        monkeypatch, tmp_path, key):
    monkeypatch.setenv("OPENAI_API_KEY", key)
    text = f"answer {key} then ab{key}z"
    want = f"answer *** then ab{key}z"
    out = clean_response(Response(text=text, invalid=f"unreadable: {text}"), 10_000)
    assert out.text == want and out.invalid == f"unreadable: {want}"
    assert redact(text) == want
    with FakeLLMServer(api_keys={key}) as srv:  # the stored invalid mark and first_unreadable
        client = Client(make_provider("openai", "fake", {"base_url": srv.openai_url}),
                        Cache(tmp_path / "c.sqlite"))
        await client.call(judge_request(0))
        client.mark_invalid(judge_request(0), f"no verdict in {text!r}")
        client.note_verdict(Response(text=text), f"no verdict in {text!r}",
                            request=judge_request(0))
        await client.aclose()
    assert client.cache is not None
    stored = client.cache.invalid_reason(client.key(judge_request(0)))
    client.cache.close()
    assert stored == f"no verdict in {want!r}"
    assert client.stats.first_unreadable == f"no verdict in {want!r}"


# ---- 9: a malformed key fails only a run that sends a call ---------------------------------

def test_a_malformed_key_fails_only_a_run_that_sends_a_call(tmp_path):
    with FakeLLMServer() as srv:
        args = ["evaluate", "--data", "builtin:facts", "--json", "--judge",
                f"openai:fake?base_url={srv.openai_url}"]
        first = cli([*args, "--limit", "2", "--out", "o1"], tmp_path, OPENAI_API_KEY=LONG_KEY)
        assert first.returncode == 0, first.stderr[-2000:]
        sent = srv.count()
        bad = {"OPENAI_API_KEY": "sk-bad key-0123456789"}
        cached = cli([*args, "--limit", "2", "--out", "o2"], tmp_path, **bad)
        assert cached.returncode == 0, cached.stderr[-2000:]
        plan = cli(["--plan-only", "plan.jsonl", *args, "--limit", "3"], tmp_path, **bad)
        assert plan.returncode == 0, plan.stderr[-2000:]
        assert json.loads(plan.stdout.splitlines()[-1])["planned"] > 0
        live = cli([*args, "--limit", "2", "--out", "o3", "--no-cache"], tmp_path, **bad)
        assert live.returncode == 2, (live.returncode, live.stderr[-2000:])
        assert "$OPENAI_API_KEY" in live.stderr and "has a space" in live.stderr
        assert not leaked(live.stderr + live.stdout, "key-0123456789")
        assert srv.count() == sent  # nothing sent with the malformed key


async def test_a_malformed_key_is_bad_input_at_the_first_call_not_when_the_judge_is_made(
        monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test key-0123456789")
    with FakeLLMServer() as srv:
        client = Client(make_provider("openai", "fake", {"base_url": srv.openai_url}))
        with pytest.raises(ValueError, match=r"\$OPENAI_API_KEY has a space"):
            await client.call(judge_request(0))
        await client.aclose()
        assert srv.count() == 0


# ---- 11: the header anthropic sends its key in ---------------------------------------------

@pytest.mark.parametrize("auth, sent, absent", [(None, "x-api-key", "authorization"),
                                                ("x-api-key", "x-api-key", "authorization"),
                                                ("bearer", "authorization", "x-api-key")])
async def test_anthropic_sends_its_key_in_the_header_auth_names(auth, sent, absent):
    srv = EchoAuthServer()
    try:
        params = {"base_url": srv.url("echo", v1=False), "api_key": LONG_KEY}
        if auth:
            params["auth"] = auth
        p = make_provider("anthropic", "m", params)
        client = Client(p)
        out = await client.call(judge_request(0))
        await client.aclose()
    finally:
        srv.stop()
    got = srv.headers[0]
    want = LONG_KEY if sent == "x-api-key" else f"Bearer {LONG_KEY}"
    assert got.get(sent) == want and absent not in got, got
    assert not leaked(out.text, LONG_KEY)


def test_anthropic_auth_is_checked_listed_and_kept_out_of_the_cache_key():
    with pytest.raises(ValueError, match="auth='basic': expected x-api-key or bearer"):
        make_provider("anthropic", "m", {"api_key": "k-1234", "auth": "basic"})
    a = make_provider("anthropic", "m", {"api_key": "k-1234", "auth": "bearer"})
    b = make_provider("anthropic", "m", {"api_key": "k-1234"})
    assert a.cache_identity() == b.cache_identity()
    listed = subprocess.run([sys.executable, "-m", "judgeaudit", "judges"], capture_output=True,
                            text=True, env={**os.environ, "PYTHONPATH": str(SRC),
                                            "COLUMNS": "200"}, timeout=60)
    assert listed.returncode == 0 and "auth" in listed.stdout and "bearer" in listed.stdout


# ---- 8: --plan-only --json prints its line as the other --json lines are ------------------

def test_plan_only_json_escapes_acting_characters(tmp_path):
    """A plan path holding U+202E (right-to-left override) was printed raw on stdout:
    json_line escapes it as every other --json line does, and json.loads reads it back."""
    plan = "plan\u202e.jsonl"
    res = cli(["--plan-only", plan, "evaluate", "--judge", "sim?position=1", "--data",
               "builtin:facts", "--limit", "2", "--json"], tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    line = res.stdout.splitlines()[-1]
    assert "\u202e" not in res.stdout and "\\u202e" in line
    assert json.loads(line)["plan"] == plan


async def test_a_malformed_key_is_bad_input_at_the_first_batched_call(monkeypatch):
    from fakebatch import FakeBatchServer

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test key-0123456789")
    with FakeBatchServer() as srv:
        client = Client(make_provider("openai", "fake", {
            "base_url": srv.openai_url, "batch": "on", "poll": "0.02", "batch_wait": "0.05"}))
        with pytest.raises(ValueError, match=r"\$OPENAI_API_KEY has a space"):
            await client.call(judge_request(0))
        await client.aclose()
