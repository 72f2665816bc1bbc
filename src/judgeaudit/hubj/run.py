"""The three HUB-J pipelines end to end, each returning a results document (a dict that
`judgeaudit.report` writes and renders): `run_discover`, `run_quantify`, `run_mitigate`, plus
`run_apply` for a saved mitigation fit. The CLI only parses options and shows progress; the
pipelines are here so that they can be tested and called from Python.

Judge verdicts enter as winners per judge ({item id: 1, 2, 0 = tie/order-inconsistent,
None = invalid}), from live judges (`live_winners`, both orders) or recorded ones
(`recorded_winners`, e.g. PandaLM's GPT-3.5 and PandaLM-7B files through `replay`).

Every document carries a `run` section (`judgeaudit.outcome.assess`): a run that got
fewer than `min_valid` valid units (discover: G-module answers; quantify: judgments of the
rewrites; mitigate: judge verdicts on queries with factor scores) or saw more than
`max_failed` of its calls fail has failed, and its numbers are no result. `calls` adds up
every client the run used (live judges included).
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from judgeaudit.data.fingerprint import fingerprint
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj import mitigate as M
from judgeaudit.hubj.baselines import BASELINE_SETS, criteria_for
from judgeaudit.hubj.discover import DiscoverConfig, discover_factors, extract_features
from judgeaudit.hubj.embed import Embedder
from judgeaudit.hubj.gmodules import g_score
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Factor, prompt_hashes
from judgeaudit.hubj.quantify import LEVELS, client_counts, counts_since, quantify
from judgeaudit.hubj.splits import (
    Split,
    Winner,
    consensus,
    convert_pandalm_verdicts,
    replay_winners,
    split,
    verdict_winners,
)
from judgeaudit.hubj.validate import criteria_for_factors, validate
from judgeaudit.judges.factory import JudgeBundle
from judgeaudit.llm import Client
from judgeaudit.llm.features import spaced_word_count
from judgeaudit.outcome import (
    DEFAULT_MAX_FAILED,
    DEFAULT_MIN_VALID,
    answers_read,
    assess,
    not_sent_reason,
    sum_calls,
)
from judgeaudit.textfile import visible

log = logging.getLogger("judgeaudit.hubj")

Progress = Callable[..., None]


def _calls(clients: Sequence[Client]) -> dict[str, Any]:
    """Call counts of every distinct client (a client shared by two roles counts once), with
    `simulated`: how many of the `made` calls a provider judgeaudit answers itself made
    (`Provider.uses_meta`: sim, simhubj, replay), no request sent and nothing paid, and
    `simulated_by` ({provider: calls}) when any. `made` keeps its meaning (every call
    answered by a provider), so `made - simulated` is what reached a model server: mitigate
    with a `simhubj` scorer read "114 made" where the server got 54 requests."""
    seen: dict[int, Client] = {id(c): c for c in clients}
    out = sum_calls([c.stats.as_dict() for c in seen.values()])
    by: dict[str, int] = {}
    for c in seen.values():
        prov = getattr(c, "provider", None)
        if getattr(prov, "uses_meta", False) and c.stats.made:
            name = str(getattr(prov, "name", "simulated"))
            by[name] = by.get(name, 0) + c.stats.made
    out["simulated"] = sum(by.values())
    if by:
        out["simulated_by"] = by
    return out


AnswerCounts = dict[int, tuple[int, int, int, int]]  # id(client): `quantify.client_counts`
# (distinct answers read, unreadable, calls asked, calls failed)


def answer_counts(clients: Sequence[Client]) -> AnswerCounts:
    """Each distinct client's answers read, unreadable answers, calls asked and failed so
    far: taken before and after a G-module or scorer stage, their difference (`spent`) is
    what that stage read and asked on a client that may also be a judge's."""
    return {id(c): client_counts(c) for c in clients}


def spent(before: AnswerCounts, clients: Sequence[Client]) -> AnswerCounts:
    """What each client read and asked since `before` (`answer_counts`)."""
    return {k: counts_since(before.get(k, (0, 0, 0, 0)), now)
            for k, now in answer_counts(clients).items()}


def _judge_answers(clients: Sequence[Client], not_verdicts: Sequence[AnswerCounts] = ()
                   ) -> dict[str, int]:
    """The judges' answers and how many they could not read (`assess`'s `answers` and
    `unreadable`), over the judges' clients only: the G-modules' and scorer's calls in the
    run's call counts would hide a judge answering garbage. Both count distinct answers
    (`outcome.answers_read`, as `CallStats.answers_read`): an answer read again in the run
    is one answer, as it is one unreadable answer (`Client.note_verdict`).

    `not_verdicts`: what G-module or scorer stages read on these clients (`spent`), taken
    out: a judge that is also the generator (quantify's default), the scorer or the
    G-module LLM shares one client, and its G-module answers diluted the gate. `quantify
    --judges 'simhubj?...&invalid=0.25'` passed with "182 unreadable of 1120 (16.2%)", 480
    of them readable G_inj/G_check answers; the judge's own share was 182 of 640 (28%)."""
    seen = {id(c): c.stats for c in clients}
    answers = sum(answers_read(vars(st)) for st in seen.values())
    unreadable = sum(st.unreadable for st in seen.values())
    for part in not_verdicts:
        for k, (a, u, *_calls) in part.items():
            if k in seen:
                answers -= a
                unreadable -= u
    return {"answers": max(answers, 0), "unreadable": max(unreadable, 0)}


def judge_answer_rows(named: Sequence[tuple[str, Client]],
                      not_verdicts: Sequence[AnswerCounts] = ()) -> dict[str, dict[str, int]]:
    """Each live judge's own answers and unreadable answers (`_judge_answers` of its client
    alone; a client two judges share is counted under the first), for the gate per judge and
    the terminal's line: pooled over judges, a judge answering 9% garbage beside a clean one
    read 4.5%."""
    rows: dict[str, dict[str, int]] = {}
    seen: set[int] = set()
    for name, c in named:
        if id(c) in seen:
            continue
        seen.add(id(c))
        rows[name] = _judge_answers([c], not_verdicts)
    return rows


def judge_call_rows(named: Sequence[tuple[str, Client]],
                    not_verdicts: Sequence[AnswerCounts] = ()) -> dict[str, dict[str, Any]]:
    """Each live judge's own calls: `asked` (made + cached + failed) and `failed`, less what
    G-module or scorer stages asked on its client (`spent`), with its client's first error
    (`first_error`, masked by the client) for the reason `judge_gate` gives. Pooled with the
    generator's and the other judges' calls, a judge failing 80% of its prompts passed
    --max-failed 0.2 and was reported on the few it answered."""
    rows: dict[str, dict[str, Any]] = {}
    seen: set[int] = set()
    for name, c in named:
        if id(c) in seen:
            continue
        seen.add(id(c))
        _a, _u, asked, failed = client_counts(c)
        for part in not_verdicts:
            if id(c) in part:
                asked -= part[id(c)][2]
                failed -= part[id(c)][3]
        rows[name] = {"asked": max(asked, 0), "failed": max(failed, 0),
                      "first_error": c.stats.first_error,
                      "first_unreadable": c.stats.first_unreadable}
    return rows


