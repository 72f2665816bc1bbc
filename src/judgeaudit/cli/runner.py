"""What every command does around its pipeline: its options made from its Config model
(`config_command`), check the output place before paying for a run, run the prepared command
(`judgeaudit.commands`, shared with the Python API) in a Session with progress bars and
Ctrl-C handled (finished calls are cached; exit 130 with how to resume) (`run_command`), and
finish with one outcome rule (exit 3 when a run judged too little).

Exit codes are documented in `judgeaudit.outcome`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import operator
import os
import re
import signal
import sys
import types
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import typer

from judgeaudit.cli.progress import LAST_ERROR, close_bars, console, fail, growing_bar
from judgeaudit.cli.terminal import json_line, styled
from judgeaudit.config import (
    SETTINGS_KEY,
    CommandConfig,
    Exclusive,
    RunFields,
    field_error,
    recorded_settings,
)
from judgeaudit.outcome import (
    EXIT_INTERRUPTED,
    EXIT_RUN_FAILED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    failure_message,
    run_failed,
)

if TYPE_CHECKING:
    from judgeaudit.session import Progress

T = TypeVar("T")
C = TypeVar("C", bound=CommandConfig)
log = logging.getLogger("judgeaudit.cli")


def check_out_dir(out: Path) -> Path:
    """Refuse an output directory that cannot be written before any call is paid for: an
    existing file in its place, or a place without write permission."""
    if out.exists() and not out.is_dir():
        raise fail(f"--out {out}: exists and is not a directory")
    made = [p for p in (out, *out.parents) if not p.exists()]  # deepest first
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".judgeaudit-write-check-{os.getpid()}"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise fail(f"--out {out}: cannot write there ({exc.strerror or exc})") from None
    finally:  # the folders made to check are made again by the first write (a run refused
        # as bad input after this check left empty folders behind)
        for p in made:
            with contextlib.suppress(OSError):
                p.rmdir()
    return out


def open_cache(cache: Path | None, no_cache: bool):  # -> Cache | None
    from judgeaudit.llm import Cache
    from judgeaudit.llm.cache import default_cache_path

    if no_cache:
        return None
    try:
        return Cache(cache)
    except (ValueError, OSError) as exc:  # not a database, a directory, no permission
        hint = "" if cache else ("; give another place with --cache PATH or $JUDGEAUDIT_CACHE, "
                                 "or run without one: --no-cache")
        env = os.environ.get("JUDGEAUDIT_CACHE")  # named where it came from, not "default"
        where = f"--cache {cache}" if cache else (
            f"$JUDGEAUDIT_CACHE {env}" if env else "the default cache")
        msg = str(exc)
        own = f"cache {Path(cache) if cache else default_cache_path()}: "
        if msg.startswith(own):  # the cache names its file too: once is enough
            msg = msg[len(own):]
        raise fail(f"{where}: {msg}{hint}") from None


@contextmanager
def session_bars() -> Iterator[Callable[[Progress], None]]:
    """A session progress callback drawing one bar per task (`growing_bar`), each closed
    when the next task starts; a bar's total grows as the pipeline plans its calls."""
    with ExitStack() as stack:
        st: dict[str, Any] = {"task": None, "bar": None, "done": 0, "total": 0}

        def on_progress(ev: Progress) -> None:
            if ev.task != st["task"]:
                if st["bar"] is not None:  # the last task is over: it did what it did
                    st["bar"].settle()
                stack.close()
                # a task begun without a total plans its calls stage by stage: its ETA
                # is a lower bound until it ends (`progress.pace`)
                bar = growing_bar(ev.task, growing=ev.total is None)
                st.update(task=ev.task, bar=stack.enter_context(bar), done=0, total=0)
            st["bar"].note_made(ev.made)
            if (ev.total or 0) > st["total"]:
                st["bar"].add_total(ev.total - st["total"])
                st["total"] = ev.total
            if ev.done > st["done"]:
                st["bar"].advance(ev.done - st["done"])
                st["done"] = ev.done

        yield on_progress
        if st["bar"] is not None:  # ended normally (an interrupted bar keeps its total)
            st["bar"].settle()


def checked(make: Callable[[], T]) -> T:
    """Bad input found by a command's checks (ValueError) exits 2 with its message; a
    message about an option whose value came from `--config FILE` names the file and the key
    (`name_config_file`)."""
    try:
        return make()
    except ValueError as exc:
        raise fail(name_config_file(str(exc))) from None


# The `--config FILE` of the running command and the settings it gives that are in force
# (set by `config_command`): messages about them name the file (`name_config_file`).
CONFIG_FILE: ContextVar[tuple[str, dict[str, Any]] | None] = ContextVar("config_file",
                                                                         default=None)


def _opt_pattern(key: str) -> str:
    return rf"(?<![\w-])--{re.escape(key.replace('_', '-'))}(?![\w-])"


def lines_at(path: Any, keys: Sequence[str], form: str = "{}: ") -> str:
    """The lines of a config file's `keys` ("line 3", "lines 1, 3"), set in `form`; "" when
    none is found (`config.key_lines`)."""
    from judgeaudit.config import key_lines

    lines = key_lines(path)
    found = sorted({n for k in keys if (n := lines.get(k))})
    if not found:
        return ""
    return form.format(f"line{'s' if len(found) > 1 else ''} "
                       f"{', '.join(str(n) for n in found)}")


def name_config_file(msg: str) -> str:
    """A command's message about an option that the `--config` file gave (not the command
    line), as the file's: "--budgets: expected ..." -> "--config f.toml: line 2: key
    'budgets': expected ..."; an option named further in (a file's key against a flag typed)
    is followed by where its value came from, with its line."""
    current = CONFIG_FILE.get()
    if current is None:
        return msg
    path, keys = current
    for key in keys:
        m = re.match(_opt_pattern(key), msg)
        if m:
            return f"--config {path}: {lines_at(path, [key])}key {key!r}{msg[m.end():]}"
    named = [key for key in keys if re.search(_opt_pattern(key), msg)]
    if named:
        return (f"{msg} ({', '.join(f'{k} = {toml_text(keys[k])}' for k in named)}: from "
                f"--config {path}{lines_at(path, named, ', {}')})")
    return msg


