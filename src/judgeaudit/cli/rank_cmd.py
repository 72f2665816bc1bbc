"""`judgeaudit rank` (live bias-aware top-k ranking with any judge) and `judgeaudit rank-eval`
(offline evaluation of acquisition rules and models against a full verdict matrix).

Each command builds its Config (`judgeaudit.config.RankConfig`, `RankEvalConfig`) from its
options and `--config FILE.toml`, prepares the run the Python API runs
(`judgeaudit.commands.prepare_rank`, `prepare_rank_eval`), runs it the CLI's way
(`judgeaudit.cli.runner.run_command`), writes results.json and report.html, prints the
outcome and maps it to the exit code. `register(app)` adds both commands to a typer app (the
main CLI calls it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import typer
from rich.console import Group
from rich.live import Live
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

from judgeaudit.cli.format import calls_text
from judgeaudit.cli.progress import RateColumn, console
from judgeaudit.cli.runner import (
    checked,
    config_command,
    finish,
    run_command,
    session_bars,
    write_outputs,
)
from judgeaudit.cli.terminal import shown, styled
from judgeaudit.config import RankConfig, RankEvalConfig
from judgeaudit.outcome import run_failed
from judgeaudit.rank.run_eval import parse_seeds

if TYPE_CHECKING:
    from judgeaudit.session import Progress as ProgressEvent


def escape(text: str) -> str:
    """Acting characters shown (`terminal.shown`; the console prints no markup): item ids
    come from the user's pool file, and an ESC or a right-to-left override in one reached
    the terminal."""
    return shown(text)


def _num(x: float, spec: str = "+.3f") -> str:
    """``x`` formatted, a value that is 0 up to rounding as 0 (not -0.000)."""
    s = format(x, spec)
    try:
        if float(s) == 0.0:
            return format(0.0, spec)
    except ValueError:  # nan, inf
        pass
    return s


def _fmt_iv(d: dict) -> str:
    s = f"{_num(d['estimate'])} [{_num(d['lo'])}, {_num(d['hi'])}]"
    if "planted" in d:
        s += f"  planted {_num(d['planted'])}"
        if "covered" in d:
            s += " (covered)" if d["covered"] else " (NOT covered)"
    return s


def register(app: typer.Typer) -> None:
    """Add `rank` and `rank-eval` to ``app``."""
    app.command("rank")(rank)
    app.command("rank-eval")(rank_eval_cmd)


# ---- rank ----------------------------------------------------------------------------------

def _topk_table(pool: Any, fit: Any, k: int, membership: np.ndarray, done: int, budget: int,
                invalid: int, not_sent: int = 0) -> Table:
    from judgeaudit.rank.membership import topk_set_grouped

    t = Table(title=f"top-{k} so far: {done - not_sent}/{budget} comparisons judged"
              + (f" ({invalid} invalid)" if invalid else "")
              + (f" ({not_sent} not sent)" if not_sent else "")
              + "; the fit shown is the one that chose this round", title_justify="left")
    t.add_column("id")
    t.add_column("theta", justify="right")
    t.add_column("P(top-k)", justify="right")
    top = topk_set_grouped(fit.theta, k, pool.groups)
    for i in sorted(top, key=lambda i: -fit.theta[i])[:12]:
        t.add_row(escape(pool.items[i].id), f"{fit.theta[i]:+.2f}", f"{membership[i]:.2f}")
    return t


class _RankingView:
    """What `rank` shows while it runs: a bar over the comparison budget and, after every
    judged round, the current top-k (a rich Live on stderr), from the first progress event
    (the judge is made by then) to the end of the run."""

    def __init__(self) -> None:
        self.inp: Any = None  # the checked request (`RankInputs`), set once prepared
        self.invalid = 0
        self.not_sent = 0  # picks the client did not send (a cap): not invalid
        self.live: Live | None = None
        self.bar = Progress(SpinnerColumn(), TextColumn("[bold]ranking"), BarColumn(),
                            MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(),
                            TextColumn("eta"), TimeRemainingColumn(), console=console)
        self.task: Any = None

    def on_call(self, v: Any) -> None:
        self.invalid += int(v.invalid)
        self.not_sent += int(v.not_sent)
        if self.task is not None:
            self.bar.advance(self.task)

    def on_batch(self, done: int, fit: Any, ctx: Any) -> None:
        if self.live is not None:
            self.live.update(Group(self.bar, _topk_table(
                self.inp.pool, fit, self.inp.k, ctx.membership, done, self.inp.cfg.budget,
                self.invalid, self.not_sent)))

    @contextmanager
    def show(self) -> Iterator[Callable[[ProgressEvent], None]]:
        if not console.is_terminal:
            # a log file or CI: a Live draws nothing there until the end (a 100 s rank wrote
            # 0 bytes at 85 s), so plain progress lines as every command writes them
            # (`progress.PlainBar`: the first at once, then every 30 s)
            with session_bars() as bars:
                yield bars
            return
        with ExitStack() as stack:

            def on_progress(ev: ProgressEvent) -> None:
                if self.live is None:
                    self.task = self.bar.add_task("ranking", total=ev.total)
                    # transient: the final table replaces it (it trails by one round)
                    self.live = stack.enter_context(Live(
                        self.bar, console=console, refresh_per_second=8, transient=True))

            yield on_progress


@config_command(RankConfig)
def rank(cfg: RankConfig, json_out: bool) -> None:
    """Find the top-k of a pool with a judge under a comparison budget, correcting for the
    judge's covariate and position biases (bias-aware Bayesian Bradley-Terry, top-k-aware active
    comparisons). Items answering different prompts are never compared: each prompt group
    (items with the same prompt text) is ranked on its own and --k applies within each group
    (5 prompts at --k 3 give 15 items), so at least one group needs 2 items. Items never
    usefully compared are counted, listed and never marked in the top-k. Exit 3 when the run
    judged too little (--min-valid comparisons with a valid verdict, at most --max-failed of
    the calls failed or of the answers unreadable). With --plan-only the random and
    roundrobin rules plan the whole budget in one run (their picks do not depend on the
    answers); the other rules plan one round (--refit-every comparisons) per run: ingest its
    answers and re-run for the next round.

    Example: judgeaudit rank --judge 'sim?length=1&position=0.3' --items
    'builtin:controlled?n=16&k=4' --budget 60 --samples 300 --out out/rank"""
    from judgeaudit.commands import prepare_rank

    view = _RankingView()
    run = checked(lambda: prepare_rank(cfg, on_batch=view.on_batch, on_call=view.on_call,
                                       cli=True))
    view.inp = run.info["inputs"]
    doc = run_command(cfg, run, show=view.show)
    console.print()
    path, report = write_outputs(cfg.out, doc)
    _print_rank(doc)
    console.print(f"results: {path}")
    console.print(f"report: {report}")
    finish(doc, json_out)


def _print_rank(doc: dict) -> None:
    if not run_failed(doc):  # a failed run's ranking is no result
        _print_ranking(doc, int(doc["config"]["k"]))
    console.print(f"{doc['n_comparisons']} comparisons ({invalid_text(doc)}: left out "
                  f"of the fit; {doc['n_ties']} ties: half a win for each side); "
                  f"{not_sent_text(doc)}{calls_text(doc)}")
    _print_warnings(doc)


def not_sent_text(doc: dict) -> str:
    """"49 of the budget's 100 not sent (the spend cap is reached: see the warning); ", or
    "" when every pick was sent: a cap stop's picks read as invalid verdicts."""
    from judgeaudit.rank.run import not_sent_short

    n = int(doc.get("n_not_sent") or 0)
    if not n:
        return ""
    return (f"{n} of the budget's {doc['config']['budget']} not sent "
            f"({not_sent_short(doc.get('not_sent_why'))}: see the warning); ")


