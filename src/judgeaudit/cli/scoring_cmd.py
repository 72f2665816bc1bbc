"""`judgeaudit scoring-bias`: how a rubric judge's scores move when its scoring prompt changes
(rubric order, score ids, a reference answer labelled with a score). `register(app)` adds the
command to a typer app (the main CLI calls it)."""

from __future__ import annotations

from typing import Any

import typer
from rich.markup import escape
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
from judgeaudit.config import ScoringBiasConfig
from judgeaudit.report.outcome import run_failed


def results_table(res: dict[str, Any]) -> Table:
    t = Table(title=f"scoring-bias: {res.get('judge')} on {res.get('data')}")
    for col in ("template", "FP vs base", "MAD vs base", "shift", "Spearman", "Pearson",
                "d Spearman", "n", "invalid", "1..5"):
        t.add_column(col, justify="left" if col == "template" else "right")
    for name, e in res["perturbations"].items():
        dist = e["distribution"]
        diff = (e.get("vs_baseline") or {}).get("spearman_diff")
        t.add_row(name + (" (vs repeat)" if name == "baseline" else ""), est_ci(e["fp"]),
                  est_ci(e["mad"]), est_ci(e["shift"]), est_ci(e["spearman"]), est_ci(e["pearson"]),
                  est_ci(diff), str(e["n"]), str(e["n_invalid"]),
                  "/".join(str(dist[k]) for k in ("1", "2", "3", "4", "5")))
    return t


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
        _print_results(res)
    console.print(f"{calls_text(res)}\nresults: {path}\nreport: {report}")
    finish(res, json_out)


def _print_results(res: dict[str, Any]) -> None:
    for w in res.get("warnings") or []:
        console.print(f"[bold yellow]warning:[/] {escape(w)}")
    console.print(results_table(res))
    et = expected_table(res)
    if et is not None:
        console.print(et)
    rec = res.get("recommended")
    if rec:
        console.print(f"recommended template: {rec['template']} (Spearman "
                      f"{est_ci(rec['spearman'])})" + ("" if rec["clearly_better"] else
                                                   "; " + "; ".join(rec["notes"])))
    if res.get("reference_pull"):
        console.print(f"reference pull (slope toward the reference's score): "
                      f"{est_ci(res['reference_pull'])}")


def register(app: typer.Typer) -> None:
    """Add `scoring-bias` to ``app``."""
    app.command("scoring-bias")(scoring_bias)


__all__ = ["register", "results_table", "scoring_bias"]
