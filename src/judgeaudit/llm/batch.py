"""Batch mode: cache misses sent through a provider's batch API instead of one call each.

A provider with `batch=on` (openai, anthropic) hands the client a backend
(`judgeaudit.llm.batch_openai`, `judgeaudit.llm.batch_anthropic`); the client sends every
cache miss to this module's `Batcher`, which

- collects requests and submits them as one batch once `batch_size` are waiting or no new one
  has joined for `batch_wait` seconds (one stage of a pipeline asks its calls together, then
  waits for them, so a stage becomes one batch; a fixed-n audit asks all its stages at once,
  `AuditContext.ask`, so it is one batch, and lines to ask again go in the next);
- records each batch id and the cache keys in it in the cache database (`Cache.add_batch`)
  the moment the provider accepted it, so a killed run resumes polling that batch instead of
  submitting its requests again; a cache that cannot be written (`Cache.write_error`: opened
  read-only, or the disk refused a write) could not record it, so nothing is submitted then:
  the first request that would be fails fatally saying which cache and what to do (a run
  whose requests are all cached needs no batch and runs as usual);
- polls each batch every `poll` seconds, the interval growing by half while nothing changes
  (at most ten times `poll`, at most 10 minutes), and retries status calls that fail
  transiently;
- stores every answer in the cache as its batch's results arrive (also answers nobody in this
  run asked for: a resumed batch's), then answers the waiting calls;
- sends a request whose line expired, hit a rate limit or a server error again in the next
  batch (up to the client's `max_retries`), and fails a call whose line was refused (a bad
  request), cancelled, or failed validation, as a non-fatal `CallFailed` with the kind of its
  error counted in `CallStats.errors`.

A call in batch mode holds no concurrency slot and has no per-call timeout: a batch may take
up to the provider's completion window (24 hours).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from judgeaudit.llm.base import (
    Provider,
    ProviderError,
    Request,
    Response,
    http_error_kind,
    legacy_request_key,
)
from judgeaudit.llm.cache import Cache
from judgeaudit.llm.redact import redact

log = logging.getLogger("judgeaudit.llm")

# Final states recorded in the cache's batches table (see Cache.FINAL_BATCH_STATES).
DONE, FAILED, CANCELLED, EXPIRED = "done", "failed", "cancelled", "expired"
# Status checks in a row that come back without a status the batch API has (a server that
# half implements it) before the run fails: such an answer cannot be told from a batch under
# way, and was polled until the run was killed.
UNKNOWN_POLLS = 3
# The cache's note on a batch `judgeaudit batch cancel` asked the provider to cancel.
CANCEL_REQUESTED = "cancel requested by the user"


@dataclass(frozen=True)
class BatchSettings:
    """A provider's batch-mode parameters (batch=on, batch_size, batch_wait, poll)."""

    size: int = 10_000
    wait: float = 2.0
    poll: float = 30.0


def batch_settings(params: dict[str, str], provider: str, *, max_size: int
                   ) -> BatchSettings | None:
    """The batch settings of a provider's spec parameters, or None when `batch` is off. A
    batch_size/batch_wait/poll without batch=on is refused (it would do nothing)."""
    from judgeaudit.llm.providers.openai import float_param, int_param

    mode = params.get("batch", "off").lower()
    if mode not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
        raise ValueError(f"{provider} parameter batch={params['batch']!r}: expected 'on' or "
                         "'off'")
    on = mode in ("on", "true", "1", "yes")
    given = [k for k in ("batch_size", "batch_wait", "poll") if k in params]
    if not on:
        if given:
            raise ValueError(f"{provider} parameter {given[0]} applies to batch mode; add "
                             "batch=on")
        return None
    size = int_param(params, "batch_size", provider, default=min(10_000, max_size))
    if size > max_size:
        raise ValueError(f"{provider} parameter batch_size={size}: at most {max_size} "
                         "requests per batch")
    wait = float_param(params, "batch_wait", provider, default=2.0)
    poll = float_param(params, "poll", provider, default=30.0, positive=True)
    return BatchSettings(size=size, wait=wait or 0.0, poll=poll or 30.0)


