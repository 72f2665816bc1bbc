"""The probe contract: a probe = items + a perturbation (or a judging variant) + the judge
+ a metric + a no-bias range. Probes register by name; the battery runs them, shares the
unperturbed verdicts between them, and adds q-values and verdicts across the report."""

from __future__ import annotations

import abc
import asyncio
import contextvars
import copy
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from judgeaudit.audit.metrics import why_invalid
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges.factory import JudgeBundle
from judgeaudit.judges.pairwise import PairwiseJudge, PairwiseVerdict
from judgeaudit.judges.parse import reasoning_cut_off
from judgeaudit.stats.types import Estimate

UNCHECKED = ("no valid verdict for this rate (calls not sent or answers unreadable), so the "
             "threshold could not be checked")


def threshold_flag(threshold: float, metric: str, rate: dict[str, Any] | None,
                   exceeds: Callable[[float], bool] | None = None) -> dict[str, Any]:
    """A production threshold check of `rate` (an estimate dict): its value against
    `threshold` (`exceeds(value)`, default value > threshold). Without a value the check is
    unchecked (`exceeds` None, a `reason`), never "within": a `--fail-on flag` gate must not
    pass a threshold it could not check."""
    value, n = (rate or {}).get("value"), (rate or {}).get("n", 0)
    if value is None:
        return {"threshold": threshold, "metric": metric, "value": None, "exceeds": None,
                "n": n, "reason": UNCHECKED}
    hit = exceeds(value) if exceeds is not None else value > threshold
    # the value's interval beside it: the check reads the point value (a production rule),
    # and "exceeds 0.583 vs 0.550" said nothing of its [0.41, 0.71] at n = 18
    ci = (rate or {}).get("ci95")
    return {"threshold": threshold, "metric": metric, "value": value, "exceeds": bool(hit),
            "n": n, **({"ci95": ci} if ci else {})}


