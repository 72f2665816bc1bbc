"""`judgeaudit selfcheck`: run the planted-truth scenarios of `judgeaudit.selfcheck` on the
installed package and print a pass/fail table. `register(app)` adds the command to a typer
app (the main CLI calls it).

Exit codes: 0 every check passed, 1 a check failed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.table import Table
from rich.text import Text

from judgeaudit.cli.progress import console
from judgeaudit.cli.runner import JsonOpt
from judgeaudit.cli.terminal import json_line

if TYPE_CHECKING:
    from judgeaudit.selfcheck import Check, Scenario, SelfCheckReport


def _table(report: SelfCheckReport) -> Table:
    t = Table(title="selfcheck: planted truths on simulated judges", title_justify="left")
    for col in ("scenario", "check", "expected", "observed", "pass"):
        t.add_column(col)
    last = None
    for c in report.checks:
        t.add_row(c.scenario if c.scenario != last else "", c.check, c.expected, c.observed,
                  Text("PASS", "bold green") if c.passed else Text("FAIL", "bold red"))
        last = c.scenario
    return t


def selfcheck(json_out: JsonOpt = False) -> None:
    """Check the installed package against planted truths, with nothing but what it ships:
    each default audit probe must flag a simulated judge with its bias planted and stay quiet
    on one without; rank must recover a planted top-k despite a planted length bias;
    mitigate's intervals must cover a planted phi. Built-in data, simulated judges, no cache,
    fixed seeds; takes seconds. The table goes to stderr; exit 0 when every check passes, 1
    otherwise.

    Example: judgeaudit selfcheck --json"""
    import judgeaudit
    from judgeaudit.selfcheck import default_scenarios, run_selfcheck

    scenarios = default_scenarios()
    console.print(f"judgeaudit {judgeaudit.__version__} selfcheck: {len(scenarios)} scenarios "
                  f"(package at {judgeaudit.__path__[0]})", markup=False, highlight=False)

    def said(sc: Scenario, checks: list[Check]) -> None:
        bad = sum(not c.passed for c in checks)
        console.print(f"  {sc.name}: "
                      + (f"{bad} of {len(checks)} checks FAILED" if bad
                         else f"{len(checks)} checks passed"), markup=False, highlight=False)

    report = run_selfcheck(scenarios, on_scenario=said)
    console.print(_table(report))
    setups = {c.scenario: c.setup for c in report.checks if c.setup}
    for name, setup in setups.items():
        console.print(f"  {name}: {setup}", markup=False, highlight=False)
    n_bad = len(report.failed)
    console.print(f"{len(report.checks) - n_bad} of {len(report.checks)} checks passed in "
                  f"{report.seconds:.1f} s" + ("" if report.ok else f"; {n_bad} FAILED"),
                  markup=False, highlight=False)
    if json_out:  # with the exit code it gives, as every other --json (4465670)
        typer.echo(json_line({**report.as_dict(), "exit_code": 0 if report.ok else 1}))
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("selfcheck")(selfcheck)


__all__ = ["register", "selfcheck"]