def judges_over(rows: Mapping[str, Mapping[str, int]], calls: Mapping[str, Mapping[str, Any]],
                max_failed: float, n_judges: int = 2) -> dict[str, dict[str, Any]]:
    """The judges whose own calls failed, or whose own answers could not be read, past
    `max_failed` (`judge_answer_rows`, `judge_call_rows`): {judge: its counts and the
    reason}, in the order given. None of a run of one judge (`n_judges`, recorded ones
    included): there is no other to keep, and the pooled gate (`assess`) is its own."""
    out: dict[str, dict[str, Any]] = {}
    if n_judges < 2:
        return out
    for name in dict.fromkeys([*rows, *calls]):
        r = rows.get(name) or {"answers": 0, "unreadable": 0}
        c = calls.get(name) or {"asked": 0, "failed": 0}
        parts = []
        if c["asked"] and c["failed"] / c["asked"] > max_failed:
            first = c.get("first_error")
            parts.append(f"{c['failed']} of its {c['asked']} calls failed (--max-failed "
                         f"{max_failed:g} allows {_allowed(max_failed, c['asked'])}"
                         + (f"; first error: {visible(first)})" if first else ")"))
        if r["answers"] and r["unreadable"] / r["answers"] > max_failed:
            first = c.get("first_unreadable")
            parts.append(f"{r['unreadable']} of its {r['answers']} answers could not be read "
                         f"as a verdict (--max-failed {max_failed:g} allows "
                         f"{_allowed(max_failed, r['answers'])}"
                         + (f"; the first: {visible(first)})" if first else ")"))
        if parts:
            out[name] = {"calls_asked": c["asked"], "calls_failed": c["failed"],
                         "answers": r["answers"], "unreadable": r["unreadable"],
                         "reason": "; ".join(parts)}
    return out


def judge_gate(run: dict[str, Any], rows: Mapping[str, Mapping[str, int]], max_failed: float,
               calls: Mapping[str, Mapping[str, Any]] | None = None,
               left_from: str = "the fit", numbers: bool = True, n_judges: int = 2
               ) -> dict[str, Any]:
    """`run` with `answers_by_judge` (`judge_answer_rows`), `calls_by_judge`
    (`judge_call_rows`) and the gate per judge: a judge whose own calls failed, or whose own
    answers could not be read, past `max_failed` (`judges_over`) is left out of the numbers
    (`left_from`: the fit, the flip rates and Holm's m, the consensus; the caller leaves it
    out), named in `judges_over_max_failed` and, with its counts and reason, in
    `judges_left_out`, and the run fails (exit 3), as one judge's does: the README's
    failed run. The pooled gate (`assess`) stays too. A judge failing most prompts beside
    good ones was fitted on the few it answered, counted in Holm's m, and the run exited 0,
    only the terminal's "ABOVE --max-failed" naming it. The others' numbers are still
    computed without it (results.json keeps them; `numbers` False: there are none), so a
    re-run without the judge finds their answers in the cache. `n_judges`: the run's judges,
    recorded ones included (one alone is never left out: `judges_over`)."""
    calls = calls or {}
    left = judges_over(rows, calls, max_failed, n_judges)
    out = {**run, "answers_by_judge": dict(rows), "judges_over_max_failed": list(left)}
    if calls:
        out["calls_by_judge"] = {n: {"asked": c["asked"], "failed": c["failed"]}
                                 for n, c in calls.items()}
    if not left:
        return out
    out["judges_left_out"] = left
    them = "it" if len(left) == 1 else "them"
    said = ("; ".join(f"judge {visible(n)} is left out of {left_from}: {x['reason']}"
                      for n, x in left.items())
            + (f"; results.json keeps the other judges' numbers without {them}: run again "
               f"without {them} for a result" if numbers else ""))
    if run.get("status") == "failed" and run.get("message"):
        out["message"] = f"{run['message']}; {said}"
    else:
        out["message"] = f"run failed: {said}"
    out["status"] = "failed"
    return out


def _live_named(winners: Mapping[str, Any], judge_clients: Sequence[Client]
                ) -> list[tuple[str, Client]]:
    """The live judges (not `recorded:`) with their clients, in the order both came; none
    when they cannot be matched (the per-judge gate is then not made)."""
    live = [n for n in winners if not n.startswith("recorded:")]
    return list(zip(live, judge_clients, strict=True)) if len(live) == len(judge_clients) \
        else []


def _allowed(share: float, total: int) -> int:
    """The most of `total` that a largest share `share` lets fail (`assess` fails above it)."""
    return math.floor(share * total + 1e-9)


def _stage_reasons(stats: Mapping[str, JSONStats], max_failed: float,
                   validation: Mapping[str, Any] | None) -> list[str]:
    """Why the G-module stages failed the run, stage by stage: no factor could be validated
    (every held-out score unusable), and each stage where more than `max_failed` of the
    requests got no usable answer. A G-module's unreadable answers counted nowhere: 240 of
    240 G_score answers unreadable, every factor n = 0, and the run exited 0 (--min-valid was
    met by the G_extract answers; the client's stop never fired, its first answers read)."""
    out = []
    if validation is not None and validation.get("n_items"):
        rows = [r for s in validation.get("sets", {}).values() for r in s.get("factors", [])]
        if rows and not any(r.get("n") for r in rows):
            out.append(f"no factor could be validated: none of the {validation['n_items']} "
                       "held-out items got a usable G_score for both responses on any of the "
                       f"{len(rows)} factors")
    for name, st in stats.items():
        if st.calls and st.failed / st.calls > max_failed:
            ex = st.examples[0] if st.examples else None
            first = None if ex is None else (
                f"{ex['error']}: {ex['raw'][:120]}" if ex["error"] == "call failed"
                else ex["error"])
            out.append(f"{st.failed} of {st.calls} {name} requests got no usable answer "
                       f"(--max-failed {max_failed:g} allows {_allowed(max_failed, st.calls)}"
                       + (f"; the first: {visible(first)})" if first else ")")
                       # each re-ask is a request too (paid when sent: the calls line
                       # says how many were not): "10 of 10" was 20 requests
                       + (f", after {st.retried} re-ask{'s' if st.retried != 1 else ''} "
                          f"({st.calls + st.retried} requests in all)" if st.retried else ""))
    return out


