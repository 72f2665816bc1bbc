"""`judgeaudit scoring-bias`: how a rubric judge's scores move when its scoring prompt changes
(rubric order, score ids, a reference answer labelled with a score). `register(app)` adds the
command to a typer app (the main CLI calls it)."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from judgeaudit.cli.format import calls_text, est_ci
from judgeaudit.cli.progress import console
from judgeaudit.cli.runner import (
    checked,
    config_command,
    finish,
    run_command,
    write_outputs,
)
from judgeaudit.cli.terminal import styled
from judgeaudit.config import ScoringBiasConfig
from judgeaudit.outcome import run_failed

# judgeaudit.scoring.run.BY_CONSTRUCTION, not imported: that module loads numpy and scipy
# and the CLI imports this one at startup
BY_CONSTRUCTION = "by construction"


def results_table(res: dict[str, Any]) -> Table:
    """One row per template. `n` is the scores each number but the correlations uses (FP,
    MAD and shift over the items scored under both, when fewer: "12 (11 vs base)"); `n gold`
    is the items Spearman, Pearson and d Spearman use, those with a gold score too (the
    table said n 12 beside correlations over 11)."""
    t = Table(title=f"scoring-bias: {res.get('judge')} on {res.get('data')}")
    for col in ("template", "FP vs base", "MAD vs base", "shift", "Spearman", "Pearson",
                "d Spearman", "n", "n gold", "invalid", "1..5"):
        t.add_column(col, justify="left" if col == "template" else "right")
    for name, e in res["perturbations"].items():
        dist = e["distribution"]
        diff = (e.get("vs_baseline") or {}).get("spearman_diff")
        fixed = _by_construction(e)
        t.add_row(name + (" (vs repeat)" if name == "baseline" else ""),
                  *((fixed,) * 3 if fixed else (est_ci(e["fp"]), est_ci(e["mad"]),
                                                est_ci(e["shift"]))),
                  est_ci(e["spearman"]), est_ci(e["pearson"]),
                  est_ci(diff), _n_text(e), _n_gold_text(e, diff), str(e["n_invalid"]),
                  _dist_text(dist))
    return t


def _by_construction(e: dict[str, Any]) -> str | None:
    """'0 (by construction)' for the baseline row of a deterministic judge, whose repeat was
    not asked: '0.000' alone read as a measured 0 (with no interval, nothing says why)."""
    fp = e.get("fp")
    return ("0 (by construction)" if isinstance(fp, dict) and fp.get("method") == BY_CONSTRUCTION
            else None)


def _dist_text(dist: dict[str, int]) -> str:
    """Counts of 1..5, then any decimal scores as their own bins ("3.5:2"): rounding them
    in hid half points (1.5 and 2.5 both landed in 2)."""
    main = "/".join(str(dist.get(k, 0)) for k in ("1", "2", "3", "4", "5"))
    half = [f"{k}:{v}" for k, v in dist.items()
            if k != "invalid" and k not in ("1", "2", "3", "4", "5") and v]
    return main + (" + " + " ".join(half) if half else "")


def _multiplicity_lines(res: dict[str, Any]) -> list[str]:
    """Which templates move scores / change agreement with gold by the Holm-adjusted p over
    the run's templates (the table's raw intervals are per template: with 6 templates one
    of them excludes 0 by chance in about a quarter of runs)."""
    mult = res.get("multiplicity")
    if not isinstance(mult, dict):
        return []
    per = {n: e.get("tests") or {} for n, e in res["perturbations"].items()}
    lines = []
    for fam, what in (("shift", "move scores (shift"),
                      ("spearman_diff", "change agreement with gold (d Spearman")):
        m = (mult.get("m") or {}).get(fam) or 0
        if not m:
            continue
        sig = (mult.get("significant") or {}).get(fam) or []
        shown = ", ".join(
            f"{n} (p {per[n][fam]['p']:.3g}, adjusted {per[n][fam]['p_adjusted']:.3g})"
            for n in sig) or "none"
        lines.append(f"templates that {what}, {mult['tests'][fam]}; Holm over {m} "
                     f"template{'s' if m > 1 else ''}, alpha {mult['alpha']}): {shown}")
    return lines


def _repeat_lines(res: dict[str, Any]) -> list[str]:
    """Why the baseline row's repeat noise is 0 with no interval, where no repeat was asked
    (a deterministic judge given --repeats N scored once)."""
    noise = res.get("repeat_noise")
    if not isinstance(noise, dict) or not noise.get("by_construction"):
        return []
    asked = res.get("repeats_asked")
    return [f"{noise.get('note')} (--repeats {asked} asked)" if asked else str(noise.get("note"))]


def _n_of(est: Any) -> int | None:
    return est.get("n") if isinstance(est, dict) else None


def _n_text(e: dict[str, Any]) -> str:
    """The scored items; the pairs FP/MAD/shift compare, where fewer."""
    n, pairs = e["n"], _n_of(e.get("fp"))
    return f"{n} ({pairs} vs base)" if pairs is not None and pairs != n else str(n)


def _n_gold_text(e: dict[str, Any], diff: Any) -> str:
    """The items the correlations use; d Spearman's, where fewer."""
    n, nd = _n_of(e.get("spearman")), _n_of(diff)
    if n is None:
        return "-"
    return f"{n} (d {nd})" if nd is not None and nd != n else str(n)


