"""Run a set of probes against one judge, then add Benjamini-Hochberg q-values across the
whole report and a verdict per probe: biased / not biased / underpowered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from judgeaudit.audit.evaluate import (
    check_field,
    field_key,
    label_warnings,
    no_verdict_counted,
    pair_credit,
    select_items,
)
from judgeaudit.audit.length_control import add_length_notes
from judgeaudit.audit.metrics import estimate, text_vs_probs
from judgeaudit.audit.paired import POWER, effect_dict, paired_stats
from judgeaudit.audit.panel import panel_section
from judgeaudit.audit.probe import (
    ASKER,
    DROP_REASONS,
    AuditContext,
    Probe,
    ProbeResult,
    get_probe,
)
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges.factory import JudgeBundle
from judgeaudit.outcome import (
    DEFAULT_MAX_FAILED,
    DEFAULT_MIN_VALID,
    answers_read,
    assess,
    probe_verdict,
    sum_calls,
)
from judgeaudit.stats import benjamini_hochberg


def not_run(result: ProbeResult) -> bool:
    """A probe that could not run here (no items it can use, self_preference without a
    panel): verdict "not_run", not "underpowered", which says the data could not tell."""
    return not result.n and any(x.startswith("not run:") for x in result.notes)


def decide(result: ProbeResult, q: float | None, no_bias: tuple[float, float],
           alpha: float) -> str:
    """A probe's verdict by the one rule (`outcome.probe_verdict`)."""
    return probe_verdict(result.effect, result.ci95, q, no_bias, alpha)


@dataclass
class ProbePlan:
    """The items one probe gets (in data order) and those it passed over for want of a
    label, by reason (item ids)."""

    items: list[PairwiseItem] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)


DEFAULT_N = 40  # items per probe unless --full


def audit_items(items: Sequence[Any], *, n: int | None = None, sample: int | None = None,
                full: bool = False, seed: int = 0
                ) -> tuple[list[Any], int | None, dict[str, Any]]:
    """The audit's choice of items, shared by the CLI and the API: (items, limit, selection).
    `sample`: N items drawn at random (seeded, kept in data order), each probe using those it
    can (no limit); otherwise every item with each probe taking the first `n` it can use
    (default DEFAULT_N; `full`: all unless `n` is given). Not both `n` and `sample`."""
    if n is not None and sample is not None:
        raise ValueError("--n and --sample both choose the items; give one of them")
    chosen, selection = select_items(items, sample=sample, seed=seed)
    limit = None if sample is not None else (n if full else n or DEFAULT_N)
    return chosen, limit, selection


# The reasons a plan skips an item for want of a label (the rest: its perturbation).
LABEL_SKIPS = ("no_label", "tie_label")
NOT_APPLICABLE = "perturbation_not_applicable"


def plan_items(items: Sequence[Any], probes: Sequence[Probe], *,
               limit: int | None = None) -> dict[str, ProbePlan]:
    """Each probe's items: every pair for a probe that needs no label, pairs labelled 1 or 2
    for one that does (an unlabelled or tie-labelled pair is skipped and counted), and of
    those the pairs its perturbation applies to (`Probe.inapplicable`, a pure function of
    the text: the others are skipped and counted as perturbation_not_applicable, no call
    made for them); with `limit`, the first `limit` such items (the scan stops there, so
    skips are counted up to the last item taken)."""
    pairs = [it for it in items if isinstance(it, PairwiseItem)]
    plans: dict[str, ProbePlan] = {}
    for probe in probes:
        plan = ProbePlan()
        for it in pairs:
            if limit is not None and len(plan.items) >= limit:
                break
            if probe.needs_label and it.label not in (1, 2):
                plan.skipped.setdefault("no_label" if it.label is None else "tie_label",
                                        []).append(it.id)
                continue
            if probe.inapplicable(it) is not None:
                plan.skipped.setdefault(NOT_APPLICABLE, []).append(it.id)
                continue
            plan.items.append(it)
        plans[probe.name] = plan
    return plans