def _discover_outcome(*, n_valid: int, n_planned: int, calls: Mapping[str, Any],
                      judge_clients: Sequence[Client], min_valid: int, max_failed: float,
                      callers: str, lead: str | None = None,
                      stages: Sequence[str] = (),
                      not_verdicts: Sequence[AnswerCounts] = ()) -> dict[str, Any]:
    """discover's `run` section (`assess`), its message stating every count with its unit
    and its total: "120 of 140 calls to the G-module LLM failed (--max-failed 0.2 allows
    28)", "12 of 40 judge answers could not be read as a verdict (... allows 8)", "only 0
    of 126 G-module requests got a usable answer". It mixed them: "20 of 20 answers could not
    be read as a verdict" (G-module LLM answers, retries included, or the judges' ones: it
    did not say which), then "only 0 of 126 G-module answers" (requests, 120 never sent),
    then "120 of them not sent" (of the calls, not of those). `callers`: whose calls
    `calls` counts; `lead`: a reason (no consensus disagreement) that replaces the count of
    G-module requests (none were planned); it goes first unless the judges' calls failed or
    their answers could not be read, the cause of it, which then lead ("no consensus
    disagreement ... use more or harder items" came first, the 20 of 20 unreadable judge
    answers behind it last). `stages`: the G-module stages' own reasons
    (`_stage_reasons`). `not_verdicts`: the G-module answers read on a judge's client (the
    --llm being a judge), left out of the judges' answers (`_judge_answers`)."""
    judged = _judge_answers(judge_clients, not_verdicts)
    run = assess(n_valid=n_valid, n_planned=n_planned, calls=calls, min_valid=min_valid,
                 max_failed=max_failed, what="G-module requests", **judged)
    asked, failed = run["calls_asked"], run["calls_failed"]
    answers, unreadable = run.get("answers", 0), run.get("unreadable", 0)
    if judged["answers"]:
        unit, read_as = "judge answers", " as a verdict"
        first_bad = next((c.stats.first_unreadable for c in judge_clients
                          if c.stats.first_unreadable), None)
    else:  # no live judge: `assess` counted the G-module LLM's answers (re-asks included)
        unit, read_as, first_bad = "G-module LLM answers", "", calls.get("first_unreadable")
    first, not_sent = calls.get("first_error"), int(calls.get("not_sent") or 0)
    why = not_sent_reason(calls)
    over = run["failed_share"] > max_failed

    def calls_text() -> str:
        limit = f"--max-failed {max_failed:g} allows {_allowed(max_failed, asked)}"
        return (f"{failed} of {asked} calls to the {callers} failed"
                + (f" ({limit}; first error: {first})" if over and first else
                   f" ({limit})" if over else f" (first error: {first})" if first else "")
                + (f"; {not_sent} of these {failed} failed calls were never sent: {why}"
                   if not_sent else ""))

    parts = []
    if over:
        parts.append(calls_text())
    if answers and unreadable / answers > max_failed:
        parts.append(f"{unreadable} of {answers} {unit} could not be read{read_as} "
                     f"(--max-failed {max_failed:g} allows {_allowed(max_failed, answers)}"
                     + (f"; the first: {visible(first_bad)})" if first_bad else ")"))
    if lead:  # after its cause when the judges' calls or answers are it
        parts.append(f"so {lead}" if parts else lead)
    parts.extend(stages)
    if lead is None and n_valid < min_valid:
        parts.append(f"only {n_valid} of {n_planned} G-module requests got a usable answer, "
                     f"fewer than --min-valid {min_valid}")
    if not parts:
        return run
    if failed and not over:  # not a reason, but said
        parts.append(f"besides, {calls_text()}")
    return {**run, "status": "failed", "message": "run failed: " + "; ".join(parts)}


def _stats_doc(stats: Mapping[str, JSONStats]) -> dict[str, Any]:
    return {k: v.as_dict() for k, v in stats.items()}


# ---- verdicts --------------------------------------------------------------------------------

async def live_winners(bundles: Mapping[str, JudgeBundle], items: Sequence[PairwiseItem],
                       on_done: Progress | None = None) -> dict[str, dict[str, Winner]]:
    """Each live judge's consensus winner per item (its pairwise judge: both orders unless the
    spec says orders=one)."""
    out = {}
    for name, b in bundles.items():
        out[name] = verdict_winners(await b.pairwise.judge(list(items), on_done=on_done))
    return out


def recorded_winners(source: str, folder: str | Path, item_ids: Sequence[str],
                     workdir: str | Path) -> dict[str, dict[str, Winner]]:
    """Recorded judges shipped with a dataset, read through the `replay` provider's loader.
    `source`: "pandalm" (GPT-3.5 and PandaLM-7B on the PandaLM test set, one order each)."""
    if source != "pandalm":
        raise ValueError(f"recorded verdicts {source!r}: only 'pandalm' is known")
    paths = convert_pandalm_verdicts(folder, workdir)
    return {f"recorded:{name}": replay_winners(p, item_ids) for name, p in paths.items()}


def splits_for(items: Sequence[PairwiseItem], winners: Mapping[str, Mapping[str, Winner]]
               ) -> list[Split]:
    return [split(name, items, w) for name, w in winners.items()]


def splits_doc(splits: Sequence[Split], n_items: int, min_agreement: float,
               left_out: Sequence[str] = ()) -> dict[str, Any]:
    """Each judge's split and the consensus counts, over the judges not `left_out`
    (`judge_gate`: their rows stay, to show what they answered)."""
    kept = [s for s in splits if s.judge not in left_out]
    return {"n_items": n_items, "min_annotator_agreement": min_agreement,
            "per_judge": {s.judge: s.sizes() for s in splits},
            "consensus_disagree": len(consensus(kept, "disagree")),
            "consensus_agree": len(consensus(kept, "agree")),
            **({"left_out_of_consensus": list(left_out)} if left_out else {})}


# ---- discover --------------------------------------------------------------------------------

