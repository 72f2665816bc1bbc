"""judgeaudit CLI entry point."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from judgeaudit.cli.format import evaluate_table
from judgeaudit.cli.progress import console, progress_bar

app = typer.Typer(
    name="judgeaudit",
    help="Audit LLM judges: find their biases, measure them, correct for them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
cache_app = typer.Typer(help="Inspect or clear the SQLite cache of model calls.",
                        no_args_is_help=True)
app.add_typer(cache_app, name="cache")

JudgeOpt = Annotated[str, typer.Option("--judge", "-j", help=(
    "Judge SPEC: local | local:qwen-0.5b | local:PATH | openai:MODEL?base_url=URL | "
    "anthropic:MODEL | replay:PATH?judge=GPT-4&strategy=Vanilla | sim?position=0.8&length=1"))]
DataOpt = Annotated[str, typer.Option("--data", "-d", help=(
    "Data SPEC: builtin:facts | builtin:arithmetic | llmbar:PATH | pandalm:PATH | "
    "mtbench:PATH | judgebench:PATH | jsonl:PATH | hf:NAME"))]
CacheOpt = Annotated[Path | None, typer.Option(
    "--cache", help="SQLite cache file (default: $JUDGEAUDIT_CACHE or the user cache dir).")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the cache.")]


def _fail(msg: str, code: int = 2) -> typer.Exit:
    console.print(f"[bold red]error:[/] {msg}")
    return typer.Exit(code)


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")


@app.command()
def evaluate(
    judge: JudgeOpt = "local",
    data: DataOpt = "builtin:facts",
    limit: Annotated[int | None, typer.Option(help="Use only the first N items.")] = None,
    out: Annotated[Path, typer.Option(help="Output directory for results.json.")] = Path(
        "out/evaluate"),
    concurrency: Annotated[int | None, typer.Option(help="Concurrent calls (per provider).")] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds per call before retrying.")] = None,
    seed: int = 0,
    cache: CacheOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """Evaluate a judge on labelled pairwise data: accuracy, position consistency, kappa."""
    from judgeaudit.audit.evaluate import evaluate as run_evaluate
    from judgeaudit.data import DataError, load
    from judgeaudit.judges import make_judge
    from judgeaudit.llm import Cache, CallFailed
    from judgeaudit.report import write_results

    try:
        items = load(data)
    except (DataError, ValueError, FileNotFoundError) as exc:
        raise _fail(f"data {data!r}: {exc}") from None
    if limit is not None:
        items = items[:limit]
    if not items:
        raise _fail(f"data {data!r} has no items")
    try:
        bundle = make_judge(judge, cache=None if no_cache else Cache(cache),
                            concurrency=concurrency, timeout=timeout, seed=seed)
    except (ValueError, FileNotFoundError) as exc:
        raise _fail(f"judge {judge!r}: {exc}") from None

    async def go() -> dict:
        try:
            with progress_bar("judging", bundle.pairwise.n_calls(items)) as advance:
                return await run_evaluate(bundle, items, on_done=advance,
                                          data_spec=data, seed=seed)
        finally:
            await bundle.aclose()

    try:
        res = asyncio.run(go())
    except CallFailed as exc:
        raise _fail(str(exc), 3) from None
    path = write_results(out / "results.json", res)
    console.print(evaluate_table(res))
    c = res["calls"]
    console.print(
        f"calls: {c['made']} made, {c['cached']} from cache, {c['retries']} retries, "
        f"{c['failed']} failed; {res['n_invalid']} invalid verdicts of "
        f"{res['n_calls_planned']}; {res['seconds']:.1f} s; prompt {res['prompt_hash'][:12]}"
    )
    console.print(f"results: {path}")


@cache_app.command("stats")
def cache_stats(cache: CacheOpt = None) -> None:
    """Entries per provider:model and the file's size."""
    from judgeaudit.llm import Cache

    s = Cache(cache).stats()
    console.print(f"{s.path}: {s.entries} entries, {s.bytes / 1e6:.2f} MB")
    for k, v in s.by_model.items():
        console.print(f"  {k}: {v}")


@cache_app.command("clear")
def cache_clear(
    cache: CacheOpt = None,
    provider: Annotated[str | None, typer.Option(help="Only this provider's entries.")] = None,
    model: Annotated[str | None, typer.Option(help="Only this model's (with --provider).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete cached calls (all, or one provider's / model's)."""
    from judgeaudit.llm import Cache

    c = Cache(cache)
    what = f"{provider}:{model}" if model else (provider or "all")
    if not yes and sys.stdin.isatty() and not typer.confirm(f"Delete {what} entries in {c.path}?"):
        raise typer.Exit(1)
    n = c.clear(provider, model)
    console.print(f"deleted {n} entries ({what})")


@app.command()
def judges() -> None:
    """List providers, local model presets and prompt templates."""
    from judgeaudit.judges.templates import builtin_templates, load_template
    from judgeaudit.llm import available

    console.print("providers: " + ", ".join(available()))
    try:
        from judgeaudit.llm.local_model import PRESETS

        console.print("local presets: " + ", ".join(PRESETS))
    except ImportError:
        pass
    for name in builtin_templates():
        console.print(f"template {name}: sha256 {load_template(name).sha256[:12]}")


if __name__ == "__main__":
    app()
