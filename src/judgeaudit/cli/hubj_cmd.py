"""`judgeaudit discover | quantify | mitigate`: human-grounded bias discovery, quantification
and correction (HUB-J). `register(app)` adds the commands; the pipelines are
`judgeaudit.hubj.run`."""

from __future__ import annotations

import math
from pathlib import Path
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
from judgeaudit.cli.terminal import shown, styled
from judgeaudit.config import DiscoverConfig, MitigateConfig, QuantifyConfig
from judgeaudit.outcome import run_failed
from judgeaudit.textfile import visible


def _shown(text: Any) -> str:
    """Model-written text (a factor's name, a judge spec, a reason quoting an answer) for the
    terminal: acting characters as escapes (`terminal.shown`; the console prints no markup);
    a G-module's factor name with ESC sequences reached the terminal raw (the HTML report
    escapes it)."""
    return shown(text)


def _p(x: Any, why: str | None = None) -> str:
    """A p-value (or r) cell: "-" when it cannot be computed, with the reason when known
    ("- (n < 2)"); never a bare "nan"."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return f"- ({why})" if why else "-"
    return f"{x:.3g}"


def _splits_table(doc: dict[str, Any]) -> Table:
    t = Table(title=f"agreement / disagreement with humans (n={doc['n_items']} items)")
    for c in ("judge", "agree", "disagree", "neutral", "invalid", "missing"):
        t.add_column(c, justify="left" if c == "judge" else "right")
    for j, s in doc["per_judge"].items():
        t.add_row(_shown(j), *(str(s[k]) for k in ("agree", "disagree", "neutral", "invalid",
                                           "missing")))
    t.add_row("consensus (all judges)", str(doc["consensus_agree"]),
              str(doc["consensus_disagree"]), "", "", "")
    return t


def _calls_line(res: dict[str, Any], path: Path, report: Path | str) -> None:
    """The calls line, then the judges' own unreadable answers (`_judge_line`), then where
    results.json and report.html are (or why the report is not: `write_outputs` says it as
    text, where `.stem` of it crashed the command)."""
    console.print(_simulated(calls_text(res), res.get("calls") or {}), highlight=False,
                  markup=False)
    line = _judge_line(res.get("run") or {})
    if line:
        console.print(line, highlight=False, markup=False)
    for line in _left_out_lines(res.get("run") or {}):
        console.print(line, highlight=False, markup=False)
    line = _own_calls_line(res.get("run") or {})
    if line:
        console.print(line, highlight=False, markup=False)
    console.print(f"results: {path}\nreport: {report}")


def _simulated(line: str, calls: dict[str, Any]) -> str:
    """The calls line with the calls a simulated provider answered told apart (`calls.
    simulated`, `hubj.run._calls`): "calls: 114 made (54 sent to a model, 60 simulated by
    simhubj: free, no request sent)". They count in `made` as every command counts them,
    but no request left the machine: mitigate with a simhubj scorer read "114 made" where
    the server got 54."""
    sim = int(calls.get("simulated") or 0)
    made = int(calls.get("made") or 0)
    head = f"calls: {made} made, "
    if not sim or not line.startswith(head):
        return line
    by = ", ".join(_shown(p) for p in (calls.get("simulated_by") or {})) or "a simulation"
    return (f"calls: {made} made ({made - sim} sent to a model, {sim} simulated by {by}: "
            f"free, no request sent), " + line[len(head):])


def _own_calls_line(run: dict[str, Any]) -> str | None:
    """--apply's failed calls by role (`run.calls_by_judge`, `run.scorer_calls`), each checked
    against --max-failed on its own: the calls line pools the judge's with the scorer's, and
    a judge failing 53 of its 160 calls read "53 failed" of 320. None for other runs."""
    sc = run.get("scorer_calls")
    if not sc:
        return None
    over = set(run.get("judges_over_max_failed") or [])
    limit = run.get("max_failed", 0.2)

    def part(who: str, c: dict[str, Any], above: bool) -> str:
        share = f" ({c['failed'] / c['asked']:.1%})" if c.get("asked") else ""
        return (f"{who} {c.get('failed', 0)} of {c.get('asked', 0)}{share}"
                + (" ABOVE --max-failed" if above else ""))

    rows = [part(f"judge {_shown(j)}", c, j in over)
            for j, c in (run.get("calls_by_judge") or {}).items()]
    rows.append(part(f"scorer {_shown(sc.get('spec') or '--scorer')}", sc,
                     bool(sc.get("asked")) and sc.get("failed", 0) / sc["asked"] > limit))
    return (f"failed calls, each checked against --max-failed {limit:g}: " + "; ".join(rows))


def _left_out_lines(run: dict[str, Any]) -> list[str]:
    """One line per judge the gate per judge left out (`run.judges_left_out`), with its own
    counts: the run's calls line pools every judge's calls with the generator's and
    scorer's, and a judge failing 20 of 24 calls beside good ones was only named "ABOVE
    --max-failed" (on unreadable answers; on failed calls not at all), its numbers kept."""
    out = []
    for j, x in (run.get("judges_left_out") or {}).items():
        out.append(f"left out: {_shown(j)}: {x.get('calls_failed', 0)} of "
                   f"{x.get('calls_asked', 0)} of its calls failed, {x.get('unreadable', 0)} "
                   f"of {x.get('answers', 0)} of its answers unreadable (more than --max-failed "
                   f"{run.get('max_failed', 0.2):g} of either); the other judges' numbers "
                   "leave it out")
    return out


