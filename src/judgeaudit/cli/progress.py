"""Rich progress bars with count, rate and ETA for every long loop."""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from judgeaudit.cli.terminal import SafeConsole, styled
from judgeaudit.spec import mask_secrets

# Off a terminal (a log file, CI) rich assumes 80 columns: the results tables are laid out
# in `PIPED_WIDTH` instead, wide enough that no cell is cut mid-number (a table is only as
# wide as its cells need); every other line is printed whole, never wrapped
# (`terminal.SafeConsole`). $COLUMNS, when set, is the width asked for.
# Markup off and acting characters shown (`terminal.SafeConsole`): data prints as written.
PIPED_WIDTH = 240
console = SafeConsole(stderr=True, width=None if sys.stderr.isatty() or os.environ.get("COLUMNS")
                      else PIPED_WIDTH)


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
        console.print(mask_secrets(traceback.format_exc().rstrip()), highlight=False)
    # one line in a log file or a pipe (it was cut at the console's width mid-word, and a
    # grep for the message missed it); a terminal wraps it itself
    # (a server's message or a model's answer quoted in it: its acting characters shown)
    console.print(styled("error:", "bold red", mask_secrets(msg)),
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


@dataclass(frozen=True)
class Pace:
    """What a bar says of its speed and time left. `at_least`: the ETA is a lower bound, so
    it is shown as one ("eta at least 36 s"), never as a promise."""

    rate: float | None  # work done per second; None before there is a pace to go by
    eta: float | None   # seconds left; None when unknown
    at_least: bool


def pace(done: float, total: float | None, own_rate: float | None,
         calls: CallClock | None = None, provisional: bool = False) -> Pace:
    """Speed and ETA of a bar that has done `done` of `total` at `own_rate` per second (its
    own pace, cache hits and all), counting the calls sent where the session says (`calls`).

    - Calls sent in this bar: their pace (`CallClock`), as answers from the cache finish at
      once.
    - A bar counting calls that has sent none (yet): its own pace, which is never 0/s while
      work is done (rank-eval's evaluation, which calls no model, read "0.00/s, eta -" for
      8 minutes); the ETA from it is a lower bound: what was done came from the cache or
      was no call, and what is left may be calls.
    - A `provisional` total (it grew while work was under way: an audit plans each probe's
      calls as it reaches it, 60 -> 360 -> 420 -> 480): the ETA covers the work planned so
      far, so it is a lower bound too (the tester's audit read "eta 36 s" at 30 s and took
      1018 s)."""
    lower = provisional
    rate = own_rate if own_rate and own_rate > 0 else None
    if calls is not None and calls.base is not None:
        sent = calls.rate()
        if sent is not None:
            rate = sent
        else:
            lower = True
    left = None if total is None else total - done
    if rate is None or left is None or left < 0:
        return Pace(rate, None, False)
    eta, lower = left / rate, lower and left > 0
    if lower and eta < 1:  # "at least 0 s" (a burst of cache hits) says nothing
        return Pace(rate, None, False)
    return Pace(rate, eta, lower)


class RateColumn(ProgressColumn):
    """Calls sent per second where the session says (`CallClock`), else the bar's speed."""

    def render(self, task: Task) -> Text:
        speed = _task_pace(task).rate
        return Text(f"{speed:.1f}/s" if speed else "-/s", style="progress.data.speed")


def _task_pace(task: Task) -> Pace:
    clock = task.fields.get("clock")
    own = task.finished_speed or task.speed
    if own is None and task.elapsed and task.completed:
        own = task.completed / task.elapsed
    return pace(task.completed, task.total, own, clock if isinstance(clock, CallClock)
                else None, bool(task.fields.get("provisional")))


class EtaColumn(ProgressColumn):
    """Time left (`pace`): at the pace of the calls sent where the session counts them,
    marked as a lower bound ("≥") where it is one."""

    def render(self, task: Task) -> Text:
        p = _task_pace(task)
        if p.eta is None:
            return Text("-:--:--", style="progress.remaining")
        m, sec = divmod(int(p.eta), 60)
        h, m = divmod(m, 60)
        return Text(f"{'≥' if p.at_least else ''}{h}:{m:02d}:{sec:02d}",
                    style="progress.remaining")


# Seconds after a plain bar began by which its first line is printed even with no total
# known yet (`PlainBar`).
FIRST_LINE_BY = 10.0


class PlainBar:
    """Progress for a stderr that is not a terminal (a log file, CI): rich draws nothing
    there until the end, so a plain line (done/total, rate, elapsed, eta) is printed every
    `every` seconds ($JUDGEAUDIT_PROGRESS_EVERY, default 30) and once at the end. The first
    line comes as soon as the first total is known or `first_by` seconds after the bar began
    (whichever is first; a 20k audit's first line came at 66 s): a log shows at once that
    work began and how much is planned, and says so when the total grows as work is
    planned."""

    def __init__(self, description: str, total: int, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic, growing: bool = False,
                 first_by: float = FIRST_LINE_BY):
        self.description, self.total, self.done = description, total, 0
        self.every = every if every is not None else float(
            os.environ.get("JUDGEAUDIT_PROGRESS_EVERY", "30"))
        self._clock = clock
        self.start = self._last = clock()
        self.first_by = first_by
        self._shown = False  # a line was printed (`_first`)
        self.calls = CallClock(clock)
        # The total may still grow (`pace`): said by whoever made the bar, or seen when it
        # grows after work began; `settle` ends it.
        self.provisional = growing

    def note_made(self, made: int | None) -> None:
        self.calls.note(made)
        self._first()

    def _first(self) -> None:
        """The first line, once the total is known or `first_by` seconds have passed."""
        if not self._shown and (self.total > 0 or self._clock() - self.start >= self.first_by):
            self._print(self.line() + ("; the total grows as work is planned"
                                       if self.provisional else ""))

    def _print(self, line: str) -> None:
        self._shown, self._last = True, self._clock()
        console.print(line, highlight=False)

    def line(self) -> str:
        el = self._clock() - self.start
        p = pace(self.done, self.total, self.done / el if el > 0 else None, self.calls,
                 self.provisional)
        rate = "-" if p.rate is None else f"{p.rate:.2f}"
        eta = "-" if p.eta is None else f"{'at least ' if p.at_least else ''}{p.eta:.0f} s"
        return (f"{self.description}: {self.done}/{self.total} ({rate}/s, "
                f"{el:.0f} s elapsed, eta {eta})")

    def add_total(self, n: int) -> None:
        if self.done > 0 and n > 0:  # more planned while work is under way: may grow again
            self.provisional = True
        self.total += n
        self._first()

    def may_grow(self) -> None:
        """The total is what has been planned so far, not all the work."""
        self.provisional = True

    def settle(self) -> None:
        """The task ended with less work than planned (calls skipped, answers cached)."""
        self.total = self.done
        self.provisional = False

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self._shown:
            self._first()
        elif self._clock() - self._last >= self.every:
            self._print(self.line())

    def close(self) -> None:
        self._print(self.line())


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
        if t.completed > 0 and n > 0:  # more planned while work is under way (`pace`)
            self.may_grow()
        self._prog.update(self._task, total=(t.total or 0) + n)

    def may_grow(self) -> None:
        """The total is what has been planned so far, not all the work: the ETA is shown
        as a lower bound until `settle`."""
        self._prog.update(self._task, provisional=True)

    def advance(self, n: int = 1) -> None:
        self._prog.advance(self._task, n)

    def settle(self) -> None:
        """The task ended with less work than planned (rewrites skipped, a probe without
        items): the total becomes what was done, so the bar does not look cut short."""
        self._prog.update(self._task, total=self._prog.tasks[self._task].completed,
                          provisional=False)


@contextmanager
def growing_bar(description: str, growing: bool = False) -> Iterator[GrowingBar | PlainBar]:
    """A rich bar on a terminal; plain lines (`PlainBar`) anywhere else. `growing`: its
    total is not known at the start (it grows as stages plan their calls), so its ETA is a
    lower bound until the bar settles."""
    if not console.is_terminal:
        bar: GrowingBar | PlainBar = PlainBar(description, 0, growing=growing)
        finish = _once(bar.close)
    else:
        prog = Progress(
            SpinnerColumn(), TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(), MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(), TextColumn("eta"),
            EtaColumn(), console=console, transient=False)
        prog.start()
        bar, finish = GrowingBar(prog, prog.add_task(description, total=0)), _once(prog.stop)
        if growing:
            bar.may_grow()
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