def _label_parts(plan: ProbePlan) -> list[str]:
    return [f"{len(ids)} {'without a label' if r == 'no_label' else 'tie-labelled'}"
            for r, ids in plan.skipped.items() if r in LABEL_SKIPS and ids]


def _inapplicable(probe: Probe, plan: ProbePlan, pairs: Sequence[PairwiseItem]) -> list[Any]:
    """The perturbation's results on the pairs the plan skipped as not applicable (their
    reasons), recomputed from the text (an adaptive run's plan keeps only the ids)."""
    ids = set(plan.skipped.get(NOT_APPLICABLE) or ())
    found = [probe.inapplicable(it) for it in pairs if it.id in ids] if ids else []
    return [r for r in found if r is not None]


def cannot_run(probe: Probe, plan: ProbePlan, pairs: Sequence[PairwiseItem]) -> str:
    """Why a probe got no item (one sentence)."""
    from judgeaudit.audit.shift_probe import left_out_notes

    if not pairs:
        return "not run: the data has no pairwise items"
    parts = _label_parts(plan)
    na = _inapplicable(probe, plan, pairs)
    if na and not parts:  # as a probe whose perturbation left out every item says it
        return left_out_notes(na)[0]
    line = ("not run: this probe needs pairs with a known better response (label 1 or 2); "
            f"of the {len(pairs)} pairs, " + " and ".join(parts))
    if na:
        line += (f"; its perturbation left out the other {len(na)}: "
                 + left_out_notes(na)[0].split(": ", 2)[-1])
    return line


def cannot_judge(probe: Probe, bundle: Any) -> str | None:
    """Why the judge cannot serve this probe at all, or None: a replay judge holds verdicts
    on the recorded texts only, so a probe that rewrites them would fail every call (the
    run then failed as a whole, position included)."""
    provider = bundle.client.provider
    if getattr(provider, "recorded_only", False) and not probe.judges_texts_as_given:
        return (f"not run: the judge ({provider.name}) answers only the texts it recorded, "
                "and this probe judges rewritten ones (position runs on recorded verdicts)")
    return None


def check_runnable(items: Sequence[Any], probe_names: Sequence[str], *,
                   limit: int | None = None) -> dict[str, ProbePlan]:
    """The plan, or ValueError (one line) when no selected probe can run on these items."""
    probes = [get_probe(n) for n in probe_names]
    plans = plan_items(items, probes, limit=limit)
    if any(p.items for p in plans.values()):
        return plans
    pairs = [it for it in items if isinstance(it, PairwiseItem)]
    n_pairs = len(pairs)
    if not n_pairs:
        raise ValueError("the audit judges pairwise items; the data has none")
    if any(p.skipped.get(NOT_APPLICABLE) for p in plans.values()):
        raise ValueError("no selected probe can run on this data: " + "; ".join(
            f"{p.name}: {cannot_run(p, plans[p.name], pairs).removeprefix('not run: ')}"
            for p in probes))
    n_lab = sum(isinstance(it, PairwiseItem) and it.label in (1, 2) for it in items)
    raise ValueError(
        f"no selected probe can run on this data: {', '.join(probe_names)} need pairs with a "
        f"known better response (label 1 or 2), and {n_lab} of the {n_pairs} pairs have one "
        "(the position probe needs no label)")


def _reason_rank(reason: str) -> int:
    keys = list(DROP_REASONS)
    return keys.index(reason) if reason in keys else len(keys)


def _counts(dropped: dict[str, Any]) -> dict[str, int]:
    """{reason: number of items}, reasons in DROP_REASONS order, empty ones left out."""
    return {r: len(ids) for r, ids in sorted(dropped.items(), key=lambda kv: _reason_rank(kv[0]))
            if ids}


