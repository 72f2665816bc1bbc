"""A server with fewer slots than the calls in flight (a llama.cpp server on a CPU, a single
GPU replica) queues them; the queued ones waited out the timeout, were sent again and queued
again, until the breaker read a working server as "stopped answering" (before this change,
48 calls at concurrency 8 to a server taking 0.5 s per answer with a 1.6 s timeout: 45 of
them failed and 291 requests reached the server, `benchmarks/queueing_server.py`). The
client now halves the calls it sends at a time when calls time out while others are
answered, and wins slots back as answers come in a row. A real loopback server that answers
one request at a time."""

from __future__ import annotations

import threading
import time

import pytest
from fakeserver import default_answer, judge_request

from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")


class OneSlot:
    """An answer policy that serves one request at a time, `seconds` each (0: at once)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._lock = threading.Lock()

    def __call__(self, text: str) -> str:
        with self._lock:
            time.sleep(self.seconds)
        return default_answer(text)


def provider(srv):
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k"})


async def test_calls_timing_out_behind_a_queue_narrow_the_client_and_all_get_answered(
        fake_server, caplog):
    srv = fake_server(answer=OneSlot(0.25))
    client = Client(provider(srv), concurrency=8, timeout=0.8)
    outs = await client.map([judge_request(i) for i in range(24)])
    assert not any(isinstance(o, CallFailed) for o in outs)
    assert client.stats.made == 24 and client.stopped is None
    assert srv.count() <= 48  # was 148: at most one wasted request per call
    assert client.sending_at_most < 8
    assert client._sem._value == client.sending_at_most + client._slots_owed
    assert "sending at most 4 at a time from now on (was 8)" in caplog.text
    assert client.stats.narrowed_to is not None and client.stats.narrowed_to < 8
    await client.aclose()


async def test_slots_come_back_once_the_server_is_fast_again(fake_server):
    slot = OneSlot(0.25)
    srv = fake_server(answer=slot)
    client = Client(provider(srv), concurrency=8, timeout=0.8)
    await client.map([judge_request(i) for i in range(16)])
    narrowed = client.sending_at_most
    assert narrowed < 8
    slot.seconds = 0.0  # the other job on the server is done
    await client.map([judge_request(i) for i in range(100, 260)])
    assert client.sending_at_most == 8
    # every permit kept back was given back, none twice: 8 free slots, none owed
    assert client._sem._value == 8 and client._slots_owed == 0
    await client.aclose()


async def test_a_server_that_never_answered_is_not_narrowed_but_given_up(fake_server):
    srv = fake_server(rule=lambda rec, attempt: "hang", hang_seconds=5)
    client = Client(provider(srv), concurrency=4, timeout=0.3,
                    retry=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02))
    outs = await client.map([judge_request(i) for i in range(12)])
    assert all(isinstance(o, CallFailed) for o in outs)
    assert client.sending_at_most == 4  # nothing answered: not a queue, an absent server
    assert client.stopped and "never answered in time" in client.stopped
    await client.aclose()


def test_the_narrowing_is_recorded_in_the_calls_the_run_writes():
    from judgeaudit.cli.format import calls_text
    from judgeaudit.llm import CallStats
    from judgeaudit.outcome import sum_calls

    judge, panel = CallStats(made=10, narrowed_to=2), CallStats(made=5, narrowed_to=4)
    assert judge.merge([panel, CallStats(made=1)]).narrowed_to == 2
    summed = sum_calls([judge.as_dict(), panel.as_dict(), CallStats(made=1).as_dict()])
    assert summed["narrowed_to"] == 2 and summed["made"] == 16  # the fewest, not a sum
    line = calls_text({"calls": summed})
    assert "at most 2 at a time after timeouts in the server's queue" in line
    assert "at a time" not in calls_text({"calls": CallStats(made=3).as_dict()})



def test_a_width_that_keeps_timing_out_is_tried_again_ever_more_rarely():
    """A server that keeps 3 slots: the client narrowed from 4 and won the 4th slot back
    after 12 answers in a row, timed out there, narrowed, and so on: a timeout (and its
    retries) every ~20 answers for the whole run (before: 15 narrowings in 300 calls,
    benchmarks/results/queueing_cycle.json). Now each retry of that width waits twice as
    many answers as the last; a width that answers is free again. The client's own
    bookkeeping, driven without timing."""
    client = Client(make_provider("sim", "", {}), concurrency=6)
    client._reached = True

    def time_out() -> None:  # an attempt sent after the last narrowing timed out
        client._note_timeout(started=max(0.0, client._narrowed_at + 1e-6))

    def answers_until_width(width: int) -> int:
        n = 0
        while client.sending_at_most < width:
            client._widen()
            n += 1
        return n

    time_out()
    assert client.sending_at_most == 3 and client._ceiling == 6
    assert answers_until_width(4) == 12  # below the width that timed out: the usual run
    time_out()  # 4 is one too many
    assert client.sending_at_most == 2 and client._ceiling == 4
    waits = []
    for _ in range(4):
        waits.append(answers_until_width(4))
        time_out()  # the 4th slot times out again
    # 2 -> 3 takes 8 answers; 3 -> 4 takes 12 x 1, 2, 4, 8
    assert waits == [8 + 12, 8 + 24, 8 + 48, 8 + 96]
    assert client._patience == 16
    # The other job is gone: it answers at 4, which then takes the patience to prove once;
    # widths above it take the usual 4 x width.
    answers_until_width(4)
    assert answers_until_width(5) == 4 * 4 * 16 and client._ceiling is None
    assert answers_until_width(6) == 4 * 5
