"""A program's formatter that shows a traceback's local variables
(`TracebackException(capture_locals=True)`) never shows a known key: since d4d361c a
program's own `formatException` runs (the stock traceback holds no key), and it printed
`api_key = 'sk-...'` from the frame of `call(api_key)` (review7 finding 5). A record whose
frames hold a known secret keeps the stock traceback; any other record keeps the program's
formatter. Each case runs in a fresh interpreter (the record factory is process-wide) with a
real Session."""

from __future__ import annotations

import subprocess
import sys
import textwrap

KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX1234567890"

SCRIPT = textwrap.dedent("""
    import io, logging, traceback
    import judgeaudit
    from judgeaudit.llm.redact import register_secret

    class LocalsFmt(logging.Formatter):
        def formatException(self, ei):
            return "LOCALS " + "".join(
                traceback.TracebackException(*ei, capture_locals=True).format())

    buf = io.StringIO()
    h = logging.StreamHandler(buf)
    h.setFormatter(LocalsFmt("%(message)s"))
    for name in ("judgeaudit.x", "myapp"):
        lg = logging.getLogger(name)
        lg.addHandler(h)
        lg.propagate = False
    s = judgeaudit.Session(cache=False)
    register_secret({key!r})

    def call(api_key):
        raise RuntimeError("connection reset")

    def plain(n):
        raise RuntimeError("no key here")

    for name in ("judgeaudit.x", "myapp"):
        try:
            call({key!r})
        except RuntimeError:
            logging.getLogger(name).exception("call failed")
    try:
        plain(3)
    except RuntimeError:
        logging.getLogger("myapp").exception("plain failed")
    print(buf.getvalue())
""")


def test_a_formatter_showing_locals_never_shows_a_known_key():
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(key=KEY)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert KEY not in out.stdout, out.stdout
    assert out.stdout.count("call failed") == 2
    # a record without a secret in its frames keeps the program's own formatter
    assert "LOCALS" in out.stdout and "n = 3" in out.stdout, out.stdout
