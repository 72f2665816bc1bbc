"""`judgeaudit discover | quantify | mitigate`: human-grounded bias discovery, quantification
and correction (HUB-J). `register(app)` adds the commands; the pipelines are
`judgeaudit.hubj.run`."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from judgeaudit.cli.format import est_ci
from judgeaudit.cli.progress import console, fail, growing_bar
from judgeaudit.cli.runner import (
    MAX_FAILED,
    MIN_VALID,
    ConfigFileOpt,
    JsonOpt,
    MaxFailedOpt,
    MinValidOpt,
    check_out_dir,
    exit_if_failed,
    open_unit,
    positive,
    print_json,
    run_async,
)
from judgeaudit.config import DiscoverConfig as DiscoverSettings
from judgeaudit.data.spec import split_specs

# Option help texts are the Config fields' descriptions (judgeaudit.config): one place.
D = DiscoverSettings
JudgesOpt = Annotated[str | None, typer.Option("--judges", "-j", help=D.help("judges"))]
RecordedOpt = Annotated[str | None, typer.Option(help=D.help("recorded"))]
DataOpt = Annotated[str, typer.Option("--data", "-d", help=D.help("data"))]
LlmOpt = Annotated[str, typer.Option(help=D.help("llm"))]
OutOpt = Annotated[Path | None, typer.Option(help=D.help("out"))]
CacheOpt = Annotated[Path | None, typer.Option(help=D.help("cache"))]
ConcOpt = Annotated[int | None, typer.Option(help=D.help("concurrency"),
                                              callback=positive("--concurrency"))]


def _share(what: str) -> Callable[[float], float]:
    """A typer callback for a share or cosine threshold in [0, 1]."""

    def check(v: float) -> float:
        if not 0.0 <= v <= 1.0:
            raise typer.BadParameter(f"{what}: expected a number in [0, 1], got {v}")
        return v

    return check


MinAgreementOpt = Annotated[float, typer.Option(
    callback=_share("--min-agreement"), help=D.help("min_agreement"))]


def _p(x: Any) -> str:
    return "-" if x is None else f"{x:.3g}"


class _Session:
    """Judges, clients and data of one command; closes every client at the end."""

    def __init__(self, cache: Path | None, no_cache: bool, concurrency: int | None, seed: int):
        from judgeaudit.cli.runner import open_cache

        self.store = open_cache(cache, no_cache)
        self.concurrency, self.seed = concurrency, seed
        self.bundles: dict[str, Any] = {}

    def bundle(self, spec: str) -> Any:
        from judgeaudit.cli.runner import make_judge

        if spec not in self.bundles:
            self.bundles[spec] = make_judge(spec, self.store, concurrency=self.concurrency,
                                             seed=self.seed)
        return self.bundles[spec]

    def clients(self) -> list[Any]:
        """Every client of the session (their calls count in the run's outcome)."""
        return [b.client for b in self.bundles.values()]

    def run(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        """The pipeline through the CLI runner (Ctrl-C: exit 130 with how to resume; a fatal
        call: exit 3); a ValueError from it is bad input (exit 2)."""

        async def go() -> Any:
            try:
                return await fn()
            finally:
                for b in self.bundles.values():
                    await b.aclose()

        try:
            return run_async(go, cache_path=self.store and str(self.store.path))
        except ValueError as exc:
            raise fail(str(exc)) from None


def _items(data: str, limit: int | None, min_agreement: float) -> list[Any]:
    from judgeaudit.data import DataError, load
    from judgeaudit.data.schema import PairwiseItem
    from judgeaudit.hubj.splits import human_filter

    try:
        loaded = load(data)
    except (DataError, ValueError, FileNotFoundError) as exc:
        raise fail(f"data {data!r}: {exc}") from None
    items = [it for it in loaded if isinstance(it, PairwiseItem)]
    if not items:
        raise fail(f"data {data!r} has no pairwise items")
    kept = human_filter(items, min_agreement)
    if not kept:
        raise fail(f"data {data!r}: no item has a decisive human label (1 or 2) given by at "
                    f"least {min_agreement:.0%} of its annotators")
    return kept[:limit] if limit is not None else kept


def _check_recorded(recorded: str | None, data: str) -> None:
    """--recorded refused before any judge is made or called."""
    if recorded is None:
        return
    if recorded != "pandalm":
        raise fail(f"--recorded {recorded!r}: only 'pandalm' is known")
    _data_folder(data)


def _data_folder(data: str) -> Path:
    from judgeaudit.data.spec import parse_spec

    sp = parse_spec(data)
    if sp.kind != "pandalm" or not sp.name:
        raise fail("--recorded pandalm needs --data pandalm:PATH (the folder with the "
                    "recorded verdict files)")
    return Path(sp.name)


async def _winners(sess: _Session, judges: str | None, recorded: str | None, data: str,
                   items: list[Any], out: Path) -> dict[str, dict[str, Any]]:
    """Winners of every judge: recorded ones first (no calls), then live ones."""
    from judgeaudit.hubj.run import live_winners, recorded_winners

    winners: dict[str, dict[str, Any]] = {}
    if recorded:
        winners.update(recorded_winners(recorded, _data_folder(data),
                                        [it.id for it in items], out / "recorded"))
    specs = split_specs(judges or "")
    if specs:
        bundles = {sess.bundle(s).public_spec: sess.bundle(s) for s in specs}
        with growing_bar("judging") as bar:
            bar.add_total(sum(2 * len(items) for _ in bundles))
            winners.update(await live_winners(bundles, items, on_done=bar.advance))
    if not winners:
        raise ValueError("give --judges SPEC[,SPEC] and/or --recorded pandalm")
    return winners


def _splits_table(doc: dict[str, Any]) -> Table:
    t = Table(title=f"agreement / disagreement with humans (n={doc['n_items']} items)")
    for c in ("judge", "agree", "disagree", "neutral", "invalid", "missing"):
        t.add_column(c, justify="left" if c == "judge" else "right")
    for j, s in doc["per_judge"].items():
        t.add_row(j, *(str(s[k]) for k in ("agree", "disagree", "neutral", "invalid",
                                           "missing")))
    t.add_row("consensus (all judges)", str(doc["consensus_agree"]),
              str(doc["consensus_disagree"]), "", "", "")
    return t


def _stamp(res: dict[str, Any], started: str) -> None:
    """Run facts every results.json carries: version, start time, the judge(s)."""
    import judgeaudit

    judges = [str(j) for j in res.get("judges", [])]
    res.setdefault("version", judgeaudit.__version__)
    res.setdefault("started", started)
    res.setdefault("judge", judges[0] if len(judges) == 1 else f"{len(judges)} judges")


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _write(out: Path, res: dict[str, Any]) -> tuple[Path, Path]:
    from judgeaudit.report import write_results
    from judgeaudit.report.html import write_report

    path = write_results(out / "results.json", res)
    return path, write_report(path)


def _failed(res: dict[str, Any]) -> bool:
    return (res.get("run") or {}).get("status") == "failed"


def _calls_line(res: dict[str, Any], *paths: Path) -> None:
    c = res["calls"]
    console.print(f"calls: {c['made']} made, {c['cached']} from cache, {c['failed']} failed"
                  + (f"; {res['seconds']:.1f} s" if "seconds" in res else "")
                  + "".join(f"\n{p.stem}: {p}" for p in paths))


def _json_stats_line(stats: dict[str, Any]) -> str:
    parts = []
    for mod, s in stats.items():
        parts.append(f"{mod} {s['calls']} calls ({s['repaired']} repaired, {s['recovered']} "
                     f"after retry, {s['failed']} failed)")
    return "; ".join(parts)


# ---- discover --------------------------------------------------------------------------------

def discover(
    data: DataOpt = "pandalm:../shared/data/pandalm_testset",
    judges: JudgesOpt = None,
    recorded: RecordedOpt = None,
    llm: LlmOpt = "local",
    limit: Annotated[int | None, typer.Option(
        help="Discovery items (consensus disagreements) to extract features from.",
        callback=positive("--limit"))] = 30,
    holdout: Annotated[float, typer.Option(
        help="Share of the consensus disagreements held out for validation (0 < h < 1).",
        callback=open_unit)] = 0.5,
    holdout_limit: Annotated[int | None, typer.Option(
        help="Held-out items to validate on.", callback=positive("--holdout-limit"))] = 30,
    clusters: Annotated[int, typer.Option(help="M: k-means clusters per round.",
                                          callback=positive("--clusters"))] = 4,
    factors: Annotated[int, typer.Option(help="K: factors to select.",
                                         callback=positive("--factors"))] = 5,
    iterations: Annotated[int, typer.Option(help="T: rounds.",
                                            callback=positive("--iterations"))] = 3,
    tau: Annotated[float, typer.Option(help="Novelty threshold (cosine, 0-1).",
                                       callback=_share("--tau"))] = 0.7,
    rho: Annotated[float, typer.Option(help="Target covered share of features (0-1).",
                                       callback=_share("--rho"))] = 0.8,
    rep_fallback: Annotated[bool, typer.Option(help=(
        "When G_construct proposes fewer candidates than asked for (vague ones are dropped), "
        "fill in with the cluster representatives (features)."))] = True,
    min_agreement: MinAgreementOpt = 0.5,
    out: OutOpt = Path("out/discover"),
    seed: int = 0,
    concurrency: ConcOpt = None,
    cache: CacheOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache")] = False,
    min_valid: MinValidOpt = MIN_VALID,
    max_failed: MaxFailedOpt = MAX_FAILED,
    config: ConfigFileOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Find the factors behind a judge's disagreements with humans (HUB-J Algorithm 1) and
    validate them, beside the two baseline factor sets, on held-out disagreements. Exit 3
    when the run got too little (--min-valid valid G-module answers, at most --max-failed of
    the calls failed).

    Example: judgeaudit discover --recorded pandalm --data
    pandalm:../shared/data/pandalm_testset --llm local --limit 10 --out out/discover"""
    from judgeaudit.hubj.discover import DiscoverConfig
    from judgeaudit.hubj.embed import MiniLMEmbedder
    from judgeaudit.hubj.run import run_discover

    out = out or Path("out/discover")
    started = _now()
    items = _items(data, None, min_agreement)
    _check_recorded(recorded, data)
    check_out_dir(out)
    sess = _Session(cache, no_cache, concurrency, seed)
    g = sess.bundle(llm)
    for s in split_specs(judges or ""):  # every spec checked before any call
        sess.bundle(s)
    try:
        embedder = MiniLMEmbedder()
    except RuntimeError as exc:
        raise fail(str(exc)) from None
    cfg = DiscoverConfig(clusters=clusters, max_factors=factors, iterations=iterations,
                         tau=tau, rho=rho, seed=seed, rep_fallback=rep_fallback)

    async def go() -> dict[str, Any]:
        winners = await _winners(sess, judges, recorded, data, items, out)
        # The number of G-module calls is known only stage by stage: the bar grows with
        # each stage's planned calls and advances on every answered call.
        with growing_bar("discover (G-module calls)") as bar:
            g.client.observers.append(lambda _req: bar.advance())

            def stage(msg: str, planned: int) -> None:
                bar.add_total(planned)
                console.print(f"[bold]discover:[/] {msg}")

            return await run_discover(items, winners, g.client, embedder, cfg,
                                      holdout=holdout, limit=limit,
                                      holdout_limit=holdout_limit,
                                      min_agreement=min_agreement, on_stage=stage,
                                      judge_clients=sess.clients(), min_valid=min_valid,
                                      max_failed=max_failed)

    res = sess.run(go)
    res.update(llm=g.public_spec, data=data)
    _stamp(res, started)
    path, report = _write(out, res)
    if not _failed(res):  # a failed run's numbers are no result
        _print_discover(res)
    console.print(_json_stats_line(res["json_stats"]))
    _calls_line(res, path, report)
    if json_out:
        print_json(res)
    exit_if_failed(res)


def _print_discover(res: dict[str, Any]) -> None:
    console.print(_splits_table(res["splits"]))
    t = Table(title="factors found, validated on held-out disagreements "
                    "(Delta = intensity(judge-preferred) - intensity(human-preferred))")
    for c in ("set", "factor", "n", "mean Delta [95% CI]", "p (t)", "p (Wilcoxon)",
              "max|r| pre-discovered"):
        t.add_column(c, justify="left" if c in ("set", "factor") else "right")
    for set_name, s in res["validation"]["sets"].items():
        for row in s["factors"]:
            lo, hi = row["ci95"]
            ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
            md = "-" if row["mean_delta"] is None else f"{row['mean_delta']:+.2f}{ci}"
            t.add_row(set_name, row["factor"], str(row["n"]), md, _p(row["p_t"]),
                      _p(row["p_wilcoxon"]), _p(row["max_abs_r_pre_discovered"]))
    console.print(t)


# ---- quantify --------------------------------------------------------------------------------

def _factor_list(names: str, factors_from: Path | None) -> tuple[list[Any], dict[int, Any]]:
    from judgeaudit.hubj.run import resolve_factors

    discovered = None
    if factors_from is not None:
        try:
            discovered = json.loads(Path(factors_from).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise fail(f"--factors-from {factors_from}: {exc}") from None
        if discovered.get("command") != "discover":
            raise fail(f"--factors-from {factors_from}: not the results.json of `discover`")
        if names == "found":
            names = ",".join(f["name"] for f in discovered["discover"]["factors"])
    try:
        return resolve_factors([n for n in names.split(",") if n.strip()], discovered)
    except ValueError as exc:
        raise fail(f"--factors: {exc}") from None


def quantify(
    judges: Annotated[str, typer.Option("--judges", "-j", help=(
        "Comma-separated judge SPECs to quantify (same rewrites for all)."))] = "local",
    data: DataOpt = "pandalm:../shared/data/pandalm_testset",
    factors: Annotated[str, typer.Option(help=(
        "Comma-separated factor names: shipped ones (verbosity, beauty, authority, bandwagon, "
        "sentiment, length, complexity, ...) or 'found' with --factors-from."))] = (
        "verbosity,authority"),
    factors_from: Annotated[Path | None, typer.Option(
        help="results.json of a discover run (its factors and criteria).")] = None,
    generator: Annotated[str | None, typer.Option(
        help="SPEC of the rewriter G_inj (default: the first judge).")] = None,
    checker: Annotated[str | None, typer.Option(
        help="SPEC of the answer-change checker G_check (default: the generator).")] = None,
    levels: Annotated[str, typer.Option(help="Levels to inject.")] = "1,2,3,4,5",
    pool: Annotated[int, typer.Option(
        help="Labelled items to judge when looking for agreement items.",
        callback=positive("--pool"))] = 60,
    limit: Annotated[int | None, typer.Option(help="Agreement items to rewrite.",
                                              callback=positive("--limit"))] = 12,
    n_cal: Annotated[int | None, typer.Option(
        help="Calibration items (default: 1/6 of the items, as the paper's 100/600).",
        callback=positive("--n-cal"))] = None,
    on_violation: Annotated[str, typer.Option(
        help="drop: discard rewrites the checker says change the answer; flag: keep them.")] = (
        "drop"),
    inject: Annotated[str, typer.Option(help=(
        "G_inj mode: rewrite (the whole response rewritten at the level, as in the paper) or "
        "append (the generator writes only sentences to add; for small models, such as the "
        "embedded one, that echo the text when asked to rewrite it)."))] = "rewrite",
    max_words: Annotated[int | None, typer.Option(
        help="Only agreement items whose rejected response has at most N words.",
        callback=positive("--max-words"))] = None,
    min_agreement: MinAgreementOpt = 0.5,
    out: OutOpt = Path("out/quantify"),
    seed: int = 0,
    concurrency: ConcOpt = None,
    cache: CacheOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache")] = False,
    min_valid: MinValidOpt = MIN_VALID,
    max_failed: MaxFailedOpt = MAX_FAILED,
    config: ConfigFileOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """How strongly each factor moves each judge (HUB-J Algorithm 2): rewrite the rejected
    response of agreement items at levels 1-5, count flips, pick l* on calibration items and
    report the susceptibility on test items. Exit 3 when the run judged too little
    (--min-valid valid judge verdicts on rewrites, at most --max-failed of the calls
    failed).

    Example: judgeaudit quantify --judges 'simhubj?factor_verbosity=0,0.5,3,1,0&seed=3'
    --data pandalm:../shared/data/pandalm_testset --factors verbosity --pool 60 --limit 12
    --out out/quantify"""
    from judgeaudit.hubj.run import run_quantify

    out = out or Path("out/quantify")
    try:
        lv = [int(x) for x in levels.split(",") if x.strip()]
    except ValueError:
        raise fail(f"--levels {levels!r}: expected comma-separated numbers 1-5") from None
    if not lv or any(not 1 <= x <= 5 for x in lv):
        raise fail(f"--levels {levels!r}: expected numbers 1-5")
    if on_violation not in ("drop", "flag"):
        raise fail(f"--on-violation: expected drop or flag, got {on_violation!r}")
    if inject not in ("rewrite", "append"):
        raise fail(f"--inject: expected rewrite or append, got {inject!r}")
    fs, crit = _factor_list(factors, factors_from)
    started = _now()
    specs = split_specs(judges)
    if not specs:
        raise fail("--judges: give at least one judge SPEC")
    items = _items(data, pool, min_agreement)
    check_out_dir(out)
    sess = _Session(cache, no_cache, concurrency, seed)
    bundles = {sess.bundle(s).public_spec: sess.bundle(s) for s in specs}
    gen = sess.bundle(generator or specs[0])
    chk = sess.bundle(checker) if checker else None
    missing = [f for f in fs if f.name not in crit]
    n_rw = (limit or len(items)) * len(fs) * len(lv)

    async def go() -> dict[str, Any]:
        from judgeaudit.hubj.llmjson import JSONStats
        from judgeaudit.hubj.validate import criteria_for_factors

        if missing:
            got, _src = await criteria_for_factors(gen.client, missing, JSONStats())
            crit.update(got)
        with growing_bar("quantify") as bar:
            bar.add_total(2 * len(items) * len(bundles) + n_rw * (2 + 2 * len(bundles)))
            from judgeaudit.hubj.run import live_winners

            agreement = await live_winners(bundles, items, on_done=bar.advance)
            return await run_quantify(bundles, gen.client, items, fs, crit,
                                      checker=chk.client if chk else None, levels=lv,
                                      n_cal=n_cal, seed=seed, on_violation=on_violation,
                                      limit=limit, agreement=agreement, inject=inject,
                                      max_words=max_words, on_done=bar.advance,
                                      min_agreement=min_agreement, min_valid=min_valid,
                                      max_failed=max_failed)

    res = sess.run(go)
    res.update(data=data, generator=gen.public_spec,
               checker=chk.public_spec if chk else gen.public_spec)
    _stamp(res, started)
    path, report = _write(out, res)
    if not _failed(res):  # a failed run's numbers are no result
        _print_quantify(res, lv)
    if res.get("json_stats"):
        console.print(_json_stats_line(res["json_stats"]))
    _calls_line(res, path, report)
    if json_out:
        print_json(res)
    exit_if_failed(res)


def _print_quantify(res: dict[str, Any], lv: list[int]) -> None:
    t = Table(title=f"flip rate by level (n={res['n_items']} agreement items; "
                    f"{res['rewrites']['kept']}/{res['rewrites']['total']} rewrites kept)")
    t.add_column("judge")
    t.add_column("factor")
    for x in lv:
        t.add_column(f"L{x}", justify="right")
    t.add_column("l*", justify="right")
    t.add_column("susceptibility (test)", justify="right")
    for j, per in res["per_judge"].items():
        for f, r in per.items():
            t.add_row(j, f, *(est_ci(r["by_level"][str(x)], 2) for x in lv),
                      str(r["l_star"]), est_ci(r["susceptibility"], 2))
    console.print(t)
    console.print(f"answer-change rate (checker): {est_ci(res['answer_change_rate'])}")


# ---- mitigate --------------------------------------------------------------------------------

def mitigate(
    data: DataOpt = "pandalm:../shared/data/pandalm_testset",
    judges: JudgesOpt = None,
    recorded: RecordedOpt = None,
    factor: Annotated[str, typer.Option(help=(
        "The factor to control for (a shipped name, or a found one with --factors-from)."))] = (
        "verbosity"),
    factors_from: Annotated[Path | None, typer.Option(
        help="results.json of a discover run.")] = None,
    scorer: Annotated[str, typer.Option(help="SPEC of the G_score model.")] = "local",
    candidate: Annotated[str, typer.Option(help=(
        "Whose win rate: rejected (the human-rejected response: win = disagreement with "
        "humans), response_1 or response_2."))] = "rejected",
    limit: Annotated[int | None, typer.Option(help="Use the first N labelled items.",
                                              callback=positive("--limit"))] = 60,
    estimator: Annotated[str, typer.Option(help=(
        "marginal: one-step maximum likelihood with the query effect integrated out "
        "(default; calibrated intervals); two_stage: the paper's Stage I + Stage II with the "
        "query effect plugged in (shown beside either way)."))] = "marginal",
    apply_fit: Annotated[Path | None, typer.Option("--apply", help=(
        "results.json of an earlier mitigate run: correct the verdicts of --judges (one "
        "judge) on --data with that fit."))] = None,
    min_agreement: MinAgreementOpt = 0.5,
    out: OutOpt = Path("out/mitigate"),
    seed: int = 0,
    concurrency: ConcOpt = None,
    cache: CacheOpt = None,
    no_cache: Annotated[bool, typer.Option("--no-cache")] = False,
    min_valid: MinValidOpt = MIN_VALID,
    max_failed: MaxFailedOpt = MAX_FAILED,
    config: ConfigFileOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Bias-controlled win rates (HUB-J Algorithm 3): a two-stage logistic model over judges
    and queries separates each judge's wins due to the factor; the length-controlled win rate
    (AlpacaEval style) is reported beside it. --apply corrects new verdicts with a saved fit.
    Exit 3 when the run judged too little (--min-valid valid judge verdicts on queries with
    factor scores, at most --max-failed of the calls failed).

    Example: judgeaudit mitigate --judges 'sim?length=2&seed=1' --data
    pandalm:../shared/data/pandalm_testset --scorer 'simhubj?score_from=length' --factor
    length --limit 200 --out out/mitigate"""
    from judgeaudit.hubj.run import run_apply, run_mitigate

    out = out or Path("out/mitigate")
    if estimator not in ("marginal", "two_stage"):
        raise fail(f"--estimator: expected marginal or two_stage, got {estimator!r}")
    if candidate not in ("rejected", "response_1", "response_2"):
        raise fail(f"--candidate: expected rejected, response_1 or response_2, got "
                    f"{candidate!r}")
    started = _now()
    items = _items(data, limit, min_agreement)
    saved: Any = None
    if apply_fit is not None:
        try:
            saved = json.loads(Path(apply_fit).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise fail(f"--apply {apply_fit}: {exc}") from None
    else:
        fs, crit = _factor_list(factor, factors_from)
        if len(fs) != 1:
            raise fail("--factor: give exactly one factor")
        f = fs[0]
    _check_recorded(recorded, data)
    check_out_dir(out)
    sess = _Session(cache, no_cache, concurrency, seed)
    sc = sess.bundle(scorer)
    for s in split_specs(judges or ""):  # every spec checked before any call
        sess.bundle(s)
    if apply_fit is not None:
        names: list[str] = []

        async def go_apply() -> dict[str, Any]:
            winners = await _winners(sess, judges, recorded, data, items, out)
            if len(winners) != 1:
                raise ValueError("--apply corrects one judge: give exactly one of "
                                 "--judges/--recorded")
            (name, w), = winners.items()
            names.append(name)
            return await run_apply(saved, name, items, w, sc.client,
                                   judge_clients=sess.clients(), min_valid=min_valid,
                                   max_failed=max_failed)

        res = sess.run(go_apply)
        name = names[0]
        res.update(data=data, scorer=sc.public_spec, fit=str(apply_fit))
        _stamp(res, started)
        path = _write_plain(out, res)
        a = res["applied"]
        if not _failed(res):
            console.print(f"{name}: win {est_ci(a['win'])}, bias-controlled "
                          f"{est_ci(a['bc'])}, bias share {est_ci(a['bias_share'])} "
                          f"(n={a['n']}, {a['n_new_queries']} new queries)")
        _calls_line(res, path)
        if json_out:
            print_json(res)
        exit_if_failed(res)
        return

    async def go() -> dict[str, Any]:
        from judgeaudit.hubj.llmjson import JSONStats
        from judgeaudit.hubj.validate import criteria_for_factors

        winners = await _winners(sess, judges, recorded, data, items, out)
        if f.name not in crit:
            got, _src = await criteria_for_factors(sc.client, [f], JSONStats())
            crit.update(got)
        with growing_bar("G_score") as bar:
            bar.add_total(len(items))
            return await run_mitigate(items, winners, sc.client, f, crit[f.name],
                                      candidate=candidate, estimator=estimator,
                                      on_done=bar.advance, judge_clients=sess.clients(),
                                      min_valid=min_valid, max_failed=max_failed)

    res = sess.run(go)
    res.update(data=data, scorer=sc.public_spec)
    _stamp(res, started)
    path, report = _write(out, res)
    if not _failed(res):  # a failed run's numbers are no result
        _print_mitigate(res, candidate, estimator)
    console.print(_json_stats_line(res["json_stats"]))
    _calls_line(res, path, report)
    if json_out:
        print_json(res)
    exit_if_failed(res)


def _print_mitigate(res: dict[str, Any], candidate: str, estimator: str) -> None:
    f = res["factor"]
    t = Table(title=f"bias-controlled win rate of the {candidate} response, control: "
                    f"{f['name']} (n={res['counts']['queries']} queries, {estimator} fit)")
    for c in ("judge", "win", "BC (bias-controlled)", "bias share", "LC (length-controlled)",
              "phi +- se", "psi +- se"):
        t.add_column(c, justify="left" if c == "judge" else "right")
    lc = res["other_controls"].get("length", {})
    for j, r in res["per_judge"].items():
        t.add_row(j, est_ci(r["win"]), est_ci(r["bc"]), est_ci(r["bias_share"]),
                  est_ci(lc.get(j, {}).get("bc")),
                  f"{r['phi']['value']:+.2f} +- {r['phi']['se']:.2f}",
                  f"{r['psi']['value']:+.2f} +- {r['psi']['se']:.2f}")
    console.print(t)


def _write_plain(out: Path, res: dict[str, Any]) -> Path:
    from judgeaudit.report import write_results

    return write_results(out / "results.json", res)


def register(app: typer.Typer) -> None:
    """Add `discover`, `quantify` and `mitigate` to ``app``."""
    app.command("discover")(discover)
    app.command("quantify")(quantify)
    app.command("mitigate")(mitigate)


__all__ = ["discover", "mitigate", "quantify", "register"]
