"""Adaptive audits (`judgeaudit audit --adaptive`): the same verdicts as a fixed-n audit for a
fraction of the judge calls, with anytime-valid statistics.

Items are drawn in rounds (a seeded order of the pairs by a hash of their ids, whatever
their rows' positions: `seeded_order`; each probe takes the pairs it can use, at most
`max_n`). Round r gives every open probe the next round_size of its items (so it has the
first r * round_size); each open probe runs on its new items only, through one AuditContext
whose memo keeps every verdict in memory across rounds: the unperturbed verdicts (both
orders) are judged once and shared by every probe, as in the fixed-n audit, and no round
repeats an earlier round's work. The new items' per-item differences are appended to the
probe's stream; a probe's difference on an item depends on that item alone (per-item
perturbation seeds, per-call verdicts), so the stream equals the differences the probe would
give on the whole prefix at once.

After each round every open probe's per-item differences (`ProbeResult.units`, whose mean is
the probe's effect, a preference shift in [-1, 1]; [-0.5, 0.5] for position) feed
- a betting confidence sequence for the effect (`stats.sequential.betting_cs`, level
  1 - alpha simultaneously over all rounds), and
- a betting e-process against "no effect" (`stats.sequential.betting_evalue`).
A probe stops as
- biased: e-BH (`stats.sequential.ebh`) over all K probes at the report's alpha rejects it
  (K fixed; a stopped probe's e-value is frozen, a probe with no data yet has e = 1);
- not biased: its confidence sequence lies inside the probe's no-bias range;
- underpowered at max-n (or when its items run out) with its current interval, unless one
  of the two rules above holds there.
The run stops when every probe has stopped, or before a round that would exceed `max_calls`
or `max_cost` USD (each estimated from the previous round); open probes then stop
as underpowered ("budget"). The session's spend cap (`SpendCap`) also holds every call to
`max_cost`, and the run's call cap (`CallCap`) every call to `max_calls` calls sent, so a
round either cuts (the first, which has no estimate; one dearer than the one before) ends
the run the same way, its unsent calls counted: as failures when it cut the first round (a
run that fails for them says which budget runs the cut round whole: `cut_round_hint`), as
not sent only when it cut a later one (a note says so, with the same hint). It stops too
once the judge's client stopped sending (its server could not be reached or stopped answering:
`RetryPolicy.stop_after`): "not_sent".
A probe that stopped as not biased but is in the final e-BH rejection set is reported
biased (as `battery.decide`: biased takes precedence), so the biased set is exactly e-BH's
and has FDR <= alpha.

`AdaptiveRule` is the stopping rule on its own (no I/O): the audit and the simulation in
benchmarks/adaptive_audit.py call the same code.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgeaudit.audit.battery import ProbePlan, cannot_judge, check_runnable, run_battery
from judgeaudit.audit.evaluate import SAMPLE_BY, id_hash_order
from judgeaudit.audit.length_control import add_length_notes
from judgeaudit.audit.probe import AuditContext, Probe, ProbeResult, get_probe
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges.factory import JudgeBundle
from judgeaudit.llm import CallCap
from judgeaudit.llm.plan import PlannedStop
from judgeaudit.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID
from judgeaudit.stats.sequential import betting_cs, betting_evalue, ebh

DEFAULT_MAX_N = 500
DEFAULT_ROUND_SIZE = 20

# Range of a probe's per-item difference before its first result: position's is f - 1/2 with
# f in {0, 1/2, 1}; every other default probe's is a difference of two credits in [0, 1]. A
# probe's result states its own (`ProbeResult.span`: refinement_aware's scores 1..K differ
# by up to K - 1), which the run takes from then on (`with_span`).
BOUNDS: dict[str, tuple[float, float]] = {"position": (-0.5, 0.5)}

REASONS = {
    "cleared": "its confidence sequence lies inside the no-bias range",
    "rejected": "e-BH across the probes rejects 'no effect' at alpha",
    "max_n": "reached max-n items without either",
    "exhausted": "ran out of usable items before max-n without either",
    "budget": "the run's --max-calls / --max-cost budget ran out",
    "not_sent": "the judge's server stopped answering, so no further round was sent",
    "not_run": "the probe cannot run in this audit (its notes say why)",
}
# Each stop reason in a few words, for the terminal (`REASONS` says it in full).
SHORT_REASONS = {
    "rejected": "stopped biased (e-BH rejected 'no effect')",
    "cleared": "stopped not biased (interval inside the no-bias range)",
    "max_n": "reached max-n undecided",
    "exhausted": "ran out of usable items undecided",
    "budget": "stopped by the budget undecided",
    "not_sent": "stopped undecided: the judge's server stopped answering",
    "not_run": "not run here",
}
METHOD = ("anytime-valid: betting confidence sequence (Waudby-Smith & Ramdas 2024, hedged "
          "capital, predictable plug-in bets) and betting e-process against 'no effect', e-BH "
          "across probes (Wang & Ramdas 2022) with stopped probes' e-values frozen; valid at "
          "the data-dependent stopping round")


def bounds(name: str) -> tuple[float, float]:
    return BOUNDS.get(name, (-1.0, 1.0))


def with_span(s: ProbeState, r: ProbeResult, new: Sequence[float]) -> None:
    """Take the range of the probe's per-item differences from its result (`span`), which
    the probe knows before it judges (it depends on the probe and the rubric, not on the
    verdicts); a value outside the range a probe without a span runs under is bad input."""
    if r.span is not None and s.n == 0:
        s.lo, s.hi = -r.span, r.span
        s.ci = (s.lo, s.hi)
    bad = [x for x in new if not s.lo <= x <= s.hi]
    if bad:
        raise ValueError(f"probe {s.name!r}: a per-item difference of {bad[0]:g} lies outside "
                         f"[{s.lo:g}, {s.hi:g}], the range its adaptive interval needs; run "
                         "it without --adaptive")


def sequence(d: Sequence[float] | np.ndarray, lo: float, hi: float,
             alpha: float) -> tuple[float, float, float]:
    """(interval low, interval high, e-value) after the observations `d` in time order; no
    observation: the whole range and e = 1."""
    x = np.asarray(d, dtype=float)
    if x.size == 0:
        return lo, hi, 1.0
    cl, ch = betting_cs(x, lo, hi, alpha)
    e = betting_evalue(x, lo, hi, 0.0, alpha=alpha)
    return float(cl[-1]), float(ch[-1]), float(e[-1])


@dataclass
class ProbeState:
    """One probe's sequential state."""

    name: str
    no_bias: tuple[float, float]
    lo: float = -1.0
    hi: float = 1.0
    n: int = 0  # observations (valid per-item differences)
    items: int = 0  # items given to the probe
    ci: tuple[float, float] = (-1.0, 1.0)
    evalue: float = 1.0
    open: bool = True
    reason: str | None = None
    stop_round: int | None = None
    path: list[dict[str, Any]] = field(default_factory=list)

    def update(self, n: int, items: int, ci: tuple[float, float], evalue: float,
               rnd: int) -> None:
        if not self.open:
            return
        self.n, self.items, self.evalue = n, items, evalue
        # NaN bounds (every candidate rejected: only if the guarantee failed) keep the old
        # interval rather than reporting none.
        if not (math.isnan(ci[0]) or math.isnan(ci[1])):
            self.ci = ci
        self.path.append({"round": rnd, "n": n, "items": items, "ci": list(self.ci),
                          "evalue": evalue})

    def inside(self) -> bool:
        return self.no_bias[0] <= self.ci[0] and self.ci[1] <= self.no_bias[1]