def breakdown(units: Sequence[tuple[str, float]], items: Sequence[PairwiseItem], by: str,
              seed: int = 0, span: float | None = None) -> dict[str, Any]:
    """A probe's effect per value of the item field or metadata key `by`: mean of the
    per-item differences in that group, its 95% interval (`paired_estimate`: exact where
    fewer than 5 items of the group moved and the probe states its `span`), n and the sign
    test's p (no q: these are descriptive, not part of the report's family of tests)."""
    groups: dict[str, list[float]] = {}
    n_items: dict[str, int] = {}
    key_of = {}
    for it in items:
        k = field_key(it, by)
        key_of[it.id] = k
        n_items[k] = n_items.get(k, 0) + 1
        groups.setdefault(k, [])
    for item_id, d in units:
        k = key_of.get(item_id)
        if k is not None:
            groups[k].append(d)
    rows = []
    for k in sorted(groups):
        st = paired_stats(groups[k], seed=seed, mde=False, span=span)
        rows.append({"value": k, "n_items": n_items[k], "n": st["n"],
                     "effect": effect_dict(st["estimate"]),
                     "p": st["p"]})
    return {"by": by, "rows": rows}


def _mean_accuracy(pairs: Sequence[tuple[PairwiseItem, Any]]) -> dict[str, Any]:
    """Accuracy under the mean pair rule with its Wilson interval: `evaluate`'s computation
    (`pair_credit`, `estimate`), so the audit's baseline and evaluate's numbers agree, with
    the pairs it counted that had an order without a verdict (`no_verdict_counted`)."""
    credit = [pair_credit(it.label, v.orders, "mean") for it, v in pairs]  # type: ignore[arg-type]
    return {**estimate(sum(credit), len(credit)), **no_verdict_counted(pairs)}


def _baseline_section(items: Sequence[PairwiseItem], base: Sequence[Any]) -> dict[str, Any]:
    """The unperturbed verdicts against the labels (labels 1 or 2): accuracy (LLMBar's mean
    over orders; an invalid verdict is wrong), accuracy over the pairs whose every verdict
    was valid (as `evaluate`'s `accuracy_valid`: the audit counted unreadable answers as
    wrong without saying so), the invalid verdicts among them, and the share of decisive
    verdicts naming the labelled response, with the inverted-labels warning of `evaluate`."""
    lab = [(it, v) for it, v in zip(items, base, strict=True) if it.label in (1, 2)]
    valid_all = [(it, v) for it, v in lab if v.orders and all(o.valid for o in v.orders)]
    acc = _mean_accuracy(lab)
    decisive = [o.winner == it.label for it, v in lab for o in v.orders if o.winner in (1, 2)]
    dec = estimate(sum(decisive), len(decisive))
    return {"n_labelled": len(lab), "accuracy": acc,
            "accuracy_valid": _mean_accuracy(valid_all),
            "n_verdicts": sum(len(v.orders) for _, v in lab),
            "n_invalid": sum(not o.valid for _, v in lab for o in v.orders),
            "decisive_accuracy": dec,
            "text_vs_probs": text_vs_probs(base),
            "warnings": label_warnings(acc, None, decisive=dec)}


def _sent_after_all(dropped: dict[str, Any]) -> None:
    """Move a probe's items left out as "not_sent" to "call_failed" (in place), for a run
    whose clients sent every call (their `not_sent` is 0). A call the breaker stopped while
    it waited to retry failed with the client's "not sent: ..." message, which
    `parse.call_failure` reads as never sent: a closed port gave calls.failed 10, not_sent 0
    beside 5 items left out as "never sent"."""
    ids = dropped.pop("not_sent", None)
    if ids:
        dropped["call_failed"] = sorted({*dropped.get("call_failed", ()), *ids})


