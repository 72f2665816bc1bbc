"""The progress ETA is honest: a lower bound is shown as one, and a bar doing work reads a
pace, not 0/s. Driven by a fake clock (no timing).

A tester's local audit planned its calls probe by probe (total 60 -> 360 -> 420 -> 480): at
30 s it read "eta 36 s" and took 1018 s. rank-eval's evaluation (no model calls: the
session's count of calls sent never moves) read "(0.00/s, ... eta -)" for 8 minutes."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import Progress

from judgeaudit.cli import progress


def _plain(total: int = 0, growing: bool = False) -> tuple[progress.PlainBar, list[float]]:
    now = [0.0]
    return progress.PlainBar("auditing", total, every=1e9, clock=lambda: now[0],
                             growing=growing), now


def test_a_total_that_grows_while_work_is_under_way_gives_an_eta_that_is_a_lower_bound():
    bar, now = _plain()
    bar.note_made(0)
    bar.add_total(60)  # the baseline, planned before any work
    now[0] = 1.0
    bar.note_made(1)
    now[0] = 30.0
    bar.note_made(20)
    bar.advance(20)
    # nothing says more will come: the ETA of the 60 planned (19 calls in 29 s)
    assert bar.line() == "auditing: 20/60 (0.66/s, 30 s elapsed, eta 61 s)"
    now[0] = 61.0
    bar.note_made(55)
    bar.advance(35)
    bar.add_total(300)  # the probes' calls, planned as the audit reaches them
    line = bar.line()
    assert line == "auditing: 55/360 (0.90/s, 61 s elapsed, eta at least 339 s)"
    now[0] = 1018.0
    bar.note_made(480)
    bar.advance(425)
    bar.add_total(120)
    bar.settle()  # the task is over: its total is what it did
    assert bar.line().endswith("eta 0 s)")


def test_a_bar_known_to_grow_marks_its_eta_from_the_start():
    bar, now = _plain(growing=True)
    bar.note_made(0)
    bar.add_total(60)
    now[0] = 1.0
    bar.note_made(1)
    now[0] = 30.0
    bar.note_made(20)
    bar.advance(20)
    assert bar.line() == "auditing: 20/60 (0.66/s, 30 s elapsed, eta at least 61 s)"
    bar.settle()
    assert "at least" not in bar.line()


def test_work_without_model_calls_reads_its_own_pace_not_zero():
    """rank-eval's evaluation: the session counts calls (none are sent), one run every 5 s."""
    now = [0.0]
    bar = progress.PlainBar("evaluating rules x models x seeds", 80, every=1e9,
                            clock=lambda: now[0])
    bar.note_made(8700)  # the session's calls so far (the verdict matrices, before it)
    for _ in range(8):
        now[0] += 5.0
        bar.note_made(8700)
        bar.advance()
    # 8 runs in 40 s: 0.2/s; 72 left. What was done was no call, what is left might be:
    # a lower bound, not "-"
    assert bar.line() == ("evaluating rules x models x seeds: 8/80 (0.20/s, 40 s elapsed, "
                          "eta at least 360 s)")


def test_the_terminal_bar_says_the_same():
    """The rich columns (a terminal) go by the same rule: a pace while work is done without
    calls, and "≥" on an ETA that is a lower bound."""
    now = [0.0]
    prog = Progress(progress.RateColumn(), progress.EtaColumn(), get_time=lambda: now[0],
                    console=Console(file=io.StringIO()))
    bar = progress.GrowingBar(prog, prog.add_task("evaluating", total=0))
    bar.note_made(8700)
    bar.add_total(80)
    for _ in range(8):
        now[0] += 5.0
        bar.note_made(8700)
        bar.advance()
    task = prog.tasks[0]
    assert progress.RateColumn().render(task).plain == "0.2/s"
    assert progress.EtaColumn().render(task).plain == "≥0:06:00"
    # calls sent: their pace, a plain ETA (the total was fixed before work began)
    now2 = [0.0]
    prog2 = Progress(get_time=lambda: now2[0], console=Console(file=io.StringIO()))
    calls = progress.GrowingBar(prog2, prog2.add_task("judging", total=0))
    calls.calls = progress.CallClock(lambda: now2[0])
    prog2.update(0, clock=calls.calls)
    calls.note_made(0)
    calls.add_total(100)
    calls.advance(50)  # from the cache, at once
    assert progress.EtaColumn().render(prog2.tasks[0]).plain == "-:--:--"  # no pace yet
    now2[0] = 1.0
    calls.note_made(1)
    now2[0] = 11.0
    calls.note_made(6)
    calls.advance(6)
    assert progress.RateColumn().render(prog2.tasks[0]).plain == "0.5/s"
    assert progress.EtaColumn().render(prog2.tasks[0]).plain == "0:01:28"  # 44 left
    calls.add_total(50)  # grew while under way: a lower bound from now on
    assert progress.EtaColumn().render(prog2.tasks[0]).plain == "≥0:03:08"


def test_a_burst_of_cache_hits_gives_no_eta_rather_than_at_least_0_s():
    bar, now = _plain(360)
    bar.note_made(0)
    bar.advance(240)  # from the cache
    now[0] = 2.0  # the model loads; no call sent yet
    assert bar.line() == "auditing: 240/360 (120.00/s, 2 s elapsed, eta at least 1 s)"
    bar.advance(100)
    assert bar.line() == "auditing: 340/360 (170.00/s, 2 s elapsed, eta -)"