def toml_text(value: Any) -> str:
    """A setting's value as a TOML file writes it (true, 20, "text"), for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | Path):
        return json.dumps(str(value), ensure_ascii=False)
    return str(value)


def settle_config_file(model: type[CommandConfig], values: dict[str, Any], path: Any,
                       source: Callable[[str], str]) -> dict[str, Any]:
    """Resolve a `--config` file against the command line by `model.all_conflicts()`, where
    `source(name)` says where a value came from ("file", "cli" or "default"). What the user
    typed wins: a file's setting that excludes a flag given on the command line, or that
    applies only with a flag the command line turned off, is set aside (`values` gets the
    field's default) and one note on stderr says which ("--config x.toml: sample = 20 set
    aside for --n"). Two settings of the file that exclude each other exit 2 naming the file
    (two flags of the command line are left to the command's own message). Returns the
    file's settings in force."""

    def given(k: str) -> bool:
        return bool(values[k] != model.default(k))

    def flag(k: str) -> str:
        dash = k.replace("_", "-")
        return f"--{dash}" if not isinstance(values[k], bool) or values[k] else f"--no-{dash}"

    aside: dict[str, tuple[Any, str]] = {}  # file key -> (its value, the flag it yields to)

    def set_aside(keys: list[str], cause: str) -> None:
        for k in keys:
            aside[k] = (values[k], cause)
            values[k] = model.default(k)

    changed = True
    while changed:  # a setting set aside may leave others without their flag (max_n)
        changed = False
        for rule in model.all_conflicts():
            if isinstance(rule, Exclusive):
                for mine, other in ((rule.first, rule.second), (rule.second, rule.first)):
                    typed = [k for k in mine if source(k) == "cli" and given(k)]
                    filed = [k for k in other if source(k) == "file" and given(k)]
                    if typed and filed:
                        set_aside(filed, flag(typed[0]))
                        changed = True
            elif not values[rule.flag]:
                cause = (flag(rule.flag) if source(rule.flag) == "cli" and rule.flag not in aside
                         else aside.get(rule.flag, (None, None))[1])
                filed = [k for k in rule.keys if source(k) == "file" and given(k)]
                if cause is not None and filed:
                    set_aside(filed, cause)
                    changed = True
    where = f"--config {path}"

    def shown(keys: Sequence[str]) -> str:
        return ", ".join(f"{k} = {toml_text(values[k])}" for k in keys)

    for rule in model.all_conflicts():  # what is left: within the file, or the command line
        if isinstance(rule, Exclusive):
            first = [k for k in rule.first if given(k)]
            second = [k for k in rule.second if given(k)]
            if first and second and any(source(k) == "file" for k in [*first, *second]):
                at = lines_at(path, [k for k in [*first, *second] if source(k) == "file"])
                raise fail(f"{where}: {at}{shown(first)} and {shown(second)} cannot be given "
                           f"together ({rule.why}); give one of them")
        elif not values[rule.flag]:
            filed = [k for k in rule.keys if source(k) == "file" and given(k)]
            if filed:
                state = (f"the file sets {rule.flag} = false" if source(rule.flag) == "file"
                         else f"{rule.flag} is not set")
                at = lines_at(path, [*filed, *([rule.flag] if source(rule.flag) == "file"
                                               else [])])
                raise fail(f"{where}: {at}{shown(filed)} "
                           f"appl{'ies' if len(filed) == 1 else 'y'} only with {rule.flag} = "
                           f"true, and {state} ({rule.why})")
    if aside:  # each group with its lines in the file and the flag it yields to
        by_cause: dict[str, list[str]] = {}
        for k, (_v, cause) in aside.items():
            by_cause.setdefault(cause, []).append(k)
        console.print(f"note: {where}: " + "; ".join(
            f"{', '.join(f'{k} = {toml_text(aside[k][0])}' for k in keys)} set aside for "
            f"{cause}{lines_at(path, keys, ' ({} of the file)')}"
            for cause, keys in by_cause.items()), highlight=False, markup=False)
    return {k: values[k] for k in values if source(k) == "file" and k not in aside}


def settle_masked_settings(values: dict[str, Any], filed: dict[str, Any], path: Any) -> None:
    """A run's folder (`--config RUN_DIR`) whose recorded spec had its api_key masked: an
    option given again has replaced it (it is not `filed`); else the key comes from the
    environment, with a note, or the run is refused naming the option (`settle_masked`)."""
    from judgeaudit.config import ConfigError, is_masked, settle_masked

    for k in [k for k, v in filed.items() if is_masked(v)]:
        try:
            values[k], note = settle_masked(k, filed[k], f"--config {path}: ")
        except ConfigError as exc:
            raise fail(str(exc)) from None
        filed[k] = values[k]
        console.print(f"note: {note}", highlight=False, markup=False)


def check_file_names(model: type[CommandConfig], path: Any, filed: Mapping[str, Any]) -> None:
    """Names a config file gives that the command looks up in a registry (audit's probes,
    and the probes its fail_on names): an unknown one exits 2 naming the file and the key,
    with the closest known name (the command's own message named neither)."""
    if model.command != "audit":
        return
    import difflib

    from judgeaudit.audit.probe import probe_names

    lists = {"probes": filed.get("probes")}
    gate = filed.get("fail_on")
    if gate is not None:  # its undecided word is no probe name (`split_undecided`)
        gate = ",".join(v for v in str(gate).split(",")
                        if v.strip() != UNDECIDED_WORD["audit"])
    if gate is not None and gate.strip() not in ("biased", "flag", "any", "none"):
        lists["fail_on"] = gate
    known = probe_names()
    for key, text in lists.items():
        if text is None:
            continue
        bad = [n for n in (p.strip() for p in str(text).split(",")) if n and n not in known]
        if bad:
            close = difflib.get_close_matches(bad[0], known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise fail(f"--config {path}: {lines_at(path, [key])}key {key!r}: unknown "
                       f"probe {bad[0]!r}{hint} (known: {', '.join(sorted(known))})")


def _sources(ctx: Any) -> Callable[[str], str]:
    """Where each parameter's value came from: "file" (`--config`, click's default_map),
    "default", or "cli" (the command line, an environment variable)."""

    def source(name: str) -> str:
        src = getattr(ctx.get_parameter_source(name), "name", None)  # click's ParameterSource
        if src == "DEFAULT_MAP":
            return "file"
        return "default" if src in (None, "DEFAULT") else "cli"

    return source


def run_command(cfg: Any, run: Any,
                show: Callable[[], AbstractContextManager[Callable[[Progress], None]]] = (
                    session_bars)) -> dict[str, Any]:
    """A prepared command (`judgeaudit.commands.Run`) run the CLI's way: the output folder
    checked, a Session on the CLI's cache with progress bars (`show`: a context yielding the
    session's progress callback; default `session_bars`; under --plan-only its judges plan),
    the body through `run_async` (Ctrl-C: exit 130; a fatal call: exit 3; a ValueError: bad
    input, exit 2; a crash: recorded as failed, `record_crash`), the judges closed. Returns
    the results document, its `seconds` the wall time of the whole run."""
    from judgeaudit.cli.plan_cmd import active_planner
    from judgeaudit.session import Session

    if cfg.cache is not None and cfg.no_cache:  # both typed (a file's yields to a flag)
        raise fail(f"--cache {cfg.cache} and --no-cache cannot be given together (one names "
                   "the cache to use, the other uses none): give one")
    check_out_dir(cfg.out)
    rerun = check_rerun_data(cfg, run)  # before any call: other data than the run's are refused
    planner = active_planner()
    if planner is not None and cfg.no_cache:
        raise fail("--plan-only needs the cache (the answers are ingested into it): drop "
                   "--no-cache")
    if planner is not None:  # its estimate is compared with the cap
        planner.max_cost = getattr(cfg, "max_cost", None)
        planner.command = type(cfg).command  # named in --json, as every command's summary
    store = open_cache(cfg.cache, cfg.no_cache)
    _RUNNING["cached"] = store is not None  # for a signal before the run (`main._end_now`)
    found: dict[str, bytes | None] = {}  # the folder's files as work found them (`_restore`)
    with show() as bars:

        def progress(ev: Progress) -> None:
            # Work begins (the first task's first event, before its calls; every input check
            # is behind it, so bad input leaves the folder as it was): until the results
            # replace it, the folder says this run has not finished (`unfinished_document`).
            if planner is None and _UNFINISHED["doc"] is None:
                found.update(_snapshot(cfg.out))
                _UNFINISHED["doc"] = run.unfinished_document(sess)
                write_failed(cfg.out, _UNFINISHED["doc"], announce=False)
                _UNFINISHED["refresh"] = lambda: write_failed(
                    cfg.out, mark_stopped(run.unfinished_document(sess)), announce=False)
            bars(ev)

        sess = Session(cache=store if store is not None else False,
                       concurrency=getattr(cfg, "concurrency", None),
                       timeout=getattr(cfg, "timeout", None), seed=getattr(cfg, "seed", 0),
                       progress=progress, planner=planner,
                       max_cost=getattr(cfg, "max_cost", None))

        async def go() -> dict[str, Any]:
            from judgeaudit.llm import CallFailed

            try:
                with sess.command():
                    try:  # (its seconds: the run's wall time, `Run.document`)
                        return await run.document(sess)
                    except CallFailed as exc:
                        if planner is None:  # the folder says this run failed, and why
                            write_failed(cfg.out, run.failed_document(sess, exc))
                        raise
                    except ValueError:
                        # Bad input found once work had begun (a local judge without its
                        # backend, said at its first call the cache does not answer): the
                        # folder goes back to what it held, as for bad input found before;
                        # it said "did not finish; run the same command again to resume",
                        # which cannot help.
                        if found:
                            _restore(cfg.out, found)
                        raise
            finally:
                await sess.aclose()

        try:
            res = checked(lambda: run_async(go, cache_path=store and str(store.path),
                                            cached=store is not None))
            if _RUNNING["late"] is not None and isinstance(res.get("run"), dict):
                res["run"]["signal_after_last_call"] = _RUNNING["late"]
            if isinstance(cfg, CommandConfig):  # what `--config RUN_DIR` re-runs
                res[SETTINGS_KEY] = recorded_settings(cfg)
            if rerun is not None:  # which run this re-ran, and whether on its data
                res["rerun_of"], changed = rerun
                if changed:
                    res["warnings"] = [*(res.get("warnings") or []), changed]
            return res
        except Exception as exc:
            if _UNFINISHED["doc"] is not None and not isinstance(exc, _NO_CRASH):
                record_crash(cfg.out, run, sess, exc)  # (never under --plan-only: no doc)
            raise
        finally:
            _UNFINISHED["doc"] = _UNFINISHED["refresh"] = None


def check_rerun_data(cfg: Any, run: Any) -> tuple[dict[str, Any], str] | None:
    """For a re-run from a run's folder (`--config RUN_DIR`) of a command that loaded its
    items before any call (`Run.items`): the results' `rerun_of` record and the warning
    that --data given on the command line differs from the run's data (`config.rerun_of`);
    the recorded --data reading other data exits 2 here, nothing paid. None otherwise."""
    from judgeaudit.config import ConfigError, is_results_path, rerun_of

    given = CONFIG_FILE.get()
    if (given is None or not is_results_path(given[0]) or getattr(run, "items", None) is None
            or not isinstance(cfg, CommandConfig)):
        return None
    path, filed = given
    try:
        record, note = rerun_of(path, run.items, recorded_settings(cfg),
                                data_given="data" not in filed)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if note and record.get("data_same") is None:  # not known: said, no warning
        console.print(f"note: {note}", highlight=False, markup=False)
        note = ""
    return record, note


_KEPT = ("results.json", "report.html")  # what a run writes into its folder


def _snapshot(out: Path) -> dict[str, bytes | None]:
    """The folder's results files as they are (None: absent), for `_restore`."""
    return {name: (out / name).read_bytes() if (out / name).is_file() else None
            for name in _KEPT}


def _restore(out: Path, found: dict[str, bytes | None]) -> None:
    """Put the folder's results files back as `_snapshot` found them."""
    for name, data in found.items():
        with contextlib.suppress(OSError):
            if data is None:
                (out / name).unlink(missing_ok=True)
            else:
                (out / name).write_bytes(data)


# What ends a command without crashing it: an exit the CLI chose (bad input, a fatal call),
# and an OSError (a full disk), which `main` says in one line and leaves "did not finish".
# typer (0.27 on) carries its own click: its usage errors are `typer.TyperException`s, and
# the separate `click` package is no dependency of it (nor of ours).
_NO_CRASH = (typer.Exit, typer.Abort, typer.TyperException, EOFError, OSError)
# The crashed run whose failure `record_crash` wrote (for the crash's message in `main`).
CRASHED: dict[str, Any] = {"exc": None, "doc": None, "path": None}


def record_crash(out: Path, run: Any, sess: Any, exc: Exception) -> None:
    """A run under way that an exception no command expected ended (a plugin's code, a
    bug): its folder's "did not finish; run the same command again to resume" document
    becomes the failed run's, with the reason (`crash.crash_reason`): a crash is no
    interruption, and the same command fails the same way."""
    from judgeaudit.cli.crash import crash_reason

    reason = crash_reason(exc)[0]
    try:
        doc = run.failed_document(sess, RuntimeError(reason))
        doc["run"].update(message=f"run failed: {reason}", first_error=reason, crashed=True)
        write_failed(out, doc, announce=False)
    except Exception:  # noqa: BLE001 - the crash is reported anyway; its record is a bonus
        return
    CRASHED.update(exc=exc, doc=doc, path=out / "results.json")


# Whether the running command was given --json (set by `config_command`).
JSON_REQUESTED: ContextVar[bool] = ContextVar("json_requested", default=False)
# The document of the run under way that its folder holds until the results replace it
# (`Run.unfinished_document`): what --json prints when the run is interrupted. A plain
# holder, not a ContextVar: it is set inside the event loop's task and read after it, or
# in the SIGTERM handler.
# "refresh" rewrites it with the calls made so far (it was written before the first call,
# so an interrupted run said it made 0 calls and spent nothing).
_UNFINISHED: dict[str, Any] = {"doc": None, "refresh": None}


def write_failed(out: Path, doc: dict[str, Any], announce: bool = True) -> dict[str, Any]:
    """Write the document of a run that failed or has not finished into its folder, so
    results.json (and report.html, when the folder had one) are this run's, not an earlier
    run's results that a script would read as this run's; with --json (and `announce`) its
    summary goes to stdout as for any other failed run."""
    from judgeaudit.report import write_report, write_results

    write_results(out / "results.json", doc)
    if (out / "report.html").exists():
        write_report(out)
    if announce:  # where it is, as every other run says (a run a bad key ended did not)
        console.print(f"results: {out / 'results.json'}", highlight=False)
        if JSON_REQUESTED.get():  # the code the run gives (3), not a passing run's 0
            print_json(doc, recorded_exit_code(doc))
    return doc


def print_unfinished() -> None:
    """After an interruption (Ctrl-C, SIGTERM): the folder's unfinished document rewritten
    with the calls made so far and the signal that ended it (`mark_stopped`) and, with
    --json, its summary with the exit code. Once per run: the hard stop (`main._end_now`)
    does not print it a second time."""
    if _RUNNING["reported"]:
        return
    _RUNNING["reported"] = True
    refresh = _UNFINISHED.get("refresh")
    if refresh is not None:
        try:
            _UNFINISHED["doc"] = refresh()
        except Exception:  # noqa: BLE001 - interrupted anyway: the first document stands
            log.debug("could not rewrite the unfinished document", exc_info=True)
    doc = _UNFINISHED["doc"]
    if doc is not None and refresh is not None:  # what the interrupted run made and cancelled
        from judgeaudit.cli.format import calls_text

        console.print(calls_text(doc), highlight=False)
    if doc is not None and JSON_REQUESTED.get():
        print_json(mark_stopped(doc), stop_code() or 0)


# The pipeline under way in `run_async` (its asyncio task and loop), so that a signal ends
# it the same way whichever it is (`terminate_run`): the task cancelled, the calls under way
# counted as cancelled, the unfinished document rewritten. "stop": the signal that asked for
# it (the first one: later ones are the same request, `main._on_signal`); "terminated": it
# was SIGTERM; "cached": the run keeps its answers (a cache; not --no-cache) and "where" the
# cache's path in the message; "said": the stop line was printed; "reported": the
# unfinished document was printed (`print_unfinished`); "grace": the seconds the calls in
# flight at the signal were given to finish (0: none, `terminate_run`) of the run's
# "grace_setting" (`interrupt_grace`; 0 without a cache); "grace_task": the task waiting
# for them (`_grace`), until it cancels the pipeline; "in_flight": the calls in flight at
# the signal; "timer": the hard stop's timer (`main._on_signal`), called off when the run
# finishes anyway (`finished_after_signal`); "late": then, the signal as results.json
# keeps it (`late_signal`); "finishing": the pipeline has ended and the command is writing
# and printing its results (`defer_signal`); "deferred": a signal that came then.
_RUNNING: dict[str, Any] = {"task": None, "loop": None, "terminated": False, "stop": None,
                            "cached": True, "where": "", "said": False, "reported": False,
                            "grace": 0.0, "grace_task": None, "grace_setting": 0.0,
                            "in_flight": 0, "timer": None, "late": None, "finishing": False,
                            "deferred": None}
_STOP_WORDS = {signal.SIGINT: ("interrupted", EXIT_INTERRUPTED),
               signal.SIGTERM: ("terminated", EXIT_TERMINATED)}


# Seconds the calls in flight at the first Ctrl-C or SIGTERM get to finish, so that their
# answers (paid for) are cached and a re-run does not pay for them again; nothing new is sent
# meanwhile, and a second signal ends the wait at once. Only with a cache (under --no-cache
# nothing would be kept). $JUDGEAUDIT_INTERRUPT_GRACE sets it (0 stops at once, as before
# the grace; at most MAX_INTERRUPT_GRACE: a container's stop timeout is 10 s by default).
INTERRUPT_GRACE = 2.0
MAX_INTERRUPT_GRACE = 30.0


def interrupt_grace() -> float:
    """The grace period for the calls in flight at an interruption: $JUDGEAUDIT_INTERRUPT_GRACE
    (seconds, 0 to MAX_INTERRUPT_GRACE), else INTERRUPT_GRACE. A bad value is a usage error
    (exit 2) when the run starts, not a surprise at Ctrl-C."""
    env = os.environ.get("JUDGEAUDIT_INTERRUPT_GRACE")
    if env is None or not env.strip():
        return INTERRUPT_GRACE
    # a plain decimal of ASCII digits: float() also reads "1_0" as 10, "١٠" and "1e1"
    value = (float(env) if re.fullmatch(r"\s*(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*", env)
             else float("nan"))
    if not 0 <= value <= MAX_INTERRUPT_GRACE:  # NaN too
        raise fail(f"JUDGEAUDIT_INTERRUPT_GRACE={env!r}: expected seconds from 0 to "
                   f"{MAX_INTERRUPT_GRACE:g} (the calls in flight at Ctrl-C or SIGTERM get "
                   "that long to finish and be cached)")
    return value


def kept_text(cached: bool = True) -> str:
    """What the grace after the signal kept: '; of the calls in flight at the signal, K
    answered within the G s grace and were cached, E ended in an error within it (not
    retried: ...), D were cut off (a re-run asks them again)'. With no grace (no cache, a
    grace of 0) only the calls cut off: '; D calls in flight were cut off (a re-run asks
    them again)', which only --json's `given_up_in_flight` showed; '' when none was. The
    calls that ended in an error (`Stopping.errored`: a server's 500, a timeout) are said
    apart: "0 answered" read as if none had come back, and --json's "retries: 0" had no
    word of the retries the stop held back."""
    from judgeaudit.llm.client import STOPPING

    kept, cut, bad = STOPPING.kept, STOPPING.given_up, STOPPING.errored
    if not (_RUNNING["grace"] and cached):
        return (f"; {cut} {'call' if cut == 1 else 'calls'} in flight "
                f"{'was' if cut == 1 else 'were'} cut off (a re-run asks "
                f"{'it' if cut == 1 else 'them'} again)") if cut else ""
    text = (f"; of the calls in flight at the signal, {kept} answered within the "
            f"{_RUNNING['grace']:g} s grace and {'was' if kept == 1 else 'were'} cached")
    if bad:
        text += (f", {bad} ended in an error within it (not retried: nothing is sent after "
                 f"the signal; a re-run asks {'it' if bad == 1 else 'them'} again)")
    if cut:
        text += (f", {cut} {'was' if cut == 1 else 'were'} cut off (a re-run asks "
                 f"{'it' if cut == 1 else 'them'} again)")
    return text


def stop_code(signum: int | None = None) -> int | None:
    """The exit code of a run the signal `signum` (default: the one that stopped the run
    under way) ended: 130 SIGINT, 143 SIGTERM; None when no signal stopped it."""
    signum = _RUNNING["stop"] if signum is None else signum
    return _STOP_WORDS[signum][1] if signum in _STOP_WORDS else None


def resume_text(cached: bool, where: str = "") -> str:
    """What a run that did not finish leaves for the next one: with a cache, its finished
    calls (a re-run resumes and pays only for the rest); without one (--no-cache, a Session
    with cache=False), nothing (a re-run pays for every call again)."""
    if cached:
        return (f"finished calls are in the cache{where}; run the same command again to "
                "resume (no finished call is made twice)")
    return ("the answers were not kept (no cache: --no-cache); running the same command "
            "again pays for every call again")


def stop_text(signum: int, cached: bool, where: str = "") -> str:
    """The one line a run a signal ended says: which signal, and what a re-run costs."""
    word = _STOP_WORDS.get(signum, ("interrupted", 0))[0]
    name = signal.Signals(signum).name
    return f"{word} ({name}): {resume_text(cached, where)}{kept_text(cached)}"


def mark_stopped(doc: dict[str, Any]) -> dict[str, Any]:
    """The unfinished document of the run a signal ended, saying so: `run.interrupted` the
    signal's name, `run.exit_code` the process's (130, 143), and a reason naming them, so
    that `judgeaudit report DIR --json` says that code, not 3 (a run killed with no chance
    to write, kill -9, keeps the generic "did not finish" reason)."""
    signum = _RUNNING["stop"]
    run = doc.get("run")
    if signum not in _STOP_WORDS or not isinstance(run, dict):
        return doc
    word, code = _STOP_WORDS[signum]
    name = signal.Signals(signum).name
    reason = (f"{word} ({name}): the run did not finish; "
              f"{resume_text(_RUNNING['cached'], _RUNNING['where'])}"
              f"{kept_text(_RUNNING['cached'])}")
    run.update(message=f"run failed: {reason}", interrupted=name, exit_code=code,
               unfinished=True)
    doc["error"] = reason
    return doc


def say_stopped() -> None:
    """The stop line and the unfinished document (`print_unfinished`), once per run,
    whoever gets there first: the pipeline winding down (`run_async`) or the hard stop
    (`main._end_now`)."""
    signum = _RUNNING["stop"] or signal.SIGINT
    if not _RUNNING["said"]:
        _RUNNING["said"] = True
        close_bars()
        text = stop_text(signum, _RUNNING["cached"], _RUNNING["where"])
        if _RUNNING["deferred"] is not None or _RUNNING["late"] is not None:
            text = finishing_stop_text(signum)  # the pipeline had ended: its results written
        word, rest = text.split(" ", 1)
        console.print(styled(word, "bold yellow", rest), highlight=False)
    print_unfinished()


def terminate_run(signum: int = signal.SIGTERM) -> bool:
    """A signal while a pipeline runs (called from the signal handler, in the main thread,
    which runs the event loop): nothing new is sent from now on (`Stopping.on`); with a
    cache, the calls in flight get the grace period (`interrupt_grace`) to finish and be
    cached (`_grace`), then the task is cancelled, so the calls still under way end as
    cancelled and `run_async` says so and exits 130 (SIGINT) or 143 (SIGTERM). Without a
    cache, or with nothing in flight, it is cancelled at once. False when no pipeline is
    under way (nothing to cancel)."""
    from judgeaudit.llm.client import STOPPING

    task, loop = _RUNNING["task"], _RUNNING["loop"]
    if task is None or loop is None or task.done() or loop.is_closed():
        return False
    _RUNNING.update(stop=signum, terminated=signum == signal.SIGTERM,
                    in_flight=STOPPING.sending)
    STOPPING.on = True
    grace = _RUNNING["grace_setting"] if _RUNNING["cached"] and STOPPING.sending else 0.0
    _RUNNING["grace"] = grace
    try:  # also wakes a loop blocked in select()
        if grace > 0:
            loop.call_soon_threadsafe(_start_grace, task, grace)
        else:
            loop.call_soon_threadsafe(task.cancel)
    except RuntimeError:  # the loop closed meanwhile
        return False
    return True


def _start_grace(task: asyncio.Task[Any], seconds: float) -> None:
    """In the loop: start waiting for the calls in flight (`_grace`)."""
    _RUNNING["grace_task"] = asyncio.get_running_loop().create_task(_grace(task, seconds))


async def _grace(task: asyncio.Task[Any], seconds: float) -> None:
    """Wait until the calls in flight at the signal have finished (their answers cached as
    any answer is), at most `seconds`, then cancel the pipeline's task: what is still in
    flight is cut off (`CallStats.given_up_in_flight`). Once they have, the wait ends at
    once if the pipeline wants another call (held back: `Stopping.held`) or has one of the
    embedded model under way (not waited for: `Stopping.waits_for`); otherwise the
    pipeline may be finishing without one (its last call was sent before the signal), and
    it is let finish within the same `seconds`: a run that ends so is complete
    (`finished_after_signal`), not interrupted. Polled: the counts are changed by the calls
    themselves, in this loop."""
    from judgeaudit.llm.client import STOPPING

    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not task.done() and loop.time() < deadline:
        if not STOPPING.sending and (STOPPING.held or STOPPING.busy):
            break
        await asyncio.sleep(0.05)
    task.cancel()


def cut_grace() -> bool:
    """A second signal during the grace period (from the signal handler): stop waiting,
    cancel the pipeline at once, and write nothing more to the cache (`Stopping.hard`; a
    write under way finishes first: the handler runs between two bytecodes). False when no
    grace is under way (the signal is then handled as before: `main._on_signal`)."""
    from judgeaudit.llm.client import STOPPING

    grace_task, task, loop = _RUNNING["grace_task"], _RUNNING["task"], _RUNNING["loop"]
    if (STOPPING.hard or not _RUNNING["grace"] or (grace_task is not None and grace_task.done())
            or task is None or task.done() or loop is None or loop.is_closed()):
        return False
    STOPPING.hard = True
    try:
        loop.call_soon_threadsafe(task.cancel)
    except RuntimeError:  # the loop closed meanwhile
        return False
    return True


def run_async(make: Callable[[], Awaitable[T]], *, cache_path: str | None = None,
              cached: bool = True) -> T:
    """Run a pipeline. Ctrl-C: every finished call is already committed to the cache, so say
    so, say how to resume, and exit 130; SIGTERM (`terminate_run`) the same way, with exit
    143; without a cache (`cached` False) say that a re-run pays again. A call that failed
    fatally (bad key, bad request) exits 3 with its message. Under `--plan-only` the plan is
    written after the pipeline and the command exits 0 here, before any results are
    written."""
    from judgeaudit.cli.plan_cmd import active_planner, finish_plan
    from judgeaudit.llm import CallFailed

    async def main() -> T:
        _RUNNING.update(task=asyncio.current_task(), loop=asyncio.get_running_loop())
        try:
            return await make()
        finally:  # (a signal from now on waits for the results: `defer_signal`)
            _RUNNING.update(task=None, loop=None, finishing=True)

    from judgeaudit.llm.client import STOPPING

    planner = active_planner()
    pending = _RUNNING["deferred"]  # a signal after an earlier pipeline of this command
    _RUNNING.update(terminated=False, stop=None, said=False, reported=False, cached=cached,
                    where=f" ({cache_path})" if cache_path else "", grace=0.0,
                    grace_task=None, grace_setting=interrupt_grace() if cached else 0.0,
                    in_flight=0, timer=None, late=None, finishing=False, deferred=None)
    STOPPING.reset()
    if pending is not None:  # it asked to stop: no new pipeline starts
        _RUNNING["stop"] = pending
        say_stopped()
        raise typer.Exit(stop_code() or EXIT_INTERRUPTED)
    try:
        try:
            result = asyncio.run(main())
        finally:  # the next run in this process (a test's, a Session's) sends again; the
            STOPPING.on = STOPPING.hard = False  # counts stay, for the stop line
    except (KeyboardInterrupt, asyncio.CancelledError):
        if _RUNNING["stop"] is None:
            if not isinstance(sys.exc_info()[1], KeyboardInterrupt):
                raise  # a cancellation nobody here asked for
            _RUNNING["stop"] = signal.SIGINT  # Ctrl-C without the CLI's handler (the API)
        say_stopped()
        raise typer.Exit(stop_code() or EXIT_INTERRUPTED) from None
    except CallFailed as exc:
        if planner is not None:
            finish_plan(planner, stopped=exc)
        raise fail(str(exc), EXIT_RUN_FAILED) from None
    except Exception as exc:
        # --plan-only: a pipeline may stop early without answers; the plan is what counts.
        if planner is not None and planner.n:
            finish_plan(planner, stopped=exc)
        raise
    if _RUNNING["stop"] is not None:  # a signal as the pipeline ended
        if finished_after_signal(result):  # nothing cut off, nothing held back: finished
            return result
        say_stopped()
        raise typer.Exit(stop_code() or EXIT_INTERRUPTED)
    if planner is not None:  # --plan-only: write the plan, not the results; exit 0
        finish_plan(planner)
    return result


def finished_after_signal(result: Any = None) -> bool:
    """Whether the pipeline a signal asked to stop returned its results anyway, with no
    call left unsent (`Stopping.held`), none cut off (`Stopping.given_up`) and no second
    signal insisting (`Stopping.hard`): the signal came after its last call was sent and
    the calls in flight all answered within the grace. Such a run is complete (its re-run
    is free), so it ends as it would have: its results, report and exit code (exit 130 or
    143 failed a complete run in CI); the hard stop's timer is called off, one line says
    so, and `late_signal` is what results.json keeps (`run.signal_after_last_call`). Calls
    the client never sent (the spend cap, a stopped server: `result`'s calls.not_sent) were
    left unsent by the run itself, not by the signal: it ends as it would have (exit 3 past
    --max-failed), and the line says they were not sent, not that the run is complete."""
    from judgeaudit.llm.client import STOPPING

    if STOPPING.held or STOPPING.given_up or STOPPING.hard or _RUNNING["stop"] is None:
        return False
    timer = _RUNNING.get("timer")
    if timer is not None:
        timer.cancel()
    late = late_signal(result)
    close_bars()
    calls = result.get("calls") if isinstance(result, Mapping) else None
    why = calls.get("not_sent_why") if isinstance(calls, Mapping) else None
    console.print(styled("note:", "bold yellow", late_signal_text(late, why)), highlight=False)
    _RUNNING["late"] = late
    return True


def late_signal(result: Any = None) -> dict[str, Any]:
    """The signal that came after the run's last call was sent, as results.json keeps it:
    its name, the calls in flight at it, how many of them answered and were cached (the
    grace's `Stopping.kept`), and the grace they had; with "not_sent" when the run's client
    left calls unsent before it (`result`'s calls: the spend cap)."""
    from judgeaudit.llm.client import STOPPING

    late: dict[str, Any] = {"signal": signal.Signals(_RUNNING["stop"]).name,
                            "in_flight": _RUNNING["in_flight"], "answered": STOPPING.kept,
                            "grace_s": _RUNNING["grace"]}
    calls = result.get("calls") if isinstance(result, Mapping) else None
    n = int((calls or {}).get("not_sent") or 0) if isinstance(calls, Mapping) else 0
    if n:  # (why: the results' calls.not_sent_why)
        late["not_sent"] = n
    return late


def late_signal_text(late: Mapping[str, Any], why: str | None = None) -> str:
    """The line of a run a signal asked to stop that finished anyway (`finished_after_
    signal`): which signal, and the calls in flight that all answered; with the calls the
    run left unsent itself (`late`'s "not_sent", `why` their reason: the spend cap), that
    the signal came after the last call it could send, not that the run is complete."""
    n, kept = late["in_flight"], late["answered"]
    if n and late["grace_s"]:
        what = (f"the {n} call{'s' if n != 1 else ''} in flight {'all ' if n != 1 else ''}"
                f"answered within the {late['grace_s']:g} s grace"
                + (f" and {'was' if n == 1 else 'were'} cached" if kept == n
                   else f" ({kept} of them cached)"))
    else:
        what = "no call was in flight"
    n = int(late.get("not_sent") or 0)
    if n:  # the run itself left them unsent: not complete, nor cut short by the signal
        from judgeaudit.rank.run import not_sent_short

        return (f"{late['signal']} came after the last call the run could send, and {what}; "
                f"{n} call{'s' if n != 1 else ''} {'were' if n != 1 else 'was'} not sent "
                f"because {not_sent_short(why)}, not because of the signal: the run ends as "
                "it would have without it, its results written as usual")
    return (f"{late['signal']} came after the run's last call was sent, and {what}: the run "
            "is complete, its results are written as usual")


def defer_signal(signum: int, window: float = 1.0) -> bool:
    """A first signal once the pipeline has ended (called from the signal handler, in the
    main thread): the command is writing its results and report and printing them, so the
    signal waits for that (`note_deferred`); no later pipeline starts (`run_async`). It
    says so at once, in one line (a slow disk left the terminal silent for seconds after
    Ctrl-C), with what a signal again more than `window` seconds later does
    (`main.REPEAT_WINDOW`: it stops at once). It raised KeyboardInterrupt wherever the
    command was (exit 130 beside a results.json saying ok, no report, no --json; or the
    process died by the signal). False when no pipeline has ended (the signal is handled
    as before: `main._on_signal`)."""
    if not _RUNNING["finishing"] or _RUNNING["stop"] is not None:
        return False
    _RUNNING["deferred"] = signum
    close_bars()
    console.print(styled("note:", "bold yellow",
                         f"{signal.Signals(signum).name} while the run's results are being "
                         "written: they are written in full, then the run exits with its own "
                         f"code (a signal again more than {window:g} s from now stops it at "
                         "once)"), highlight=False)
    return True


def note_deferred(code: Any) -> bool:
    """After a command whose results a signal waited for (`defer_signal`): one line saying
    so, with the exit code the run gives (its own, as without the signal). True when it
    said so (the process then ends at once: `main.main`)."""
    signum = _RUNNING["deferred"]
    if signum is None or _RUNNING["said"]:
        return False
    _RUNNING["deferred"] = None
    code = 0 if code is None else code
    name = signal.Signals(signum).name
    close_bars()
    console.print(styled("note:", "bold yellow",
                         f"{name} came after the run's calls had all ended, as its results "
                         "were being written: they were written in full, and the run exits "
                         f"with its own code ({code}), as without the signal"),
                  highlight=False)
    return True


def finishing_stop_text(signum: int) -> str:
    """The stop line of a run a second signal ended while its results were being written
    (after a first one `defer_signal` held back): the folder holds them if they were
    written by then, else the run's "did not finish" record; and what a re-run costs, as
    the ordinary stop line says it (`resume_text`: under --no-cache nothing was kept)."""
    word = _STOP_WORDS.get(signum, ("interrupted", 0))[0]
    return (f"{word} ({signal.Signals(signum).name}) again as the run's results were being "
            "written: its folder holds them if they were written by then, else the record "
            "saying the run did not finish; "
            f"{resume_text(_RUNNING['cached'], _RUNNING['where'])}")


def _apply_config_file(ctx: typer.Context, _param: Any, value: Path | None) -> Path | None:
    """`--config FILE`: the file's settings become the command's defaults (click's
    `default_map`), so every flag given on the command line overrides the file. Runs before
    the other options (eager); a bad file exits 2 naming the file, the key and what was
    expected."""
    if value is None or ctx.resilient_parsing:
        return value
    ctx.default_map = {**(ctx.default_map or {}), **config_defaults(ctx.command, value)}
    return value


def config_defaults(command: Any, path: Path | str) -> dict[str, Any]:
    """The `default_map` of a click `command` from a TOML config file: the file validated
    against the command's Config model, keyed by the command's parameter names (a field is
    the option's long name with dashes as underscores: `--apply` fills `apply_fit`)."""
    from judgeaudit.config import ConfigError, load_config_file

    try:
        values = load_config_file(path, str(command.name))
    except ConfigError as exc:
        raise fail(str(exc)) from None
    by_field = {field_name(p): p.name for p in command.params}
    return {by_field.get(k, k): v for k, v in values.items() if k != "config_version"}


def field_name(param: Any) -> str:
    """The Config field of a click parameter: its first long option without the dashes,
    dashes as underscores (`--fail-on` -> fail_on); an argument's own name."""
    longs = [o for o in getattr(param, "opts", []) if o.startswith("--")]
    return longs[0][2:].replace("-", "_") if longs else str(param.name)


ConfigFileOpt = Annotated[Path | None, typer.Option(
    "--config", metavar="FILE.toml|RUN_DIR", is_eager=True, callback=_apply_config_file,
    help="Read the settings from a TOML file (keys: the option names with underscores, see "
         "`judgeaudit schema COMMAND`), or from a run's output folder (or its results.json): "
         "the settings that run recorded, to run it again (its --out is not taken); options "
         "given here override the file.")]
JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print the result's summary as one JSON object on stdout (everything "
                   "else goes to stderr).")]

# Short forms of the options that name the judge and the data, in every command that has them,
# and `--judge` wherever the judge option has another name, as every other command spells it.
_SHORT = {"judge": ("-j",), "judges": ("-j", "--judge"), "oracle": ("-j", "--judge"),
          "data": ("-d",)}


def _cli_type(tp: Any) -> Any:
    """The type typer parses for a field: ranges (Annotated) and choices (Literal) are
    checked by the option's callback, so `PosInt | None` is `int | None`, a Literal `str`."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _cli_type(get_args(tp)[0])
    if origin is Literal:
        return str
    if origin in (Union, types.UnionType):
        return functools.reduce(operator.or_, (_cli_type(a) for a in get_args(tp)))
    return tp


def _field_check(model: type[CommandConfig], name: str) -> Callable[[Any], Any]:
    """A typer callback holding an option's value to its field's type, range and choices
    (None passes: the default applies): `--limit: expected an integer >= 1, got 0`, exit 2."""
    opt = "--" + name.replace("_", "-")

    def check(v: Any) -> Any:
        wanted = None if v is None else field_error(model, name, v, strict=False)
        if wanted is not None:
            raise typer.BadParameter(f"{opt}: expected {wanted}, got {v}")
        return v

    return check


def config_parameters(model: type[CommandConfig]) -> list[inspect.Parameter]:
    """A command's options, one per field of its Config model (the command's own fields
    first): `--name-with-dashes`, the field's default and description; a bool is a
    `--x/--no-x` flag (`no_cache` the flag `--no-cache`); a field without a default is an
    argument."""
    own = [n for n in model.model_fields if n not in RunFields.model_fields]
    shared = [n for n in RunFields.model_fields if n in model.model_fields]
    params = []
    for name in [*own, *shared]:
        info = model.model_fields[name]
        if name == "config_version":
            continue
        opt = "--" + name.replace("_", "-")
        tp, default = _cli_type(info.annotation), info.default
        if info.is_required():
            spec: Any = typer.Argument(help=info.description, show_default=False)
            default = inspect.Parameter.empty
        elif tp is bool:
            spec = typer.Option(opt if name.startswith("no_") else f"{opt}/--no-{opt[2:]}",
                                help=info.description)
        else:
            check = None if name in model.checked_by_command else _field_check(model, name)
            spec = typer.Option(opt, *_SHORT.get(name, ()), help=info.description,
                                callback=check)
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=Annotated[tp, spec]))
    return params


def config_command(model: type[C], *extra: inspect.Parameter
                   ) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Make `body(cfg, json_out, **extra)` a typer command whose options are the fields of
    `model` (`config_parameters`, so each option is stated once, in judgeaudit.config), then
    `extra` (options that are no setting, e.g. audit's `--list`), `--config FILE.toml` and
    `--json`. The command builds the Config from the parsed options and calls `body`."""

    def wrap(body: Callable[..., None]) -> Callable[..., None]:
        tail = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
                for n, a, d in (("config", ConfigFileOpt, None), ("json_out", JsonOpt, False))]
        # where each value came from (`settle_config_file`): typer passes its click context
        tail.append(inspect.Parameter("click_context", inspect.Parameter.KEYWORD_ONLY,
                                      annotation=typer.Context))
        params = [*config_parameters(model), *extra, *tail]

        def command(**values: Any) -> None:
            json_out = values.pop("json_out")
            path, ctx = values.pop("config"), values.pop("click_context")
            given = {p.name: values.pop(p.name) for p in extra}
            token = JSON_REQUESTED.set(json_out)  # for a run a fatal call ends (write_failed)
            file_token = CONFIG_FILE.set(None)
            LAST_ERROR["msg"] = None
            try:
                if path is not None:  # the file against the command line (what was typed wins)
                    filed = settle_config_file(model, values, path, _sources(ctx))
                    settle_masked_settings(values, filed, path)
                    check_file_names(model, path, filed)
                    CONFIG_FILE.set((str(path), filed))
                body(model.model_construct(**values), json_out=json_out, **given)
            except typer.Exit as exc:  # bad input: --json still prints one object (stdout
                # was empty, so a script parsing it failed on the usage errors above all)
                if json_out and exc.exit_code == EXIT_USAGE and LAST_ERROR["msg"]:
                    typer.echo(json_line({"command": model.command, "ok": False,
                                          "reason": LAST_ERROR["msg"], "exit_code": 2}))
                    LAST_ERROR["json"] = "printed"
                raise
            finally:
                CONFIG_FILE.reset(file_token)
                JSON_REQUESTED.reset(token)

        command.__name__, command.__qualname__ = body.__name__, body.__qualname__
        command.__doc__, command.__module__ = body.__doc__, body.__module__
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return wrap


