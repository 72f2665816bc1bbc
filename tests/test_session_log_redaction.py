"""The Python API redacts its logs as the CLI does. A script that configured logging and called
`judgeaudit.evaluate` with a base_url holding a password got httpx's "HTTP Request: POST
http://user:KEY@host/..." line per call: only the CLI installed the redacting filter. Now a
`Session` installs it when it opens and when a command starts. Run in a fresh interpreter (no
filter left by another test), against a real loopback server."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

from fakeserver import FakeLLMServer

import judgeaudit
from judgeaudit.llm.redact import RedactingFilter

KEY = "sk-SECRET-0123456789abcdef"

SCRIPT = textwrap.dedent("""
    import logging, sys
    import judgeaudit
    logging.basicConfig(level=logging.{level}, stream=sys.stderr)
    items = [{{"id": f"r{{i}}", "prompt": f"log redaction {{i}}", "response_1": "a",
               "response_2": "b", "label": 1}} for i in range(2)]
    res = judgeaudit.evaluate("openai:m?base_url={url}", items, cache=False)
    print("ok" if res.ok else "failed")
""")


def _run(url: str, level: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    return subprocess.run([sys.executable, "-c", SCRIPT.format(url=url, level=level)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_a_base_url_password_never_reaches_a_script_s_log():
    with FakeLLMServer() as srv:
        url = srv.openai_url.replace("http://", f"http://user:{KEY}@")
        for level in ("INFO", "DEBUG"):
            done = _run(url, level)
            assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
            assert "HTTP Request: POST http://user:***@127.0.0.1" in done.stderr, done.stderr
            assert KEY not in done.stderr + done.stdout
        assert srv.count() >= 2


def test_a_session_installs_the_filter_on_logging_configured_before_it():
    """On the handlers of the root logger there then, on the HTTP loggers and on ours
    (their children included: a logger's filter sees only its own records)."""
    handler = logging.StreamHandler()
    logging.getLogger().addHandler(handler)
    try:
        judgeaudit.Session(cache=False)
        logging.getLogger("judgeaudit.llm.test_child")
        with judgeaudit.Session(cache=False).command():
            pass
        for target in (handler, logging.getLogger("httpx"), logging.getLogger("judgeaudit"),
                       logging.getLogger("judgeaudit.llm.test_child")):
            assert sum(isinstance(f, RedactingFilter) for f in target.filters) == 1, target
    finally:
        logging.getLogger().removeHandler(handler)


OWN_SCRIPT = textwrap.dedent("""
    import logging, sys
    import judgeaudit
    from judgeaudit.llm.redact import register_secret
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
    with judgeaudit.Session(cache=False).command():
        pass
    log = logging.getLogger("myapp")
    log.info("config key=%s", "value")
    log.info("key-value store ready; sk-learn version 1.4; auth=ok")
    register_secret("{key}")
    log.info("token in my own line: %s", "{key}")
""")


def test_a_session_leaves_the_script_s_own_log_lines_alone_but_for_known_secrets():
    """A Session put the full redacting filter on the root handlers: a script's own lines
    read "config key=***", "key-*** store ready", "sk-*** version 1.4", "auth=***". Now
    those handlers mask only the secrets judgeaudit knows (and URL passwords)."""
    done = subprocess.run([sys.executable, "-c", OWN_SCRIPT.format(key=KEY)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    err = done.stderr
    assert "config key=value" in err
    assert "key-value store ready; sk-learn version 1.4; auth=ok" in err
    assert "token in my own line: ***" in err and KEY not in err


EXTRA_SCRIPT = textwrap.dedent("""
    import logging, sys
    import judgeaudit
    from judgeaudit.llm.redact import register_secret
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(message)s | %(key)s")
    with judgeaudit.Session(cache=False).command():
        pass
    register_secret("{key}")
    logging.getLogger("myapp").info("a line", extra={{"key": "{key}"}})
    logging.getLogger("myapp").info("plain", extra={{"key": "value"}})
""")


def test_a_known_secret_in_an_extra_field_is_masked_too():
    """A field given with `extra=` that the format shows ("%(key)s") went out in clear."""
    done = subprocess.run([sys.executable, "-c", EXTRA_SCRIPT.format(key=KEY)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "a line | ***" in done.stderr and KEY not in done.stderr
    assert "plain | value" in done.stderr