async def run_discover(
    items: Sequence[PairwiseItem],
    winners: Mapping[str, Mapping[str, Winner]],
    llm: Client,
    embedder: Embedder,
    cfg: DiscoverConfig,
    *,
    holdout: float = 0.5,
    limit: int | None = None,
    holdout_limit: int | None = None,
    min_agreement: float = 0.5,
    on_stage: Callable[[str, int], None] | None = None,
    judge_clients: Sequence[Client] = (),
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
) -> dict[str, Any]:
    """Algorithm 1 on the consensus disagreements of `winners`' judges: features and factors
    from a discovery split, validation of found and baseline factors on the held-out split.
    `judge_clients`: the live judges' clients that gave `winners`, so their calls count in
    `calls` and in the run's outcome (unit: G-module answers)."""
    t0 = time.perf_counter()
    splits = splits_for(items, winners)
    # a live judge whose own calls failed or answers were unreadable past --max-failed is
    # left out of the consensus (its invalid verdicts shrank it: no item is a consensus
    # disagreement unless every judge disagrees), and the run fails naming it (`judge_gate`)
    named = _live_named(winners, judge_clients)
    rows, call_rows = judge_answer_rows(named), judge_call_rows(named)
    left = judges_over(rows, call_rows, max_failed, len(winners))
    dis = consensus([s for s in splits if s.judge not in left], "disagree")

    def gated(run: dict[str, Any], numbers: bool = True) -> dict[str, Any]:
        return judge_gate(run, rows, max_failed, call_rows, left_from="the consensus",
                          numbers=numbers, n_judges=len(winners))

    def nothing_to_discover(lead: str) -> dict[str, Any]:
        """The failed run's document, before any G-module call: the judges' calls only."""
        calls = _calls(list(judge_clients))
        return {"command": "discover", "judges": list(winners),
                "splits": splits_doc(splits, len(items), min_agreement, list(left)),
                "calls": calls, "json_stats": {},
                "run": gated(_discover_outcome(
                    n_valid=0, n_planned=0, calls=calls, judge_clients=judge_clients,
                    min_valid=min_valid, max_failed=max_failed, callers="judges", lead=lead),
                    numbers=False),
                "seconds": round(time.perf_counter() - t0, 2)}

    if len(left) == len(winners):  # no judge left to find a consensus of
        return nothing_to_discover("every judge is left out (above --max-failed), so there "
                                   "is nothing to discover factors from")
    if not dis:  # nothing to discover from: no G-module call, and the reason as it is (it
        # said "0 of 0 G-module answers have a valid verdict")
        return nothing_to_discover(
            f"no consensus disagreement with the humans on the {len(items)} items (every "
            "judge agrees with them, or their verdicts were invalid), so there is nothing to "
            "discover factors from; use more or harder items, or other judges")
    n_hold = round(holdout * len(dis))
    if not 0 < n_hold < len(dis):  # nothing held out to validate on (every row n = 0, the
        # run ok), or nothing left to discover from: no G-module call
        need = next(n for n in range(2, 10_000) if 0 < round(holdout * n) < n)
        return nothing_to_discover(
            f"too few consensus disagreements with the humans: {len(dis)} on the {len(items)} "
            f"items, of which --holdout {holdout:g} holds out {n_hold} to validate on and "
            f"leaves {len(dis) - n_hold} to discover from; discover needs at least {need} (one "
            "or more for each); use more or harder items, or other judges")
    rng = random.Random(f"hubj-discover:{cfg.seed}")
    order = dis[:]
    rng.shuffle(order)
    held, disc = order[:n_hold], order[n_hold:]
    if limit is not None:
        disc = disc[:limit]
    if holdout_limit is not None:
        held = held[:holdout_limit]
    by_id = {it.id: it for it in items}
    stats: dict[str, JSONStats] = {}
    g_before = answer_counts([llm])  # the judges answered already: what follows is G-modules
    n_base = len({f.name for v in BASELINE_SETS.values() for f in v.values()})

    def document(outcome: Any = None, criteria: Mapping[str, Mapping[int, str]] | None = None,
                 source: Mapping[str, str] | None = None,
                 validation: dict[str, Any] | None = None,
                 stopped: dict[str, Any] | None = None) -> dict[str, Any]:
        """The results document, whole or as far as the run went (`stopped`: the step
        whose failures passed --max-failed, and what was not sent after it)."""
        calls = _calls([llm, *judge_clients])
        stages = _stage_reasons(stats, max_failed, validation)
        if stopped is not None:
            stages.append(stopped["message"])
        doc: dict[str, Any] = {
            "command": "discover",
            "judges": list(winners),
            # which items, not only the --data spec (`data.fingerprint`; as audit's)
            "data_fingerprint": fingerprint(items),
            "embedder": getattr(embedder, "name", type(embedder).__name__),
            "config": {**cfg.as_dict(), "holdout": holdout, "limit": limit,
                       "holdout_limit": holdout_limit},
            "splits": splits_doc(splits, len(items), min_agreement, list(left)),
            "discovery_items": disc,
            "heldout_items": held,
        }
        if outcome is not None:
            doc["discover"] = outcome.as_dict()
        if criteria is not None:
            doc["criteria"] = {k: {str(lv): t for lv, t in v.items()}
                               for k, v in criteria.items()}
            doc["criteria_source"] = dict(source or {})
        if validation is not None:
            doc["validation"] = validation
        if stopped is not None:
            doc["stopped_after"] = {k: v for k, v in stopped.items() if k != "message"}
        return {
            **doc,
            "json_stats": _stats_doc(stats),
            "prompt_hashes": prompt_hashes(),
            "calls": calls,
            "run": gated(_discover_outcome(
                n_valid=sum(st.calls - st.failed for st in stats.values()),
                n_planned=sum(st.calls for st in stats.values()), calls=calls,
                judge_clients=judge_clients, min_valid=min_valid, max_failed=max_failed,
                callers="G-module LLM and judges" if judge_clients else "G-module LLM",
                stages=stages, not_verdicts=[spent(g_before, [llm])]),
                numbers=validation is not None),
            "seconds": round(time.perf_counter() - t0, 2),
        }

    if on_stage:
        on_stage(f"G_extract on {len(disc)} disagreement items", len(disc))
    feats = await extract_features(llm, [by_id[i] for i in disc],
                                   stats.setdefault("G_extract", JSONStats()), cfg.max_features)
    stop = _step_stop(stats, ["G_extract"], max_failed, [
        ("G_construct and G_assign", None,
         f"factor discovery, up to {cfg.iterations} round"
         + ("s" if cfg.iterations != 1 else "")),
        ("G_crit", None, "for the factors it would find that have no shipped criteria"),
        ("G_score", 2 * len(held) * n_base,
         f"2 per held-out item and factor: {len(held)} items x {n_base} baseline factors, "
         "more for the factors it would find")])
    if stop:
        return document(stopped=stop)
    if on_stage:  # per round: one G_construct and at most one G_assign per feature
        on_stage(f"discovering factors from {len(feats)} features",
                 cfg.iterations * (1 + len(feats)))
    outcome = await discover_factors(llm, embedder, feats, cfg, stats)
    found = list(outcome.factors)
    sets: dict[str, list[Factor]] = {"found": found,
                                     **{k: list(v.values()) for k, v in BASELINE_SETS.items()}}
    all_factors = {f.name: f for fs in sets.values() for f in fs}
    n_crit = sum(1 for f in all_factors.values() if criteria_for(f) is None)
    n_score = 2 * len(held) * len(all_factors)
    score_why = (f"2 per held-out item and factor: {len(held)} items x {len(all_factors)} "
                 "factors")
    stop = _step_stop(stats, ["G_construct", "G_assign"], max_failed, [
        ("G_crit", n_crit, "one per factor without shipped criteria"),
        ("G_score", n_score, score_why)])
    if stop:
        return document(outcome, stopped=stop)
    if on_stage:
        on_stage(f"G_crit, then G_score on {len(held)} held-out items x "
                 f"{len(all_factors)} factors", 2 * len(held) * len(all_factors))
    criteria, source = await criteria_for_factors(
        llm, list(all_factors.values()), stats.setdefault("G_crit", JSONStats()))
    stop = _step_stop(stats, ["G_crit"], max_failed, [("G_score", n_score, score_why)])
    if stop:
        return document(outcome, criteria, source, stopped=stop)
    validation = await validate(llm, [by_id[i] for i in held], sets, criteria,
                                stats.setdefault("G_score", JSONStats()))
    return document(outcome, criteria, source, validation)


def _step_stop(stats: Mapping[str, JSONStats], step: Sequence[str], max_failed: float,
               after: Sequence[tuple[str, int | None, str]]) -> dict[str, Any] | None:
    """Whether discover stops after the G-module `step` (its modules' names in `stats`):
    when more than `max_failed` of a module's calls got no usable answer, the run has failed
    already (`_stage_reasons` says so at the end), and the steps `after` it (module, calls
    or None when not known before the step runs, what they are) are not paid for. G_extract
    failing 10 of 10 was followed by 400 G_score requests before exit 3. None: go on."""
    over = [m for m in step if (st := stats.get(m)) is not None and st.calls
            and st.failed / st.calls > max_failed]
    if not over:
        return None
    st = {m: stats[m] for m in step if m in stats}
    calls = sum(s.calls for s in st.values())
    requests = sum(s.calls + s.retried for s in st.values())
    failed = sum(s.failed for s in st.values())
    not_sent = [{"module": m, "calls": n, "what": what} for m, n, what in after]
    said = "; ".join(f"{m} ({n} call{'s' if n != 1 else ''}, {what})" if n is not None
                     else f"{m} ({what})" for m, n, what in after if n != 0)
    name = " and ".join(step)
    return {"step": name, "modules_over_max_failed": over, "calls": calls,
            "requests": requests, "failed": failed, "not_sent": not_sent,
            "message": f"so the run stopped after the {name} step, before paying for the "
                       "next steps, which were not sent: " + (said or "none")}


# ---- factors and criteria from names or a discover results file ------------------------------

def resolve_factors(names: Sequence[str], discovered: Mapping[str, Any] | None = None
                    ) -> tuple[list[Factor], dict[str, dict[int, str]]]:
    """Factors by name: shipped baselines, or factors (with criteria) of a discover results
    document. Unknown names are an error that lists what is known."""
    known: dict[str, Factor] = {f.name: f for s in BASELINE_SETS.values() for f in s.values()}
    crit: dict[str, dict[int, str]] = {}
    if discovered is not None:
        for f in discovered.get("discover", {}).get("factors", []):
            known[f["name"]] = Factor(f["name"], f["definition"])
        for name, c in discovered.get("criteria", {}).items():
            crit[name] = {int(k): str(v) for k, v in c.items()}
    out, crits = [], {}
    for n in names:
        n = n.strip()
        if n not in known:
            raise ValueError(f"unknown factor {n!r}; known: {', '.join(sorted(known))}")
        f = known[n]
        out.append(f)
        c = crit.get(n) or criteria_for(f)
        if c is not None:
            crits[n] = c
    return out, crits


