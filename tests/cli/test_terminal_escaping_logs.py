"""A server's error body reaches the terminal with its control characters shown, never raw,
on every log line (tester sec, point 2).

The final `error:` line escaped them, but the -v "retrying openai in ... after: ..." lines
and the WARNING "... stopped answering ... (last error: ...)" line quoted the body as it
came: one audit against a server answering 500 wrote 384 raw ESC[2J (clear screen), OSC 8
hyperlinks, BEL, CR, NUL and U+202E to stderr. Here a real loopback server answers every
call 500 (or 429) with such a body, the real CLI runs in its own process with -v, and its
stderr is read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

HOSTILE = ("\x1b[2J\x1b[31mRED\x1b[0m \x1b]8;;http://evil.example/\x07CLICK\x1b]8;;\x07 "
           "\rOVERWRITE \u202eevil\u202c \x00NUL \x9b31m")
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class _Hostile(BaseHTTPRequestHandler):
    status = 500

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error": {"message": f"upstream broke: {HOSTILE}",
                                     "type": "server_error"}}).encode()
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(params=[500, 429])
def server(request):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    srv.status = request.param  # type: ignore[attr-defined]
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


def test_log_lines_show_a_server_error_body_escaped(tmp_path, server):
    env = {**os.environ, "JUDGEAUDIT_CACHE": str(tmp_path / "cache.sqlite"),
           "COLUMNS": "120"}
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.run(
        [sys.executable, "-m", "judgeaudit", "-v", "audit", "--judge",
         f"openai:m?base_url={server}&api_key=k", "--concurrency", "1", "--data", "builtin:facts",
         "--probes", "position", "--n", "6", "--json", "--out", str(tmp_path / "out")],
        capture_output=True, env=env, timeout=240)
    err = proc.stderr.decode("utf-8", errors="surrogateescape")
    assert proc.returncode == 3, err[-2000:]  # the judge never answered: the run failed
    retrying = [ln for ln in err.splitlines() if "retrying openai" in ln]
    assert retrying, err[-2000:]
    found = sorted({f"U+{ord(c):04X}" for c in ACTING.findall(err)})
    assert not found, f"raw control characters on stderr: {found}"
    shown = ("\\x1b[2J\\x1b[31mRED\\x1b[0m \\x1b]8;;http://evil.example/\\x07CLICK"
             "\\x1b]8;;\\x07 \\rOVERWRITE \\u202eevil\\u202c \\x00NUL \\x9b31m")
    assert all(shown in ln for ln in retrying), retrying[0]
    warning = [ln for ln in err.splitlines() if ln.startswith("WARNING")]
    assert warning and any(shown in ln for ln in warning), err[-2000:]
    # --json: one valid object whose reason quotes the body, nothing in it raw
    # (json.dumps escapes C0 controls, not C1 or bidi overrides)
    out = proc.stdout.decode("utf-8", errors="surrogateescape")
    assert not ACTING.findall(out), out
    doc = json.loads(out)
    assert doc["ok"] is False and HOSTILE in doc["reason"], doc["reason"]
