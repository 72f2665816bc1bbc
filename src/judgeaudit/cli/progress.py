"""Rich progress bars with count, rate and ETA for every long loop."""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from judgeaudit.spec import mask_secrets

# Wide enough for the results tables when output is piped (rich assumes 80 columns then).
console = Console(stderr=True, width=None if sys.stderr.isatty() or os.environ.get("COLUMNS")
                  else 140)


# What finishes each progress bar on screen, newest last (`close_bars`).
_OPEN_BARS: list[Callable[[], None]] = []


def close_bars() -> None:
    """Finish the progress bars on screen (each prints its last line now), so that what is
    printed next comes after them: a failed run's error must be its last line, not a bar's."""
    while _OPEN_BARS:
        _OPEN_BARS.pop()()


# `judgeaudit -v`: errors also show the traceback of the exception being handled.
SHOW_TRACEBACKS = False


# The last error `fail` printed (masked), for --json on a usage error (`config_command`).
LAST_ERROR: dict[str, str | None] = {"msg": None, "json": None}


def fail(msg: str, code: int = 2) -> typer.Exit:
    """Print a CLI error on the console, after any progress bar, and return the exit to
    raise (code 2: bad input). Secrets in the message (URL userinfo, `api_key=...`) are
    masked: errors often quote a spec. Under -v, called while handling an exception, the
    traceback comes first (masked the same way)."""
    close_bars()
    if SHOW_TRACEBACKS and sys.exc_info()[0] is not None:
        console.print(escape(mask_secrets(traceback.format_exc().rstrip())), highlight=False)
    console.print(f"[bold red]error:[/] {escape(mask_secrets(msg))}")
    LAST_ERROR["msg"] = mask_secrets(msg)
    return typer.Exit(code)


class RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f}/s" if speed else "-/s", style="progress.data.speed")


class PlainBar:
    """Progress for a stderr that is not a terminal (a log file, CI): rich draws nothing
    there until the end, so a plain line (done/total, rate, elapsed, eta) is printed every
    `every` seconds ($JUDGEAUDIT_PROGRESS_EVERY, default 30) and once at the end."""

    def __init__(self, description: str, total: int, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.description, self.total, self.done = description, total, 0
        self.every = every if every is not None else float(
            os.environ.get("JUDGEAUDIT_PROGRESS_EVERY", "30"))
        self._clock = clock
        self.start = self._last = clock()

    def line(self) -> str:
        el = self._clock() - self.start
        rate = self.done / el if el > 0 else 0.0
        eta = (f"{(self.total - self.done) / rate:.0f} s" if rate > 0 and self.total >= self.done
               else "-")
        return (f"{self.description}: {self.done}/{self.total} ({rate:.2f}/s, "
                f"{el:.0f} s elapsed, eta {eta})")

    def add_total(self, n: int) -> None:
        self.total += n

    def settle(self) -> None:
        """The task ended with less work than planned (calls skipped, answers cached)."""
        self.total = self.done

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._clock() - self._last >= self.every:
            self._last = self._clock()
            console.print(self.line(), highlight=False)

    def close(self) -> None:
        console.print(self.line(), highlight=False)


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[..., None]]:
    """Yields an `advance()` callback; the bar shows done/total, rate, elapsed and ETA."""
    with growing_bar(description) as bar:
        bar.add_total(total)
        yield bar.advance


class GrowingBar:
    """A progress bar whose total grows as work is planned (audits plan calls per probe)."""

    def __init__(self, prog: Progress, task: int):
        self._prog, self._task = prog, task

    def add_total(self, n: int) -> None:
        t = self._prog.tasks[self._task]
        self._prog.update(self._task, total=(t.total or 0) + n)

    def advance(self, n: int = 1) -> None:
        self._prog.advance(self._task, n)

    def settle(self) -> None:
        """The task ended with less work than planned (rewrites skipped, a probe without
        items): the total becomes what was done, so the bar does not look cut short."""
        self._prog.update(self._task, total=self._prog.tasks[self._task].completed)


@contextmanager
def growing_bar(description: str) -> Iterator[GrowingBar | PlainBar]:
    """A rich bar on a terminal; plain lines (`PlainBar`) anywhere else."""
    if not console.is_terminal:
        bar = PlainBar(description, 0)
        finish = _once(bar.close)
    else:
        prog = Progress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
            MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(), TextColumn("eta"),
            TimeRemainingColumn(), console=console, transient=False)
        prog.start()
        bar, finish = GrowingBar(prog, prog.add_task(description, total=0)), _once(prog.stop)
    _OPEN_BARS.append(finish)
    try:
        yield bar
    finally:
        if finish in _OPEN_BARS:
            _OPEN_BARS.remove(finish)
        finish()


def _once(fn: Callable[[], None]) -> Callable[[], None]:
    """`fn`, made to run at most once (a bar is finished early by `close_bars`, or at the
    end of its block)."""
    done = False

    def run() -> None:
        nonlocal done
        if not done:
            done = True
            fn()

    return run
