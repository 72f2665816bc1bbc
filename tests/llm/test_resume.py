"""kill -9 in the middle of a run, then resume: no finished call is paid for twice, and the
resumed run completes every call.

"Finished" means: the response was committed to the SQLite cache (the client commits each
call the moment it returns). A request the server answered but whose response the killed
process had not yet committed is NOT finished; it is legitimately asked again on resume. At
most `concurrency` calls can be in that state at the moment of the kill.

WAL with synchronous=NORMAL loses nothing on a process kill (only on power loss): a commit
is in the WAL file once `commit()` returns, so the resumed process sees it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgeaudit.llm import Cache, make_provider
from judgeaudit.llm.base import request_key

pytestmark = pytest.mark.usefixtures("no_key_env")
SRC = Path(__file__).resolve().parents[2] / "src"
N, CONCURRENCY = 60, 4

# Shared by the child script and this test, so both build byte-identical requests.
BUILD = '''
from judgeaudit.llm import Message, Request

def build(i):
    good = "AB"[i % 3 == 0]
    a, b = f"answer {i}", f"answer {i}"
    if good == "A":
        a += " <<GOOD>>"
    else:
        b += " <<GOOD>>"
    user = f"resume item {i}\\n\\nResponse A:\\n{a}\\n\\nResponse B:\\n{b}"
    return Request(
        messages=(Message("system", "You are a judge."), Message("user", user)),
        prefill="The better response is Response", choices=("A", "B"), max_tokens=8,
    )

def params(port):
    return {"base_url": f"http://127.0.0.1:{port}/v1", "api_key": "resume-key"}
'''

CHILD = BUILD + '''
import asyncio, json, sys
from judgeaudit.llm import Cache, Client, RetryPolicy, make_provider

async def main(port, cache_path, out_path, concurrency, n):
    client = Client(make_provider("openai", "fake", params(port)), Cache(cache_path),
                    concurrency=concurrency, retry=RetryPolicy(max_retries=2, base_delay=0.01))
    outs = await client.map([build(i) for i in range(n)])
    with open(out_path, "w") as f:
        json.dump({"texts": [o.text for o in outs], "stats": client.stats.as_dict()}, f)
    await client.aclose()

a = sys.argv
asyncio.run(main(int(a[1]), a[2], a[3], int(a[4]), int(a[5])))
'''

ns: dict = {}
exec(BUILD, ns)  # noqa: S102 - our own constant, the same code the child runs
build, params = ns["build"], ns["params"]


def index_of(rec) -> int:
    m = re.search(r"resume item (\d+)\n", rec.prompt_text)
    assert m, rec.prompt_text
    return int(m.group(1))


def test_kill_9_then_resume_pays_for_nothing_twice(fake_server, tmp_path):
    srv = fake_server(latency=0.1)
    script = tmp_path / "run.py"
    script.write_text(CHILD)
    cache_path, out_path = tmp_path / "calls.sqlite", tmp_path / "out.json"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    argv = [sys.executable, str(script), str(srv.port), str(cache_path), str(out_path),
            str(CONCURRENCY), str(N)]

    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while srv.served() < 20:
        assert proc.poll() is None, f"child exited early: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "child made no progress"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert not out_path.exists()  # it really died mid-run
    phase1 = srv.snapshot()

    provider = make_provider("openai", "fake", params(srv.port))
    cache = Cache(cache_path)
    finished = {i for i in range(N) if cache.get(request_key(provider, build(i))) is not None}
    cache.close()
    assert 10 <= len(finished) < N

    srv.reset()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    phase2 = srv.snapshot()

    # A request the kill cut off while it was being sent reaches the server with no body:
    # it names no item and was never answered to the child, so it is not a call asked.
    asked1 = [index_of(r) for r in phase1 if r.body is not None]
    asked2 = [index_of(r) for r in phase2]
    # (a) nothing that had finished before the kill was asked again ...
    assert not set(asked2) & finished
    # ... and the resume asked each unfinished call exactly once.
    assert sorted(asked2) == sorted(set(range(N)) - finished)
    # The only repeats are calls in flight at the kill: served, never committed.
    repeated = set(asked1) & set(asked2)
    print(f"finished before kill: {len(finished)}, repeated on resume: {len(repeated)}")
    assert len(repeated) <= CONCURRENCY
    # (b) 60 distinct requests in all, every result present and correct.
    assert set(asked1) | set(asked2) == set(range(N))
    out = json.loads(out_path.read_text())
    assert out["texts"] == ["AB"[i % 3 == 0] for i in range(N)]
    assert out["stats"]["cached"] == len(finished)
    assert out["stats"]["made"] == N - len(finished)
    cache = Cache(cache_path)
    assert cache.stats().entries == N
    cache.close()