def write_outputs(out: Path, res: Mapping[str, Any]) -> tuple[Path, Path | str]:
    """Write `out`/results.json and the report.html built from it; their paths. A report
    that cannot be written (a full disk) is said, not fatal: results.json holds the run and
    rebuilds it (`judgeaudit report`); the run's terminal summary and exit code stand (it
    exited 3 with one line, hiding the results, while results.json said the run was ok)."""
    from judgeaudit.report import write_report, write_results

    path = write_results(out / "results.json", res)
    try:
        return path, write_report(path)
    except OSError as exc:
        why = exc.strerror or str(exc)
        console.print(styled("warning:", "bold yellow",
                             f"report.html could not be written ({why}); results.json is "
                             f"complete: rebuild the report with judgeaudit report {out} once "
                             "there is room"), highlight=False)
        return path, f"not written ({why})"


def print_json(doc: Mapping[str, Any], exit_code: int = 0) -> None:
    """`--json`: the result's summary (`Result.summary()`) as one JSON object on stdout; the
    human output stays on stderr. It always says the exit code the run is about to give
    (`exit_code`, 0 too: a script reading d["exit_code"] of a passing run got a KeyError),
    as a usage error's JSON and replay-check's do."""
    from judgeaudit.result import Result

    typer.echo(json_line({**Result.from_document(doc).summary(), "exit_code": exit_code}))


