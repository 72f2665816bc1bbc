"""The one client every model call passes through: cache, retries with backoff and jitter,
bounded concurrency, in-flight de-duplication, and call/token/cost accounting."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import math
import os
import random
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from judgeaudit.llm.base import (
    Provider,
    ProviderError,
    Request,
    RequestRejected,
    Response,
    cut_reason,
    has_lone_surrogate,
    legacy_request_key,
    limit_sent,
    request_key,
    sanitize,
)
from judgeaudit.llm.cache import Cache
from judgeaudit.llm.redact import known_secrets, mask_data, mask_known, mentions_known, redact
from judgeaudit.outcome import answers_read as _answers_read
from judgeaudit.results_file import usd_value

log = logging.getLogger("judgeaudit.llm")

# Longest response text kept (characters): a server that ignores max_tokens must not fill the
# cache or the results; longer text is cut and the answer marked invalid. Override with
# $JUDGEAUDIT_MAX_RESPONSE_CHARS or Client(max_response_chars=...).
MAX_RESPONSE_CHARS = 100_000


def classify(exc: BaseException) -> tuple[str, bool, float | None]:
    """(kind, retryable, retry_after) of a failed attempt."""
    if isinstance(exc, ProviderError):
        return exc.kind, exc.retryable, exc.retry_after
    if isinstance(exc, _Timeout | TimeoutError):
        return "timeout", True, None
    if isinstance(exc, ConnectionError):
        return "connection", True, None
    return "other", False, None


class CallFailed(Exception):
    """A call that still failed after every retry (or failed fatally). `kind` is the kind of
    its last failed attempt (see `judgeaudit.llm.base.ERROR_KINDS`); `gave_up`: it was sent
    and used up its retries (the breaker's answer rate counts it, `AnswerWindow`)."""

    def __init__(self, message: str, *, fatal: bool, kind: str = "other",
                 gave_up: bool = False):
        super().__init__(message)
        self.fatal = fatal
        self.kind = kind
        self.gave_up = gave_up
        # never sent (set by the batcher: a batch line not submitted); the client marks its
        # own calls in `_UNSENT`
        self.not_sent = False


@dataclass
class CallStats:
    """What one client's calls came to. Every call through `Client.call` ends as exactly one
    of `made`, `cached`, `failed` or `planned`, so made + cached + failed + planned = calls
    asked:

    - made: answered by the provider through this call's own attempts (paid for);
    - cached: answered without a provider call of its own: from the cache, or by sharing an
      identical call already in flight that succeeded;
    - failed: no answer: gave up after retries, failed fatally, refused because an earlier
      call failed fatally, not sent because the server was unreachable or had stopped
      answering (`not_sent`, see `RetryPolicy.stop_after`), shared an in-flight call that
      failed, or was cancelled;
    - planned: not sent: the client was planning (`Client.planner`, `--plan-only`) and the
      request was written to the plan instead (a non-fatal `CallFailed` of kind "planned").

    `retries` counts attempts after a retryable error (each reached the provider: setup such
    as an SDK import is not timed), `retried` the same by the kind of the error each came
    after (a calls line said "20 retries" without the cause); `errors` counts every failed
    attempt by kind (`ERROR_KINDS`: rate_limit, server, timeout, connection, malformed,
    auth, bad_request, too_long, refused, other) and `first_error` keeps the first one's
    message (redacted, at most 300 chars).
    `not_sent` counts the failed calls that were never sent (counted in `failed` too);
    `not_sent_why` says why when the spend cap (`SpendCap`), a server asking to wait for
    hours (`RetryPolicy.longest_wait`) or one answering almost no call (`AnswerWindow`)
    stopped them; `narrowed_to` is the fewest calls sent at
    a time after calls timed out in the server's queue (`Client._note_timeout`), None when
    the client never narrowed. `usage_estimated` counts the priced calls whose server sent no
    token counts: their tokens (and so the cost and the spend cap) are estimated from
    characters (`plan.estimated_usage`), not counted. `unreadable` counts the answers (made
    or cached) a judge could not read as a verdict (`Client.note_verdict`), each answer once
    however many probes read it: a count of the distinct answers read (`answers_read`:
    made + cached - shared; made + cached counts every reading). Every command's
    outcome can fail a judge that answers garbage past --max-failed; `first_unreadable` says
    why the first of them could not be read (the answer's start, secrets masked).
    `cancelled` counts the failed calls that a cancellation ended (Ctrl-C, SIGTERM: the run
    was interrupted), not the server: an interrupted run read "57 failed" with no error.
    `shared` counts the cached calls that were a request this client had asked already (in
    flight, or answered earlier in the run: probes asking the same baseline verdict), so
    "from cache" means earlier runs' answers only: a first run read "320 from cache".
    `kept_in_flight` counts the calls in flight at an interruption whose answers arrived in
    the grace period after it and were cached (`Stopping`); `given_up_in_flight` those the
    end of the grace (or a second signal) cut off, counted in `cancelled` too.
    """

    made: int = 0
    cached: int = 0
    retries: int = 0
    failed: int = 0
    not_sent: int = 0
    planned: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    usage_estimated: int = 0
    unreadable: int = 0
    cancelled: int = 0
    shared: int = 0
    # calls in flight when a run was told to stop (`STOPPING`): answered within the grace
    # period and stored in the cache (a re-run does not pay for them again), or cut off
    kept_in_flight: int = 0
    given_up_in_flight: int = 0
    # failed calls that were a too-long refusal kept in the cache (not sent again)
    refused_cached: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    retried: dict[str, int] = field(default_factory=dict)
    # batch=on: the batches submitted (or resumed) whose answers this run has not read yet,
    # id -> requests. After an interruption they are still open at the provider, which
    # answers and bills them; the same command again collects them (`batch.Batcher._resume`)
    open_batches: dict[str, int] = field(default_factory=dict)
    first_error: str | None = None
    first_unreadable: str | None = None
    not_sent_why: str | None = None
    narrowed_to: int | None = None
    # which price `cost_usd` is at (`price_rate`): "list", "batch" (the built-in list price
    # halved for batch=on), "spec" (price_in/price_out as given), "spec_batch" (the same with
    # batch=on: not halved, the spec's price is the rate billed), "mixed"; None unpriced. A
    # batch run's calls line said "at list prices" for half of them.
    price_rate: str | None = None

    @property
    def answers_read(self) -> int:
        """The distinct answers read: made + cached - shared (`outcome.answers_read`), the
        total `unreadable` is a count of; made + cached counts a shared answer once per
        probe that read it."""
        return _answers_read(vars(self))

    def as_dict(self) -> dict:
        """The counts as written to results.json, with `answers_read` (derived, not a field):
        the total of `unreadable`, stated where it is counted, which also tells a document
        whose `unreadable` counts each answer once from one written before
        (`outcome.unreadable_share`)."""
        d = asdict(self)
        d["answers_read"] = self.answers_read
        d["cost_usd"] = usd_value(self.cost_usd)  # no float residue in machine output
        d["errors"] = dict(sorted(self.errors.items()))
        d["retried"] = dict(sorted(self.retried.items()))
        return d

    def record_error(self, kind: str, message: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1
        if self.first_error is None:
            self.first_error = redact(message)[:300]

    def merge(self, others: Iterable[CallStats] = ()) -> CallStats:
        """The sum of several clients' stats (a judge and its panel), as a new CallStats:
        `a.merge([b, c])` or `CallStats.merge([a, b, c])`. Counts and tokens add up, error
        kinds merge, the first error is the first one met in order; cost is None when no
        client priced its calls."""
        items = [self, *others] if isinstance(self, CallStats) else [*self, *others]
        out = CallStats()
        for st in items:
            for f in fields(CallStats):
                mine, theirs = getattr(out, f.name), getattr(st, f.name)
                if theirs is None:
                    continue
                if f.name == "narrowed_to":  # the fewest at a time
                    setattr(out, f.name, min(theirs, mine or theirs))
                elif f.name == "price_rate":  # judges priced at different rates: "mixed"
                    from judgeaudit.llm.plan import combine_rates  # a free one is no rate

                    setattr(out, f.name, combine_rates(mine, theirs))
                elif isinstance(theirs, dict):
                    for k, v in theirs.items():
                        mine[k] = mine.get(k, 0) + v
                elif isinstance(theirs, str):  # the first one met
                    setattr(out, f.name, mine if mine is not None else theirs)
                else:  # counts, tokens, cost (None until a client priced its calls)
                    setattr(out, f.name, (mine or 0) + theirs)
        return out


# The most retries per call a RetryPolicy takes (also the Python API's `retry=` bound).
MAX_RETRIES = 20

# A shared wait (`Client._pause`) longer than this many seconds is said to the user (a log
# warning, on stderr in the CLI): a run that sat out a capped 120 s wait said nothing.
NOTICE_WAIT = 10.0

# The call under way in this task (`Client._call`): set when its own request was never sent
# (`Client._note_unsent`), so the calls sharing it count as not sent too: an audit stopped
# by the spend cap read "823 failed (527 not sent)" where 296 more were probes sharing a
# request that was never sent (217 made, the server got 217 requests).
_UNSENT: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "judgeaudit_unsent", default=None)


def _check_seconds(name: str, value: object, finite: bool = True) -> None:
    """ValueError naming RetryPolicy's field unless `value` is a number of seconds >= 0
    (finite unless `finite` is False)."""
    ok = (not isinstance(value, bool) and isinstance(value, int | float)
          and not math.isnan(value) and value >= 0 and (not finite or math.isfinite(value)))
    if not ok:
        what = "a finite number of seconds >= 0" if finite else "a number of seconds >= 0"
        raise ValueError(f"RetryPolicy.{name}: expected {what}, got {value!r}")


@dataclass
class RetryPolicy:
    """How a client retries a failed attempt, and when it stops sending at all.

    `stop_after`: a server that cannot be reached, or has stopped answering, is not asked
    for the rest of the run; the remaining calls fail at once (`CallStats.not_sent`) instead
    of each waiting out its retries (minutes for a run of hundreds of calls against a wrong
    port). The client stops when, before the server has answered anything, its attempts have
    failed on connection errors or timeouts for as long as one call's retries wait
    (`window`: a wrong port in about 30 s, a host dropping connections in about 40 s, where
    waiting for one call of many to use up its own retries took minutes), or when
    `stop_after` calls in a row give up with no call answered between them, or when fewer
    than `RATE_FLOOR` (10%) of the last `rate_window` finished calls, max(50, 5 x stop_after),
    were answered (`AnswerWindow`: a server answering 1 call in 100 answers between the
    others, so they never gave up "in a row"). It stops too
    when its first `stop_after` answers are all unusable (`Response.invalid`: a reasoning
    model that spends the whole token budget thinking, a refusal, an answer over the size
    cap): every later call would be paid for and wasted the same way. None: max(8, 2 x
    concurrency); 0: never stop. A server asking to wait longer than `longest_wait` (a
    Retry-After, or a 429 message "try again in 6h0m0s": a daily quota) stops the client
    too, unless `stop_after` is 0."""

    max_retries: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    # Longest Retry-After we honour; a server asking for more is capped here.
    max_retry_after: float = 120.0
    stop_after: int | None = None
    # A server asking to wait longer than this (a daily or hourly quota) is not asked again in
    # this run (unless stop_after is 0): waiting hours in a running process helps nobody.
    longest_wait: float = 600.0

    def __post_init__(self) -> None:
        """Refuse a policy that cannot be meant, naming the field (the CLI and the Python API
        bounded the retries; the policy given directly did not: max_retries=10**6 retried a
        dead server for days, a negative delay raised deep inside asyncio.sleep)."""
        n = self.max_retries
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_RETRIES:
            raise ValueError(f"RetryPolicy.max_retries: expected a whole number from 0 to "
                             f"{MAX_RETRIES}, got {n!r}")
        for name in ("base_delay", "max_delay", "max_retry_after"):
            _check_seconds(name, getattr(self, name))
        if self.base_delay > self.max_delay:
            raise ValueError(f"RetryPolicy.base_delay: expected at most max_delay "
                             f"({self.max_delay!r} s), got {self.base_delay!r}")
        # a threshold, not a wait: inf says "never stop for a long Retry-After"
        _check_seconds("longest_wait", self.longest_wait, finite=False)
        k = self.stop_after
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
            raise ValueError(f"RetryPolicy.stop_after: expected None or a whole number >= 0 "
                             f"(0: never stop), got {k!r}")

    def rate_window(self, limit: int) -> int:
        """How many finished calls the answer-rate rule looks at (`AnswerWindow`) for the
        breaker's count `limit` (`Client._limit`): 50 at least, so a server failing 11% of
        prompts (answering about 44 of 50) is nowhere near the floor (5 of 50), nor is one
        answering half of them (the chance of fewer than 5 of 50 is about 2e-10)."""
        return max(RATE_WINDOW_MIN, 5 * limit)

    def window(self) -> float:
        """Seconds one call's retries wait in all, without jitter (about 31 s by default)."""
        return sum(min(self.max_delay, self.base_delay * 2**k) for k in range(self.max_retries))

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * (2**attempt))
        return backoff * rng.uniform(0.5, 1.5)  # jitter: spread retries of many callers


