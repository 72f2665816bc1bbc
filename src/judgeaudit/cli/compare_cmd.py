"""`judgeaudit compare RUN_A RUN_B`: two audits of the same items (before and after a new judge
prompt, a new model version), probe by probe: the change in effect B - A with a 95% interval,
p and q, and a verdict (improved / worse / no change / underpowered). Writes results.json
(command "compare") and report.html to --out and prints a table. `register(app)` adds the
command to a typer app (the main CLI calls it).

Exit codes: 0 compared, 1 `--fail-on` tripped (a probe got worse, or audit B lacks a probe
audit A ran and `--allow-missing` was not given), 2 bad input (no such folder, not an audit
result, audits of different data, bad options), 3 an input audit's run failed (its message is
printed; the comparison's results and report say so)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from judgeaudit.cli.progress import console, fail
from judgeaudit.cli.runner import (
    check_out_dir,
    config_command,
    finish,
    gate_record,
    split_undecided,
    undecided_line,
    undecided_probes,
    write_outputs,
)
from judgeaudit.cli.terminal import shown, styled
from judgeaudit.config import CompareConfig
from judgeaudit.outcome import EXIT_GATE
from judgeaudit.stats.tests import p_text
from judgeaudit.textfile import visible

VERDICT_STYLE = {"improved": "bold green", "worse": "bold red", "no_change": "cyan",
                 "underpowered": "yellow"}


def _say(text: str) -> None:
    """A plain line: paths, specs and probe names are data, never rich markup, and their
    acting characters show as escapes (`visible`: an ESC in a plugin's probe name or a
    folder's name recoloured the terminal)."""
    console.print(visible(text), markup=False, highlight=False)


def _cell(text: Any) -> str:
    """Untrusted text for the rich table: acting characters shown (`terminal.shown`; the
    console prints no markup)."""
    return shown(text)


def _eff(e: dict[str, Any] | None) -> str:
    e = e or {}
    v = e.get("value")
    if v is None:
        return "n/a"
    lo, hi = e.get("ci95") or [None, None]
    ci = "" if lo is None or hi is None else f" [{lo:+.3f}, {hi:+.3f}]"
    return f"{v:+.3f}{ci}"


def _left_out(p: dict[str, Any]) -> bool:
    items = p.get("items") or {}
    return bool(items.get("n_only_a") or items.get("n_only_b"))


def compare_table(res: dict[str, Any]) -> Table:
    """The comparison as a terminal table: each run's effect, the change with its interval,
    q, how it was compared (paired on n items, or unpaired), the items valid in one run only
    (when any are) and the verdict; the title says how the runs' items matched by id. Paired,
    the A and B effects are over the matched items, the change's items, so B - A of the
    columns is the change (each audit's own effect, over items the other did not judge too,
    did not add up to it); `own_lines` lists the own effects where they differ."""
    ra, rb = res["runs"]["a"], res["runs"]["b"]
    t = Table(title=_cell(f"compare A {ra.get('judge')} -> B {rb.get('judge')} on "
                           f"{res.get('data')} ({items_header(res)})"),
              title_justify="left")
    # items left out (valid in one run only): a column when any probe has them
    left_out = any(_left_out(p) for p in res["probes"].values())
    eff = "matched" if left_out else "effect"  # longer headers cut the change at 143 cols
    if left_out:
        t.caption = ("A and B matched: each audit's effect on the items matched by id (the "
                     "change's items, so B - A is the change); own items below")
        t.caption_justify = "left"
    cols = [("probe", "left"), (f"A {eff} [95% CI]", "right"), (f"B {eff} [95% CI]", "right"),
            ("change B-A [95% CI]", "right"), ("q", "right"), ("compared", "left"),
            *([("only A/B", "right")] if left_out else []), ("verdict", "left")]
    for col, just in cols:
        t.add_column(col, justify=just, no_wrap=True)  # type: ignore[arg-type]
    for name, p in res["probes"].items():
        q = p.get("q")
        paired = p["pairing"] == "paired"
        how = f"paired, n={p['items'].get('n_matched')}" if paired else "unpaired"
        only = (f"{p['items'].get('n_only_a')}/{p['items'].get('n_only_b')}" if paired
                else "n/a")
        v = p["verdict"]
        t.add_row(_cell(name), _eff(p["a"]["effect"]), _eff(p["b"]["effect"]),
                  _eff(p["change"]), p_text(q), how,
                  *([only] if left_out else []),
                  Text(_cell(v.replace("_", " ")), style=VERDICT_STYLE.get(v, "white")))
    return t


def own_lines(res: dict[str, Any]) -> list[str]:
    """For each paired probe with items judged in one audit only: each audit's own effect
    over all its items (n and interval), apart from the table's matched columns."""
    out = []
    for name, p in res["probes"].items():
        if p.get("pairing") != "paired" or not _left_out(p):
            continue
        parts = []
        for key in ("a", "b"):
            own = (p.get(key) or {}).get("own") or {}
            parts.append(f"{key.upper()} {_eff(own.get('effect'))} (n={own.get('n')})")
        out.append(f"{name}, each audit over all its own items (not the change's items): "
                   f"{', '.join(parts)}; the table's A and B are over the "
                   f"{p['items'].get('n_matched')} matched items")
    return out


def items_header(res: dict[str, Any]) -> str:
    """The items in the table's title: each run's count and, when items were matched by id,
    how many are in both runs and in one only (the title said "(40 items)" of two runs that
    shared 30)."""
    na, nb = res["runs"]["a"].get("n_items"), res["runs"]["b"].get("n_items")
    c = res.get("items")
    if not isinstance(c, dict):
        return f"{na} items" if na == nb else f"A {na} items, B {nb}"
    from judgeaudit.audit.compare import unused_text

    changed = (f", {c['n_changed']} with the same id but other content (left out)"
               if c.get("n_changed") else "")
    if not c.get("n_only_a") and not c.get("n_only_b") and not changed:
        # a probe that used no item in a run is not covered by "all matched" (`unused`)
        return f"{c.get('n_matched')} items, all matched by id{unused_text(c.get('unused'))}"
    return (f"A {c.get('a')} items, B {c.get('b')}: {c.get('n_matched')} matched by id, "
            f"{c.get('n_only_a')} only in A, {c.get('n_only_b')} only in B{changed}"
            f"{unused_text(c.get('unused'))}")


# audit's --fail-on outcomes, which compare's --fail-on does not take (it read them as probe
# names: "not in both audits ... audit A did not run them")
AUDIT_GATE_WORDS = frozenset({"biased", "flag", "any", "undecided", "not_biased"})
COMPARE_GATE_WORDS = ("worse (any probe got worse), a comma-separated list of probe names that "
                      "must not get worse, either with ',underpowered' to fail on undecided "
                      "probes too, or none")


def _parse_fail_on(value: str | None) -> tuple[str, set[str]]:
    if value is None or value.strip() == "none":  # none: turns off a config file's gate
        return "never", set()  # an empty value is refused below: it turned the gate off
    value = value.strip()
    if value == "worse":
        return "worse", set()
    names = {v.strip() for v in value.split(",") if v.strip()}
    if not names:
        raise fail("--fail-on: expected 'worse', a comma-separated list of probe names, or "
                   "none (no gate)")
    return "probes", names


def _same_place(out: Path, run: Path) -> bool:
    folder = run if run.is_dir() else run.parent
    try:
        return out.resolve() == folder.resolve()
    except OSError:
        return False


@config_command(CompareConfig)
def compare(cfg: CompareConfig, json_out: bool) -> None:
    """Compare two audits of the same data, probe by probe: the change in each bias (B - A)
    with a 95% interval, and whether it improved, got worse, did not change, or cannot tell.
    Items are matched by id when the results keep per-item values: each probe compares the
    items both audits judged, and those in one audit only are counted (audits of different
    --n or --seed compare on the items they share; different --data, or no item in common,
    exit 2). Without per-item values the two effects are compared unpaired (said in the
    output). --fail-on worse makes it a release gate: exit 1 when a probe got worse, and
    also when audit B (the candidate) lacks a probe audit A (the baseline) ran, unless
    --allow-missing; probes only in B are listed and never fail it.

    Example (audits of the same items before and after a change): judgeaudit compare out/audit
    out/audit-new --fail-on worse --out out/compare"""
    from judgeaudit.audit.compare import (
        CompareError,
        check_same_data,
        load_audit,
        missing_note,
        unused_probes,
    )
    from judgeaudit.audit.compare import compare as run_compare

    run_a, run_b, out, allow_missing = cfg.run_a, cfg.run_b, cfg.out, cfg.allow_missing
    gate_on, fail_undecided = split_undecided(cfg.fail_on, "compare")
    mode, must_not = _parse_fail_on(gate_on)
    if allow_missing and cfg.fail_on is None:  # (--fail-on none turns a gate off)
        raise fail("--allow-missing applies to a --fail-on gate; give --fail-on too (or leave "
                   "--allow-missing out)")
    try:
        a, b = load_audit(run_a), load_audit(run_b)
        check_same_data(a, b)
    except CompareError as exc:
        raise fail(str(exc)) from None
    common = set(a["probes"]) & set(b["probes"])
    unknown = must_not - set(a["probes"])
    words = sorted(unknown & AUDIT_GATE_WORDS)
    if words:  # an audit's outcome given to compare: say which ones compare takes
        raise fail(f"--fail-on {cfg.fail_on}: {', '.join(words)} is an outcome of audit's "
                   f"--fail-on; compare's takes {COMPARE_GATE_WORDS}")
    if unknown:
        from judgeaudit.audit.probe import did_you_mean, probe_names

        known = sorted({*a["probes"], *b["probes"], *probe_names()})
        bogus = sorted(u for u in unknown if u not in known)
        if bogus:  # a typo: no probe of that name at all
            raise fail(f"--fail-on names unknown probe(s): {', '.join(bogus)}"
                       f"{did_you_mean(bogus, known)} (compared: "
                       f"{', '.join(sorted(common)) or 'none'}; --fail-on takes "
                       f"{COMPARE_GATE_WORDS})")
        raise fail(f"--fail-on names probe(s) not in both audits: {', '.join(sorted(unknown))}"
                   f" (audit A, the baseline, did not run them; compared: "
                   f"{', '.join(sorted(common)) or 'none'})")
    for run in (run_a, run_b):
        if _same_place(out, run):
            raise fail(f"--out {out}: that is audit {run}'s folder; its results.json would be "
                       "overwritten (choose another --out)")
    check_out_dir(out)
    res = run_compare(a, b, a_path=str(run_a), b_path=str(run_b), alpha=cfg.alpha,
                      margin=cfg.margin, seed=cfg.seed)
    worse = set((res.get("summary") or {}).get("worse") or [])
    failing = {"never": set(), "worse": worse, "probes": worse & must_not}[mode]
    # a probe the baseline ran that the candidate lacks: its bias in B is unknown, so no gate
    # passes it (it passed with "only in A, not compared"), unless --allow-missing; a probe
    # the gate names fails it either way
    dropped = list(res.get("only_in_a") or [])
    missing = [] if mode == "never" else \
        [n for n in dropped if not allow_missing or n in must_not]
    # a probe the gate names that measured nothing in either run (n = 0, not run): its
    # change is unknown, so it fails the gate as a missing one does (it passed, exit 0)
    empty = unused_probes(a, b, sorted(must_not & common)) if mode == "probes" else {}
    # the gated probes the data could not decide (underpowered): said whatever the outcome,
    # and failing the gate with --fail-on ...,underpowered (they passed it silently)
    undecided = [] if mode == "never" or res["run"]["status"] != "ok" else \
        undecided_probes(res, must_not if mode == "probes" else None)
    if fail_undecided:
        failing = failing | set(undecided)
    if mode != "never":  # in results.json and --json, not only in the exit code
        res["gate"] = {**gate_record(res, cfg.fail_on, failing | set(missing) | set(empty),
                                     undecided=undecided),
                       "worse": sorted(failing - set(undecided)), "missing": missing,
                       **({"unmeasured": empty} if empty else {}),
                       "allow_missing": allow_missing}
    path, report = write_outputs(out, res)
    warned = list(res.get("warnings") or [])  # made by other methods: before any number
    for line in warned:
        console.print(styled("warning:", "bold yellow", visible(line)), highlight=False)
    if res["run"]["status"] == "ok":
        if res["probes"]:
            console.print(compare_table(res))
        else:
            _say("no probe is in both audits: nothing to compare")
        for line in own_lines(res):
            _say(line)
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
            if line not in warned:
                _say(line)
        if dropped:
            _say(f"only in A, not compared: {missing_note(dropped)}")
        if res["only_in_b"]:
            _say(f"only in B, not compared: {', '.join(res['only_in_b'])}")
        _say(f"{len(s['improved'])} improved, {len(s['worse'])} worse, "
             f"{len(s['no_change'])} no change, {len(s['underpowered'])} underpowered")
    _say(f"report: {report}")
    _say(f"results: {path}")
    if (line := undecided_line(res.get("gate") or {}, "compare")) is not None:
        console.print(styled("gate:", "bold yellow", line), highlight=False)
    finish(res, json_out, 1 if failing or missing or empty else 0)  # before the gate: no
    if failing:  # gate passes a failed run
        worse_ones = sorted(failing - set(undecided))
        said = [f"{', '.join(worse_ones)} got worse"] if worse_ones else []
        if fail_undecided and undecided:
            said.append(f"{', '.join(undecided)} underpowered (the data cannot tell whether "
                        "they changed; a larger --n in both audits can)")
        console.print(styled("fail-on:", "bold red", "; ".join(said)))
    if missing:
        console.print(styled("fail-on:", "bold red",
                             f"audit B lacks probe(s) audit A ran: {', '.join(missing)} "
                             "(their bias in B is unknown: re-run audit B with them"
                             + ("" if allow_missing else
                                ", or pass --allow-missing to gate on the probes both ran")
                             + ")"))
    if empty:
        console.print(styled("fail-on:", "bold red", "; ".join(
            f"{k} measured nothing in {v} ({_why_empty(a, b, k, v)})" for k, v in empty.items())
            + " (its change is unknown, so the gate cannot pass)"))
    if failing or missing or empty:
        raise typer.Exit(EXIT_GATE)


def _why_empty(a: dict[str, Any], b: dict[str, Any], name: str, sides: str) -> str:
    """Why a probe measured nothing in the runs `sides` ("A", "B", "A and B"): its "not
    run:" notes, else its left-out reasons, else n = 0."""
    from judgeaudit.cli.runner import unmeasured_probes

    parts = []
    for lab, doc in (("A", a), ("B", b)):
        if lab in sides.split(" and "):
            why = unmeasured_probes(doc.get("probes") or {}, [name]).get(name, "n = 0")
            parts.append(f"{lab}: {why}" if sides == "A and B" else why)
    return "; ".join(parts)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
