"""`judgeaudit scoring-bias`: how a rubric judge's scores move when its scoring prompt changes
(rubric order, score ids, a reference answer labelled with a score). `register(app)` adds the
command to a typer app (the main CLI calls it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from judgeaudit.cli.format import est_ci
from judgeaudit.cli.progress import console, fail, progress_bar
from judgeaudit.cli.runner import (
    MAX_FAILED,
    MIN_VALID,
    ConfigFileOpt,
    JsonOpt,
    MaxFailedOpt,
    MinValidOpt,
    check_out_dir,
    exit_if_failed,
    positive,
    positive_float,
    print_json,
    run_async,
)

PERT_HELP = ("Comma-separated templates (baseline always runs): order_desc, order_random, "
             "ids_letters, ids_roman, ref_1..ref_5 (default: all).")


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


def _tolerance(v: int) -> int:
    if not 0 <= v <= 4:
        raise typer.BadParameter(f"expected a score distance 0-4, got {v}")
    return v


def scoring_bias(
    judge: Annotated[str, typer.Option("--judge", "-j", help=(
        "Judge SPEC: local | local:qwen-0.5b | openai:MODEL?base_url=URL | anthropic:MODEL | "
        "sim?order_bias=0.5&ref_pull=0.3"))] = "local",
    data: Annotated[str, typer.Option("--data", "-d", help=(
        "Pointwise data SPEC: builtin:graded | prometheus:PATH?set=mt_bench | "
        "summeval:PATH?aspect=coherence | jsonl:PATH"))] = "builtin:graded",
    perturbations: Annotated[str | None, typer.Option(help=PERT_HELP)] = None,
    ids: Annotated[list[str] | None, typer.Option(
        "--ids", help="Extra score-id scheme NAME=w,x,y,z,t (ids for scores 1..5); "
        "repeatable; runs as ids_NAME.")] = None,
    limit: Annotated[int | None, typer.Option(help="Use only the first N items (N >= 1).",
                                              callback=positive("--limit"))] = None,
    repeats: Annotated[int, typer.Option(callback=positive("--repeats"), help=(
        "Baseline scorings per item (>= 2 gives the repeat noise and a held-out repeat for "
        "the mitigation check; use 1 for a deterministic judge such as local)."))] = 3,
    references: Annotated[Path | None, typer.Option(help=(
        "Ref-k answers: a references.json written by --generate-references, or "
        "{item_id: {k: text}}. Without it Ref-5 is the dataset's reference and Ref-1..4 "
        "are skipped (builtin:graded uses its own level-k answers)."))] = None,
    generate_references: Annotated[bool, typer.Option(
        "--generate-references", help="Write Ref-1..4 by generation and review first.")] = False,
    generator: Annotated[str | None, typer.Option(
        help="Generator SPEC (default: --judge).")] = None,
    reviewer: Annotated[str | None, typer.Option(
        help="Reviewer SPEC (default: --judge).")] = None,
    ref_limit: Annotated[int | None, typer.Option(
        help="Generate references for the first N items only.",
        callback=positive("--ref-limit"))] = None,
    ref_attempts: Annotated[int, typer.Option(help="Generation attempts per Ref-k.",
                                              callback=positive("--ref-attempts"))] = 3,
    ref_tolerance: Annotated[int, typer.Option(
        help="Accept when |review score - k| <= this (0-4).", callback=_tolerance)] = 0,
    ref_max_tokens: Annotated[int, typer.Option(help="Generation budget (tokens).",
                                                callback=positive("--ref-max-tokens"))] = 160,
    ref_review: Annotated[str, typer.Option(help=(
        "score: accept when the reviewer scores the candidate k (+- --ref-tolerance); order: "
        "accept when the reviewer's scores put Ref-k strictly between the other levels (for "
        "reviewers that give every text the same score)."))] = "score",
    template: Annotated[str, typer.Option(help="Scoring template name or .txt path.")] = (
        "pointwise_scoring_v1"),
    out: Annotated[Path, typer.Option(help="Output directory (results.json, report.html).")] = (
        Path("out/scoring-bias")),
    seed: int = 0,
    concurrency: Annotated[int | None, typer.Option(help="Concurrent judge calls (>= 1).",
                                                    callback=positive("--concurrency"))] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds per call (> 0).",
                                                  callback=positive_float)] = None,
    cache: Annotated[Path | None, typer.Option(
        help="SQLite cache file (default: $JUDGEAUDIT_CACHE or the user cache).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the cache.")] = False,
    min_valid: MinValidOpt = MIN_VALID,
    max_failed: MaxFailedOpt = MAX_FAILED,
    config: ConfigFileOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Score the same responses under the baseline scoring prompt and perturbed prompts;
    report flip rate, MAD, correlation with gold, score distributions, the reference pull,
    the most accurate template and whether averaging helps. Writes results.json and
    report.html. Exit 3 when the run scored too little (--min-valid scores with a valid value,
    at most --max-failed of the calls failed).

    Example: judgeaudit scoring-bias --judge 'sim?order_bias=0.5&ref_pull=0.3' --data
    builtin:graded --limit 10 --out out/scoring-bias"""
    from judgeaudit.cli.runner import make_judge, open_cache
    from judgeaudit.data import DataError, load
    from judgeaudit.data.schema import PointwiseItem
    from judgeaudit.judges.pointwise import RubricJudge
    from judgeaudit.report import write_results
    from judgeaudit.report.html import write_report
    from judgeaudit.scoring.perturbations import resolve
    from judgeaudit.scoring.references import (
        ReferencePipeline,
        as_references,
        question_key,
        read_references,
        sibling_references,
        summarize,
        write_references,
    )
    from judgeaudit.scoring.run import n_calls, run_scoring_bias

    if ref_review not in ("score", "order"):
        raise fail(f"--ref-review: expected score or order, got {ref_review!r}")
    try:
        perts = resolve(perturbations.split(",") if perturbations else None, seed=seed,
                        id_maps=ids or ())
    except ValueError as exc:
        raise fail(str(exc)) from None
    try:
        loaded = load(data)
    except (DataError, ValueError, FileNotFoundError) as exc:
        raise fail(f"data {data!r}: {exc}") from None
    items = [it for it in loaded if isinstance(it, PointwiseItem)]
    siblings = sibling_references(items)  # from every item, before --limit
    if not items:
        raise fail(f"data {data!r} has no pointwise items (scoring-bias scores single "
                    "responses; pairwise data does not apply)")
    if limit is not None:
        items = items[:limit]
    refs: dict[str, dict[int, str]] = {}
    if references is not None:
        try:
            refs = read_references(references)
        except (OSError, ValueError) as exc:
            raise fail(f"--references: {exc}") from None
    elif not generate_references:
        refs = siblings
    check_out_dir(out)
    store = open_cache(cache, no_cache)
    bundles: dict[str, Any] = {}

    def bundle_for(spec: str) -> Any:
        if spec not in bundles:
            bundles[spec] = make_judge(spec, store, concurrency=concurrency, timeout=timeout,
                                        seed=seed)
        return bundles[spec]

    main = bundle_for(judge)
    if generate_references:  # every spec checked before any call
        bundle_for(generator or judge)
        bundle_for(reviewer or judge)
    try:
        rubric = RubricJudge(main.client, template)
    except ValueError as exc:
        raise fail(f"--template: {exc}") from None
    ref_info: dict[str, Any] | None = None

    async def go() -> dict[str, Any]:
        nonlocal refs, ref_info
        try:
            if generate_references:
                gen_b, rev_b = bundle_for(generator or judge), bundle_for(reviewer or judge)
                pipe = ReferencePipeline(gen_b.client, rev_b.client, max_attempts=ref_attempts,
                                         tolerance=ref_tolerance, max_tokens=ref_max_tokens,
                                         review=ref_review)
                subset = items[:ref_limit] if ref_limit else items
                n_q = len({question_key(it) for it in subset})  # one set per question
                with progress_bar("references", 2 * 4 * n_q * ref_attempts) as adv:
                    results = await pipe.run(subset, on_done=adv)
                info = {"generator": gen_b.public_spec, "reviewer": rev_b.public_spec,
                        "max_attempts": ref_attempts, "tolerance": ref_tolerance,
                        "review": ref_review,
                        "max_tokens": ref_max_tokens, "data": data}
                write_references(out / "references.json", results, info)
                refs = {**refs, **as_references(results)}
                ref_info = {**info, "summary": summarize(results),
                            "file": str(out / "references.json")}
            total = n_calls(items, perts, refs, repeats)
            with progress_bar("scoring", total) as adv:
                return await run_scoring_bias(rubric, items, perts, references=refs,
                                              repeats=repeats, seed=seed,
                                              judge_spec=main.public_spec, data_spec=data,
                                              on_done=adv, min_valid=min_valid,
                                              max_failed=max_failed)
        finally:
            for b in bundles.values():
                await b.aclose()

    try:
        res = run_async(go, cache_path=store and str(store.path))
    except ValueError as exc:
        raise fail(str(exc)) from None
    if ref_info is not None:
        res["references"] = ref_info
    path = write_results(out / "results.json", res)
    report = write_report(path)
    if (res.get("run") or {}).get("status") != "failed":  # a failed run's numbers: no result
        _print_results(res)
    c = res["calls"]
    console.print(f"calls: {c['made']} made, {c['cached']} from cache, {c['failed']} failed; "
                  f"{res['seconds']:.1f} s")
    console.print(f"results: {path}\nreport: {report}")
    if json_out:
        print_json(res)
    exit_if_failed(res)


def _print_results(res: dict[str, Any]) -> None:
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