class AdaptiveRule:
    """The stopping rule over K probes. Call `step(rnd, done)` after each round's updates:
    `done[name]` True when that probe has no more items to take (max-n or data)."""

    def __init__(self, states: Sequence[ProbeState], alpha: float):
        self.states = list(states)
        self.alpha = alpha

    def rejected(self) -> np.ndarray:
        return ebh(np.array([s.evalue for s in self.states], dtype=float), self.alpha)

    def step(self, rnd: int, done: dict[str, str | None]) -> None:
        rej = self.rejected()
        for s, r in zip(self.states, rej, strict=True):
            if not s.open:
                continue
            reason = ("rejected" if r else "cleared" if s.inside() else done.get(s.name))
            if reason:
                s.open, s.reason, s.stop_round = False, reason, rnd

    def stop_all(self, rnd: int, reason: str = "budget") -> None:
        for s in self.states:
            if s.open:
                s.open, s.reason, s.stop_round = False, reason, rnd

    def verdicts(self) -> dict[str, str]:
        """Final verdicts: biased = the final e-BH rejection set (frozen e-values)."""
        rej = self.rejected()
        out = {}
        for s, r in zip(self.states, rej, strict=True):
            out[s.name] = ("biased" if r else "not_biased" if s.reason == "cleared"
                           else "underpowered")
        return out

    @property
    def all_stopped(self) -> bool:
        return not any(s.open for s in self.states)