@dataclass
class BatchState:
    """A batch's state at the provider: `status` as the provider words it, `ended` once
    nothing more will change, `final` our name for how it ended (done, failed, cancelled,
    expired), `counts` of its requests, `message` why it failed (validation errors).
    `unknown` is set when the answer had no status the batch API has ("no status", "status
    'x'"): then `status` is "(no status)" or the status named, and `raw` is the object that
    came back (at most 300 characters)."""

    status: str
    ended: bool
    final: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    message: str | None = None
    handle: Any = None  # what the backend needs to fetch results (file ids, results URL)
    unknown: str | None = None
    raw: str | None = None


@dataclass
class LineResult:
    """One request's outcome in a batch's results: the provider's answer body, or an error
    (`kind` from ERROR_KINDS, retryable or not)."""

    key: str
    body: dict[str, Any] | None = None
    kind: str | None = None
    retryable: bool = False
    message: str = ""


class BatchBackend(Protocol):
    """What a provider's batch API does for the Batcher. Methods raise ProviderError (via the
    provider's SDK error mapping) for failed API calls."""

    max_bytes: int

    def entry(self, key: str, request: Request) -> dict[str, Any]: ...

    def parse(self, body: dict[str, Any], choices: tuple[str, ...]) -> Response: ...

    def line_error(self, result: LineResult, request: Request | None) -> LineResult: ...

    async def submit(self, entries: list[dict[str, Any]]) -> str: ...

    async def state(self, batch_id: str) -> BatchState: ...

    async def results(self, batch_id: str, state: BatchState) -> list[LineResult]: ...

    async def cancel(self, batch_id: str) -> BatchState: ...

    async def aclose(self) -> None: ...


def identity_of(provider: Provider) -> str:
    """The provider identity a batch belongs to (its cache identity, hashed): a run resumes
    only batches of the same provider, model and output-changing parameters."""
    return _hashed(provider.cache_identity())


def legacy_identity_of(provider: Provider) -> str | None:
    """The identity a batch of this provider had before the cache key named the server in
    one form (`Provider.legacy_identity`: a base_url written in the spec not in that form),
    else None: such a batch, submitted by an older version, is resumed too."""
    old = provider.legacy_identity()
    return None if old is None else _hashed(old)


def _hashed(identity: dict[str, Any]) -> str:
    blob = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def public_params(provider: Provider) -> dict[str, str]:
    """The provider's parameters without secrets (stored with a batch so `judgeaudit batch
    status|cancel` can reach the same API; a URL password is masked)."""
    from judgeaudit.llm.base import _mask_userinfo

    return {k: _mask_userinfo(v) for k, v in sorted(provider.params.items())
            if k not in provider.secret_params}