def _merged(*parts: dict[str, list[str]]) -> dict[str, list[str]]:
    """{reason: ids} of several sources, the ids of a reason in both kept (a plan's
    perturbation_not_applicable beside a probe's failed answer-preservation checks)."""
    out: dict[str, list[str]] = {}
    for part in parts:
        for reason, ids in part.items():
            out[reason] = list(dict.fromkeys([*out.get(reason, []), *ids]))
    return out


def _probe_doc(probe: Probe, r: ProbeResult, q: float | None, verdict: str,
               plan: ProbePlan, pairs: Sequence[PairwiseItem]) -> dict[str, Any]:
    doc = probe.header()
    dropped = _merged(plan.skipped, r.dropped)
    na = _inapplicable(probe, plan, pairs) if plan.items else []
    doc.update(
        effect=effect_dict(r.estimate()), n=r.n, p=r.p, q=q, mde=r.mde,
        mde_detail=r.mde_detail, verdict=verdict, flag=r.flag, rates=r.rates,
        n_items=len(plan.items), dropped=_counts(dropped), n_invalid=r.n_invalid,
        n_dropped=r.n_dropped + len(na), plot=r.plot, examples=r.examples,
        notes=list(r.notes),
        per_item={str(k): v for k, v in r.units},  # for `judgeaudit compare` (paired)
    )
    if r.span is not None:
        doc["span"] = r.span  # every per-item value lies in [-span, span]
    if plan.items and (parts := _label_parts(plan)):
        doc["notes"].append(f"{' and '.join(parts)} pair(s) left out: this probe needs a "
                            "known better response (label 1 or 2)")
    if na:  # skipped by the plan, so the probe's own notes do not say why
        from judgeaudit.audit.shift_probe import not_applicable_note

        doc["notes"].append(not_applicable_note(na))
    if verdict == "underpowered" and r.mde is not None:
        doc["notes"].append(
            f"underpowered: with n = {r.n} the smallest detectable effect is about "
            f"{r.mde:.2f}; the interval does not rule out an effect outside "
            f"[{probe.no_bias_range[0]}, {probe.no_bias_range[1]}] (run with --full or more "
            "items)")
        lo, hi = r.ci95
        if lo is not None and hi is not None and (lo > 0 or hi < 0) and r.p is not None:
            qs = "n/a" if q is None else f"{q:.2g}"
            doc["notes"].append(
                f"its 95% interval excludes 0 but its test does not reject 'no effect' (exact "
                f"p = {r.p:.2g}; q = {qs} after Benjamini-Hochberg across the report's "
                "probes): the verdict follows q; the interval is approximate at "
                "small n and not adjusted for the other probes")
    return doc


def _in_batch_mode(bundles: Sequence[JudgeBundle]) -> bool:
    """Whether any of the judges sends its calls through a provider's batch API (batch=on):
    then the audit's stages are asked at once (`AuditContext.ask`), one batch instead of one
    per stage. Live judges keep the stages' order: their calls already run concurrently
    within a stage, and the breaker, which judges a server by its calls in the order sent,
    stopped a server answering 1 request in 200 early only when a stage came first (asked
    all at once, every call was tried before any gave up)."""
    from judgeaudit.llm.batch import BatchSettings

    return any(isinstance(getattr(b.client.provider, "batch", None), BatchSettings)
               for b in bundles)


