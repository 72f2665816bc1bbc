"""Run a set of probes against one judge, then add Benjamini-Hochberg q-values across the
whole report and a verdict per probe: biased / not biased / underpowered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from judgeaudit.audit.panel import panel_section
from judgeaudit.audit.probe import AuditContext, Probe, ProbeResult, get_probe
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges.factory import JudgeBundle
from judgeaudit.report.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID, assess, sum_calls
from judgeaudit.stats import benjamini_hochberg


def decide(result: ProbeResult, q: float | None, no_bias: tuple[float, float],
           alpha: float) -> str:
    """biased: q < alpha (and the interval excludes 0); not_biased: the 95% interval lies
    inside the no-bias range; otherwise underpowered (the data cannot tell)."""
    lo, hi = result.ci95
    if result.effect is None or lo is None or hi is None:
        return "underpowered"
    if q is not None and q < alpha and (lo > 0 or hi < 0):
        return "biased"
    if no_bias[0] <= lo and hi <= no_bias[1]:
        return "not_biased"
    return "underpowered"


def _probe_doc(probe: Probe, r: ProbeResult, q: float | None, verdict: str) -> dict[str, Any]:
    doc = probe.header()
    doc.update(
        effect={"value": r.effect, "ci95": list(r.ci95)}, n=r.n, p=r.p, q=q, mde=r.mde,
        verdict=verdict, flag=r.flag, rates=r.rates, n_invalid=r.n_invalid,
        n_dropped=r.n_dropped, plot=r.plot, examples=r.examples, notes=list(r.notes),
    )
    if verdict == "underpowered" and r.mde is not None:
        doc["notes"].append(
            f"underpowered: with n = {r.n} the smallest detectable effect is about "
            f"{r.mde:.2f}; the interval does not rule out an effect outside "
            f"[{probe.no_bias_range[0]}, {probe.no_bias_range[1]}] (run with --full or more "
            "items)")
    return doc


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
) -> dict[str, Any]:
    """The audit's results document. Its `run` section applies the one outcome rule
    (`report.outcome.assess`) to the unperturbed verdicts: a run with fewer than `min_valid`
    validly judged items, or more than `max_failed` of its calls failed, has failed, and
    every probe's verdict is then `run_failed` (no gate passes it)."""
    import judgeaudit

    labelled = [it for it in items if isinstance(it, PairwiseItem) and it.label in (1, 2)]
    if not labelled:
        raise ValueError("the audit needs pairwise items with a known better response "
                         "(label 1 or 2)")
    probes = [get_probe(n) for n in probe_names]
    ctx = AuditContext(bundle, labelled, seed=seed, panel=panel, on_calls=on_calls,
                       on_done=on_done)
    t0 = time.perf_counter()
    started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    base = await ctx.baseline()  # shared by every probe
    results: list[ProbeResult] = list(await asyncio.gather(*(p.run(ctx) for p in probes)))
    panel_doc = await panel_section(ctx) if panel else None
    qs = benjamini_hochberg([r.p if r.p is not None else float("nan") for r in results])
    docs, summary = {}, {"biased": [], "not_biased": [], "underpowered": []}
    for p, r, q in zip(probes, results, qs, strict=True):
        qv = None if q != q else float(q)  # NaN -> None
        verdict = decide(r, qv, p.no_bias_range, alpha)
        docs[p.name] = _probe_doc(p, r, qv, verdict)
        summary[verdict].append(p.name)
    judges = [bundle.public_spec] + [b.public_spec for b in panel]
    calls = sum_calls([b.client.stats.as_dict() for b in [bundle, *panel]])
    run = assess(n_valid=sum(any(o.valid for o in v.orders) for v in base),
                 n_planned=len(labelled), calls=calls, min_valid=min_valid,
                 max_failed=max_failed)
    if run["status"] == "failed":
        for d in docs.values():
            d["verdict"] = "run_failed"
        summary = {"biased": [], "not_biased": [], "underpowered": [],
                   "run_failed": list(docs)}
    return {
        "command": "audit",
        "version": judgeaudit.__version__,
        "judge": bundle.public_spec,
        **({"judges": judges} if panel else {}),
        "data": data_spec,
        "n_items": len(labelled),
        "template": {"name": bundle.pairwise.template.name,
                     "sha256": bundle.pairwise.template.sha256},
        "prompt_hashes": {bundle.pairwise.template.name: bundle.pairwise.template.sha256,
                          bundle.rubric.template.name: bundle.rubric.template.sha256},
        "calls": calls,
        "run": run,
        "seconds": time.perf_counter() - t0,
        "started": started,
        "alpha": alpha,
        "summary": {"n_probes": len(probes), **summary},
        "probes": docs,
        **({"panel": panel_doc} if panel_doc else {}),
    }
