"""judgeaudit CLI entry point."""

from __future__ import annotations

import inspect
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import typer.core

from judgeaudit.cli.format import (
    cached_text,
    calls_text,
    evaluate_table,
    failed_text,
    fmt_est,
    text_vs_probs_line,
    unreadable_line,
    usage_text,
)
from judgeaudit.cli.progress import LAST_ERROR, console, fail
from judgeaudit.cli.runner import (
    JsonOpt,
    checked,
    config_command,
    finish,
    gate_record,
    not_run_probes,
    recorded_exit_code,
    run_command,
    split_undecided,
    undecided_line,
    undecided_probes,
    unmeasured_probes,
    unmeasured_text,
    unrequested_not_run,
    write_outputs,
)
from judgeaudit.cli.terminal import SafeConsole, json_line, shown, styled
from judgeaudit.config import AuditConfig, EvaluateConfig
from judgeaudit.outcome import EXIT_RUN_FAILED, EXIT_TERMINATED, retries_text


class _Group(typer.core.TyperGroup):
    """The top-level command group. The bare command (`judgeaudit`, no argument) prints the
    full help on stdout and exits 0, as `pip` and `cargo` do: the help is what was asked
    for (click's `no_args_is_help` exits 2, a usage error, which a careful user reads as a
    mistake). Options without a command (`judgeaudit -v`) stay a usage error, exit 2."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            text = ctx.get_help()  # the rich help prints itself and returns ""
            if text:
                typer.echo(text)
            ctx.exit(0)
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_Group,
    name="judgeaudit",
    help="Audit LLM judges: find their biases, measure them, correct for them.\n\n"
         "Every run command also reads its settings from `--config FILE.toml` (keys: the "
         "option names with underscores; `judgeaudit schema COMMAND` prints them; options "
         "given on the command line override the file) and prints its result's summary as "
         "one JSON object on stdout with `--json` (all other output goes to stderr).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # Docstrings are hard-wrapped at 100 columns; markdown mode reflows them to the terminal.
    rich_markup_mode="markdown",
)


def _version(value: bool) -> None:
    if value:
        import judgeaudit

        typer.echo(f"judgeaudit {judgeaudit.__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    ctx: typer.Context,
    verbose: Annotated[bool, typer.Option("--verbose", "-v",
                                          help="Log calls and retries; show tracebacks.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    plan_only: Annotated[Path | None, typer.Option(
        "--plan-only", metavar="PLAN.jsonl",
        help="Send no model call: write the requests the command needs (OpenAI batch format, "
             "custom_id = cache key) to PLAN.jsonl and exit 0. Run them anywhere (vllm "
             "run-batch, a batch API), `judgeaudit ingest` the output, re-run the command.")
    ] = None,
) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    _redact_logs()
    from judgeaudit.cli import plan_cmd, progress

    progress.SHOW_TRACEBACKS = verbose

    plan_cmd.set_plan_path(plan_only, ctx.invoked_subcommand)


def _redact_logs() -> None:
    """Keys never reach the log: the HTTP libraries log request URLs under -v. Nor do raw
    control characters: a server's error body is quoted in the client's "retrying" and
    "stopped answering" lines (`terminal.SafeLogFilter`, after the redaction)."""
    from judgeaudit.cli.terminal import install_log_escaping
    from judgeaudit.llm.redact import install_log_redaction

    install_log_redaction()
    install_log_escaping()


@app.command()
@config_command(EvaluateConfig)
def evaluate(cfg: EvaluateConfig, json_out: bool) -> None:
    """Evaluate a judge on labelled data. Pairwise (a label per pair): accuracy under a named
    pair rule, position consistency, kappa. Pointwise (a gold score per response): Pearson,
    Spearman and Kendall correlations with the gold scores (item, group, system level), exact
    agreement and mean absolute error.

    Example: judgeaudit evaluate --judge 'sim?position=0.5&seed=0' --data builtin:facts
    --limit 40 --out out/evaluate"""
    from judgeaudit.commands import SAID_EARLY, prepare_evaluate
    from judgeaudit.report import write_results

    run = checked(lambda: prepare_evaluate(cfg, cli=True))
    res = run_command(cfg, run)
    pointwise, selection = run.info["pointwise"], run.info["selection"]
    path = write_results(cfg.out / "results.json", res)
    for w in res.get("warnings") or []:
        if w not in SAID_EARLY:  # a template's drop was said before the calls
            console.print(styled("warning:", "bold yellow", w))
    console.print(evaluate_table(res))
    order_mixup = _replay_order_warning(res)
    if order_mixup:
        console.print(styled("warning:", "bold yellow", order_mixup))
    c = res["calls"]
    what = "scores" if pointwise else "verdicts"
    console.print(
        f"calls: {c['made']} made, {cached_text(c)}, {retries_text(c) or '0 retries'}, "
        f"{failed_text(c)}{usage_text(c)}; {res['n_invalid']} invalid {what} of "
        f"{res['n_calls_planned']}; {res['seconds']:.1f} s; prompt {res['prompt_hash'][:12]}"
    )
    if said := unreadable_line(res.get("invalid_examples")):
        console.print(said, highlight=False, markup=False)
    if tvp := text_vs_probs_line(res.get("text_vs_probs")):
        console.print(tvp, highlight=False)
    if selection["kind"] == "sample":
        console.print(f"items: a random sample of {selection['n']} of {selection['of']} "
                      f"(seed {selection['seed']})")
    console.print(f"results: {path}")
    finish(res, json_out)


def _replay_order_warning(res: Any) -> str:
    """A replay whose two orders disagree on most pairs: its verdict_map may read the shown
    positions as responses (or the reverse). A file recording the position picked
    (first/second) mapped to 1/2 read a judge right on 9 of 10 in both orders as 50% with
    position consistency 0% and no word about it. A judge that nearly always picks one
    position looks the same, so the warning names both and how to tell them apart."""
    from judgeaudit.outcome import run_failed
    from judgeaudit.spec import parse_spec

    try:
        spec = parse_spec(str(res.get("judge") or ""))
    except ValueError:
        return ""
    pc = res.get("position_consistency_valid")
    if spec.kind != "replay" or run_failed(res) or not isinstance(pc, dict):
        return ""
    value, n, ci = pc.get("value"), pc.get("n") or 0, pc.get("ci95") or [None, None]
    # most pairs disagree, and the interval says so (a few pairs prove nothing)
    if value is None or n < 5 or value >= 0.5 or ci[1] is None or ci[1] >= 0.5:
        return ""
    flips = round((1 - value) * n)
    fp = (res.get("first_position_rate") or {}).get("value")
    fp_txt = f" (first-position rate here {100 * fp:.0f}%)" if fp is not None else ""
    check = spec.name + ("?" + str(spec).split("?", 1)[1] if spec.params else "")
    return (f"the replayed verdicts of the two orders disagree on {flips} of {n} pairs "
            f"(position consistency {100 * value:.1f}% [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]), "
            "far below a judge's usual: the verdict_map may read the shown positions as "
            "responses, or responses as positions (A/B = the response shown first/second, "
            "1/2 = response_1/response_2 whichever was shown first). Unless the judge nearly "
            f"always picks one position{fp_txt}, check with `judgeaudit replay-check "
            f"'{check}' --data {res.get('data')}` under each mapping (e.g. first:A,second:B "
            "against first:1,second:2) and compare the accuracy it prints")


def _parse_fail_on(value: str | None) -> tuple[str, set[str]]:
    if value is None or value.strip() == "none":  # none: turns off a config file's gate
        return "never", set()
    value = value.strip()
    if value in ("biased", "flag", "any"):
        return value, set()
    names = {v.strip() for v in value.split(",") if v.strip()}
    if not names:  # `--fail-on "$GATE"` with GATE unset turned the gate off silently
        raise fail("--fail-on is empty: give biased, flag, any or probe names (leave the "
                   "option out, or give none, for no gate)")
    return "probes", names


@app.command()
@config_command(AuditConfig, inspect.Parameter(
    "list_probes", inspect.Parameter.KEYWORD_ONLY, default=False,
    annotation=Annotated[bool, typer.Option("--list", help="List probes and exit.")]))
def audit(cfg: AuditConfig, json_out: bool, list_probes: bool) -> None:
    """Run the bias battery against a judge; write results.json and report.html. Probes that
    need no label (position) use every pair; the others use pairs labelled 1 or 2. Items left
    out are counted by reason.

    Example: judgeaudit audit --judge 'sim:biased?seed=0' --data builtin:facts --n 30 --out
    out/audit"""
    from judgeaudit.audit.probe import get_probe, probe_names
    from judgeaudit.commands import SAID_EARLY, prepare_audit

    if list_probes:
        probes = [get_probe(name) for name in probe_names()]
        if json_out:  # one JSON object on stdout, as --json gives everywhere
            typer.echo(json_line({"probes": [
                {"name": p.name, "default": bool(p.default), "description": p.description}
                for p in probes]}))
        for p in probes:
            tag = "default" if p.default else "--full"
            console.print(styled(p.name, "bold", f"({tag}): {p.description}"))
        raise typer.Exit(0)
    gate_on, fail_undecided = split_undecided(cfg.fail_on, "audit")  # biased,undecided
    mode, must_pass = _parse_fail_on(gate_on)
    run = checked(lambda: prepare_audit(cfg, cli=True))
    if mode != "never":  # a run a fatal error ends records its gate too
        run.info["fail_on"] = cfg.fail_on
    unknown = must_pass - set(run.info["names"])
    if unknown:
        from judgeaudit.audit.probe import did_you_mean

        known = probe_names()
        bogus = sorted(u for u in unknown if u not in known)
        hint = did_you_mean(bogus, known)
        what = (f"unknown probe(s): {', '.join(bogus)}{hint} (known: {', '.join(known)})"
                if bogus else f"probe(s) not run: {', '.join(sorted(unknown))} (run: "
                f"{', '.join(run.info['names'])}); add them to --probes")
        raise fail(f"--fail-on names {what}")
    res = run_command(cfg, run)
    limit = run.info["limit"]
    from judgeaudit.audit.probe import flagged, unchecked_flags

    biased, flags = set(res["summary"]["biased"]), set(flagged(res["probes"]))
    failing = {"never": set(), "biased": biased, "flag": flags, "any": biased | flags,
               "probes": biased & must_pass}[mode]
    # a gate it could not check (a threshold without data, a named probe that measured
    # nothing) cannot pass
    unchecked = unchecked_flags(res["probes"]) if mode in ("flag", "any") else []
    unmeasured = unmeasured_probes(res["probes"], must_pass) if mode == "probes" else {}
    # probes a verdict gate could not decide (underpowered; adaptive: the budget stopped
    # them undecided): said, and failing it with ...,undecided (they passed silently)
    undecided = undecided_probes(res, must_pass if mode == "probes" else None) \
        if mode in ("biased", "any", "probes") else []
    # probes it gates that measured nothing (not_run): named whatever --fail-on says (a gate
    # passed beside 4 of them naming none); a verdict gate cannot vouch for them, so
    # ...,undecided fails on them as undecided. Named ones are unmeasured (exit 3) as before.
    not_run = not_run_probes(res, must_pass if mode == "probes" else None) \
        if mode in ("biased", "any", "probes") else []
    # ... except those the user never chose whose requirement the run lacks (--full's
    # self_preference without --panel): named, but no gate fails on them
    not_gated = unrequested_not_run(
        not_run, {p.strip() for p in (cfg.probes or "").split(",")} | must_pass,
        has_panel=bool((cfg.panel or "").strip()))
    if mode != "probes":
        undecided = sorted({*undecided, *(set(not_run) - set(not_gated))})
    if fail_undecided:
        failing = failing | set(undecided)
    if mode != "never":  # in results.json and --json, not only in the exit code
        res["gate"] = gate_record(res, cfg.fail_on, failing, [*unchecked, *unmeasured],
                                  why=unmeasured, undecided=undecided, not_run=not_run,
                                  not_gated=not_gated)
    path, report = write_outputs(cfg.out, res)
    from judgeaudit.cli.format import audit_table, panel_table

    for w in res.get("warnings") or []:
        if w not in SAID_EARLY:  # a template's drop was said before the calls
            console.print(styled("warning:", "bold yellow", w))
    console.print(audit_table(res, console.width))
    from judgeaudit.audit.length_control import length_lines

    for line in length_lines(res["probes"]):
        console.print(line, highlight=False)
    if res.get("length_control") and not any("length_control" in (p.get("rates") or {})
                                             for p in res["probes"].values()):
        console.print("length control: no probe run here adds words to a response (verbosity "
                      "measures length itself), so there was nothing to control",
                      highlight=False)
    for name, p in res["probes"].items():  # n = 0 and "underpowered": say why
        for note in p.get("notes") or []:
            if note.startswith("not run:"):
                console.print(f"{name}: {note}", highlight=False, markup=False)
    if res.get("panel"):
        pn = res["panel"]
        console.print(panel_table(pn))
        value, ci, n = fmt_est(pn["agreement"])
        left = pn.get("n_incomplete") or 0
        console.print(f"panel agreement {value} {ci} (n = {n}); {pn['n_disagreements']} "
                      "disagreements kept in results.json"
                      + (f"; {left} items left out, some judge's verdict invalid" if left
                         else ""))
    its = res.get("items") or {}
    sel = its.get("selection") or {}
    line = f"{res['n_items']} items judged of {its.get('given', res['n_items'])}"
    if sel.get("kind") == "sample":
        line += (f" (a random sample of {sel.get('n')} of {sel.get('of')}, seed "
                 f"{sel.get('seed')})")
    if limit is not None and not cfg.adaptive:
        line += f"; each probe takes the first {limit} pairs it can use"
    console.print(line)
    if res.get("adaptive"):
        for line in _adaptive_lines(res):
            console.print(line, highlight=False, markup=False)
        for note in res.get("notes") or []:  # a later round the budget cut, said
            if note.startswith("the budget"):
                console.print(f"note: {note}", highlight=False, markup=False)
    if res.get("dropped"):
        # distinct items per reason: an item one probe left out for one reason and another
        # for another counts under both, so the counts need not add up to the items left out
        console.print("left out (distinct items, by reason; an item left out by two probes "
                      "for two reasons counts under each): " + ", ".join(
                          f"{k} {v}" for k, v in res["dropped"].items()))
    if tvp := text_vs_probs_line((res.get("baseline") or {}).get("text_vs_probs"),
                                 " (unperturbed verdicts)"):
        console.print(tvp, highlight=False)
    console.print(calls_text(res), highlight=False)
    if said := unreadable_line(res.get("unreadable_examples")):
        console.print(said, highlight=False, markup=False)
    console.print(f"report: {report}")
    console.print(f"results: {path}")
    if (said := undecided_line(res.get("gate") or {}, "audit")) is not None:
        console.print(styled("gate:", "bold yellow", said), highlight=False)
    code = (1 if failing else EXIT_RUN_FAILED if unmeasured or unchecked else 0)
    finish(res, json_out, code)  # before the gate: no gate passes a failed run
    if unmeasured and not failing:
        raise fail(unmeasured_text(cfg.fail_on, unmeasured), EXIT_RUN_FAILED)
    if unmeasured:  # tripped anyway; the probes it could not check are said too
        console.print("note: " + unmeasured_text(cfg.fail_on, unmeasured), highlight=False,
                      markup=False)
    if unchecked and not failing:
        raise fail(f"fail-on {mode}: the threshold check of {', '.join(unchecked)} could not "
                   "be made (no valid verdict for its rate: calls not sent or answers "
                   "unreadable), so the gate cannot pass; run again with a larger budget",
                   EXIT_RUN_FAILED)
    if failing:
        console.print(styled("fail-on:", "bold red", ", ".join(
            f"{n} (not run)" if n in not_run else f"{n} (undecided)" if n in undecided
            else n for n in sorted(failing))))
        raise typer.Exit(1)


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _adaptive_lines(res: dict[str, Any]) -> list[str]:
    """The adaptive audit's terminal summary: rounds, the judge calls by where their answers
    came from (sent, shared between probes, from the cache) against the fixed-n audit's,
    why the run stopped, and each probe's stop (its e-value: the table's q is the fixed-n
    test's, which the adaptive verdicts do not use)."""
    from judgeaudit.audit.adaptive import SHORT_REASONS

    ad = res["adaptive"]
    src = ad.get("calls_by_source")
    how = ""
    if src:
        parts = [f"{src['sent']} sent"]
        if src.get("shared"):
            parts.append(f"{src['shared']} shared between probes (a request asked again in "
                         "this run, answered once)")
        if src.get("from_cache"):
            parts.append(f"{src['from_cache']} from the cache of earlier runs")
        if src.get("failed"):
            parts.append(f"{src['failed']} failed")
        how = ": " + ", ".join(parts)
    lines = [f"adaptive: {_plural(ad['rounds'], 'round')} of {ad['round_size']} items; "
             f"{ad['calls']} judge calls vs about {ad['fixed_n_calls']} for the fixed-n audit "
             f"at max-n {ad['max_n']}{how}",
             f"stop: {ad.get('stop') or ad['stopped_by']}"]
    for name, p in res["probes"].items():
        a = p.get("adaptive") or {}
        if not a:
            continue
        reason = a.get("stop_reason") or ""
        if reason == "cleared" and p.get("verdict") == "biased":
            reason = "rejected"  # e-BH's final set: biased takes precedence
        e = a.get("evalue")
        lines.append(f"  {name}: {SHORT_REASONS.get(reason, reason)} at round "
                     f"{a.get('rounds')} after {_plural(a.get('items'), 'item')}"
                     + (f", e-value {e:.3g}" if isinstance(e, int | float) else ""))
    return lines


