"""The log redaction never changes how a program's own handlers format its records. The
record factory (d5ef71a) set every record's `exc_text` with the stock formatter when it was
made, so a handler's own `formatException` was never called again, process-wide, once a
Session opened (review6 finding 4). A traceback is now replaced only when it holds a secret,
which still never reaches a handler. Each case runs in a fresh interpreter (the factory is
process-wide) with a real Session."""

from __future__ import annotations

import subprocess
import sys
import textwrap

KEY = "sk-SECRET-0123456789abcdef"

SCRIPT = textwrap.dedent("""
    import logging, sys
    import judgeaudit
    from judgeaudit.llm.redact import register_secret

    class MyFmt(logging.Formatter):
        def formatException(self, ei):
            return f"CUSTOM-TRACE {{ei[0].__name__}}: {{ei[1]}}"

    h = logging.StreamHandler(sys.stdout)
    h.setFormatter(MyFmt("%(name)s %(message)s"))
    for name in ("myapp", "judgeaudit.x"):
        lg = logging.getLogger(name)
        lg.addHandler(h)
        lg.setLevel(logging.INFO)
        lg.propagate = False
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="root %(name)s %(message)s")
    logging.getLogger().handlers[0].setFormatter(MyFmt("root %(name)s %(message)s"))
    s = judgeaudit.Session(cache=False)
    register_secret({key!r})
    for name in ("myapp", "judgeaudit.x", "other"):
        try:
            1 / 0
        except ZeroDivisionError:
            logging.getLogger(name).exception("boom")
        try:
            raise RuntimeError("connect with key {key} failed")
        except RuntimeError:
            logging.getLogger(name).exception("leak")
""")


def _run() -> str:
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(key=KEY)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr


def test_a_custom_format_exception_still_runs_once_a_session_opened() -> None:
    out = _run()
    for name in ("myapp", "judgeaudit.x", "root other"):
        want = f"{name} boom\nCUSTOM-TRACE ZeroDivisionError: division by zero"
        assert want in out, f"expected the handler's own formatException for {name}:\n{out}"
    assert "Traceback (most recent call last)" not in out.split("leak")[0], out


def test_a_traceback_that_holds_a_secret_never_reaches_a_handler() -> None:
    out = _run()
    assert KEY not in out, out
    assert out.count("leak") == 3 and out.count("RuntimeError") >= 3, out
