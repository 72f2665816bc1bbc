"""The one client every model call passes through: cache, retries with backoff and jitter,
bounded concurrency, in-flight de-duplication, and call/token/cost accounting."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from judgeaudit.llm.base import (
    FatalProviderError,
    Provider,
    ProviderError,
    Request,
    Response,
    request_key,
)
from judgeaudit.llm.cache import Cache

log = logging.getLogger("judgeaudit.llm")


class CallFailed(Exception):
    """A call that still failed after every retry (or failed fatally)."""

    def __init__(self, message: str, *, fatal: bool):
        super().__init__(message)
        self.fatal = fatal


@dataclass
class CallStats:
    made: int = 0          # calls that reached the provider and succeeded
    cached: int = 0        # calls served from the cache (or a concurrent identical call)
    retries: int = 0       # retry attempts after retryable errors
    failed: int = 0        # calls given up on
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class RetryPolicy:
    max_retries: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0
    # Longest Retry-After we honour; a server asking for more is capped here.
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * (2**attempt))
        return backoff * rng.uniform(0.5, 1.5)  # jitter: spread retries of many callers


class Client:
    """Wraps one provider. `call` is the single entry point; `map` runs many with a callback
    per finished call (for progress bars)."""

    def __init__(
        self,
        provider: Provider,
        cache: Cache | None = None,
        *,
        concurrency: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        seed: int = 0,
    ):
        self.provider = provider
        self.cache = cache
        self.concurrency = concurrency or provider.default_concurrency
        self._sem = asyncio.Semaphore(self.concurrency)
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.stats = CallStats()
        self._rng = random.Random(seed)
        self._inflight: dict[str, asyncio.Future[Response]] = {}
        # After a fatal error (bad key, bad request) no further call reaches the provider.
        self._fatal: CallFailed | None = None
        # Called with each request that got its answer (cached or not): progress bars for
        # pipelines whose number of calls is only known as they go (e.g. HUB-J discover).
        self.observers: list[Callable[[Request], None]] = []

    async def call(self, request: Request) -> Response:
        resp = await self._call(request)
        for obs in self.observers:
            obs(request)
        return resp

    async def _call(self, request: Request) -> Response:
        key = request_key(self.provider, request)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cached += 1
                return hit
        if key in self._inflight:  # identical call already under way: share its result
            self.stats.cached += 1
            return await asyncio.shield(self._inflight[key])
        fut: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        try:
            resp = await self._call_with_retries(request)
        except BaseException as exc:
            if not fut.done():
                fut.set_exception(exc)
                fut.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        else:
            if self.cache is not None:
                self.cache.put(key, self.provider.name, self.provider.model, resp)
            fut.set_result(resp)
            return resp
        finally:
            self._inflight.pop(key, None)

    async def _call_with_retries(self, request: Request) -> Response:
        attempt = 0
        while True:
            try:
                async with self._sem:
                    if self._fatal is not None:
                        raise self._fatal
                    if self.timeout is not None:
                        resp = await asyncio.wait_for(
                            self.provider.generate(request), self.timeout
                        )
                    else:
                        resp = await self.provider.generate(request)
            except FatalProviderError as exc:
                self.stats.failed += 1
                self._fatal = CallFailed(f"{self.provider.name}: {exc}", fatal=True)
                raise self._fatal from exc
            except (ProviderError, TimeoutError) as exc:
                retry_after = getattr(exc, "retry_after", None)
                if attempt >= self.retry.max_retries:
                    self.stats.failed += 1
                    raise CallFailed(
                        f"{self.provider.name}: gave up after {attempt + 1} attempts: "
                        f"{exc or type(exc).__name__}",
                        fatal=False,
                    ) from exc
                wait = self.retry.delay(attempt, retry_after, self._rng)
                log.info("retrying %s in %.2fs after: %s", self.provider.name, wait, exc)
                self.stats.retries += 1
                attempt += 1
                await asyncio.sleep(wait)
                continue
            self._account(resp)
            return resp

    def _account(self, resp: Response) -> None:
        self.stats.made += 1
        self.stats.prompt_tokens += resp.usage.prompt_tokens
        self.stats.completion_tokens += resp.usage.completion_tokens
        price = self.provider.price_per_mtok
        if price is not None:
            cost = (resp.usage.prompt_tokens * price[0] + resp.usage.completion_tokens * price[1])
            self.stats.cost_usd = (self.stats.cost_usd or 0.0) + cost / 1e6

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
        await self.provider.aclose()
