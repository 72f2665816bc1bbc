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
from judgeaudit.textfile import visible

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
    # one line in a log file or a pipe (it was cut at the console's width mid-word, and a
    # grep for the message missed it); a terminal wraps it itself
    # (a server's message or a model's answer quoted in it: its acting characters shown)
    console.print(f"[bold red]error:[/] {escape(visible(mask_secrets(msg)))}",
                  soft_wrap=not console.is_terminal)
    LAST_ERROR["msg"] = mask_secrets(msg)
    return typer.Exit(code)


class CallClock:
    """The pace of the calls sent to a model (`Progress.made`), apart from the answers that
    came from the cache: those finish at once, and a speed and ETA over all of them read
    '15394.9/s, eta 0:00:01' with minutes of real calls left. The clock starts at the first
    sent call after the bar began; the ETA assumes every call left is sent."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self.base: int | None = None  # calls sent before this bar's task began
        self.first: tuple[float, int] | None = None  # (time, calls sent) at the first one
        self.sent = 0

    def note(self, made: int | None) -> None:
        if made is None:
            return
        if self.base is None:
            self.base = made
        if self.first is None and made > self.base:
            self.first = (self._clock(), made)
        self.sent = made

    def rate(self) -> float | None:
        """Calls sent per second since the first one, or None before two were sent."""
        if self.first is None or self.sent - self.first[1] < 1:
            return None
        el = self._clock() - self.first[0]
        return (self.sent - self.first[1]) / el if el > 0 else None

    def eta(self, left: float) -> float | None:
        r = self.rate()
        return None if r is None or left < 0 else left / r


class RateColumn(ProgressColumn):
    """Calls sent per second where the session says (`CallClock`), else the bar's speed."""

    def render(self, task: Task) -> Text:
        clock = task.fields.get("clock")
        speed = clock.rate() if isinstance(clock, CallClock) and clock.base is not None else (
            task.finished_speed or task.speed)
        return Text(f"{speed:.1f}/s" if speed else "-/s", style="progress.data.speed")


class EtaColumn(ProgressColumn):
    """Time left at the pace of the calls sent (`CallClock`), else rich's estimate."""

    def __init__(self) -> None:
        super().__init__()
        self._rich = TimeRemainingColumn()

    def render(self, task: Task) -> Text:
        clock = task.fields.get("clock")
        if not isinstance(clock, CallClock) or clock.base is None:
            return self._rich.render(task)
        if task.total is None:
            return Text("-:--:--", style="progress.remaining")
        eta = clock.eta(task.total - task.completed)
        if eta is None:
            return Text("-:--:--", style="progress.remaining")
        m, sec = divmod(int(eta), 60)
        h, m = divmod(m, 60)
        return Text(f"{h}:{m:02d}:{sec:02d}", style="progress.remaining")


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
        self.calls = CallClock(clock)

    def note_made(self, made: int | None) -> None:
        self.calls.note(made)

    def line(self) -> str:
        el = self._clock() - self.start
        rate = self.done / el if el > 0 else 0.0
        left = self.total - self.done
        if self.calls.base is not None:  # the pace of the calls sent, not of cache hits
            rate = self.calls.rate() or 0.0
            secs = self.calls.eta(left)
            eta = "-" if secs is None else f"{secs:.0f} s"
        else:
            eta = f"{left / rate:.0f} s" if rate > 0 and left >= 0 else "-"
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
        self.calls = CallClock()
        prog.update(task, clock=self.calls)

    def note_made(self, made: int | None) -> None:
        self.calls.note(made)

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
            EtaColumn(), console=console, transient=False)
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