async def run_battery(
    bundle: JudgeBundle,
    items: Sequence[PairwiseItem],
    probe_names: Sequence[str],
    *,
    seed: int = 0,
    alpha: float = 0.05,
    panel: Sequence[JudgeBundle] = (),
    data_spec: str = "",
    on_calls: Callable[[int], None] | None = None,
    on_done: Callable[[], None] | None = None,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    limit: int | None = None,
    by: str | None = None,
    selection: dict[str, Any] | None = None,
    plans: dict[str, ProbePlan] | None = None,
    context: AuditContext | None = None,
    length_control: bool = False,
    unsent_by_budget: int = 0,
) -> dict[str, Any]:
    """The audit's results document. Each probe gets the items it can use (`plan_items`:
    pairs labelled 1 or 2 for probes that need a label, every pair otherwise; the first
    `limit` of them when given); a probe with none reports n = 0 and says why, and only when
    no probe can run is the audit refused (ValueError). Items left out are counted by
    reason, per probe and overall (`dropped`). `by`: each probe's effect per value of that
    item field or metadata key. `selection`: how the caller chose `items` (--sample).

    Its `run` section applies the one outcome rule (`outcome.assess`) to the
    unperturbed verdicts: a run with fewer than `min_valid` validly judged items, or more
    than `max_failed` of its calls failed, has failed, and every probe's verdict is then
    `run_failed` (no gate passes it).

    `plans` / `context` (the adaptive audit's hook, `audit.adaptive`): each probe's items as
    chosen by the caller (instead of `plan_items` with `limit`) and an AuditContext whose
    memoised verdicts are reused, so probes re-run on items already judged cost no call.
    `length_control`: the probes that lengthen a response also judge a length-matched
    control (`audit.length_control`)."""
    import judgeaudit

    probes = [get_probe(n) for n in probe_names]
    if plans is None:
        plans = check_runnable(items, probe_names, limit=limit)
    pairs = [it for it in items if isinstance(it, PairwiseItem)]
    if by is not None:
        check_field(pairs, by, "--by")
    # The panel compares judges on every pair (agreement and position need no label).
    panel_plan = plan_items(pairs, [get_probe("position")], limit=limit)["position"] \
        if panel else None
    union = list({it.id: it for p in [*plans.values(), *([panel_plan] if panel_plan else [])]
                  for it in p.items}.values())
    order = {it.id: i for i, it in enumerate(pairs)}
    union.sort(key=lambda it: order[it.id])
    ctx = AuditContext(bundle, union, seed=seed, panel=panel, on_calls=on_calls,
                       on_done=on_done, alpha=alpha, length_control=length_control,
                       together=_in_batch_mode([bundle, *panel])
                       ) if context is None else context.view(union)
    if context is None:  # count a probe's ask of another's verdict as shared, however timed
        ctx._seen = {}
    t0 = time.perf_counter()
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    async def one(p: Probe) -> ProbeResult:
        ASKER.set(p.name)  # this task's asks are the probe's (`AuditContext._seen`)
        plan = plans[p.name]
        why = cannot_run(p, plan, pairs) if not plan.items else cannot_judge(p, bundle)
        if why:
            return ProbeResult(None, (None, None), 0, None, None, notes=[why])
        return await p.run(ctx.view(plan.items))

    # The baseline (shared by every probe), the probes and the panel are asked together:
    # in batch mode each stage awaited on its own was a batch, one provider window each.
    async def panel_part() -> dict[str, Any] | None:
        return await panel_section(ctx.view(panel_plan.items)) if panel_plan else None

    if ctx.together:
        base, panel_doc, *found = await ctx.ask(ctx.baseline(), panel_part(),
                                                *(one(p) for p in probes))
    else:  # as before: the baseline, the probes (at once), then the panel
        base = await ctx.baseline()
        found = list(await asyncio.gather(*(one(p) for p in probes)))
        panel_doc = await panel_part()
    results: list[ProbeResult] = list(found)
    if not any(int(b.client.stats.as_dict().get("not_sent") or 0) for b in [bundle, *panel]):
        for r in results:  # every call was sent: none of its items is "never sent"
            _sent_after_all(r.dropped)
    qs = benjamini_hochberg([r.p if r.p is not None else float("nan") for r in results])
    docs, summary = {}, {"biased": [], "not_biased": [], "underpowered": []}
    dropped: dict[str, set[str]] = {}
    for p, r, q in zip(probes, results, qs, strict=True):
        qv = None if q != q else float(q)  # NaN -> None
        verdict = "not_run" if not_run(r) else decide(r, qv, p.no_bias_range, alpha)
        docs[p.name] = _probe_doc(p, r, qv, verdict, plans[p.name], pairs)
        if by is not None:
            docs[p.name]["breakdown"] = breakdown(r.units, plans[p.name].items, by, seed=seed,
                                                  span=r.span)
        for reason, ids in _merged(plans[p.name].skipped, r.dropped).items():
            dropped.setdefault(reason, set()).update(ids)
        summary.setdefault(verdict, []).append(p.name)
    add_length_notes(docs, alpha)
    if len(pairs) < len(items):
        dropped["not_pairwise"] = {getattr(it, "id", str(i)) for i, it in enumerate(items)
                                   if not isinstance(it, PairwiseItem)}
    baseline = _baseline_section(union, base)
    judges = [bundle.public_spec] + [b.public_spec for b in panel]
    calls = sum_calls([b.client.stats.as_dict() for b in [bundle, *panel]])
    # calls the user's budget kept from being sent (an adaptive run's last round) are not
    # failures of the judge: counted, they failed a warm re-run of a run that passed
    judged = ({**calls, "failed": max(0, int(calls.get("failed") or 0) - unsent_by_budget)}
              if unsent_by_budget else calls)
    # every distinct answer of the audited judge, as its calls line counts them (the panel's
    # are not its own): a judge that reads its baseline and answers garbage to the probes'
    # rewrites had "75.0% unreadable" on the calls line and a run that passed
    own = bundle.client.stats.as_dict()
    run = assess(n_valid=sum(any(o.valid for o in v.orders) for v in base),
                 n_planned=len(union), calls=judged, min_valid=min_valid,
                 max_failed=max_failed, answers=answers_read(own),
                 unreadable=int(own.get("unreadable") or 0))
    if run["status"] == "failed":
        for d in docs.values():
            d["verdict"] = "run_failed"
        summary = {"biased": [], "not_biased": [], "underpowered": [],
                   "run_failed": list(docs)}
    if limit is not None:
        sel = {"kind": "first", "n": limit, "per_probe": True, "of": len(pairs)}
    else:
        sel = dict(selection) if selection else {"kind": "all", "n": len(items),
                                                 "of": len(items)}
    return {
        "command": "audit",
        "version": judgeaudit.__version__,
        "judge": bundle.public_spec,
        **({"judges": judges} if panel else {}),
        "data": data_spec,
        "n_items": len(union),
        "items": {"given": len(items), "pairwise": len(pairs), "used": len(union),
                  "selection": sel},
        "dropped": _counts({k: sorted(v) for k, v in dropped.items()}),
        "drop_reasons": {k: DROP_REASONS[k] for k in DROP_REASONS
                         if dropped.get(k) or any(k in d["dropped"] for d in docs.values())},
        "dropped_note": "distinct items left out of at least one probe, by reason (an item "
                        "can count under several); per probe in probes.*.dropped",
        # what the judge said when it gave no verdict (the calls line counts them)
        "unreadable_examples": ctx.unreadable_examples(),
        "baseline": {k: v for k, v in baseline.items() if k != "warnings"},
        "warnings": baseline["warnings"],
        **({"by": by} if by is not None else {}),
        "template": {"name": bundle.pairwise.template.name,
                     "sha256": bundle.pairwise.template.sha256},
        "prompt_hashes": {bundle.pairwise.template.name: bundle.pairwise.template.sha256,
                          bundle.rubric.template.name: bundle.rubric.template.sha256},
        "calls": calls,
        "run": run,
        "seconds": time.perf_counter() - t0,
        "started": started,
        "alpha": alpha,
        "seed": seed,
        **({"length_control": True} if ctx.length_control else {}),
        "mde": {"power": POWER, "alpha": alpha,
                "method": "each probe's own test at the realised n and discordance (exact "
                          "sign test); see probes.*.mde_detail"},
        "summary": {"n_probes": len(probes), **summary},
        "probes": docs,
        **({"panel": panel_doc} if panel_doc else {}),
    }
