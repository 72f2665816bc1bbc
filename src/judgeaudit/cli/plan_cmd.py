"""Where the calls run: `judgeaudit --plan-only PLAN.jsonl COMMAND ...` (any command writes
the requests it needs instead of sending them), `judgeaudit ingest RESULTS.jsonl` (answers
from any executor into the cache), `judgeaudit batch status|cancel` (provider batches of
`batch=on` judges). `register(app)` adds `ingest` and the `batch` group to a typer app.

The `--plan-only` option lives in the main callback, which calls `set_plan_path`;
the command's `Session` (`cli.runner.run_command`) gives every judge it makes the planner
(`active_planner`), and
`cli.runner.run_async` writes the plan after the pipeline (`finish_plan`) and exits 0.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from judgeaudit.cli.progress import close_bars, console, fail
from judgeaudit.cli.terminal import json_line, styled
from judgeaudit.cli.terminal import shown as escaped
from judgeaudit.llm.base import CHARS_PER_TOKEN
from judgeaudit.outcome import EXIT_RUN_FAILED
from judgeaudit.results_file import usd_value

_PLANNER: Any = None  # judgeaudit.llm.plan.Planner of this invocation, or None
_PLAN_COMMAND: str | None = None  # the command it plans for (`pilot_advice`)


# The commands that ask a judge anything; the rest (compare, report, selfcheck, ...) ran in
# full under --plan-only and wrote no plan, which a script planning every step took for a plan.
PLANNING_COMMANDS = ("evaluate", "audit", "rank", "rank-eval", "scoring-bias", "discover",
                     "quantify", "mitigate")


def set_plan_path(path: Path | None, command: str | None = None) -> None:
    """Start planning into `path` (None: no planning) for `command`, which must be one that
    calls a judge. Called by the main callback on every invocation, so a planner never
    outlives its command."""
    global _PLANNER, _PLAN_COMMAND
    _PLAN_COMMAND = command
    if path is None:
        _PLANNER = None
        return
    if command is not None and command not in PLANNING_COMMANDS:
        raise fail(f"--plan-only: `{command}` calls no judge, so it has nothing to plan; run "
                   f"it without --plan-only (the commands that plan: "
                   f"{', '.join(PLANNING_COMMANDS)})")
    from judgeaudit.llm.plan import Planner

    if path.exists() and path.is_dir():
        raise fail(f"--plan-only {path}: is a directory (give a file, e.g. {path / 'plan.jsonl'})")
    _PLANNER = Planner(path)


def active_planner() -> Any:
    return _PLANNER


def pilot_advice() -> str:
    """How to plan a small pilot for the command planned: "--n 5 or --limit 10", except for
    discover, whose first step judges every labelled item of --data whatever --limit says
    (`hubj_cmd._discover_plan_note`): the advice named --limit beside the note that --limit
    does not shrink its plan; for it, the data spec's `?limit=N`."""
    if _PLAN_COMMAND == "discover":
        return "the data spec's ?limit=N, e.g. --data 'SPEC?limit=10'"
    return "--n 5 or --limit 10"


def first_line(text: str, limit: int = 600) -> str:
    """A stop message's first line, cut only past `limit` characters and then at a word
    boundary with "...": a cut at 200 characters ended rank's message mid-word ("so fe)")."""
    line = text.splitlines()[0] if text else ""
    if len(line) <= limit:
        return line
    cut = line.rfind(" ", 0, limit)
    return line[:cut if cut > 0 else limit].rstrip(" ,;:(") + "..."


