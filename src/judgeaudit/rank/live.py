"""Ranking with a real judge: every comparison is one cached judge call through the async
client (judgeaudit.llm.Client), in the presentation order the loop chose.

- `judge_pair` / `judge_pairs`: one comparison (first-shown item, second-shown item) -> a
  `Verdict` with y = 1 (first preferred), 0 (second), 0.5 (tie); an invalid verdict (no
  readable answer) has y None: counted and kept with its raw answer, but left out of the fit
  (the loop gets NaN for it), never coerced into a tie.
- `rank_live`: the active loop (judgeaudit.rank.loop.run_active, plain numpy) runs in a worker
  thread; each batch of picks between two refits is judged concurrently on the caller's event
  loop, so the client's concurrency limit, cache and retries apply as for any other command.
- `full_matrix`: every ordered pair once (N (N - 1) calls, cached), for offline evaluation:
  `VerdictMatrix.oracle()` replays it for every seed and rule.

A pair of pool items (i, j) is one PairwiseItem with a canonical order (response_1 = the item
with the lower pool index), id "<id_i>|<id_j>"; showing item `first` first is order "12" when
`first` is that item and "21" otherwise. So the judge sees exactly (text of first, text of
second), and a recorded verdict file for a pool (replay provider: item id + order) lines up
with the same convention.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges import JudgeBundle
from judgeaudit.llm import CallFailed, Request
from judgeaudit.llm.base import _key_of, legacy_request_key
from judgeaudit.llm.plan import PlannedStop
from judgeaudit.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID, assess
from judgeaudit.rank.acquisition import answer_free
from judgeaudit.rank.fitting import membership_fit, terms_fit, terms_tau
from judgeaudit.rank.loop import LoopResult, ProgressHook, TooLong, run_active
from judgeaudit.rank.pool import CovariateInfo, Pool
from judgeaudit.stats.bradley_terry import BTFit

Y_OF_CHOICE = {"A": 1.0, "B": 0.0, "tie": 0.5}


@dataclass
class Verdict:
    """One judged comparison: ``first`` was shown first (as A)."""

    first: int
    second: int
    order: str  # "12"/"21" of the canonical pair item
    y: float | None  # 1 first preferred, 0 second, 0.5 tie; None invalid (not fitted)
    choice: str | None  # "A" (first shown), "B", "tie", None = invalid
    raw: str  # what the judge said
    p_first: float | None = None
    error: str | None = None
    # the kind of a failed call (`llm.base.ERROR_KINDS`: too_long names an item over the
    # judge's context); None when the judge answered
    error_kind: str | None = None
    # never sent: the client had stopped sending (the spend cap, a server that stopped
    # answering, a quota that resets in hours): a pick the judge never saw, not an invalid
    # verdict (a cap stop read "100 comparisons (49 invalid)"; the server got 51 requests)
    not_sent: bool = False

    @property
    def invalid(self) -> bool:
        """Sent (or answered from the cache) and no verdict came back: unreadable, failed
        or too long. A pick never sent is `not_sent`, not invalid."""
        return self.choice is None and not self.not_sent

    def as_dict(self, pool: Pool | None = None) -> dict:
        d = asdict(self)
        d["invalid"] = self.invalid
        if pool is not None:
            d["first_id"] = pool.items[self.first].id
            d["second_id"] = pool.items[self.second].id
        return d


def pair_item(pool: Pool, i: int, j: int) -> tuple[PairwiseItem, int, int]:
    """The canonical PairwiseItem of items i and j (either order) and its (lo, hi) indices."""
    if i == j:
        raise ValueError(f"an item cannot be compared with itself (index {i})")
    lo, hi = (i, j) if i < j else (j, i)
    a, b = pool.items[lo], pool.items[hi]
    if a.prompt != b.prompt:
        raise ValueError(f"items {a.id!r} and {b.id!r} answer different prompts; items are "
                         "compared only within a prompt")
    quality = label = None
    if a.quality is not None and b.quality is not None:
        quality = (float(a.quality), float(b.quality))
        label = 1 if a.quality > b.quality else 2 if b.quality > a.quality else 0
    item = PairwiseItem(id=f"{a.id}|{b.id}", prompt=a.prompt, response_1=a.text,
                        response_2=b.text, quality=quality, label=label,
                        metadata={"pool": pool.source})
    return item, lo, hi


def pair_request(bundle: JudgeBundle, pool: Pool, first: int, second: int
                 ) -> tuple[Request, str]:
    """The request of one comparison (``first``'s text shown as Response A) and its order
    ("12"/"21" of the canonical pair item)."""
    item, lo, _ = pair_item(pool, first, second)
    order = "12" if first == lo else "21"
    return bundle.pairwise.request(item, order), order  # type: ignore[arg-type]


async def judge_pair(bundle: JudgeBundle, pool: Pool, first: int, second: int) -> Verdict:
    """One call: ``first``'s text shown as Response A, ``second``'s as B."""
    judge = bundle.pairwise
    request, order = pair_request(bundle, pool, first, second)
    try:
        out = await bundle.client.call(request)
    except CallFailed as exc:
        if exc.fatal:
            raise
        out = exc
    ov = judge.check(request, order, out)  # type: ignore[arg-type]
    y = Y_OF_CHOICE.get(ov.choice) if ov.choice is not None else None
    return Verdict(first, second, order, y, ov.choice if y is not None else None, ov.raw,
                   ov.p_first, ov.error,
                   out.kind if isinstance(out, CallFailed) else None,
                   not_sent=isinstance(out, CallFailed) and stopped_sending(out))


def stopped_sending(exc: CallFailed) -> bool:
    """Whether a failed call was never sent because the client stopped sending for the run
    (`parse.call_failure`'s "not_sent": the spend cap, the call cap, a server that stopped
    answering or asks to wait hours). Not a planned request (--plan-only plans on: the loop
    must go on) nor a too-long refusal kept in the cache (a refused pair, `TooLong`)."""
    from judgeaudit.judges.parse import call_failure
    from judgeaudit.llm.plan import KEPT_REFUSALS

    return (exc.kind != "planned" and exc.kind not in KEPT_REFUSALS
            and call_failure(exc) == "not_sent")


def sending_stopped(client: Any) -> bool:
    """Whether ``client`` sends no further call in this run: stopped for it (the spend
    cap, a server that stopped answering, a quota that resets in hours) or past its call
    cap. Only a cached answer could still come back."""
    cap = getattr(client, "call_cap", None)
    return client.stopped is not None or bool(cap is not None and cap.refused)


def count_unpicked(client: Any, n: int) -> None:
    """Count ``n`` picks the loop did not make once the client stopped sending
    (`LoopResult.unpicked`) as the client counted each pick it refused unsent before the
    loop stopped picking (failed, not sent): the calls stats, the run's --max-failed
    outcome and the budget's not-sent count stay those of a loop that picked them all."""
    if n <= 0:
        return
    client.stats.failed += n
    client.stats.not_sent += n
    cap = getattr(client, "call_cap", None)
    if cap is not None and cap.refused:
        cap.refused += n


# `cache_answers` keys at most this many pairs (about 26 us each: 6.5 s CPU, a 500-item pool);
# beyond it the loop picks on to the end of the budget, as it did before a1c6b4a
SCAN_MAX = 250_000
SCAN_CHUNK = 2048  # pairs keyed and looked up at a time (their requests are held that long)


def cache_answers(bundle: JudgeBundle, pool: Pool, log: Sequence[Verdict]
                  ) -> set[tuple[int, int]] | None:
    """The (first, second) picks not in ``log`` that a client which sends nothing more
    (`sending_stopped`) would still answer without sending: from its cache (under the key or
    its legacy one, as `Client._call` reads it; a too-long refusal kept there too) or, for a
    request this run answered already (two items of one text), from the run's memo. While
    one is left the ranking picks on as before the cap (a1c6b4a stopped at once: a cache of
    60 verdicts on 90 pairs gave 10; the old loop took all 60). A pair is asked at most once
    in each order within the budget (`rank.loop`: the second time in the other order), so
    picks already made are not counted. None: not known (more than `SCAN_MAX` pairs to key).

    Read only, nothing sent. With a pool of distinct texts and a cache that holds no answer
    of this judge but the run's own (an empty cache, `--no-cache`), the empty set without
    keying the N (N - 1) pairs (about 26 us each: 1.0 s CPU at 200 items); the scan ends
    once every other answer of this judge the cache holds is found."""
    client = bundle.client
    cache = getattr(client, "cache", None)
    asked = {(v.first, v.second) for v in log}
    own = {client.key(pair_request(bundle, pool, v.first, v.second)[0]) for v in log
           if v.error_kind is None}  # answered: sent, or from the cache / the memo
    distinct = len({(it.prompt, it.text) for it in pool.items}) == pool.n_items
    if distinct and cache is None:
        return set()  # only the memo answers, and only a request asked already
    stats = getattr(cache, "stats", None)
    st = stats() if stats is not None else None
    others = None  # answers of this judge in the cache that are not this run's
    if st is not None and getattr(cache, "write_error", None) is None and not st.refusals:
        p = client.provider
        others = int(st.by_model.get(f"{p.name}:{p.model}", 0)) - len(cache.has(sorted(own)))
        if distinct and others <= 0:
            return set()
    n, g = pool.n_items, pool.groups
    todo = [(f, s) for f in range(n) for s in range(n)
            if f != s and (g is None or g[f] == g[s]) and (f, s) not in asked]
    if len(todo) > SCAN_MAX:
        return None
    ident = client.provider.cache_identity()  # once: `client.key` builds it per request
    legacy_on = cache is not None and client.provider.legacy_identity() is not None
    refusal = getattr(cache, "refusal", None) if st is None or st.refusals else None
    out: set[tuple[int, int]] = set()
    n_found = 0
    for c in range(0, len(todo), SCAN_CHUNK):
        pairs = todo[c:c + SCAN_CHUNK]
        reqs = [pair_request(bundle, pool, f, s)[0] for f, s in pairs]
        keys = [_key_of(ident, client.provider, r) for r in reqs]
        if c == 0 and keys[0] != client.key(reqs[0]):  # a client that keys otherwise
            ident = None
        if ident is None:
            keys = [client.key(r) for r in reqs]
        found = set(cache.has(keys)) if cache is not None else set()
        n_found += len(found)
        if legacy_on:
            legacy = {legacy_request_key(client.provider, r): k
                      for r, k in zip(reqs, keys, strict=True)}
            old = cache.has([k for k in legacy if k is not None])
            n_found += len(old)
            found.update(legacy[k] for k in old)
        if refusal is not None:
            found.update(k for k in keys if k not in found and refusal(k) is not None)
        out.update(pair for pair, k in zip(pairs, keys, strict=True) if k in found or k in own)
        if distinct and others is not None and n_found >= others:
            break  # every other answer of this judge there is found: no pair left has one
    return out


async def judge_pairs(bundle: JudgeBundle, pool: Pool, pairs: Sequence[tuple[int, int]],
                      on_done: Callable[[Verdict], None] | None = None) -> list[Verdict]:
    """Judge (first, second) pairs concurrently (bounded by the client), results in order."""

    async def one(f: int, s: int) -> Verdict:
        v = await judge_pair(bundle, pool, f, s)
        if on_done is not None:
            on_done(v)
        return v

    tasks = [asyncio.ensure_future(one(int(f), int(s))) for f, s in pairs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class Cancelled(Exception):
    """The ranking was cancelled while the loop thread waited for verdicts."""


class BridgeOracle:
    """A batch oracle for ``run_active`` running in a worker thread: each wave of a batch
    (the loop sends a batch in waves, an item with no verdict yet in one call of a wave:
    `rank.loop`, "Items with no verdict yet") is judged on the event loop ``loop``
    (concurrently) and waited for; every verdict is kept in ``log``.

    Under `--plan-only` (a planner on the client) a round whose requests were planned instead
    of answered ends the loop with `PlannedStop` once its last wave is planned (`end_round`,
    called after each batch): the next round's picks depend on these answers, and picking
    them from unanswered verdicts would plan requests a run with the answers never makes. A
    round's later waves are planned with it (one plan per round, as without waves). A rule
    whose picks do not depend on the answers (``answer_free``,
    `rank.acquisition.ANSWER_FREE`) plans on to the end of the budget (``budget``) and stops
    there: one plan, one ingest.

    A plan holds the round's every pick, while a live run sends the round in waves and asks an
    item refused as too long at most twice (`rank.loop`, "Items with no verdict yet"): the
    plan is the round the run sends unless an answer is a too-long refusal, and it cannot
    know which item is too long. So when the plan holds more than two requests with an item
    that has no verdict yet (more than a live run sends with a too-long one), its
    `PlannedStop` says so (`plan_note`): for an item over the judge's context the plan is an
    upper bound (seed 2 of a 10-item pool with one long item planned 3 requests with it in
    round 1; the live run sent 2). Two or fewer, the note would only restate the rule, and
    it was on ordinary plans with no long item (topk, seed 1: "up to 2 requests")."""

    def __init__(self, bundle: JudgeBundle, pool: Pool, loop: asyncio.AbstractEventLoop,
                 on_done: Callable[[Verdict], None] | None = None, refit_every: int = 8,
                 *, answer_free: bool = False, budget: int = 0, rule: str = ""):
        self.bundle, self.pool, self.loop, self.on_done = bundle, pool, loop, on_done
        self.refit_every = refit_every
        self.answer_free, self.budget, self.rule = answer_free, budget, rule
        self.log: list[Verdict] = []
        self.stop = threading.Event()
        self.rounds = 0
        # the client stopped sending for the run (`sending_stopped`) and refused a pick of
        # this loop unsent: no further pick can be sent, only answered from the cache
        self.halted = False
        # once halted: the picks not made yet the cache answers (`cache_answers`; None: not
        # known, pick on), less those made since (the first `_seen` of `log`); the loop
        # stops when none is left
        self._from_cache: set[tuple[int, int]] | None = None
        self._scanned, self._seen = False, 0
        self.planned = 0  # requests planned so far (answer-free rules plan every round)
        self._round_start = (0, 0)  # (len(log), planned) when this round began
        self._answered: set[int] = set()  # items with a verdict
        # per item with no verdict, the requests planned with it (this round; an answer-free
        # rule's: the run's), for `plan_note`
        self._unsure: dict[int, int] = {}

    def __call__(self, pairs: list[tuple[int, int]]) -> list[float]:
        if self.stop.is_set():
            raise Cancelled("ranking cancelled")
        planned_before = self.bundle.client.stats.planned
        fut = asyncio.run_coroutine_threadsafe(
            judge_pairs(self.bundle, self.pool, pairs, self.on_done), self.loop)
        while True:  # wake up now and then: the caller may have been cancelled meanwhile
            try:
                verdicts = fut.result(timeout=0.25)
                break
            except TimeoutError:
                if self.stop.is_set():
                    fut.cancel()
                    raise Cancelled("ranking cancelled") from None
        self.log.extend(verdicts)
        self.planned += self.bundle.client.stats.planned - planned_before
        for v in verdicts:
            if v.error_kind == "planned":
                for i in (v.first, v.second):
                    if i not in self._answered:
                        self._unsure[i] = self._unsure.get(i, 0) + 1
        self._answered.update(i for v in verdicts if v.y is not None for i in (v.first, v.second))
        if any(v.not_sent for v in verdicts) and sending_stopped(self.bundle.client):
            self.halted = True
        if self.answer_free and len(self.log) >= self.budget:
            self.stop_planned()
        # NaN: left out of the fit (a planned request too, until `end_round` stops the
        # loop); TooLong: also of further picks (rank.loop)
        return self.ys(verdicts)

    def exhausted(self) -> bool:
        """The loop's ``stop``: the client sends nothing more (`halted`) and no pick left
        could be answered from the cache (`cache_answers`, computed once, read only), so
        every further pick would be refused unsent. Until then the loop picks and refits as
        it did before the cap: a cached verdict is free."""
        if not self.halted:
            return False
        if not self._scanned:
            self._from_cache = cache_answers(self.bundle, self.pool, self.log)
            self._scanned = True
        elif self._from_cache is not None:
            self._from_cache.difference_update((v.first, v.second)
                                               for v in self.log[self._seen:])
        self._seen = len(self.log)
        return self._from_cache is not None and not self._from_cache

    def end_round(self) -> None:
        """The loop judged a batch (its every wave): under --plan-only, `PlannedStop` when
        any request of it was planned (class docstring)."""
        first, planned_before = self._round_start
        self._round_start = (len(self.log), self.planned)
        self.rounds += 1
        planned = self.planned - planned_before
        if self.answer_free or not planned:
            return
        r = self.rounds
        note = self.plan_note("round")
        self._unsure = {}
        raise PlannedStop(
            f"ranking round {r} (comparisons {first + 1}-{len(self.log)}): {planned} requests "
            f"planned; round {r + 1} depends on their answers: ingest them, then re-run "
            f"(a round is --refit-every {self.refit_every} comparisons: a larger value "
            "plans more per round, so fewer plan-ingest cycles, at some cost in how "
            "closely the picks follow the verdicts)",
            stage="ranking", n_planned=planned, round=r, note=note)

    def plan_note(self, what: str) -> str | None:
        """What the plan may hold that a live run would not send (class docstring), or None
        when no item without a verdict is in more than two planned requests (a live run asks
        even a too-long item twice: the plan is then no more than the run sends)."""
        if not self._unsure or max(self._unsure.values()) <= 2:
            return None
        n = max(self._unsure.values())
        item = self.pool.items[min(i for i, c in self._unsure.items() if c == n)].id
        return (f"the plan holds the {what}'s every pick, up to {n} requests with one item that "
                f"has no verdict yet ({item}); a live run sends them in waves and asks an item "
                "too long for the judge at most twice, spending the rest elsewhere. So the "
                f"plan is the {what} a live run sends unless an item is too long for the "
                "judge; for such an item it is an upper bound (the plan cannot know which "
                "item that is; ingest keeps the refusals and they are not planned again)")

    def stop_planned(self) -> None:
        """An answer-free rule's run under --plan-only, at its end: `PlannedStop` when any
        of its comparisons was planned (its picks did not wait for answers)."""
        if self.planned:
            raise PlannedStop(
                f"ranking: {self.planned} requests planned for comparisons 1-{len(self.log)} "
                f"in this one run (the whole budget: the {self.rule} rule's picks do not "
                "depend on the answers): ingest them, then re-run",
                stage="ranking", n_planned=self.planned, round=None,
                note=self.plan_note("budget"))

    @staticmethod
    def ys(verdicts: Sequence[Verdict]) -> list[float]:
        """The loop's y per verdict: NaN for no verdict, `TooLong` for one over the
        judge's context."""
        return [(TooLong() if v.error_kind == "too_long" else math.nan) if v.y is None
                else v.y for v in verdicts]


@dataclass
class LiveRun:
    result: LoopResult
    verdicts: list[Verdict]
    X: np.ndarray
    covariates: list[CovariateInfo]
    dropped: list[str] = field(default_factory=list)  # constant covariates left out
    # The fit the bias-aware model's c and kappa are reported from and how its lam was
    # learned (`rank.fitting.terms_fit`): with a learned lam, a refit at the Laplace
    # evidence's lam; the ranking stays `result.bias_aware`'s.
    terms: BTFit | None = None
    terms_method: str | None = None
    # The fits P(top-k) is drawn from, made on first use by `p_fit` (the bias-aware one is
    # `terms` when that is the evidence's), and the options the run's fits were made with.
    p_fits: dict[str, BTFit] = field(default_factory=dict)
    fit_options: dict = field(default_factory=dict)
    # The run's outcome (`outcome.assess`, unit: comparisons with a valid verdict):
    # a failed run's ranking is no result.
    run: dict | None = None
    # budget never picked: the client had stopped sending (`LoopResult.unpicked`); counted
    # in `n_not_sent` with the picks it refused unsent, no comparison of its own
    unpicked: int = 0

    def p_fit(self, model: str) -> BTFit:
        """The fit ``model``'s P(top-k) is drawn from (`rank.fitting.membership_fit`): with a
        learned lam, a refit at the Laplace evidence's lam, whose probabilities are
        calibrated where Laplace-EM's lam (too tight) makes them underconfident; else the
        model's own fit. The ranking stays ``result``'s. Made on first use: a model that is
        not reported costs nothing."""
        if model not in self.p_fits:
            X = self.X if model == "bias_aware" and self.X.shape[1] else None
            o = self.fit_options
            self.p_fits[model] = membership_fit(
                model, self.result.fit(model), self.X.shape[0], self.result.comparisons, X,
                eb_lam=bool(o.get("eb_lam")), tau=float(o.get("tau", 1.0)),
                hierarchical=bool(o.get("hierarchical")))
        return self.p_fits[model]

    @property
    def n_invalid(self) -> int:
        """Comparisons made (sent or from the cache) with no verdict."""
        return sum(v.invalid for v in self.verdicts)

    @property
    def n_valid(self) -> int:
        return sum(v.y is not None for v in self.verdicts)

    @property
    def n_not_sent(self) -> int:
        """Budget never sent: the picks the client refused (`Verdict.not_sent`) and those
        not made once it had stopped sending (`unpicked`)."""
        return sum(v.not_sent for v in self.verdicts) + self.unpicked

    @property
    def n_made(self) -> int:
        """Comparisons made: the picks sent or answered from the cache."""
        return sum(not v.not_sent for v in self.verdicts)

    @property
    def n_ties(self) -> int:
        return sum(v.choice == "tie" for v in self.verdicts)


def settle_not_sent(verdicts: Sequence[Verdict], calls: dict[str, Any]) -> None:
    """No pick is `not_sent` when the client says it sent every call (`not_sent` 0), as
    the audit settles its left-out reasons (`audit.battery`): the words of a failure
    stopped while it waited to retry a sent call read as never sent."""
    if not int(calls.get("not_sent") or 0):
        for v in verdicts:
            v.not_sent = False


def select_covariates(pool: Pool, names: Sequence[str]
                      ) -> tuple[np.ndarray, list[CovariateInfo], list[str]]:
    """The pool's covariates, without those constant over the pool (they carry no
    information about the judge: their c would just be its prior); the dropped names are
    returned so results can say so."""
    X, info = pool.covariates(list(names))
    keep = [m for m, i in enumerate(info) if not i.constant]
    dropped = [i.name for i in info if i.constant]
    return X[:, keep], [info[m] for m in keep], dropped


def max_budget(pool: Pool) -> int:
    """Every comparable pair in both orders: beyond this a deterministic judge only repeats
    cached verdicts."""
    g = pool.groups
    if g is None:
        return pool.n_items * (pool.n_items - 1)
    _, counts = np.unique(g, return_counts=True)
    return int(np.sum(counts * (counts - 1)))


async def rank_live(bundle: JudgeBundle, pool: Pool, *, k: int, budget: int,
                    rule: str = "topk", covariates: Sequence[str] = ("length", "markdown"),
                    model: str = "bias_aware", seed: int = 0, lam: float = 1.0,
                    eb_lam: bool = False, tau: float = 1.0, hierarchical: bool = False,
                    refit_every: int = 8,
                    n_samples: int = 1500, on_batch: ProgressHook | None = None,
                    on_call: Callable[[Verdict], None] | None = None,
                    min_valid: int = DEFAULT_MIN_VALID,
                    max_failed: float = DEFAULT_MAX_FAILED) -> LiveRun:
    """Run the active loop against ``bundle``'s judge on ``pool`` (see module docstring).
    The result's `run` section applies the one outcome rule to the comparisons asked: fewer
    than `min_valid` with a valid verdict, or more than `max_failed` of the client's calls
    failed, and the run has failed (its ranking is then no result)."""
    if budget > max_budget(pool):
        raise ValueError(f"budget {budget} exceeds the {max_budget(pool)} distinct ordered "
                         "comparisons of this pool")
    X, info, dropped = select_covariates(pool, covariates)
    oracle = BridgeOracle(bundle, pool, asyncio.get_running_loop(), on_call, refit_every,
                          answer_free=answer_free(rule), budget=budget, rule=rule)

    def batch_done(done: int, fit: BTFit, ctx: Any) -> None:
        oracle.end_round()  # --plan-only: stops after a round with planned requests
        if on_batch is not None:
            on_batch(done, fit, ctx)

    try:
        res = await asyncio.to_thread(
            run_active, None, pool.n_items, budget, k, rule=rule,
            X=X if X.shape[1] else None, model=model, lam=lam, tau=tau,
            hierarchical=hierarchical, refit_every=refit_every, n_samples=n_samples,
            seed=seed, batch_oracle=oracle, groups=pool.groups, on_batch=batch_done,
            eb_lam=eb_lam, stage=True,  # waves: a too-long item costs 1-2 calls, not a round
            stop=oracle.exhausted)  # nothing more is sent or in the cache: stop picking
    finally:
        oracle.stop.set()
    if oracle.answer_free:  # the loop ended short of the budget (every pair left too long)
        oracle.stop_planned()
    terms, how = await asyncio.to_thread(
        terms_fit, res.bias_aware, pool.n_items, res.comparisons, X if X.shape[1] else None,
        eb_lam=eb_lam, tau=tau, hierarchical=hierarchical)
    out = LiveRun(result=res, verdicts=oracle.log, X=X, covariates=info, dropped=dropped,
                  terms=terms, terms_method=how,
                  # P(top-k) from the evidence refit at the ranking's tau: the terms' fit is
                  # another when their prior is wider (rank.fitting.terms_tau)
                  p_fits={"bias_aware": terms} if how == "evidence"
                  and terms_tau(tau, hierarchical) == tau else {},
                  fit_options={"eb_lam": eb_lam, "tau": tau, "hierarchical": hierarchical})
    out.unpicked = res.unpicked
    count_unpicked(bundle.client, res.unpicked)
    settle_not_sent(out.verdicts, bundle.client.stats.as_dict())
    out.run = assess(n_valid=out.n_valid, n_planned=len(out.verdicts) + out.unpicked,
                     calls=gate_calls(bundle.client.stats.as_dict()), min_valid=min_valid,
                     max_failed=max_failed, what="comparisons")
    return out


def gate_calls(calls: dict[str, Any]) -> dict[str, Any]:
    """The calls --max-failed judges a ranking by: without the too-long refusals. A pair over
    the judge's context is a left-out item, counted and named in the run's `too_long`, not a
    judge that fails: the first round of topk, made before any answer, could put 9 of 40
    calls on the one long item of a pool (its covariate is the most extreme), and the run
    failed (exit 3) on a judge that answered every other call."""
    n_long = int((calls.get("errors") or {}).get("too_long") or 0)
    if not n_long:
        return calls
    failed = max(int(calls.get("failed") or 0) - n_long, 0)
    return {**calls, "failed": failed, "first_error": calls.get("first_error") if failed
            else None}


# ---- full ordered-pair matrix, for offline evaluation ----------------------------------------

@dataclass
class VerdictMatrix:
    """y[first, second] for every judged ordered pair: NaN where not judged and where the
    verdict was invalid (``invalid`` marks those: replayed as no verdict, left out of every
    fit)."""

    y: np.ndarray
    verdicts: list[Verdict]
    # bool [first, second]: no verdict (judged without a readable one, or never sent: the
    # client had stopped sending), replayed as no verdict
    invalid: np.ndarray | None = None
    # bool [first, second]: refused as too long for the judge's context (replayed as
    # `loop.TooLong`, so a replayed loop leaves them out of its picks as a live one does)
    too_long: np.ndarray | None = None

    @property
    def n_items(self) -> int:
        return int(self.y.shape[0])

    @property
    def n_invalid(self) -> int:
        """Pairs judged (sent or from the cache) with no verdict."""
        return sum(v.invalid for v in self.verdicts)

    @property
    def n_valid(self) -> int:
        return sum(v.y is not None for v in self.verdicts)

    @property
    def n_not_sent(self) -> int:
        """Pairs never sent (the client had stopped sending): no verdict, not invalid."""
        return sum(v.not_sent for v in self.verdicts)

    @property
    def n_ties(self) -> int:
        return sum(v.choice == "tie" for v in self.verdicts)

    def comparisons(self) -> np.ndarray:
        """The valid verdicts as rows (first, second, y): invalid ones are not in the fit."""
        a, b = np.nonzero(~np.isnan(self.y))
        return np.column_stack([a, b, self.y[a, b]]).astype(float)

    def oracle(self) -> MatrixOracle:
        return MatrixOracle(self.y, self.invalid, self.too_long)


class MatrixOracle:
    """Replays a verdict matrix: ``oracle(i, j, first)`` -> y[first, other], NaN for a pair
    judged without a readable verdict (``invalid``), which the loop counts and leaves out;
    `loop.TooLong` for one refused as too long (``too_long``), which it also stops picking."""

    def __init__(self, y: np.ndarray, invalid: np.ndarray | None = None,
                 too_long: np.ndarray | None = None):
        self.y = np.asarray(y, dtype=float)
        self.invalid = (np.zeros(self.y.shape, dtype=bool) if invalid is None
                        else np.asarray(invalid, dtype=bool))
        self.too_long = (np.zeros(self.y.shape, dtype=bool) if too_long is None
                         else np.asarray(too_long, dtype=bool))
        self.calls = 0

    def __call__(self, i: int, j: int, first: int) -> float:
        if first not in (i, j) or i == j:
            raise ValueError(f"oracle: first={first} must be one of the two items ({i}, {j})")
        second = j if first == i else i
        v = self.y[first, second]
        if np.isnan(v) and self.invalid[first, second]:
            self.calls += 1
            return TooLong() if self.too_long[first, second] else math.nan
        if np.isnan(v):
            raise ValueError(f"no recorded verdict for ({first} shown before {second})")
        self.calls += 1
        return float(v)


def ordered_pairs(pool: Pool) -> list[tuple[int, int]]:
    """Every comparable ordered pair, the two orders of a pair next to each other (their
    prompts share the longest prefix, which local judges reuse)."""
    g = pool.groups
    out = []
    for i in range(pool.n_items):
        for j in range(i + 1, pool.n_items):
            if g is None or g[i] == g[j]:
                out += [(i, j), (j, i)]
    return out


async def full_matrix(bundle: JudgeBundle, pool: Pool,
                      on_done: Callable[[Verdict], None] | None = None) -> VerdictMatrix:
    """Judge every comparable ordered pair once (cached) and collect the verdict matrix."""
    verdicts = await judge_pairs(bundle, pool, ordered_pairs(pool), on_done)
    settle_not_sent(verdicts, bundle.client.stats.as_dict())
    y = np.full((pool.n_items, pool.n_items), np.nan)
    bad = np.zeros((pool.n_items, pool.n_items), dtype=bool)
    long = np.zeros_like(bad)
    for v in verdicts:
        if v.y is None:
            bad[v.first, v.second] = True
            long[v.first, v.second] = v.error_kind == "too_long"
        else:
            y[v.first, v.second] = v.y
    return VerdictMatrix(y=y, verdicts=verdicts, invalid=bad, too_long=long)


# Sim covariates whose per-text value is exactly what the pool computes (injection and
# bandwagon are pair-level directions in the sim, so they are not comparable one-to-one).
_SIM_COMPARABLE = ("length", "markdown", "authority", "confidence", "sentiment", "self")


def planted_biases(bundle: JudgeBundle, names: Sequence[str]) -> dict | None:
    """For a `sim` judge, the planted values in the model's units (log-odds): c per named
    covariate (None where the sim has no directly comparable coefficient), kappa (the sim's
    `position`), the quality scale and the planted biases the model omits. Coefficients are
    divided by the sim's `noise` (P(A) = sigmoid(z / noise)). None for other judges."""
    prov = bundle.client.provider
    if getattr(prov, "name", "") != "sim":
        return None
    values = prov.values  # type: ignore[attr-defined]
    noise = float(values["noise"])
    if noise <= 0:
        return None
    c = {n: (float(values[n]) / noise if n in _SIM_COMPARABLE else None) for n in names}
    omitted = {m: float(values[m]) / noise for m in (*_SIM_COMPARABLE, "injection", "bandwagon")
               if values.get(m) and m not in names}
    return {"c": c, "kappa": float(values["position"]) / noise,
            "quality": float(values["quality"]) / noise, "omitted": omitted,
            "invalid_rate": float(values.get("invalid", 0.0))}