def invalid_text(doc: dict) -> str:
    """The comparisons without a verdict, with the too-long refusals said apart: "5 invalid"
    read as unreadable answers where the judge's server refused prompts over its context."""
    comps = [c for c in doc.get("comparisons") or [] if not c.get("not_sent")]
    n_long = sum(c.get("error_kind") == "too_long" for c in comps)
    if not n_long:
        return f"{doc['n_invalid']} invalid"
    failed = sum(bool(c.get("error_kind")) and c.get("error_kind") != "too_long"
                 for c in comps)
    unread = sum(bool(c.get("invalid")) and not c.get("error_kind") for c in comps)
    return (f"{n_long} too long for the judge, {unread} unreadable"
            + (f", {failed} failed" if failed else ""))


def _print_warnings(doc: dict) -> None:
    """A fit that did not converge (`rank.summary.convergence_warnings`): last, where it is
    seen, and for a failed run too."""
    for w in doc.get("warnings") or []:
        console.print(styled("warning:", "bold yellow", w))


def _print_notes(doc: dict) -> None:
    """What the bias terms can say (`rank.summary.bias_notes`); the warnings the notes lead
    with are printed as warnings (`_print_warnings`)."""
    warned = set(doc.get("warnings") or [])
    for note in doc.get("notes") or []:
        if note not in warned:
            console.print(styled("note:", "bold yellow", note))