@app.command()
def report(
    results: Annotated[Path, typer.Argument(help="A results directory or results.json.")],
    out: Annotated[Path | None, typer.Option(help="Where to write the HTML.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Rebuild report.html from results.json alone. With --json the summary of that result
    is printed on stdout, as the command that wrote it prints it with --json.

    A result made by older methods (or a newer judgeaudit) is said on stderr, in --json's
    warnings and as a banner on the page (`judgeaudit.methods.notes`).

    Example: judgeaudit report out/audit"""
    from judgeaudit.methods import notes
    from judgeaudit.report import read_results, write_report

    try:
        path = write_report(results, out)  # a damaged file: ValueError naming it and the field
        doc = read_results(results)
        summary = _report_summary(results, doc) if json_out else None
    except ValueError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        if out is not None and exc.filename and Path(exc.filename).parent == out.parent:
            # writing the report (the name of its temp file is no use to a user)
            raise fail(f"--out {out}: cannot write the report ({exc.strerror or exc})"
                       ) from None
        raise fail(str(exc)) from None
    said = notes(doc)  # older or newer methods: before the numbers are trusted
    for note in said:
        console.print(styled("warning:", "bold yellow", note), highlight=False)
    console.print(f"report: {path}")
    if summary is not None:
        if said:
            summary["warnings"] = [*said, *(summary.get("warnings") or [])]
        # the exit code the command that wrote it gave, as its --json said (a tripped gate
        # read exit_code null, a failed audit ok: false beside exit 0); report itself exits
        # 0: it rebuilt the report, and the gate's step already failed with that code
        code = recorded_exit_code(doc or {})
        typer.echo(json_line({**summary, "exit_code": code} if code else summary))


def _report_summary(results: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """`report --json`'s summary of a results file, as the command that wrote it prints it;
    a field the summary reads that has a type judgeaudit never writes there is bad input
    (ValueError naming the file; it was exit 3, "a bug")."""
    from judgeaudit.result import Result
    from judgeaudit.results_shape import check_shape, unreadable

    path = results / "results.json" if results.is_dir() else results
    check_shape(doc, path)
    try:
        return Result.from_document(doc).summary()
    except (TypeError, AttributeError, KeyError) as exc:
        logging.getLogger("judgeaudit.report").info("summarising %s", path, exc_info=True)
        raise unreadable(path, exc) from exc


@app.command()
def judges() -> None:
    """List providers, local model presets and prompt templates.

    Example: judgeaudit judges"""
    from judgeaudit.judges.factory import JUDGE_PARAM_HELP
    from judgeaudit.judges.templates import builtin_templates, load_template
    from judgeaudit.llm import available
    from judgeaudit.llm.registry import provider_class

    out = SafeConsole(highlight=False)  # the listing is the command's output: stdout, greppable
    out.print("providers: " + ", ".join(available()))
    out.print(styled("every judge", "bold", "parameters:"), highlight=False)
    for key, meaning in JUDGE_PARAM_HELP.items():
        out.print(f"  {key}: {meaning}", highlight=False, markup=False)
    for name in available():
        try:
            cls = provider_class(name)
        except (ImportError, ValueError):  # an optional SDK missing
            continue
        # replay's options are open-ended (any other key filters a column): param_help
        known = cls.known_params or getattr(cls, "param_help", None)
        if known:
            out.print(styled(name, "bold", "parameters:"), highlight=False)
            for key, meaning in known.items():
                out.print(f"  {key}: {meaning}", highlight=False, markup=False)
        presets = _sim_presets(cls)
        if presets:  # `sim:biased`, as `audit --help` uses it
            out.print(styled(name, "bold", f"presets ({name}:PRESET; parameters given "
                             "override the preset's):"), highlight=False)
            for preset, values in presets.items():
                what = ", ".join(f"{k}={v:g}" for k, v in values.items()) or "no bias"
                out.print(f"  {preset}: {what}", highlight=False, markup=False)
    try:
        from judgeaudit.llm.local_model import PRESETS

        out.print("local presets: " + ", ".join(PRESETS))
    except ImportError:
        pass
    for name in builtin_templates():
        out.print(f"template {name}: sha256 {load_template(name).sha256[:12]}")


def _sim_presets(cls: type) -> dict[str, dict[str, float]]:
    """The named judges of a simulated provider (`sim:biased`); {} for any other."""
    from judgeaudit.llm.providers.sim import PRESETS, SimProvider

    return dict(PRESETS) if isinstance(cls, type) and issubclass(cls, SimProvider) else {}


def _register_commands() -> None:
    """Commands that live in their own modules (one per capability)."""
    import importlib

    for name in ("cache", "compare", "model", "plan", "replay", "rank", "scoring", "hubj",
                 "schema", "selfcheck"):
        importlib.import_module(f"judgeaudit.cli.{name}_cmd").register(app)


_register_commands()


# Seconds a run a signal stopped has to wind down (its calls under way cancelled and
# counted, its unfinished document written) before the process ends regardless: a worker
# thread in a local model's forward pass, or anything else that holds the run up, must not
# keep a container past its stop timeout (docker waits 10 s before SIGKILL).
SIGTERM_GRACE = 5.0
# Seconds after the first signal in which later ones are the same request (a double Ctrl-C,
# a supervisor's SIGINT then SIGTERM): ignored, so the run still says how it ended, once.
# A signal after that ends the process at once (`_end_now`): the user insists.
REPEAT_WINDOW = 1.0


def _on_signal(signum: int, frame: object) -> None:
    """SIGINT (Ctrl-C) and SIGTERM (a CI job cancelled, a container stopped, `kill`) end a
    run the same way: its task is cancelled, so the calls under way are counted as
    cancelled, the calls line and --json say so, and the run's folder says it was
    interrupted, by which signal, with its exit code; then it says, in one line, what a
    re-run costs (resume from the cache, or pay again under --no-cache) and exits 130
    (SIGINT) or 143 (SIGTERM) (`runner.run_async`). The first signal decides the exit
    code: later ones within `REPEAT_WINDOW` seconds are ignored (in quick succession they
    lost the message, or printed two, exit 130 or 143 by chance); one after it, or the run
    not winding down within `SIGTERM_GRACE` seconds, ends the process at once, with the
    message if it was not said yet. With a cache, the calls in flight at the first signal
    get a short grace period to finish and be cached first, nothing new being sent
    (`runner.terminate_run`); a signal during it after `REPEAT_WINDOW` stops waiting and
    writes nothing more (`runner.cut_grace`). A run whose last call was sent before the
    signal and whose calls in flight all answer within the grace is complete: it ends as
    it would have (`runner.finished_after_signal`); one after the pipeline ended waits for
    the results to be written and printed, and the run exits with its own code, saying so
    (`runner.defer_signal`). SIGINT when no run is under way raises
    KeyboardInterrupt as Python does; SIGTERM ends the process at once. Nothing is lost
    either way: every finished call is already committed to the cache (as after a kill -9,
    tests/llm/test_resume.py)."""
    import threading
    import time

    from judgeaudit.cli import runner

    st = _TERMINATING
    if not st.get("asked"):
        st.update(asked=True, signal=signum, at=time.monotonic())
        if runner.terminate_run(signum):
            # (plus the grace the calls in flight were given to finish and be cached)
            timer = threading.Timer(SIGTERM_GRACE + runner._RUNNING["grace"], _end_now)
            timer.daemon = True
            runner._RUNNING["timer"] = timer  # called off if the run finishes anyway
            timer.start()
            return
        if runner.defer_signal(signum, REPEAT_WINDOW):
            return  # the pipeline has ended: its results are written first, then said
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
    elif time.monotonic() - st.get("at", 0.0) < REPEAT_WINDOW:
        # the same request again (a double Ctrl-C, SIGINT then SIGTERM): the first one is
        # being handled, the calls in flight keep their grace (a double Ctrl-C cut it, and
        # the re-run paid for their answers again)
        return
    elif runner.cut_grace():
        return  # a later signal while the calls in flight had their grace: stop waiting
    _end_now()


_on_sigterm = _on_signal  # its name before SIGINT came through it too
_TERMINATING: dict[str, Any] = {"asked": False, "signal": None, "at": 0.0}


def _end_now() -> NoReturn:
    """End the process at once with the first signal's exit code (143 SIGTERM, 130
    SIGINT), saying so and what a re-run costs, unless the run said it already (and, when
    it had not, the calls it made and its --json summary)."""
    import contextlib
    import os

    from judgeaudit.cli import runner

    signum = _TERMINATING.get("signal") or signal.SIGTERM
    with contextlib.suppress(Exception):  # ending now matters more than the summary
        if runner._RUNNING["stop"] is None:
            runner._RUNNING["stop"] = signum
        runner.say_stopped()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(runner.stop_code(signum) or EXIT_TERMINATED)


def main() -> None:
    """Console entry point. After Ctrl-C (exit 130) the process ends at once instead of
    waiting for a local model's forward pass in its worker thread to finish: every finished
    call is already committed to the cache. SIGTERM ends it the same way, with exit 143
    (`_on_signal`). Once the outcome is said, a signal ends the process at once with the
    run's own exit code (`_exit_on_signal`), as does the end of a command a signal waited
    for (`runner.defer_signal`). A reader that goes away (`| head -1`) ends no run: what is
    written after it is discarded and the exit code is the run's own (`crash.PipeSafe`)."""
    from judgeaudit.cli.crash import guard_std_streams, silence_std_streams

    signal.signal(signal.SIGTERM, _on_signal)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when ignored
        signal.signal(signal.SIGINT, _on_signal)  # (a background job's SIGINT stays so)
    guard_std_streams()
    wants_json = "--json" in sys.argv[1:]
    tee = _Tee(sys.stderr) if wants_json else None
    if tee is not None:
        sys.stderr = tee  # type: ignore[assignment]
    try:
        app()
    except SystemExit as exc:
        from judgeaudit.cli.runner import note_deferred

        # The outcome is decided and said: a signal from now on ends the process at once
        # with the run's own exit code (`_exit_on_signal`)
        if exc.code == 2 and tee is not None and not LAST_ERROR.get("json"):
            # an option the parser refused (--n 0, an unknown option, a missing --config):
            # --json still prints one object, with the error the parser printed
            typer.echo(json_line({**_command_named(), "ok": False,
                                  "reason": tee.error_text() or "bad usage", "exit_code": 2}))
        code = _own_exit_code(exc.code)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_on_signal(code))
        if note_deferred(exc.code):  # a signal that waited for the results to be written:
            _exit_now(code)  # it asked to stop, so no wait for a worker thread either
        if exc.code in (130, EXIT_TERMINATED):  # Ctrl-C, SIGTERM: end now (see above)
            _exit_now(exc.code)
        raise
    except BrokenPipeError:  # past PipeSafe (nothing known writes around it): the command
        # ended where it wrote, so its outcome is unknown: a failed run, never a gate's 1
        silence_std_streams()
        sys.exit(EXIT_RUN_FAILED)
    except Exception as exc:
        _crashed(exc)


def _own_exit_code(code: object) -> int:
    """The exit code Python gives for `SystemExit(code)`: None 0, an int itself, else 1
    (a message, printed)."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _exit_now(code: int) -> NoReturn:
    """End the process with `code` now: what was printed flushed, no wait for a non-daemon
    thread (a local model's forward pass in its executor: Python's exit joins it)."""
    import contextlib
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a reader gone (`| head -1`): nothing to flush
            stream.flush()
    os._exit(code)


def _exit_on_signal(code: int) -> Callable[[int, object], None]:
    """The handler of SIGINT and SIGTERM once a command's outcome is decided and said: end
    the process at once with the run's own exit code `code`. Ignored (b7dfcdd), the signal
    left Python's exit waiting for every non-daemon thread (a forward pass of the local
    backend: a CI cancel did not end the process); left to the default action (the
    interpreter's teardown resets our handler), it killed the process, exit -2, beside a
    folder that says ok."""

    def handler(signum: int, frame: object) -> None:
        _exit_now(code)

    return handler


def _command_named() -> dict[str, str]:
    """{"command": NAME} for the command the argument list names (the first argument that is
    one), as every other --json object carries; {} when none is."""
    names = set(getattr(typer.main.get_command(app), "commands", None) or {})
    name = next((a for a in sys.argv[1:] if a in names), None)
    return {"command": name} if name else {}


class _Tee:
    """stderr as it is, keeping what was written (for --json's object on a usage error)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.parts = inner, []

    def write(self, s: str) -> int:
        self.parts.append(s)
        return self.inner.write(s)

    def error_text(self) -> str:
        """The error box's (or the error: line's) text, box drawing removed."""
        import re

        text = "".join(self.parts)
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
        lines = [re.sub(r"[\u2500-\u257f]", " ", ln).strip() for ln in text.splitlines()]
        keep = [ln for ln in lines if ln and not ln.startswith(("Usage:", "Try ")) and ln
                != "Error"]
        return " ".join(" ".join(keep).split()).removeprefix("error: ")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _crashed(exc: Exception) -> NoReturn:
    """An error no command expected (a full disk, a plugin failing, a bug) ends with exit 3,
    the run failed, never with Python's own exit 1, which is a tripped `--fail-on` gate: a
    release gate must not read a crash as "the judge is biased". An OSError (no space left,
    a file too large, no permission) is said in one line; a plugin's code that raised is
    named with its traceback (`crash.crash_reason`); anything else is a bug and keeps its
    traceback. A run that had begun its work has recorded the failure in its output folder
    (`runner.record_crash`), and the message says where."""
    import traceback

    from judgeaudit.cli.crash import crash_reason
    from judgeaudit.cli.runner import CRASHED

    doc = None
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        reason = f"{exc.strerror or exc}{where}"
        # (it said the finished calls were in the cache under --no-cache too)
        sys.stderr.write(f"error: {shown(reason)} (the run failed: exit 3; a re-run takes the "
                         "calls it finished from the cache, unless --no-cache was given)\n")
    else:
        # (an exception's message may quote data: its acting characters shown)
        sys.stderr.write(shown(traceback.format_exc()))
        reason, plugin = crash_reason(exc)
        doc = CRASHED["doc"] if CRASHED["exc"] is exc else None
        saved = f"; recorded in {CRASHED['path']}" if doc is not None else ""
        if plugin:
            sys.stderr.write(f"error: {shown(reason)} (the run failed: exit 3{saved}; see the "
                             "traceback above, and report it to the plugin's authors)\n")
        else:
            sys.stderr.write(f"error: {shown(reason)}; please report it with the traceback "
                             f"above (the run failed: exit 3{saved})\n")
    sys.stderr.flush()
    if "--json" in sys.argv[1:]:  # --json prints one object whatever ends the run
        if doc is not None:
            from judgeaudit.result import Result

            summary = {**Result.from_document(doc).summary(), "exit_code": EXIT_RUN_FAILED}
        else:
            summary = {"ok": False, "reason": reason, "exit_code": EXIT_RUN_FAILED}
        typer.echo(json_line(summary))
    sys.exit(EXIT_RUN_FAILED)


if __name__ == "__main__":
    main()