def _judge_line(run: dict[str, Any]) -> str | None:
    """The judges' unreadable verdict answers as --max-failed counts them (`run.answers`,
    `run.unreadable`, and each judge's, `run.answers_by_judge`): the calls line counts every
    answer of the run, G-module and scorer answers too, so a judge that is also the
    generator read "182 unreadable answers of 1120 (16.2%)" where its own share was 182 of
    640 (28%). None when no judge answer was unreadable."""
    answers, bad = run.get("answers") or 0, run.get("unreadable") or 0
    if not answers or not bad:
        return None
    rows = run.get("answers_by_judge") or {}
    over = set(run.get("judges_over_max_failed") or [])
    each = "; ".join(f"{_shown(j)} {r['unreadable']} of {r['answers']}"
                     + (f" ({r['unreadable'] / r['answers']:.1%})" if r["answers"] else "")
                     + (" ABOVE --max-failed" if j in over else "")
                     for j, r in rows.items()) if len(rows) > 1 else ""
    return (f"judge verdicts: {bad} unreadable answers of {answers} ({bad / answers:.1%}), "
            f"the share --max-failed {run.get('max_failed', 0.2):g} is checked against"
            + (f"; by judge: {each}" if each else ""))


def _json_stats_line(stats: dict[str, Any]) -> str:
    """Each G-module step's calls and the requests they took: a call whose answer cannot be
    read is asked again (`llmjson.call_json`), a new request the server answers and bills
    (the calls line counts them; answers shared or from the cache are not sent). "G_score
    200 calls" read as 200 where the server got 400 requests."""
    parts = []
    for mod, s in stats.items():
        again = int(s.get("retried") or 0)
        asked = (f"{s['calls']} calls = {s['calls'] + again} requests ({again} re-asked "
                 "after an unreadable answer; " if again else f"{s['calls']} calls (")
        parts.append(f"{mod} {asked}{s['repaired']} repaired, {s['recovered']} "
                     f"after retry, {s['failed']} failed)")
    return "; ".join(parts)


def _with_human_counts(res: dict[str, Any], data: Any, min_agreement: float,
                       used: int | None) -> dict[str, Any]:
    """`res` with `human_filter` (`splits.human_filter_counts`: the items loaded, kept, and
    each reason one was left out), shown on the terminal (`_human_line`) and in results.json.
    The data is read again for the count (the run's own reading drops the items it does not
    keep); a data set that cannot be read here adds nothing."""
    if not isinstance(res, dict) or "human_filter" in res:
        return res
    from judgeaudit.commands import load_data
    from judgeaudit.hubj.splits import human_filter_counts

    try:
        loaded, _spec = load_data(data)
    except Exception:  # noqa: BLE001 - the run read it; a count is no reason to fail
        return res
    return {**res, "human_filter": human_filter_counts(loaded, min_agreement, used)}