def _quality(v: object) -> str:
    """A quality value in one format for the column (it mixed 2, 1.8333 and 1.75)."""
    return f"{v:.2f}" if isinstance(v, int | float) and not isinstance(v, bool) else "—"


def _rows_shown(rows: list[dict], k: int, n_groups: int) -> int:
    """How many rows of a group the terminal shows: 2k (at least 10) for one group, k + 2
    for each of several."""
    return max(2 * k, 10) if n_groups <= 1 else k + 2


def _print_ranking(doc: dict, k: int) -> None:
    rows = doc["ranking"]
    groups: dict[int, list[dict]] = {}
    for r in rows:
        groups.setdefault(int(r.get("group", 0)), []).append(r)
    n_groups = len(groups)
    title = f"ranking ({doc['reported_model']} model), top-{k} marked *"
    if n_groups > 1:
        title += f"; {n_groups} prompt groups, each ranked on its own, top-{k} within each"
    t = Table(title=title, title_justify="left")
    cols = (["group"] if n_groups > 1 else []) + ["rank", "id", "theta [95%]", "P(top-k)",
                                                   "compared"]
    for col in cols:
        t.add_column(col, justify="left" if col in ("id", "group") else "right")
    has_q = any("quality" in r for r in rows)
    if has_q:
        t.add_column("quality", justify="right")
    for g, grows in groups.items():
        n_show = _rows_shown(grows, k, n_groups)
        for r in grows[:n_show]:
            mark = ("*" if r["in_topk"] else "") + ("?" if r.get("uncompared") else "")
            row = ([f"g{g}"] if n_groups > 1 else []) + [
                str(r["rank"]) + mark, escape(r["id"]),
                f"{_num(r['theta'], '+.2f')} [{_num(r['lo'], '+.2f')}, {_num(r['hi'], '+.2f')}]",
                f"{r['p_topk']:.2f}", str(r.get("n_compared", "?"))]
            if has_q:
                row.append(_quality(r.get("quality")))
            t.add_row(*row)
        if len(grows) > n_show:
            more = len(grows) - n_show
            t.add_row(*([f"g{g}"] if n_groups > 1 else []), "",
                      f"... {more} more item{'s' if more > 1 else ''} (results.json)",
                      *[""] * (len(cols) - (3 if n_groups > 1 else 2) + int(has_q)))
    console.print(t)
    if n_groups > 1:
        console.print(escape("groups: " + "; ".join(
            f"g{g} {label} ({len(groups[g])} items{diff})"
            for g, (label, diff) in _group_labels(
                {g: str(grows[0].get("prompt") or "") for g, grows in groups.items()}
            ).items())), highlight=False)
    if any(r.get("uncompared") for r in rows):
        console.print(f"?: no usable comparison ({doc.get('n_uncompared', '?')} items): "
                      "theta and place are the prior's; in the top-k (*?) only where too few "
                      "items were compared",
                      highlight=False)
    ba = doc["models"]["bias_aware"]
    n = doc.get("n_fitted", doc.get("n_comparisons"))
    for name, d in ba["c"].items():
        console.print(escape(f"c[{name}] = {_fmt_iv(d)}  (per SD "
                             f"{_num(d['per_sd']['estimate'])}; n = {n} comparisons)"))
    console.print(f"kappa (position, first shown) = {_fmt_iv(ba['kappa'])}  "
                  f"(n = {n} comparisons)")
    _print_notes(doc)
    if doc["covariates_dropped"]:
        console.print(f"left out (constant over the pool): {', '.join(doc['covariates_dropped'])}")
    if doc.get("gate"):
        g = doc["gate"]
        console.print(escape(f"gate: correction {g['decision'].upper()} "
                             f"({g['n_trusted']} trusted pairs): {g['reason']}"))
    per = f" (within each of {n_groups} prompt groups)" if n_groups > 1 else ""
    console.print(escape(f"top-{k}{per} naive: {', '.join(doc['models']['naive']['topk'])}"))
    console.print(escape(f"top-{k}{per} bias-aware: {', '.join(ba['topk'])}"))
    if "recall" in doc:
        from judgeaudit.result import recall_interval

        n_true = len(doc.get("true_topk") or [])

        def shown_recall(m: str, v: float) -> str:
            h = (doc.get("recall_hits") or {}).get(m) or {
                "hits": round(v * n_true), "n": n_true}
            ci = recall_interval(h.get("hits"), h.get("n")).get("ci95")
            iv = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
            return f"{m} {v:.2f}{iv} ({h.get('hits')} of {h.get('n')} true top items)"

        console.print("recall@k vs true quality (95% Wilson interval): " + ", ".join(
            shown_recall(m, v) for m, v in doc["recall"].items()), highlight=False)
        if doc.get("true_topk_ambiguous"):
            console.print(f"the true top-{k} is tied at the boundary: items of the same "
                          "quality there are interchangeable, so recall counts any of them as "
                          "a hit",
                          highlight=False)


