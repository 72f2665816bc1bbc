"""`judgeaudit rank` (live bias-aware top-k ranking with any judge) and `judgeaudit rank-eval`
(offline evaluation of acquisition rules and models against a full verdict matrix).

Each command parses its options, checks them (`judgeaudit.rank.run.prepare_rank`,
`judgeaudit.rank.run_eval.prepare_rank_eval`), runs the pipeline the Python API runs
(`run_rank`, `run_rank_eval`) in a `judgeaudit.session.Session`, writes results.json and
report.html, prints the outcome and maps it to the exit code. `register(app)` adds both
commands to a typer app (the main CLI calls it).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

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

from judgeaudit.cli.progress import RateColumn, console, fail, growing_bar
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
from judgeaudit.config import COV_HELP, ITEMS_HELP, LAM_HELP
from judgeaudit.rank.run_eval import parse_seeds

if TYPE_CHECKING:
    from judgeaudit.session import Progress as ProgressEvent
    from judgeaudit.session import Session

T = TypeVar("T")



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
TimeoutOpt = Annotated[float | None, typer.Option(help="Seconds per call (> 0).",
                                                  callback=positive_float)]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not use the cache.")]
JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print the result's summary as one JSON object on stdout (everything else "
                   "goes to stderr).")]


# ---- shared steps ----------------------------------------------------------------------------

def _checked(make: Callable[[], T]) -> T:
    """Bad input from a pipeline's checks (ValueError) exits 2 with its message."""
    try:
        return make()
    except ValueError as exc:
        raise fail(str(exc)) from None


def _session(cache: Path | None, no_cache: bool, specs: list[str], *, seed: int = 0,
             concurrency: int | None = None, timeout: float | None = None,
             progress: Callable[[ProgressEvent], None] | None = None) -> Session:
    """A Session on the CLI's cache with the judges of `specs` made up front (a spec that
    cannot be made exits 2 before any call); under `--plan-only` their clients plan."""
    from judgeaudit.cli.plan_cmd import active_planner
    from judgeaudit.cli.runner import open_cache
    from judgeaudit.session import Session

    planner = active_planner()
    if planner is not None and no_cache:
        raise fail("--plan-only needs the cache (the answers are ingested into it): drop "
                   "--no-cache")
    store = open_cache(cache, no_cache)
    sess = Session(cache=store if store is not None else False, concurrency=concurrency,
                   timeout=timeout, seed=seed, progress=progress)
    for spec in specs:
        bundle = _checked(lambda spec=spec: sess.judge(spec))
        if planner is not None:  # --plan-only: cache misses are planned, not sent
            planner.bind(store)
            bundle.client.planner = planner
    return sess


def _run(sess: Session, body: Callable[[Session], Awaitable[T]]) -> T:
    """`body(sess)` through the CLI runner (Ctrl-C: exit 130; a fatal call: exit 3; under
    --plan-only the plan is written and the command exits 0), closing the session's judges;
    a ValueError from it is bad input (exit 2)."""

    async def go() -> T:
        try:
            with sess.command():
                return await body(sess)
        finally:
            await sess.aclose()

    cache = sess.cache
    try:
        return run_async(go, cache_path=cache and str(cache.path))
    except ValueError as exc:
        raise fail(str(exc)) from None


def _finish(doc: dict[str, Any], out: Path, as_json: bool,
            show: Callable[[dict[str, Any]], None]) -> None:
    """Write results.json and report.html, print the outcome (`show`), the summary as JSON
    on stdout with --json, and exit 3 for a failed run."""
    from judgeaudit.report import write_report, write_results
    from judgeaudit.result import Result

    path = write_results(out / "results.json", doc)
    show(doc)
    console.print(f"results: {path}")
    console.print(f"report: {write_report(path)}")
    if as_json:
        typer.echo(json.dumps(Result.from_document(doc).summary()))
    exit_if_failed(doc)


def _fmt_iv(d: dict) -> str:
    s = f"{d['estimate']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]"
    if "planted" in d:
        s += f"  planted {d['planted']:+.3f}"
        if "covered" in d:
            s += " (covered)" if d["covered"] else " (NOT covered)"
    return s


