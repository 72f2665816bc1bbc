"""`judgeaudit replay-check`: before evaluating a judge from recorded verdicts, check that the
file reads and joins the data: the format read (given or detected), records read, items
matched / items without verdicts / records without items (with examples), per-order
coverage, verdict value counts, and, where the data has labels, the recorded verdicts'
accuracy with a Wilson 95% interval (an interval below 0.5 says the labels may be inverted).
`register(app)` adds the command to a typer app (the main CLI calls it).

Exit codes: 0 at least one item matched, 2 unreadable input (data, verdict file, parameters),
3 nothing matched.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import typer

from judgeaudit.cli.progress import console, fail
from judgeaudit.cli.terminal import json_line, styled

EXAMPLES = 5


def _say(text: str) -> None:
    """A plain line: ids and file names are data, never rich markup."""
    console.print(text, markup=False, highlight=False)


def _split_file(file: str, params: list[str] | None, fmt: str | None
                ) -> tuple[str, dict[str, str]]:
    """FILE, FILE?k=v&..., or replay:FILE?k=v, plus KEY=VALUE arguments and --format."""
    from judgeaudit.data import parse_spec

    path, spec_params = file, {}
    if file.startswith("replay:") or "?" in file:
        try:
            sp = parse_spec(file if file.startswith("replay:") else f"replay:{file}")
        except ValueError as exc:
            raise fail(f"verdict file {file!r}: {exc}") from None
        path, spec_params = sp.name, dict(sp.params)
    out = dict(spec_params)
    for p in params or []:
        key, sep, value = p.partition("=")
        if not sep or not key.strip():
            raise fail(f"parameter {p!r}: expected KEY=VALUE (a format option such as "
                       "item=id, or a column filter such as judge=GPT-4)")
        out[key.strip()] = value
    if fmt:
        out["format"] = fmt
    if not path:
        raise fail("no verdict file given")
    return path, out


def _examples(ids: list[str], labels: dict[str, str] | None = None) -> str:
    if not ids:
        return ""
    labels = labels or {}
    shown = [labels.get(i, i) for i in ids[:EXAMPLES]]
    return " (e.g. " + ", ".join(shown) + (", ..." if len(ids) > EXAMPLES else "") + ")"


def _winner(text: str, order: str) -> tuple[str, int | None]:
    """A recorded presented verdict read as evaluate reads it: (A / B / tie / invalid,
    original-numbering winner or None)."""
    from judgeaudit.judges.pairwise import PairwiseJudge
    from judgeaudit.llm import Response

    v = PairwiseJudge.read(order, Response(text=text))  # type: ignore[arg-type]
    return (v.choice or "invalid"), v.winner


def check(index: Any, items: list[Any]) -> dict[str, Any]:
    """The report's numbers: which items the recorded verdicts reach and how they read."""
    from judgeaudit.data import PairwiseItem
    from judgeaudit.judges.parse import parse_score
    from judgeaudit.llm.providers.replay import ReplayProvider
    from judgeaudit.stats import rate

    found: dict[str, dict[str, str]] = {}
    used: set[str] = set()
    for it in items:
        if isinstance(it, PairwiseItem):
            for order in ("12", "21"):
                shown = ((it.response_1, it.response_2) if order == "12"
                         else (it.response_2, it.response_1))
                at = index.locate(it.id, order, it.prompt, shown)
                if at is not None:
                    found.setdefault(it.id, {})[order] = index.verdicts[at]
                    used.add(at[0])
        elif it.id in index.scores:
            found.setdefault(it.id, {})["score"] = index.scores[it.id]
            used.add(it.id)
    without = [it.id for it in items if it.id not in found]
    unused = sorted(index.item_keys() - used)
    coverage = Counter("both" if {"12", "21"} <= set(v) else
                       ("12 only" if "12" in v else ("21 only" if "21" in v else "score"))
                       for v in found.values())
    values = Counter(_winner(v, order)[0] for (_, order), v in index.verdicts.items())
    credit: list[float] = []
    for it in items:
        if isinstance(it, PairwiseItem) and it.label in (1, 2) and it.id in found:
            hits = [_winner(v, o)[1] == it.label for o, v in found[it.id].items()]
            credit.append(sum(hits) / len(hits))
    accuracy = None
    if credit:
        accuracy = rate(sum(credit), len(credit)).as_dict()  # Wilson interval
    ties = sum(isinstance(it, PairwiseItem) and it.label == 0 and it.id in found
               for it in items)
    unreadable = [k for k, v in index.scores.items()
                  if parse_score(ReplayProvider._score_text(v, {})) is None]
    return {"matched": len(found), "without": without, "unused": unused,
            "coverage": dict(coverage), "values": dict(values), "accuracy": accuracy,
            "tie_labelled": ties, "scores_unreadable": sorted(unreadable)}