# ---- quantify --------------------------------------------------------------------------------

async def run_quantify(
    judges: Mapping[str, JudgeBundle],
    gen: Client,
    items: Sequence[PairwiseItem],
    factors: Sequence[Factor],
    criteria: Mapping[str, Mapping[int, str]],
    *,
    checker: Client | None = None,
    levels: Sequence[int] = LEVELS,
    n_cal: int | None = None,
    cal_frac: float = 1 / 6,
    seed: int = 0,
    on_violation: str = "drop",
    limit: int | None = None,
    agreement: Mapping[str, Mapping[str, Winner]] | None = None,
    inject: str = "rewrite",
    max_words: int | None = None,
    on_done: Progress | None = None,
    on_stage: Callable[[str], None] | None = None,
    min_agreement: float = 0.5,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
) -> dict[str, Any]:
    """Algorithm 2 on the items every judge gets right (by `agreement` winners when given,
    else the judges are asked). `inject`: G_inj mode (rewrite | append); `max_words`: keep
    only items whose rejected response has at most this many words (rewrites of long texts
    cost the most and are where small generators fail). `min_agreement`: the annotator
    agreement the caller filtered `items` with (recorded in `splits`).

    Outcome: the unit is a judge's verdict on a rewrite. When no item is an agreement item
    because the agreement stage itself judged too little (its calls failed, or no verdict was
    valid), the document says the run failed instead of raising."""
    t0 = time.perf_counter()
    if agreement is None:
        if on_stage:
            on_stage(f"judging {len(items)} items to find agreement items")
        agreement = await live_winners(judges, items)
    splits = splits_for(items, agreement)
    all_clients = ([gen, *(b.client for b in judges.values())]
                   + ([checker] if checker else []))
    named = [(n, b.client) for n, b in judges.items()]
    # a judge already past --max-failed on the agreement items is left out before the
    # rewrites: of the consensus (its invalid verdicts shrank the agreement items of every
    # judge) and of the judging (`judge_gate` fails the run naming it)
    early = judges_over(judge_answer_rows(named), judge_call_rows(named), max_failed,
                        len(judges))
    asked = {n: b for n, b in judges.items() if n not in early}
    agree = set(consensus([s for s in splits if s.judge not in early], "agree"))
    agr_items = [it for it in items if it.id in agree]
    n_agree = len(agr_items)
    if max_words is not None:
        agr_items = [it for it in agr_items
                     if spaced_word_count(it.response_2 if it.label == 1 else it.response_1)
                     <= max_words]
    if limit is not None:
        agr_items = agr_items[:limit]
    n_cal_used = (min(max(n_cal, 0), len(agr_items)) if n_cal is not None
                  else min(max(1, round(cal_frac * len(agr_items))), len(agr_items)))
    if len(agr_items) - n_cal_used < 1:  # nothing left to test on (or nothing at all): the
        # judges' calls were made, so a failed run with its counts, not bad input (no
        # agreement item exited 2 after 20 calls, its folder saying "did not finish"; one
        # agreement item, or --n-cal as many, gave susceptibility n = 0 and exit 0)
        calls = _calls(all_clients)
        stage = assess(n_valid=sum(w is not None for ws in agreement.values()
                                   for w in ws.values()),
                       n_planned=len(items) * len(agreement), calls=calls,
                       min_valid=min_valid, max_failed=max_failed,
                       what="judge verdicts on the agreement items",
                       **_judge_answers([b.client for b in judges.values()]))
        stage = judge_gate(stage, judge_answer_rows(named), max_failed,
                           judge_call_rows(named), left_from="the agreement items",
                           numbers=False, n_judges=len(judges))
        if not asked:
            why = "every judge is left out (above --max-failed): nothing to quantify"
        elif not agr_items:
            why = ("no agreement items (no item where every judge picks the human-preferred "
                   f"response, of the {len(items)} items judged); use more items or other "
                   "judges")
        else:
            used = (f"--n-cal {n_cal}" if n_cal is not None else
                    f"the calibration share {cal_frac:.2g} (at least one item)")
            kept = (f"{len(agr_items)} agreement item" + ("s" if len(agr_items) > 1 else "")
                    + (f" (of {n_agree}, after the item filters)" if len(agr_items) < n_agree
                       else ""))
            why = (f"{kept} found, and {used} takes {n_cal_used} to pick l* on, leaving none "
                   f"to test on: quantify needs at least {n_cal_used + 1} agreement items "
                   "here; use more items (--pool)"
                   + (" or a smaller --n-cal" if n_cal is not None and n_cal > 1 else ""))
        if stage["status"] == "failed":
            stage["message"] += f"; so {why}"
        else:
            stage = {**stage, "status": "failed", "message": f"run failed: quantify: {why}"}
        return {"command": "quantify", "judges": list(judges),
                "factors": [f.as_dict() for f in factors], "levels": list(levels),
                "splits": splits_doc(splits, len(items), min_agreement, list(early)),
                "n_items": len(agr_items),
                "n_agreement_items": n_agree, "inject": inject, "per_judge": {},
                "profile": {}, "json_stats": {}, "calls": calls, "run": stage,
                "seconds": round(time.perf_counter() - t0, 2)}
    stats: dict[str, JSONStats] = {}
    if on_stage:
        on_stage(f"rewriting {len(agr_items)} items x {len(factors)} factors x "
                 f"{len(levels)} levels, then judging")
    out = await quantify(asked, gen, agr_items, factors, criteria, stats, levels=levels,
                         n_cal=n_cal, cal_frac=cal_frac, seed=seed, checker=checker,
                         on_violation=on_violation, on_done=on_done, inject=inject)
    kept = sum(1 for rw in out.rewrites if rw.kept)
    string_flags = sum(1 for rw in out.rewrites if rw.kept and rw.string_ok is False)
    calls = _calls(all_clients)
    run = assess(n_valid=sum(y is not None for fl in out.flips.values() for y in fl.values()),
                 n_planned=len(out.rewrites) * len(asked), calls=calls, min_valid=min_valid,
                 max_failed=max_failed, what="judge verdicts on rewrites",
                 **_judge_answers([b.client for b in judges.values()],
                                  [out.rewrite_answers]))
    # every judge's own calls and answers over the whole run (agreement items, rewrites,
    # repeats; the generator's and checker's on a shared client taken out): one past
    # --max-failed is left out of every number and of Holm's m, and the run fails
    run = judge_gate(run, judge_answer_rows(named, [out.rewrite_answers]), max_failed,
                     judge_call_rows(named, [out.rewrite_answers]),
                     left_from="the flip rates and Holm's m", n_judges=len(judges))
    out.leave_out(list(run.get("judges_left_out") or {}))
    failed_rw = sum(1 for rw in out.rewrites if rw.text is None)
    unchecked = sum(1 for rw in out.rewrites if rw.text is not None and rw.same_answer is None)
    changed = sum(1 for rw in out.rewrites if rw.same_answer is False)
    if run["status"] == "failed" and not kept and out.rewrites:
        # the cause was only in the G_check line: 120 rewrites dropped for a failed
        # checker read as "0 of 120 judge verdicts have a valid verdict"
        run["message"] += (f" (no rewrite was kept to judge: of {len(out.rewrites)}, "
                           f"{failed_rw} failed to be written, {unchecked} got no G_check "
                           f"answer, {changed} changed the answer)")
    return {
        "command": "quantify",
        "judges": list(judges),
        "data_fingerprint": fingerprint(items),  # which items (`data.fingerprint`)
        "factors": [f.as_dict() for f in factors],
        "criteria": {k: {str(lv): t for lv, t in v.items()} for k, v in criteria.items()},
        "levels": list(levels),
        "splits": splits_doc(splits, len(items), min_agreement, list(early)),
        "n_items": len(agr_items),
        "n_agreement_items": n_agree,
        "item_filter": {"max_words_rejected": max_words, "limit": limit},
        "inject": inject,
        "calibration_items": out.cal,
        "test_items": out.test,
        "rewrites": {"total": len(out.rewrites), "kept": kept, "failed": failed_rw,
                     "unchecked": unchecked, "answer_changed": changed,
                     "string_check_flags": string_flags, "on_violation": on_violation},
        "answer_change_rate": out.answer_change(),
        "per_judge": out.per_judge,
        # each judge's flip rate from asking the same test items again (no rewrite): the
        # reference its susceptibilities are read against
        "repeat_noise": out.repeat_noise,
        # how the rows' tests against it were adjusted (Holm over judge x factor rows)
        "multiplicity": out.multiplicity,
        "profile": out.profile(),
        # the per-item flips behind every number above, to recompute them from this file
        "item_flips": out.item_flips(),
        "rewrite_examples": [rw.as_dict(with_text=True) for rw in _examples(out.rewrites)],
        "json_stats": _stats_doc(stats),
        "prompt_hashes": prompt_hashes(["G_inj" if inject == "rewrite" else "G_inj_append",
                                        "G_check"]),
        "calls": calls,
        "run": run,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def _examples(rewrites: Sequence[Any], k: int = 12) -> list[Any]:
    """A spread of rewrites for the report: levels 1, 3 and 5 of each factor, each from a
    different item where possible, then anything else up to k."""
    out, used_items = [], set()
    for lvl in (1, 3, 5):
        for rw in rewrites:
            if (rw.level == lvl and rw.text is not None and rw.item_id not in used_items
                    and not any(o.factor == rw.factor and o.level == lvl for o in out)):
                out.append(rw)
                used_items.add(rw.item_id)
    for rw in rewrites:
        if len(out) >= k:
            break
        if rw not in out:
            out.append(rw)
    return out[:k]


# ---- mitigate --------------------------------------------------------------------------------

def candidate_side(item: PairwiseItem, candidate: str) -> int:
    """Which response (1 or 2) is the candidate whose win rate is measured: the human-rejected
    one ("rejected": the judge's win rate for r- is its disagreement rate), or a fixed side."""
    if candidate == "rejected":
        if item.label not in (1, 2):
            raise ValueError(f"item {item.id}: candidate=rejected needs a human label 1 or 2")
        return 3 - int(item.label)
    if candidate in ("response_1", "response_2"):
        return int(candidate[-1])
    raise ValueError(f"candidate={candidate!r}: expected rejected, response_1 or response_2")


def win_value(w: Winner, cand: int) -> float:
    if w is None:
        return math.nan
    if w == 0:
        return 0.5
    return 1.0 if w == cand else 0.0


async def factor_scores(scorer: Client, items: Sequence[PairwiseItem], factor: Factor,
                        criteria: Mapping[int, str], stats: JSONStats,
                        on_done: Progress | None = None) -> dict[str, tuple[int, int] | None]:
    """G_score of both responses of each item: {item id: (s(response_1), s(response_2))}."""
    import asyncio

    async def one(it: PairwiseItem) -> tuple[int, int] | None:
        a = await g_score(scorer, it.id, it.prompt, it.response_1, factor, criteria, stats)
        b = await g_score(scorer, it.id, it.prompt, it.response_2, factor, criteria, stats)
        if on_done:
            on_done()
        return None if a is None or b is None else (a, b)

    got = await asyncio.gather(*(one(it) for it in items))
    return {it.id: g for it, g in zip(items, got, strict=True)}


def mitigation_inputs(items: Sequence[PairwiseItem], winners: Mapping[str, Mapping[str, Winner]],
                      scores: Mapping[str, tuple[int, int] | None], candidate: str
                      ) -> tuple[np.ndarray, M.ControlData, list[str], dict[str, int]]:
    """Y (judges x queries), control inputs and the query ids; queries without a factor score
    are dropped (counted)."""
    keep, dropped = [], 0
    for it in items:
        if scores.get(it.id) is None:
            dropped += 1
        else:
            keep.append(it)
    names = list(winners)
    Y = np.full((len(names), len(keep)), math.nan)
    sc, so, lc, lo = [], [], [], []
    for x, it in enumerate(keep):
        cand = candidate_side(it, candidate)
        for j, n in enumerate(names):
            Y[j, x] = win_value(winners[n].get(it.id), cand)
        s = scores[it.id]
        assert s is not None
        texts = (it.response_1, it.response_2)
        sc.append(s[cand - 1])
        so.append(s[2 - cand])
        # whitespace words as published, a Chinese character one word (not a whole answer)
        lc.append(spaced_word_count(texts[cand - 1]))
        lo.append(spaced_word_count(texts[2 - cand]))
    ctl = M.ControlData(np.array(sc, float), np.array(so, float), np.array(lc, float),
                        np.array(lo, float))
    counts = {"queries": len(keep), "dropped_no_score": dropped,
              **{f"invalid:{n}": int(np.isnan(Y[j]).sum()) for j, n in enumerate(names)}}
    return Y, ctl, [it.id for it in keep], counts


def _constant(y: np.ndarray) -> bool:
    v = y[np.isfinite(y)]
    return v.size == 0 or bool(np.all(v == v[0]) and v[0] in (0.0, 1.0))


def _brief(f: M.JudgeFit) -> dict[str, Any]:
    """What a secondary fit (other estimator or control) reports per judge."""
    d = f.as_dict()
    return {k: d[k] for k in ("bc", "bias_share", "phi")}


def run_mitigate_fit(Y: np.ndarray, ctl: M.ControlData, judges: Sequence[str],
                     query_ids: Sequence[str], control: str = "bias",
                     also: Sequence[str] = ("length",), estimator: str = "marginal"
                     ) -> dict[str, Any]:
    """The two-stage fit with the main control, plus the same fit with every control in `also`
    (e.g. the AlpacaEval length-controlled win rate) reported beside it. A judge whose
    verdicts all go one way has no finite logistic fit: it is reported with its win rate only
    (`not_fitted`), and the others are fitted without it."""
    const = [j for j, name in enumerate(judges) if _constant(Y[j])]
    fit_idx = [j for j in range(len(judges)) if j not in const]
    not_fitted = {}
    for j in const:
        v = Y[j][np.isfinite(Y[j])]
        not_fitted[judges[j]] = {"win": M.win_rate(v).as_dict(), "reason": (
            f"no valid verdict (all {Y[j].size} unreadable or failed)" if not v.size
            else "every verdict goes the same way: no finite fit")}
    if not fit_idx:
        raise ValueError("mitigate: every judge's verdicts go the same way on these queries "
                         "(win rate 0 or 1): nothing to fit; use more or harder items")
    Yf, names = Y[fit_idx], [judges[j] for j in fit_idx]
    delta = M.CONTROLS[control](ctl)
    seen = delta[np.isfinite(delta)]
    if seen.size and np.ptp(seen) == 0:  # phi would be pinned at 0 with a zero-width interval
        raise ValueError(f"mitigate: the factor's level difference is {seen[0]:g} on every "
                         "query (the scorer gave every response the same levels), so its "
                         "effect cannot be estimated; check the scorer (--scorer) and the "
                         "factor (its answers are cached)")
    try:
        main = M.fit(Yf, delta, names, query_ids, control=control, estimator=estimator)
        doc = main.as_dict()
        doc["estimator"] = estimator
        alt = next(e for e in M.ESTIMATORS if e != estimator)
        other_est = M.fit(Yf, delta, names, query_ids, control=control, estimator=alt)
        doc["other_estimator"] = {"estimator": alt, "judges": {
            j: _brief(f)
            for j, f in other_est.per_judge.items()}}
        doc["other_controls"] = {}
        for name in also:
            if name == control:
                continue
            other = M.fit(Yf, M.CONTROLS[name](ctl), names, query_ids, control=name,
                          estimator=estimator)
            doc["other_controls"][name] = {
                j: _brief(f)
                for j, f in other.per_judge.items()}
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"mitigate: the logistic fit is singular ({exc}); the verdicts are "
                         "(nearly) separated by the control or the query effects; use more "
                         "queries or more judges") from None
    doc["not_fitted"] = not_fitted
    if len(names) == 1:  # gamma_x is seen by one judge only: its loading psi is not
        # identified (a two-stage fit gave psi +12.55 +- 2.38, "converged")
        doc.setdefault("notes", []).append(
            "one judge fitted: the query effects (gamma) and the judge's loading on them (psi) "
            "cannot be told apart with one judge, so psi and BC lean on the model's prior; "
            "fit several judges on the same queries for a firm BC")
    return doc