def finish_plan(planner: Any, stopped: BaseException | None = None) -> None:
    """Write the plan, say what to do next, and exit 0 (results are not written)."""
    try:
        path = planner.write()
    except OSError as exc:
        raise fail(f"--plan-only {planner.path}: cannot write ({exc.strerror or exc})") from None
    n, m = planner.n, len(planner.cached)
    close_bars()
    made = getattr(planner, "creates_dir", None)
    if made is not None and made.is_dir():
        console.print(f"created the directory {made} for the plan (it did not exist)",
                      highlight=False)
    from judgeaudit.cli.runner import JSON_REQUESTED

    if JSON_REQUESTED.get():  # --json: what was planned, for a script, on stdout
        typer.echo(json_line({
            "command": getattr(planner, "command", None), "ok": True,
            "plan": str(path), "planned": n, "cached": m,
            "stopped": None if stopped is None else first_line(str(stopped)),
            "stopped_note": getattr(stopped, "note", None),
            "prompt_tokens_estimate": round(planner.prompt_chars / CHARS_PER_TOKEN),
            "completion_tokens_max": planner.max_completion,
            "cost_usd_estimate": usd_value(planner.cost_usd) or None,
            # which price it is at: {rate: cost} by `client.price_rate`'s keys
            "cost_usd_by_rate": {r: usd_value(c) for r, c in
                                 sorted(getattr(planner, "cost_by_rate", {}).items())},
            "unpriced": sorted(planner.unpriced),
            "simulated": dict(getattr(planner, "simulated", {})),
            "exit_code": 0}))  # finish_plan exits 0; every --json says its code (4465670)
    if stopped is not None:
        what = first_line(str(stopped)) if str(stopped) else type(stopped).__name__
        console.print(Text(f"the command stopped without answers ({escaped(what)}); that is "
                           "expected before the planned requests are answered", style="dim"),
                      highlight=False)
        note = getattr(stopped, "note", None)
        if note:  # what the plan may hold that a live run would not send (rank: too long)
            console.print(styled("note:", "bold yellow", note), highlight=False)
    if n == 0:
        cached = f"all {m} requests are cached" if m != 1 else "its 1 request is cached"
        console.print(f"nothing to plan: {cached}; run the command without "
                      f"--plan-only (wrote an empty {path})", highlight=False)
    else:
        console.print(
            f"planned {count(n, 'request')} to {path} ({m} already cached); run "
            f"{'it' if n == 1 else 'them'} (vllm run-batch, a provider's batch API, ...), then "
            "`judgeaudit ingest OUTPUT.jsonl` and re-run this command", highlight=False)
        console.print(f"the planned requests: {planner.estimate()}", highlight=False)
        sims = getattr(planner, "simulated", None)
        if sims:
            console.print(styled(
                f"{sum(sims.values())} of them for a simulated judge "
                f"({', '.join(sorted(sims))})", "bold yellow",
                ": judgeaudit answers those itself (they are planned only so the plan counts "
                "the whole run); run the command without --plan-only for the simulation's "
                "verdicts: answers ingested for them replace the simulation's"), highlight=False)
        console.print("every planned request is paid for, even if the judge's answers cannot "
                      "be read (a live run stops after a run of unreadable answers); to check "
                      f"first, plan a small pilot ({pilot_advice()}), execute and ingest it "
                      "(ingest counts answers empty or cut at max_tokens), and re-run it before "
                      "planning the rest", highlight=False)
        console.print("requests that depend on these answers (a rewrite before its judgement, "
                      "the next round of an active ranking) are planned stage by stage: re-run "
                      "with --plan-only after each ingest until it plans 0 requests",
                      highlight=False)
    raise typer.Exit(0)


# ---- judgeaudit ingest ---------------------------------------------------------------------

