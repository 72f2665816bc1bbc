"""`judgeaudit compare RUN_A RUN_B`: two audits of the same items (before and after a new judge
prompt, a new model version), probe by probe: the change in effect B - A with a 95% interval,
p and q, and a verdict (improved / worse / no change / underpowered). Writes results.json
(command "compare") and report.html to --out and prints a table. `register(app)` adds the
command to a typer app (the main CLI calls it).

Exit codes: 0 compared, 1 `--fail-on` tripped (a probe got worse), 2 bad input (no such
folder, not an audit result, audits of different data, bad options), 3 an input audit's run
failed (its message is printed; the comparison's results and report say so)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from judgeaudit.cli.progress import console, fail
from judgeaudit.cli.runner import (
    check_out_dir,
    config_command,
    finish,
    gate_record,
    write_outputs,
)
from judgeaudit.config import CompareConfig
from judgeaudit.report.outcome import EXIT_GATE

VERDICT_STYLE = {"improved": "bold green", "worse": "bold red", "no_change": "cyan",
                 "underpowered": "yellow"}


def _say(text: str) -> None:
    """A plain line: paths, specs and probe names are data, never rich markup."""
    console.print(text, markup=False, highlight=False)


def _eff(e: dict[str, Any] | None) -> str:
    e = e or {}
    v = e.get("value")
    if v is None:
        return "n/a"
    lo, hi = e.get("ci95") or [None, None]
    ci = "" if lo is None or hi is None else f" [{lo:+.3f}, {hi:+.3f}]"
    return f"{v:+.3f}{ci}"


def compare_table(res: dict[str, Any]) -> Table:
    """The comparison as a terminal table: each run's effect, the change with its interval,
    q, how it was compared (paired on n items, or unpaired) and the verdict."""
    ra, rb = res["runs"]["a"], res["runs"]["b"]
    t = Table(title=escape(f"compare A {ra.get('judge')} -> B {rb.get('judge')} on "
                           f"{res.get('data')} ({res.get('n_items')} items)"),
              title_justify="left")
    for col, just in [("probe", "left"), ("A effect [95% CI]", "right"),
                      ("B effect [95% CI]", "right"), ("change B-A [95% CI]", "right"),
                      ("q", "right"), ("compared", "left"), ("verdict", "left")]:
        t.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for name, p in res["probes"].items():
        q = p.get("q")
        how = (f"paired, n={p['items'].get('n_matched')}" if p["pairing"] == "paired"
               else "unpaired")
        v = p["verdict"]
        t.add_row(escape(name), _eff(p["a"]["effect"]), _eff(p["b"]["effect"]),
                  _eff(p["change"]), "n/a" if q is None else f"{q:.2g}", how,
                  f"[{VERDICT_STYLE.get(v, 'white')}]{escape(v.replace('_', ' '))}[/]")
    return t


def _parse_fail_on(value: str | None) -> tuple[str, set[str]]:
    if value is None:  # an empty value is refused below: it turned the gate off silently
        return "never", set()
    value = value.strip()
    if value == "worse":
        return "worse", set()
    names = {v.strip() for v in value.split(",") if v.strip()}
    if not names:
        raise fail("--fail-on: expected 'worse' or a comma-separated list of probe names")
    return "probes", names


def _same_place(out: Path, run: Path) -> bool:
    folder = run if run.is_dir() else run.parent
    try:
        return out.resolve() == folder.resolve()
    except OSError:
        return False


@config_command(CompareConfig)
def compare(cfg: CompareConfig, json_out: bool) -> None:
    """Compare two audits of the same items, probe by probe: the change in each bias (B - A)
    with a 95% interval, and whether it improved, got worse, did not change, or cannot tell.
    Items are paired by id when the results keep per-item values, else the two effects are
    compared unpaired (said in the output). --fail-on worse makes it a release gate.

    Example (audits of the same items before and after a change): judgeaudit compare out/audit
    out/audit-new --fail-on worse --out out/compare"""
    from judgeaudit.audit.compare import CompareError, check_same_data, load_audit
    from judgeaudit.audit.compare import compare as run_compare

    run_a, run_b, out = cfg.run_a, cfg.run_b, cfg.out
    mode, must_not = _parse_fail_on(cfg.fail_on)
    try:
        a, b = load_audit(run_a), load_audit(run_b)
        check_same_data(a, b)
    except CompareError as exc:
        raise fail(str(exc)) from None
    common = set(a["probes"]) & set(b["probes"])
    unknown = must_not - common
    if unknown:
        raise fail(f"--fail-on names probe(s) not in both audits: {', '.join(sorted(unknown))}"
                   f" (compared: {', '.join(sorted(common)) or 'none'})")
    for run in (run_a, run_b):
        if _same_place(out, run):
            raise fail(f"--out {out}: that is audit {run}'s folder; its results.json would be "
                       "overwritten (choose another --out)")
    check_out_dir(out)
    res = run_compare(a, b, a_path=str(run_a), b_path=str(run_b), alpha=cfg.alpha,
                      margin=cfg.margin, seed=cfg.seed)
    worse = set((res.get("summary") or {}).get("worse") or [])
    failing = {"never": set(), "worse": worse, "probes": worse & must_not}[mode]
    if mode != "never":  # in results.json and --json, not only in the exit code
        res["gate"] = gate_record(res, cfg.fail_on, failing)
    path, report = write_outputs(out, res)
    if res["run"]["status"] == "ok":
        if res["probes"]:
            console.print(compare_table(res))
        else:
            _say("no probe is in both audits: nothing to compare")
        s = res["summary"]
        if s["unpaired"]:
            _say(f"unpaired: {', '.join(s['unpaired'])} (results.json keeps no per-item values "
                 "for them; the change's interval combines the two runs' intervals as if "
                 "independent, usually wider than a paired one)")
        if s["paired"]:
            _say(f"paired by item id: {', '.join(s['paired'])}")
        for line in res.get("judge_differences") or []:
            _say(f"the same judge ran differently: {line}")
        for line in res.get("notes") or []:
            _say(line)
        for side, names in (("A", res["only_in_a"]), ("B", res["only_in_b"])):
            if names:
                _say(f"only in {side}, not compared: {', '.join(names)}")
        _say(f"{len(s['improved'])} improved, {len(s['worse'])} worse, "
             f"{len(s['no_change'])} no change, {len(s['underpowered'])} underpowered")
    _say(f"report: {report}")
    _say(f"results: {path}")
    finish(res, json_out)  # before the gate: no gate passes a failed run
    if failing:
        console.print(f"[bold red]fail-on:[/] {escape(', '.join(sorted(failing)))} got worse")
        raise typer.Exit(EXIT_GATE)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