def _left_out_lines(res: dict[str, Any], cfg: ScoringBiasConfig | None) -> list[str]:
    """What the table's n leave unsaid: items without a gold score (left out of every
    correlation) and templates that could not apply to some or all items (Ref-k rows of n 0
    and dashes, with no reason)."""
    lines: list[str] = []
    n_items, n_gold = res.get("n_items"), res.get("n_gold")
    if isinstance(n_items, int) and isinstance(n_gold, int) and n_gold < n_items:
        k = n_items - n_gold
        lines.append(f"{k} item{' has' if k == 1 else 's have'} no gold score (left out of the "
                     f"correlations: Spearman, Pearson and d Spearman use {n_gold} of "
                     f"{n_items}, column n gold)")
    none: list[str] = []
    for name, e in res["perturbations"].items():
        miss = e.get("n_missing") or 0
        if not miss:
            continue
        if isinstance(n_items, int) and miss >= n_items:
            none.append(name)
        else:
            what = (f"Ref-{name[4:]} answer" if name.startswith("ref_")
                    else "input the template needs")
            lines.append(f"{name}: {miss} of {n_items} items have no {what} (left out of its "
                         "row)")
    if none:
        refs = cfg.references if cfg is not None else None
        if refs is not None:
            why = (f"--references {refs} has no such answer for these items and the data has "
                   "no level-k answers")
        elif cfg is not None and cfg.generate_references:
            why = ("--generate-references gave no accepted answer at these levels (see "
                   "references.json) and the data has no level-k answers")
        else:
            why = ("no --references given and the data has no level-k answers"
                   + (" (nor the reference answer ref_5 uses)" if "ref_5" in none else "")
                   + "; add them with --references FILE or --generate-references")
        ks = [f"ref_{k}" for k in range(1, 6)]
        shown = (f"{none[0]}..{none[-1]}" if len(none) > 2 and " ".join(none) in " ".join(ks)
                 else ", ".join(none))
        lines.append(f"{shown}: not run on any item (n 0): {why}")
    return lines


def expected_table(res: dict[str, Any]) -> Table | None:
    """Probability-weighted scores, where the judge gave probabilities."""
    rows = [(n, e["expected"]) for n, e in res["perturbations"].items() if e.get("expected")]
    if not rows:
        return None
    t = Table(title="probability-weighted score E[score] = sum k p(k)")
    for col in ("template", "mean", "shift vs base", "MAD vs base", "Spearman", "Pearson"):
        t.add_column(col, justify="left" if col == "template" else "right")
    for name, x in rows:
        t.add_row(name, f"{x['mean']:.3f}", est_ci(x["shift_vs_baseline"]),
                  est_ci(x["mad_vs_baseline"]), est_ci(x["spearman"]), est_ci(x["pearson"]))
    return t


@config_command(ScoringBiasConfig)
def scoring_bias(cfg: ScoringBiasConfig, json_out: bool) -> None:
    """Score the same responses under the baseline scoring prompt and perturbed prompts;
    report flip rate, MAD, correlation with gold, score distributions, the reference pull, the
    most accurate template and whether averaging helps. Writes results.json and report.html.
    Exit 3 when the run scored too little (--min-valid scores with a valid value, at most
    --max-failed of the calls failed or of the answers unreadable).

    Example: judgeaudit scoring-bias --judge 'sim?order_bias=0.5&ref_pull=0.3' --data
    builtin:graded --limit 10 --out out/scoring-bias"""
    from judgeaudit.commands import prepare_scoring_bias
    res = run_command(cfg, checked(lambda: prepare_scoring_bias(
        cfg, references_out=cfg.out / "references.json", cli=True)))
    path, report = write_outputs(cfg.out, res)
    if not run_failed(res):  # a failed run's numbers are no result
        _print_results(res, cfg)
    console.print(f"{calls_text(res)}\nresults: {path}\nreport: {report}")
    finish(res, json_out)


def _print_results(res: dict[str, Any], cfg: ScoringBiasConfig | None = None) -> None:
    for w in res.get("warnings") or []:
        console.print(styled("warning:", "bold yellow", w))
    console.print(results_table(res))
    for line in _repeat_lines(res) + _multiplicity_lines(res) + _left_out_lines(res, cfg):
        console.print(line, highlight=False)
    et = expected_table(res)
    if et is not None:
        console.print(et)
    rec = res.get("recommended")
    if rec:
        console.print(f"recommended template: {rec['template']} (Spearman "
                      f"{est_ci(rec['spearman'])})" + ("" if rec["clearly_better"] else
                                                   "; " + "; ".join(rec["notes"])))
    if res.get("reference_pull_note"):
        console.print(f"reference pull: - ({res['reference_pull_note']})", highlight=False)
    elif res.get("reference_pull"):
        pull = res["reference_pull"]
        console.print(f"reference pull (slope toward the reference's score): {est_ci(pull)}")


def register(app: typer.Typer) -> None:
    """Add `scoring-bias` to ``app``."""
    app.command("scoring-bias")(scoring_bias)


__all__ = ["register", "results_table", "scoring_bias"]