def flagged(probes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Probes of a results document whose threshold check exceeds its threshold."""
    return sorted(k for k, p in probes.items() if (p.get("flag") or {}).get("exceeds"))


def unchecked_flags(probes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Probes whose threshold check had no data (`threshold_flag`): no flag gate passes."""
    return sorted(k for k, p in probes.items()
                  if p.get("flag") and p["flag"].get("exceeds") is None)


@dataclass
class ProbeResult:
    """What a probe measured; `verdict` and `q` are filled in by the battery."""

    effect: float | None
    ci95: tuple[float | None, float | None]
    n: int
    p: float | None
    mde: float | None
    rates: dict[str, dict[str, Any]] = field(default_factory=dict)
    flag: dict[str, Any] | None = None
    n_invalid: int = 0
    n_dropped: int = 0
    plot: dict[str, Any] | None = None
    examples: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Items left out of the effect, by reason (DROP_REASONS), as item ids; the battery adds
    # the items the probe could not take at all (no_label, tie_label) and counts them.
    dropped: dict[str, list[str]] = field(default_factory=dict)
    # The per-item paired differences whose mean is the effect, as (item id, difference):
    # the --by breakdown regroups them.
    units: list[tuple[str, float]] = field(default_factory=list)
    # How the MDE was computed (test, n, discordance, standard error, alpha, power).
    mde_detail: dict[str, Any] | None = None
    # What computed the effect's interval (paired_stats: "bootstrap-percentile").
    method: str | None = None
    # Every per-item difference lies in [-span, span] (None: no such bound is known), so
    # `judgeaudit compare` can bound a change that few items made.
    span: float | None = None

    @classmethod
    def from_stats(cls, st: Mapping[str, Any], ids: Sequence[str], **kw: Any) -> ProbeResult:
        """A probe's result from `paired_stats`-family output `st`: the effect, its interval,
        method and span, p, the MDE, n_invalid, and the per-item differences of the valid
        positions `st["valid"]` named by `ids`; `kw` sets or overrides the rest."""
        base: dict[str, Any] = {
            "effect": st["effect"], "ci95": st["ci95"], "n": st["n"], "p": st["p"],
            "mde": st["mde"], "mde_detail": st["mde_detail"], "method": st["method"],
            "span": st.get("span"), "n_invalid": st.get("n_invalid", 0),
            "units": [(ids[i], x) for i, x in zip(st["valid"], st["d"], strict=True)]}
        return cls(**{**base, **kw})

    def estimate(self) -> Estimate:
        """The effect as an Estimate (None -> nan)."""
        def num(x: float | None) -> float:
            return math.nan if x is None else float(x)

        lo, hi = self.ci95
        return Estimate(num(self.effect), (num(lo), num(hi)), self.n, method=self.method)


# Why an item is left out of a probe's effect (results.json "dropped", per probe and overall).
DROP_REASONS: dict[str, str] = {
    "not_pairwise": "not a pairwise item (the audit judges pairs)",
    "no_label": "no label: the probe needs to know the better response",
    "tie_label": "tie label: the probe needs a better response (label 1 or 2)",
    "not_sent": "a call for a verdict it needs was never sent (spend or call cap, the "
                "client stopped sending, --plan-only)",
    "call_failed": "a call for a verdict it needs was sent and failed",
    "cut": "a verdict it needs came back cut at max_tokens with no verdict (a larger "
           "max_tokens in the judge spec may give one)",
    "unparseable": "a verdict it needs came back with no readable verdict",
    # results written before the split into the reasons above
    "invalid_verdict": "a verdict it needs was unparseable or its call failed (results "
                       "written before not_sent, call_failed and unparseable were told apart)",
    "tie_verdict": "a tie verdict in one order (no first-slot information)",
    "single_order": "judged in one order only (position needs both)",
    "perturbation_not_applicable": "the perturbation failed its answer-preservation check "
                                   "or could not be applied",
    "no_own_answer": "the judge wrote no answer of its own",
}


def drop(res: ProbeResult, reason: str, ids: Sequence[str]) -> None:
    """Record items left out of `res` for `reason` (ids, order kept, no duplicates)."""
    if not ids:
        return
    have = res.dropped.setdefault(reason, [])
    seen = set(have)
    for i in ids:
        if i not in seen:
            seen.add(i)
            have.append(i)


def drop_invalid(res: ProbeResult, items: Iterable[tuple[str, Sequence[Any]]]) -> None:
    """Record items left out for an invalid verdict, each (item id, the verdicts it needs)
    under its reason (`why_invalid`)."""
    for item_id, verdicts in items:
        drop(res, why_invalid(*verdicts), [item_id])


# How many unreadable answers an audit keeps as examples (results.json and the report).
MAX_UNREADABLE_EXAMPLES = 5


class AuditContext:
    """Shared state of one audit: the judge, the items, and memoised verdicts so that the
    unperturbed judgments are made once for all probes (the client cache makes repeats of
    the same call free as well)."""

    def __init__(
        self,
        bundle: JudgeBundle,
        items: Sequence[PairwiseItem],
        *,
        seed: int = 0,
        panel: Sequence[JudgeBundle] = (),
        on_calls: Callable[[int], None] | None = None,
        on_done: Callable[[], None] | None = None,
        alpha: float = 0.05,
        length_control: bool = False,
        together: bool = False,
    ):
        self.bundle = bundle
        # Probes that lengthen a response also judge a length-matched control
        # (`audit.length_control`, `audit --length-control`).
        self.length_control = length_control
        self.items = list(items)
        self.seed = seed
        self.alpha = alpha  # the report's level: tests and MDEs use it
        self.panel = list(panel)
        self._on_calls = on_calls  # announce planned calls (grows the progress total)
        self._on_done = on_done
        self._memo: dict[tuple[str, int, str], PairwiseVerdict] = {}
        # `together` (the fixed-n battery of a judge in batch mode, `battery._in_batch_mode`):
        # the stages of the audit, none of which depends on another's answers, are asked at
        # once (`ask`), so that they go in one batch; a verdict being asked is then shared by
        # its key (`_inflight`): a second ask waits for the first's answer instead of asking
        # it again, and is counted as the client counts a shared call (`_count_shared`).
        # Live judges and the adaptive audit (whose rounds and budget cut follow the stages'
        # order and whose per-probe calls count each probe's asks) keep them one after
        # another.
        self.together = together
        self._inflight: dict[tuple[str, int, str], asyncio.Future[None]] = {}
        # The keys the baseline stage asks: a probe's ask of one waits for it in flight when
        # together, where a live run's probes (asked after the baseline) read it from the
        # memo; either way the client is not asked (`_count_shared`).
        self._baseline_keys: set[tuple[str, int, str]] = set()
        # The verdict keys asked so far in this run, each with the probe that asked it first
        # (`ASKER`; None: not counted, the adaptive audit's rounds, whose per-round calls
        # leave memoised verdicts out): a probe's ask of a verdict another probe asked is
        # counted shared (`_count_shared`) whether it came from the memo, the audit's
        # in-flight ask or the client's; only the last two were, so the split depended on
        # timing: one audit read shared 8, 12 or 16 fresh and 16 on its re-run from the
        # cache. A probe reading its own verdict again is no ask (never sent twice, however
        # timed), and the baseline's keys stay uncounted (`_baseline_keys`).
        self._seen: dict[tuple[str, int, str], str | None] | None = None

    async def judge(
        self, items: Sequence[PairwiseItem], *, repeat: int = 0,
        bundle: JudgeBundle | None = None, judge: PairwiseJudge | None = None,
    ) -> list[PairwiseVerdict]:
        """Pairwise verdicts, memoised by (item id, repeat, judge, template). `judge` runs a
        variant (another template) on the bundle's client."""
        b = bundle or self.bundle
        pj = judge or b.pairwise
        tag = b.public_spec + "|" + pj.template.sha256
        todo, others, waited = [], set(), []
        for it in items:
            k = (it.id, repeat, tag)
            if self._seen is not None:
                asker = ASKER.get()
                first = self._seen.setdefault(k, asker)
                if (k in self._memo and first != asker and k not in self._baseline_keys
                        and not (self.together and k in self._inflight)):
                    waited.append(k)  # another probe asked it: a shared ask, as live
            if k in self._memo:
                continue
            if self.together and k in self._inflight:
                others.add(self._inflight[k])
                if k not in self._baseline_keys:
                    waited.append(k)
            else:
                todo.append(it)
        if todo:
            mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            keys = [(it.id, repeat, tag) for it in todo]
            for k in keys:
                self._inflight[k] = mine
            try:
                if self._on_calls:
                    self._on_calls(pj.n_calls(todo))
                verdicts = await self._judge_in_chunks(b, pj, todo, repeat)
                for it, v in zip(todo, verdicts, strict=True):
                    self._memo[(it.id, repeat, tag)] = v
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError):
                    mine.cancel()
                else:
                    mine.set_exception(exc)
                    mine.exception()  # retrieved: whoever waits on it raises it too
                raise
            else:
                mine.set_result(None)
            finally:
                for k in keys:
                    if self._inflight.get(k) is mine:
                        del self._inflight[k]
        for fut in others:
            await asyncio.shield(fut)
        _count_shared(b.client.stats, [self._memo[k] for k in waited])
        return [self._memo[(it.id, repeat, tag)] for it in items]

    async def _judge_in_chunks(self, b: JudgeBundle, pj: PairwiseJudge,
                               items: Sequence[PairwiseItem], repeat: int
                               ) -> list[PairwiseVerdict]:
        """`pj.judge` over `items` a chunk at a time (`judge_chunk`), in order: a stage's
        requests (rendered prompts) and the client's answers to them are held for one
        chunk, not for the whole stage. Asked at once, every probe's stages held all theirs
        until the stage ended: an audit of 5,000 items peaked at 479 MB, about 64 KB per
        item. A judge in batch mode gets its stage whole (one batch, not one per chunk)."""
        size = judge_chunk(b.client)
        if size is None or len(items) <= size:
            return await pj.judge(items, repeat=repeat, on_done=self._on_done)
        out: list[PairwiseVerdict] = []
        for start in range(0, len(items), size):
            out += await pj.judge(items[start:start + size], repeat=repeat,
                                  on_done=self._on_done)
        return out

    async def ask(self, *stages: Awaitable[Any]) -> list[Any]:
        """The stages' results: asked at once when `together` (a stage awaited before the
        next is asked was a batch of its own in batch mode: a fixed-n audit sent 80, 400, 80,
        then 160 requests, each after the one before ended), else one after another."""
        if self.together:
            return list(await asyncio.gather(*stages))
        out: list[Any] = []
        try:
            for s in stages:
                out.append(await s)
        finally:
            for s in stages[len(out) + 1:]:  # not reached: closed, never left unawaited
                close = getattr(s, "close", None)
                if close is not None:
                    close()
        return out

    def unreadable_examples(self, limit: int = MAX_UNREADABLE_EXAMPLES
                            ) -> list[dict[str, Any]]:
        """Up to `limit` answers of the audited judge (pairwise, any probe, distinct texts,
        cut to 200 characters) that gave no verdict, with why: the calls line counts them,
        and a report that showed only the count left the user to guess what the judge
        said. Failed calls are not answers and are not shown."""
        prefix = self.bundle.public_spec + "|"
        seen: set[str] = set()
        out: list[dict[str, Any]] = []
        for (item_id, _repeat, tag), v in self._memo.items():
            if not tag.startswith(prefix):
                continue  # a panel judge's
            for o in v.orders:
                if o.valid or o.failed is not None or o.raw in seen:
                    continue
                seen.add(o.raw)
                why = o.error or ("empty answer" if not o.raw.strip() else
                                  "reasoning cut off before a verdict"
                                  if reasoning_cut_off(o.raw) else "unparseable answer")
                out.append({"item_id": item_id, "order": o.order, "raw": o.raw[:200],
                            "why": why})
                if len(out) >= limit:
                    return out
        return out

    def view(self, items: Sequence[PairwiseItem]) -> AuditContext:
        """The same audit (judge, memoised verdicts, progress) over other items: each probe
        gets the items it can use."""
        other = copy.copy(self)
        other.items = list(items)
        return other

    def progress(self, n_calls: int) -> Callable[[], None] | None:
        """Announce n planned calls; returns the per-call callback (for non-pairwise judges)."""
        if self._on_calls:
            self._on_calls(n_calls)
        return self._on_done

    async def baseline(self, items: Sequence[PairwiseItem] | None = None) -> list[PairwiseVerdict]:
        todo = self.items if items is None else items
        if self.together or self._seen is not None:
            tag = self.bundle.public_spec + "|" + self.bundle.pairwise.template.sha256
            self._baseline_keys.update((it.id, 0, tag) for it in todo)
        return await self.judge(todo)


