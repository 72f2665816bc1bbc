"""The Python API: every command as a function returning a `Result`, sync and async.

Each function builds the command's settings (`judgeaudit.config`) and runs the code the CLI
runs (`judgeaudit.commands.prepare_<command>`, then its body in a `Session`) and returns
the same results document, wrapped in a `Result`::

    import judgeaudit
    res = judgeaudit.audit("sim?position=1&seed=0", "builtin:facts", n=30)
    res.report("out/report.html"); print(res.summary())

The sync functions work in plain Python and inside a running event loop (Jupyter): there the
command runs on a fresh event loop in a worker thread and the call waits for it. The `a`
twins (`aevaluate`, `aaudit`, ...) are coroutines for async code; they also take a `session`
to share a cache, judges and call totals between commands. (The sync functions' type hints
are their twins', `session` included: type checkers accept it there, the call refuses it.)

A run that judged too little (every call failed, no valid verdict) is not an exception: its
`Result` has `ok` False and says why in `reason` (the CLI's exit 3); pass
`raise_on_failure=True` to get a `RunFailed` instead. Bad input (an unknown probe, data that
cannot be loaded, a judge spec that cannot be made, out-of-range options) raises ValueError
before any call is made.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from judgeaudit.commands import Run, load_data, unused_generation
from judgeaudit.data.spec import split_specs
from judgeaudit.llm import Cache, RetryPolicy
from judgeaudit.llm.client import MAX_RETRIES
from judgeaudit.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID
from judgeaudit.result import Result
from judgeaudit.session import ProgressFn, Session

if TYPE_CHECKING:
    from judgeaudit.config import CommandConfig, ScoringBiasConfig
    from judgeaudit.hubj.embed import Embedder

T = TypeVar("T")
C = TypeVar("C", bound="CommandConfig")
P = ParamSpec("P")
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
        running = True
    except RuntimeError:
        running = False
    if not running:  # outside the except block: its RuntimeError ("no running event loop")
        # was chained to every error the command raised
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


def _sync_twin(afn: Callable[P, Awaitable[T]]) -> Callable[P, T]:
    """The sync form of the command coroutine ``afn`` (``aaudit`` -> ``audit``): the same
    arguments and docstring, run through `run_sync`. Written once here rather than as a second
    copy of every signature. It takes no ``session``: a session's clients belong to the event
    loop that made them, and the sync form runs on a loop of its own. Its runtime signature
    (`inspect.signature`, `help`) leaves ``session`` out, but its type hints are ``afn``'s
    (a ParamSpec cannot drop a keyword argument), so type checkers accept ``session=``; the
    call raises TypeError for it, before anything runs."""
    name = afn.__name__.removeprefix("a")
    sig = inspect.signature(afn)

    @functools.wraps(afn)
    def fn(*args: P.args, **kwargs: P.kwargs) -> T:
        if "session" in kwargs:
            raise TypeError(f"{name}() takes no session: await {afn.__name__}(..., "
                            "session=...) from async code")
        _bind(name, fn.__signature__, args, kwargs)  # type: ignore[attr-defined]
        return run_sync(lambda: afn(*args, **kwargs))

    fn.__name__ = fn.__qualname__ = name
    del fn.__wrapped__  # inspect.signature reads __signature__, not the coroutine's
    fn.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[p for p in sig.parameters.values() if p.name != "session"])
    return fn


# CLI options the functions do not take, with what the API does instead: `out=` was met with
# "did you mean 'timeout'?".
_RESULT = "the function returns a Result"
CLI_ONLY = {
    "out": f"out is the CLI's --out; {_RESULT}: write it with res.to_json(DIR) "
           "(DIR/results.json) or res.report(PATH) (the HTML report)",
    "fail_on": f"fail_on is the CLI's --fail-on (an exit code); {_RESULT}: gate on it in "
               "the script (res.ok, res.summary())",
    "json": f"json is the CLI's --json; {_RESULT}: res.to_dict(), res.summary(), "
            "res.to_json()",
    "config": "config is the CLI's --config FILE; give the settings as arguments",
    "plan_only": "plan_only is the CLI's: plan the calls with `judgeaudit --plan-only "
                 "PLAN.jsonl COMMAND ...`, ingest the answers, then call the function with the "
                 "same cache (it reads them there)",
    "verbose": "verbose is the CLI's -v; configure logging instead "
               "(logging.basicConfig(level=logging.INFO))",
}


def _bind(name: str, sig: inspect.Signature, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> None:
    """A call that does not fit the signature: TypeError naming the function the user called
    (not its async twin) and, for a misspelt argument, the closest one."""
    import difflib

    try:
        sig.bind(*args, **kwargs)
    except TypeError as exc:
        hint = ""
        unknown = [k for k in kwargs if k not in sig.parameters]
        if unknown and unknown[0] in CLI_ONLY:
            hint = f"; {CLI_ONLY[unknown[0]]}"
        elif unknown:
            close = difflib.get_close_matches(unknown[0], list(sig.parameters), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else (
                f"; it takes {', '.join(sig.parameters)}")
        keyword = [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        if "positional" in str(exc) and keyword:
            hint += f" (give the options by name: {keyword[0]}=..., ...)"
        raise TypeError(f"{name}(): {exc}{hint}") from None


# ---- input -------------------------------------------------------------------------------

def _strings(x: Any, what: str) -> list[str]:
    """A list argument as a list of strings; anything else is a ValueError naming the
    argument (it was an AttributeError or TypeError from deep inside)."""
    if isinstance(x, str | bytes | Mapping) or not isinstance(x, Iterable):
        raise ValueError(f"{what}: expected a string or a list of strings, got {_cut(x)}")
    out = list(x)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise ValueError(f"{what}[{i}]: expected a string, got {_cut(v)}")
    return out


def _specs(x: Specs, what: str) -> list[str]:
    if x is None:
        return []
    if isinstance(x, str):
        return split_specs(x)
    return [s.strip() for s in _strings(x, what) if s.strip()]


def _names(x: str | Sequence[str] | None, what: str) -> list[str] | None:
    if x is None:
        return None
    parts = x.split(",") if isinstance(x, str) else _strings(x, what)
    return [p.strip() for p in parts if p.strip()]


def _selection(x: str | Sequence[str] | None, what: str, default: str) -> list[str]:
    """Names chosen (`_names`); none (None) is the default, an explicitly empty selection
    ([] or "") a ValueError: it ran the default silently."""
    names = _names(x, what)
    if names == []:
        raise ValueError(f"{what}: an empty selection ({_cut(x)}); give names, or leave {what} "
                         f"out for {default}")
    return names or []


CUT = 200


def _cut(value: Any) -> str:
    """A value's repr for an error message, cut to its first `CUT` characters: a list of
    items given where a string was expected was repeated whole (a 23,941-character message)."""
    r = repr(value)
    return r if len(r) <= CUT else r[:CUT] + f"... ({len(r)} characters)"


def _doc_arg(x: Any, what: str, wanted: str = "a results.json path, a Result or a dict"
             ) -> Any:
    """A results document argument (factors_from, apply) or references as given; another
    type is a ValueError naming the argument (it was a TypeError from opening it)."""
    if x is None or isinstance(x, str | os.PathLike | Result | Mapping):
        return x
    raise ValueError(f"{what}: expected {wanted}, got {_cut(x)}")


def _loose_names(x: Any, what: str) -> Any:
    """rank's names as given (a string the command parses, None) or a list of strings."""
    return x if x is None or isinstance(x, str) else _strings(x, what)