def ingest(
    results: Annotated[Path, typer.Argument(
        help="Output of the executor: OpenAI batch output format (one line per request, "
             "custom_id = the plan's), as vllm run-batch and the Batch API write it.")],
    plan: Annotated[Path | None, typer.Option(
        help="The plan file: also report planned requests that got no answer.")] = None,
    cache: Annotated[Path | None, typer.Option(
        "--cache", help="SQLite cache file the plan was made with (default: $JUDGEAUDIT_CACHE "
                        "or the user cache dir).")] = None,
) -> None:
    """Store the answers to planned requests in the cache; re-run the planned command
    after it (it then makes no call for them). Error lines are counted, never cached as
    answers; a too-long refusal is kept, so the next plan does not ask it again.

    Example (after `judgeaudit --plan-only plan.jsonl audit ...` and running plan.jsonl with
    vllm run-batch): judgeaudit ingest batch_output.jsonl --plan plan.jsonl"""
    from judgeaudit.cli.runner import open_cache
    from judgeaudit.llm.plan import PlanGivenAsAnswers
    from judgeaudit.llm.plan import ingest as run_ingest

    for p, what in ((results, "RESULTS"), (plan, "--plan")):
        if p is not None and p.is_dir():
            raise fail(f"{what} {p}: is a directory, expected a file")
        if p is not None and not p.is_file():
            raise fail(f"{what} {p}: no such file")
    if results.stat().st_size == 0 and plan is None:  # with --plan it still says what is left
        raise fail(f"RESULTS {results}: empty file (did the batch run write nothing?); with "
                   "--plan PLAN it reports the planned requests still unanswered")
    from judgeaudit.cli.progress import progress_bar
    if cache is not None and not cache.exists():  # a typo would create an empty cache
        raise fail(f"--cache {cache}: no such cache file; give the --cache the plan was made "
                   "with")
    store = open_cache(cache, False)
    if store.read_only:  # refused now: it warned "the run goes on without storing
        # answers" (a run's message: ingest is nothing but storing), then failed, exit 2
        why = store.write_error
        store.close()
        raise fail(f"ingest: {why}; nothing was stored: ingest stores answers, so make it "
                   "writable or ingest into a writable copy with --cache COPY (a copy keeps "
                   "its answers and the planned requests the answers are matched with)")
    t0 = time.perf_counter()
    try:
        with progress_bar("ingesting", _n_lines(results)) as advance:
            rep = run_ingest(results, store, plan=plan, on_lines=advance)
    except PlanGivenAsAnswers as exc:
        raise fail(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise fail(f"ingest {results}: {exc}") from None
    finally:
        store.close()
    dt = time.perf_counter() - t0
    where = str(results)  # the console reads no markup: a [ in a name is text
    n_err = sum(rep.errors.values())
    console.print(f"ingested {count(rep.ingested, 'answer')} of {count(rep.lines, 'line')} into "
                  f"{store.path} in {dt:.1f} s" + (
                      f" ({rep.replaced} of them replaced "
                      f"{'an answer' if rep.replaced == 1 else 'answers'} already cached)"
                      if rep.replaced else ""), highlight=False)
    if rep.ingested:
        _say_usage(rep)
    if n_err:
        kinds = ", ".join(f"{k} {v}" for k, v in rep.errors.items())
        kept = rep.refusals_kept
        fate = ("not cached" if not kept else
                f"{kept} too-long {'refusal' if kept == 1 else 'refusals'} kept in the cache (the "
                "re-run fails them as a live run would, and does not plan them again)"
                + (", the others not cached" if kept < n_err else ""))
        console.print(styled(count(n_err, 'error line'), "bold yellow",
                             f"({kinds}), {fate}; first at {where}:{rep.first_error_line}: "
                             f"{escaped(rep.first_error or '')}"), highlight=False)
    if rep.simulated:
        n_sim = sum(rep.simulated.values())
        console.print(styled(count(n_sim, 'answer'), "bold yellow",
                             f"{'is' if n_sim == 1 else 'are'} for a simulated judge "
                             f"({', '.join(sorted(rep.simulated))}): stored, "
                             "replacing what the simulation would answer; the re-run reads "
                             "these, not the simulation's verdicts"), highlight=False)
    if rep.errors_answered:
        key, err_line, ans_line = rep.first_answered
        console.print(f"{count(rep.errors_answered, 'error line')} answered by a later line "
                      f"of the same custom_id, the answer kept (first: custom_id "
                      f"{escaped(key[:12])}, error at {where}:{err_line}, answer at line "
                      f"{ans_line})", highlight=False)
    if rep.unknown:
        line, key = rep.first_unknown or (0, "")
        console.print(Text.assemble(
            (f"{count(rep.unknown, 'answer')} to "
             f"{'a request' if rep.unknown == 1 else 'requests'} not planned with this cache",
             "bold yellow"),
            f" (a different --cache?), not stored; first at {escaped(where)}:{line}: custom_id "
            f"{escaped(key)}"), highlight=False)
    if rep.cut_last_line is not None:
        console.print(styled(f"the last line ({rep.cut_last_line:,}) is cut off", "bold yellow",
                             f"in {where}: was the executor stopped while writing? Not stored; "
                             "its request is planned again"), highlight=False)
    if rep.unreadable == rep.lines > 0:  # nothing in it is an answer: the wrong file
        raise fail(f"ingest {results}: no line is a batch output line (line "
                   f"{rep.unreadable_lines[0]} first; expected JSON objects with custom_id "
                   "and response.body or error, as the OpenAI batch API and vllm run-batch "
                   "write)")
    if rep.unreadable:
        console.print(styled(count(rep.unreadable, 'unreadable line'), "bold yellow",
                             f"in {where} ({_where(rep.unreadable_lines, rep.unreadable)}: "
                             "not JSON objects with custom_id and response.body or error), "
                             "not stored"), highlight=False)
    if rep.requests:  # some, not all (all is refused above): a plan's lines mixed in
        console.print(styled(count(rep.requests, 'line'), "bold yellow",
                             f"in {where} "
                             f"{'is a request' if rep.requests == 1 else 'are requests'} "
                             f"(method, url, body), not "
                             f"{'an answer' if rep.requests == 1 else 'answers'} "
                             f"({_where(rep.request_lines, rep.requests)}; a plan's lines in "
                             "the output file?), skipped"), highlight=False)
    if rep.duplicates:
        _say_duplicates(rep, where)
    if rep.unanswered:
        console.print(f"{rep.unanswered} of {count(rep.plan_lines or 0, 'planned request')} "
                      f"{'has' if rep.unanswered == 1 else 'have'} no answer: the next "
                      "--plan-only run plans "
                      f"{'it' if rep.unanswered == 1 else 'them'} again", highlight=False)
    if rep.not_in_plan:
        console.print(f"{count(rep.not_in_plan, 'answer')} "
                      f"{'is to a request' if rep.not_in_plan == 1 else 'are to requests'} "
                      f"not in {plan}", highlight=False)
    # input errors (exit 2, as README says): an empty file, or answers to nothing planned
    # in this cache (a wrong --cache); both exited 3 as a run that failed
    if rep.lines == 0 or (rep.cut_last_line is not None and rep.lines == 1):
        raise fail(f"ingest {results}: empty file, no answer in it (did the executor write "
                   "nothing, or is this the wrong file?)" + (
                       "; the planned requests above are still unanswered" if plan else ""))
    if rep.ids and rep.ids_planned == 0:  # not one line is to a request planned here
        # (whatever else the file holds: a cut-off, malformed or error line made it exit 3)
        what = (f"its {count(rep.lines, 'answer')}" if rep.unknown == rep.lines
                else f"the {rep.ids} custom_ids in its {count(rep.lines, 'line')}")
        raise fail(f"ingest {results}: none of {what} is to a request "
                   f"planned with the cache {store.path} (wrong --cache? give the cache the "
                   "plan was made with: --cache PATH or JUDGEAUDIT_CACHE); nothing stored")
    if rep.ingested == 0:  # nothing stored is a failure
        raise typer.Exit(EXIT_RUN_FAILED)


def count(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless n is 1 ("1 line", "0 lines", "2 error lines")."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _n_lines(path: Path) -> int:
    """The lines in `path` (a progress bar's total), counted by its newlines."""
    n, last = 0, b"\n"
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (last != b"\n")


# The plan's estimate beside a bill: it was called an upper bound, and a default audit planned
# at $146.56 billed $157.30 (its prompts had more tokens than characters / 4).
NOT_A_BOUND = (" (the plan's estimate counted prompt tokens at characters / 4, which a "
               "tokenizer may pass: the bill can be above it)")


def _say_usage(rep: Any) -> None:
    """What the stored answers used and cost, from their own `usage`: the provider's bill
    for them (above the plan's estimate at times: that counted prompt tokens at characters /
    4, `Planner.estimate`, and is no bound) at the price the plan kept, named (list
    prices are a live call's: a provider's batch API bills half); answers with no usage are
    counted apart, not summed as 0 tokens; and how many the judge can hardly read (empty, or
    cut at max_tokens), told without its parser."""
    from judgeaudit.llm.client import _usd
    from judgeaudit.llm.plan import cost_at

    n = rep.ingested
    with_usage = n - rep.no_usage
    text = (f"the {count(n, 'answer')} stored used {rep.prompt_tokens:,} prompt + "
            f"{rep.completion_tokens:,} completion tokens (their usage")
    if rep.no_usage:
        text += (f"; {rep.no_usage} of them gave no usage (null or missing): left out of the "
                 "sums" + (f" and the bill, which covers the other {with_usage}"
                           if rep.cost_usd is not None else ""))
    text += ")"
    if rep.cost_usd is not None:
        by_rate = dict(rep.cost_by_rate)
        # the plan's words for the rate (a cache planned before the rate was kept: "", said
        # as the spec's prices, as before)
        text += f", {cost_at(rep.cost_usd, by_rate, _usd)}"
        if rep.unpriced:
            text += f" ({with_usage - rep.unpriced} of {n} priced)"
        if "list" in by_rate:
            text += (f": the bill for these answers sent as live calls{NOT_A_BOUND}; through "
                     f"a provider's batch API (OpenAI, Anthropic) they "
                     f"bill half, {_usd(by_rate['list'] / 2)} (batch=on in the "
                     "judge spec when planning prices them at that rate), and on a server of "
                     "your own (vllm run-batch) nothing")
        else:
            text += f": the provider's bill for these answers{NOT_A_BOUND}"
    elif with_usage:
        text += ("; the plan kept no price for them (give price_in and price_out in the judge "
                 "spec when planning)")
    console.print(text, highlight=False)
    if rep.empty or rep.cut:
        parts = [f"{rep.empty} empty" if rep.empty else "",
                 f"{rep.cut} cut off at max_tokens (finish_reason length)" if rep.cut else ""]
        console.print(styled(f"{' and '.join(p for p in parts if p)} of {n} answers",
                             "bold yellow",
                             ": the judge reads no verdict in those; the re-run counts them "
                             "unreadable"), highlight=False)


def _where(lines: list[int], total: int) -> str:
    """"line 4" / "lines 4, 9, ..." for the first few of `total` lines."""
    more = ", ..." if total > len(lines) else ""
    return f"line{'' if total == 1 else 's'} {', '.join(map(str, lines))}{more}"


def _say_duplicates(rep: Any, where: str) -> None:
    """Repeated custom_ids: the first line is kept. Two different answers to one request
    (an output file concatenated with a rerun's, a broken executor) are warned about with
    their lines: which one is right is not known here."""
    shown = [d for d in rep.duplicate_lines if d[3]] or rep.duplicate_lines
    pairs = "; ".join(f"custom_id {escaped(key[:12])} at lines {kept} and {n}"
                      for key, kept, n, _ in shown[:3])
    if len(shown) < (rep.duplicates_differing or rep.duplicates):
        pairs += "; ..."
    if rep.duplicates_differing:
        d = rep.duplicates_differing
        same = rep.duplicates - d
        console.print(Text.assemble(
            (f"{count(d, 'repeated custom_id')} with a different answer than the first",
             "bold yellow"),
            f" in {escaped(where)} ({pairs}): the first line of each is kept, the later "
            "ignored; check which is right (an output file joined with a rerun's?)"
            + (f"; {same} more {'repeats' if same == 1 else 'repeat'} the same answer"
               if same else "")), highlight=False)
    else:
        console.print(f"{count(rep.duplicates, 'repeated custom_id')} with the same answer "
                      f"in {where} ({pairs}); the first line of each kept", highlight=False)


# ---- judgeaudit batch status|cancel --------------------------------------------------------

batch_app = typer.Typer(help="Provider batches submitted by batch=on judges (OpenAI Batch API, "
                             "Anthropic Message Batches), as recorded in the cache.",
                        no_args_is_help=True)
CacheOpt = Annotated[Path | None, typer.Option(
    "--cache", help="SQLite cache file (default: $JUDGEAUDIT_CACHE or the user cache dir).")]
JudgeOpt = Annotated[str | None, typer.Option(
    "--judge", "-j", help="Reach the batches' API through this judge SPEC (default: the "
                          "provider, model and parameters recorded with each batch; the key "
                          "from the environment).")]


def _provider_for(row: dict[str, Any], judge: str | None) -> Any:
    from judgeaudit.llm import make_provider
    from judgeaudit.spec import parse_spec

    if judge:
        sp = parse_spec(judge)
        params = {k: v for k, v in sp.params.items() if k not in ("template", "orders")}
        return make_provider(sp.kind, sp.name or row["model"], params)
    return make_provider(row["provider"], row["model"], json.loads(row["params"] or "{}"))


async def _each(rows: list[dict[str, Any]], judge: str | None, op: str) -> list[Any]:
    out: list[Any] = []
    providers: list[Any] = []
    try:
        for row in rows:
            try:
                p = _provider_for(row, judge)
                providers.append(p)
                backend = p.batch_backend() if hasattr(p, "batch_backend") else None
                if backend is None:
                    # Recorded params include batch=on; a --judge without it still works.
                    p.batch = p.batch or _on()
                    backend = p.batch_backend()
                fn = backend.state if op == "status" else backend.cancel
                out.append(await fn(row["batch_id"]))
            except Exception as exc:  # one batch's failure must not hide the others
                out.append(exc)
    finally:
        for p in providers:
            await p.aclose()
    return out


def _on() -> Any:
    from judgeaudit.llm.batch import BatchSettings

    return BatchSettings()


def _fmt_time(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t)) if t else "-"


@batch_app.command("status")
def batch_status(
    cache: CacheOpt = None,
    judge: JudgeOpt = None,
    offline: Annotated[bool, typer.Option(
        help="Show what the cache recorded only; do not ask the provider.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Also finished batches.")] = False,
) -> None:
    """Batches recorded in the cache: open ones (a run resumes them) with their state at the
    provider, finished ones with --all.

    Example: judgeaudit batch status --offline --all"""
    from rich.table import Table

    from judgeaudit.cli.runner import open_cache
    from judgeaudit.llm.cache import FINAL_BATCH_STATES

    store = open_cache(cache, False)
    rows = store.batches()
    store.close()
    shown = [r for r in rows if all_ or r["status"] not in FINAL_BATCH_STATES]
    if not shown:
        what = "batches" if all_ else "open batches (--all shows finished ones)"
        console.print(f"no {what} in {store.path}", highlight=False)
        return
    live: list[Any] = [None] * len(shown)
    open_rows = [i for i, r in enumerate(shown) if r["status"] not in FINAL_BATCH_STATES]
    if not offline and open_rows:
        states = asyncio.run(_each([shown[i] for i in open_rows], judge, "status"))
        for i, st in zip(open_rows, states, strict=True):
            live[i] = st
    table = Table(title=f"batches in {store.path}")
    for col in ("batch", "judge", "requests", "recorded", "at the provider", "submitted",
                "updated"):
        table.add_column(col)
    for r, st in zip(shown, live, strict=True):
        if st is None:
            now = "-" if r["status"] in FINAL_BATCH_STATES else "(not asked)"
        elif isinstance(st, Exception):
            now = f"error: {str(st)[:80]}"
        else:
            counts = ", ".join(f"{k} {v}" for k, v in st.counts.items() if v)
            now = st.status + (f" ({counts})" if counts else "")
        table.add_row(r["batch_id"], f"{r['provider']}:{r['model']}", str(r["n"]), r["status"],
                      now, _fmt_time(r["created"]), _fmt_time(r["updated"]))
    console.print(table)


@batch_app.command("cancel")
def batch_cancel(
    batch_ids: Annotated[list[str] | None, typer.Argument(
        help="Batch ids to cancel (see `judgeaudit batch status`).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Cancel every open batch.")] = False,
    cache: CacheOpt = None,
    judge: JudgeOpt = None,
) -> None:
    """Cancel open batches at the provider. Answers finished before the cancel are still
    ingested by the next run of the command (which asks the rest again in a new batch).

    Example: judgeaudit batch cancel --all"""
    from judgeaudit.cli.runner import open_cache
    from judgeaudit.llm.batch import CANCEL_REQUESTED
    from judgeaudit.llm.cache import FINAL_BATCH_STATES

    if not batch_ids and not all_:
        raise fail("name the batch ids to cancel, or give --all")
    store = open_cache(cache, False)
    rows = {r["batch_id"]: r for r in store.batches()}
    store.close()
    if all_:
        chosen = [r for r in rows.values() if r["status"] not in FINAL_BATCH_STATES]
    else:
        unknown = [b for b in batch_ids or [] if b not in rows]
        if unknown:
            raise fail(f"not recorded in {store.path}: {', '.join(unknown)}")
        chosen = [rows[b] for b in batch_ids or []]
    if not chosen:
        console.print("no open batches to cancel", highlight=False)
        return
    states = asyncio.run(_each(chosen, judge, "cancel"))
    failed = 0
    store = open_cache(cache, False)
    for r, st in zip(chosen, states, strict=True):
        if isinstance(st, Exception):
            failed += 1
            console.print(Text.assemble(f"{escaped(r['batch_id'])}: ",
                                        ("not cancelled", "bold red"),
                                        f": {escaped(str(st)[:200])}"), highlight=False)
        else:
            # noted, so a run that cannot read the batch's state gives it up and asks its
            # requests again (it waited for it and failed again); one that can ingests the
            # answers finished before the cancel
            store.set_batch_status(r["batch_id"], st.final or r["status"], CANCEL_REQUESTED)
            console.print(f"{r['batch_id']}: {st.status}", highlight=False)
    store.close()
    if failed:
        raise typer.Exit(EXIT_RUN_FAILED)


def register(app: typer.Typer) -> None:
    """Add `ingest` and the `batch` group to `app` (once)."""
    if any(c.name == "ingest" for c in app.registered_commands):
        return
    app.command("ingest")(ingest)
    app.add_typer(batch_app, name="batch")