# Items judged per chunk of a stage (`AuditContext._judge_in_chunks`), at least
# JUDGE_CHUNK_PER_SLOT per call the client sends at once, so its slots stay busy.
JUDGE_CHUNK = 256
JUDGE_CHUNK_PER_SLOT = 4


def judge_chunk(client: Any) -> int | None:
    """How many items a stage judges at a time on `client`, or None (all at once) for a
    client in batch mode, whose calls of a stage go in one batch."""
    if getattr(client, "batched", False):
        return None
    return max(JUDGE_CHUNK, JUDGE_CHUNK_PER_SLOT * int(getattr(client, "concurrency", 1) or 1))


# The probe asking for verdicts (set per probe's task by the battery): who asked a verdict
# first (`AuditContext._seen`), so another probe's ask of it counts as shared.
ASKER: contextvars.ContextVar[str | None] = contextvars.ContextVar("judgeaudit_asker",
                                                                  default=None)


def _count_shared(stats: Any, verdicts: Sequence[PairwiseVerdict]) -> None:
    """Count the calls of verdicts asked again while in flight (`together`) as the client
    counts a live run's ask of a call in flight: answered, one from cache and shared; failed,
    failed; planned (--plan-only), planned. Probes asked at once ask some verdicts of one
    another; live they reach the client, which counts them shared, so a batch-mode audit
    read calls asked 540, shared 0 where the identical live run read 780 and 240. The
    baseline's verdicts are not counted (`_baseline_keys`): live, the probes read them from
    the memo after the baseline, without the client."""
    for v in verdicts:
        for o in v.orders:
            if o.failed is None:
                stats.cached += 1
                stats.shared += 1
            elif PLANNED_MARK in (o.error or ""):
                stats.planned += 1
            else:
                stats.failed += 1