def _trusted(x: Any) -> Any:
    """rank's trusted pairs: a file (a path) or (better, worse) pairs of item ids."""
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, os.PathLike):
        return Path(x)
    if isinstance(x, bytes | Mapping) or not isinstance(x, Iterable):
        raise ValueError(f"trusted: expected a file or a list of (better, worse) pairs of "
                         f"item ids, got {_cut(x)}")
    pairs = list(x)
    for i, v in enumerate(pairs):
        if (isinstance(v, str | bytes) or not isinstance(v, Sequence) or len(v) != 2
                or not all(isinstance(s, str) for s in v)):
            raise ValueError(f"trusted[{i}]: expected a (better, worse) pair of item ids, "
                             f"got {_cut(v)}")
    return [tuple(v) for v in pairs]


def _seeds(x: Any) -> Any:
    """rank-eval's seeds: a count, "0-9" / "0,4,9", or a list the command checks."""
    if isinstance(x, int | str) or (isinstance(x, Iterable) and not isinstance(
            x, bytes | Mapping)):
        return x
    raise ValueError(f"seeds: expected a count, a range or a list of seeds, got {_cut(x)}")


def _levels(x: Any) -> str:
    """quantify's levels as the setting's "1,3,5" (a list of integers or that string)."""
    if isinstance(x, str):
        return x
    if isinstance(x, Mapping) or not isinstance(x, Iterable):
        raise ValueError(f"levels: expected a list of levels 1-5, got {_cut(x)}")
    out = list(x)
    for i, v in enumerate(out):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"levels[{i}]: expected an integer 1-5, got {_cut(v)}")
    return ",".join(str(v) for v in out)