# The word a --fail-on list may add to fail on the probes the run could not decide: a
# compare's "underpowered" changes, an audit's "underpowered" verdicts (an adaptive probe
# stopped by its budget undecided). Without it such a gate passed with exit 0 and no word.
UNDECIDED_WORD = {"compare": "underpowered", "audit": "undecided"}


def split_undecided(value: str | None, command: str) -> tuple[str | None, bool]:
    """(the --fail-on value without the undecided word, whether it was given): `worse,
    underpowered` -> ("worse", True), `biased,undecided` -> ("biased", True). The word alone
    is refused, since it names no gate for the decided probes."""
    word = UNDECIDED_WORD[command]
    if value is None:
        return None, False
    parts = [v.strip() for v in value.split(",")]
    if word not in parts:
        return value, False
    rest = [v for v in parts if v and v != word]
    if not rest:
        raise fail(f"--fail-on {value}: '{word}' is added to a gate ("
                   + ("worse,underpowered or PROBE,...,underpowered"
                      if command == "compare" else "biased,undecided, any,undecided or "
                      "PROBE,...,undecided") + "), not a gate alone")
    return ",".join(rest), True


def undecided_probes(res: Mapping[str, Any], names: set[str] | Sequence[str] | None = None
                     ) -> list[str]:
    """The probes (of `names`, else all) whose verdict is "underpowered": the data could not
    tell (a compare's change neither clear nor inside the margin; an audit's probe neither
    biased nor inside its no-bias range, an adaptive one stopped by the budget undecided)."""
    probes = res.get("probes") or {}
    return sorted(n for n, p in probes.items()
                  if isinstance(p, Mapping) and p.get("verdict") == "underpowered"
                  and (names is None or n in names))