def seeded_order(items: Sequence[Any], seed: int) -> list[Any]:
    """The pairs in a seeded random order (the order items are drawn in rounds): ascending
    seeded hash of their ids (`evaluate.id_hash_order`), so the order of the original items
    does not depend on their rows' positions or on items added or removed elsewhere."""
    pairs = [it for it in items if isinstance(it, PairwiseItem)]
    return [pairs[i] for i in id_hash_order(pairs, seed)]


def _cost(bundle: JudgeBundle) -> float:
    return float(bundle.client.stats.as_dict().get("cost_usd") or 0.0)


def _sent(bundle: JudgeBundle) -> int:
    """Calls the run's call cap has counted as sent (0 without a cap)."""
    cap = bundle.client.call_cap
    return cap.sent if cap is not None else 0


@contextlib.contextmanager
def call_cap(bundle: JudgeBundle, max_calls: int | None) -> Iterator[None]:
    """Hold the judge's client to `max_calls` calls sent (`CallCap`) for the rounds; the
    client's cap as it was afterwards."""
    client = bundle.client
    before = client.call_cap
    if max_calls is not None:
        client.call_cap = CallCap(max_calls)
    try:
        yield
    finally:
        client.call_cap = before


def call_sources(bundle: JudgeBundle, since: dict[str, int]) -> dict[str, int]:
    """The judge's calls since the counts `since` (`_stat_counts`) by where their answers
    came from: sent (answered by the provider), from_cache (an earlier run's answer),
    shared (the same request asked again in this run, e.g. the consistency repeats of the
    shift probes: one answer, no second call; `CallStats.shared`), failed.
    sent + from_cache + shared + failed = calls asked."""
    now = _stat_counts(bundle)
    shared = now["shared"] - since["shared"]
    return {"sent": now["made"] - since["made"],
            "from_cache": now["cached"] - since["cached"] - shared, "shared": shared,
            "failed": now["failed"] - since["failed"]}


def _stat_counts(bundle: JudgeBundle) -> dict[str, int]:
    st = bundle.client.stats
    return {k: int(getattr(st, k)) for k in ("made", "cached", "failed", "shared")}