# The answer-rate rule of the breaker (`AnswerWindow`): fewer than RATE_FLOOR of the last
# `RetryPolicy.rate_window` finished calls answered stops the client.
RATE_FLOOR = 0.10
RATE_WINDOW_MIN = 50


class AnswerWindow:
    """Whether each of the last finished calls was answered, in the order the calls were
    first sent (not the order they finished): a server that fails 11% of prompts answers
    the others in a few seconds while each failing call retries for about 30 s, so in
    finishing order the failures come in a bunch at the end of a stage (54 in a row of 480)
    and a window in that order read "nothing answered". In sending order the window holds
    the last calls before the first one still under way, which mix as the prompts do (a
    slow call holds back the calls after it until it ends: the window lags, it never
    skips).

    `open` numbers a call as it starts; `close` says how it ended: True answered, False gave
    up after its retries, None neither (not sent, refused for its own prompt, cancelled,
    fatal), which is left out."""

    def __init__(self) -> None:
        self._next = 0  # the number of the next call opened
        self._frontier = 0  # the first call not yet settled into `_last`
        self._ended: dict[int, bool | None] = {}  # closed calls past the frontier
        self._last: deque[bool] = deque()  # settled outcomes, oldest first
        self.answered = 0  # answered calls in `_last`

    def open(self) -> int:
        seq, self._next = self._next, self._next + 1
        return seq

    def close(self, seq: int, answered: bool | None, size: int) -> None:
        """Call `seq` ended; settle every call up to the first still under way, keeping
        the last `size` outcomes."""
        self._ended[seq] = answered
        while self._frontier in self._ended:
            outcome = self._ended.pop(self._frontier)
            self._frontier += 1
            if outcome is None:
                continue
            self._last.append(outcome)
            self.answered += outcome
            while len(self._last) > size:
                self.answered -= self._last.popleft()

    def low(self, size: int) -> bool:
        """Whether the last `size` settled calls are all in and fewer than `RATE_FLOOR` of
        them were answered."""
        return len(self._last) >= size and self.answered < RATE_FLOOR * size

    def clear(self) -> None:
        """Forget the outcomes (a fresh start: `Client.reset_breaker`); calls under way
        still settle in order."""
        self._last.clear()
        self.answered = 0


# Amounts below this many USD are float residue, not money: holding and releasing ceilings
# left $0.00000000000000105 "held" in a spend cap's sum.
USD_RESIDUE = 1e-9


def _usd(x: float) -> str:
    """Dollars to 4 decimals, or 3 significant digits below $0.01 ($0.0000128, not
    "$0.0000"), so that the spend cap's sum can be added up; float residue (below
    `USD_RESIDUE`) is $0.0000."""
    if abs(x) < USD_RESIDUE:
        x = 0.0
    if x >= 0.01 or x <= 0:
        return f"${x:.4f}"
    return f"${x:.{max(4, 2 - math.floor(math.log10(x)))}f}"