def replay_check(
    file: Annotated[str, typer.Argument(help=(
        "Verdict file: PATH, PATH?key=value&..., or replay:PATH?...; FILE_{order}.csv for one "
        "file per presentation order."))],
    params: Annotated[list[str] | None, typer.Argument(help=(
        "KEY=VALUE replay parameters: format options (item=COL, verdict=COL, second=FILE, "
        "answers=DIR, ...) and column filters (judge=GPT-4)."))] = None,
    data: Annotated[str, typer.Option("--data", "-d", help=(
        "Data SPEC the verdicts are for: llmbar:PATH?subset=... | mtbench:PATH | jsonl:PATH "
        "| hf:FILE | ..."))] = "",
    fmt: Annotated[str | None, typer.Option("--format", "-f", help=(
        "long | wide | nested | two_files | alpaca_eval | fastchat | columns (default: "
        "detected from the file)."))] = None,
    json_out: Annotated[bool, typer.Option("--json", help=(
        "Print the check's counts as one JSON object on stdout (all other output goes to "
        "stderr)."))] = False,
) -> None:
    """Check that a file of recorded verdicts reads and joins the data before evaluating.

    Example: judgeaudit replay-check verdicts.jsonl judge=GPT-4 --data jsonl:items.jsonl"""
    from judgeaudit.data import DataError, load
    from judgeaudit.llm.providers.replay import load_index

    if not data:
        raise fail("--data SPEC is required: the data the verdicts are for")
    path, replay_params = _split_file(file, params, fmt)
    try:
        items = load(data)
    except (DataError, ValueError, OSError) as exc:
        msg = str(exc)
        raise fail(msg if data in msg else f"data {data!r}: {msg}") from None
    try:
        index = load_index(path, replay_params)
    except (ValueError, OSError) as exc:
        raise fail(str(exc)) from None

    res = check(index, items)
    filters = ", ".join(f"{k}={v}" for k, v in replay_params.items()) or "no parameters"
    _say(f"verdict file: {path} ({filters})")
    _say(index.detected)
    for note in index.notes:
        console.print(styled("note:", "bold yellow", note))
    _say(f"records read: {index.n_records}; kept by the filters: {index.n_rows}; "
         f"verdicts (item, order): {len(index.verdicts)}; scores: {len(index.scores)}")
    _say(f"data: {data} ({len(items)} items)")
    _say(f"items matched: {res['matched']} of {len(items)}")
    _say(f"items in the data without verdicts: {len(res['without'])}"
         + _examples(res["without"]))
    _say(f"verdict records without items: {len(res['unused'])}"
         + _examples(res["unused"], index.labels))
    cov = res["coverage"]
    _say("per-order coverage of matched items: " + ", ".join(
        f"{k} {cov.get(k, 0)}" for k in ("both", "12 only", "21 only"))
        + (f", score {cov['score']}" if cov.get("score") else ""))
    vals = res["values"]
    if index.verdicts or not index.scores:
        _say(f"verdict values (all {len(index.verdicts)} recorded): " + ", ".join(
            f"{k} {vals.get(k, 0)}" for k in ("A", "B", "tie", "invalid")))
    if index.scores:
        bad = res["scores_unreadable"]
        _say(f"score values (all {len(index.scores)} recorded): {len(index.scores) - len(bad)} "
             f"read as 1-5, {len(bad)} unreadable (counted invalid when judged)"
             + _examples([f"{k}: {index.scores[k][:40]!r}" for k in bad]))
    acc = res["accuracy"]
    if acc is None and index.scores and not index.verdicts:
        pass  # scores: evaluate compares them with the gold scores
    elif acc is None:
        _say("label sanity: no labelled pair matched (nothing to check)")
    else:
        lo, hi = acc["ci95"]
        _say(f"label sanity: accuracy of the recorded verdicts {acc['value']:.3f} "
             f"[{lo:.3f}, {hi:.3f}] (n={acc['n']} items labelled 1 or 2; per item the mean "
             "over its recorded orders, tie and unparseable count as wrong"
             + (f"; {res['tie_labelled']} tie-labelled items left out, as evaluate --ties "
                "drop does" if res["tie_labelled"] else "") + ")")
        if hi < 0.5:
            console.print(styled("warning:", "bold yellow",
                                 "labels may be inverted (A/B or 1/2 swapped?): accuracy "
                                 f"{acc['value']:.1%} with its 95% interval below 50%"))
    if not res["matched"]:
        how = ("records are matched by their texts (prompt and the two responses): check "
               "that the data holds the same texts" if index.by_text else
               "records are matched by item id: compare the ids above with the data "
               "loader's ids (docs/bring-your-own-verdicts.md)")
        console.print(styled("error:", "bold red",
                             f"no item of the data has a recorded verdict; {how}"))
    if json_out:  # a script checking a file before paying for nothing read only the exit code
        doc = check_summary(res, path, replay_params, data, len(items), index)
        if not res["matched"]:  # as every command's failed --json object says why
            doc["reason"] = f"no item of the data has a recorded verdict; {how}"
        typer.echo(json_line(doc))
    if not res["matched"]:
        raise typer.Exit(3)


def check_summary(res: dict[str, Any], path: str, params: dict[str, str], data: str,
                  n_items: int, index: Any) -> dict[str, Any]:
    """replay-check's --json object: the counts the terminal shows, ok when an item matched."""
    return {"command": "replay-check", "ok": bool(res["matched"]),
            "exit_code": 0 if res["matched"] else 3, "file": path, "params": params,
            "data": data, "n_items": n_items, "records": index.n_records,
            "records_kept": index.n_rows, "verdicts": len(index.verdicts),
            "scores": len(index.scores), "matched": res["matched"],
            "items_without_verdicts": len(res["without"]),
            "records_without_items": len(res["unused"]), "coverage": res["coverage"],
            "values": res["values"], "accuracy": res["accuracy"],
            "tie_labelled": res["tie_labelled"],
            "scores_unreadable": len(res["scores_unreadable"])}


def register(app: typer.Typer) -> None:
    """Add `replay-check` to ``app``."""
    app.command("replay-check")(replay_check)


__all__ = ["check", "register", "replay_check"]