# ---- rank-eval -----------------------------------------------------------------------------

@config_command(RankEvalConfig)
def rank_eval_cmd(cfg: RankEvalConfig, json_out: bool) -> None:
    """Evaluate acquisition rules x models offline: recall@k against budget over seeds, with
    paired tests, full-data recall and the judge's estimated biases with intervals. As in
    rank, items are compared only within a prompt group and --k applies within each group.
    Exit 3 when
    building the verdict matrices judged too little (--min-valid valid verdicts, at most
    --max-failed of the calls failed or of the answers unreadable); the rules are then not
    evaluated.

    Example: judgeaudit rank-eval --oracle 'sim?length=1&position=0.3' --items
    'builtin:controlled?n=12&k=3' --rules topk,random --seeds 2 --budgets 20,40 --samples 200
    --out out/rank-eval"""
    from judgeaudit.commands import prepare_rank_eval
    from judgeaudit.rank.fitting import MODELS

    run = checked(lambda: prepare_rank_eval(cfg, cli=True))
    inp = run.info["inputs"]
    n_jobs = len(inp.jobs)
    console.print(f"{n_jobs} verdict matri{'x' if n_jobs == 1 else 'ces'} "
                  f"({inp.n_calls} judge calls, cached); {len(inp.seeds)} seeds x "
                  f"{len(MODELS)} models x {len(inp.rules)} rules up to "
                  f"B = {inp.budgets[-1]}")
    doc = run_command(cfg, run)
    path, report = write_outputs(cfg.out, doc)
    _print_eval(doc)
    console.print(f"results: {path}")
    console.print(f"report: {report}")
    finish(doc, json_out)


def _print_eval(doc: dict) -> None:
    if "recall" in doc:
        _print_recall(doc)
    console.print(f"{doc['n_invalid']} invalid verdicts (left out of every fit); "
                  f"{eval_not_sent_text(doc)}{calls_text(doc)}")
    _print_warnings(doc)  # fits that did not converge, naming their cells


def eval_not_sent_text(doc: dict) -> str:
    """"12 pairs not sent (the spend cap is reached); " or "": pairs of the verdict matrices
    the client never sent are no invalid verdicts."""
    from judgeaudit.rank.run import not_sent_short

    n = int(doc.get("n_not_sent") or 0)
    return (f"{n} pair{'s' if n != 1 else ''} not sent "
            f"({not_sent_short(doc.get('not_sent_why'))}); " if n else "")