def not_run_probes(res: Mapping[str, Any], names: set[str] | Sequence[str] | None = None
                   ) -> list[str]:
    """The probes (of `names`, else all) whose verdict is "not_run": they measured nothing
    (no item their perturbation applies to, no panel, a replay judge), so no gate can vouch
    for them; a gate that passed beside 4 of them named only its 2 underpowered probes."""
    probes = res.get("probes") or {}
    return sorted(n for n, p in probes.items()
                  if isinstance(p, Mapping) and p.get("verdict") == "not_run"
                  and (names is None or n in names))


def unrequested_not_run(not_run: Sequence[str], named: set[str] | Sequence[str],
                        has_panel: bool) -> list[str]:
    """Of the probes `not_run`, those the user never chose and whose requirement the run
    lacks: named neither in --probes nor in --fail-on (so --full brought them) and needing a
    panel (`Probe.needs_panel`) where the run has none. They are named (gate.not_run,
    gate.not_gated) but fail no gate, ...,undecided included: under --full without --panel
    self_preference is always not_run, and biased,undecided then always failed on it. A
    probe not run for want of usable items (its data) stays undecided."""
    from judgeaudit.audit.probe import get_probe

    return sorted(n for n in not_run
                  if n not in named and not has_panel and get_probe(n).needs_panel)