def _human_line(res: dict[str, Any]) -> None:
    from judgeaudit.hubj.splits import human_filter_text

    c = res.get("human_filter")
    if c:
        console.print(human_filter_text(c), highlight=False, markup=False)


# ---- discover --------------------------------------------------------------------------------

@config_command(DiscoverConfig)
def discover(cfg: DiscoverConfig, json_out: bool) -> None:
    """Find the factors behind a judge's disagreements with humans (HUB-J Algorithm 1) and
    validate them, beside the two baseline factor sets, on held-out disagreements. Exit 3 when
    the run got too little (--min-valid valid G-module answers, at most --max-failed of the
    calls failed or of the answers unreadable); a G-module step past --max-failed stops the
    run before the next step is sent. The judges judge every labelled item of --data first:
    --limit and --holdout-limit cap the G-module steps only; a pilot limits the data
    (--data 'SPEC?limit=50').

    Example: judgeaudit discover --recorded pandalm --data
    pandalm:../shared/data/pandalm_testset --llm local --limit 10 --out out/discover"""
    from judgeaudit.commands import prepare_discover

    try:
        res = run_command(cfg, checked(lambda: prepare_discover(
            cfg, on_stage=lambda msg: console.print(styled("discover:", "bold", msg)),
            recorded_dir=cfg.out / "recorded", cli=True)))
    except typer.Exit as exc:  # --plan-only ends here, after its advice
        note = _discover_plan_note(cfg.data) if exc.exit_code == 0 else None
        if note:
            console.print(note, highlight=False, markup=False)
        raise
    res = _with_human_counts(res, cfg.data, cfg.min_agreement,
                             (res.get("splits") or {}).get("n_items"))
    path, report = write_outputs(cfg.out, res)
    _human_line(res)
    if not run_failed(res):  # a failed run's numbers are no result
        _print_discover(res)
    elif res.get("splits") and not res.get("discover"):  # why there was nothing to find
        console.print(_splits_table(res["splits"]))
    console.print(_json_stats_line(res.get("json_stats") or {}))
    _calls_line(res, path, report)
    finish(res, json_out)


def _discover_plan_note(data: Any) -> str | None:
    """Under --plan-only, what shrinks discover's plan: its first step judges every labelled
    item of --data (each judge, both orders) to find the consensus disagreements, and
    --limit and --holdout-limit cap only the G-module steps after it. The plan's advice, "a
    small pilot (--n 5 or --limit 10)", planned 1,568 judge requests at --limit 2 as at
    --limit 30; the data SPEC's own `limit=N` (the first N items) shrinks it. None when not
    planning, or when the data is limited already."""
    from judgeaudit.cli.plan_cmd import active_planner
    from judgeaudit.spec import parse_spec, public_spec

    if active_planner() is None or not isinstance(data, str):
        return None
    try:
        if "limit" in parse_spec(data).params:
            return None
    except ValueError:
        return None
    shown = public_spec(data)
    return ("discover: the judges' requests are planned for every labelled item of --data "
            "(each judge, both orders), to find the consensus disagreements; --limit and "
            "--holdout-limit cap only the G-module steps after them (discovery and held-out "
            "items), so they do not shrink this plan: for a small pilot limit the data "
            f"itself, --data '{shown}{'&' if '?' in shown else '?'}limit=50' (its first 50 "
            "items)")