async def _scores_if_judged(scorer: Client, items: Sequence[PairwiseItem], factor: Factor,
                            criteria: Mapping[int, str], stats: JSONStats,
                            winners: Mapping[str, Mapping[str, Winner]],
                            on_done: Progress | None) -> dict[str, tuple[int, int] | None]:
    """`factor_scores`, unless no judge gave a usable verdict: the run has failed then, and
    the scorer's calls (the embedded model, or a paid API) would buy nothing."""
    if not any(w is not None for ws in winners.values() for w in ws.values()):
        log.warning("no judge gave a usable verdict: no factor score is asked for")
        return dict.fromkeys((it.id for it in items), None)
    return await factor_scores(scorer, items, factor, criteria, stats, on_done)


async def run_mitigate(
    items: Sequence[PairwiseItem],
    winners: Mapping[str, Mapping[str, Winner]],
    scorer: Client,
    factor: Factor,
    criteria: Mapping[int, str],
    *,
    candidate: str = "rejected",
    estimator: str = "marginal",
    on_done: Progress | None = None,
    judge_clients: Sequence[Client] = (),
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    scorer_spec: str | None = None,
) -> dict[str, Any]:
    """Algorithm 3: G_score both responses on the factor, then the fit (`estimator`:
    "marginal", the default, or the paper's "two_stage"; the other one is reported beside).
    `judge_clients`: the live judges' clients that gave `winners` (their calls count). The
    outcome's unit is a judge verdict on a query with factor scores; a failed run is not
    fitted."""
    t0 = time.perf_counter()
    stats = {"G_score": JSONStats()}
    before = answer_counts([scorer])  # a scorer that is a judge: its G_score answers are
    # no verdicts (`_judge_answers`)
    scores = await _scores_if_judged(scorer, items, factor, criteria, stats["G_score"],
                                     winners, on_done)
    scored = spent(before, [scorer])
    Y, ctl, qids, counts = mitigation_inputs(items, winners, scores, candidate)
    calls = _calls([scorer, *judge_clients])
    run = assess(n_valid=int(np.isfinite(Y).sum()), n_planned=len(winners) * len(items),
                 calls=calls, min_valid=min_valid, max_failed=max_failed,
                 what="judge verdicts on queries with factor scores",
                 **_judge_answers(judge_clients, [scored]))
    run = _scorer_failed(run, stats["G_score"], scorer, len(items), len(qids), max_failed,
                         scorer_spec)
    fit_them = run["status"] != "failed"  # the pooled gate and the scorer passed
    named = _live_named(winners, judge_clients)
    if named:  # a judge past --max-failed on its own is left out of the fit, and fails the run
        run = judge_gate(run, judge_answer_rows(named, [scored]), max_failed,
                         judge_call_rows(named, [scored]), left_from="the fit",
                         n_judges=len(winners))
    left = run.get("judges_left_out") or {}
    doc: dict[str, Any] = {
        "command": "mitigate",
        "judges": list(winners),
        "data_fingerprint": fingerprint(items),  # which items (`data.fingerprint`)
        "factor": factor.as_dict(),
        "criteria": {str(k): v for k, v in criteria.items()},
        "candidate": candidate,
        "estimator": estimator,  # the setting, kept when the run fails before the fit
        "counts": counts,
    }
    names = list(winners)
    fitted = [j for j, n in enumerate(names) if n not in left]
    if fit_them and fitted:  # the others still fitted when a judge is left out (results.json
        # keeps them; the run has failed): the fit a re-run without it gives
        try:
            if len(qids) < 5:
                raise ValueError(f"mitigate: only {len(qids)} queries with factor scores; "
                                 "need >= 5")
            fit = run_mitigate_fit(Y[fitted], ctl, [names[j] for j in fitted], qids,
                                   estimator=estimator)
        except ValueError as exc:  # the verdicts cannot be fitted, after they were paid for:
            # a failed run saying why (it exited 2 as bad input, its folder saying the run
            # had not finished)
            run = _unfitted(run, exc)
        else:
            for j, n in enumerate(names):  # shown with its win rate and why, as a judge
                # with no finite fit is
                if n in left:
                    fit["not_fitted"][n] = {
                        "win": M.win_rate(Y[j][np.isfinite(Y[j])]).as_dict(),
                        "reason": f"left out (above --max-failed): {left[n]['reason']}"}
            doc["per_judge"] = fit.pop("judges")
            doc.update(fit)
    return {
        **doc,
        "scores": {q: list(s) if s else None for q, s in scores.items()},
        # the fit's inputs (Y and the controls' differences per query), to re-run it
        "per_query": M.per_query(Y, ctl, list(winners), qids),
        "json_stats": _stats_doc(stats),
        "prompt_hashes": prompt_hashes(["G_score"]),
        "calls": calls,
        "run": run,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def _scorer_reason(st: JSONStats, scorer: Client, n_queries: int, n_scored: int,
                   max_failed: float, scorer_spec: str | None) -> str | None:
    """Why the factor scorer failed the run, or None: its G_score requests got no usable
    answer for no query, or for more than `max_failed` of them (`_scorer_failed`)."""
    if not st.calls or (n_scored and st.failed / st.calls <= max_failed):
        return None
    cs = scorer.stats
    first = cs.not_sent_why if cs.not_sent and cs.not_sent_why else None
    first = first or cs.first_error or cs.first_unreadable or (
        st.examples[0]["error"] if st.examples else None)
    if first:  # the client's advice is worded for a judge
        first = first.replace("let the judge wait for it: wait=SECONDS in its spec",
                              "let the scorer wait for it: wait=SECONDS in its --scorer spec")
    return (f"the factor scorer ({_who(scorer_spec)}) failed: {st.failed} of {st.calls} "
            f"G_score requests got no usable answer (--max-failed {max_failed:g} allows "
            f"{_allowed(max_failed, st.calls)}), so {n_scored} of {n_queries} queries have "
            "factor scores" + (f"; the first: {visible(first)}" if first else ""))


def _who(scorer_spec: str | None) -> str:
    return f"--scorer {scorer_spec}" if scorer_spec else "--scorer"


def _scorer_failed(run: dict[str, Any], st: JSONStats, scorer: Client, n_queries: int,
                   n_scored: int, max_failed: float, scorer_spec: str | None
                   ) -> dict[str, Any]:
    """The run's outcome naming the factor scorer when it is why the run failed: its G_score
    requests got no usable answer for no query, or for more than `max_failed` of them. An
    unreachable or garbage --scorer read "only 0 of 20 judge verdicts on queries with factor
    scores have a valid verdict" and advised wait=SECONDS in the judge's spec."""
    why = _scorer_reason(st, scorer, n_queries, n_scored, max_failed, scorer_spec)
    if why is None:
        return run
    rest = run.get("message", "").removeprefix("run failed: ")
    judged = "" if not rest else f"; besides (counted over the scorer's calls too): {rest}"
    if run["status"] == "failed" and not n_scored:  # the judges' count is a consequence
        judged = ""
    return {**run, "status": "failed", "message": f"run failed: {why}{judged}"}


def _apply_gate(run: dict[str, Any], *, n_valid: int, n_planned: int,
                calls: Mapping[str, Any], judged: Mapping[str, int], min_valid: int,
                max_failed: float, named: Sequence[tuple[str, Client]],
                scored: AnswerCounts, scorer: Client, st: JSONStats, n_queries: int,
                n_scored: int, scorer_spec: str | None) -> dict[str, Any]:
    """--apply's outcome with --max-failed checked against the judge's own calls and the
    factor scorer's own, not their pool: a judge failing 53 of its 160 calls hid under the
    scorer's 160 (53 of 320, 16.6%) and exited 0, and a scorer failing 77 of its 160 added
    "besides: 77 of 320 calls failed" as if a second cause. `run` is `assess` over the pool
    (its counts stay the run's); its own reasons (--min-valid, the judge's unreadable
    answers) are kept, the pooled share's is replaced by the two own ones, which
    `calls_by_judge` and `scorer_calls` report whether or not they failed the run."""
    s_asked, s_failed = (scored.get(id(scorer)) or (0, 0, 0, 0))[2:]
    own = judge_call_rows(named, [scored])
    rest = assess(n_valid=n_valid, n_planned=n_planned, min_valid=min_valid,
                  max_failed=max_failed, what="judge verdicts on queries with factor scores",
                  calls={k: v for k, v in calls.items()
                         if k not in ("failed", "not_sent", "first_error", "not_sent_why")},
                  **judged)
    pooled_over = run["failed_share"] > max_failed
    if pooled_over and sum(c["failed"] for c in own.values()) + s_failed < run["calls_failed"]:
        return run  # calls that are neither's (none known): the pooled gate stands
    parts = []
    scorer_why = _scorer_reason(st, scorer, n_queries, n_scored, max_failed, scorer_spec)
    if scorer_why is None and s_asked and s_failed / s_asked > max_failed:
        first = scorer.stats.first_error
        scorer_why = (f"the factor scorer ({_who(scorer_spec)}) failed: {s_failed} of its "
                      f"{s_asked} calls failed (--max-failed {max_failed:g} allows "
                      f"{_allowed(max_failed, s_asked)}"
                      + (f"; first error: {visible(first)})" if first else ")"))
    if scorer_why:
        parts.append(scorer_why)
    over = judges_over({}, own, max_failed, n_judges=2)  # its calls (answers: in `rest`)
    parts.extend(f"judge {visible(n)}: {x['reason']}" for n, x in over.items())
    if rest["status"] == "failed" and not (scorer_why and not n_scored):  # no scores: the
        # judge verdicts' count is the scorer's consequence
        parts.append(rest["message"].removeprefix("run failed: "))
    out = {**run, "status": "failed" if parts else "ok",
           "message": "run failed: " + "; ".join(parts) if parts else "",
           "calls_by_judge": {n: {"asked": c["asked"], "failed": c["failed"]}
                              for n, c in own.items()},
           "scorer_calls": {"spec": scorer_spec, "asked": s_asked, "failed": s_failed},
           "judges_over_max_failed": list(over)}
    if named:
        out["answers_by_judge"] = judge_answer_rows(named, [scored])
    return out


def _unfitted(run: dict[str, Any], exc: ValueError) -> dict[str, Any]:
    """The run's outcome when its verdicts cannot be fitted: failed, with the reason (after
    the reason it had failed for already: a judge left out by `judge_gate`)."""
    if run.get("status") == "failed" and run.get("message"):
        return {**run, "message": f"{run['message']}; and the other judges: {exc}"}
    return {**run, "status": "failed", "message": f"run failed: {exc}"}


async def run_apply(
    saved: Mapping[str, Any],
    judge: str,
    items: Sequence[PairwiseItem],
    winners: Mapping[str, Winner],
    scorer: Client,
    *,
    on_done: Progress | None = None,
    judge_clients: Sequence[Client] = (),
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    scorer_spec: str | None = None,
) -> dict[str, Any]:
    """Correct new verdicts of a judge with a saved mitigation fit (same factor, candidate and
    control as the fit). The outcome's unit is a verdict on a query with factor scores; a
    failed run is not corrected."""
    if saved.get("command") != "mitigate":
        raise ValueError("--apply needs the results.json of a `mitigate` run")
    if judge not in saved.get("per_judge", {}):
        raise ValueError(f"no fit for judge {judge!r}; fitted judges: "
                         f"{', '.join(saved.get('per_judge', {}))}")
    t0 = time.perf_counter()
    f = saved["factor"]
    factor = Factor(f["name"], f["definition"])
    criteria = {int(k): v for k, v in saved["criteria"].items()}
    stats = {"G_score": JSONStats()}
    before = answer_counts([scorer])
    scores = await _scores_if_judged(scorer, items, factor, criteria, stats["G_score"],
                                     {judge: winners}, on_done)
    scored = spent(before, [scorer])
    Y, ctl, qids, counts = mitigation_inputs(items, {judge: winners}, scores,
                                             saved.get("candidate", "rejected"))
    calls = _calls([scorer, *judge_clients])
    judged = _judge_answers(judge_clients, [scored])
    n_valid = int(np.isfinite(Y).sum())
    run = assess(n_valid=n_valid, n_planned=len(items), calls=calls, min_valid=min_valid,
                 max_failed=max_failed, what="judge verdicts on queries with factor scores",
                 **judged)
    run = _apply_gate(run, n_valid=n_valid, n_planned=len(items), calls=calls, judged=judged,
                      min_valid=min_valid, max_failed=max_failed,
                      named=_live_named({judge: winners}, judge_clients), scored=scored,
                      scorer=scorer, st=stats["G_score"], n_queries=len(items),
                      n_scored=len(qids), scorer_spec=scorer_spec)
    res = None
    if run["status"] != "failed":
        delta = M.CONTROLS[saved.get("control", "bias")](ctl)
        try:
            res = M.apply({"judges": saved["per_judge"], "gamma": saved.get("gamma", {})},
                          judge, Y[0], delta, qids)
        except ValueError as exc:
            run = _unfitted(run, exc)
    return {"command": "mitigate-apply", "judges": [judge],
            "data_fingerprint": fingerprint(items),  # which items (`data.fingerprint`)
            "factor": f,
            "candidate": saved.get("candidate", "rejected"),
            # the estimator of the fit applied (phi and psi are its): null when the fit did
            # not record one, never a guess
            "estimator": saved.get("estimator"),
            "control": saved.get("control", "bias"), "counts": counts, "applied": res,
            # the applied verdicts and the controls' differences per query, to re-apply
            "per_query": M.per_query(Y, ctl, [judge], qids),
            "json_stats": _stats_doc(stats), "calls": calls, "run": run,
            "seconds": round(time.perf_counter() - t0, 2)}


__all__ = ["candidate_side", "factor_scores", "live_winners", "mitigation_inputs",
           "recorded_winners", "resolve_factors", "run_apply", "run_discover",
           "run_mitigate", "run_mitigate_fit", "run_quantify", "splits_doc", "splits_for",
           "win_value"]