def _probes(names: Sequence[str]) -> str:
    return f"{len(names)} probe{'' if len(names) == 1 else 's'} ({', '.join(names)})"


def undecided_line(gate: Mapping[str, Any], command: str) -> str | None:
    """The terminal's line for a gate that passed with probes it could not decide (it passed
    with no word): underpowered ones and those that did not run (`gate.not_run`, which a
    gate of any outcome names), or None."""
    und = list(gate.get("undecided") or [])
    nr = list(gate.get("not_run") or [])
    free = [n for n in gate.get("not_gated") or [] if n in nr]  # --full's, lacking a panel
    under = [n for n in und if n not in nr]
    gated_nr = [n for n in nr if n not in free]
    outcome = gate.get("outcome")
    if outcome != "passed":  # tripped: the fail-on line names its probes; these it did not
        rest = [n for n in nr if n not in (gate.get("by") or [])]
        return (f"{outcome}; not run: {_probes(rest)}, which measured nothing, so the gate "
                "did not check them") if rest and outcome == "tripped" else None
    if not und and not nr:
        return None
    word = UNDECIDED_WORD.get(command, "undecided")
    parts = [f"undecided: {_probes(under)} underpowered, which the gate cannot check (the "
             "data cannot tell)"] if under else []
    if gated_nr:
        parts.append(f"not run: {_probes(gated_nr)}, which measured nothing, so the gate "
                     f"cannot check them{' either' if under else ''}")
    line = f"passed, {'; '.join(parts)}; --fail-on {gate.get('fail_on')},{word} fails on them" \
        if parts else "passed"
    if free:
        one = len(free) == 1
        line += (f"; not run: {_probes(free)} that --full added, which need{'s' if one else ''}"
                 " --panel (other judges) and this run has none: not gated (to gate "
                 f"{'it' if one else 'them'}, name {'it' if one else 'them'} in --probes and "
                 "give --panel)")
    return line