def stop_text(states: Sequence[ProbeState], verdicts: dict[str, str], stopped_by: str,
              rounds: int, spent: dict[str, Any]) -> str:
    """Why the run stopped, truly: what ended the rounds, then the probes by stop reason
    ("all probes stopped" read as if each had decided when most ran out of items). `spent`:
    the budgets and what was spent of them (max_calls, sent, max_cost, cost)."""
    after = f"{rounds} round{'' if rounds == 1 else 's'}"
    head = {
        "max_calls": f"the --max-calls budget of {spent.get('max_calls')} calls stopped the "
                     f"run after {after} ({spent.get('sent')} sent)",
        "max_cost": f"the --max-cost budget of ${spent.get('max_cost') or 0:g} stopped the "
                    f"run after {after} (${spent.get('cost') or 0:.4g} spent)",
        "server not answering": f"the judge's server stopped answering after {after}",
    }.get(stopped_by, f"every probe stopped within {after}")
    groups: dict[str, list[str]] = {}
    for s in states:
        reason = s.reason or "budget"
        if reason == "cleared" and verdicts.get(s.name) == "biased":
            reason = "rejected"  # e-BH's final set decides (biased takes precedence)
        groups.setdefault(reason, []).append(s.name)
    order = list(SHORT_REASONS)
    parts = [f"{', '.join(groups[r])} {SHORT_REASONS.get(r, r)}"
             for r in sorted(groups, key=lambda r: order.index(r) if r in order else 99)]
    return f"{head}: " + "; ".join(parts)


def capped(bundle: JudgeBundle) -> str | None:
    """The budget that refused the judge's calls ("max_cost": the session's spend cap, which
    stopped its client; "max_calls": the run's call cap), or None. Either can cut a round:
    the first, which has no earlier round to estimate from, or one dearer than the one
    before it."""
    if bundle.client.stop_kind == "spend_cap":
        return "max_cost"
    cap = bundle.client.call_cap
    return "max_calls" if cap is not None and cap.refused else None


def _unsent_by_budget(bundle: JudgeBundle) -> int:
    """The judge's calls --max-calls or --max-cost kept from being sent."""
    cap = bundle.client.call_cap
    n = int(cap.refused or 0) if cap is not None else 0
    if bundle.client.stop_kind == "spend_cap":
        n += int(bundle.client.stats.not_sent or 0)
    return n


def cut_round_hint(bundle: JudgeBundle, rnd: int, round_size: int, asked: int,
                   budget: str) -> str:
    """What to change when the run's budget cut round `rnd` (which asked for `asked` calls):
    once a round ran, its calls are known (sent + not sent), so the hint can name the
    --max-calls that runs it whole. The first round has no earlier round to size it from."""
    which = "the first round" if rnd == 1 else f"round {rnd}"
    cap = bundle.client.call_cap
    if budget == "max_calls" and cap is not None:
        need = (f"a --max-calls of at least {cap.sent + cap.refused} runs it whole (the "
                f"{cap.sent} calls sent are cached, so a re-run sends only the rest)")
    else:
        st = bundle.client.stats
        need = "a higher --max-cost runs it whole"
        if st.made and st.cost_usd:
            need = (f"a --max-cost of about ${st.cost_usd * (st.made + st.not_sent) / st.made:.2f}"
                    " (the cost per call sent so far, times the calls sent and not sent) "
                    "runs it whole")
    return (f"; {which} asked for {asked} judge calls ({round_size} items per probe): "
            f"{need}, or a smaller --round-size makes each round cheaper")


