"""What every command does around its pipeline: build its Config from the options
(`settings`), check the output place before paying for a run, run the prepared command
(`judgeaudit.commands`, shared with the Python API) in a Session with progress bars and
Ctrl-C handled (finished calls are cached; exit 130 with how to resume) (`run_command`), and
finish with one outcome rule (exit 3 when a run judged too little).

Exit codes are documented in `judgeaudit.report.outcome`."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from judgeaudit.cli.progress import console, fail, growing_bar
from judgeaudit.config import (
    CACHE_HELP,
    CONC_HELP,
    NO_CACHE_HELP,
    SEED_HELP,
    TIMEOUT_HELP,
    CommandConfig,
    EvaluateConfig,
)
from judgeaudit.report.outcome import (
    DEFAULT_MAX_FAILED,
    DEFAULT_MIN_VALID,
    EXIT_INTERRUPTED,
    EXIT_RUN_FAILED,
)

if TYPE_CHECKING:
    from judgeaudit.session import Progress

T = TypeVar("T")
C = TypeVar("C", bound=CommandConfig)
log = logging.getLogger("judgeaudit.cli")


def _min_valid(v: int) -> int:
    if v < 1:
        raise typer.BadParameter(f"expected an integer >= 1, got {v}")
    return v


def _max_failed(v: float) -> float:
    if not 0.0 <= v <= 1.0:
        raise typer.BadParameter(f"expected a share in [0, 1], got {v}")
    return v


MinValidOpt = Annotated[int, typer.Option(
    "--min-valid", callback=_min_valid, help=EvaluateConfig.help("min_valid"))]
MaxFailedOpt = Annotated[float, typer.Option(
    "--max-failed", callback=_max_failed, help=EvaluateConfig.help("max_failed"))]
MIN_VALID = DEFAULT_MIN_VALID
MAX_FAILED = DEFAULT_MAX_FAILED


def positive(what: str) -> Callable[[Any], Any]:
    """A typer callback refusing values < 1 (None passes: the option's default applies)."""

    def check(v: Any) -> Any:
        if v is not None and v < 1:
            raise typer.BadParameter(f"{what}: expected an integer >= 1, got {v}")
        return v

    return check


def positive_float(v: float | None) -> float | None:
    if v is not None and not v > 0:
        raise typer.BadParameter(f"expected a number of seconds > 0, got {v}")
    return v


# Options every command that calls a judge has (help: `judgeaudit.config`).
CacheOpt = Annotated[Path | None, typer.Option("--cache", help=CACHE_HELP)]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help=NO_CACHE_HELP)]
ConcOpt = Annotated[int | None, typer.Option(help=CONC_HELP, callback=positive("--concurrency"))]
TimeoutOpt = Annotated[float | None, typer.Option(help=TIMEOUT_HELP, callback=positive_float)]
SeedOpt = Annotated[int, typer.Option(help=SEED_HELP)]


def open_unit(v: float) -> float:
    if not 0.0 < v < 1.0:
        raise typer.BadParameter(f"expected a level strictly between 0 and 1, got {v}")
    return v