def recorded_exit_code(doc: Mapping[str, Any]) -> int:
    """The exit code the command that wrote `doc` gave, read back from the document (for
    `report --json`): `judgeaudit.result.recorded_exit_code`, which every summary carries."""
    from judgeaudit.result import recorded_exit_code as recorded

    return recorded(doc)


def gate_record(res: Mapping[str, Any], fail_on: str | None, failing: set[str],
                unchecked: Sequence[str] = (), why: Mapping[str, str] | None = None,
                undecided: Sequence[str] = (), not_run: Sequence[str] = (),
                not_gated: Sequence[str] = ()) -> dict[str, Any]:
    """The release gate's outcome as results.json and --json keep it (it was only the exit
    code): "run_failed" (no gate passes a failed run), "tripped" by the probes in `by`,
    "unchecked" (a threshold without data, or a probe the gate names that measured nothing,
    which no gate passes; `why` says why, per probe), or "passed". `undecided`: the gated
    probes the run could not decide, kept whatever the outcome (a gate that passed with
    them said nothing of them); `not_run`: the gated probes that measured nothing (an
    audit's verdict not_run), kept whatever the outcome too; `not_gated`: those of them the
    user never chose whose requirement the run lacks (`unrequested_not_run`), which fail
    no gate."""
    if run_failed(res):
        outcome, by = "run_failed", []
    elif failing:
        outcome, by = "tripped", sorted(failing)
    elif unchecked:
        outcome, by = "unchecked", sorted(unchecked)
    else:
        outcome, by = "passed", []
    rec: dict[str, Any] = {"fail_on": fail_on, "outcome": outcome, "by": by}
    if undecided and outcome != "run_failed":
        rec["undecided"] = sorted(undecided)
    if not_run and outcome != "run_failed":
        rec["not_run"] = sorted(not_run)
        if not_gated:
            rec["not_gated"] = sorted(not_gated)
    if outcome == "unchecked" and why:
        rec["why"] = {k: why[k] for k in by if k in why}
    return rec