# Upper bounds far above any real use: a huge integer was a MemoryError (10**12 Monte-Carlo
# draws or seeds allocated at once), a hang (10**12 repeats of every scoring) or an
# OverflowError in the retry backoff after the calls had been made.
MAX_SAMPLES = 100_000
MAX_SEEDS = 10_000
MAX_REPEATS = 100


def _at_most(name: str, value: Any, hi: int, what: str) -> None:
    """ValueError when the integer `value` is above `hi` (other types are `_check`'s)."""
    if isinstance(value, int) and not isinstance(value, bool) and value > hi:
        raise ValueError(f"{name}: expected at most {hi} {what}, got {value}")


def _seed_count(x: Any) -> None:
    """rank-eval's seeds, as a count (10) or a range ("0-9"), hold at most MAX_SEEDS seeds
    (a list is as long as given; what does not parse is the command's to refuse)."""
    n: int | None = None
    if isinstance(x, int) and not isinstance(x, bool):
        n = x
    elif isinstance(x, str) and "," not in x:
        t = x.strip()
        try:
            if "-" in t[1:]:
                a, b = t.split("-", 1)
                n = int(b) - int(a) + 1
            else:
                n = int(t)
        except ValueError:
            return
    _at_most("seeds", n, MAX_SEEDS, "seeds")


def _data(data: Any) -> Any:
    """Data as given, a list of items checked as the file loaders check their records: a dict
    with an integer id takes its decimal text (1 -> "1", as in a JSONL file); a repeated id
    is refused saying that 1 and "1" are the same id (a gold score that is no finite number
    is refused where every item is built: commands._as_items). What is no list is the
    command's to refuse."""
    from judgeaudit.data.loaders._common import as_id, same_id_note
    from judgeaudit.data.schema import PairwiseItem, PointwiseItem

    if data is None:  # else the command falls back to the config's "" (a path hint)
        raise ValueError("data: expected a data SPEC or a list of items, got None")
    if isinstance(data, str | bytes | Mapping) or not isinstance(data, Sequence):
        return data
    out: list[Any] = []
    seen: dict[str, int] = {}
    for i, x in enumerate(data):
        if isinstance(x, Mapping) and "id" in x:
            x = {**x, "id": as_id(x["id"])}
        fields = (x if isinstance(x, Mapping) else
                  {k: getattr(x, k, None) for k in ("id", "score", "quality")}
                  if isinstance(x, PairwiseItem | PointwiseItem) else {})
        item_id = fields.get("id")
        if isinstance(item_id, str):
            if item_id in seen:
                raise ValueError(f"data[{i}]: field 'id': duplicate item id {item_id!r} (first "
                                 f"at data[{seen[item_id]}]); ids must be unique"
                                 f"{same_id_note(item_id)}")
            seen[item_id] = i
        out.append(x)
    return out


def _check(cls: type[CommandConfig], /, **values: Any) -> None:
    """Hold each argument to its field in `cls` (type, range, choices: `config.field_error`,
    the check the CLI's options and config files get); ValueError naming the argument, before
    any call. Fields the command checks itself (`cls.checked_by_command`) are left to it."""
    from judgeaudit.config import field_error

    for name, v in values.items():
        if name in cls.checked_by_command:
            continue
        wanted = field_error(cls, name, v)
        if wanted is not None:
            raise ValueError(f"{name}: expected {wanted}, got {_cut(v)}")


def _config(cls: type[C], loose: Mapping[str, Any] | None = None, /, **values: Any) -> C:
    """The command's Config from the function's arguments, `values` checked (`_check`);
    `loose`: arguments the API takes in more forms than the field (a list of items, of
    pairs, of names), which the command checks itself."""
    _check(cls, **values)
    return cls.model_construct(**values, **(loose or {}))


# ---- one command in a session ------------------------------------------------------------

async def _execute(run: Run, *, session: Session | None, opts: dict[str, Any],
                   raise_on_failure: bool) -> Result:
    """Run a prepared command in `session` (or in a session of its own, made from `opts` and
    closed at the end) and wrap its document. A call that failed fatally (a revoked key, a
    bad request) aborts the pipeline without a document: the result is then a failed run
    whose reason quotes the error."""
    from judgeaudit.llm import CallFailed

    if not isinstance(raise_on_failure, bool):  # [1] or "no" is truthy: it raised
        raise ValueError(f"raise_on_failure: expected True or False, got {_cut(raise_on_failure)}")
    if session is not None and not isinstance(session, Session):  # an AttributeError later
        raise ValueError(f"session: expected a judgeaudit.Session, got {_cut(session)}")
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
                doc = await run.document(sess)
            except CallFailed as exc:
                doc = run.failed_document(sess, exc)
    finally:
        if session is None:
            await sess.aclose()
    res = Result.from_document(doc)
    if raise_on_failure:
        res.raise_for_status()
    return res