def check_out_dir(out: Path) -> Path:
    """Refuse an output directory that cannot be written before any call is paid for: an
    existing file in its place, or a place without write permission."""
    if out.exists() and not out.is_dir():
        raise fail(f"--out {out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".judgeaudit-write-check-{os.getpid()}"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        raise fail(f"--out {out}: cannot write there ({exc.strerror or exc})") from None
    return out


def open_cache(cache: Path | None, no_cache: bool):  # -> Cache | None
    from judgeaudit.llm import Cache

    if no_cache:
        return None
    try:
        return Cache(cache)
    except (ValueError, OSError) as exc:  # not a database, a directory, no permission
        raise fail(f"--cache {cache or 'default'}: {exc}") from None


def settings(model: type[C], values: Mapping[str, Any], **renamed: Any) -> C:
    """The command's Config from its parsed options (`values`: the command's locals; other
    names are left out; `renamed`: fields whose option has another parameter name). The
    values were checked already: by the options' callbacks, `--config`'s validation and the
    command's `prepare_*`, which names the options in its messages."""
    given = {k: v for k, v in values.items() if k in model.model_fields}
    return model.model_construct(**{**given, **renamed})


@contextmanager
def session_bars() -> Iterator[Callable[[Progress], None]]:
    """A session progress callback drawing one bar per task (`growing_bar`), each closed
    when the next task starts; a bar's total grows as the pipeline plans its calls."""
    with ExitStack() as stack:
        st: dict[str, Any] = {"task": None, "bar": None, "done": 0, "total": 0}

        def on_progress(ev: Progress) -> None:
            if ev.task != st["task"]:
                stack.close()
                st.update(task=ev.task, bar=stack.enter_context(growing_bar(ev.task)), done=0,
                          total=0)
            if (ev.total or 0) > st["total"]:
                st["bar"].add_total(ev.total - st["total"])
                st["total"] = ev.total
            if ev.done > st["done"]:
                st["bar"].advance(ev.done - st["done"])
                st["done"] = ev.done

        yield on_progress


def checked(make: Callable[[], T]) -> T:
    """Bad input found by a command's checks (ValueError) exits 2 with its message."""
    try:
        return make()
    except ValueError as exc:
        raise fail(str(exc)) from None


def run_command(cfg: Any, run: Any,
                show: Callable[[], AbstractContextManager[Callable[[Progress], None]]] = (
                    session_bars)) -> dict[str, Any]:
    """A prepared command (`judgeaudit.commands.Run`) run the CLI's way: the output folder
    checked, a Session on the CLI's cache with progress bars (`show`: a context yielding the
    session's progress callback; default `session_bars`; under --plan-only its judges plan),
    the body through `run_async` (Ctrl-C: exit 130; a fatal call: exit 3; a ValueError: bad
    input, exit 2), the judges closed. Returns the results document."""
    from judgeaudit.cli.plan_cmd import active_planner
    from judgeaudit.session import Session

    check_out_dir(cfg.out)
    planner = active_planner()
    if planner is not None and cfg.no_cache:
        raise fail("--plan-only needs the cache (the answers are ingested into it): drop "
                   "--no-cache")
    store = open_cache(cfg.cache, cfg.no_cache)
    with show() as bars:
        sess = Session(cache=store if store is not None else False,
                       concurrency=getattr(cfg, "concurrency", None),
                       timeout=getattr(cfg, "timeout", None), seed=getattr(cfg, "seed", 0),
                       progress=bars,
                       planner=planner)

        async def go() -> dict[str, Any]:
            try:
                with sess.command():
                    return await run.body(sess)
            finally:
                await sess.aclose()

        return checked(lambda: run_async(go, cache_path=store and str(store.path)))


def run_async(make: Callable[[], Awaitable[T]], *, cache_path: str | None = None) -> T:
    """Run a pipeline. Ctrl-C: every finished call is already committed to the cache, so say
    so, say how to resume, and exit 130. A call that failed fatally (bad key, bad request)
    exits 3 with its message. Under `--plan-only` the plan is written after the pipeline and
    the command exits 0 here, before any results are written."""
    from judgeaudit.cli.plan_cmd import active_planner, finish_plan
    from judgeaudit.llm import CallFailed

    planner = active_planner()
    try:
        result = asyncio.run(make())  # type: ignore[arg-type]
    except KeyboardInterrupt:
        where = f" ({cache_path})" if cache_path else ""
        console.print(f"[bold yellow]interrupted:[/] finished calls are in the cache{where}; "
                      "run the same command again to resume (no finished call is made "
                      "twice)")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except CallFailed as exc:
        if planner is not None:
            finish_plan(planner, stopped=exc)
        raise fail(str(exc), EXIT_RUN_FAILED) from None
    except Exception as exc:
        # --plan-only: a pipeline may stop early without answers; the plan is what counts.
        if planner is not None and planner.n:
            finish_plan(planner, stopped=exc)
        raise
    if planner is not None:  # --plan-only: write the plan, not the results; exit 0
        finish_plan(planner)
    return result


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
    "--config", metavar="FILE.toml", is_eager=True, callback=_apply_config_file,
    help="Read the settings from a TOML file (keys: the option names with underscores, see "
         "`judgeaudit schema COMMAND`); options given here override the file.")]
JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print the result's summary as one JSON object on stdout (everything "
                   "else goes to stderr).")]


def write_outputs(out: Path, res: Mapping[str, Any]) -> tuple[Path, Path]:
    """Write `out`/results.json and the report.html built from it; their paths."""
    from judgeaudit.report import write_report, write_results

    path = write_results(out / "results.json", res)
    return path, write_report(path)


def json_summary(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What `--json` prints for a results document: the result's summary
    (`Result.summary()`); a comparison adds the probes' verdicts, the number of items and
    the improved / worse / no-change / underpowered / paired / unpaired lists."""
    from judgeaudit.result import Result

    summary = Result.from_document(doc).summary()
    if summary["command"] == "compare":
        s = doc.get("summary") or {}
        summary.update(n_items=doc.get("n_items"),
                       verdicts={k: p["verdict"] for k, p in (doc.get("probes") or {}).items()},
                       **{k: s[k] for k in ("improved", "worse", "no_change", "underpowered",
                                            "paired", "unpaired") if k in s})
    return summary


def print_json(doc: Mapping[str, Any]) -> None:
    """`--json`: one JSON object on stdout, `json_summary(doc)`; the human output stays on
    stderr."""
    typer.echo(json.dumps(json_summary(doc), ensure_ascii=False))


def finish(res: Mapping[str, Any], json_out: bool) -> None:
    """How every run command ends: the summary on stdout with --json (`print_json`), then
    exit 3 for a failed run (`exit_if_failed`)."""
    if json_out:
        print_json(res)
    exit_if_failed(res)


def failed(res: Mapping[str, Any]) -> bool:
    """Whether the run judged too little (its numbers are no result)."""
    return (res.get("run") or {}).get("status") == "failed"


def exit_if_failed(res: Mapping[str, Any]) -> None:
    """A failed run exits 3 whatever the gate says; its one-line reason is printed."""
    if failed(res):
        raise fail(str(res["run"].get("message")), EXIT_RUN_FAILED)