class SpendCap:
    """A limit in USD on what a session's calls may cost at their judges' prices (list, the
    batch rate or the spec's: `price_rate`), shared by its
    judges' clients (`Session(max_cost=...)`, `--max-cost`: a CLI run and a sync API call are
    one command in a session of their own). A session's later command starts with what the
    earlier ones left (`new_command`). Each call holds its ceiling
    while it is under way (`hold`: the prompt at characters / 4, the completion at its
    max_tokens) and is not sent when that could take the spend past `limit`; then no more
    calls are sent and the rest fail as not sent. A call that would fit once the calls under
    way have settled at their real cost (below their ceilings) waits for them (`settled`)
    instead of stopping the run, so concurrency does not leave part of the cap unspent. So
    the spend stays under the limit, unless a prompt has more tokens than characters / 4
    (code, other languages). The same holds for a batch: only the lines that fit are
    submitted (a batch line does not wait: the lines under way may take hours)."""

    def __init__(self, limit: float):
        if isinstance(limit, bool) or not (isinstance(limit, int | float) and limit > 0):
            raise ValueError(f"max_cost: expected a positive number of USD, got {limit!r}")
        self.limit = float(limit)
        self.spent = 0.0
        self.held = 0.0  # the ceilings of the calls under way
        self.refused: float | None = None  # the ceiling of the first call that did not fit
        self.at_stop: tuple[float, float] | None = None  # (spent, held) when it did not
        self.before = 0.0  # what earlier commands of the session spent
        self._waiters: list[asyncio.Future[None]] = []

    def reset(self) -> None:
        """Forget everything spent: the whole limit is left again."""
        self.spent, self.held, self.refused, self.before = 0.0, 0.0, None, 0.0
        self.at_stop = None
        self._waiters = []

    def new_command(self) -> None:
        """A command of the session starts: it may spend what the earlier ones left (a
        session's cap was the cap of each command, so three commands could spend three
        times `max_cost`)."""
        self.before, self.held, self.refused, self.at_stop = self.spent, 0.0, None, None
        self._waiters = []

    def could_fit(self, ceiling: float) -> bool:
        """True when the call would fit once the calls under way have settled (they cost at
        most their ceilings and at least nothing), so it is worth waiting for them."""
        return self.held > 1e-12 and self.spent + ceiling <= self.limit

    async def settled(self) -> None:
        """Wait until a call under way releases its ceiling (`release`)."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        await fut

    def hold(self, ceiling: float) -> bool:
        """Reserve a call's ceiling, or False when it could take the spend past the limit."""
        if self.spent + self.held + ceiling > self.limit:
            return False
        self.held += ceiling
        return True

    def refuse(self, ceiling: float) -> None:
        """A call of `ceiling` did not fit: sending stops. The first such is kept with the
        spend and holds of that moment (`why`)."""
        if self.refused is None:
            self.refused, self.at_stop = ceiling, (self.spent, self.held)

    def release(self, ceiling: float) -> None:
        self.held = self.held - ceiling
        if self.held < USD_RESIDUE:  # float residue of adding and taking back ceilings
            self.held = 0.0
        waiters, self._waiters = self._waiters, []
        for fut in waiters:  # woken after the releasing caller has counted its cost
            if not fut.done():
                fut.get_loop().call_soon_threadsafe(_set_done, fut)

    def over(self) -> str:
        """'' while the spend is within the limit, else what it spent in all and by how much
        it passed the cap, and why it could: a capped audit spent $50.0080 of a $50 cap and
        did not say so. A call holds an estimate of its cost (`body_ceiling`: the prompt at
        characters / 4), which a prompt with more tokens than that passes."""
        if self.spent - self.limit < USD_RESIDUE:
            return ""
        return (f"; it spent {_usd(self.spent)} in all, {_usd(self.spent - self.limit)} over "
                "the cap: each call sent held an estimate of its cost on the cap until it was "
                "answered (prompt tokens at characters / 4, completions at max_tokens), and "
                "the prompts had more tokens than that")

    def why(self) -> str:
        """The sum that stopped sending, as it stood then (`refuse`), in figures a user can
        add up (a small ceiling shown as "$0.0000", a batch's request, explained nothing),
        and what the run spent in all where that passed the cap (`over`)."""
        spent, held = self.at_stop or (self.spent, self.held)
        # each term named, a term under USD_RESIDUE left out: "$0.8910 + $0.0000 + $0.1497 is
        # over the cap" showed a sum of terms no one could name, one of them nothing
        terms = [f"{_usd(x)} {what}" for x, what in (
            (spent, "spent"), (held, "held by calls under way")) if x >= USD_RESIDUE]
        nxt = "" if self.refused is None else (
            f"; the next call could cost up to {_usd(self.refused)}, and "
            f"{' + '.join([*terms, f'{_usd(self.refused)} for it'])} is over the cap")
        under_way = (f", {_usd(held)} held by calls under way (each at its most: its "
                     "max_tokens)" if held >= USD_RESIDUE else "")
        earlier = (f", {_usd(self.before)} of it by earlier commands of the session"
                   if self.before >= USD_RESIDUE else "")
        scope = ("the cap counts this session's commands together"
                 if self.before >= USD_RESIDUE else "the cap counts this run's calls only")
        return (f"the spend cap is reached ({_usd(spent)} spent{earlier}{under_way} of "
                f"max_cost ${self.limit:g} when sending stopped{nxt}{self.over()}; {scope}, "
                "and a re-run has "
                "a cap of its own and pays again only for the calls its cache does not hold "
                "(all of them without a cache): re-run with max_cost (--max-cost) X to spend "
                "up to X more)")


def price_rate(provider: Any) -> str | None:
    """Which price `provider.price_per_mtok` is (`CallStats.price_rate`): `plan.price_basis`,
    with "spec_batch" for a spec's price_in/price_out under batch=on, used as given (the
    built-in price is halved for batch=on; a spec's is the rate the user says they pay)."""
    from judgeaudit.llm.plan import FREE, price_basis

    rate = price_basis(provider)
    if rate is not None and "price_in" not in getattr(provider, "params", {}) and not any(
            provider.price_per_mtok):  # the embedded model: it costs nothing, at no list price
        return FREE
    if rate == "spec" and getattr(provider, "batch", None) is not None:
        return "spec_batch"
    return rate


def _set_done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class CallCap:
    """A limit on how many calls one run sends to a judge (an adaptive audit's `--max-calls`):
    a call past it is not sent (it fails as not sent, kind "call_cap"). Cached answers are
    free and do not count; a retry is the same call, so calls already sent still get theirs
    (unlike a stopped client's)."""

    def __init__(self, limit: int):
        if isinstance(limit, bool) or not (isinstance(limit, int) and limit > 0):
            raise ValueError(f"max_calls: expected a positive whole number, got {limit!r}")
        self.limit = limit
        self.sent = 0
        self.refused = 0  # calls not sent for it

    def take(self) -> bool:
        """Count one call about to be sent, or False when it would be one too many."""
        if self.sent >= self.limit:
            return False
        self.sent += 1
        return True

    def why(self) -> str:
        return (f"the call cap is reached ({self.sent} calls sent of max_calls {self.limit}; "
                "run again with a higher max_calls: finished calls are cached)")


def default_max_response_chars() -> int:
    """The response size cap: $JUDGEAUDIT_MAX_RESPONSE_CHARS, else MAX_RESPONSE_CHARS."""
    env = os.environ.get("JUDGEAUDIT_MAX_RESPONSE_CHARS")
    if env is None or not env.strip():
        return MAX_RESPONSE_CHARS
    try:
        value = int(env)
    except ValueError:
        raise ValueError(f"JUDGEAUDIT_MAX_RESPONSE_CHARS={env!r}: expected a whole number of "
                         "characters") from None
    if value < 1:
        raise ValueError(f"JUDGEAUDIT_MAX_RESPONSE_CHARS={env!r}: expected >= 1")
    return value


class _Timeout(Exception):
    """An attempt that ran out of the client's time (whatever the provider raised then)."""