# The message of a call `--plan-only` planned instead of sending (`Client._call`).
PLANNED_MARK = "planned, not sent (--plan-only)"


# What a probe that `needs_writing` asks of its judge (`Provider.cannot_serve`).
WRITING: Mapping[str, Any] = {"task": "generate"}


class Probe(abc.ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    metric: ClassVar[str]
    direction: ClassVar[str]
    # "not_biased" needs the whole 95% interval inside this range.
    no_bias_range: ClassVar[tuple[float, float]] = (-0.05, 0.05)
    # Part of the default (fast) battery; the rest run with --full.
    default: ClassVar[bool] = True
    # Needs to know the better response (label 1 or 2). A probe that does not (position:
    # first-slot rate and order consistency) also runs on unlabelled and tie-labelled pairs.
    needs_label: ClassVar[bool] = True
    # Needs other judges (--panel) to compare the judge with, and a judge that writes answers
    # of its own (self_preference): a probe named in --probes is refused before any call
    # without them (`commands.prepare_audit`); under --full it says "not run".
    needs_panel: ClassVar[bool] = False
    needs_writing: ClassVar[bool] = False  # asked of the judge as WRITING
    # Judges the items' own texts, only in other orders (position): a replay judge, which
    # holds verdicts on the recorded texts only, can serve it; a probe that rewrites a
    # response or the prompt cannot run on one.
    judges_texts_as_given: ClassVar[bool] = False

    @abc.abstractmethod
    async def run(self, ctx: AuditContext) -> ProbeResult: ...

    def inapplicable(self, item: PairwiseItem) -> Any | None:
        """The perturbation's result on `item` when it cannot apply to its text (a
        `perturb.PerturbResult` with `not_applicable` and its reason), else None. A pure
        function of the text, asked before any call (`battery.plan_items`), so that "the first
        n pairs it can use" are n pairs its perturbation applies to (the first n were taken,
        then the inapplicable ones left out: 40 Chinese pairs gave n = 0 while usable pairs
        past the 40th were not taken). A probe without such a perturbation applies to every
        item."""
        return None

    def header(self) -> dict[str, Any]:
        return {"title": self.title, "description": self.description, "metric": self.metric,
                "direction": self.direction, "no_bias_range": list(self.no_bias_range),
                "needs_label": self.needs_label}


_PROBES: dict[str, type[Probe]] = {}


def register_probe(cls: type[Probe]) -> type[Probe]:
    _PROBES[cls.name] = cls
    return cls


def _load_builtin() -> None:
    import importlib
    import pkgutil

    import judgeaudit.audit.probes as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{mod.name}")


def _load_plugins() -> None:
    """Probes of other packages (entry-point group `judgeaudit.probes`), once."""
    from judgeaudit import plugins

    def add(name: str, cls: object) -> None:
        plugins.check_named_class(name, cls, Probe, "probe")
        plugins.check_new("probe", name, cls, _PROBES)
        _PROBES[name] = cls  # type: ignore[assignment]

    plugins.load_group("probes", add)


def probe_names(default_only: bool = False) -> list[str]:
    _load_builtin()
    _load_plugins()
    return [n for n, c in _PROBES.items() if c.default or not default_only]


def did_you_mean(names: Sequence[str], known: Sequence[str]) -> str:
    """"; did you mean position?" naming the known probe closest to each unknown name, or ""
    when none is close: one hint for --probes, --fail-on and a config file's keys (--probes
    listed the known probes without it)."""
    import difflib

    close = [m for u in names for m in difflib.get_close_matches(u, list(known), n=1,
                                                                cutoff=0.6)]
    return f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else ""


def get_probe(name: str) -> Probe:
    _load_builtin()
    if name not in _PROBES:
        _load_plugins()
    if name not in _PROBES:
        from judgeaudit.plugins import unknown_suffix

        hint = did_you_mean([name], list(_PROBES))
        raise ValueError(f"unknown probe {name!r}{hint}; "
                         f"known: {', '.join(sorted(_PROBES))}"
                         f"{unknown_suffix('probes', name)}")
    return _PROBES[name]()
