"""`Session`: what every command holds around its pipeline (DESIGN.md, "One shape for every
command"): the cache, the judges it made (one per spec), their call totals, the version and
prompt-hash stamps, an optional progress callback, and closing it all.

A session lives in one event loop: the judges' clients (HTTP connections, semaphores) belong
to the loop that first used them. The sync functions of `judgeaudit.api` make a session per
call; async code may share one between commands run one after another::

    async with Session(cache="calls.sqlite") as s:
        a = await judgeaudit.aaudit("sim?position=1", "builtin:facts", session=s)
        e = await judgeaudit.aevaluate("sim?position=1", "builtin:facts", session=s)
        print(s.calls())        # both commands' calls
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgeaudit.data.spec import public_spec
from judgeaudit.llm import Cache, RetryPolicy

if TYPE_CHECKING:
    from judgeaudit.judges import JudgeBundle

@dataclass(frozen=True)
class Progress:
    """One progress event: `done` of `total` model calls of `task` have finished (`total` is
    None while a pipeline cannot know it yet; it grows as stages plan their calls); `made`:
    the calls the command's judges have sent to a model so far (the rest of `done` came
    from the cache), so a bar's speed and ETA can count the calls that take time."""

    task: str
    done: int
    total: int | None
    made: int | None = None


ProgressFn = Callable[[Progress], None]


class Tracker:
    """Counts one task's calls and reports each change to the session's progress callback.
    `advance` and `add_total` fit the pipelines' `on_done` and `on_calls` hooks."""

    def __init__(self, task: str, total: int | None, report: ProgressFn | None,
                 made: Callable[[], int] | None = None):
        self.task, self.total, self.done = task, total, 0
        self._report, self._made = report, made
        self._emit()

    def _emit(self) -> None:
        if self._report is not None:
            self._report(Progress(self.task, self.done, self.total,
                                  None if self._made is None else self._made()))

    def advance(self, *_: Any) -> None:
        self.done += 1
        self._emit()

    def add_total(self, n: int) -> None:
        self.total = (self.total or 0) + int(n)
        self._emit()


def _retry_policy(retry: RetryPolicy | int | None) -> RetryPolicy | None:
    if retry is None or isinstance(retry, RetryPolicy):
        return retry
    if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
        raise ValueError(f"retry: expected a RetryPolicy or a number of retries >= 0, "
                         f"got {retry!r}")
    return RetryPolicy(max_retries=retry)


class _Judges(dict[str, "JudgeBundle"]):
    """`Session.judges`: keyed by the specs as given (two keys for one model are two judges),
    shown with their secrets masked (a notebook cell showing `s.judges` showed the key)."""

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{public_spec(k)!r}: {v!r}" for k, v in self.items()) + "}"


def _redact_logs() -> None:
    """No secret a run knows reaches a log record, in the API as in the CLI: a script that
    ran `logging.basicConfig(level=logging.INFO)` got httpx's "HTTP Request: POST
    http://user:KEY@host/..." line per call (`llm.redact.install_log_redaction`)."""
    from judgeaudit.llm.redact import install_log_redaction

    install_log_redaction(own_program=True)  # the script's own records: known secrets only