def register(app: typer.Typer) -> None:
    """Add `rank` and `rank-eval` to ``app``."""
    app.command("rank")(rank)
    app.command("rank-eval")(rank_eval_cmd)


# ---- rank ----------------------------------------------------------------------------------

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
        t.add_row(escape(pool.items[i].id), f"{fit.theta[i]:+.2f}", f"{membership[i]:.2f}")
    return t


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
    out: Annotated[Path, typer.Option(help="Output directory (results.json, report.html).")] = \
        Path("out/rank"),
    seed: int = 0,
    lam: Annotated[str, typer.Option(help=LAM_HELP)] = "auto",
    tau: TauOpt = 1.0,
    hierarchical: Annotated[bool, typer.Option(help="Learn tau by empirical Bayes.")] = False,
    refit_every: RefitOpt = 8,
    samples: SamplesOpt = 1500,
    concurrency: ConcOpt = None,
    timeout: TimeoutOpt = None,
    cache: Annotated[Path | None, typer.Option(
        help="SQLite cache file (default: $JUDGEAUDIT_CACHE or the user cache).")] = None,
    no_cache: NoCacheOpt = False,
    min_valid: MinValidOpt = MIN_VALID,
    max_failed: MaxFailedOpt = MAX_FAILED,
    as_json: JsonOpt = False,
) -> None:
    """Find the top-k of a pool with a judge under a comparison budget, correcting for the
    judge's covariate and position biases (bias-aware Bayesian Bradley-Terry, top-k-aware
    active comparisons). Exit 3 when the run judged too little (--min-valid comparisons with
    a valid verdict, at most --max-failed of the calls failed). With --plan-only each round
    of comparisons is planned in turn: ingest its answers and re-run for the next round."""
    from judgeaudit.rank.run import prepare_rank, run_rank

    inp = _checked(lambda: prepare_rank(
        items, k=k, budget=budget, rule=rule, covariates=covariates, model=model,
        trusted=trusted, seed=seed, lam=lam, tau=tau, hierarchical=hierarchical,
        refit_every=refit_every, samples=samples, min_valid=min_valid,
        max_failed=max_failed, cli=True))
    check_out_dir(out)
    sess = _session(cache, no_cache, [judge], seed=seed, concurrency=concurrency,
                    timeout=timeout)
    progress = Progress(SpinnerColumn(), TextColumn("[bold]ranking"), BarColumn(),
                        MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(),
                        TextColumn("eta"), TimeRemainingColumn(), console=console)
    task = progress.add_task("ranking", total=inp.budget)
    state = {"invalid": 0}

    def on_call(v: Any) -> None:
        state["invalid"] += int(v.invalid)
        progress.advance(task)

    with Live(progress, console=console, refresh_per_second=8, transient=False) as live:

        def on_batch(done: int, fit: Any, ctx: Any) -> None:
            live.update(Group(progress, _topk_table(inp.pool, fit, inp.k, ctx.membership,
                                                    done, inp.budget, state["invalid"])))

        doc = _run(sess, lambda s: run_rank(s, judge, inp, on_batch=on_batch,
                                            on_call=on_call))
    console.print()
    _finish(doc, out, as_json, _print_rank)


def _print_rank(doc: dict) -> None:
    if (doc.get("run") or {}).get("status") != "failed":  # a failed run's ranking is no result
        _print_ranking(doc, int(doc["config"]["k"]))
    c = doc["calls"]
    console.print(f"{doc['n_comparisons']} comparisons ({doc['n_invalid']} invalid, "
                  f"{doc['n_ties']} ties); calls: {c['made']} made, {c['cached']} from cache, "
                  f"{c['failed']} failed; {doc['seconds']:.1f} s")