def _mean_se(cell: dict) -> str:
    """"0.900 [0.80, 1.00]", the interval over seeds rank-eval recorded, as the report and
    --json give it: the t interval, or where every seed agreed the exact one of the pooled
    hits, marked "exact" with its hits ("1.000 [0.83, 1.00] exact 20/20"); the mean alone
    for one seed (or a document that recorded no interval where every seed agreed)."""
    se, mean, ci = cell.get("se"), cell["mean"], cell.get("ci95")
    if se is None or se != se:  # NaN: a single seed
        return f"{mean:.3f} (1 seed)"
    if not ci:
        return f"{mean:.3f} (every seed)"
    if cell.get("ci_method") == "clopper_pearson":
        return (f"{mean:.3f} [{ci[0]:.2f}, {ci[1]:.2f}] exact "
                f"{cell.get('hits')}/{cell.get('n_items')}")
    return f"{mean:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _over(d: dict, n_matrices: int) -> str:
    """What a rank-eval bias line is: the mean estimate and mean interval over the verdict
    matrices, with their n (the report said so; the terminal did not)."""
    n = d.get("n", n_matrices)
    return (f"(mean over n = {n} matri{'x' if n == 1 else 'ces'}, with their mean 95% "
            "interval)")


def _group_labels(prompts: dict[int, str]) -> dict[int, tuple[str, str]]:
    """Each group's label (its prompt's first words, quoted, invisible characters escaped)
    and, for a group whose label prints as an earlier group's does (their prompts differ in
    a second space, a no-break space or past the label's words), where its prompt differs
    from that group's (`rank.pool.prompt_difference`), so two groups never read as one."""
    from judgeaudit.rank.pool import prompt_difference, prompt_label

    first: dict[str, int] = {}
    out = {}
    for g, p in prompts.items():
        label = prompt_label(p)
        f = first.setdefault(label, g)
        out[g] = (label, "" if f == g else
                  "; " + prompt_difference(p, prompts[f], f"g{g}", f"g{f}"))
    return out


EXACT_NOTE = ("exact h/n: every seed gave the same recall, so no t interval; the exact "
              "(Clopper-Pearson) interval of the h hits among the n true top items pooled over "
              "the seeds, treating each item hit as independent")


def _print_recall(doc: dict) -> None:
    t = Table(title=f"recall@{doc['k']} (mean [95% interval] over {len(doc['seeds'])} seeds)",
              title_justify="left")
    t.add_column("model")
    t.add_column("rule")
    for b in doc["budgets"]:
        t.add_column(f"B={b}", justify="right")
    for m, rules in doc["recall"].items():
        for rule, cells in rules.items():
            t.add_row(m, rule, *[_mean_se(cells[b]) for b in doc["budgets"]])
    console.print(t)
    console.print("full data: " + ", ".join(
        f"{m} {_mean_se(v)}" for m, v in doc["full_data"].items()))
    cells = [c for rules in doc["recall"].values() for cs in rules.values()
             for c in cs.values()] + list(doc["full_data"].values())
    if any(c.get("ci_method") == "clopper_pearson" for c in cells):
        console.print(EXACT_NOTE, highlight=False)
    if any(x.get("true_topk_ambiguous") for x in doc.get("matrices") or []):
        console.print(f"the true top-{doc['k']} is tied at the boundary: items of the same "
                      "quality there are interchangeable, so recall counts any of them as a "
                      "hit", highlight=False)
    n_mat = len(doc.get("matrices") or [])
    for name, d in doc["c"].items():
        extra = f", coverage {d['coverage']:.2f}" if "coverage" in d else ""
        console.print(escape(f"c[{name}] = {_fmt_iv(d)}{extra}  {_over(d, n_mat)}"))
    for name, d in (doc.get("c_ranking") or {}).items():  # as rank's note gives it
        console.print(escape(f"c[{name}] the ranking corrects by (c_ranking, prior sd "
                             f"{d['prior_sd']:.3g}, --tau) = {_fmt_iv(d)}  {_over(d, n_mat)}"))
    kd = doc["kappa"]
    console.print(f"kappa = {_fmt_iv(kd)}"
                  + (f", coverage {kd['coverage']:.2f}" if "coverage" in kd else "")
                  + f"  {_over(kd, n_mat)}")
    _print_notes(doc)
    if doc["covariates_dropped"]:
        console.print(f"left out (constant): {', '.join(doc['covariates_dropped'])}")


__all__ = ["parse_seeds", "rank", "rank_eval_cmd", "register"]
