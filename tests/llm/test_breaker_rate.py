"""The breaker's answer-rate rule (`AnswerWindow`, `RetryPolicy.rate_window`): a server that
answers a call now and then but fails nearly all the others after their retries is stopped
once fewer than 10% of the last max(50, 5 x stop_after) finished calls were answered. The
in-a-row rule (`stop_after` calls giving up with nothing answered since they were sent)
never stopped it: an answer came between the give-ups, so the run paid for every retry of
every call, stage after stage, until --max-failed failed it at the end.

A server failing 11% of its prompts still runs to the end: its failing calls give up in a
bunch after the others were answered (more of them than the window holds), which the window
does not read as "nothing answered" because it takes the calls in the order they were sent.

Real servers on loopback (tests/llm/fakeserver.py)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fakeserver import judge_request
from typer.testing import CliRunner

from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = {"base_delay": 0.005, "max_delay": 0.02}


def provider(url: str) -> Any:
    return make_provider("openai", "fake", {"base_url": url, "api_key": "k"})


def requests(n: int, start: int = 0) -> list[Any]:
    return [judge_request(i, "AB"[i % 2]) for i in range(start, start + n)]


def item(rec: Any) -> int:
    return int(re.search(r"question item (\d+)", rec.prompt_text).group(1))


def one_request_in(n: int, fault: str = "500") -> Callable[[Any, int], str | None]:
    """A server rule answering every `n`-th request it gets (retries included, in arrival
    order) and failing the others with `fault`: an overloaded server shedding load, whose
    rare answers come all through the run."""
    lock, seen = threading.Lock(), [0]

    def rule(rec: Any, attempt: int) -> str | None:
        with lock:
            seen[0] += 1
            k = seen[0]
        return None if k % n == 0 else fault

    return rule


def window(concurrency: int) -> int:
    """The calls the rate rule looks at with the default stop_after: max(50, 5 x
    max(8, 2 x concurrency))."""
    return max(50, 5 * max(8, 2 * concurrency))


@pytest.mark.parametrize("concurrency", [4, 8])
async def test_a_server_answering_1_request_in_100_is_stopped_before_the_next_stage(
        fake_server, concurrency):
    """200 calls, up to 4 attempts each, against a server answering 1 request in 100 (about
    4% of the calls): the client stops within the stage and sends nothing of the next one.
    Before, it answered a call every 25 or so, so no run of give-ups was "in a row", and
    both stages were sent in full (about 1,580 requests)."""
    srv = fake_server(rule=one_request_in(100))
    client = Client(provider(srv.openai_url), concurrency=concurrency,
                    retry=RetryPolicy(max_retries=3, **FAST))
    outs = await client.map(requests(200))
    assert sum(not isinstance(o, CallFailed) for o in outs) == client.stats.made > 0
    k = window(concurrency)
    stopped = client.stopped or ""
    m = re.search(rf"the server answers almost no call \((\d+) of the last {k} calls "
                  r"answered, \d+%; the others gave up after 4 attempts each\), so the "
                  r"remaining calls were not sent: check the server .* run again when it "
                  r"answers", stopped)
    assert m and int(m.group(1)) < k / 10, stopped
    assert "last error: openai: HTTP 500" in stopped
    mark = srv.count()
    assert mark <= 200 * 4  # at most every attempt of this stage's calls
    outs = await client.map(requests(200, start=1000))
    assert all(isinstance(o, CallFailed) and "not sent: the server answers almost no call"
               in str(o) for o in outs)
    assert srv.count() == mark and client.stats.not_sent >= 200
    assert not any(item(r) >= 1000 for r in srv.snapshot())
    await client.aclose()


@pytest.mark.parametrize("concurrency", [4, 8])
async def test_a_server_failing_11_percent_of_prompts_runs_to_the_end(fake_server,
                                                                      concurrency):
    """800 calls, 88 of whose prompts always fail (HTTP 500; 11%): their give-ups come
    after the other calls were answered, 88 in a row in the order calls finish, more than
    the rate window holds (50 or 80). The client never stops; the next stage is sent."""
    bad = {i for i in range(800) if (i * 37) % 100 < 11}
    srv = fake_server(rule=lambda rec, attempt: "500" if item(rec) in bad else None)
    client = Client(provider(srv.openai_url), concurrency=concurrency,
                    retry=RetryPolicy(max_retries=3, **FAST))
    outs = await client.map(requests(800))
    assert len(bad) == 88 > window(concurrency)
    assert {i for i, o in enumerate(outs) if isinstance(o, CallFailed)} == bad
    assert client.stopped is None and client.stats.not_sent == 0
    outs = await client.map(requests(50, start=2000))
    assert not any(isinstance(o, CallFailed) for o in outs)
    assert client.stats.made == 800 - 88 + 50
    await client.aclose()


async def test_a_server_answering_1_request_in_10_is_not_stopped(fake_server):
    """About a third of the calls answered (each has 4 attempts at 1 in 10): a poor server,
    but far above the floor (10% of the calls); the run goes on and --max-failed judges
    it."""
    srv = fake_server(rule=one_request_in(10))
    client = Client(provider(srv.openai_url), concurrency=4,
                    retry=RetryPolicy(max_retries=3, **FAST))
    outs = await client.map(requests(300))
    answered = sum(not isinstance(o, CallFailed) for o in outs)
    assert 0.2 < answered / 300 < 0.6
    assert client.stopped is None and client.stats.not_sent == 0
    await client.aclose()


async def test_stop_after_0_turns_the_rate_rule_off_too(fake_server):
    srv = fake_server(rule=one_request_in(100))
    client = Client(provider(srv.openai_url), concurrency=4,
                    retry=RetryPolicy(max_retries=1, stop_after=0, **FAST))
    await client.map(requests(150))
    assert client.stopped is None and client.stats.not_sent == 0
    await client.aclose()


def test_an_audit_of_a_server_answering_1_request_in_200_fails_early_with_exit_3(
        fake_server, tmp_path):
    """Through the CLI, with the default retry policy (a 429 with Retry-After: 0 is retried
    at once; 1 request in 200 answered, about 3% of the calls): the run fails (exit 3,
    README's "Exit codes and failed runs") with most calls not sent, and its reason says how
    many of the last calls were answered and what to do."""
    from judgeaudit.cli.main import app

    srv = fake_server(rule=one_request_in(200, "429"), retry_after="0")
    spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
    res = CliRunner().invoke(app, ["audit", "--judge", spec, "--data", "builtin:facts",
                                   "--n", "40", "--no-cache", "--concurrency", "4",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 3, res.output
    text = " ".join(res.output.split())
    m = re.search(r"run failed: (\d+) of (\d+) calls failed.*?(\d+) of them not sent: the "
                  r"server answers almost no call \(\d of the last 50 calls answered, \d+%; "
                  r"the others gave up after 7 attempts each\), so the remaining calls were "
                  r"not sent: check the server \(its log, its load\) and run again when it "
                  r"answers: finished calls are cached", text)
    assert m, text
    failed, calls, not_sent = map(int, m.groups())
    # stopped well before the end: before, every call was sent, each up to 7 times
    assert not_sent > calls / 2 and srv.count() < calls