def _print_discover(res: dict[str, Any]) -> None:
    console.print(_splits_table(res["splits"]))
    t = Table(title="factors found, validated on held-out disagreements "
                    "(Delta = intensity(judge-preferred) - intensity(human-preferred))")
    for c in ("set", "factor", "n", "mean Delta [95% CI]", "p (t)", "q (t)", "p (Wilcoxon)",
              "q (Wilcoxon)", "max|r| pre-discovered: r [95% CI] n (with)"):
        t.add_column(c, justify="left" if c in ("set", "factor") else "right",
                     overflow="fold" if c == "factor" else "ellipsis")
    val = res["validation"]
    for set_name, s in val["sets"].items():
        for row in s["factors"]:
            lo, hi = row["ci95"]
            ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
            md = "-" if row["mean_delta"] is None else f"{row['mean_delta']:+.2f}{ci}"
            why_t = row.get("p_t_note") or ("n < 2" if row["n"] == 1 else None)
            t.add_row(_shown(set_name), _shown(row["factor"]), str(row["n"]), md,
                      _p(row["p_t"], why_t), _p(row.get("q_t"), why_t),
                      _p(row["p_wilcoxon"]),
                      _p(row.get("q_wilcoxon")) + (" *" if row.get("significant") else ""),
                      _max_r((s.get("r_vs_pre_discovered") or {}).get(row["factor"]) or {},
                             row["factor"] if set_name == "pre_discovered" else None))
    console.print(t)
    mult = val.get("multiplicity")
    if mult:  # what "significant" means here, and which factors are
        sig = ", ".join(_shown(n) for n in mult["significant"]) or "none"
        console.print(f"significant (*): q (Wilcoxon) <= {mult['alpha']:g}, q = "
                      f"Benjamini-Hochberg over the {mult['m']} factors tested in this run "
                      f"on {val['n_items']} held-out items: {sig}")
        note = _attainable_note(mult.get("attainable"), mult["alpha"])
        if note:
            console.print(note, highlight=False, markup=False)


def _attainable_note(a: dict[str, Any] | None, alpha: float) -> str | None:
    """Why "significant: none" may say nothing: with few held-out items the smallest exact
    Wilcoxon p is above what Benjamini-Hochberg needs of a factor alone (`validate.
    attainable`)."""
    if not a or not a.get("limited"):
        return None
    need = a.get("factors_needed")
    can = ("no factor can pass" if need is None else
           f"a factor can pass only if at least {need} of them reach it together")
    return (f"note: with {a['n']} held-out items the smallest attainable Wilcoxon p is "
            f"{a['smallest_p']:.2g}; a factor alone needs p <= {alpha / a['m']:.2g} to pass "
            f"Benjamini-Hochberg at q {alpha:g} over {a['m']} factors, so {can}: hold out "
            f"more (--holdout, more items): {a['n_for_one_alone']} or more held-out items")


def _max_r(rs: dict[str, Any], skip: str | None) -> str:
    """The pre-discovered factor the row correlates with most (by |r|): its r with the
    Fisher interval and n results.json holds, and which factor it is ("-" when none)."""
    best: tuple[str, dict[str, Any]] | None = None
    for name, e in rs.items():
        r = (e or {}).get("r")
        if name == skip or r is None or (isinstance(r, float) and math.isnan(r)):
            continue
        if best is None or abs(r) > abs(best[1]["r"]):
            best = (name, e)
    if best is None:
        return "-"
    name, e = best
    lo, hi = e.get("ci95") or [None, None]
    ok = all(isinstance(x, int | float) and not math.isnan(x) for x in (lo, hi))
    ci = f" [{lo:+.2f}, {hi:+.2f}]" if ok else ""
    return f"{e['r']:+.2f}{ci} n={e.get('n')} ({_shown(name)})"


# ---- quantify --------------------------------------------------------------------------------

@config_command(QuantifyConfig)
def quantify(cfg: QuantifyConfig, json_out: bool) -> None:
    """How strongly each factor moves each judge (HUB-J Algorithm 2): rewrite the rejected
    response of agreement items at levels 1-5, count flips, pick l* on calibration items and
    report the susceptibility on test items. Exit 3 when the run judged too little (--min-valid
    valid judge verdicts on rewrites, at most --max-failed of the calls failed or of the answers
    unreadable).

    Example: judgeaudit quantify --judges 'simhubj?factor_verbosity=0,0.5,3,1,0&seed=3'
    --data pandalm:../shared/data/pandalm_testset --factors verbosity --pool 60 --limit 12
    --out out/quantify"""
    from judgeaudit.commands import prepare_quantify

    run = checked(lambda: prepare_quantify(cfg, cli=True))
    res = run_command(cfg, run)
    res = _with_human_counts(res, cfg.data, cfg.min_agreement,
                             (res.get("splits") or {}).get("n_items"))
    path, report = write_outputs(cfg.out, res)
    _human_line(res)
    if not run_failed(res):  # a failed run's numbers are no result
        _print_quantify(res, run.info["levels"])
    if res.get("json_stats"):
        console.print(_json_stats_line(res["json_stats"]))
    _calls_line(res, path, report)
    finish(res, json_out)