def _print_ranking(doc: dict, k: int) -> None:
    t = Table(title=f"ranking ({doc['reported_model']} model), top-{k} marked",
              title_justify="left")
    for col in ("rank", "id", "theta [95%]", "P(top-k)"):
        t.add_column(col, justify="left" if col == "id" else "right")
    has_q = any("quality" in r for r in doc["ranking"])
    if has_q:
        t.add_column("quality", justify="right")
    for r in doc["ranking"][: max(2 * k, 10)]:
        row = [str(r["rank"]) + ("*" if r["in_topk"] else ""), escape(r["id"]),
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
    console.print(escape(f"top-{k} naive: {', '.join(doc['models']['naive']['topk'])}"))
    console.print(escape(f"top-{k} bias-aware: {', '.join(ba['topk'])}"))
    if "recall" in doc:
        console.print("recall@k vs true quality: " + ", ".join(
            f"{m} {v:.2f}" for m, v in doc["recall"].items()))


# ---- rank-eval -----------------------------------------------------------------------------

@contextmanager
def _stage_bars() -> Iterator[Callable[[ProgressEvent], None]]:
    """A session progress callback drawing one bar per task, each closed when the next task
    starts (the verdict matrices, then the offline evaluation)."""
    with ExitStack() as stack:
        state: dict[str, Any] = {"task": None, "bar": None, "done": 0}

        def on_progress(ev: ProgressEvent) -> None:
            if ev.task != state["task"]:
                stack.close()
                bar = stack.enter_context(growing_bar(ev.task))
                bar.add_total(ev.total or 0)
                state.update(task=ev.task, bar=bar, done=0)
            if ev.done > state["done"]:
                state["bar"].advance(ev.done - state["done"])
                state["done"] = ev.done

        yield on_progress


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
    out: Annotated[Path, typer.Option(help="Output directory (results.json, report.html).")] = \
        Path("out/rank-eval"),
    lam: Annotated[str, typer.Option(help=LAM_HELP)] = "auto",
    tau: TauOpt = 1.0,
    hierarchical: Annotated[bool, typer.Option(help="Learn tau by empirical Bayes.")] = False,
    refit_every: RefitOpt = 8,
    samples: SamplesOpt = 1500,
    concurrency: ConcOpt = None,
    timeout: TimeoutOpt = None,
    cache: Annotated[Path | None, typer.Option(help="SQLite cache file.")] = None,
    no_cache: NoCacheOpt = False,
    min_valid: MinValidOpt = MIN_VALID,
    max_failed: MaxFailedOpt = MAX_FAILED,
    as_json: JsonOpt = False,
) -> None:
    """Evaluate acquisition rules x models offline: recall@k against budget over seeds, with
    paired tests, full-data recall and the judge's estimated biases with intervals. Exit 3
    when building the verdict matrices judged too little (--min-valid valid verdicts, at most
    --max-failed of the calls failed); the rules are then not evaluated."""
    from judgeaudit.rank.fitting import MODELS
    from judgeaudit.rank.run_eval import prepare_rank_eval, run_rank_eval

    inp = _checked(lambda: prepare_rank_eval(
        oracle, items, k=k, budgets=budgets, rules=rules, seeds=seeds, covariates=covariates,
        lam=lam, tau=tau, hierarchical=hierarchical, refit_every=refit_every,
        samples=samples, min_valid=min_valid, max_failed=max_failed, cli=True))
    check_out_dir(out)
    with _stage_bars() as bars:
        sess = _session(cache, no_cache, inp.judges, concurrency=concurrency, timeout=timeout,
                        progress=bars)
        n_jobs = len(inp.jobs)
        console.print(f"{n_jobs} verdict matri{'x' if n_jobs == 1 else 'ces'} "
                      f"({inp.n_calls} judge calls, cached); {len(inp.seeds)} seeds x "
                      f"{len(MODELS)} models x {len(inp.rules)} rules up to "
                      f"B = {inp.budgets[-1]}")
        doc = _run(sess, lambda s: run_rank_eval(s, inp))
    _finish(doc, out, as_json, _print_eval)


def _print_eval(doc: dict) -> None:
    if "recall" in doc:
        _print_recall(doc)
    c = doc["calls"]
    console.print(f"{doc['n_invalid']} invalid verdicts; calls: {c.get('made', 0)} made, "
                  f"{c.get('cached', 0)} from cache, {c.get('failed', 0)} failed; "
                  f"{doc['seconds']:.1f} s")


def _print_recall(doc: dict) -> None:
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


__all__ = ["parse_seeds", "rank", "rank_eval_cmd", "register"]