class Session:
    """The cache, judges, call totals, stamps and progress of one or more commands.

    Args:
        cache: None or True: the default cache file ($JUDGEAUDIT_CACHE or the user cache
            dir); a path: that SQLite file; a `judgeaudit.llm.Cache`: used as given (not
            closed by the session); False: no cache (every call is made).
        concurrency: concurrent calls per judge (default: the provider's).
        timeout: seconds per call attempt before it counts as a timeout and is retried.
        retry: a `judgeaudit.llm.RetryPolicy`, or the most retries per call (0: one
            attempt only); default: the client's policy (6 retries with backoff). A judge
            whose server could not be reached or stopped answering is not asked again in
            that command (`RetryPolicy.stop_after`); the session's next command asks again.
        seed: seed of the judges' own random choices (the order a judge with orders=one
            shows each item, jitter); not a simulated judge's draws: they take its spec's
            seed= (sim?seed=1).
        progress: called with a `Progress` after every finished call and whenever a total
            becomes known. In a running event loop (Jupyter) the sync API runs the command in
            a worker thread, so the callback is called from that thread.
        planner: a `judgeaudit.llm.plan.Planner` (the CLI's --plan-only): every judge's cache
            misses are planned instead of sent.
        max_cost: a spend cap for the session in USD at the judges' rates (list, batch or spec
            prices) (`judgeaudit.llm.SpendCap`): once the calls of its commands have cost this much
            together, the rest are not sent (calls under way finish); a later command starts with
            what the earlier ones left. A judge that may bill at a price not known here (a hosted
            model missing from the price table, a remote server) needs price_in and price_out in its
            spec.
    """

    def __init__(
        self,
        *,
        cache: str | os.PathLike[str] | Cache | bool | None = None,
        concurrency: int | None = None,
        timeout: float | None = None,
        retry: RetryPolicy | int | None = None,
        seed: int = 0,
        progress: ProgressFn | None = None,
        planner: Any = None,
        max_cost: float | None = None,
    ):
        from judgeaudit.llm import SpendCap

        _redact_logs()
        self.spend_cap = None if max_cost is None else SpendCap(max_cost)
        self.seed = seed
        self.planner = planner
        self.concurrency = concurrency
        self.timeout = timeout
        self.retry = _retry_policy(retry)
        self.progress = progress
        self._own_cache = False
        if cache is False:
            self.cache: Cache | None = None
        elif isinstance(cache, Cache):
            self.cache = cache
        elif cache is None or cache is True:
            self.cache, self._own_cache = Cache(None), True
        elif not isinstance(cache, str | os.PathLike):
            raise ValueError(f"cache: expected a path, a Cache, True/None (the default file) "
                             f"or False (no cache), got {cache!r}")
        else:
            self.cache, self._own_cache = Cache(Path(cache)), True
        self._bundles: dict[str, JudgeBundle] = {}
        self._past: list[dict[str, Any]] = []  # call counts of earlier commands
        self._busy = False
        self._closed = False

    # ---- judges ----------------------------------------------------------------------------

    def judge(self, spec: str) -> JudgeBundle:
        """The judge of `spec` (`judgeaudit.judges.make_judge`), made on first use and shared
        by every later use of the same spec. A spec that cannot be made raises ValueError
        naming the spec with its secrets masked."""
        if self._closed:
            raise RuntimeError("this Session is closed")
        if spec not in self._bundles:
            from judgeaudit.judges import make_judge

            try:
                bundle = make_judge(
                    spec, cache=self.cache, concurrency=self.concurrency, retry=self.retry,
                    timeout=self.timeout, seed=self.seed)
            except (ValueError, FileNotFoundError, OSError) as exc:
                raise ValueError(f"judge {public_spec(spec)!r}: {exc}") from None
            if self.spend_cap is not None:
                self._cap(bundle)
            if self.planner is not None:  # cache misses are planned, not sent
                self.planner.bind(self.cache)
                bundle.client.planner = self.planner
            self._bundles[spec] = bundle
        return self._bundles[spec]

    def _cap(self, bundle: JudgeBundle) -> None:
        """Put `bundle`'s calls under the spend cap; ValueError when their cost is unknown."""
        provider = bundle.client.provider
        if provider.billed and provider.price_per_mtok is None:
            raise ValueError(
                f"judge {bundle.public_spec!r}: max_cost cannot cap what its calls cost: the "
                f"price of {provider.model!r} is not known here; give it in the spec as "
                "price_in=USD&price_out=USD (per million prompt / completion tokens; 0 for a "
                "free server)")
        bundle.client.spend_cap = self.spend_cap

    @property
    def judges(self) -> dict[str, JudgeBundle]:
        """The judges made so far, by the spec they were asked for (shown with its secrets
        masked: `_Judges`)."""
        return _Judges(self._bundles)

    # ---- totals and stamps -----------------------------------------------------------------

    def calls(self) -> dict[str, Any]:
        """Call counts of every judge this session made, over all its commands
        (`judgeaudit.outcome.sum_calls` of the clients' stats): made, cached, retries,
        failed, tokens, cost, errors by kind, first error."""
        from judgeaudit.outcome import sum_calls

        return sum_calls([*self._past, *(b.client.stats.as_dict()
                                         for b in self._bundles.values())])

    def stamps(self) -> dict[str, Any]:
        """What a result must say it was made with: the package version and, per judge (by
        its masked spec), the name and sha256 of its pairwise and rubric prompt templates."""
        import judgeaudit

        return {
            "version": judgeaudit.__version__,
            "prompt_hashes": {
                b.public_spec: {
                    "pairwise": {"name": b.pairwise.template.name,
                                 "sha256": b.pairwise.template.sha256},
                    "rubric": {"name": b.rubric.template.name,
                               "sha256": b.rubric.template.sha256},
                } for b in self._bundles.values()},
        }

    def judges_used(self) -> dict[str, Any]:
        """Per judge (by its masked spec), what its verdicts were made with beyond the spec
        (`Provider.run_identity`): for `local`, the resolved backend, dtype, weights and CPU.
        Two runs of the same spec on different machines can differ here."""
        return {b.public_spec: b.client.provider.run_identity() for b in self._bundles.values()}

    def tracker(self, task: str, total: int | None = None) -> Tracker:
        """A progress counter for one task, reporting to this session's callback."""
        return Tracker(task, total, self.progress,
                       lambda: sum(b.client.stats.made for b in self._bundles.values()))

    @contextmanager
    def command(self) -> Iterator[Session]:
        """Run one command in this session: the pipelines read their call counts from the
        judges' clients, so the counts of earlier commands move to the session's totals and
        each command starts from zero (the spend cap goes on from what earlier ones spent),
        and a server an earlier command stopped asking (it could not be reached) is asked
        again; without a cache no command takes another's answers (`Client.new_run`). One
        command at a time."""
        from judgeaudit.llm import CallStats

        if self._closed:
            raise RuntimeError("this Session is closed")
        if self._busy:
            raise RuntimeError("a Session runs one command at a time; await the running one "
                               "first or give each concurrent command its own Session")
        self._busy = True
        _redact_logs()  # logging configured after the session opened; SDK loggers made since
        if self.spend_cap is not None:  # the session's cap: what earlier commands left
            self.spend_cap.new_command()
        try:
            for b in self._bundles.values():
                b.client.reset_breaker()
                b.client.new_run()
                st = b.client.stats.as_dict()
                if any(st.get(k) for k in ("made", "cached", "failed", "retries")):
                    self._past.append(st)
                    b.client.stats = CallStats()
            yield self
        finally:
            self._busy = False

    # ---- closing ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every judge's client, then the cache if the session opened it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            for b in self._bundles.values():
                await b.aclose()
        finally:
            if self._own_cache and self.cache is not None:
                self.cache.close()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        where = "no cache" if self.cache is None else f"cache {self.cache.path}"
        specs = ", ".join(b.public_spec for b in self._bundles.values()) or "no judges yet"
        return f"Session({where}; {specs}{'; closed' if self._closed else ''})"


__all__ = ["Progress", "ProgressFn", "Session", "Tracker"]