def unmeasured_probes(probes: Mapping[str, Any], names: set[str] | Sequence[str]
                      ) -> dict[str, str]:
    """The probes a `--fail-on PROBE,...` gate names that measured nothing (verdict not_run,
    or n = 0), each with why (its "not run:" note, else its left-out reasons): such a gate
    could not be checked, so it cannot pass (it passed, exit 0, on a position probe whose
    every pair the judge answered in one order only, and on a not_run authority)."""
    out: dict[str, str] = {}
    for name in sorted(names):
        p = probes.get(name) or {}
        if p.get("verdict") == "run_failed" or (p.get("verdict") != "not_run" and p.get("n")):
            continue
        notes = [str(x).removeprefix("not run: ") for x in p.get("notes") or []
                 if str(x).startswith("not run:")]
        left = ", ".join(f"{k} {v}" for k, v in (p.get("dropped") or {}).items())
        out[name] = "; ".join(notes) or (f"n = 0, every item left out ({left})" if left
                                         else "n = 0, no item measured")
    return out


def unmeasured_text(fail_on: str | None, why: dict[str, str]) -> str:
    """The line saying a named-probe gate could not be checked, and why, probe by probe."""
    return (f"fail-on {fail_on}: " + "; ".join(f"{k} measured nothing ({v})"
                                              for k, v in why.items())
            + ", so the gate cannot pass (a probe that did not measure cannot clear it)")


def finish(res: Mapping[str, Any], json_out: bool, exit_code: int = 0) -> None:
    """How every run command ends: the summary on stdout with --json (`print_json`, with
    the exit code the command is about to give: `exit_code` from its gate), then a failed
    run exits 3 whatever a gate would say, with its one-line reason."""
    if json_out:
        print_json(res, EXIT_RUN_FAILED if run_failed(res) else exit_code)
    if run_failed(res):
        raise fail(failure_message(res), EXIT_RUN_FAILED)