def _print_quantify(res: dict[str, Any], lv: list[int]) -> None:
    if res.get("splits"):  # where the agreement items came from (report/results.json only)
        console.print(_splits_table(res["splits"]))
    rw = res["rewrites"]
    flags = rw.get("string_check_flags")
    t = Table(title=f"flip rate by level (n={res['n_items']} agreement items; "
                    f"{rw['kept']}/{rw['total']} rewrites kept"
                    + (f", {flags} of the {rw['kept']} kept flagged by the string check (new "
                       "numbers or entities dropped; kept, see the report)" if flags else "")
                    + ")")
    t.add_column("judge", overflow="fold")
    t.add_column("factor", overflow="fold")  # a long name wraps, never cut short
    for x in lv:
        t.add_column(f"L{x}", justify="right")
    t.add_column("l*", justify="right")
    t.add_column("susceptibility (test)", justify="right")
    noise = res.get("repeat_noise") or {}
    if noise:  # the judge's own flips when the same test items are asked again
        t.add_column("repeat noise (test)", justify="right")
    def cell(e: dict[str, Any] | None) -> str:
        # each cell's own n and unreadable verdicts: the title's n counts items, and a
        # cell of 2 valid verdicts out of 7 read as if on 7
        if not e:
            return "-"
        bad = e.get("n_invalid") or 0
        return f"{est_ci(e, 2)} n={e.get('n', 0)}" + (f", {bad} invalid" if bad else "")

    for j, per in res["per_judge"].items():
        for f, r in per.items():
            t.add_row(_shown(j), _shown(f), *(cell(r["by_level"][str(x)]) for x in lv),
                      str(r["l_star"]), cell(r["susceptibility"]),
                      *([cell(noise.get(j))] if noise else []))
    console.print(t)
    if noise:
        console.print("repeat noise: the flip rate of the same unrewritten test items asked "
                      "again (a new call); a susceptibility inside its interval is no "
                      "evidence that the factor moved the judge. Each susceptibility against "
                      "it, paired on the test items (an exact one-sided sign (McNemar) test "
                      "of the flip at l* against the same item's repeat; b:c = items where "
                      "the rewrite flipped more : the repeat did; p adjusted by Holm over "
                      f"the {(res.get('multiplicity') or {}).get('m', '?')} judge x factor "
                      "rows of this run; 'not shown above' when the adjusted p >= 0.05, no "
                      "evidence either way):")
        for j, per in res["per_judge"].items():
            for f, r in per.items():
                console.print(f"  {_shown(j)} / {_shown(f)}: "
                              f"{_noise_test(r.get('vs_repeat_noise'))}", highlight=False)
    ac = res["answer_change_rate"]
    console.print(f"answer-change rate (checker): {est_ci(ac)} (n={ac.get('n', 0)} checked "
                  "rewrites)")


def _noise_test(x: dict[str, Any] | None) -> str:
    """The paired test of a susceptibility against the judge's repeat noise, in words."""
    if not x:
        return "no test (no l*)"
    word = "above repeat noise" if x.get("shown_above") else "not shown above repeat noise"
    adj = (f", Holm-adjusted p = {x['p_adjusted']:.2g}"  # over one row it is p itself
           if x.get("p_adjusted") is not None and (x.get("m") or 1) > 1 else "")
    return (f"{word} (paired test p = {x['p']:.2g}{adj}; {x['rewrite_higher']}:"
            f"{x['repeat_higher']} of n = {x['n_pairs']})")


# ---- mitigate --------------------------------------------------------------------------------