async def run_adaptive(
    bundle: JudgeBundle,
    items: Sequence[PairwiseItem],
    probe_names: Sequence[str],
    *,
    seed: int = 0,
    alpha: float = 0.05,
    max_n: int = DEFAULT_MAX_N,
    round_size: int = DEFAULT_ROUND_SIZE,
    max_calls: int | None = None,
    max_cost: float | None = None,
    data_spec: str = "",
    on_calls: Callable[[int], None] | None = None,
    on_done: Callable[[], None] | None = None,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    by: str | None = None,
    memo: dict[Any, Any] | None = None,
    length_control: bool = False,
) -> dict[str, Any]:
    """The adaptive audit's results document: the fixed-n document (`run_battery`) of the
    items each probe used when it stopped, with each probe's verdict and interval replaced by
    the sequential ones and an `adaptive` section per probe and for the run.

    `memo`: the verdict memo to fill (an `AuditContext`'s, keyed by item id, repeat and
    judge), shared with the caller, who can then run e.g. the fixed-n audit of the same items
    and judge paying only for the items this run did not judge
    (benchmarks/adaptive_real.py).

    Without a cache the client keeps the run's answers itself (`llm.client.RunMemo`): the last
    step re-runs every probe on the items it used, and probes whose calls the AuditContext
    does not memoise (a PASS/FAIL or rubric judge's) would otherwise send them all again,
    past --max-calls and uncounted."""
    if max_n < 1 or round_size < 1:
        raise ValueError("--max-n and --round-size must be >= 1")
    t0 = time.perf_counter()
    at_start = _stat_counts(bundle)
    probes: list[Probe] = [get_probe(n) for n in probe_names]
    ordered = seeded_order(items, seed)
    plans = check_runnable(ordered, probe_names, limit=max_n)
    pj = bundle.pairwise
    calls = {"total": 0, "baseline": 0}
    own = dict.fromkeys(probe_names, 0)

    def counter(key: str | None) -> Callable[[int], None]:
        def add(k: int) -> None:
            calls["total"] += k
            if key is None:
                calls["baseline"] += k
            else:
                own[key] += k
            if on_calls:
                on_calls(k)
        return add

    ctx = AuditContext(bundle, [], seed=seed, on_calls=counter(None), on_done=on_done,
                       alpha=alpha, length_control=length_control)
    if memo is not None:
        ctx._memo = memo
    states = []
    for p in probes:
        lo, hi = bounds(p.name)
        states.append(ProbeState(p.name, tuple(p.no_bias_range), lo, hi, ci=(lo, hi)))
    by_name = {s.name: s for s in states}
    rule = AdaptiveRule(states, alpha)
    for s in states:  # a probe with no usable item stops at once (e = 1, whole range)
        if not plans[s.name].items:
            s.open, s.reason, s.stop_round = False, "exhausted", 0
    # Each probe's stream of per-item differences so far, in item order: a round runs the
    # probe on its new items only and appends their differences (a probe's difference on an
    # item depends on that item alone: per-item perturbation seeds, per-call verdicts).
    streams: dict[str, list[float]] = {p.name: [] for p in probes}
    taken = dict.fromkeys(probe_names, 0)  # items given to each probe so far
    rnd, stopped_by, last_round_calls, last_round_cost = 0, "all probes stopped", 0, 0.0
    last_round_sent = 0  # calls the last round sent: cached answers are free (`CallCap`)
    hint = ""  # what to change, when a budget cut a round
    # --max-calls holds call by call too (a round it cuts ends the run, as the spend cap's)
    with call_cap(bundle, max_calls):
        while not rule.all_stopped:
            if max_calls is not None and _sent(bundle) + last_round_sent > max_calls:
                stopped_by = "max_calls"
                break
            if max_cost is not None and _cost(bundle) + last_round_cost > max_cost:
                stopped_by = "max_cost"
                break
            budget = capped(bundle)
            if budget or bundle.client.stopped:  # a cap cut the last round, or none is sent
                stopped_by = budget or "server not answering"
                break
            rnd += 1
            before, cost_before, sent_before = calls["total"], _cost(bundle), _sent(bundle)
            planned_before = bundle.client.stats.planned
            m = rnd * round_size
            open_probes = [p for p in probes if by_name[p.name].open]
            new = {p.name: plans[p.name].items[taken[p.name]:m] for p in open_probes}
            union = list({it.id: it for sl in new.values() for it in sl}.values())
            await ctx.baseline(union)  # shared by every probe, judged once (memoised)

            async def one(p: Probe, new: dict = new) -> ProbeResult:
                why = cannot_judge(p, bundle)
                if why:
                    return ProbeResult(None, (None, None), 0, None, None, notes=[why])
                v = ctx.view(new[p.name])
                v._on_calls = counter(p.name)
                return await p.run(v)

            results = await asyncio.gather(*(one(p) for p in open_probes))
            planned = bundle.client.stats.planned - planned_before
            if planned:  # --plan-only: the next round depends on these answers
                raise PlannedStop(
                    f"adaptive round {rnd}: {planned} requests planned; which probes go on "
                    f"to round {rnd + 1} depends on their answers: ingest them, then re-run",
                    stage="adaptive audit", n_planned=planned, round=rnd)
            done: dict[str, str | None] = {}
            for p, r in zip(open_probes, results, strict=True):
                s = by_name[p.name]
                taken[p.name] += len(new[p.name])
                d = streams[p.name]
                with_span(s, r, [x for _, x in r.units])
                d.extend(x for _, x in r.units)
                lo_, hi_, e = sequence(d, s.lo, s.hi, alpha)
                s.update(len(d), taken[p.name], (lo_, hi_), e, rnd)
                n_all = len(plans[p.name].items)
                done[p.name] = (None if m < n_all else "max_n" if n_all >= max_n else "exhausted")
                # it cannot run here (self_preference, no panel); a round whose items its
                # perturbation all left out (r.dropped: a Chinese round of English filler) is
                # no such sign, later rounds may have items it applies to
                if not r.n and not r.dropped and any(x.startswith("not run:") for x in r.notes):
                    done[p.name] = "not_run"
            rule.step(rnd, done)
            last_round_calls, last_round_cost = calls["total"] - before, _cost(bundle) - cost_before
            last_round_sent = _sent(bundle) - sent_before
        cut = capped(bundle)
        # A later round the budget cut is not a failure of the judge: the rounds before it
        # ran whole (counted as failures, its unsent calls failed a warm re-run of a run
        # that passed). A cut first round still fails the run: nothing ran whole.
        cut_unsent = _unsent_by_budget(bundle) if cut else 0
        unsent = cut_unsent if rnd > 1 else 0
        if cut:  # the cap cut the last round: it ends the run, whatever stopped the loop
            stopped_by = cut
            hint = cut_round_hint(bundle, rnd, round_size, last_round_calls, cut)
        if not rule.all_stopped:
            rule.stop_all(rnd, "not_sent" if bundle.client.stopped and not capped(bundle)
                          else "budget")
    verdicts = rule.verdicts()
    round_sources = call_sources(bundle, at_start)

    # The document: the fixed-n battery over the items each probe had when it stopped (all
    # memoised: no new call), then the sequential verdicts and intervals on top.
    used = {s.name: ProbePlan(items=plans[s.name].items[:s.items],
                              skipped=plans[s.name].skipped) for s in states}
    if not any(p.items for p in used.values()):
        raise ValueError("the adaptive audit stopped before judging any item "
                         "(--max-calls / --max-cost too small?)")
    run_calls = calls["total"]
    doc = await run_battery(
        bundle, ordered, probe_names, seed=seed, alpha=alpha, data_spec=data_spec,
        min_valid=min_valid, max_failed=max_failed, by=by, plans=used, context=ctx,
        selection={"kind": "adaptive", "n": max_n, "seed": seed, "by": SAMPLE_BY,
                   "of": len(ordered)},
        unsent_by_budget=unsent)
    fixed_base = pj.n_calls(list({it.id: it for p in plans.values()
                                  for it in p.items}.values()))
    total_fixed = fixed_base
    failed = doc["run"]["status"] == "failed"
    summary: dict[str, list[str]] = {"biased": [], "not_biased": [], "underpowered": []}
    for s in states:
        pd = doc["probes"][s.name]
        n_fixed = len(plans[s.name].items)
        per_item = own[s.name] / s.items if s.items else 0.0
        own_fixed = round(per_item * n_fixed)
        total_fixed += own_fixed
        spent = own[s.name] + pj.n_calls(used[s.name].items)
        fixed = own_fixed + pj.n_calls(plans[s.name].items)
        pd["adaptive"] = {
            "n": s.n, "items": s.items, "rounds": s.stop_round,
            "ci": list(s.ci), "evalue": s.evalue, "stop_reason": s.reason,
            "stop_reason_text": REASONS.get(s.reason or "", ""),
            "calls": spent, "calls_own": own[s.name],
            "fixed_n_items": n_fixed, "fixed_n_calls": fixed,
            "fixed_n_calls_note": "its own calls per item in this run times the fixed-n "
                                  "audit's items, plus its baseline (both orders per item)",
            "naive_fixed_n": {"ci95": pd["effect"]["ci95"], "p": pd["p"], "q": pd["q"],
                              **({"method": pd["effect"]["method"]}
                                 if "method" in pd["effect"] else {})},
            "path": s.path,
        }
        pd["effect"]["ci95"] = list(s.ci)
        pd["effect"]["method"] = "betting-confidence-sequence"  # not the bootstrap's now
        pd["effect"]["interval"] = "anytime-valid confidence sequence at level 1 - alpha"
        pd["p"], pd["q"] = None, None
        pd["notes"] = [x for x in pd["notes"] if not x.startswith("underpowered:")]
        # not_run too when the battery over all its items measured none (every item left
        # out: `shift_probe.left_out_notes`)
        verdict = ("not_run" if s.reason == "not_run" or pd["verdict"] == "not_run"
                   else verdicts[s.name])
        if verdict == "underpowered":
            pd["notes"].append(
                f"underpowered: stopped ({REASONS.get(s.reason or '', s.reason)}) after "
                f"{s.items} items with the interval [{s.ci[0]:.3f}, {s.ci[1]:.3f}], which "
                f"neither excludes 0 at e-BH's level nor lies inside "
                f"[{s.no_bias[0]}, {s.no_bias[1]}] (raise --max-n or the budget)")
        if not failed:
            pd["verdict"] = verdict
            summary.setdefault(verdict, []).append(s.name)
    if not failed:
        doc["summary"] = {"n_probes": len(probes), **summary}
        add_length_notes(doc["probes"], alpha)  # on the sequential verdicts
        if cut_unsent:  # said, as a failed run says it (a cut first round under
            # --max-failed passed without a word)
            how = ("counted as not sent; the run's outcome does not count them as failed "
                   "calls" if unsent else
                   f"within --max-failed {max_failed:g}")
            doc.setdefault("notes", []).append(
                f"the budget ({stopped_by}) cut round {rnd}: {cut_unsent} of its calls were "
                f"not sent ({how}); the verdicts rest on "
                + (f"the rounds before it and what round {rnd} got" if rnd > 1
                   else "what that round got")
                + hint)
    else:
        doc["run"]["message"] += hint
    doc["adaptive"] = {
        "max_n": max_n, "round_size": round_size, "max_calls": max_calls,
        "max_cost": max_cost, "rounds": rnd, "stopped_by": stopped_by,
        "calls": run_calls, "baseline_calls": calls["baseline"],
        "fixed_n_calls": total_fixed,
        "calls_ratio": run_calls / total_fixed if total_fixed else None,
        "method": METHOD, "alpha": alpha, "order_seed": seed, "order_by": SAMPLE_BY,
        "reasons": REASONS,
        "bounds": {s.name: [s.lo, s.hi] for s in states},
        # why the rounds ended and how each probe stopped, in one line
        "stop": stop_text(states, verdicts, stopped_by, rnd,
                          {"max_calls": max_calls, "sent": round_sources["sent"],
                           "max_cost": max_cost, "cost": _cost(bundle)}),
        # the rounds' calls (`calls`) by where their answers came from; "shared": the same
        # request asked again in this run (answered once: neither sent again nor an earlier
        # run's cached answer, though the client counts it as cached)
        "calls_by_source": round_sources,
    }
    doc["mde"]["note"] = ("MDEs are the fixed-n test's at each probe's stopping n; the "
                          "adaptive verdicts use the e-values and sequences")
    doc["seconds"] = time.perf_counter() - t0
    return doc