def _opts(cache: Any, concurrency: int | None, timeout: float | None, retry: Any,
          seed: int, progress: ProgressFn | None, max_cost: float | None) -> dict[str, Any]:
    from judgeaudit.config import EvaluateConfig

    _check(EvaluateConfig, concurrency=concurrency, timeout=timeout, max_cost=max_cost)
    _at_most("retry", retry, MAX_RETRIES, "retries per call")
    if progress is not None and not callable(progress):  # a TypeError at the first call
        raise ValueError(f"progress: expected a callable(Progress), got {_cut(progress)}")
    return {"cache": cache, "concurrency": concurrency, "timeout": timeout, "retry": retry,
            "seed": seed, "progress": progress, "max_cost": max_cost}


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
    max_cost: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
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
        max_cost: spend cap in USD at the judges' rates (list, batch or the spec's prices):
            once this command's calls have cost this much, the rest are not sent
            (`judgeaudit.llm.SpendCap`). A judge whose price is not known needs price_in and
            price_out in its spec.
        retry: a `judgeaudit.llm.RetryPolicy` or the most retries per call (at most 20).
        progress: called with a `judgeaudit.Progress` after every finished call.
        raise_on_failure: raise `judgeaudit.RunFailed` when the run failed instead of
            returning a Result with `ok` False.
        session: (the `a` form only) run in this `Session`: its cache and judge settings
            apply (give cache, concurrency, timeout, retry, progress and max_cost to it
            instead). Default: a session of the command's own, closed when it ends. The
            sync form's type hints are the `a` form's, so type checkers accept `session`
            there too; at run time the sync form refuses it (TypeError).

    Returns:
        The evaluate `Result` (`res["accuracy"]`, `res.summary()`, `res.to_frame()`).
    """
    from judgeaudit.commands import prepare_evaluate
    from judgeaudit.config import EvaluateConfig

    opts = _opts(cache, concurrency, timeout, retry, seed, progress, max_cost)
    data = _data(data)
    cfg = _config(
        EvaluateConfig, {"data": data if isinstance(data, str) else ""}, judge=judge,
        limit=limit, sample=sample, seed=seed, pair_rule=pair_rule, ties=ties, by=by,
        group_by=group_by, system_field=system_field, min_valid=min_valid,
        max_failed=max_failed)
    return await _execute(prepare_evaluate(cfg, data=data), session=session, opts=opts,
                          raise_on_failure=raise_on_failure)


evaluate = _sync_twin(aevaluate)


# ---- audit -------------------------------------------------------------------------------

async def aaudit(
    judge: str,
    data: Data = "builtin:facts",
    *,
    probes: str | Sequence[str] | None = None,
    n: int | None = None,
    sample: int | None = None,
    by: str | None = None,
    full: bool = False,
    panel: Specs = (),
    alpha: float = 0.05,
    seed: int = 0,
    note: str | None = None,
    adaptive: bool = False,
    max_n: int = 500,
    round_size: int = 20,
    max_calls: int | None = None,
    max_cost: float | None = None,
    length_control: bool = False,
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
        sample: audit N pairs drawn at random (seeded by `seed`, kept in data order); each
            probe uses those it can. Not with `n`.
        by: break each probe's effect down by an item field or metadata key (e.g. "source").
        full: every probe, every item.
        panel: extra judge SPECs for the judge-panel agreement probe.
        alpha: false discovery rate for "biased" (0 < alpha < 1).
        seed: seed of the probes, the judges' presentation order, the sample and the
            adaptive item order; not a simulated judge's draws (its spec's seed=).
        note: a note kept in the results (`res["notes"]`) and shown in the report.
        adaptive: draw items in rounds and stop each probe once its anytime-valid
            confidence sequence and e-value decide (`audit --adaptive`); not with `n` or
            `panel`.
        max_n: adaptive: most items per probe (a probe still open then is underpowered).
        round_size: adaptive: items added to each open probe per round.
        max_calls: adaptive: stop before a round that would exceed this many judge calls
            (by the previous round's), and send no more than this many (cached answers are
            free).
        max_cost: spend cap in USD, as in `evaluate` (call by call); adaptive, also: stop
            before a round that would pass it (by the previous round's cost).
        length_control: the probes that add words to a response also judge it padded by
            as many neutral words instead (`rates["length_control"]`: the cue's effect
            beyond its length), one more verdict per item of each.
        min_valid: fewest items with a valid unperturbed verdict for the run to count.
        max_failed: largest share of failed calls (0-1) before the run fails.
        cache, concurrency, timeout, max_cost, retry, progress, raise_on_failure: as in
            `evaluate`.
        session: (the `a` form only) run in this `Session`: its cache and judge settings
            apply (give cache, concurrency, timeout, retry, progress and max_cost to it
            instead). Default: a session of the command's own, closed when it ends. The
            sync form's type hints are the `a` form's, so type checkers accept `session`
            there too; at run time the sync form refuses it (TypeError).

    The CLI's `--fail-on` gate (exit 1) has no argument here: gate on the result instead
    (`res.summary()["biased"]`, `res.summary()["flagged"]`).

    Returns:
        The audit `Result` (`res.to_frame()`: one row per probe).
    """
    from judgeaudit.commands import prepare_audit
    from judgeaudit.config import AuditConfig

    opts = _opts(cache, concurrency, timeout, retry, seed, progress, max_cost)
    data = _data(data)
    cfg = _config(
        AuditConfig, {"data": data if isinstance(data, str) else ""}, judge=judge,
        probes=",".join(_selection(probes, "probes", "the default set (full=True: every "
                                   "probe)")) or None, n=n, sample=sample, by=by, full=full,
        alpha=alpha, seed=seed, note=note,
        adaptive=adaptive, max_n=max_n, round_size=round_size, max_calls=max_calls,
        max_cost=max_cost, length_control=length_control, min_valid=min_valid,
        max_failed=max_failed)
    run = prepare_audit(cfg, data=data, panel=_specs(panel, "panel"))
    return await _execute(run, session=session, opts=opts, raise_on_failure=raise_on_failure)


