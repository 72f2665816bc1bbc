"""Rich progress bars with count, rate and ETA for every long loop."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
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

# Wide enough for the results tables when output is piped (rich assumes 80 columns then).
console = Console(stderr=True, width=None if sys.stderr.isatty() or os.environ.get("COLUMNS")
                  else 140)


def fail(msg: str, code: int = 2) -> typer.Exit:
    """Print a CLI error on the console and return the exit to raise (code 2: bad input)."""
    console.print(f"[bold red]error:[/] {msg}")
    return typer.Exit(code)


class RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:.1f}/s" if speed else "-/s", style="progress.data.speed")


@contextmanager
def progress_bar(description: str, total: int) -> Iterator[Callable[..., None]]:
    """Yields an `advance()` callback; the bar shows done/total, rate, elapsed and ETA."""
    with Progress(
        SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
        MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(), TextColumn("eta"),
        TimeRemainingColumn(), console=console, transient=False,
    ) as prog:
        task = prog.add_task(description, total=total)
        yield lambda n=1: prog.advance(task, n)


class GrowingBar:
    """A progress bar whose total grows as work is planned (audits plan calls per probe)."""

    def __init__(self, prog: Progress, task: int):
        self._prog, self._task = prog, task

    def add_total(self, n: int) -> None:
        t = self._prog.tasks[self._task]
        self._prog.update(self._task, total=(t.total or 0) + n)

    def advance(self, n: int = 1) -> None:
        self._prog.advance(self._task, n)


@contextmanager
def growing_bar(description: str) -> Iterator[GrowingBar]:
    with Progress(
        SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
        MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(), TextColumn("eta"),
        TimeRemainingColumn(), console=console, transient=False,
    ) as prog:
        yield GrowingBar(prog, prog.add_task(description, total=0))
