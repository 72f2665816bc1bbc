"""The Python API: every command as a function returning a `Result`, sync and async.

Each function calls the same pipeline the CLI calls (`judgeaudit.audit.evaluate.evaluate`,
`judgeaudit.audit.battery.run_battery`, `judgeaudit.scoring.run.run_scoring_bias`,
`judgeaudit.hubj.run.run_discover | run_quantify | run_mitigate | run_apply`,
`judgeaudit.rank.run.run_rank`, `judgeaudit.rank.run_eval.run_rank_eval`) and returns the
same results document, wrapped in a `Result`::

    import judgeaudit
    res = judgeaudit.audit("sim?position=1&seed=0", "builtin:facts", n=30)
    res.report("out/report.html"); print(res.summary())

The sync functions work in plain Python and inside a running event loop (Jupyter): there the
command runs on a fresh event loop in a worker thread and the call waits for it. The `a`
twins (`aevaluate`, `aaudit`, ...) are coroutines for async code; they also take a `session`
to share a cache, judges and call totals between commands.

A run that judged too little (every call failed, no valid verdict) is not an exception: its
`Result` has `ok` False and says why in `reason` (the CLI's exit 3); pass
`raise_on_failure=True` to get a `RunFailed` instead. Bad input (an unknown probe, data that
cannot be loaded, a judge spec that cannot be made, out-of-range options) raises ValueError
before any call is made.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from judgeaudit.data.spec import public_spec, split_specs
from judgeaudit.llm import Cache, RetryPolicy
from judgeaudit.report.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID
from judgeaudit.result import Result
from judgeaudit.session import ProgressFn, Session

if TYPE_CHECKING:
    from judgeaudit.hubj.embed import Embedder

T = TypeVar("T")
Data = str | Sequence[Any]
"""A data SPEC (`builtin:facts`, `llmbar:PATH?subset=...`, `jsonl:PATH`, ...) or a list of
items (`PairwiseItem` / `PointwiseItem`, or dicts with their fields)."""
Specs = str | Sequence[str] | None
"""One judge SPEC, a comma-separated string of them, or a list."""
CacheArg = str | os.PathLike[str] | Cache | bool | None
"""None or True: the default cache file; a path; a `judgeaudit.llm.Cache`; False: no cache."""


# ---- running a coroutine from sync code ------------------------------------------------------

def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine `make()` to completion from sync code and return its value.

    Without a running event loop in this thread: `asyncio.run`. With one (Jupyter, an async
    web handler): on a fresh event loop in a worker thread, waiting for it; Ctrl-C (a
    KeyboardInterrupt here) cancels the command there, waits for it to stop (finished calls
    are in the cache) and re-raises."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(make))
    box: dict[str, Any] = {}
    done = threading.Event()  # not Thread.join: an interrupted join may return early
    lock = threading.Lock()

    async def main() -> T:
        with lock:
            box["loop"], box["task"] = asyncio.get_running_loop(), asyncio.current_task()
            stop = box.get("stop", False)
        if stop:  # interrupted before it started
            raise asyncio.CancelledError
        return await make()

    def work() -> None:
        try:
            box["value"] = asyncio.run(main())
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="judgeaudit-run", daemon=True).start()
    try:
        while not done.wait(0.1):
            pass
    except KeyboardInterrupt:
        with lock:
            box["stop"] = True
            loop, task = box.get("loop"), box.get("task")
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)
        while not done.wait(0.1):  # a second Ctrl-C stops waiting
            pass
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _as_coroutine(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


# ---- input -------------------------------------------------------------------------------

def _as_item(x: Any) -> Any:
    from judgeaudit.data.schema import PairwiseItem, PointwiseItem

    if isinstance(x, PairwiseItem | PointwiseItem):
        return x
    if isinstance(x, Mapping):
        cls = PairwiseItem if "response_1" in x else PointwiseItem
        return cls.model_validate(dict(x))
    raise ValueError(f"data: expected PairwiseItem, PointwiseItem or dict items, got "
                     f"{type(x).__name__}")


def load_data(data: Data) -> tuple[list[Any], str]:
    """Items of a data SPEC or a list, and the name the results give the data (the spec, or
    "memory:N items")."""
    if isinstance(data, str):
        from judgeaudit.data import DataError, load

        try:
            return list(load(data)), data
        except (DataError, ValueError, FileNotFoundError, OSError) as exc:
            msg = str(exc)
            raise ValueError(msg if data in msg else f"data {data!r}: {msg}") from None
    if isinstance(data, bytes | Mapping) or not isinstance(data, Sequence | list | tuple):
        raise ValueError(f"data: expected a data SPEC or a list of items, got "
                         f"{type(data).__name__}")
    items = [_as_item(x) for x in data]
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            raise ValueError(f"data: duplicate item id {it.id!r}; ids must be unique")
        seen.add(it.id)
    return items, f"memory:{len(items)} items"


def _specs(x: Specs) -> list[str]:
    if x is None:
        return []
    if isinstance(x, str):
        return split_specs(x)
    return [s.strip() for s in x if s and s.strip()]


def _names(x: str | Sequence[str] | None) -> list[str] | None:
    if x is None:
        return None
    parts = x.split(",") if isinstance(x, str) else list(x)
    return [p.strip() for p in parts if p and p.strip()]


def _at_least(name: str, v: int | None, lo: int = 1) -> None:
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
        raise ValueError(f"{name}: expected an integer >= {lo}, got {v!r}")


def _share(name: str, v: float, *, open_: bool = False) -> None:
    ok = 0.0 < v < 1.0 if open_ else 0.0 <= v <= 1.0
    if not ok:
        rng = "strictly between 0 and 1" if open_ else "in [0, 1]"
        raise ValueError(f"{name}: expected a number {rng}, got {v!r}")


def _outcome_opts(min_valid: int, max_failed: float) -> None:
    _at_least("min_valid", min_valid)
    _share("max_failed", max_failed)


def _read_doc(x: str | os.PathLike[str] | Result | Mapping[str, Any], what: str
              ) -> dict[str, Any]:
    """A results document given as a path, a Result or a dict."""
    if isinstance(x, Result):
        return x.to_dict()
    if isinstance(x, Mapping):
        return dict(x)
    try:
        return Result.load(x).to_dict()
    except (OSError, ValueError) as exc:
        raise ValueError(f"{what} {x}: {exc}") from None


# ---- one command in a session ------------------------------------------------------------

async def _execute(
    command: str,
    body: Callable[[Session], Awaitable[dict[str, Any]]],
    *,
    session: Session | None,
    opts: dict[str, Any],
    raise_on_failure: bool,
    judge: str,
    data: str,
    n_planned: Callable[[], int],
    min_valid: int,
    max_failed: float,
) -> Result:
    """Run `body` in `session` (or in a session of its own, made from `opts` and closed at
    the end) and wrap its document. A call that failed fatally (a revoked key, a bad
    request) aborts the pipeline without a document: the result is then a failed run whose
    reason quotes the error."""
    from judgeaudit.llm import CallFailed

    if session is not None:
        given = {k: v for k, v in opts.items() if v is not None and k != "seed"}
        if given:
            raise ValueError(f"{', '.join(sorted(given))}: set these on the Session when "
                             "passing session=")
        sess = session
    else:
        sess = Session(**opts)
    try:
        with sess.command():
            try:
                doc = await body(sess)
            except CallFailed as exc:
                doc = _fatal_document(command, sess, exc, judge=judge, data=data,
                                      n_planned=n_planned(), min_valid=min_valid,
                                      max_failed=max_failed)
    finally:
        if session is None:
            await sess.aclose()
    res = Result.from_document(doc)
    if raise_on_failure:
        res.raise_for_status()
    return res


def _fatal_document(command: str, sess: Session, exc: Exception, *, judge: str, data: str,
                    n_planned: int, min_valid: int, max_failed: float) -> dict[str, Any]:
    import judgeaudit
    from judgeaudit.report.outcome import assess

    calls = sess.calls()
    if not calls.get("first_error"):
        calls["first_error"] = str(exc)
    run = assess(n_valid=0, n_planned=n_planned, calls=calls, min_valid=min_valid,
                 max_failed=max_failed)
    return {"command": command, "version": judgeaudit.__version__, "judge": judge,
            "data": data, "calls": calls, "run": run, "error": str(exc)}


def _opts(cache: Any, concurrency: int | None, timeout: float | None, retry: Any,
          seed: int, progress: ProgressFn | None) -> dict[str, Any]:
    _at_least("concurrency", concurrency)
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout: expected a number of seconds > 0, got {timeout!r}")
    return {"cache": cache, "concurrency": concurrency, "timeout": timeout, "retry": retry,
            "seed": seed, "progress": progress}


# ---- evaluate ----------------------------------------------------------------------------

async def aevaluate(
    judge: str,
    data: Data = "builtin:facts",
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    pair_rule: str | None = None,
    ties: str | None = None,
    by: str | None = None,
    group_by: str | None = None,
    system_field: str | None = None,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """The async twin of `evaluate` (same arguments).

    Args:
        session: run in this `Session` (its cache and judge settings apply; give cache,
            concurrency, timeout, retry and progress to it instead). Default: a session of
            the command's own, closed when it ends.

    Returns:
        The evaluate `Result`.
    """
    from judgeaudit.audit.evaluate import evaluate as run_evaluate
    from judgeaudit.audit.evaluate import select_items
    from judgeaudit.data.schema import PairwiseItem

    opts = _opts(cache, concurrency, timeout, retry, seed, progress)
    _outcome_opts(min_valid, max_failed)
    _at_least("limit", limit)
    _at_least("sample", sample)
    if limit is not None and sample is not None:
        raise ValueError("limit and sample both choose the items; give one of them")
    items, spec = load_data(data)
    items, selection = select_items(items, limit=limit, sample=sample, seed=seed)
    if not items:
        raise ValueError(f"data {spec!r} has no items")
    pointwise = not any(isinstance(it, PairwiseItem) for it in items)

    async def body(s: Session) -> dict[str, Any]:
        bundle = s.judge(judge)
        n_calls = len(items) if pointwise else bundle.pairwise.n_calls(items)
        tr = s.tracker("judging", n_calls)
        return await run_evaluate(bundle, items, on_done=tr.advance, data_spec=spec,
                                  seed=seed, min_valid=min_valid, max_failed=max_failed,
                                  pair_rule=pair_rule or "mean", ties=ties, by=by,
                                  group_by=group_by, system_field=system_field,
                                  selection=selection)

    return await _execute("evaluate", body, session=session, opts=opts,
                          raise_on_failure=raise_on_failure, judge=public_spec(judge),
                          data=spec, n_planned=lambda: len(items), min_valid=min_valid,
                          max_failed=max_failed)


def evaluate(
    judge: str,
    data: Data = "builtin:facts",
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    pair_rule: str | None = None,
    ties: str | None = None,
    by: str | None = None,
    group_by: str | None = None,
    system_field: str | None = None,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
) -> Result:
    """Evaluate a judge on labelled data (`judgeaudit evaluate`). Pairwise data: accuracy
    under a named pair rule, position consistency, Cohen's kappa. Pointwise data (a gold
    score per response): Pearson, Spearman and Kendall correlations (item, group, system
    level), exact agreement, mean absolute error. Every number with its 95% interval and n.

    Args:
        judge: judge SPEC, e.g. "local", "openai:MODEL?base_url=URL", "sim?position=0.8".
        data: data SPEC or a list of items (`PairwiseItem`/`PointwiseItem` or dicts).
        limit: use only the first N items.
        sample: use N items drawn at random (seeded by `seed`); not with `limit`.
        seed: seed of the sample, the judges and the bootstrap.
        pair_rule: "mean" (LLMBar, default), "sum" (JudgeBench) or "both".
        ties: "keep" (default with tie labels: three-way accuracy) or "drop".
        by: break accuracy or correlation down by an item field or metadata key.
        group_by: pointwise: group-level correlation within each value of this field.
        system_field: pointwise: system-level correlation of per-system mean scores.
        min_valid: fewest items with a valid verdict for the run to count.
        max_failed: largest share of failed calls (0-1) before the run fails.
        cache: None: the default cache file; a path; a `judgeaudit.llm.Cache`; False: none.
        concurrency: concurrent calls per judge.
        timeout: seconds per call attempt.
        retry: a `judgeaudit.llm.RetryPolicy` or the most retries per call.
        progress: called with a `judgeaudit.Progress` after every finished call.
        raise_on_failure: raise `judgeaudit.RunFailed` when the run failed instead of
            returning a Result with `ok` False.

    Returns:
        The evaluate `Result` (`res["accuracy"]`, `res.summary()`, `res.to_frame()`).
    """
    kw = dict(locals())
    return run_sync(lambda: aevaluate(**kw))


# ---- audit -------------------------------------------------------------------------------

async def aaudit(
    judge: str,
    data: Data = "builtin:facts",
    *,
    probes: str | Sequence[str] | None = None,
    n: int | None = None,
    full: bool = False,
    panel: Specs = (),
    alpha: float = 0.05,
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """The async twin of `audit` (same arguments).

    Args:
        session: run in this `Session` (see `aevaluate`).

    Returns:
        The audit `Result`.
    """
    from judgeaudit.audit.battery import audit_items, check_runnable, run_battery
    from judgeaudit.audit.probe import get_probe, probe_names

    opts = _opts(cache, concurrency, timeout, retry, seed, progress)
    _outcome_opts(min_valid, max_failed)
    _at_least("n", n)
    _share("alpha", alpha, open_=True)
    names = _names(probes) or probe_names(default_only=not full)
    for name in names:
        get_probe(name)  # an unknown probe raises ValueError naming the known ones
    items, spec = load_data(data)
    # The CLI's own choice of items: each probe takes the first n pairs it can use (the
    # position probe needs no label), or a seeded sample.
    items, limit, selection = audit_items(items, n=n, full=full, seed=seed)
    check_runnable(items, names, limit=limit)
    panel_specs = _specs(panel)

    async def body(s: Session) -> dict[str, Any]:
        bundle = s.judge(judge)
        others = [s.judge(p) for p in panel_specs]
        tr = s.tracker("auditing")
        return await run_battery(bundle, items, names, seed=seed, alpha=alpha, panel=others,
                                 data_spec=spec, on_calls=tr.add_total, on_done=tr.advance,
                                 min_valid=min_valid, max_failed=max_failed, limit=limit,
                                 selection=selection)

    return await _execute("audit", body, session=session, opts=opts,
                          raise_on_failure=raise_on_failure, judge=public_spec(judge),
                          data=spec, n_planned=lambda: len(items), min_valid=min_valid,
                          max_failed=max_failed)


def audit(
    judge: str,
    data: Data = "builtin:facts",
    *,
    probes: str | Sequence[str] | None = None,
    n: int | None = None,
    full: bool = False,
    panel: Specs = (),
    alpha: float = 0.05,
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
) -> Result:
    """Run the bias battery against a judge (`judgeaudit audit`): per probe the effect with
    its 95% interval, n, p, the Benjamini-Hochberg q across the report, the smallest
    detectable effect, a verdict (biased / not_biased / underpowered) and the production
    threshold check.

    Args:
        judge: judge SPEC.
        data: data SPEC or a list of pairwise items; only items with a label 1 or 2 are used.
        probes: probe names (a list or "position,verbosity"); default: the default set
            (with `full`: every probe).
        n: items per probe (default 40; with `full`: all).
        full: every probe, every item.
        panel: extra judge SPECs for the judge-panel agreement probe.
        alpha: false discovery rate for "biased" (0 < alpha < 1).
        seed: seed of the judges and the probes.
        min_valid: fewest items with a valid unperturbed verdict for the run to count.
        max_failed: largest share of failed calls (0-1) before the run fails.
        cache, concurrency, timeout, retry, progress, raise_on_failure: as in `evaluate`.

    Returns:
        The audit `Result` (`res.to_frame()`: one row per probe).
    """
    kw = dict(locals())
    return run_sync(lambda: aaudit(**kw))


# ---- scoring-bias ------------------------------------------------------------------------

async def ascoring_bias(
    judge: str,
    data: Data = "builtin:graded",
    *,
    perturbations: str | Sequence[str] | None = None,
    ids: Sequence[str] = (),
    limit: int | None = None,
    repeats: int = 3,
    references: str | os.PathLike[str] | Mapping[str, Mapping[int, str]] | None = None,
    generate_references: bool = False,
    generator: str | None = None,
    reviewer: str | None = None,
    ref_limit: int | None = None,
    ref_attempts: int = 3,
    ref_tolerance: int = 0,
    ref_max_tokens: int = 160,
    ref_review: str = "score",
    references_out: str | os.PathLike[str] | None = None,
    template: str = "pointwise_scoring_v1",
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """The async twin of `scoring_bias` (same arguments).

    Args:
        session: run in this `Session` (see `aevaluate`).

    Returns:
        The scoring-bias `Result`.
    """
    from judgeaudit.data.schema import PointwiseItem
    from judgeaudit.judges.pointwise import RubricJudge
    from judgeaudit.scoring.perturbations import resolve
    from judgeaudit.scoring.references import (
        ReferencePipeline,
        as_references,
        question_key,
        read_references,
        sibling_references,
        summarize,
        write_references,
    )
    from judgeaudit.scoring.run import n_calls, run_scoring_bias

    opts = _opts(cache, concurrency, timeout, retry, seed, progress)
    _outcome_opts(min_valid, max_failed)
    for name, v in (("limit", limit), ("repeats", repeats), ("ref_limit", ref_limit),
                    ("ref_attempts", ref_attempts), ("ref_max_tokens", ref_max_tokens)):
        _at_least(name, v)
    if not 0 <= ref_tolerance <= 4:
        raise ValueError(f"ref_tolerance: expected a score distance 0-4, got {ref_tolerance}")
    if ref_review not in ("score", "order"):
        raise ValueError(f"ref_review: expected 'score' or 'order', got {ref_review!r}")
    perts = resolve(_names(perturbations), seed=seed, id_maps=list(ids))
    loaded, spec = load_data(data)
    items = [it for it in loaded if isinstance(it, PointwiseItem)]
    if not items:
        raise ValueError(f"data {spec!r} has no pointwise items (scoring-bias scores single "
                         "responses; pairwise data does not apply)")
    siblings = sibling_references(items)  # from every item, before the limit
    if limit is not None:
        items = items[:limit]
    refs: dict[str, dict[int, str]] = {}
    if isinstance(references, Mapping):
        refs = {str(i): {int(k): str(t) for k, t in by_k.items()}
                for i, by_k in references.items()}
    elif references is not None:
        refs = read_references(references)
    elif not generate_references:
        refs = siblings

    async def body(s: Session) -> dict[str, Any]:
        nonlocal refs
        main = s.judge(judge)
        gen_b = s.judge(generator or judge) if generate_references else None
        rev_b = s.judge(reviewer or judge) if generate_references else None
        rubric = RubricJudge(main.client, template)
        ref_info: dict[str, Any] | None = None
        if gen_b is not None and rev_b is not None:
            pipe = ReferencePipeline(gen_b.client, rev_b.client, max_attempts=ref_attempts,
                                     tolerance=ref_tolerance, max_tokens=ref_max_tokens,
                                     review=ref_review)
            subset = items[:ref_limit] if ref_limit else items
            n_q = len({question_key(it) for it in subset})
            tr = s.tracker("references", 2 * 4 * n_q * ref_attempts)
            results = await pipe.run(subset, on_done=tr.advance)
            info = {"generator": gen_b.public_spec, "reviewer": rev_b.public_spec,
                    "max_attempts": ref_attempts, "tolerance": ref_tolerance,
                    "review": ref_review, "max_tokens": ref_max_tokens, "data": spec}
            refs = {**refs, **as_references(results)}
            ref_info = {**info, "summary": summarize(results)}
            if references_out is not None:
                ref_info["file"] = str(write_references(references_out, results, info))
        tr = s.tracker("scoring", n_calls(items, perts, refs, repeats))
        res = await run_scoring_bias(rubric, items, perts, references=refs, repeats=repeats,
                                     seed=seed, judge_spec=main.public_spec, data_spec=spec,
                                     on_done=tr.advance, min_valid=min_valid,
                                     max_failed=max_failed)
        if ref_info is not None:
            res["references"] = ref_info
        return res

    return await _execute("scoring-bias", body, session=session, opts=opts,
                          raise_on_failure=raise_on_failure, judge=public_spec(judge),
                          data=spec, n_planned=lambda: n_calls(items, perts, refs, repeats),
                          min_valid=min_valid, max_failed=max_failed)


def scoring_bias(
    judge: str,
    data: Data = "builtin:graded",
    *,
    perturbations: str | Sequence[str] | None = None,
    ids: Sequence[str] = (),
    limit: int | None = None,
    repeats: int = 3,
    references: str | os.PathLike[str] | Mapping[str, Mapping[int, str]] | None = None,
    generate_references: bool = False,
    generator: str | None = None,
    reviewer: str | None = None,
    ref_limit: int | None = None,
    ref_attempts: int = 3,
    ref_tolerance: int = 0,
    ref_max_tokens: int = 160,
    ref_review: str = "score",
    references_out: str | os.PathLike[str] | None = None,
    template: str = "pointwise_scoring_v1",
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
) -> Result:
    """How a rubric judge's 1-5 scores move when its scoring prompt changes
    (`judgeaudit scoring-bias`): rubric order, score ids, a reference answer labelled with a
    score. Flip rate, MAD, shift, correlation with gold, the reference pull, the most
    accurate template and whether averaging helps.

    Args:
        judge: judge SPEC.
        data: pointwise data SPEC or a list of pointwise items.
        perturbations: template names (baseline always runs): order_desc, order_random,
            ids_letters, ids_roman, ref_1..ref_5 (default: all).
        ids: extra score-id schemes "NAME=w,x,y,z,t" (run as ids_NAME).
        limit: use only the first N items.
        repeats: baseline scorings per item (>= 2 gives the repeat noise).
        references: Ref-k answers: a references.json path or {item_id: {k: text}}; default:
            the data's own (builtin:graded's level-k answers, else Ref-5 = the reference).
        generate_references: write Ref-1..4 by generation and review first.
        generator, reviewer: SPECs of the generating and reviewing models (default: judge).
        ref_limit, ref_attempts, ref_tolerance, ref_max_tokens, ref_review: as the CLI's
            --ref-* options.
        references_out: where to write the generated references.json (default: not kept
            on disk; the summary is in the result).
        template: scoring template name or .txt path.
        seed, min_valid, max_failed, cache, concurrency, timeout, retry, progress,
        raise_on_failure: as in `evaluate` (the outcome's unit is a score).

    Returns:
        The scoring-bias `Result`.
    """
    kw = dict(locals())
    return run_sync(lambda: ascoring_bias(**kw))


# ---- rank --------------------------------------------------------------------------------

async def arank(
    judge: str,
    items: str = "builtin:controlled",
    *,
    k: int | None = None,
    budget: int = 120,
    rule: str = "topk",
    covariates: str | Sequence[str] | None = None,
    model: str = "bias_aware",
    trusted: str | os.PathLike[str] | Sequence[tuple[str, str]] | None = None,
    seed: int = 0,
    lam: str | float = "auto",
    tau: float = 1.0,
    hierarchical: bool = False,
    refit_every: int = 8,
    samples: int = 1500,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """The async twin of `rank` (same arguments).

    Args:
        session: run in this `Session` (see `aevaluate`).

    Returns:
        The rank `Result`.
    """
    from judgeaudit.rank.run import prepare_rank, run_rank

    opts = _opts(cache, concurrency, timeout, retry, seed, progress)
    inp = prepare_rank(items, k=k, budget=budget, rule=rule, covariates=covariates,
                       model=model,
                       trusted=Path(trusted) if isinstance(trusted, os.PathLike) else trusted,
                       seed=seed, lam=lam, tau=tau, hierarchical=hierarchical,
                       refit_every=refit_every, samples=samples, min_valid=min_valid,
                       max_failed=max_failed)

    async def body(s: Session) -> dict[str, Any]:
        return await run_rank(s, judge, inp)

    return await _execute("rank", body, session=session, opts=opts,
                          raise_on_failure=raise_on_failure, judge=public_spec(judge),
                          data=items, n_planned=lambda: inp.budget, min_valid=min_valid,
                          max_failed=max_failed)


def rank(
    judge: str,
    items: str = "builtin:controlled",
    *,
    k: int | None = None,
    budget: int = 120,
    rule: str = "topk",
    covariates: str | Sequence[str] | None = None,
    model: str = "bias_aware",
    trusted: str | os.PathLike[str] | Sequence[tuple[str, str]] | None = None,
    seed: int = 0,
    lam: str | float = "auto",
    tau: float = 1.0,
    hierarchical: bool = False,
    refit_every: int = 8,
    samples: int = 1500,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
) -> Result:
    """Find the top-k of a pool with a judge under a comparison budget (`judgeaudit rank`),
    correcting for the judge's covariate and position biases: bias-aware Bayesian
    Bradley-Terry with top-k-aware active comparisons. The result holds the ranking (theta
    with its 95% interval and P(in top k) per item), both models' top-k, the judge's
    estimated biases (c per covariate, kappa for the first-shown position) with intervals,
    the trusted-anchor gate, every comparison and, when the pool knows true quality, recall.

    Args:
        judge: judge SPEC, e.g. "sim?length=1&position=0.3", "openai:MODEL?base_url=URL".
        items: pool SPEC: "builtin:controlled[?seed=0&n=30&k=5&topic=moon]" or
            "jsonl:PATH" (one {"id", "prompt", "response", "quality"?, ...} per line).
        k: size of the top set (default: the pool's, else 5).
        budget: comparisons (judge calls) to spend; at most every comparable pair in
            both orders.
        rule: acquisition rule: topk, global, roundrobin, random, entropy,
            uncertainty_only, outcome_only.
        covariates: names the judge may be biased on ("length,markdown", a list, or "none";
            default: length and markdown); constant ones are left out and reported.
        model: model driving acquisition and the reported ranking: bias_aware or naive.
        trusted: trusted (better, worse) pairs (a JSONL/CSV file, or pairs of item ids) for
            the gate that decides whether the bias correction is reported.
        seed: seed of the loop and of the judge.
        lam: prior precision of theta, or "auto" (empirical Bayes per pool).
        tau: prior sd of c and kappa.
        hierarchical: learn tau by empirical Bayes.
        refit_every: refit after this many comparisons (one round of the active loop).
        samples: Monte-Carlo draws for top-k membership.
        min_valid: fewest comparisons with a valid verdict for the run to count.
        max_failed: largest share of failed calls (0-1) before the run fails.
        cache, concurrency, timeout, retry, progress, raise_on_failure: as in `evaluate`.

    Returns:
        The rank `Result` (`res["ranking"]`, `res["models"]["bias_aware"]["c"]`,
        `res.summary()`, `res.report(path)`).
    """
    kw = dict(locals())
    return run_sync(lambda: arank(**kw))


async def arank_eval(
    oracle: str = "sim",
    items: str = "builtin:controlled",
    *,
    k: int | None = None,
    budgets: str | Sequence[int] = (60, 120, 200),
    rules: str | Sequence[str] = ("topk", "global", "roundrobin", "random"),
    seeds: int | str | Sequence[int] = 10,
    covariates: str | Sequence[str] | None = None,
    lam: str | float = "auto",
    tau: float = 1.0,
    hierarchical: bool = False,
    refit_every: int = 8,
    samples: int = 1500,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """The async twin of `rank_eval` (same arguments).

    Args:
        session: run in this `Session` (see `aevaluate`).

    Returns:
        The rank-eval `Result`.
    """
    from judgeaudit.rank.run_eval import prepare_rank_eval, run_rank_eval

    opts = _opts(cache, concurrency, timeout, retry, 0, progress)
    inp = prepare_rank_eval(oracle, items, k=k, budgets=budgets, rules=rules, seeds=seeds,
                            covariates=covariates, lam=lam, tau=tau,
                            hierarchical=hierarchical, refit_every=refit_every,
                            samples=samples, min_valid=min_valid, max_failed=max_failed)

    async def body(s: Session) -> dict[str, Any]:
        return await run_rank_eval(s, inp)

    return await _execute("rank-eval", body, session=session, opts=opts,
                          raise_on_failure=raise_on_failure, judge=public_spec(oracle),
                          data=items, n_planned=lambda: inp.n_calls, min_valid=min_valid,
                          max_failed=max_failed)


def rank_eval(
    oracle: str = "sim",
    items: str = "builtin:controlled",
    *,
    k: int | None = None,
    budgets: str | Sequence[int] = (60, 120, 200),
    rules: str | Sequence[str] = ("topk", "global", "roundrobin", "random"),
    seeds: int | str | Sequence[int] = 10,
    covariates: str | Sequence[str] | None = None,
    lam: str | float = "auto",
    tau: float = 1.0,
    hierarchical: bool = False,
    refit_every: int = 8,
    samples: int = 1500,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
) -> Result:
    """Evaluate acquisition rules x models offline (`judgeaudit rank-eval`): the oracle's
    full ordered-pair verdict matrix is built once per pool (cached), then every rule and
    model is replayed against it per seed. The result holds recall@k against budget (mean,
    se, n per model x rule x budget), paired tests between rules, the model x acquisition
    ablation, full-data recall and the judge's estimated biases with intervals (and their
    coverage of planted values for a `sim` oracle).

    Args:
        oracle: judge SPEC used as oracle; a `sim` spec without seed= draws fresh verdicts
            per seed.
        items: pool SPEC with true quality; "builtin:controlled" without seed= draws a new
            pool per seed.
        k: top-k size (default: the pool's, else 5).
        budgets: budgets to report recall at ("60,120" or a list).
        rules: acquisition rules to compare ("topk,random" or a list).
        seeds: a count (10: seeds 0-9), "0-9", "0,4,9" or a list of seeds.
        covariates, lam, tau, hierarchical, refit_every, samples: as in `rank`.
        min_valid: fewest valid verdicts in the matrices for the run to count.
        max_failed: largest share of failed calls (0-1) before the run fails.
        cache, concurrency, timeout, retry, progress, raise_on_failure: as in `evaluate`.

    Returns:
        The rank-eval `Result` (`res["recall"]`, `res["tests"]`, `res.report(path)`).
    """
    kw = dict(locals())
    return run_sync(lambda: arank_eval(**kw))


# ---- HUB-J: shared steps -----------------------------------------------------------------

def _human_items(data: Data, limit: int | None, min_agreement: float) -> tuple[list[Any], str]:
    from judgeaudit.data.schema import PairwiseItem
    from judgeaudit.hubj.splits import human_filter

    _share("min_agreement", min_agreement)
    loaded, spec = load_data(data)
    items = [it for it in loaded if isinstance(it, PairwiseItem)]
    if not items:
        raise ValueError(f"data {spec!r} has no pairwise items")
    kept = human_filter(items, min_agreement)
    if not kept:
        raise ValueError(f"data {spec!r}: no item has a decisive human label (1 or 2) given "
                         f"by at least {min_agreement:.0%} of its annotators")
    return (kept[:limit] if limit is not None else kept), spec


def _recorded_folder(recorded: str | None, data: Data) -> Path | None:
    """The folder of the recorded verdicts (`recorded="pandalm"` needs data pandalm:PATH)."""
    if recorded is None:
        return None
    if recorded != "pandalm":
        raise ValueError(f"recorded {recorded!r}: only 'pandalm' is known")
    from judgeaudit.data.spec import parse_spec

    sp = parse_spec(data) if isinstance(data, str) else None
    if sp is None or sp.kind != "pandalm" or not sp.name:
        raise ValueError("recorded='pandalm' needs data='pandalm:PATH' (the folder with the "
                         "recorded verdict files)")
    return Path(sp.name)


async def _winners(s: Session, specs: Sequence[str], recorded: str | None,
                   folder: Path | None, items: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Winners of every judge: recorded ones first (no calls), then live ones."""
    from judgeaudit.hubj.run import live_winners, recorded_winners

    winners: dict[str, dict[str, Any]] = {}
    if recorded and folder is not None:
        with tempfile.TemporaryDirectory(prefix="judgeaudit-recorded-") as tmp:
            winners.update(recorded_winners(recorded, folder, [it.id for it in items], tmp))
    if specs:
        bundles = {s.judge(x).public_spec: s.judge(x) for x in specs}
        tr = s.tracker("judging", 2 * len(items) * len(bundles))
        winners.update(await live_winners(bundles, items, on_done=tr.advance))
    if not winners:
        raise ValueError("give judges=SPEC[,SPEC] and/or recorded='pandalm'")
    return winners


def _stamp(res: dict[str, Any]) -> None:
    """What the CLI stamps on HUB-J documents: version, start time, the judge(s)."""
    import judgeaudit

    judges = [str(j) for j in res.get("judges", [])]
    res.setdefault("version", judgeaudit.__version__)
    res.setdefault("judge", judges[0] if len(judges) == 1 else f"{len(judges)} judges")


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _factors(names: str | Sequence[str],
             factors_from: str | os.PathLike[str] | Result | Mapping[str, Any] | None
             ) -> tuple[list[Any], dict[str, dict[int, str]]]:
    from judgeaudit.hubj.run import resolve_factors

    discovered = None
    if factors_from is not None:
        discovered = _read_doc(factors_from, "factors_from")
        if discovered.get("command") != "discover":
            raise ValueError("factors_from: not the results of `discover`")
    listed = _names(names) or []
    if listed == ["found"] and discovered is not None:
        listed = [f["name"] for f in discovered["discover"]["factors"]]
    return resolve_factors(listed, discovered)


# ---- discover ----------------------------------------------------------------------------

async def adiscover(
    judges: Specs = None,
    data: Data = "pandalm:../shared/data/pandalm_testset",
    *,
    recorded: str | None = None,
    llm: str = "local",
    limit: int | None = 30,
    holdout: float = 0.5,
    holdout_limit: int | None = 30,
    clusters: int = 4,
    factors: int = 5,
    iterations: int = 3,
    tau: float = 0.7,
    rho: float = 0.8,
    rep_fallback: bool = True,
    min_agreement: float = 0.5,
    embedder: Embedder | None = None,
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """The async twin of `discover` (same arguments).

    Args:
        session: run in this `Session` (see `aevaluate`).

    Returns:
        The discover `Result`.
    """
    from judgeaudit.hubj.discover import DiscoverConfig
    from judgeaudit.hubj.run import run_discover

    opts = _opts(cache, concurrency, timeout, retry, seed, progress)
    _outcome_opts(min_valid, max_failed)
    for name, v in (("limit", limit), ("holdout_limit", holdout_limit),
                    ("clusters", clusters), ("factors", factors), ("iterations", iterations)):
        _at_least(name, v)
    _share("holdout", holdout, open_=True)
    _share("tau", tau)
    _share("rho", rho)
    started = _now()
    items, spec = _human_items(data, None, min_agreement)
    folder = _recorded_folder(recorded, data)
    specs = _specs(judges)
    cfg = DiscoverConfig(clusters=clusters, max_factors=factors, iterations=iterations,
                         tau=tau, rho=rho, seed=seed, rep_fallback=rep_fallback)

    async def body(s: Session) -> dict[str, Any]:
        g = s.judge(llm)
        for x in specs:  # every spec checked before any call
            s.judge(x)
        emb = embedder
        if emb is None:
            from judgeaudit.hubj.embed import MiniLMEmbedder

            emb = MiniLMEmbedder()
        winners = await _winners(s, specs, recorded, folder, items)
        tr = s.tracker("discover (G-module calls)")

        def observe(_req: Any) -> None:
            tr.advance()

        def stage(_msg: str, planned: int) -> None:
            tr.add_total(planned)

        g.client.observers.append(observe)
        try:
            res = await run_discover(items, winners, g.client, emb, cfg, holdout=holdout,
                                     limit=limit, holdout_limit=holdout_limit,
                                     min_agreement=min_agreement, on_stage=stage,
                                     judge_clients=[b.client for b in s.judges.values()],
                                     min_valid=min_valid, max_failed=max_failed)
        finally:
            g.client.observers.remove(observe)
        res.update(llm=g.public_spec, data=spec)
        res.setdefault("started", started)
        _stamp(res)
        return res

    return await _execute("discover", body, session=session, opts=opts,
                          raise_on_failure=raise_on_failure, judge=public_spec(llm),
                          data=spec, n_planned=lambda: 0, min_valid=min_valid,
                          max_failed=max_failed)


def discover(
    judges: Specs = None,
    data: Data = "pandalm:../shared/data/pandalm_testset",
    *,
    recorded: str | None = None,
    llm: str = "local",
    limit: int | None = 30,
    holdout: float = 0.5,
    holdout_limit: int | None = 30,
    clusters: int = 4,
    factors: int = 5,
    iterations: int = 3,
    tau: float = 0.7,
    rho: float = 0.8,
    rep_fallback: bool = True,
    min_agreement: float = 0.5,
    embedder: Embedder | None = None,
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
) -> Result:
    """Find the factors behind judges' disagreements with humans (`judgeaudit discover`,
    HUB-J Algorithm 1) and validate them, beside two baseline factor sets, on held-out
    disagreements.

    Args:
        judges: live judge SPECs whose consensus disagreements are mined (with or instead
            of `recorded`).
        data: pairwise data with human labels (SPEC or items).
        recorded: "pandalm": the recorded GPT-3.5 and PandaLM-7B verdicts shipped with
            `data="pandalm:PATH"`.
        llm: SPEC of the model playing the G modules.
        limit: discovery items (consensus disagreements) to extract features from.
        holdout: share of the disagreements held out for validation (0 < h < 1).
        holdout_limit: held-out items to validate on.
        clusters, factors, iterations, tau, rho, rep_fallback: M, K, T, the novelty
            threshold, the target covered share, representatives as fallback candidates.
        min_agreement: keep items whose majority label has this annotator share.
        embedder: sentence embedder (`encode(texts) -> array`, `name`); default MiniLM
            (the `hubj` extra).
        seed, min_valid, max_failed, cache, concurrency, timeout, retry, progress,
        raise_on_failure: as in `evaluate` (the outcome's unit is a G-module answer).

    Returns:
        The discover `Result`.
    """
    kw = dict(locals())
    return run_sync(lambda: adiscover(**kw))


# ---- quantify ----------------------------------------------------------------------------

async def aquantify(
    judges: Specs = "local",
    data: Data = "pandalm:../shared/data/pandalm_testset",
    *,
    factors: str | Sequence[str] = "verbosity,authority",
    factors_from: str | os.PathLike[str] | Result | Mapping[str, Any] | None = None,
    generator: str | None = None,
    checker: str | None = None,
    levels: Sequence[int] = (1, 2, 3, 4, 5),
    pool: int = 60,
    limit: int | None = 12,
    n_cal: int | None = None,
    on_violation: str = "drop",
    inject: str = "rewrite",
    max_words: int | None = None,
    min_agreement: float = 0.5,
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """The async twin of `quantify` (same arguments).

    Args:
        session: run in this `Session` (see `aevaluate`).

    Returns:
        The quantify `Result`.
    """
    from judgeaudit.hubj.llmjson import JSONStats
    from judgeaudit.hubj.run import live_winners, run_quantify
    from judgeaudit.hubj.validate import criteria_for_factors

    opts = _opts(cache, concurrency, timeout, retry, seed, progress)
    _outcome_opts(min_valid, max_failed)
    for name, v in (("pool", pool), ("limit", limit), ("n_cal", n_cal),
                    ("max_words", max_words)):
        _at_least(name, v)
    lv = [int(x) for x in levels]
    if not lv or any(not 1 <= x <= 5 for x in lv):
        raise ValueError(f"levels {list(levels)!r}: expected numbers 1-5")
    if on_violation not in ("drop", "flag"):
        raise ValueError(f"on_violation: expected 'drop' or 'flag', got {on_violation!r}")
    if inject not in ("rewrite", "append"):
        raise ValueError(f"inject: expected 'rewrite' or 'append', got {inject!r}")
    fs, crit = _factors(factors, factors_from)
    started = _now()
    specs = _specs(judges)
    if not specs:
        raise ValueError("judges: give at least one judge SPEC")
    items, spec = _human_items(data, pool, min_agreement)
    missing = [f for f in fs if f.name not in crit]
    n_rw = (limit or len(items)) * len(fs) * len(lv)

    async def body(s: Session) -> dict[str, Any]:
        bundles = {s.judge(x).public_spec: s.judge(x) for x in specs}
        gen = s.judge(generator or specs[0])
        chk = s.judge(checker) if checker else None
        if missing:
            got, _src = await criteria_for_factors(gen.client, missing, JSONStats())
            crit.update(got)
        tr = s.tracker("quantify",
                       2 * len(items) * len(bundles) + n_rw * (2 + 2 * len(bundles)))
        agreement = await live_winners(bundles, items, on_done=tr.advance)
        res = await run_quantify(bundles, gen.client, items, fs, crit,
                                 checker=chk.client if chk else None, levels=lv, n_cal=n_cal,
                                 seed=seed, on_violation=on_violation, limit=limit,
                                 agreement=agreement, inject=inject, max_words=max_words,
                                 on_done=tr.advance, min_agreement=min_agreement,
                                 min_valid=min_valid, max_failed=max_failed)
        res.update(data=spec, generator=gen.public_spec,
                   checker=chk.public_spec if chk else gen.public_spec)
        res.setdefault("started", started)
        _stamp(res)
        return res

    return await _execute("quantify", body, session=session, opts=opts,
                          raise_on_failure=raise_on_failure,
                          judge=", ".join(public_spec(x) for x in specs), data=spec,
                          n_planned=lambda: n_rw * len(specs), min_valid=min_valid,
                          max_failed=max_failed)


def quantify(
    judges: Specs = "local",
    data: Data = "pandalm:../shared/data/pandalm_testset",
    *,
    factors: str | Sequence[str] = "verbosity,authority",
    factors_from: str | os.PathLike[str] | Result | Mapping[str, Any] | None = None,
    generator: str | None = None,
    checker: str | None = None,
    levels: Sequence[int] = (1, 2, 3, 4, 5),
    pool: int = 60,
    limit: int | None = 12,
    n_cal: int | None = None,
    on_violation: str = "drop",
    inject: str = "rewrite",
    max_words: int | None = None,
    min_agreement: float = 0.5,
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
) -> Result:
    """How strongly each factor moves each judge (`judgeaudit quantify`, HUB-J Algorithm 2):
    rewrite the rejected response of agreement items at levels 1-5, count flips, pick l* on
    calibration items and report the susceptibility on test items.

    Args:
        judges: judge SPECs to quantify (the same rewrites for all).
        data: pairwise data with human labels (SPEC or items).
        factors: factor names (shipped: verbosity, beauty, authority, bandwagon, sentiment,
            length, complexity, ...), or "found" with `factors_from`.
        factors_from: a discover result (path, `Result` or dict): its factors and criteria.
        generator: SPEC of the rewriter G_inj (default: the first judge).
        checker: SPEC of the answer-change checker G_check (default: the generator).
        levels: levels to inject (1-5).
        pool: labelled items judged when looking for agreement items.
        limit: agreement items to rewrite.
        n_cal: calibration items (default: 1/6 of the items).
        on_violation: "drop" rewrites the checker says change the answer, or "flag" them.
        inject: "rewrite" (the whole response, as in the paper) or "append" (sentences to
            add; for small generators).
        max_words: only items whose rejected response has at most this many words.
        min_agreement: keep items whose majority label has this annotator share.
        seed, min_valid, max_failed, cache, concurrency, timeout, retry, progress,
        raise_on_failure: as in `evaluate` (the outcome's unit is a verdict on a rewrite).

    Returns:
        The quantify `Result`.
    """
    kw = dict(locals())
    return run_sync(lambda: aquantify(**kw))


# ---- mitigate ----------------------------------------------------------------------------

async def amitigate(
    judges: Specs = None,
    data: Data = "pandalm:../shared/data/pandalm_testset",
    *,
    recorded: str | None = None,
    factor: str = "verbosity",
    factors_from: str | os.PathLike[str] | Result | Mapping[str, Any] | None = None,
    scorer: str = "local",
    candidate: str = "rejected",
    limit: int | None = 60,
    estimator: str = "marginal",
    apply: str | os.PathLike[str] | Result | Mapping[str, Any] | None = None,
    min_agreement: float = 0.5,
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """The async twin of `mitigate` (same arguments).

    Args:
        session: run in this `Session` (see `aevaluate`).

    Returns:
        The mitigate (or mitigate-apply) `Result`.
    """
    from judgeaudit.hubj.llmjson import JSONStats
    from judgeaudit.hubj.run import run_apply, run_mitigate
    from judgeaudit.hubj.validate import criteria_for_factors

    opts = _opts(cache, concurrency, timeout, retry, seed, progress)
    _outcome_opts(min_valid, max_failed)
    _at_least("limit", limit)
    if estimator not in ("marginal", "two_stage"):
        raise ValueError(f"estimator: expected 'marginal' or 'two_stage', got {estimator!r}")
    if candidate not in ("rejected", "response_1", "response_2"):
        raise ValueError(f"candidate: expected 'rejected', 'response_1' or 'response_2', got "
                         f"{candidate!r}")
    started = _now()
    items, spec = _human_items(data, limit, min_agreement)
    saved = _read_doc(apply, "apply") if apply is not None else None
    fs, crit = ([], {}) if saved is not None else _factors(factor, factors_from)
    if saved is None and len(fs) != 1:
        raise ValueError("factor: give exactly one factor")
    folder = _recorded_folder(recorded, data)
    specs = _specs(judges)

    async def body(s: Session) -> dict[str, Any]:
        sc = s.judge(scorer)
        for x in specs:  # every spec checked before any call
            s.judge(x)
        winners = await _winners(s, specs, recorded, folder, items)
        clients = [b.client for b in s.judges.values()]
        if saved is not None:
            if len(winners) != 1:
                raise ValueError("apply corrects one judge: give exactly one of judges / "
                                 "recorded")
            (name, w), = winners.items()
            res = await run_apply(saved, name, items, w, sc.client, judge_clients=clients,
                                  min_valid=min_valid, max_failed=max_failed)
            res.update(data=spec, scorer=sc.public_spec)
        else:
            f = fs[0]
            if f.name not in crit:
                got, _src = await criteria_for_factors(sc.client, [f], JSONStats())
                crit.update(got)
            tr = s.tracker("G_score", len(items))
            res = await run_mitigate(items, winners, sc.client, f, crit[f.name],
                                     candidate=candidate, estimator=estimator,
                                     on_done=tr.advance, judge_clients=clients,
                                     min_valid=min_valid, max_failed=max_failed)
            res.update(data=spec, scorer=sc.public_spec)
        res.setdefault("started", started)
        _stamp(res)
        return res

    return await _execute("mitigate" if saved is None else "mitigate-apply", body,
                          session=session, opts=opts, raise_on_failure=raise_on_failure,
                          judge=", ".join(public_spec(x) for x in specs) or str(recorded),
                          data=spec, n_planned=lambda: len(items) * max(1, len(specs)),
                          min_valid=min_valid, max_failed=max_failed)


def mitigate(
    judges: Specs = None,
    data: Data = "pandalm:../shared/data/pandalm_testset",
    *,
    recorded: str | None = None,
    factor: str = "verbosity",
    factors_from: str | os.PathLike[str] | Result | Mapping[str, Any] | None = None,
    scorer: str = "local",
    candidate: str = "rejected",
    limit: int | None = 60,
    estimator: str = "marginal",
    apply: str | os.PathLike[str] | Result | Mapping[str, Any] | None = None,
    min_agreement: float = 0.5,
    seed: int = 0,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    cache: CacheArg = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
) -> Result:
    """Bias-controlled win rates (`judgeaudit mitigate`, HUB-J Algorithm 3): a two-stage
    logistic model over judges and queries separates each judge's wins due to the factor;
    the length-controlled win rate is reported beside it. With `apply`, correct new verdicts
    of one judge with a saved fit instead.

    Args:
        judges: live judge SPECs (with or instead of `recorded`).
        data: pairwise data with human labels (SPEC or items).
        recorded: "pandalm": the recorded judges shipped with `data="pandalm:PATH"`.
        factor: the factor to control for (shipped, or found with `factors_from`).
        factors_from: a discover result (path, `Result` or dict).
        scorer: SPEC of the G_score model.
        candidate: whose win rate: "rejected" (the human-rejected response), "response_1"
            or "response_2".
        limit: use the first N labelled items.
        estimator: "marginal" (default) or "two_stage" (the paper's plug-in fit).
        apply: an earlier mitigate result (path, `Result` or dict) to correct one judge's
            verdicts with (the result's command is then "mitigate-apply", which has no HTML
            report).
        min_agreement: keep items whose majority label has this annotator share.
        seed, min_valid, max_failed, cache, concurrency, timeout, retry, progress,
        raise_on_failure: as in `evaluate` (the outcome's unit is a judge verdict on a
            query with factor scores).

    Returns:
        The mitigate `Result`.
    """
    kw = dict(locals())
    return run_sync(lambda: amitigate(**kw))


__all__ = [
    "aaudit", "adiscover", "aevaluate", "amitigate", "aquantify", "arank", "arank_eval",
    "ascoring_bias", "audit", "discover", "evaluate", "load_data", "mitigate", "quantify",
    "rank", "rank_eval", "run_sync", "scoring_bias",
]