audit = _sync_twin(aaudit)


# ---- scoring-bias ------------------------------------------------------------------------

def _references_out(cfg: ScoringBiasConfig, out: Any) -> None:
    """references_out a file path (an int or a list was a TypeError, a directory an
    IsADirectoryError, after the generation's calls), given only with generation like the
    generator and reviewer (without it nothing was written where it said)."""
    unused_generation(cfg, False, *(["references_out"] if out is not None else []))
    if out is not None:
        if not isinstance(out, str | os.PathLike) or isinstance(out, bytes):
            raise ValueError(f"references_out: expected a file path (str or os.PathLike), "
                             f"got {_cut(out)}")
        if Path(out).expanduser().is_dir():
            raise ValueError(f"references_out: {str(out)!r} is a directory; expected a file "
                             "path, e.g. DIR/references.json")


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
    max_cost: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
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
        repeats: baseline scorings per item (>= 2 gives the repeat noise; at most 100). A
            deterministic judge (local: logits) is scored once whatever this says; its repeat
            noise is 0 by construction. A paid judge's repeats are announced with their cost.
        references: Ref-k answers: a references.json path or {item_id: {k: text}}; default:
            the data's own (builtin:graded's level-k answers, else Ref-5 = the reference).
        generate_references: write Ref-1..4 by generation and review first.
        generator, reviewer: SPECs of the generating and reviewing models (default: judge);
            only with generate_references=True (given without it: ValueError).
        ref_limit, ref_attempts, ref_tolerance, ref_max_tokens, ref_review: as the CLI's
            --ref-* options.
        references_out: file path to write the generated references.json to (default: not
            kept on disk; the summary is in the result); only with
            generate_references=True (given without it: ValueError).
        template: scoring template name or .txt path.
        seed, min_valid, max_failed, cache, concurrency, timeout, max_cost, retry, progress,
        raise_on_failure: as in `evaluate` (the outcome's unit is a score).
        session: (the `a` form only) run in this `Session`: its cache and judge settings
            apply (give cache, concurrency, timeout, retry, progress and max_cost to it
            instead). Default: a session of the command's own, closed when it ends. The
            sync form's type hints are the `a` form's, so type checkers accept `session`
            there too; at run time the sync form refuses it (TypeError).

    Returns:
        The scoring-bias `Result`.
    """
    from judgeaudit.commands import prepare_scoring_bias
    from judgeaudit.config import ScoringBiasConfig

    opts = _opts(cache, concurrency, timeout, retry, seed, progress, max_cost)
    data = _data(data)
    _at_most("repeats", repeats, MAX_REPEATS, "baseline scorings per item")
    _doc_arg(references, "references", "a references.json path or {item_id: {k: text}}")
    by_file = references is not None and not isinstance(references, Mapping)
    cfg = _config(
        ScoringBiasConfig, {"data": data if isinstance(data, str) else "",
                            "references": references if by_file else None},
        judge=judge,
        perturbations=",".join(_selection(perturbations, "perturbations", "all")) or None,
        ids=[ids] if isinstance(ids, str) else _strings(ids, "ids"), limit=limit,
        repeats=repeats,
        generate_references=generate_references, generator=generator, reviewer=reviewer,
        ref_limit=ref_limit, ref_attempts=ref_attempts, ref_tolerance=ref_tolerance,
        ref_max_tokens=ref_max_tokens, ref_review=ref_review, template=template, seed=seed,
        min_valid=min_valid, max_failed=max_failed)
    _references_out(cfg, references_out)
    run = prepare_scoring_bias(
        cfg, data=data, references=None if by_file else references,  # type: ignore[arg-type]
        references_out=references_out)
    return await _execute(run, session=session, opts=opts, raise_on_failure=raise_on_failure)


scoring_bias = _sync_twin(ascoring_bias)


# ---- rank --------------------------------------------------------------------------------

async def arank(
    judge: str,
    items: str | os.PathLike[str] | Sequence[Mapping[str, Any]] = "builtin:controlled",
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
    max_cost: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
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
            "jsonl:PATH" (one {"id", "prompt", "response", "quality"?, ...} per line), or
            a list of such dicts.
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
        samples: Monte-Carlo draws for top-k membership (at most 100000).
        min_valid: fewest comparisons with a valid verdict for the run to count.
        max_failed: largest share of failed calls (0-1) before the run fails.
        cache, concurrency, timeout, max_cost, retry, progress, raise_on_failure: as in
            `evaluate`.
        session: (the `a` form only) run in this `Session`: its cache and judge settings
            apply (give cache, concurrency, timeout, retry, progress and max_cost to it
            instead). Default: a session of the command's own, closed when it ends. The
            sync form's type hints are the `a` form's, so type checkers accept `session`
            there too; at run time the sync form refuses it (TypeError).

    Returns:
        The rank `Result` (`res["ranking"]`, `res["models"]["bias_aware"]["c"]`,
        `res.summary()`, `res.report(path)`).
    """
    from judgeaudit.commands import prepare_rank
    from judgeaudit.config import RankConfig

    opts = _opts(cache, concurrency, timeout, retry, seed, progress, max_cost)
    _at_most("samples", samples, MAX_SAMPLES, "Monte-Carlo draws")
    if not isinstance(rule, str):  # the command checks names only: a TypeError from there
        from judgeaudit.config import field_error

        raise ValueError(f"rule: expected {field_error(RankConfig, 'rule', rule)}, got "
                         f"{_cut(rule)}")
    loose: dict[str, Any] = {"covariates": _loose_names(covariates, "covariates"), "lam": lam,
                             "trusted": _trusted(trusted)}
    if not isinstance(items, str | os.PathLike):  # a list of item dicts, as the README says
        loose["items"] = _pool_records(items)
    else:
        loose["items"] = os.fspath(items)
    _check(RankConfig, items=loose["items"])
    cfg = _config(
        RankConfig, loose,
        judge=judge, k=k, budget=budget, rule=rule, model=model, seed=seed, tau=tau,
        hierarchical=hierarchical, refit_every=refit_every, samples=samples,
        min_valid=min_valid, max_failed=max_failed)
    return await _execute(prepare_rank(cfg), session=session, opts=opts,
                          raise_on_failure=raise_on_failure)


rank = _sync_twin(arank)


def _pool_records(items: Any) -> Any:
    """rank's items given as a list of dicts ({"id", "prompt", "response", "quality"?, ...})
    as `rank.pool.PoolRecords` (checked when the pool is built); another type is a
    ValueError naming what is taken."""
    from judgeaudit.rank.pool import PoolRecords

    if isinstance(items, bytes | Mapping) or not isinstance(items, Iterable):
        raise ValueError(f"items: expected a pool SPEC or a list of item dicts, got "
                         f"{_cut(items)}")
    return PoolRecords(items)


async def arank_eval(
    oracle: str = "sim",
    items: str | os.PathLike[str] | Sequence[Mapping[str, Any]] = "builtin:controlled",
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
    max_cost: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
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
        items: pool SPEC with true quality ("jsonl:PATH", a path, ...) or a list of item
            dicts with a "quality" each, as in `rank`; "builtin:controlled" without seed=
            draws a new pool per seed.
        k: top-k size (default: the pool's, else 5).
        budgets: budgets to report recall at ("60,120" or a list).
        rules: acquisition rules to compare ("topk,random" or a list).
        seeds: a count (10: seeds 0-9), "0-9", "0,4,9" or a list of seeds (a count or
            range of at most 10000).
        covariates, lam, tau, hierarchical, refit_every, samples: as in `rank`.
        min_valid: fewest valid verdicts in the matrices for the run to count.
        max_failed: largest share of failed calls (0-1) before the run fails.
        cache, concurrency, timeout, max_cost, retry, progress, raise_on_failure: as in
            `evaluate`.
        session: (the `a` form only) run in this `Session`: its cache and judge settings
            apply (give cache, concurrency, timeout, retry, progress and max_cost to it
            instead). Default: a session of the command's own, closed when it ends. The
            sync form's type hints are the `a` form's, so type checkers accept `session`
            there too; at run time the sync form refuses it (TypeError).

    Returns:
        The rank-eval `Result` (`res["recall"]`, `res["tests"]`, `res.report(path)`).
    """
    from judgeaudit.commands import prepare_rank_eval
    from judgeaudit.config import RankEvalConfig

    opts = _opts(cache, concurrency, timeout, retry, 0, progress, max_cost)
    _at_most("samples", samples, MAX_SAMPLES, "Monte-Carlo draws")
    _seed_count(seeds)
    # the pool in every form `rank` takes it: a list of item dicts too
    pool = (os.fspath(items) if isinstance(items, str | os.PathLike)
            else _pool_records(items))
    _check(RankEvalConfig, items=pool)
    cfg = _config(
        RankEvalConfig, {"budgets": budgets, "rules": _loose_names(rules, "rules"),
                         "seeds": _seeds(seeds),
                         "covariates": _loose_names(covariates, "covariates"), "lam": lam,
                         "items": pool},
        oracle=oracle, k=k, tau=tau, hierarchical=hierarchical,
        refit_every=refit_every, samples=samples, min_valid=min_valid, max_failed=max_failed)
    return await _execute(prepare_rank_eval(cfg), session=session, opts=opts,
                          raise_on_failure=raise_on_failure)


rank_eval = _sync_twin(arank_eval)


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
    max_cost: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
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
        seed, min_valid, max_failed, cache, concurrency, timeout, max_cost, retry, progress,
        raise_on_failure: as in `evaluate` (the outcome's unit is a G-module answer).
        session: (the `a` form only) run in this `Session`: its cache and judge settings
            apply (give cache, concurrency, timeout, retry, progress and max_cost to it
            instead). Default: a session of the command's own, closed when it ends. The
            sync form's type hints are the `a` form's, so type checkers accept `session`
            there too; at run time the sync form refuses it (TypeError).

    Returns:
        The discover `Result`.
    """
    from judgeaudit.commands import prepare_discover
    from judgeaudit.config import DiscoverConfig

    opts = _opts(cache, concurrency, timeout, retry, seed, progress, max_cost)
    data = _data(data)
    cfg = _config(
        DiscoverConfig, {"data": data if isinstance(data, str) else ""}, recorded=recorded,
        llm=llm, limit=limit,
        holdout=holdout, holdout_limit=holdout_limit, clusters=clusters, factors=factors,
        iterations=iterations, tau=tau, rho=rho, rep_fallback=rep_fallback,
        min_agreement=min_agreement, seed=seed, min_valid=min_valid, max_failed=max_failed)
    if embedder is not None and not callable(getattr(embedder, "encode", None)):
        raise ValueError(f"embedder: expected a sentence embedder (encode(texts) -> array, "
                         f"name), got {_cut(embedder)}")
    run = prepare_discover(cfg, data=data, judges=_specs(judges, "judges"),
                           embedder=embedder)
    return await _execute(run, session=session, opts=opts, raise_on_failure=raise_on_failure)


discover = _sync_twin(adiscover)


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
    max_cost: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
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
        seed, min_valid, max_failed, cache, concurrency, timeout, max_cost, retry, progress,
        raise_on_failure: as in `evaluate` (the outcome's unit is a verdict on a rewrite).
        session: (the `a` form only) run in this `Session`: its cache and judge settings
            apply (give cache, concurrency, timeout, retry, progress and max_cost to it
            instead). Default: a session of the command's own, closed when it ends. The
            sync form's type hints are the `a` form's, so type checkers accept `session`
            there too; at run time the sync form refuses it (TypeError).

    Returns:
        The quantify `Result`.
    """
    from judgeaudit.commands import prepare_quantify
    from judgeaudit.config import QuantifyConfig

    opts = _opts(cache, concurrency, timeout, retry, seed, progress, max_cost)
    data = _data(data)
    cfg = _config(
        QuantifyConfig, {"data": data if isinstance(data, str) else ""},
        factors=",".join(_names(factors, "factors") or []),
        generator=generator, checker=checker, levels=_levels(levels),
        pool=pool, limit=limit, n_cal=n_cal, on_violation=on_violation, inject=inject,
        max_words=max_words, min_agreement=min_agreement, seed=seed, min_valid=min_valid,
        max_failed=max_failed)
    run = prepare_quantify(cfg, data=data, judges=_specs(judges, "judges"),
                           factors_from=_doc_arg(factors_from, "factors_from"))
    return await _execute(run, session=session, opts=opts, raise_on_failure=raise_on_failure)


quantify = _sync_twin(aquantify)


# ---- mitigate ----------------------------------------------------------------------------

async def amitigate(
    judges: Specs = None,
    data: Data = "pandalm:../shared/data/pandalm_testset",
    *,
    recorded: str | None = None,
    factor: str | None = None,
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
    max_cost: float | None = None,
    retry: RetryPolicy | int | None = None,
    progress: ProgressFn | None = None,
    raise_on_failure: bool = False,
    session: Session | None = None,
) -> Result:
    """Bias-controlled win rates (`judgeaudit mitigate`, HUB-J Algorithm 3): a two-stage
    logistic model over judges and queries separates each judge's wins due to the factor;
    the length-controlled win rate is reported beside it. With `apply`, correct new verdicts
    of one judge with a saved fit instead.

    Args:
        judges: live judge SPECs (with or instead of `recorded`).
        data: pairwise data with human labels (SPEC or items).
        recorded: "pandalm": the recorded judges shipped with `data="pandalm:PATH"`.
        factor: the factor to control for (shipped, or found with `factors_from`; default
            "verbosity").
        factors_from: a discover result (path, `Result` or dict).
        scorer: SPEC of the G_score model.
        candidate: whose win rate: "rejected" (the human-rejected response), "response_1"
            or "response_2".
        limit: use the first N labelled items.
        estimator: "marginal" (default) or "two_stage" (the paper's plug-in fit).
        apply: an earlier mitigate result (path, `Result` or dict) to correct one judge's
            verdicts with (the result's command is then "mitigate-apply"; `factor` is then
            the fit's: give none, or the same).
        min_agreement: keep items whose majority label has this annotator share.
        seed, min_valid, max_failed, cache, concurrency, timeout, max_cost, retry, progress,
        raise_on_failure: as in `evaluate` (the outcome's unit is a judge verdict on a
            query with factor scores).
        session: (the `a` form only) run in this `Session`: its cache and judge settings
            apply (give cache, concurrency, timeout, retry, progress and max_cost to it
            instead). Default: a session of the command's own, closed when it ends. The
            sync form's type hints are the `a` form's, so type checkers accept `session`
            there too; at run time the sync form refuses it (TypeError).

    Returns:
        The mitigate `Result`.
    """
    from judgeaudit.commands import prepare_mitigate
    from judgeaudit.config import MitigateConfig

    opts = _opts(cache, concurrency, timeout, retry, seed, progress, max_cost)
    data = _data(data)
    cfg = _config(
        MitigateConfig, {"data": data if isinstance(data, str) else ""}, recorded=recorded,
        factor=factor,
        scorer=scorer, candidate=candidate, limit=limit, estimator=estimator,
        min_agreement=min_agreement, seed=seed, min_valid=min_valid, max_failed=max_failed)
    run = prepare_mitigate(cfg, data=data, judges=_specs(judges, "judges"),
                           factors_from=_doc_arg(factors_from, "factors_from"),
                           apply=_doc_arg(apply, "apply"))
    return await _execute(run, session=session, opts=opts, raise_on_failure=raise_on_failure)


mitigate = _sync_twin(amitigate)


__all__ = [
    "aaudit", "adiscover", "aevaluate", "amitigate", "aquantify", "arank", "arank_eval",
    "ascoring_bias", "audit", "discover", "evaluate", "load_data", "mitigate", "quantify",
    "rank", "rank_eval", "run_sync", "scoring_bias",
]