@config_command(MitigateConfig)
def mitigate(cfg: MitigateConfig, json_out: bool) -> None:
    """Bias-controlled win rates (HUB-J Algorithm 3): a two-stage logistic model over judges
    and queries separates each judge's wins due to the factor; the length-controlled win rate
    (AlpacaEval style) is reported beside it. --apply corrects new verdicts with a saved fit.
    Exit 3 when the run judged too little (--min-valid valid judge verdicts on queries with
    factor scores, at most --max-failed of the calls failed or of the answers unreadable).

    Example: judgeaudit mitigate --judges 'sim?length=2&seed=1' --data
    pandalm:../shared/data/pandalm_testset --scorer 'simhubj?score_from=length' --factor
    length --limit 200 --out out/mitigate"""
    from judgeaudit.commands import prepare_mitigate

    run = checked(lambda: prepare_mitigate(cfg, recorded_dir=cfg.out / "recorded", cli=True))
    res = run_command(cfg, run)
    counts = res.get("counts") or {}
    res = _with_human_counts(res, cfg.data, cfg.min_agreement,
                             counts["queries"] + counts.get("dropped_no_score", 0)
                             if "queries" in counts else None)
    path, report = write_outputs(cfg.out, res)
    _human_line(res)
    if run_failed(res):  # a failed run's numbers are no result
        pass
    elif run.info["apply"]:
        a = res["applied"]
        console.print(f"{_shown(run.info['name'])}: win {est_ci(a['win'])}, bias-controlled "
                      f"{est_ci(a['bc'])}, bias share {est_ci(a['bias_share'])} "
                      f"(n={a['n']}, {a['n_new_queries']} new queries, "
                      f"{res.get('estimator') or 'estimator not recorded'} fit; the "
                      "intervals carry the new intercept's error and the fit's in phi and "
                      "psi)")
        k = (a.get("control_resolution") or {}).get("distinct_values")
        if k is not None and res.get("control", "bias") == "bias":
            console.print(f"note: the bias share is the part explained by the factor's "
                          f"scores, whose difference took {k} distinct values here: the "
                          "correction removes only the factor's effect those levels resolve",
                          highlight=False)
    else:
        _print_mitigate(res, cfg.candidate, cfg.estimator)
    console.print(_json_stats_line(res["json_stats"]))
    _calls_line(res, path, report)
    finish(res, json_out)


def _print_mitigate(res: dict[str, Any], candidate: str, estimator: str) -> None:
    f = res["factor"]
    t = Table(title=f"bias-controlled win rate of the {candidate} response, control: "
                    f"{_shown(f['name'])} (n={res['counts']['queries']} queries, "
                    f"{estimator} fit)")
    for c in ("judge", "n (invalid)", "win", "BC (bias-controlled)", "bias share",
              "LC (length-controlled)", "phi +- se", "psi +- se"):
        t.add_column(c, justify="left" if c == "judge" else "right", overflow="fold")
    lc = res["other_controls"].get("length", {})
    counts = res.get("counts") or {}

    def n_of(j: str, r: dict[str, Any]) -> str:
        # the judge's own n: the title's queries less its unreadable verdicts (not shown)
        return f"{r['win'].get('n', 0)} ({counts.get(f'invalid:{j}', 0)})"

    for j, r in res["per_judge"].items():
        t.add_row(_shown(j), n_of(j, r), est_ci(r["win"]), est_ci(r["bc"]),
                  est_ci(r["bias_share"]),
                  est_ci(lc.get(j, {}).get("bc")),
                  f"{r['phi']['value']:+.2f} +- {r['phi']['se']:.2f}",
                  f"{r['psi']['value']:+.2f} +- {r['psi']['se']:.2f}")
    for j, r in (res.get("not_fitted") or {}).items():  # it vanished from the table
        t.add_row(_shown(j), n_of(j, r), est_ci(r["win"]), *(["-"] * 5))
    console.print(t)
    for j, r in (res.get("not_fitted") or {}).items():
        console.print(visible(f"not fitted: {j}: {r.get('reason')}"), highlight=False,
                      markup=False)
    for note in res.get("notes") or []:
        console.print(visible(f"note: {note}"), highlight=False, markup=False)
    other = res.get("other_estimator") or {}
    for j, r in (other.get("judges") or {}).items():  # shown beside, as the help says
        console.print(visible(f"{other.get('estimator')} fit beside: {j}: BC "
                              f"{est_ci(r.get('bc'))}, bias share "
                              f"{est_ci(r.get('bias_share'))}, phi "
                              f"{est_ci(r.get('phi'), 2)}"), highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Add `discover`, `quantify` and `mitigate` to ``app``."""
    app.command("discover")(discover)
    app.command("quantify")(quantify)
    app.command("mitigate")(mitigate)


__all__ = ["discover", "mitigate", "quantify", "register"]
