"""No key reaches a log handler, whatever order logging is configured in. The Session put
redacting filters on the loggers and root handlers there when it opened and when a command
started; a logger's filter sees only the records logged on it (not its children's) and a
handler made later had none. The anthropic SDK, imported inside the command, logs on
`anthropic._base_client` (made then) "Sending HTTP Request: POST http://user:KEY@host/..."
and "HTTP Response: POST http://user:KEY@host/...": they reached, with the key,

- a handler a script put on the `anthropic` logger after opening the Session;
- the root handler the SDK's own ANTHROPIC_LOG=debug switch makes at that import (no logging
  configured by the script at all).

Records are now redacted when they are made (a log-record factory). Each case runs in a fresh
interpreter (no factory or filter left by another test), against a real loopback server, the
key in the base_url's userinfo (the server's own key given as api_key)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from fakeserver import FakeLLMServer

KEY = "sk-SECRET-0123456789abcdef"

SCRIPT = textwrap.dedent("""
    import asyncio, logging, sys
    import judgeaudit

    items = [{{"id": f"r{{i}}", "prompt": f"log order {{i}}", "response_1": "a",
               "response_2": "b", "label": 1}} for i in range(2)]

    async def main():
        s = judgeaudit.Session(cache=False)
        if {handler}:  # configured after the Session opened
            h = logging.StreamHandler(sys.stderr)
            h.setFormatter(logging.Formatter("%(name)s %(message)s"))
            sdk = logging.getLogger("anthropic")
            sdk.setLevel(logging.DEBUG)
            sdk.addHandler(h)
        res = await judgeaudit.aevaluate("anthropic:m?base_url={url}&api_key=k-0123456789",
                                         items, session=s)
        await s.aclose()
        print("ok" if res.ok else "failed: " + str(res.reason))

    asyncio.run(main())
""")


def _run(url: str, *, handler: bool, env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_"))} | env_extra
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(url=url, handler=handler)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.stdout, done.stderr[-2000:])
    return done.stdout + done.stderr


def _url(srv: FakeLLMServer) -> str:
    return srv.anthropic_url.replace("http://", f"http://user:{KEY}@")


def test_a_handler_on_an_sdk_logger_added_after_the_session_gets_no_key():
    with FakeLLMServer() as srv:
        out = _run(_url(srv), handler=True, env_extra={})
    assert "anthropic._base_client Sending HTTP Request: POST http://user:***@127.0.0.1" in out
    assert "HTTP Response: POST http://user:***@127.0.0.1" in out
    assert KEY not in out


def test_the_sdk_s_own_debug_switch_logs_no_key():
    """ANTHROPIC_LOG=debug: the SDK calls logging.basicConfig when it is imported, inside the
    command, after the Session's filters were installed."""
    with FakeLLMServer() as srv:
        out = _run(_url(srv), handler=False, env_extra={"ANTHROPIC_LOG": "debug"})
    assert "Sending HTTP Request: POST http://user:***@127.0.0.1" in out
    assert KEY not in out