class Batcher:
    """Collects one client's cache misses into provider batches (see the module doc)."""

    def __init__(self, backend: BatchBackend, provider: Provider, *, cache: Cache | None,
                 stats: Any, clean: Callable[[Response], Response], max_retries: int = 6,
                 settings: BatchSettings | None = None, seed: int = 0):
        self.loop = asyncio.get_running_loop()
        self.backend = backend
        self.provider = provider
        self.cache = cache
        self.stats = stats
        self.clean = clean
        self.max_retries = max_retries
        self.settings = settings or getattr(provider, "batch", None) or BatchSettings()
        self.identity = identity_of(provider)
        self.legacy_identity = legacy_identity_of(provider)
        self._rng = random.Random(seed)
        self._queue: dict[str, Request] = {}
        self._queue_bytes = 0
        self._first_add = self._last_add = 0.0
        self._waiting: dict[str, asyncio.Future[Response]] = {}
        self._requests: dict[str, Request] = {}
        self._attempts: dict[str, int] = {}
        self._pending: dict[str, str] = {}            # key -> batch id it is in
        self._choices: dict[str, tuple[str, ...]] = {}
        self._batch_keys: dict[str, list[str]] = {}   # batch id -> its keys
        self._tasks: set[asyncio.Task] = set()
        self._timer: asyncio.Task | None = None
        self._resumed = False
        self.submitted: list[str] = []  # batch ids this batcher submitted
        self.resumed: list[str] = []    # batch ids it picked up from the cache

    # ---- the client's entry point ---------------------------------------------------------

    async def call(self, key: str, request: Request) -> Response:
        """The answer to `request` (cache key `key`), through a batch."""
        self._resume()
        if key not in self._pending and self.legacy_identity is not None:
            # in a batch an older version submitted, under the key it gave the request
            old = legacy_request_key(self.provider, request)
            if old is not None and old in self._pending:
                key = old
        if self.cache is not None and key not in self._pending:
            hit = self.cache.get(key)  # a resumed batch may have answered it just now
            if hit is not None:
                return hit
        fut = self._waiting.get(key)
        if fut is None or fut.done():
            fut = self.loop.create_future()
            self._waiting[key] = fut
        self._requests[key] = request
        self._choices[key] = tuple(request.choices)
        if key not in self._pending and key not in self._queue:
            refused = self._unrecordable()
            if refused is not None:  # before anything is submitted: see `_unrecordable`
                from judgeaudit.llm.client import CallFailed

                self._waiting.pop(key, None)
                self._note_not_sent(refused)
                exc = CallFailed(refused, fatal=True, kind="other")
                exc.not_sent = True  # the calls sharing it were not sent either (`Client._call`)
                raise exc
            self._enqueue(key, request)
        return await asyncio.shield(fut)

    def _unrecordable(self) -> str | None:
        """Why a new batch must not be submitted, or None. A submitted batch is recorded in
        the cache so that a run stopped while it waits (hours, maybe) picks it up again; a
        cache that cannot be written (`Cache.write_error`: read-only, or a write the disk
        refused) cannot record it, so stopping would lose answers already paid for."""
        if self.cache is None or self.cache.write_error is None:
            return None
        return (f"{self.provider.name}: batch mode (batch=on) needs a cache it can write, and "
                f"{self.cache.write_error}. A submitted batch is recorded in the cache so that "
                "a stopped run picks it up again; this one could not be, and its answers, "
                "paid for, would be lost. Nothing was submitted. Give a writable cache "
                "(--cache PATH or JUDGEAUDIT_CACHE=PATH; a copy of this file keeps its "
                "answers), or run without batch=on (live calls: answered in this run, not "
                "stored)")

    def _note_not_sent(self, why: str) -> None:
        self.stats.not_sent += 1
        if self.stats.not_sent_why is None:
            self.stats.not_sent_why = why

    async def aclose(self) -> None:
        """Stop polling (submitted batches stay recorded: the next run resumes them) and
        fail calls still waiting."""
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for fut in self._waiting.values():
            if not fut.done():
                fut.cancel()
        self._waiting.clear()
        await self.backend.aclose()

    # ---- collecting and submitting --------------------------------------------------------

    def _enqueue(self, key: str, request: Request) -> None:
        now = self.loop.time()
        if not self._queue:
            self._first_add = now
        self._last_add = now
        self._queue[key] = request
        self._queue_bytes += len(request.messages[-1].content) if request.messages else 0
        if (len(self._queue) >= self.settings.size
                or self._queue_bytes >= self.backend.max_bytes // 2):
            self._spawn(self._flush())
        elif self._timer is None or self._timer.done():
            self._timer = self._spawn(self._flush_when_quiet())

    async def _flush_when_quiet(self) -> None:
        """Submit the waiting requests once none has joined for `batch_wait` seconds (at most
        ten times that after the first one)."""
        wait = self.settings.wait
        while self._queue:
            due = min(self._last_add + wait, self._first_add + 10 * wait)
            delay = due - self.loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
                continue
            await self._flush()

    async def _flush(self) -> None:
        if not self._queue:
            return
        items = list(self._queue.items())
        self._queue.clear()
        self._queue_bytes = 0
        refused = self._unrecordable()
        if refused is not None:  # e.g. a resumed batch's lines to ask again: not submitted
            for _ in items:
                self._note_not_sent(refused)
            self._fail([k for k, _ in items], refused, "other", fatal=True, raw=True,
                       not_sent=True)
            return
        # Split by the API's size limit: entries are built (and measured) here.
        chunk: list[tuple[str, dict[str, Any]]] = []
        size = 0
        for key, req in items:
            e = self.backend.entry(key, req)
            n = len(json.dumps(e, ensure_ascii=False).encode()) + 1
            if chunk and (size + n > self.backend.max_bytes or len(chunk) >= self.settings.size):
                await self._submit(chunk)
                chunk, size = [], 0
            chunk.append((key, e))
            size += n
        if chunk:
            await self._submit(chunk)

    async def _submit(self, chunk: list[tuple[str, dict[str, Any]]]) -> None:
        keys = [k for k, _ in chunk]
        try:
            batch_id = await self._api(self.backend.submit, [e for _, e in chunk],
                                       what="submit a batch")
        except _Gaveup as exc:
            self._fail(keys, exc.message, exc.kind, fatal=exc.fatal)
            return
        self.submitted.append(batch_id)
        if self.cache is not None:
            self.cache.add_batch(
                batch_id, provider=self.provider.name, model=self.provider.model,
                identity=self.identity, params=json.dumps(public_params(self.provider)),
                requests=[(k, json.dumps(list(self._choices.get(k, ())))) for k in keys])
        # Shown without -v: a run in batch mode may wait hours with its bar at 0, so it says
        # once per batch what it waits for and what stopping it costs: nothing when the batch
        # is recorded; its answers when there is no cache, or the disk refused the record
        # after `_unrecordable` let it through.
        if self.cache is not None and self.cache.write_error is None:
            stopping = ("Stopping now loses nothing: the same command picks the batch up "
                        "again (judgeaudit batch status)")
        else:
            stopping = ("It is not recorded ("
                        + ("no cache" if self.cache is None else self.cache.write_error)
                        + "): stopping before it ends loses its answers, paid for")
        log.warning("%s: submitted batch %s (%s); the provider answers within 24 h. "
                    "%s", self.provider.name, batch_id, _requests(len(keys)), stopping)
        self._track(batch_id, keys)

    def _track(self, batch_id: str, keys: list[str]) -> None:
        self._batch_keys[batch_id] = keys
        # open at the provider until its answers are read (`_release`): a run interrupted
        # meanwhile says so (`CallStats.open_batches`): the batch goes on and is billed
        opened = getattr(self.stats, "open_batches", None)
        if opened is not None:
            opened[batch_id] = len(keys)
        for k in keys:
            self._pending[k] = batch_id
        self._spawn(self._watch(batch_id))

    def _resume(self) -> None:
        """Once: pick up this provider's open batches recorded in the cache (a run that was
        killed while they were under way) and poll them instead of submitting again."""
        if self._resumed:
            return
        self._resumed = True
        if self.cache is None:
            return
        ids = [self.identity] + ([self.legacy_identity] if self.legacy_identity else [])
        for b in [b for i in ids for b in self.cache.open_batches(i)]:
            keys = []
            for k, choices in b["requests"]:
                self._choices[k] = tuple(json.loads(choices))
                keys.append(k)
            self.resumed.append(b["batch_id"])
            log.warning("%s: waiting for batch %s (%s) that an earlier run "
                        "submitted", self.provider.name, b["batch_id"], _requests(len(keys)))
            self._track(b["batch_id"], keys)

    def _cancel_requested(self, batch_id: str) -> bool:
        """Whether `judgeaudit batch cancel` asked the provider to cancel this batch."""
        return self.cache is not None and any(
            b["batch_id"] == batch_id and b.get("info") == CANCEL_REQUESTED
            for b in self.cache.batches())

    # ---- polling and results --------------------------------------------------------------

    async def _watch(self, batch_id: str) -> None:
        keys = self._batch_keys[batch_id]
        poll = self.settings.poll
        cap = max(poll, min(10 * poll, 600.0))
        delay = poll
        last: str | None = None
        unknown = 0  # status checks in a row without a known status
        try:
            while True:
                st = await self._api(self.backend.state, batch_id, what="check a batch")
                unknown = unknown + 1 if st.unknown is not None else 0
                if unknown >= UNKNOWN_POLLS and self._cancel_requested(batch_id):
                    # the user gave it up (`judgeaudit batch cancel`) and its state cannot
                    # be read: recorded as cancelled, its requests asked again
                    raise _Gaveup(f"cancelled by the user and its {st.unknown} cannot be "
                                  "read", "bad_request", fatal=True)
                if unknown >= UNKNOWN_POLLS:
                    raise _Gaveup(_unknown_status(batch_id, st, unknown), "malformed",
                                  fatal=True)
                if (st.status != last and self.cache is not None and not st.ended
                        and st.unknown is None):
                    self.cache.set_batch_status(batch_id, st.status)
                if st.ended:
                    break
                delay = poll if st.status != last else min(cap, delay * 1.5)
                last = st.status
                await asyncio.sleep(delay)
            lines = await self._api(self.backend.results, batch_id, st,
                                    what="fetch a batch's results")
        except _Gaveup as exc:
            self._release(batch_id)
            if exc.fatal and exc.kind == "bad_request":
                # The provider does not know this batch (any more), or the user cancelled one
                # whose state cannot be read: record it as ended so no run waits on it
                # again, and ask its requests again in a new batch.
                if self.cache is not None:
                    self.cache.set_batch_status(
                        batch_id, CANCELLED if self._cancel_requested(batch_id) else FAILED,
                        json.dumps({"message": exc.message}))
                for k in keys:
                    self._line_failed(LineResult(k, kind=exc.kind, retryable=True,
                                                 message=f"batch {batch_id}: {exc.message}"))
                return
            # Otherwise the batch stays open in the cache: the next run resumes it.
            self._fail(keys, f"batch {batch_id}: {exc.message}", exc.kind, fatal=exc.fatal)
            return
        self._ingest(batch_id, keys, st, lines)

    def _ingest(self, batch_id: str, keys: list[str], st: BatchState,
                lines: list[LineResult]) -> None:
        wanted = set(keys)
        rows: list[tuple[str, str, str, Response]] = []
        answers: dict[str, Response] = {}
        errors: list[LineResult] = []
        for line in lines:
            if line.key not in wanted or line.key in answers:
                continue
            if line.body is not None:
                try:
                    resp = self.clean(self.backend.parse(line.body, self._choices.get(
                        line.key, ())))
                except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                    errors.append(LineResult(line.key, kind="malformed", retryable=True,
                                             message=f"batch {batch_id}: malformed answer"))
                    continue
                answers[line.key] = resp
                rows.append((line.key, self.provider.name, self.provider.model, resp))
            else:
                errors.append(self.backend.line_error(line, self._requests.get(line.key)))
        seen = set(answers) | {e.key for e in errors}
        missing = [k for k in keys if k not in seen]
        for k in missing:
            errors.append(_missing(batch_id, k, st))
        if self.cache is not None:
            self.cache.put_many(rows)
            info = json.dumps({"answers": len(answers), "errors": len(errors),
                               "counts": st.counts, "message": st.message})
            self.cache.set_batch_status(batch_id, st.final or DONE, info)
        self._release(batch_id)
        log.info("%s: batch %s %s: %d answers, %d errors", self.provider.name, batch_id,
                 st.final or DONE, len(answers), len(errors))
        for k, resp in answers.items():
            fut = self._waiting.pop(k, None)
            self._attempts.pop(k, None)
            if fut is not None and not fut.done():
                fut.set_result(resp)
        for e in errors:
            self._line_failed(e)

    def _release(self, batch_id: str) -> None:
        opened = getattr(self.stats, "open_batches", None)
        if opened is not None:
            opened.pop(batch_id, None)
        for k in self._batch_keys.pop(batch_id, []):
            if self._pending.get(k) == batch_id:
                del self._pending[k]

    def _line_failed(self, e: LineResult) -> None:
        kind = e.kind or "other"
        self.stats.record_error(kind, e.message)
        fut = self._waiting.get(e.key)
        if fut is None or fut.done():
            return  # nobody in this run asked for it: a later run asks again
        req = self._requests.get(e.key)
        n = self._attempts.get(e.key, 0)
        if e.retryable and req is not None and n < self.max_retries:
            self._attempts[e.key] = n + 1
            self.stats.retries += 1
            log.info("%s: %s; sending it again in the next batch", self.provider.name,
                     e.message)
            self._enqueue(e.key, req)
            return
        from judgeaudit.llm.client import CallFailed

        what = f"gave up after {n + 1} batches: " if e.retryable else ""
        self._waiting.pop(e.key, None)
        fut.set_exception(CallFailed(redact(f"{self.provider.name}: {what}{e.message}"),
                                     fatal=False, kind=kind))
        fut.exception()

    def _fail(self, keys: list[str], message: str, kind: str, *, fatal: bool,
              raw: bool = False, not_sent: bool = False) -> None:
        """Fail the calls waiting on ``keys``; ``raw``: ``message`` is complete (it names the
        provider already); ``not_sent``: they were never submitted, and the calls sharing
        them count as not sent too (`Client._call`)."""
        from judgeaudit.llm.client import CallFailed

        text = message if raw else redact(f"{self.provider.name}: {message}")
        for k in keys:
            fut = self._waiting.pop(k, None)
            if fut is not None and not fut.done():
                exc = CallFailed(text, fatal=fatal, kind=kind)
                exc.not_sent = not_sent
                fut.set_exception(exc)
                fut.exception()

    # ---- plumbing -------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = self.loop.create_task(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                exc = t.exception()
                log.error("%s: batch task failed: %r", self.provider.name, exc)
                # Nobody may wait forever on a task that died: fail every waiting call.
                self._fail(list(self._waiting), f"batch mode failed: {exc!r}", "other",
                           fatal=False)

        task.add_done_callback(done)
        return task

    async def _api(self, fn: Callable[..., Any], *args: Any, what: str) -> Any:
        """One batch-API call, retried with backoff while it fails transiently."""
        attempt = 0
        while True:
            try:
                return await fn(*args)
            except ProviderError as exc:
                self.stats.record_error(exc.kind, str(exc))
                if not exc.retryable:
                    raise _Gaveup(f"cannot {what}: {exc}", exc.kind, fatal=True) from None
                if attempt >= self.max_retries:
                    raise _Gaveup(f"cannot {what} after {attempt + 1} attempts: {exc}",
                                  exc.kind, fatal=False) from None
                wait = exc.retry_after if exc.retry_after is not None else min(
                    60.0, 0.5 * 2 ** attempt) * self._rng.uniform(0.5, 1.5)
                wait = min(wait, max(self.settings.poll, 1.0) * 4)
                attempt += 1
                log.info("%s: %s failed (%s); again in %.1fs", self.provider.name, what, exc,
                         wait)
                await asyncio.sleep(wait)


def _requests(n: int) -> str:
    """"1 request", "2 requests" ("(1 requests)" was shown)."""
    return f"{n} request" if n == 1 else f"{n} requests"


class _Gaveup(Exception):
    def __init__(self, message: str, kind: str, *, fatal: bool):
        super().__init__(message)
        self.message, self.kind, self.fatal = message, kind, fatal


def described_status(status: Any, known: frozenset[str] | set[str]) -> str | None:
    """None when `status` is one of the batch API's `known` statuses, else how to name it
    ("no status", "status 'x'") in `BatchState.unknown`."""
    if isinstance(status, str) and status in known:
        return None
    if status is None or status == "":
        return "no status"
    return f"status {status!r}"[:80]


def unknown_state(status: Any, said: str, obj: Any) -> BatchState:
    """The state of a batch whose status check came back with `said` (no status, or one
    the API does not have): never ended; `obj`, the object as it came back, is kept short
    (its null fields left out)."""
    if isinstance(obj, dict):
        obj = {k: v for k, v in obj.items() if v is not None}
    try:
        raw = json.dumps(obj, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        raw = repr(obj)
    shown = status if isinstance(status, str) and status else "(no status)"
    return BatchState(status=shown[:80], ended=False, unknown=said, raw=redact(raw)[:300])


def _unknown_status(batch_id: str, st: BatchState, times: int) -> str:
    """Why a run gave up on a batch whose status checks had no status it knows."""
    return (f"the provider's status checks came back with {st.unknown} {times} times in a "
            f"row (the last, null fields left out: {st.raw}), so this batch's state cannot be "
            "known (does the server implement the batch API?). The batch stays recorded: the "
            f"next run checks it again; `judgeaudit batch cancel {batch_id}` gives it up, or "
            "run without batch=on")


def _missing(batch_id: str, key: str, st: BatchState) -> LineResult:
    """A request with no line in its batch's results: why, by how the batch ended."""
    if st.final == EXPIRED:
        return LineResult(key, kind="timeout", retryable=True,
                          message=f"batch {batch_id} expired before this request ran")
    if st.final == CANCELLED:
        return LineResult(key, kind="other", retryable=False,
                          message=f"batch {batch_id} was cancelled before this request ran")
    if st.final == FAILED:
        return LineResult(key, kind="bad_request", retryable=False,
                          message=f"batch {batch_id} failed: {st.message or 'no reason given'}")
    return LineResult(key, kind="malformed", retryable=True,
                      message=f"batch {batch_id} ended without a result for this request")


def http_line_error(key: str, status: int, message: str) -> LineResult:
    """A batch line answered with an HTTP error status: retryable as a live call would be
    (`http_error_kind`: 429, 5xx, ...), else refused (only that line fails)."""
    kind, retry = http_error_kind(status, message)
    return LineResult(key, kind=kind, retryable=retry,
                      message=f"HTTP {status} in batch: {message}"[:300])


__all__ = ["UNKNOWN_POLLS", "BatchBackend", "BatchSettings", "BatchState", "Batcher",
           "LineResult", "batch_settings", "described_status", "http_line_error",
           "identity_of", "legacy_identity_of", "public_params", "unknown_state"]