class Stopping:
    """A run told to stop (the CLI's first Ctrl-C or SIGTERM, `cli.runner.terminate_run`)
    sends nothing new, while the calls in flight get a short grace period to finish: their
    answers, already paid for at a hosted API, are cached as any answer is, so a re-run
    does not pay for them again (they were cancelled with the run and paid twice). `on`: no
    call is sent from now on (`Client._not_while_stopping`); `hard`: a second signal cut the
    grace short, so no answer is written to the cache from then on. `sending` counts the
    calls in a provider's `generate` that the grace waits for: not the embedded model's
    (`waits_for`); `busy` all of them. `held`: the calls that came to be sent after the stop
    and were held back (left unsent), so the run cannot finish (`cli.runner._grace`).
    `errored`: the calls that ended in an error (a server's 500, a timeout) after the stop,
    none retried (the stop line says them apart from those that answered). Set
    from the signal handler, which runs in the event loop's thread (the main thread),
    between two bytecodes: a cache write under way finishes first."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """A new run: nothing stopped, nothing in flight counted."""
        self.on = self.hard = False
        self.sending = self.kept = self.given_up = self.held = self.busy = self.errored = 0

    @staticmethod
    def waits_for(provider: Provider) -> bool:
        """Whether the grace waits for this provider's calls in flight: not for the embedded
        model's (`local`): its forward pass runs in a worker thread that cannot be stopped,
        costs no money, and the calls queued behind it would start new passes meanwhile."""
        return provider.name != "local"

    @contextlib.contextmanager
    def sending_call(self, provider: Provider, stats: CallStats) -> Any:
        """Around one request in a provider's `generate`: counted in flight while there (when
        the grace waits for it); one cut off by the stop (the end of the grace, a second
        signal, or at once without one) counted as given up, here and in `stats`."""
        counted = self.waits_for(provider)
        self.sending += counted
        self.busy += 1
        try:
            yield
        except asyncio.CancelledError:
            if self.on:
                self.given_up += 1
                stats.given_up_in_flight += 1
            raise
        except Exception:
            if self.on and counted:  # came back after the stop, with an error
                self.errored += 1
            raise
        finally:
            self.sending -= counted
            self.busy -= 1


# The process's one: the CLI runs one pipeline at a time (`cli.runner.run_async` resets it).
STOPPING = Stopping()


class Client:
    """Wraps one provider. `call` is the single entry point; `map` runs many with a callback
    per finished call (for progress bars).

    Retries by kind of error: 408/409/425/429, 5xx, timeouts, connection failures and
    malformed bodies are retried with backoff (Retry-After honoured up to
    `RetryPolicy.max_retry_after`, and by every call: after a server asked to wait, no
    attempt of any call starts before the wait has passed, `_pause`); a non-retryable error
    (auth, bad request, a provider's FatalProviderError) fails the call at once, and no later
    call of this client reaches the provider; a request the server refuses on its own
    (`RequestRejected`: a prompt over the model's context or one its content filter blocks)
    fails that call only, at once. A server that cannot be reached or stops answering is not
    asked again (`RetryPolicy.stop_after`).
    Calls that time out while the server answers others halve the calls sent at a time
    (`sending_at_most`, `_note_timeout`); answers in a row win them back one by one.
    Responses are cleaned at this boundary (lone surrogates replaced) and capped at
    `max_response_chars` (see `MAX_RESPONSE_CHARS`) before they are cached."""

    def __init__(
        self,
        provider: Provider,
        cache: Cache | None = None,
        *,
        concurrency: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        seed: int = 0,
        max_response_chars: int | None = None,
    ):
        if concurrency is not None and (isinstance(concurrency, bool) or concurrency < 1):
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if timeout is not None and not (timeout > 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout}")
        if max_response_chars is not None and max_response_chars < 1:
            raise ValueError(f"max_response_chars must be >= 1, got {max_response_chars}")
        self.provider = provider
        self.cache = cache
        self.concurrency = concurrency or provider.default_concurrency
        self._sem = asyncio.Semaphore(self.concurrency)
        # Slots given up after calls timed out on a server that answers others
        # (`_note_timeout`): owed permits are kept as in-flight calls return them.
        self.sending_at_most = self.concurrency
        self._slots_owed = 0
        self._narrowed_at = -math.inf
        self._answered_since = 0  # answers since the last change of `sending_at_most`
        # The width calls last timed out at, and how many times the usual run of answers it
        # takes to try that width again (doubled each time it times out again): a server
        # whose slots stay fewer is not re-probed every few answers (`_widen`).
        self._ceiling: int | None = None
        self._patience = 1
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.max_response_chars = max_response_chars or default_max_response_chars()
        self.stats = CallStats()
        self._rng = random.Random(seed)
        self._inflight: dict[str, asyncio.Future[Response]] = {}
        # in-flight calls whose request was never sent: their sharers count as not sent
        self._unsent_futs: weakref.WeakSet[asyncio.Future[Response]] = weakref.WeakSet()
        self._asked: set[str] = set()  # keys answered so far (`CallStats.shared`)
        # Without a cache (or with one that stopped storing), the answers of this client's
        # run (`RunMemo`): --no-cache paid again for every request asked twice in a run (a
        # default audit: 1040 calls for 720 distinct requests).
        self._memo = RunMemo()
        # After a fatal error (bad key, bad request) no further call reaches the provider.
        self._fatal: CallFailed | None = None
        # The breaker (`RetryPolicy.stop_after`): has the server answered anything (an answer
        # or an HTTP error), calls given up in a row since the last answer, and why calls
        # are no longer sent (None: they are).
        self._reached = False
        self._given_up = 0
        # When a call last got its answer (time.monotonic()): a call that gives up counts
        # toward "stopped answering" only when none was answered since it was first sent.
        self._last_answer = -math.inf
        self._stopped: CallFailed | None = None
        self._first_failure: float | None = None  # of an attempt, while nothing answered
        # The answer rate of the last finished calls, in sending order (`AnswerWindow`), and
        # the last give-up's (kind, message), quoted when the rate stops the client.
        self._answers = AnswerWindow()
        self._last_give_up: tuple[str, str] = ("other", "")
        # Answers made so far that could not be used, while none could (`_note_unusable`).
        self._unusable: int | None = 0
        # The same watch over what the judge could read (`note_verdict`): an empty or prose
        # answer is usable to the client but gives no verdict.
        self._unread: int | None = 0
        # The answers of this run (by cache key) read as no verdict: one answer that several
        # probes read (the audit's shared baseline) is one unreadable answer, counted once.
        self._unread_keys: set[str] = set()
        # What this command may spend (`SpendCap`), shared with the other judges' clients.
        self.spend_cap: SpendCap | None = None
        # How many calls this run may send (`CallCap`; an adaptive audit's --max-calls).
        self.call_cap: CallCap | None = None
        self._stop_event: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        # A server's Retry-After limits the account, not the one call that got it: no
        # attempt of any call starts before this time.monotonic() (`_pause`, `_paused`).
        self._pause_until = -math.inf
        self._pause_said = False  # the wait under way was said to the user
        # Called with each request that got its answer (cached or not): progress bars for
        # pipelines whose number of calls is only known as they go (e.g. HUB-J discover).
        self.observers: list[Callable[[Request], None]] = []
        # Planning (`judgeaudit --plan-only`): a cache miss is recorded here instead of sent
        # and fails as a non-fatal CallFailed of kind "planned" (judgeaudit.llm.plan.Planner).
        self.planner: Any = None
        # Batch mode (a provider whose `batch_backend()` is not None, e.g. batch=on): cache
        # misses go to a Batcher (judgeaudit.llm.batch), one per event loop.
        self._batcher: Any = None
        self._sendable = False  # `Provider.check_sendable` passed (before the first send)

    @property
    def stopped(self) -> str | None:
        """Why this client no longer sends calls (the breaker tripped:
        `RetryPolicy.stop_after`), or None while it does."""
        return None if self._stopped is None else str(self._stopped)

    @property
    def stop_kind(self) -> str | None:
        """The kind of failure that stopped this client ("spend_cap" for the spend cap), or
        None while it sends."""
        return None if self._stopped is None else self._stopped.kind

    def reset_breaker(self) -> None:
        """Give the server a fresh start (a new command of a `Session`: it may be back up).
        A fatal error (a bad key, a bad request) is not reset: it would fail again."""
        self._reached, self._given_up, self._stopped = False, 0, None
        self._first_failure = self._stop_event = None
        self._answers.clear()

    def new_run(self) -> None:
        """Forget which requests the last run asked (`CallStats.shared`) and, without a cache,
        their answers: a `Session(cache=False)` runs each command on calls of its own. Its
        unreadable answers are counted again too: `CallStats` starts from zero."""
        self._asked, self._memo, self._unread_keys = set(), RunMemo(), set()

    async def call(self, request: Request) -> Response:
        resp = await self._call(request)
        for obs in self.observers:
            obs(request)
        return resp

    def _count_failed(self, exc: BaseException) -> None:
        self.stats.failed += 1
        if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt):
            self.stats.cancelled += 1

    def key(self, request: Request) -> str:
        """The cache key of `request` for this client's provider."""
        return request_key(self.provider, request)

    def mark_invalid(self, request: Request, reason: str) -> None:
        """Record that the cached answer to `request` could not be used (unparseable, empty,
        over the size cap), so `judgeaudit cache forget --invalid` can drop it and a later
        run asks again. A no-op without a cache or when the answer is not cached."""
        if self.cache is not None:
            self.cache.mark_invalid(self.key(request), redact(reason))

    async def _call(self, request: Request) -> Response:
        key = request_key(self.provider, request)
        while True:
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is None and self.cache is not None:
                hit = self._legacy_hit(key, request)
            if hit is None and key in self._asked:  # no cache, or one that stopped storing
                hit = self._memo.get(key)
            if hit is not None:
                self.stats.cached += 1
                self.stats.shared += key in self._asked
                self._asked.add(key)
                if self.planner is not None:
                    self.planner.note_cached(key)
                # Entries from before the text was cleaned here: clean them on the way out
                # (one stored before keys were masked too: it goes on to the results).
                if (len(hit.text) > self.max_response_chars or has_lone_surrogate(hit.text)
                        or mentions_known(hit.text)):
                    hit = self._clean(hit)
                return hit
            shared = self._inflight.get(key)
            if shared is None:
                break
            # An identical call is under way: share its outcome.
            try:
                resp = await asyncio.shield(shared)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if shared.cancelled() and task is not None and not task.cancelling():
                    continue  # its owner was cancelled, not us: ask again ourselves
                self.stats.failed += 1
                self.stats.cancelled += 1
                self.stats.not_sent += shared in self._unsent_futs
                raise
            except BaseException as exc:
                self._count_failed(exc)
                # the request this call shared was never sent: nor was this call
                self.stats.not_sent += shared in self._unsent_futs
                raise
            self.stats.cached += 1
            self.stats.shared += 1
            return resp
        refusal = getattr(self.cache, "refusal", None)
        refused = refusal(key) if refusal is not None else None
        if refused is not None:  # a too-long refusal kept (ingest, a live run): fails as it did
            if self.planner is not None:
                self.planner.note_cached(key)
            self.stats.failed += 1
            self.stats.refused_cached += 1
            why = (f"{refused[1]} (a refusal kept in the cache from an earlier run or ingest, "
                   "not sent again; `judgeaudit cache forget --invalid` or `judgeaudit cache "
                   "clear` asks it again, e.g. after the server's context was raised)")
            self.stats.record_error(refused[0], why)
            raise CallFailed(why, fatal=False, kind=refused[0])
        if self.planner is not None:  # --plan-only: record the request instead of sending it
            self.planner.add(key, request, self.provider)
            self.stats.planned += 1
            raise CallFailed(f"{self.provider.name}: planned, not sent (--plan-only)",
                             fatal=False, kind="planned")
        batcher = self._batch()
        fut: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        unsent = [False]  # set by `_note_unsent` when this request is never sent
        mark = _UNSENT.set(unsent)
        try:
            try:
                if batcher is None:
                    resp = await self._call_with_retries(request)
                else:
                    resp = await self._call_batched(batcher, key, request)
            except BaseException as exc:
                if unsent[0] or getattr(exc, "not_sent", False):
                    self._unsent_futs.add(fut)
                self._count_failed(exc)
                if batcher is None:
                    self._keep_refusal(key, exc)
                raise
            self._account(resp, request)
            self._asked.add(key)
            if self.cache is not None and batcher is None and not STOPPING.hard:
                # (the batcher stored it already; after a second signal nothing is written)
                self.cache.put(key, self.provider.name, self.provider.model, resp)
                if STOPPING.on and self.cache.write_error is None:  # answered in the grace
                    self.stats.kept_in_flight += 1
                    STOPPING.kept += 1
            if self.cache is None or self.cache.write_error is not None:
                # a cache that cannot store (read-only, a full disk) paid again for every
                # request asked twice in the run, as --no-cache did before the memo
                self._memo.put(key, resp)
            self._note_unusable(resp)
        except asyncio.CancelledError:
            fut.cancel()  # waiters ask again themselves
            raise
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        else:
            fut.set_result(resp)
            return resp
        finally:
            _UNSENT.reset(mark)
            if self._inflight.get(key) is fut:
                del self._inflight[key]

    def _legacy_hit(self, key: str, request: Request) -> Response | None:
        """On a cache miss, the answer a cache made before the key named the server in one
        form (6d2dcc3) holds under the key of then: only for a base_url written in the spec
        that is not in that form (`URL/`, capitals, a default port), where that key names
        the same server (`legacy_request_key`); copied under `key` (`Cache.adopt`), so the
        next lookup is direct. Every other spec: None, with no second lookup."""
        legacy = legacy_request_key(self.provider, request)
        adopt = getattr(self.cache, "adopt", None)
        if legacy is None or legacy == key or adopt is None:
            return None
        return adopt(legacy, key)

    def _keep_refusal(self, key: str, exc: BaseException) -> None:
        """Keep a live call the server refused for its own prompt (over the model's context:
        `KEPT_REFUSALS`) in the cache's refusals, as ingest keeps a plan's: a re-run of
        evaluate or audit sent every such prompt again and got the same 400 each time. Only
        a refusal its provider marks `keep_refusal` (openai/anthropic's `ContextRefusal`: a
        remote model's context, a property of the request and the cache key): an embedded
        backend's length check depends on its ctx, kept out of the key, and a 413 on a
        proxy's body-size limit, so a kept one outlived its cause (raising ctx did nothing)."""
        from judgeaudit.llm.plan import KEPT_REFUSALS

        if (self.cache is None or not isinstance(exc, CallFailed) or exc.fatal
                or exc.kind not in KEPT_REFUSALS
                or not getattr(exc.__cause__, "keep_refusal", False)):
            return
        put = getattr(self.cache, "put_refusals", None)
        if put is not None:
            put([(key, exc.kind, str(exc))], provider=self.provider.name,
                model=self.provider.model)

    @property
    def batched(self) -> bool:
        """Whether cache misses go through the provider's batch API (`batch=on`): answers
        then come back in minutes to hours, a batch at a time."""
        make = getattr(self.provider, "batch_backend", None)
        return make is not None and make() is not None

    def _batch(self) -> Any:
        """This loop's Batcher when the provider runs in batch mode, else None."""
        make = getattr(self.provider, "batch_backend", None)
        backend = make() if make is not None else None
        if backend is None:
            return None
        loop = asyncio.get_running_loop()
        if self._batcher is None or self._batcher.loop is not loop:
            from judgeaudit.llm.batch import Batcher

            self._batcher = Batcher(backend, self.provider, cache=self.cache, stats=self.stats,
                                    clean=self._clean, max_retries=self.retry.max_retries)
        return self._batcher

    async def _call_batched(self, batcher: Any, key: str, request: Request) -> Response:
        """A cache miss through the provider's batch API: no semaphore, no per-call timeout
        (a batch may take hours); retries of expired or failed lines happen in the batcher.
        None joins a batch once the run is told to stop (`STOPPING`)."""
        await self._not_while_stopping(0)
        if self._fatal is not None:
            self._not_sent_after_fatal()
            raise CallFailed(str(self._fatal), fatal=True, kind=self._fatal.kind)
        self._check_sendable()
        self._count_call()
        held = await self._hold(request, wait=False)
        if self._stopped is not None:
            self._note_unsent()
            raise CallFailed(str(self._stopped), fatal=False, kind=self._stopped.kind)
        try:
            return await batcher.call(key, request)
        except CallFailed as exc:
            if exc.fatal and self._fatal is None:
                self._fatal = exc
            raise
        finally:  # the caller counts the cost (`_account`) before anything else runs
            self._release(held)

    async def _attempt(self, request: Request, attempt: int = 0,
                       sent: list[float] | None = None, after: str = "other") -> Response:
        """One attempt, inside the concurrency bound and after any wait the server asked of
        all calls (`_paused`); the timeout covers `generate` only. None is made once the
        breaker has stopped the client (`RetryPolicy.stop_after`). `sent` gets the time
        (time.monotonic()) the attempt went out; `after`: the kind of error a retry follows."""
        try:
            await self._slot()
        except asyncio.CancelledError:  # cancelled while waiting for a slot: never sent
            if attempt == 0:
                self._note_unsent()
            raise
        try:
            try:
                # Waiting with the slot held: when the wait ends, at most `concurrency`
                # calls go out, the rest as slots free up (no burst of every waiting call).
                await self._paused()
            except asyncio.CancelledError:  # cancelled while the server asked to wait
                if attempt == 0:
                    self._note_unsent()
                raise
            started = time.monotonic()
            if sent is not None:
                sent.append(started)
            try:
                return await self._send(request, attempt, after)
            except (ProviderError, _Timeout, TimeoutError) as exc:
                if classify(exc)[0] == "timeout":
                    self._note_timeout(started)
                raise
        finally:
            self._sem.release()

    async def _paused(self) -> None:
        """Wait until the wait a server asked for (`_pause`) has passed; cut short when the
        client stops sending (the breaker, the spend cap, a fatal error)."""
        while self._stopped is None and self._fatal is None:
            left = self._pause_until - time.monotonic()
            if left <= 0:
                return
            await self._backoff(left)

    def _pause(self, retry_after: float, kind: str) -> None:
        """A failed attempt's server asked to wait `retry_after` seconds (a 429's, or a 503's,
        Retry-After, or the wait its message names): that limits the account, so no attempt
        of any call starts before it has passed (capped at `RetryPolicy.max_retry_after`).
        Each call used to wait on its own while the others went out and got 429s of their
        own: 80 requests for 40 calls. A new wait longer than `NOTICE_WAIT` is said once."""
        wait = min(max(retry_after, 0.0), self.retry.max_retry_after)
        now = time.monotonic()
        if wait <= 0 or now + wait <= self._pause_until:
            return
        if now >= self._pause_until:  # a new wait, not one under way made longer
            self._pause_said = False
        self._pause_until = now + wait
        if self._pause_said or wait <= NOTICE_WAIT:
            return
        self._pause_said = True
        who = "rate limited by the server" if kind == "rate_limit" else (
            f"the server asked to wait after a {kind} error")
        asked = (f"it asked for {retry_after:.0f} s; capped at {wait:.0f} s"
                 if retry_after > wait else "as it asked")
        log.warning("%s: %s: waiting %.0f s (%s) before sending more calls",
                    self.provider.name, who, wait, asked)

    async def _slot(self) -> None:
        """One of the concurrency slots; a permit owed by a narrowing (`_note_timeout`) is
        kept instead, so fewer calls are in flight from then on."""
        await self._sem.acquire()
        while self._slots_owed > 0:
            self._slots_owed -= 1
            await self._sem.acquire()

    def _check_sendable(self) -> None:
        """The provider's check of what a call needs (`Provider.check_sendable`: a malformed
        key is bad input, exit 2), once, before the first call that is sent."""
        if not self._sendable:
            self.provider.check_sendable()
            self._sendable = True

    async def _send(self, request: Request, attempt: int, after: str = "other") -> Response:
        if self._fatal is not None:
            if attempt == 0:  # never sent (a retry of a sent call was sent already)
                self._not_sent_after_fatal()
            raise CallFailed(str(self._fatal), fatal=True, kind=self._fatal.kind)
        self._check_sendable()
        if attempt == 0:
            self._count_call()
        held = await self._hold(request)
        if self._stopped is not None:
            if attempt == 0:
                self._note_unsent()
            raise CallFailed(str(self._stopped), fatal=False, kind=self._stopped.kind)
        try:
            await self.provider.prepare()
            await self._not_while_stopping(attempt)  # last thing before the request goes out
            if attempt:
                self.stats.retries += 1  # counted as it is sent: a stopped retry is none
                self.stats.retried[after] = self.stats.retried.get(after, 0) + 1
            with STOPPING.sending_call(self.provider, self.stats):
                if self.timeout is None:
                    return await self.provider.generate(request)
                cm = asyncio.timeout(self.timeout)
                try:
                    async with cm:
                        return await self.provider.generate(request)
                except (Exception, asyncio.CancelledError) as exc:
                    if cm.expired() and not isinstance(exc, asyncio.CancelledError):
                        raise _Timeout(
                            f"{self.provider.name}: no response within {self.timeout:g}s "
                            "(client timeout)") from exc
                    raise
        finally:  # the caller counts the cost (`_account`) before anything else runs
            self._release(held)

    async def _not_while_stopping(self, attempt: int) -> None:
        """A run told to stop (`STOPPING.on`) sends nothing new: the call waits here, never
        sent, until the run's task is cancelled when the grace for the calls in flight ends;
        a first attempt cancelled here counts as not sent."""
        if not STOPPING.on:
            return
        STOPPING.held += 1
        try:
            await asyncio.get_running_loop().create_future()  # only a cancellation ends it
        except asyncio.CancelledError:
            if attempt == 0:
                self._note_unsent()
            raise

    def _note_unsent(self) -> None:
        """Count a call never sent (`CallStats.not_sent`) and mark it so (`_UNSENT`): the
        calls sharing it (`_call`) were not sent either."""
        self.stats.not_sent += 1
        mark = _UNSENT.get()
        if mark is not None:
            mark[0] = True

    def _not_sent_after_fatal(self) -> None:
        self._note_unsent()
        if self.stats.not_sent_why is None:
            self.stats.not_sent_why = ("an earlier call failed in a way no retry can fix (the "
                                       "first error), so no later call was sent")

    def _release(self, held: float) -> None:
        if held and self.spend_cap is not None:
            self.spend_cap.release(held)

    def _note_timeout(self, started: float) -> None:
        """An attempt sent at `started` timed out. When the server answers other calls, it is
        queueing them (a compute-bound server with fewer slots than calls in flight, e.g. a
        llama.cpp server on a CPU): every queued call then waits out the timeout, is sent
        again and queues again, until the breaker reads the server as stopped. So send half
        as many at a time (at least 1), once per round of attempts: only an attempt sent
        after the last narrowing narrows again."""
        if not self._reached or self.sending_at_most <= 1 or started < self._narrowed_at:
            return
        was = self.sending_at_most
        if self._ceiling is not None and was >= self._ceiling:  # timed out there again
            self._patience = min(64, 2 * self._patience)
        self._ceiling = was
        self.sending_at_most = max(1, was // 2)
        self._slots_owed += was - self.sending_at_most
        self._narrowed_at = time.monotonic()
        self._answered_since = 0
        self.stats.narrowed_to = min(self.sending_at_most,
                                     self.stats.narrowed_to or self.sending_at_most)
        log.warning("%s: calls time out while the server answers others, so it is queueing "
                    "them; sending at most %d at a time from now on (was %d)",
                    self.provider.name, self.sending_at_most, was)

    async def _call_with_retries(self, request: Request) -> Response:
        """`_retrying`, its outcome noted in the answer-rate window (`_note_outcome`)."""
        seq = self._answers.open()
        answered: bool | None = None
        try:
            resp = await self._retrying(request)
            answered = True
            return resp
        except CallFailed as exc:
            answered = False if exc.gave_up else None
            raise
        finally:
            self._note_outcome(seq, answered)

    def _note_outcome(self, seq: int, answered: bool | None) -> None:
        """Call `seq` ended (`AnswerWindow.close`): stop the client when fewer than
        `RATE_FLOOR` of the last `RetryPolicy.rate_window` finished calls were answered. The
        in-a-row rule (`_give_up`) misses such a server: it answers a call now and then, so
        its other calls never give up "with nothing answered since they were sent"."""
        limit = self._limit()
        size = self.retry.rate_window(limit)
        self._answers.close(seq, answered, size)
        if limit == 0 or self._stopped is not None or not self._answers.low(size):
            return
        kind, msg = self._last_give_up
        n = self._answers.answered
        why = (f"the server answers almost no call ({n} of the last {size} calls answered, "
               f"{n / size:.0%}; the others gave up after {self.retry.max_retries + 1} "
               "attempts each), so the remaining calls were not sent: check the server (its "
               "log, its load) and run again when it answers: finished calls are cached")
        # said in the run's outcome (`outcome.not_sent_reason`), which otherwise names only
        # the kinds of the failed attempts
        self.stats.not_sent_why = why
        self._stop(f"{why}; last error: {msg}", kind)
        log.warning("%s: %s (last error: %s)", self.provider.name, why, msg)

    async def _retrying(self, request: Request) -> Response:
        """One call's attempts, with backoff between them, until one is answered or the
        retries are used up."""
        attempt = 0
        sent: list[float] = []  # when each attempt went out
        after = "other"  # the kind of the error the next attempt retries
        while True:
            try:
                resp = await self._attempt(request, attempt, sent, after)
            except (ProviderError, _Timeout, TimeoutError, ConnectionError) as exc:
                kind, retryable, retry_after = classify(exc)
                msg = redact(str(exc) or type(exc).__name__)
                self.stats.record_error(kind, msg)
                if kind not in ("connection", "timeout"):
                    self._reached = True  # an HTTP answer, if not the one we wanted
                self._note_unreached(kind, msg)
                if isinstance(exc, RequestRejected):  # this request only (too long, refused)
                    raise CallFailed(msg, fatal=False, kind=kind) from exc
                if retryable and self._too_long_a_wait(retry_after, kind):
                    raise CallFailed(msg, fatal=False, kind=kind) from exc
                if retryable and retry_after is not None:
                    self._pause(retry_after, kind)  # before any await: all calls wait
                if not retryable:
                    own = msg.startswith(f"{self.provider.name}:")  # named already
                    self._fatal = CallFailed(msg if own else f"{self.provider.name}: {msg}",
                                             fatal=True, kind=kind)
                    raise CallFailed(str(self._fatal), fatal=True, kind=kind) from exc
                if attempt >= self.retry.max_retries:
                    self._give_up(kind, msg, sent[0] if sent else math.inf)
                    raise CallFailed(
                        f"{self.provider.name}: gave up after {attempt + 1} attempts: {msg}",
                        fatal=False, kind=kind, gave_up=True,
                    ) from exc
                wait = self.retry.delay(attempt, retry_after, self._rng)
                log.info("retrying %s in %.2fs after: %s", self.provider.name, wait, msg)
                attempt, after = attempt + 1, kind
                await self._backoff(wait)
                continue
            self._reached, self._given_up = True, 0
            self._last_answer = time.monotonic()
            self._widen()
            return self._clean(resp)

    async def _backoff(self, seconds: float) -> None:
        """Wait before a retry; cut short when the breaker stops the client meanwhile."""
        loop = asyncio.get_running_loop()
        if self._stop_event is None or self._stop_event[0] is not loop:
            self._stop_event = (loop, asyncio.Event())
        event = self._stop_event[1]
        if self._stopped is not None:
            event.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), seconds)

    def _unreached(self, kind: str) -> str | None:
        """Why the server is taken for absent after a failure of `kind`, or None: it has
        answered something, or the failure is of another kind."""
        if self._reached:
            return None
        if kind == "connection":
            return "the server could not be reached"
        if kind == "timeout":
            return ("the server never answered in time (a slow server needs a longer timeout: "
                    "--timeout, or timeout=SECONDS in the judge spec)")
        return None

    def _note_unreached(self, kind: str, msg: str) -> None:
        """A failed attempt: while the server has answered nothing, trip the breaker once the
        attempts have failed for as long as one call's retries wait (`RetryPolicy.window`).
        Counting one call's attempts instead took minutes when each attempt waits out a
        timeout: the calls share the concurrency slots, so the first to use up its retries
        came after dozens of other calls' attempts."""
        why = self._unreached(kind)
        if why is None or self._stopped is not None or self._limit() == 0:
            return
        now = time.monotonic()
        if self._first_failure is None:
            self._first_failure = now
        elif now - self._first_failure >= self.retry.window():
            self._trip(why, kind, msg)

    def _give_up(self, kind: str, msg: str, first_sent: float = math.inf) -> None:
        """A call first sent at `first_sent` gave up after its retries: trip the breaker
        (`RetryPolicy.stop_after`) when the server was never reached or has stopped
        answering. It counts toward "stopped answering" only when no call was answered since
        it was first sent: a server that fails some prompts (an HTTP 500 on 11% of them)
        answers the others meanwhile, and its failing calls, each retrying for about 30 s,
        gave up in a row after the others were done, which cut off a server that had
        answered 426 prompts of 480. A server that stopped answering answers nothing after
        the calls sent to it, so those count as before."""
        self._last_give_up = (kind, msg)
        if self._last_answer < first_sent:
            self._given_up += 1
        if self._limit() == 0 or self._stopped is not None:
            return
        why = self._unreached(kind)
        if why is None and self._given_up >= self._limit():
            why = f"the server stopped answering ({self._given_up} calls in a row gave up)"
        if why is not None:
            self._trip(why, kind, msg)

    def _trip(self, why: str, kind: str, msg: str) -> None:
        """Stop sending: the remaining calls fail at once (as `kind`, with `msg`, the last
        error), those waiting to retry stop waiting."""
        self._stop(f"{why}; last error: {msg}", kind)
        log.warning("%s: %s; the remaining calls fail without being sent (last error: %s). "
                    "Run again when the server answers: finished calls are cached.",
                    self.provider.name, why, msg)

    def _stop(self, why: str, kind: str) -> None:
        """No more calls are sent: they fail at once as `kind`, saying `why`; those waiting
        to retry stop waiting."""
        self._stopped = CallFailed(f"{self.provider.name}: not sent: {why}", fatal=False,
                                   kind=kind)
        if self._stop_event is not None:
            self._stop_event[1].set()

    def _widen(self) -> None:
        """After a narrowing, one more call at a time per 4 x `sending_at_most` answers in a
        row (up to `concurrency`): a server that was slow for a while (another job on its
        GPU) gets its slots back. Trying the width that last timed out takes `_patience`
        times as many, so a server that keeps fewer slots costs a timeout now and then, not
        one every few answers; once it answers at that width, the width is free again."""
        if self.sending_at_most >= self.concurrency:
            return
        self._answered_since += 1
        need = 4 * self.sending_at_most
        if self._ceiling is not None and self.sending_at_most + 1 >= self._ceiling:
            need *= self._patience
        if self._answered_since < need:
            return
        self._answered_since = 0
        if self._ceiling is not None and self.sending_at_most >= self._ceiling:
            self._ceiling = None  # answered at the width that had timed out: slots are back
        self.sending_at_most += 1
        if self._slots_owed > 0:
            self._slots_owed -= 1
        else:
            self._sem.release()  # one of the permits kept back

    def _too_long_a_wait(self, wait: float | None, kind: str) -> bool:
        """Whether the server asks to wait longer than `RetryPolicy.longest_wait` (a quota
        that resets in hours): then no more calls are sent in this run, instead of every
        call waiting `max_retry_after` per retry to hear the same."""
        if wait is None or wait <= self.retry.longest_wait or self._limit() == 0:
            return False
        if self._stopped is None:
            hours = f"{wait / 3600:.1f} h" if wait >= 3600 else f"{wait / 60:.0f} min"
            why = (f"the server asks to wait {hours} before the next call (a daily or hourly "
                   "quota?); run again then: finished calls are cached")
            self._stop_for_run(why, kind)
        return True

    def _count_call(self) -> None:
        """Count a call about to be sent on the run's call cap (`CallCap`); one past it fails
        as not sent (the first such says why in the calls stats and the log)."""
        cap = self.call_cap
        if cap is None or self._stopped is not None or cap.take():
            return
        if not cap.refused:
            self.stats.not_sent_why = cap.why()
            log.warning("%s: %s; the remaining calls fail without being sent.",
                        self.provider.name, cap.why())
        cap.refused += 1
        self._note_unsent()
        raise CallFailed(f"{self.provider.name}: not sent: {cap.why()}", fatal=False,
                         kind="call_cap")

    async def _hold(self, request: Request, wait: bool = True) -> float:
        """Hold the call's ceiling on the command's spend cap (`SpendCap.hold`) before it is
        sent, and return it (0.0 with no cap, or once the client has stopped). When it could
        take the spend past the cap but would fit once the calls under way have settled,
        wait for them (`wait`); otherwise stop sending for the run."""
        cap = self.spend_cap
        price = self.provider.price_per_mtok
        if cap is None or price is None or self._stopped is not None:
            return 0.0
        from judgeaudit.llm.plan import body_ceiling, plan_body

        ceiling = body_ceiling(plan_body(request, self.provider), price)[2] or 0.0
        while not cap.hold(ceiling):
            if not (wait and cap.could_fit(ceiling)):
                cap.refuse(ceiling)
                if self._stopped is None:
                    self._stop_for_run(cap.why(), "spend_cap")
                return 0.0
            await cap.settled()
            if self._stopped is not None:
                return 0.0
        return ceiling

    def _stop_for_run(self, why: str, kind: str) -> None:
        """Stop sending for a reason of the run, not of the server's health (the spend cap, a
        quota that resets in hours): the calls stats say why (`not_sent_why`) and so does the
        log, once."""
        self._stop(why, kind)
        self.stats.not_sent_why = why
        log.warning("%s: %s; the remaining calls fail without being sent.",
                    self.provider.name, why)

    def _limit(self) -> int:
        """The breaker's count (`RetryPolicy.stop_after`; 0: never stop)."""
        limit = self.retry.stop_after
        return max(8, 2 * self.concurrency) if limit is None else limit

    def _note_unusable(self, resp: Response) -> None:
        """After an answer was made: when the first `stop_after` answers were all unusable
        (`Response.invalid`), send no more calls (fatal: the same request would come back
        the same). One usable answer ends the watch for good."""
        if self._unusable is None:
            return
        if resp.invalid is None:
            self._unusable = None
            return
        self._unusable += 1
        limit = self._limit()
        if limit and self._unusable >= limit and self._fatal is None:
            self._fatal = CallFailed(
                f"{self.provider.name}: the first {self._unusable} answers could not be used "
                f"as verdicts, so no more calls were sent: {resp.invalid}", fatal=True,
                kind="other")
            log.warning("%s", self._fatal)

    def note_verdict(self, resp: Response, reason: str | None,
                     reading: str = "verdicts", request: Request | None = None) -> None:
        """The judge read `resp` (`reason` None) or could not (`reason` says why): when the
        first `stop_after` answers made in this run gave no verdict, this client sends no
        more calls (they fail as not sent, and the run's outcome counts them), as for
        answers the server itself marks unusable (`_note_unusable`); an empty or prose
        answer was paid for call after call (640 calls of a judge answering nothing). One
        verdict ends the watch. Cached answers count too: a re-run of a run that failed
        this way paid for 16 new answers each time, after the 16 it had cached. `reading`:
        what the answers were read as, in the stop's reason (a G-module's or a scorer's
        answers are no verdicts: "could not be read as G_score JSON objects").

        `request`: the request `resp` answers. Its cache key is the answer's identity: an
        answer read again in this run (the audit's baseline verdict, read by every probe
        that uses it: `CallStats.shared`) is counted once in `CallStats.unreadable`, which
        counted each reading (an audit of `sim?invalid=0.3` said 217 unreadable answers of
        540 made, where 141 were), and once in the watch, whose "the first K answers" are K
        answers, not K readings of fewer (reading one answer again is no new evidence about
        the judge and costs nothing). Without it each reading counts, as before.

        An answer cut at the token limit has its reason say so (`cut_reason`)."""
        if reason is not None:
            reason = cut_reason(reason, resp,
                                None if request is None else limit_sent(self.provider, request))
            key = None if request is None else self.key(request)
            if key is not None:
                if key in self._unread_keys:
                    return
                self._unread_keys.add(key)
            self.stats.unreadable += 1
            self.stats.first_unreadable = self.stats.first_unreadable or redact(reason)[:400]
        if self._unread is None:
            return
        if reason is None:
            self._unread = None
            return
        self._unread += 1
        limit = self._limit()
        if limit and self._unread >= limit and self._fatal is None and self._stopped is None:
            # this judge only is asked no more (its remaining calls fail as not sent): a
            # fatal error ended a run of several judges, the others' results lost with it
            self._stop_for_run(f"the first {self._unread} answers could not be read as "
                               f"{reading}: {redact(reason)}", "other")

    def _clean(self, resp: Response) -> Response:
        """The provider's response made safe to cache and write (`clean_response`)."""
        return clean_response(resp, self.max_response_chars)

    def _account(self, resp: Response, request: Request) -> None:
        """Count a call made: its tokens and, at a known price, its cost (on the spend cap
        too). A priced call whose server sent no token counts (some OpenAI-compatible proxies
        omit `usage`) is counted at its characters' estimate, never as free, so such a server
        cannot run past `--max-cost`."""
        self.stats.made += 1
        price = self.provider.price_per_mtok
        usage = resp.usage
        if price is not None and not (usage.prompt_tokens or usage.completion_tokens):
            from judgeaudit.llm.plan import estimated_usage

            usage = estimated_usage(request, self.provider, resp.text)
            self.stats.usage_estimated += 1
        self.stats.prompt_tokens += usage.prompt_tokens
        self.stats.completion_tokens += usage.completion_tokens
        if price is not None:
            cost = (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1e6
            self.stats.cost_usd = (self.stats.cost_usd or 0.0) + cost
            from judgeaudit.llm.plan import combine_rates

            self.stats.price_rate = combine_rates(self.stats.price_rate,
                                                  price_rate(self.provider))
            if self.spend_cap is not None:
                self.spend_cap.spent += cost
                if self.spend_cap.over() and self._stopped is not None and (
                        self._stopped.kind == "spend_cap"):
                    # a call under way when sending stopped passed the cap: say so
                    self.stats.not_sent_why = self.spend_cap.why()

    async def map(
        self,
        requests: Sequence[Request],
        on_done: Callable[[int, Response | CallFailed], None] | None = None,
    ) -> list[Response | CallFailed]:
        """Run all requests (bounded by the semaphore); non-fatal failures come back as
        CallFailed values in place, fatal ones abort the whole map."""

        async def one(i: int, req: Request) -> Response | CallFailed:
            try:
                out: Response | CallFailed = await self.call(req)
            except CallFailed as exc:
                if exc.fatal:
                    raise
                out = exc
            if on_done is not None:
                on_done(i, out)
            return out

        tasks = [asyncio.ensure_future(one(i, r)) for i, r in enumerate(requests)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def aclose(self) -> None:
        batcher, self._batcher = self._batcher, None
        if batcher is not None:  # stops polling; submitted batches resume on the next run
            await batcher.aclose()
        await self.provider.aclose()
        self.new_run()


class RunMemo:
    """A client's answers in memory when it has no cache, so a request asked again in the
    run is not paid for again; held as JSON (each get a fresh Response, as from a cache) up
    to `max_chars` in all, past which new answers are not kept (a re-ask is then sent)."""

    def __init__(self, max_chars: int = 200_000_000):
        self._answers: dict[str, str] = {}
        self._room = max_chars

    def get(self, key: str) -> Response | None:
        text = self._answers.get(key)
        return Response.from_json(text) if text is not None else None

    def put(self, key: str, response: Response) -> None:
        text = response.to_json()
        if len(text) <= self._room and key not in self._answers:
            self._answers[key] = text
            self._room -= len(text)


def clean_response(resp: Response, cap: int) -> Response:
    """A provider's response made safe to cache and write: the secrets this process knows
    masked (`redact.mask_known`: a server echoing the key or the Basic credentials of a
    base_url's password put them in the cache and the results), lone surrogates replaced
    (noted in raw["sanitized"]), text over the size cap `cap` cut (raw["truncated_from"],
    `invalid` set), a raw payload over the cap dropped (raw["dropped_raw_chars"]). The
    client applies it to every answer; `judgeaudit ingest` and batch results go through it
    too: the one way into the cache's calls table."""
    text, fixed_text = sanitize(resp.text if isinstance(resp.text, str) else "")
    secrets = known_secrets()
    if secrets:
        text = mask_known(text, secrets)
    raw, fixed_raw, raw_json = resp.raw, False, None
    if raw is not None:
        # One dump finds a lone surrogate anywhere in it (the walk in `sanitize` is the slow
        # part of a reply with a top-20 logprob list) and gives the size checked below.
        raw_json = json.dumps(raw, ensure_ascii=False, default=str)
        if has_lone_surrogate(raw_json):
            raw, fixed_raw = sanitize(raw)
            raw_json = json.dumps(raw, ensure_ascii=False, default=str)
        # masked in its strings, where the dump shows a secret may be: the payload keeps its
        # shape and numbers (it was dropped whole, and a key of digits ate a timestamp)
        if secrets and mentions_known(raw_json, secrets):
            raw = mask_data(raw, secrets)
            raw_json = json.dumps(raw, ensure_ascii=False, default=str)
            left = mask_known(raw_json, secrets)
            if left is not raw_json:  # in a value that is no string (shown by its str())
                raw, raw_json = {"raw_masked": left}, None
    probs, fixed_probs = sanitize(resp.probs) if resp.probs is not None else (None, False)
    notes: dict[str, Any] = {}
    if fixed_text or fixed_raw or fixed_probs:
        notes["sanitized"] = "lone surrogate replaced"
    invalid = mask_known(resp.invalid, secrets) if resp.invalid and secrets else resp.invalid
    if len(text) > cap:
        notes["truncated_from"] = len(text)
        invalid = f"response of {len(text)} chars exceeds the cap of {cap}"
        text = text[:cap]
    if raw is not None:
        size = len(raw_json if raw_json is not None
                   else json.dumps(raw, ensure_ascii=False, default=str))
        if size > cap:
            raw = {"dropped_raw_chars": size}
    if (not notes and text is resp.text and raw is resp.raw and probs is resp.probs
            and invalid is resp.invalid):
        return resp
    if notes:
        raw = {**(raw or {}), **notes}
    return Response(text=text, probs=probs, usage=resp.usage, cached=resp.cached, raw=raw,
                    invalid=invalid)
