"""`judgeaudit rank` (live bias-aware top-k ranking with any judge) and `judgeaudit rank-eval`
(offline evaluation of acquisition rules and models against a full verdict matrix).

`register(app)` adds both commands to a typer app (the main CLI calls it).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
import typer
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from judgeaudit.cli.progress import RateColumn, console, fail, progress_bar
from judgeaudit.cli.runner import (
    MAX_FAILED,
    MIN_VALID,
    MaxFailedOpt,
    MinValidOpt,
    check_out_dir,
    exit_if_failed,
    positive,
    positive_float,
    run_async,
)
from judgeaudit.data.spec import public_spec

T = TypeVar("T")

ITEMS_HELP = ("Pool SPEC: builtin:controlled[?seed=0&n=30&k=5&topic=moon] | jsonl:PATH (one "
              '{"id", "prompt", "response", "quality"?, numeric fields...} per line)')
COV_HELP = ("Covariates the judge may be biased on, comma-separated: length (log words), "
            "markdown, authority, confidence, sentiment, self, injection, words (z-scored "
            "word count), or a numeric field of the items; 'none' for a plain model. "
            "Covariates constant over the pool are left out (and reported).")


LAM_HELP = ("Prior precision of theta (theta ~ N(0, 1/lam)), or 'auto': learned per pool by "
            "empirical Bayes, so the prior matches how far apart the judge puts the items.")


def _parse_lam(text: str) -> tuple[float, bool]:
    """'auto' -> (1.0 start, EB on); a positive number -> (it, EB off)."""
    if text.strip().lower() == "auto":
        return 1.0, True
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v > 0:
        raise fail(f"--lam: expected 'auto' or a positive number, got {text!r}")
    return v, False


def _int_list(text: str, what: str) -> list[int]:
    try:
        vals = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise fail(f"{what}: expected comma-separated integers, got {text!r}") from None
    if not vals:
        raise fail(f"{what}: empty")
    return vals


def parse_seeds(text: str) -> list[int]:
    """'30' -> 0..29; '3-7' -> 3..7; '0,4,9' -> those."""
    t = text.strip()
    try:
        if "," in t:
            return [int(x) for x in t.split(",") if x.strip()]
        if "-" in t[1:]:
            a, b = t.split("-", 1)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError
            return list(range(lo, hi + 1))
        n = int(t)
        if n < 1:
            raise ValueError
        return list(range(n))
    except ValueError:
        raise fail(f"--seeds: expected a count (30), a range (0-29) or a list (0,4,9), got "
                    f"{text!r}") from None


def _positive_number(what: str) -> Callable[[float], float]:
    """A typer callback refusing numbers <= 0 (a prior standard deviation)."""

    def check(v: float) -> float:
        if not v > 0:
            raise typer.BadParameter(f"{what}: expected a number > 0, got {v}")
        return v

    return check


ConcOpt = Annotated[int | None, typer.Option(help="Concurrent judge calls (>= 1).",
                                              callback=positive("--concurrency"))]
TauOpt = Annotated[float, typer.Option(help="Prior sd of c and kappa (> 0).",
                                       callback=_positive_number("--tau"))]
RefitOpt = Annotated[int, typer.Option(help="Refit after this many comparisons (>= 1).",
                                       callback=positive("--refit-every"))]
SamplesOpt = Annotated[int, typer.Option(help="Monte-Carlo draws for top-k membership (>= 1).",
                                         callback=positive("--samples"))]


def _run(make: Callable[[], Awaitable[T]], store: Any) -> T:
    """The pipeline through the CLI runner (Ctrl-C: exit 130; a fatal call: exit 3); a
    ValueError from it is bad input (exit 2)."""
    try:
        return run_async(make, cache_path=store and str(store.path))
    except ValueError as exc:
        raise fail(str(exc)) from None


def _check_rules(rules: list[str]) -> None:
    from judgeaudit.rank.acquisition import RULES

    bad = [r for r in rules if r not in RULES]
    if bad:
        raise fail(f"unknown rule(s) {', '.join(bad)}; expected one of {', '.join(RULES)}")


def _fmt_iv(d: dict) -> str:
    s = f"{d['estimate']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]"
    if "planted" in d:
        s += f"  planted {d['planted']:+.3f}"
        if "covered" in d:
            s += " (covered)" if d["covered"] else " (NOT covered)"
    return s


def _topk_table(pool: Any, fit: Any, k: int, membership: np.ndarray, done: int, budget: int,
                invalid: int) -> Table:
    from judgeaudit.rank.membership import topk_set_grouped

    t = Table(title=f"current top-{k} after {done}/{budget} comparisons"
              + (f" ({invalid} invalid)" if invalid else ""), title_justify="left")
    t.add_column("id")
    t.add_column("theta", justify="right")
    t.add_column("P(top-k)", justify="right")
    top = topk_set_grouped(fit.theta, k, pool.groups)
    for i in sorted(top, key=lambda i: -fit.theta[i])[:12]:
        t.add_row(pool.items[i].id, f"{fit.theta[i]:+.2f}", f"{membership[i]:.2f}")
    return t


def register(app: typer.Typer) -> None:
    """Add `rank` and `rank-eval` to ``app``."""
    app.command("rank")(rank)
    app.command("rank-eval")(rank_eval_cmd)


# ---- rank ----------------------------------------------------------------------------------

def rank(
    judge: Annotated[str, typer.Option("--judge", "-j", help=(
        "Judge SPEC: local | local:qwen-0.5b | openai:MODEL?base_url=URL | anthropic:MODEL | "
        "replay:PATH?... | sim?length=1&position=0.3"))] = "local",
    items: Annotated[str, typer.Option("--items", help=ITEMS_HELP)] = "builtin:controlled",
    k: Annotated[int | None, typer.Option(help="Size of the top set (default: the pool's, "
                                               "else 5).", callback=positive("--k"))] = None,
    budget: Annotated[int, typer.Option(help="Judge calls (comparisons) to spend.",
                                        callback=positive("--budget"))] = 120,
    rule: Annotated[str, typer.Option(help="Acquisition rule: topk | global | roundrobin | "
                                           "random | entropy | uncertainty_only | "
                                           "outcome_only.")] = "topk",
    covariates: Annotated[str | None, typer.Option(help=COV_HELP)] = None,
    model: Annotated[str, typer.Option(help="Model driving acquisition and the reported "
                                            "ranking: bias_aware | naive.")] = "bias_aware",
    trusted: Annotated[Path | None, typer.Option(help=(
        "Trusted labels (JSONL {\"better\": ID, \"worse\": ID} or CSV better,worse): the "
        "bias correction is used if it agrees with them clearly better than the naive "
        "ranking, or, when they cannot tell the two apart, only if a bias term's 95% "
        "interval excludes 0 and they do not lean towards the naive ranking (results.json "
        "gate.reason says which)."))] = None,
    out: Annotated[Path, typer.Option(help="Output directory for results.json.")] = Path(
        "out/rank"),
    seed: int = 0,
    lam: Annotated[str, typer.Option(help=LAM_HELP)] = "auto",
    tau: TauOpt = 1.0,
    hierarchical: Annotated[bool, typer.Option(help="Learn tau by empirical Bayes.")] = False,
    refit_every: RefitOpt = 8,
    samples: SamplesOpt = 1500,
    concurrency: ConcOpt = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds per call (> 0).",
                                                  callback=positive_float)] = None,
    cache: Annotated[Path | None, typer.Option(
        help="SQLite cache file (default: $JUDGEAUDIT_CACHE or the user cache).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the cache.")] = False,
    min_valid: MinValidOpt = MIN_VALID,
    max_failed: MaxFailedOpt = MAX_FAILED,
) -> None:
    """Find the top-k of a pool with a judge under a comparison budget, correcting for the
    judge's covariate and position biases (bias-aware Bayesian Bradley-Terry, top-k-aware
    active comparisons). Exit 3 when the run judged too little (--min-valid comparisons with
    a valid verdict, at most --max-failed of the calls failed)."""
    from judgeaudit.cli.runner import make_judge, open_cache
    from judgeaudit.data.registry import DataError
    from judgeaudit.rank.gate import anchor_gate
    from judgeaudit.rank.live import max_budget, planted_biases, rank_live
    from judgeaudit.rank.loop import MODELS
    from judgeaudit.rank.membership import recall_grouped
    from judgeaudit.rank.pool import load_pool, load_trusted, parse_covariates
    from judgeaudit.rank.summary import gate_summary, model_summary, ranking
    from judgeaudit.report import write_results

    _check_rules([rule])
    lam_v, eb = _parse_lam(lam)
    if model not in MODELS:
        raise fail(f"--model: expected one of {', '.join(MODELS)}, got {model!r}")
    try:
        pool = load_pool(items)
        names = parse_covariates(covariates)
        pool.covariates(names)  # validate names early
        trusted_rows = load_trusted(trusted, pool) if trusted else None
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    k = k or pool.k or 5
    if not 0 < k < pool.n_items:
        raise fail(f"--k must be in 1..{pool.n_items - 1} for this pool, got {k}")
    if not 0 < budget <= max_budget(pool):
        raise fail(f"--budget must be in 1..{max_budget(pool)} (every comparable pair in "
                    f"both orders) for this pool, got {budget}")
    check_out_dir(out)
    store = open_cache(cache, no_cache)
    bundle = make_judge(judge, store, concurrency=concurrency, timeout=timeout, seed=seed)

    progress = Progress(SpinnerColumn(), TextColumn("[bold]ranking"), BarColumn(),
                        MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(),
                        TextColumn("eta"), TimeRemainingColumn(), console=console)
    task = progress.add_task("ranking", total=budget)
    state = {"invalid": 0}

    def on_call(v: Any) -> None:
        state["invalid"] += int(v.invalid)
        progress.advance(task)

    t0 = time.time()
    with Live(progress, console=console, refresh_per_second=8, transient=False) as live:

        def on_batch(done: int, fit: Any, ctx: Any) -> None:
            live.update(Group(progress, _topk_table(pool, fit, k, ctx.membership, done, budget,
                                                    state["invalid"])))

        async def go() -> Any:
            try:
                return await rank_live(bundle, pool, k=k, budget=budget, rule=rule,
                                       covariates=names, model=model, seed=seed, lam=lam_v,
                                       eb_lam=eb, tau=tau, hierarchical=hierarchical,
                                       refit_every=refit_every, n_samples=samples,
                                       on_batch=on_batch, on_call=on_call,
                                       min_valid=min_valid, max_failed=max_failed)
            finally:
                await bundle.aclose()

        run = _run(go, store)
    console.print()
    res = run.result
    fits = {"naive": res.naive, "bias_aware": res.bias_aware}
    gate = anchor_gate(res.naive, res.bias_aware, trusted_rows,
                       names=[c.name for c in run.covariates]) if trusted_rows is not None \
        else None
    chosen = ("bias_aware" if gate.enabled else "naive") if gate else model
    final = fits[chosen]
    tpl = bundle.pairwise.template
    planted = planted_biases(bundle, [c.name for c in run.covariates])
    doc: dict[str, Any] = {
        "command": "rank", "schema": "judgeaudit.rank/1",
        "judge": bundle.public_spec, "items": items, "pool": pool.meta,
        "n_items": pool.n_items, "n_groups": pool.n_groups,
        "config": {"k": k, "budget": budget, "rule": rule, "model": model, "seed": seed,
                   "lam": lam, "lam_final": {m: f.lam for m, f in fits.items()}, "tau": tau,
                   "hierarchical": hierarchical,
                   "refit_every": refit_every, "samples": samples,
                   "ties": "a tie or an invalid verdict counts as half a win for each side"},
        "template": {"name": getattr(tpl, "name", None), "sha256": getattr(tpl, "sha256", None)},
        "covariates": [{"name": c.name, "source": c.source, "mean": c.mean, "sd": c.sd}
                       for c in run.covariates],
        "covariates_dropped": run.dropped,
        "reported_model": chosen,
        "ranking": ranking(pool, final, k, run.X, run.covariates, res.comparisons, samples,
                           seed),
        "models": {m: model_summary(pool, f, k, run.covariates, planted)
                   for m, f in fits.items()},
        "planted": planted,
        "gate": gate_summary(gate) if gate else None,
        "comparisons": [dict(v.as_dict(pool), step=i) for i, v in enumerate(run.verdicts)],
        "n_comparisons": len(run.verdicts), "n_invalid": run.n_invalid, "n_ties": run.n_ties,
        "calls": bundle.client.stats.as_dict(), "run": run.run, "seconds": time.time() - t0,
    }
    if pool.has_quality:
        true = pool.true_topk(k)
        doc["recall"] = {m: recall_grouped(f.theta, true, k, pool.groups)
                         for m, f in fits.items()}
        doc["true_topk"] = [pool.items[i].id for i in true]
        doc["true_topk_ambiguous"] = bool(pool.ambiguous_topk(k))
    path = write_results(out / "results.json", doc)
    if (run.run or {}).get("status") != "failed":  # a failed run's ranking is no result
        _print_rank(doc, k)
    _print_rank_calls(doc)
    console.print(f"results: {path}")
    exit_if_failed(doc)


def _print_rank(doc: dict, k: int) -> None:
    t = Table(title=f"ranking ({doc['reported_model']} model), top-{k} marked",
              title_justify="left")
    for col in ("rank", "id", "theta [95%]", "P(top-k)"):
        t.add_column(col, justify="left" if col == "id" else "right")
    has_q = any("quality" in r for r in doc["ranking"])
    if has_q:
        t.add_column("quality", justify="right")
    for r in doc["ranking"][: max(2 * k, 10)]:
        row = [str(r["rank"]) + ("*" if r["in_topk"] else ""), r["id"],
               f"{r['theta']:+.2f} [{r['lo']:+.2f}, {r['hi']:+.2f}]", f"{r['p_topk']:.2f}"]
        if has_q:
            row.append(f"{r.get('quality', float('nan')):g}")
        t.add_row(*row)
    console.print(t)
    ba = doc["models"]["bias_aware"]
    for name, d in ba["c"].items():
        console.print(escape(f"c[{name}] = {_fmt_iv(d)}  (per SD "
                             f"{d['per_sd']['estimate']:+.3f})"))
    console.print(f"kappa (position, first shown) = {_fmt_iv(ba['kappa'])}")
    if doc["covariates_dropped"]:
        console.print(f"left out (constant over the pool): {', '.join(doc['covariates_dropped'])}")
    if doc.get("gate"):
        g = doc["gate"]
        console.print(escape(f"gate: correction {g['decision'].upper()} "
                             f"({g['n_trusted']} trusted pairs): {g['reason']}"))
    console.print(f"top-{k} naive: {', '.join(doc['models']['naive']['topk'])}")
    console.print(f"top-{k} bias-aware: {', '.join(ba['topk'])}")
    if "recall" in doc:
        console.print("recall@k vs true quality: " + ", ".join(
            f"{m} {v:.2f}" for m, v in doc["recall"].items()))


def _print_rank_calls(doc: dict) -> None:
    c = doc["calls"]
    console.print(f"{doc['n_comparisons']} comparisons ({doc['n_invalid']} invalid, "
                  f"{doc['n_ties']} ties); calls: {c['made']} made, {c['cached']} from cache, "
                  f"{c['failed']} failed; {doc['seconds']:.1f} s")


# ---- rank-eval -----------------------------------------------------------------------------

def _with_param(spec: str, key: str, value: int) -> str:
    return spec + ("&" if "?" in spec else "?") + f"{key}={value}"


def _plan(items: str, oracle: str, seeds: list[int]) -> tuple[list[tuple[int, str, str]], bool,
                                                                bool]:
    """(seed, pool spec, judge spec) per seed: `builtin:controlled` without a seed draws a
    pool per seed; a `sim` judge without a seed draws fresh verdicts per seed."""
    from judgeaudit.data.spec import parse_spec

    isp = None if items.strip().endswith(".jsonl") else parse_spec(items)
    jsp = parse_spec(oracle)
    pool_per_seed = bool(isp and isp.kind == "builtin" and "seed" not in isp.params)
    judge_per_seed = jsp.kind == "sim" and "seed" not in jsp.params
    plan = [(s, _with_param(items, "seed", s) if pool_per_seed else items,
             _with_param(oracle, "seed", s) if judge_per_seed else oracle) for s in seeds]
    return plan, pool_per_seed, judge_per_seed


def _summarise_estimates(per_matrix: list[dict], names: list[str]) -> tuple[dict, dict]:
    """Across matrices: mean estimate and mean interval bounds, their sd, and the coverage of
    planted values where known."""
    def agg(rows: list[dict]) -> dict:
        est = np.array([r["estimate"] for r in rows])
        d = {"estimate": float(est.mean()), "lo": float(np.mean([r["lo"] for r in rows])),
             "hi": float(np.mean([r["hi"] for r in rows])), "n": len(rows),
             "sd": float(est.std(ddof=1)) if len(rows) > 1 else None}
        if rows and all("planted" in r for r in rows):
            d["planted"] = rows[0]["planted"]
            d["coverage"] = float(np.mean([r["covered"] for r in rows]))
        return d

    c = {n: agg([m["c"][n] for m in per_matrix]) for n in names}
    kappa = agg([m["kappa"] for m in per_matrix])
    return c, kappa


def rank_eval_cmd(
    oracle: Annotated[str, typer.Option("--oracle", "-j", help=(
        "Judge SPEC used as oracle: its full ordered-pair verdict matrix is built once "
        "(cached) and replayed for every rule and seed. sim?length=1&position=0.3 plants "
        "known biases (fresh draws per seed unless the spec sets seed=)."))] = "sim",
    items: Annotated[str, typer.Option("--items", help=ITEMS_HELP + "; builtin:controlled "
                                       "without ?seed= draws a new pool per seed.")] =
        "builtin:controlled",
    k: Annotated[int | None, typer.Option(help="Top-k size (default: the pool's, else 5).",
                                          callback=positive("--k"))] = None,
    budgets: Annotated[str, typer.Option(help="Comma-separated budgets.")] = "60,120,200",
    rules: Annotated[str, typer.Option(help="Comma-separated acquisition rules.")] =
        "topk,global,roundrobin,random",
    seeds: Annotated[str, typer.Option(help="Seeds: a count (30), a range (0-29) or a list "
                                            "(0,4,9).")] = "10",
    covariates: Annotated[str | None, typer.Option(help=COV_HELP)] = None,
    out: Annotated[Path, typer.Option(help="Output directory for results.json.")] = Path(
        "out/rank-eval"),
    lam: Annotated[str, typer.Option(help=LAM_HELP)] = "auto",
    tau: TauOpt = 1.0,
    hierarchical: Annotated[bool, typer.Option(help="Learn tau by empirical Bayes.")] = False,
    refit_every: RefitOpt = 8,
    samples: SamplesOpt = 1500,
    concurrency: ConcOpt = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds per call (> 0).",
                                                  callback=positive_float)] = None,
    cache: Annotated[Path | None, typer.Option(help="SQLite cache file.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the cache.")] = False,
    min_valid: MinValidOpt = MIN_VALID,
    max_failed: MaxFailedOpt = MAX_FAILED,
) -> None:
    """Evaluate acquisition rules x models offline: recall@k against budget over seeds, with
    paired tests, full-data recall and the judge's estimated biases with intervals. Exit 3
    when building the verdict matrices judged too little (--min-valid valid verdicts, at most
    --max-failed of the calls failed); the rules are then not evaluated."""
    from judgeaudit.cli.runner import make_judge, open_cache
    from judgeaudit.data.registry import DataError
    from judgeaudit.rank.evaluate import EvalCase, rank_eval
    from judgeaudit.rank.fitting import fit_model
    from judgeaudit.rank.live import full_matrix, max_budget, ordered_pairs, planted_biases
    from judgeaudit.rank.loop import MODELS
    from judgeaudit.rank.membership import recall_grouped
    from judgeaudit.rank.pool import load_pool, parse_covariates
    from judgeaudit.rank.summary import covariate_estimates, kappa_estimate
    from judgeaudit.report import write_results
    from judgeaudit.report.outcome import assess, sum_calls

    budget_list = sorted(set(_int_list(budgets, "--budgets")))
    lam_v, eb = _parse_lam(lam)
    rule_list = [r.strip() for r in rules.split(",") if r.strip()]
    _check_rules(rule_list)
    seed_list = parse_seeds(seeds)
    try:
        names = parse_covariates(covariates)
        plan, pool_per_seed, judge_per_seed = _plan(items, oracle, seed_list)
        pools = {spec: load_pool(spec) for spec in dict.fromkeys(p for _, p, _ in plan)}
        for pool in pools.values():
            pool.quality  # noqa: B018 - raises a clear error when quality is unknown
            pool.covariates(names)
    except (DataError, ValueError) as exc:
        raise fail(str(exc)) from None
    first_pool = next(iter(pools.values()))
    k = k or first_pool.k or 5
    for spec, pool in pools.items():
        if not 0 < k < pool.n_items:
            raise fail(f"--k must be below the pool size ({pool.n_items}) of {spec}")
        if budget_list[-1] > max_budget(pool) or budget_list[0] < 1:
            raise fail(f"--budgets must be in 1..{max_budget(pool)} for {spec}")
    # covariates constant in every pool carry no information: leave them out
    sds = {n: max(ci.sd for p in pools.values() for ci in p.covariates([n])[1]) for n in names}
    dropped = [n for n in names if sds[n] == 0.0]
    kept = [n for n in names if sds[n] > 0.0]
    check_out_dir(out)
    store = open_cache(cache, no_cache)
    bundles = {js: make_judge(js, store, concurrency=concurrency, timeout=timeout)
               for js in dict.fromkeys(j for _, _, j in plan)}
    jobs = list(dict.fromkeys((p, j) for _, p, j in plan))
    n_calls = sum(len(ordered_pairs(pools[p])) for p, _ in jobs)
    console.print(f"{len(jobs)} verdict matri{'x' if len(jobs) == 1 else 'ces'} "
                  f"({n_calls} judge calls, cached); {len(seed_list)} seeds x "
                  f"{len(MODELS)} models x {len(rule_list)} rules up to B = {budget_list[-1]}")
    t0 = time.time()

    async def build() -> dict:
        out_m = {}
        try:
            with progress_bar("judging all ordered pairs", n_calls) as advance:
                for p, j in jobs:
                    out_m[p, j] = await full_matrix(bundles[j], pools[p],
                                                    on_done=lambda _v: advance())
        finally:
            for b in bundles.values():
                await b.aclose()
        return out_m

    matrices = _run(build, store)
    calls = sum_calls([b.client.stats.as_dict() for b in bundles.values()])
    run = assess(n_valid=sum(m.n_valid for m in matrices.values()),
                 n_planned=sum(len(m.verdicts) for m in matrices.values()), calls=calls,
                 min_valid=min_valid, max_failed=max_failed, what="comparisons")
    doc: dict[str, Any] = {
        "command": "rank-eval", "schema": "judgeaudit.rank_eval/2",
        "oracle": (bundles[plan[0][2]].public_spec if len(bundles) == 1
                   else public_spec(oracle)),
        "items": items, "k": k, "budgets": budget_list, "rules": rule_list, "seeds": seed_list,
        "models": list(MODELS), "covariates": kept, "covariates_dropped": dropped,
        "pool_per_seed": pool_per_seed, "judge_per_seed": judge_per_seed,
    }
    if run["status"] == "failed":  # no verdicts to evaluate the rules on
        doc.update(n_invalid=sum(m.n_invalid for m in matrices.values()), calls=calls, run=run,
                   seconds=time.time() - t0)
        path = write_results(out / "results.json", doc)
        _print_eval_calls(doc)
        console.print(f"results: {path}")
        exit_if_failed(doc)

    per_matrix = []
    for (p, j), mat in matrices.items():
        pool = pools[p]
        X, info = pool.covariates(kept)
        comps = mat.comparisons()
        true = pool.true_topk(k)
        fb = fit_model("bias_aware", pool.n_items, comps, X=X if kept else None, lam=lam_v,
                       tau=tau, hierarchical=hierarchical, eb_lam=eb)
        fn = fit_model("naive", pool.n_items, comps, lam=lam_v, eb_lam=eb)
        planted = planted_biases(bundles[j], kept)
        per_matrix.append({
            "items": p, "oracle": bundles[j].public_spec, "n_comparisons": int(len(comps)),
            "n_invalid": mat.n_invalid, "n_ties": mat.n_ties,
            "c": covariate_estimates(fb, info, planted["c"] if planted else None),
            "kappa": kappa_estimate(fb, planted["kappa"] if planted else None),
            "full_data": {"naive": recall_grouped(fn.theta, true, k, pool.groups),
                          "bias_aware": recall_grouped(fb.theta, true, k, pool.groups)},
            "planted": planted, "true_topk_ambiguous": bool(pool.ambiguous_topk(k)),
            "lam": {"naive": fn.lam, "bias_aware": fb.lam},
        })
    by_seed = {s: (p, j) for s, p, j in plan}

    def factory(seed: int) -> EvalCase:
        p, j = by_seed[seed]
        pool, mat = pools[p], matrices[p, j]
        X = pool.covariates(kept)[0] if kept else None
        return EvalCase(oracle=mat.oracle(), n_items=pool.n_items, k=k,
                        true_topk=pool.true_topk(k), X=X, full=mat.comparisons(),
                        name=f"{public_spec(j)}@{p}", groups=pool.groups)

    total_runs = len(seed_list) * len(MODELS) * len(rule_list)
    with progress_bar("evaluating rules x models x seeds", total_runs) as advance:
        res = rank_eval({public_spec(oracle): factory}, budget_list, rule_list, seed_list,
                        lam=lam_v, tau=tau, hierarchical=hierarchical, n_samples=samples,
                        refit_every=refit_every, on_run=advance, eb_lam=eb)
    res.pop("estimates", None)
    c_sum, kappa_sum = _summarise_estimates(per_matrix, kept)
    doc.update({
        "config": res["config"],
        "recall": res["recall"], "full_data": res["full_data"], "tests": res["tests"],
        "ablation": res.get("ablation"), "c": c_sum, "kappa": kappa_sum,
        "matrices": per_matrix, "cases": res["cases"],
        "n_invalid": sum(m["n_invalid"] for m in per_matrix),
        "calls": calls, "run": run, "seconds": time.time() - t0,
    })
    path = write_results(out / "results.json", doc)
    _print_eval(doc)
    _print_eval_calls(doc)
    console.print(f"results: {path}")
    exit_if_failed(doc)


def _print_eval(doc: dict) -> None:
    t = Table(title=f"recall@{doc['k']} (mean ± se over {len(doc['seeds'])} seeds)",
              title_justify="left")
    t.add_column("model")
    t.add_column("rule")
    for b in doc["budgets"]:
        t.add_column(f"B={b}", justify="right")
    for m, rules in doc["recall"].items():
        for rule, cells in rules.items():
            t.add_row(m, rule, *[f"{cells[b]['mean']:.3f} ± {cells[b]['se']:.3f}"
                                 if cells[b]['se'] is not None else f"{cells[b]['mean']:.3f}"
                                 for b in doc["budgets"]])
    console.print(t)
    console.print("full data: " + ", ".join(
        f"{m} {v['mean']:.3f}" for m, v in doc["full_data"].items()))
    for name, d in doc["c"].items():
        extra = f", coverage {d['coverage']:.2f}" if "coverage" in d else ""
        console.print(escape(f"c[{name}] = {_fmt_iv(d)}{extra}"))
    kd = doc["kappa"]
    console.print(f"kappa = {_fmt_iv(kd)}"
                  + (f", coverage {kd['coverage']:.2f}" if "coverage" in kd else ""))
    if doc["covariates_dropped"]:
        console.print(f"left out (constant): {', '.join(doc['covariates_dropped'])}")


def _print_eval_calls(doc: dict) -> None:
    c = doc["calls"]
    console.print(f"{doc['n_invalid']} invalid verdicts; calls: {c.get('made', 0)} made, "
                  f"{c.get('cached', 0)} from cache, {c.get('failed', 0)} failed; "
                  f"{doc['seconds']:.1f} s")
