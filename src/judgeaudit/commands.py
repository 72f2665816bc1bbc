"""Every command once: `prepare_<command>(config) -> Run`, then `await run.body(session)`.

`prepare_*` takes the command's settings (`judgeaudit.config`), loads and checks the input
and raises ValueError for bad input before any call; the returned `Run`'s `body` makes the
judges in a `judgeaudit.session.Session`, runs the pipeline and returns the results
document. The CLI (`judgeaudit.cli`) and the Python API (`judgeaudit.api`) both call these,
so a command's logic exists in one place; they differ only in what they wrap around it (the
CLI: output folder, progress bars, exit codes; the API: a `Result`). `cli=True` names options
the CLI's way in messages (`--limit`), otherwise the API's (`limit`).

Inputs the settings cannot hold (a list of items, references or a discover result as
objects, an embedder) are keyword arguments of `prepare_*`; rank and rank-eval take the Python
forms their checks accept (a list of covariates, trusted pairs, a number for lam) in the
settings themselves, as the API builds them with `model_construct`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgeaudit.data.spec import public_spec, split_specs
from judgeaudit.results_file import run_stamps, utc_stamp
from judgeaudit.session import Session

log = logging.getLogger("judgeaudit.commands")

if TYPE_CHECKING:
    from judgeaudit.config import (
        AuditConfig,
        DiscoverConfig,
        EvaluateConfig,
        MitigateConfig,
        QuantifyConfig,
        RankConfig,
        RankEvalConfig,
        ScoringBiasConfig,
    )
    from judgeaudit.hubj.embed import Embedder
    from judgeaudit.judges import JudgeBundle
    from judgeaudit.rank.live import Verdict
    from judgeaudit.rank.loop import ProgressHook

Data = str | Sequence[Any]
Doc = str | os.PathLike[str] | Mapping[str, Any]


@dataclass
class Run:
    """A prepared command: `body(session)` runs it and returns the results document.
    `judge`, `data` and `n_planned()` describe it for a run that fails without a document
    (a fatal call); `info` holds what the CLI shows beside the document."""

    command: str
    judge: str
    data: str
    body: Callable[[Session], Awaitable[dict[str, Any]]]
    n_planned: Callable[[], int]
    min_valid: int
    max_failed: float
    info: dict[str, Any] = field(default_factory=dict)
    # what n_planned counts, in a failed run's reason ("0 of 80 items" was rank's budget of
    # comparisons, scoring-bias's calls)
    unit: str = "items"
    # the items the run loaded, for its results' `data_fingerprint` (`data.fingerprint`)
    items: Sequence[Any] | None = None

    async def document(self, sess: Session) -> dict[str, Any]:
        """Run the body; its document records the judges it used (`Session.judges_used`)
        and its `seconds` is the wall time of the whole run, for the CLI and the Python API
        alike: a command's own clock may start after its judges have judged (discover said
        0.1 s of a 10 s run)."""
        started = self.info["started_at"] = time.perf_counter()  # a failed run's time too
        self.info["started_utc"] = utc_stamp()  # `started`, one format for every command
        doc = await self.body(sess)
        doc.setdefault("judges_used", sess.judges_used())
        if self.items is not None:  # which data, not only the spec that named it
            from judgeaudit.data.fingerprint import stamp
            stamp(doc, self.items)
        doc["seconds"] = round(time.perf_counter() - started, 2)
        doc.setdefault("started", self.info["started_utc"])
        return run_stamps(doc)

    def failed_document(self, sess: Session, exc: Exception) -> dict[str, Any]:
        """The results document of this command when a call failed fatally (a revoked key,
        a bad request, answers that cannot be used) and the pipeline ended without one: a
        failed run whose reason quotes the error, with the session's call counts."""
        import judgeaudit
        from judgeaudit.outcome import assess

        calls = sess.calls()
        if not calls.get("first_error"):
            calls["first_error"] = str(exc)
        outcome = assess(n_valid=0, n_planned=self.n_planned(), calls=calls,
                         min_valid=self.min_valid, max_failed=self.max_failed, what=self.unit)
        started = self.info.get("started_at")
        gate = self.info.get("fail_on")  # a release gate no failed run passes, recorded
        return {"command": self.command, "version": judgeaudit.__version__,
                "judge": self.judge, "data": self.data, "calls": calls, "run": outcome,
                **({"config": self.info["config"]} if "config" in self.info else {}),
                "error": str(exc), "judges_used": sess.judges_used(),
                **({"seconds": round(time.perf_counter() - started, 2),
                    "started": self.info.get("started_utc")} if started is not None else {}),
                **({"gate": {"fail_on": gate, "outcome": "run_failed", "by": []}}
                   if gate is not None else {})}

    def unfinished_document(self, sess: Session) -> dict[str, Any]:
        """What the output folder holds while the run is under way, until its results
        replace it: a failed run saying it did not finish. So a run that is interrupted or
        killed (even by SIGKILL) never leaves an earlier run's results there as its own."""
        why = UNFINISHED if sess.cache is not None else UNFINISHED_NO_CACHE
        doc = self.failed_document(sess, RuntimeError(why))
        doc["run"].update(message=f"run failed: {why}", unfinished=True,
                          **({} if sess.cache is not None else {"no_cache": True}))
        return doc


UNFINISHED = ("the run did not finish (interrupted, killed, or still running); run the same "
              "command again to resume: finished calls are in the cache")
# Without a cache (--no-cache, a Session with cache=False) nothing is kept to resume from: it
# promised a resume, and the re-run paid for every call again.
UNFINISHED_NO_CACHE = ("the run did not finish (interrupted, killed, or still running); its "
                       "answers were not kept (no cache): running it again pays for every "
                       "call again")


def opt(name: str, cli: bool) -> str:
    """An option's name in a message: `--name-x` for the CLI, `name_x` for the API."""
    return f"--{name.replace('_', '-')}" if cli else name


def needs(bundle: JudgeBundle, role: str, *metas: Mapping[str, Any],
          part: str | None = None) -> None:
    """Before any call: ValueError (exit 2) when `bundle`'s model has no answer for a part it
    must play (`Provider.cannot_serve`), e.g. the judge-only `sim` as --llm. Before this,
    the run failed (exit 3) on reaching that part, after its judges had been asked. `part`
    names the part in the message (default: the G-module or the task)."""
    for meta in metas:
        why = bundle.client.provider.cannot_serve(meta)
        if why:
            part = part or meta.get("module") or f"task {meta.get('task')!r}"
            raise ValueError(f"{role} {bundle.public_spec}: {why}; {part} needs a model that "
                             "writes text (local, openai:MODEL, anthropic:MODEL)")


@dataclass(frozen=True)
class Role:
    """A model a command runs, for `local_roles_ready`: its spec, the option that sets it,
    the option's default (None: no default; another option's value, as quantify's
    --generator) and, when not the option itself, how the option reached it ("the first of
    --judges")."""

    spec: str
    option: str
    default: str | None = None
    via: str | None = None

    def says(self) -> str:
        """Which option sets the role, and how to give another model."""
        if self.via is not None:
            return f"{self.via} is {public_spec(self.spec)}; pass {self.option} SPEC to use " \
                   "another model"
        if self.default is not None and self.spec == self.default:
            return f"{self.option} defaults to {self.default}; pass {self.option} SPEC to " \
                   "use another model"
        return f"{self.option} is {public_spec(self.spec)}; pass another {self.option} SPEC " \
               "to use another model"


def _default(cfg: Any, name: str) -> str | None:
    """The default of `cfg`'s option `name` when the option is at it (for `Role`: "--scorer
    defaults to local"), else None."""
    value = type(cfg).model_fields[name].default
    return value if isinstance(value, str) and getattr(cfg, name) == value else None


def local_roles_ready(s: Session, roles: Sequence[Role]) -> None:
    """Before any call: ValueError (exit 2, `MissingExtraError`) when a role the embedded
    judge plays cannot run here (the [local] extra missing: `LocalProvider.require_extra`)
    and the cache holds no answer of its model, so its first call must fail. The provider
    checks the same before its own first uncached call, but a run reaches that call after
    the other roles' calls: mitigate without [local] sent its judges' 114 paid requests, then
    stopped at the default --scorer local (the README says a missing [local] stops the run
    before anything is sent). A cache holding answers of that model lets the run go on: they
    replay, and the provider still stops at its first miss. A plan (--plan-only) sends
    nothing and needs no backend."""
    from judgeaudit.llm.local_model import MissingExtraError

    if s.planner is not None:
        return
    held: dict[str, dict[str, int]] | None = None
    for role in roles:
        provider = s.judge(role.spec).client.provider
        check = getattr(provider, "require_extra", None)
        if provider.name != "local" or check is None:
            continue
        try:
            check()
        except MissingExtraError as exc:
            if s.cache is not None:
                if held is None:
                    held = s.cache.local_backends()
                if sum((held.get(f"local:{provider.model}") or {}).values()):
                    continue
            raise MissingExtraError(f"{exc}; {role.says()}", name=exc.name) from None


# ---- input -------------------------------------------------------------------------------

def _as_items(data: Sequence[Any]) -> list[Any]:
    """The items of a list given as data: items as they are, dicts made items as the jsonl
    loader makes its records (`judgeaudit.data.loaders.jsonl`): pairwise or pointwise by
    their fields, labels "1"/"2"/"0" read as numbers. A dict with neither kind's fields takes
    the kind of the others (pairwise when they are), so it is told what it lacks. A bad one
    is a ValueError naming it by index, worded as the loader's: "data[2]: field
    'response_2': missing (required)" (it was pydantic's error, for the wrong item type).
    A gold score or quality that is no finite number (NaN, inf, or the text "nan" pydantic
    reads as NaN) is refused by index as the file loaders refuse it (`nonfinite_field`), on
    the item as built: a dict or an item given here was taken, to fail only after the
    judging ("correlation: x and y must be finite", no item named)."""
    from judgeaudit.data.loaders._common import NUMBER_FIELDS, nonfinite_field
    from judgeaudit.data.loaders.jsonl import _kind_of
    from judgeaudit.data.schema import PairwiseItem, PointwiseItem

    models = {"pairwise": PairwiseItem, "pointwise": PointwiseItem}
    kinds = [("pairwise" if isinstance(x, PairwiseItem) else "pointwise")
             if isinstance(x, PairwiseItem | PointwiseItem)
             else _kind_of(x) if isinstance(x, Mapping) else None for x in data]
    told = next((k for k in kinds if k is not None), None)
    items: list[Any] = []
    for i, (x, kind) in enumerate(zip(data, kinds, strict=True)):
        items.append(x if isinstance(x, PairwiseItem | PointwiseItem)
                     else _dict_item(i, x, kind or told, models))
        bad = nonfinite_field({k: getattr(items[-1], k, None) for k in NUMBER_FIELDS})
        if bad is not None:
            raise ValueError(f"data[{i}]: {bad}")
    return items


def _dict_item(i: int, x: Any, kind: str | None, models: dict[str, type]) -> Any:
    """data[i], a dict, made an item of its kind (`_as_items`)."""
    from pydantic import ValidationError

    from judgeaudit.data.loaders.jsonl import _BadValue, _normalise_labels, explain_validation

    if not isinstance(x, Mapping):
        raise ValueError(f"data[{i}]: expected a PairwiseItem, PointwiseItem or dict, got "
                         f"{type(x).__name__}")
    if kind is None:
        raise ValueError(f"data[{i}]: cannot tell the item kind: expected fields "
                         "'response_1' and 'response_2' (pairwise) or 'response' "
                         "(pointwise)")
    model = models[kind]
    try:
        return model.model_validate(_normalise_labels(dict(x)))
    except _BadValue as e:
        raise ValueError(f"data[{i}]: field {e.field!r}: {e.problem}") from None
    except ValidationError as e:
        raise ValueError(f"data[{i}]: {explain_validation(e, model)}") from None


def load_data(data: Data) -> tuple[list[Any], str]:
    """Items of a data SPEC or a list, and the name the results give the data (the spec, or
    "memory:N items")."""
    items, spec, _notes = load_data_noted(data)  # the loader warned of what it left out
    return items, spec


def load_data_noted(data: Data) -> tuple[list[Any], str, list[str]]:
    """`load_data`, with what the loader left out of its file (`data.left_out`), for the
    results' warnings."""
    if isinstance(data, str):
        from judgeaudit.data import DataError
        from judgeaudit.data.registry import load_noted

        try:
            items, notes = load_noted(data)
            return list(items), data, notes
        except (DataError, ValueError, FileNotFoundError, OSError) as exc:
            from judgeaudit.config import HUBJ_DATA

            msg = str(exc)
            if data == HUBJ_DATA and "no such file" in msg:  # the default, from elsewhere
                msg += (" (the default data, the PandaLM test set beside a judgeaudit "
                        "checkout, is found from the checkout only: give --data "
                        "pandalm:PATH or any pairwise data with human labels)")
            raise ValueError(msg if data in msg else f"data {data!r}: {msg}") from None
    if isinstance(data, bytes | Mapping) or not isinstance(data, Sequence | list | tuple):
        raise ValueError(f"data: expected a data SPEC or a list of items, got "
                         f"{type(data).__name__}")
    items = _as_items(data)
    seen: set[str] = set()
    for it in items:
        if it.id in seen:
            raise ValueError(f"data: duplicate item id {it.id!r}; ids must be unique")
        seen.add(it.id)
    return items, f"memory:{len(items)} items", []


def _read_doc(x: Doc, what: str, expected: str = "a judgeaudit results.json"
              ) -> dict[str, Any]:
    """A results document given as a dict (or `Result`) or a path: a path the CLI gives is
    read as plain JSON; one the API gives is loaded as a `Result` (schema checked). A file
    that is not one says what was `expected` (a JSONL file given to --apply said only
    "Extra data: line 2 column 1")."""
    from judgeaudit.result import Result

    if isinstance(x, Result):
        return x.to_dict()
    if isinstance(x, Mapping):
        return dict(x)
    if what.startswith("--"):
        path = Path(x) / "results.json" if Path(x).is_dir() else Path(x)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{what} {x}: not {expected} (not one JSON object: "
                             f"{exc})") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{what} {x}: {exc}") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{what} {x}: not {expected} (a JSON {type(doc).__name__}, "
                             "not an object)")
        return doc
    try:
        return Result.load(x).to_dict()
    except (OSError, ValueError) as exc:
        raise ValueError(f"{what} {x}: {exc}") from None


def warn_rounds(bundle: JudgeBundle, rounds: int, what: str, instead: str) -> None:
    """Warn when a judge in batch mode (`batch=on`) serves a command that asks in rounds,
    each chosen from the last one's answers: every round then waits for its own batch
    (minutes to 24 h at the provider), one after another."""
    if rounds > 1 and bundle.client.batched:
        log.warning("%s sends its calls as provider batches (batch=on), and %s asks in rounds "
                    "chosen from the answers before: up to %d batches one after another, each "
                    "taking minutes to 24 h at the provider; %s", bundle.public_spec, what,
                    rounds, instead)


def template_drops(bundle: JudgeBundle, items: Sequence[Any], of: str = "") -> list[str]:
    """The items' text the judge's user template cannot show (`JudgeBundle.check_items`),
    logged before any call, so the user can stop a paid run, and returned for the results'
    warnings (results.json, --json, report): the run goes on, the drop is never silent. Each
    logged one is kept in `SAID_EARLY`, so the CLI's end-of-run "warning:" lines do not say
    it a second time (the terminal said each twice)."""
    drops = [w + of for w in bundle.check_items(items)]
    for w in drops:
        log.warning("%s", w)
        SAID_EARLY.add(w)
    return drops


# Warnings already logged before a run's calls (`template_drops`): not repeated at its end.
SAID_EARLY: set[str] = set()


# ---- evaluate ----------------------------------------------------------------------------

def prepare_evaluate(cfg: EvaluateConfig, *, data: Data | None = None,
                     cli: bool = False) -> Run:
    """`judgeaudit evaluate`: the items chosen and checked; `data` replaces `cfg.data`
    (e.g. a list of items)."""
    from judgeaudit.audit.evaluate import check_field, select_items
    from judgeaudit.audit.evaluate import evaluate as run_evaluate
    from judgeaudit.data.schema import PairwiseItem

    if cfg.limit is not None and cfg.sample is not None:
        raise ValueError(f"{opt('limit', cli)} and {opt('sample', cli)} both choose the items; "
                         "give one of them")
    loaded, spec, notes = load_data_noted(cfg.data if data is None else data)
    items, selection = select_items(loaded, limit=cfg.limit, sample=cfg.sample, seed=cfg.seed)
    if not items:
        raise ValueError(f"data {spec!r} has no items")
    n_pair = sum(isinstance(it, PairwiseItem) for it in items)
    if n_pair and n_pair != len(items):
        raise ValueError(f"data {spec!r} mixes {n_pair} pairwise and {len(items) - n_pair} "
                         "pointwise items; evaluate one kind at a time")
    pointwise = n_pair == 0
    if pointwise and (cfg.pair_rule is not None or cfg.ties is not None):
        raise ValueError(f"{opt('pair_rule', cli)} and {opt('ties', cli)} apply to pairwise "
                         f"data; {spec!r} is pointwise (a gold score per response)")
    if not pointwise and (cfg.group_by is not None or cfg.system_field is not None):
        raise ValueError(f"{opt('group_by', cli)} and {opt('system_field', cli)} apply to "
                         f"pointwise data (a gold score per response); {spec!r} is pairwise")
    for name in ("by", "group_by", "system_field"):
        if getattr(cfg, name) is not None:
            check_field(items, getattr(cfg, name), opt(name, cli))
    # Every number evaluate gives compares the judge with a label or gold score: without one,
    # a run made its calls and passed with every metric at n=0.
    if pointwise and all(getattr(it, "score", None) is None for it in items):
        raise ValueError(f"data {spec!r}: none of the {len(items)} items has a gold score, so "
                         "there is nothing to evaluate the judge's scores against (the gold "
                         "score is read from a field 'score' or 'rating'; for a column of "
                         "another name: hf:PATH?score=COLUMN)")
    if not pointwise and all(getattr(it, "label", None) is None for it in items):
        raise ValueError(f"data {spec!r}: none of the {len(items)} pairs has a label (1, 2 or "
                         "tie), so there is nothing to evaluate the verdicts against; to "
                         "measure biases that need no label (position), use judgeaudit audit")

    async def body(s: Session) -> dict[str, Any]:
        bundle = s.judge(cfg.judge)
        # the items' text a user's template drops (the CLI says it with the run's warnings)
        drops = template_drops(bundle, items)
        tr = s.tracker("judging", len(items) if pointwise else bundle.pairwise.n_calls(items))
        res = await run_evaluate(bundle, items, on_done=tr.advance, data_spec=spec,
                                 seed=cfg.seed, min_valid=cfg.min_valid,
                                 max_failed=cfg.max_failed, pair_rule=cfg.pair_rule or "mean",
                                 ties=cfg.ties, by=cfg.by, group_by=cfg.group_by,
                                 system_field=cfg.system_field, selection=selection)
        res["warnings"] = [*notes, *drops, *(res.get("warnings") or [])]
        return res

    return Run("evaluate", public_spec(cfg.judge), spec, body, lambda: len(items),
               cfg.min_valid, cfg.max_failed,
               info={"pointwise": pointwise, "selection": selection}, items=loaded)


# ---- audit -------------------------------------------------------------------------------

def prepare_audit(cfg: AuditConfig, *, data: Data | None = None,
                  panel: Sequence[str] | None = None, cli: bool = False) -> Run:
    """`judgeaudit audit`: probes and items chosen and checked (each probe takes the first n
    pairs it can use, or a seeded sample); `data` replaces `cfg.data`, `panel` (a list of
    SPECs) `cfg.panel`."""
    from judgeaudit.audit.battery import audit_items, check_runnable, run_battery
    from judgeaudit.audit.evaluate import check_field
    from judgeaudit.audit.probe import WRITING, get_probe, probe_names

    if cfg.probes is not None and not cfg.probes.replace(",", "").strip():
        # `--probes "$PROBES"` with PROBES unset ran the whole default battery silently
        raise ValueError(f"{opt('probes', cli)} is empty: name the probes (comma-separated) "
                         "or leave it out for the default battery")
    names = ([p.strip() for p in cfg.probes.split(",") if p.strip()] if cfg.probes
             else probe_names(default_only=not cfg.full))
    probes = [get_probe(name) for name in names]  # unknown: ValueError naming the known ones
    panel_specs = list(panel) if panel is not None else split_specs(cfg.panel or "")
    if panel_specs:  # the judge itself or one panel judge twice: agreement with itself
        _distinct_judges(panel_specs, cli, judge=cfg.judge, option="panel")
    named = probes if cfg.probes else []  # asked for by name, not by --full
    for p in named:
        if p.needs_panel and not panel_specs:
            raise ValueError(
                f"probe {p.name} needs {opt('panel', cli)}: other judges to compare the judge "
                "with" + (f"; {opt('adaptive', cli)} takes no panel, so audit it without "
                          f"{opt('adaptive', cli)}" if cfg.adaptive else ""))
    writers = [p.name for p in named if p.needs_writing]
    if cfg.n is not None and cfg.sample is not None:
        raise ValueError(f"{opt('n', cli)} and {opt('sample', cli)} both choose the items; "
                         "give one of them")
    if cfg.adaptive and (cfg.n is not None or cfg.sample is not None or panel_specs):
        raise ValueError(f"{opt('adaptive', cli)} chooses the items itself "
                         f"({opt('max_n', cli)}); not with {opt('n', cli)}, "
                         f"{opt('sample', cli)} or {opt('panel', cli)}")
    if not cfg.adaptive:  # the adaptive run's settings would be silently ignored
        given = [opt(k, cli) for k in ("max_calls", "max_n", "round_size")
                 if getattr(cfg, k) != type(cfg).model_fields[k].default]
        if given:
            raise ValueError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to "
                             f"{opt('adaptive', cli)} (a fixed-n audit takes {opt('n', cli)})")
    loaded, spec, notes = load_data_noted(cfg.data if data is None else data)
    items, limit, selection = audit_items(loaded, n=cfg.n, sample=cfg.sample, full=cfg.full,
                                          seed=cfg.seed)
    if not items:
        raise ValueError(f"data {spec!r} has no items")
    if cfg.by is not None:
        check_field(items, cfg.by, opt("by", cli))
    try:
        check_runnable(items, names, limit=limit)
    except ValueError as exc:
        raise ValueError(f"data {spec!r}: {exc}") from None

    async def body(s: Session) -> dict[str, Any]:
        bundle = s.judge(cfg.judge)
        # the items' text a user's template drops (each probe judges up to --n of them)
        drops = template_drops(bundle, items, "" if limit is None else
                               f" (Counted over the data's items; each probe judges the "
                               f"first {limit} it can use.)")
        if writers:  # its own answers are compared with the items' (self_preference)
            needs(bundle, opt("judge", cli), WRITING, part=f"probe {', '.join(writers)}")
        others = [s.judge(p) for p in panel_specs]
        if others:  # a local panel judge is asked after the judge's calls were paid
            local_roles_ready(s, [Role(cfg.judge, opt("judge", cli), _default(cfg, "judge")),
                                  *(Role(p, opt("panel", cli)) for p in panel_specs)])
        tr = s.tracker("auditing")
        if cfg.adaptive:
            from judgeaudit.audit.adaptive import run_adaptive

            warn_rounds(bundle, -(-cfg.max_n // cfg.round_size), "an adaptive audit",
                        "a fixed-n audit (no --adaptive) sends its calls in one batch")

            res = await run_adaptive(
                bundle, items, names, seed=cfg.seed, alpha=cfg.alpha, max_n=cfg.max_n,
                round_size=cfg.round_size, max_calls=cfg.max_calls, max_cost=cfg.max_cost,
                data_spec=spec, on_calls=tr.add_total, on_done=tr.advance,
                min_valid=cfg.min_valid, max_failed=cfg.max_failed, by=cfg.by,
                length_control=cfg.length_control)
        else:
            res = await run_battery(bundle, items, names, seed=cfg.seed, alpha=cfg.alpha,
                                    panel=others, data_spec=spec, on_calls=tr.add_total,
                                    on_done=tr.advance, min_valid=cfg.min_valid,
                                    max_failed=cfg.max_failed, limit=limit, by=cfg.by,
                                    selection=selection, length_control=cfg.length_control)
        if cfg.note:
            res.setdefault("notes", []).append(cfg.note)
        if notes or drops:
            res["warnings"] = [*notes, *drops, *(res.get("warnings") or [])]
        return res

    n_used = len(items) if limit is None else min(limit, len(items))  # --n, not the data's
    return Run("audit", public_spec(cfg.judge), spec, body, lambda: n_used, cfg.min_valid,
               cfg.max_failed, info={"names": names, "limit": limit}, items=loaded)


# ---- scoring-bias ------------------------------------------------------------------------

def unused_generation(cfg: ScoringBiasConfig, cli: bool, *extra: str) -> None:
    """The generator and reviewer (and `extra` names given) serve reference generation
    only: without it they were ignored, and the run ended without the Ref-1..4 answers they
    were given for. ValueError before any call."""
    if cfg.generate_references:
        return
    unused = [opt(n, cli) for n in ("generator", "reviewer") if getattr(cfg, n) is not None]
    unused += list(extra)
    if unused:
        flag = opt("generate_references", cli) + ("" if cli else "=True")
        raise ValueError(f"{', '.join(unused)}: used only with {flag} (the Ref-1..4 answers "
                         f"written by generation and review), which is not given; give "
                         f"{flag}, or leave {' and '.join(unused)} out")


def prepare_scoring_bias(cfg: ScoringBiasConfig, *, data: Data | None = None,
                         references: Mapping[str, Mapping[int, str]] | None = None,
                         references_out: str | os.PathLike[str] | None = None,
                         cli: bool = False) -> Run:
    """`judgeaudit scoring-bias`: perturbations, items and Ref-k answers (`cfg.references`
    read, or `references` as {item_id: {k: text}}, or the data's own); with
    `cfg.generate_references` the generated ones are written to `references_out`."""
    from judgeaudit.data.schema import PointwiseItem
    from judgeaudit.judges.pointwise import RubricJudge
    from judgeaudit.judges.templates import item_field_drops
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
    from judgeaudit.scoring.run import measurable, n_calls, run_scoring_bias, scored_repeats

    unused_generation(cfg, cli)
    names = [p.strip() for p in (cfg.perturbations or "").split(",") if p.strip()]
    perts = resolve(names or None, seed=cfg.seed, id_maps=cfg.ids or ())
    # what the loader noted (empty responses judged as empty answers), for the warnings as
    # evaluate gives them: scoring-bias dropped them unsaid
    loaded, spec, notes = load_data_noted(cfg.data if data is None else data)
    items = [it for it in loaded if isinstance(it, PointwiseItem)]
    if not items:
        raise ValueError(f"data {spec!r} has no pointwise items (scoring-bias scores single "
                         "responses; pairwise data does not apply)")
    siblings = sibling_references(items)  # from every item, before the limit
    if cfg.limit is not None:
        items = items[:cfg.limit]
    refs: dict[str, dict[int, str]] = {}
    if references is not None:
        known = {it.id for it in loaded if isinstance(it, PointwiseItem)}  # before the limit
        unknown = sorted(str(i) for i in references if str(i) not in known)
        if unknown:  # its rows read n = 0, unsaid
            raise ValueError(f"references: {len(unknown)} item id(s) not in the data "
                             f"{spec!r}: {', '.join(map(repr, unknown[:5]))}"
                             f"{', ...' if len(unknown) > 5 else ''}")
        try:
            refs = {str(i): {int(k): str(t) for k, t in by_k.items()}
                    for i, by_k in references.items()}
            bad = any(not 1 <= k <= 5 for by_k in refs.values() for k in by_k)
        except (AttributeError, TypeError, ValueError):
            bad = True
        if bad:
            raise ValueError("references: expected {item_id: {k: text}} with k a score "
                             "1-5")
    elif cfg.references is not None:
        try:
            refs = read_references(cfg.references)
        except OSError as exc:
            raise ValueError(f"{opt('references', cli)} {cfg.references}: cannot read it "
                             f"({exc.strerror or exc}); expected a references.json "
                             "({item_id: {k: text}})") from None
        except ValueError as exc:
            raise ValueError(f"{opt('references', cli)}: {exc}") from None
    elif not cfg.generate_references:
        refs = siblings
    gen_spec, rev_spec = cfg.generator or cfg.judge, cfg.reviewer or cfg.judge

    if refs and cfg.references is not None:  # ids that match no item: rows of n = 0, unsaid
        known = {it.id for it in items}
        if not known & set(refs):
            raise ValueError(f"{opt('references', cli)} {cfg.references}: none of its "
                             f"{len(refs)} item ids is an item of the data (e.g. "
                             f"{next(iter(refs))!r}; the data's: {', '.join(sorted(known)[:3])}"
                             ", ...)")

    reps = cfg.repeats  # baseline scorings per item: a deterministic judge's once
    template = None  # the scoring template once loaded: n_calls leaves out what it cannot show

    async def body(s: Session) -> dict[str, Any]:
        nonlocal refs, reps, template
        main = s.judge(cfg.judge)
        if main.client.provider.name == "replay":
            raise ValueError(f"{opt('judge', cli)} {main.public_spec}: a replay judge serves "
                             "the one score recorded per item whatever the prompt says, so "
                             "every perturbation would read as 'no effect'; scoring-bias needs "
                             "a judge that reads the perturbed prompt (a live or sim judge)")
        if cfg.generate_references:  # every spec checked before any call
            needs(s.judge(gen_spec), opt("generator", cli) if cfg.generator else
                  f"{opt('judge', cli)} (the generator by default)", {"task": "generate"})
            s.judge(rev_spec)
            # the reviewer is asked after the generator's calls, the judge after both
            local_roles_ready(s, [
                Role(gen_spec, opt("generator", cli)) if cfg.generator else
                Role(gen_spec, opt("generator", cli), via=f"{opt('judge', cli)} (the "
                     "generator by default)"),
                Role(rev_spec, opt("reviewer", cli)) if cfg.reviewer else
                Role(rev_spec, opt("reviewer", cli), via=f"{opt('judge', cli)} (the "
                     "reviewer by default)"),
                Role(cfg.judge, opt("judge", cli), _default(cfg, "judge"))])
        try:
            rubric = RubricJudge(main.client, cfg.template)
            # the rubric and levels it drops, said and counted (a reference shows in ref_k
            # prompts only)
            drops = item_field_drops(rubric.template, "pointwise", items,
                                     ("rubric", "rubric_levels"))
            for w in drops:  # before any call: the user can stop the run
                log.warning("%s", w)
            measurable(rubric.template, perts)  # some perturbation it can show
        except ValueError as exc:
            raise ValueError(f"{opt('template', cli)}: {exc}") from None
        ref_info: dict[str, Any] | None = None
        if cfg.generate_references:
            gen_b, rev_b = s.judge(gen_spec), s.judge(rev_spec)
            pipe = ReferencePipeline(gen_b.client, rev_b.client, max_attempts=cfg.ref_attempts,
                                     tolerance=cfg.ref_tolerance,
                                     max_tokens=cfg.ref_max_tokens, review=cfg.ref_review)
            subset = items[:cfg.ref_limit] if cfg.ref_limit else items
            n_q = len({question_key(it) for it in subset})  # one set per question
            tr = s.tracker("references", 2 * 4 * n_q * cfg.ref_attempts)
            results = await pipe.run(subset, on_done=tr.advance)
            info = {"generator": gen_b.public_spec, "reviewer": rev_b.public_spec,
                    "max_attempts": cfg.ref_attempts, "tolerance": cfg.ref_tolerance,
                    "review": cfg.ref_review, "max_tokens": cfg.ref_max_tokens, "data": spec}
            refs = {**refs, **as_references(results)}
            ref_info = {**info, "summary": summarize(results)}
            if references_out is not None:
                ref_info["file"] = str(write_references(references_out, results, info))
        reps = scored_repeats(main.client.provider, cfg.repeats)
        template = rubric.template
        tr = s.tracker("scoring", n_calls(items, perts, refs, reps, template))
        res = await run_scoring_bias(rubric, items, perts, references=refs,
                                     repeats=cfg.repeats, seed=cfg.seed,
                                     judge_spec=main.public_spec, data_spec=spec,
                                     on_done=tr.advance, min_valid=cfg.min_valid,
                                     max_failed=cfg.max_failed)
        if ref_info is not None:
            res["references"] = ref_info
        if drops:  # its report shows the notes (it has no warnings section)
            res["notes"] = [*(res.get("notes") or []), *drops]
        if notes or drops:
            res["warnings"] = [*notes, *drops, *(res.get("warnings") or [])]
        return res

    return Run("scoring-bias", public_spec(cfg.judge), spec, body,
               lambda: n_calls(items, perts, refs, reps, template), cfg.min_valid,
               cfg.max_failed, unit="scores", items=loaded)


# ---- HUB-J: shared steps -----------------------------------------------------------------

def _human_items(data: Data, limit: int | None, min_agreement: float) -> tuple[list[Any], str]:
    """Pairwise items with a decisive human label given by at least `min_agreement` of
    their annotators (the first `limit`)."""
    from judgeaudit.data.schema import PairwiseItem
    from judgeaudit.hubj.splits import human_filter

    loaded, spec = load_data(data)
    items = [it for it in loaded if isinstance(it, PairwiseItem)]
    if not items:
        raise ValueError(f"data {spec!r} has no pairwise items")
    kept = human_filter(items, min_agreement)
    if not kept:
        raise ValueError(f"data {spec!r}: no item has a decisive human label (1 or 2) given "
                         f"by at least {min_agreement:.0%} of its annotators")
    return (kept[:limit] if limit is not None else kept), spec


def _recorded_folder(recorded: str | None, data: Data, cli: bool) -> Path | None:
    """The folder of the recorded verdicts (recorded 'pandalm' needs data pandalm:PATH)."""
    if recorded is None:
        return None
    if recorded != "pandalm":
        raise ValueError(f"{opt('recorded', cli)} {recorded!r}: only 'pandalm' is known")
    from judgeaudit.data.spec import parse_spec

    sp = parse_spec(data) if isinstance(data, str) else None
    if sp is None or sp.kind != "pandalm" or not sp.name:
        raise ValueError(("--recorded pandalm needs --data pandalm:PATH" if cli else
                          "recorded='pandalm' needs data='pandalm:PATH'")
                         + " (the folder with the recorded verdict files)")
    return Path(sp.name)


async def _winners(s: Session, specs: Sequence[str], recorded: str | None,
                   folder: Path | None, items: Sequence[Any], workdir: Path | None,
                   cli: bool) -> dict[str, dict[str, Any]]:
    """Winners of every judge: recorded ones first (no calls; their files converted in
    `workdir`, default a temporary folder), then live ones."""
    from judgeaudit.hubj.run import live_winners, recorded_winners

    winners: dict[str, dict[str, Any]] = {}
    if recorded and folder is not None:
        ids = [it.id for it in items]
        if workdir is not None:
            winners.update(recorded_winners(recorded, folder, ids, workdir))
        else:
            with tempfile.TemporaryDirectory(prefix="judgeaudit-recorded-") as tmp:
                winners.update(recorded_winners(recorded, folder, ids, tmp))
    if specs:
        bundles = {s.judge(x).public_spec: s.judge(x) for x in specs}
        tr = s.tracker("judging", 2 * len(items) * len(bundles))
        winners.update(await live_winners(bundles, items, on_done=tr.advance))
    if not winners:
        _need_judges([], None, cli)
    return winners


def _need_judges(specs: Sequence[str], recorded: str | None, cli: bool) -> None:
    """Before any work (the MiniLM weights, the scorer's calls): some judge to study, each
    given once (`_distinct_judges`)."""
    if not specs and not recorded:
        raise ValueError("give --judges SPEC[,SPEC] and/or --recorded pandalm" if cli else
                         "give judges=SPEC[,SPEC] and/or recorded='pandalm'")
    _distinct_judges(specs, cli)


def _judge_key(spec: str) -> Any:
    """What makes two judge SPECs the same judge: kind, model and parameters as they are
    read, whatever their order (`sim?a=1&b=2` is `sim?b=2&a=1`) and secrets masked as the
    run names them. A parameter given at its default is the same as leaving it out, and two
    forms of one value are one value, where the reader provably reads them the same:

    - the judge-level parameters (`template`, `score_template`) at the defaults
      `JUDGE_PARAM_HELP` declares (`make_judge` reads them with exactly those);
    - `orders` not at all: `orders=one` asks the first of the two orders the judge asks, so
      its answers are the judge's own (a panel with it agreed with the judge on every pair
      it shared; a HUB-J consensus counted one rater twice);
    - a built-in provider's parameters as its own identity reads them (`_provider_key`):
      `simhubj` is `simhubj?seed=0` is `simhubj:default?seed=0.0`.

    A plugin provider's parameters are compared as given: its declared defaults are prose
    that nothing here can check against its code."""
    from judgeaudit.judges.factory import JUDGE_PARAM_HELP, JUDGE_PARAMS
    from judgeaudit.spec import parse_spec

    try:
        sp = parse_spec(spec.strip())
    except ValueError:
        return public_spec(spec.strip())
    masked = parse_spec(sp.public())
    judge = {k: v for k, v in masked.params.items()
             if k in JUDGE_PARAMS and k != "orders"
             and v != _declared_default(JUDGE_PARAM_HELP[k])}
    rest = {k: v for k, v in masked.params.items() if k not in JUDGE_PARAMS}
    return (masked.kind, _provider_key(masked.kind, masked.name, rest),
            tuple(sorted(judge.items())))


# "... (default both)", "(default pairwise_v1; see ...)": a declared default that is one literal
# value. "(default: the request's)", "(default auto, the cores ...)", "(default 0: no wait)" and
# "(default $OPENAI_API_KEY)" are descriptions, not values.
_DEFAULT = re.compile(r"\bdefault ([^\s(),;:$]+)[);]")
# Parameters that a built-in provider whose cache identity holds its parameters as given
# (openai, anthropic) reads as a number, so that `temperature=0` and `temperature=0.0` send the
# same request: both read with `float_param` (temperature) or `int_param` (max_tokens) into the
# value sent, and nowhere else (tests/hubj/test_judge_identity.py holds them to it).
_READ_AS_NUMBER: dict[str, dict[str, type]] = {
    "openai": {"temperature": float, "max_tokens": int},
    "anthropic": {"temperature": float},
}


def _declared_default(meaning: str) -> str | None:
    """The one literal value a parameter's help line (`known_params`) declares as its default,
    or None when it declares none or describes one ("the request's", "$ENV")."""
    m = _DEFAULT.search(meaning)
    return m.group(1) if m else None


def _provider_key(kind: str, name: str, params: dict[str, str]) -> Any:
    """The provider part of `_judge_key`: for a built-in provider, the cache identity of the
    provider the spec makes (`Provider.cache_identity`: what its answers are keyed by, so two
    specs with one identity get the same answers, the same verdicts). For sim and simhubj it
    holds every planted value resolved with the preset and defaults, as numbers (`seed=0`,
    `seed=0.0` and no seed are one judge; `sim:biased?position=0` is not `sim:biased`, whose
    preset plants position 0.5); for local, the weights, backend and decoding resolved
    (`decode=lookup` given is not the same as left out: it picks the transformers backend where
    `auto` may pick ik); secrets and operational parameters (timeout, pool sizes, prices) are
    not in it: they change who pays or how a call is sent, not the verdict. The identity of
    openai and anthropic holds the other parameters as given, so theirs are first read as the
    provider reads them (`_as_read`). A spec the provider refuses, and a plugin provider, keep
    their parameters as given (the refusal comes when the judge is made)."""
    from judgeaudit.judges.factory import DEFAULT_MODEL
    from judgeaudit.llm.base import Provider
    from judgeaudit.llm.registry import make_provider, provider_class

    given = (name, tuple(sorted(params.items())))
    try:
        cls = provider_class(kind)
    except ValueError:
        return given
    if not cls.__module__.startswith("judgeaudit.llm.providers."):
        return given
    if cls.cache_identity is Provider.cache_identity:
        params = _as_read(cls, params)
    try:
        ident = make_provider(kind, name or DEFAULT_MODEL.get(kind, ""), params).cache_identity()
    except (ValueError, OSError, ImportError):
        return given
    return json.dumps(ident, sort_keys=True, default=str)


def _as_read(cls: Any, params: dict[str, str]) -> dict[str, str]:
    """`params` of a built-in provider whose identity holds them as given, as it reads them:
    one given at the default its `known_params` declares is left out (openai's logprobs=auto,
    prefill=instruct: read with `params.get(name, default)`), and a number in one form
    (`_READ_AS_NUMBER`). Secret and operational parameters stay: the identity leaves them out
    anyway, and the provider still checks them (`batch_wait=2` without batch=on is refused)."""
    known = cls.known_params or {}
    numbers = _READ_AS_NUMBER.get(cls.name, {})
    out: dict[str, str] = {}
    for k, v in params.items():
        if k in cls.secret_params or k in cls.operational_params:
            out[k] = v
            continue
        read = numbers.get(k)
        try:
            if read is float and math.isfinite(float(v)):
                v = repr(float(v))
            elif read is int and v.isdigit():
                v = str(int(v))
        except ValueError:
            pass
        default = _declared_default(known[k]) if k in known else None
        if default is not None and v == default:
            continue
        out[k] = v
    return out


def _distinct_judges(specs: Sequence[str], cli: bool, *, judge: str | None = None,
                     option: str = "judges") -> None:
    """ValueError when one judge is given twice (`_judge_key`: equivalent specs too). The
    HUB-J commands key judges by their spec, so a repeat was silently folded into one
    (`--judges sim,sim` studied one judge); and a repeat is no second judge: its verdicts are
    the first one's (the cache answers the same request once), so discover's consensus,
    quantify's profile and mitigate's several-judge fit would count one judge twice.
    `judge`: audit's judge, which its panel (`specs`, given by `option`) must not repeat
    either: a panel of the judge itself agreed 100% with it and counted in the kappa."""
    seen: dict[Any, tuple[str, bool]] = {}
    if judge is not None:
        seen[_judge_key(judge)] = (judge, True)
    for x in specs:
        key = _judge_key(x)
        if key in seen:
            was, is_judge = seen[key]
            first, again = public_spec(was.strip()), public_spec(x.strip())
            if is_judge:
                same = (f"{again} is the judge itself ({opt('judge', cli)} {first})"
                        if first == again else f"{again} is the same judge as "
                        f"{opt('judge', cli)} {first}")
                raise ValueError(f"{opt(option, cli)}: {same}; a panel compares the judge "
                                 "with other judges")
            same = (f"{first} given twice" if first == again else
                    f"{first} and {again} are the same judge (given twice)")
            raise ValueError(f"{opt(option, cli)}: {same}; give each judge once")
        seen[key] = (x, False)


def _made(s: Session, spec: str, option: str) -> JudgeBundle:
    """`s.judge(spec)` for a model given by `option` (--llm, --scorer, --generator,
    --checker): a spec that cannot be made is named by its option, not as a judge ("judge
    'replay:foo.csv': ..." for --llm replay:foo.csv)."""
    try:
        return s.judge(spec)
    except ValueError as exc:
        msg, said = str(exc), f"judge {public_spec(spec)!r}: "
        raise ValueError(f"{option} {public_spec(spec)!r}: "
                         f"{msg.removeprefix(said)}") from None


def _stamp(res: dict[str, Any], started: str) -> dict[str, Any]:
    """Run facts every HUB-J document carries: version, start time, the judge(s)."""
    import judgeaudit

    judges = [str(j) for j in res.get("judges", [])]
    res.setdefault("version", judgeaudit.__version__)
    res.setdefault("started", started)
    res.setdefault("judge", ", ".join(judges))  # each named: "2 judges" said which none
    return res


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="seconds")


def _factors(names: str, factors_from: Doc | None, cli: bool, option: str = "factors",
             defaulted: bool = False) -> tuple[list[Any], dict[str, dict[int, str]]]:
    """The factors named (shipped ones, or 'found' ones of a discover result) and the
    criteria known for them; `option` is the command's option that named them. 'found' may
    stand among other names (`found,verbosity`: the discover run's factors and a shipped
    one). A discover result none of whose factors is named is refused: it was read and then
    ignored (`--factors verbosity --factors-from RUN`, or the default factors beside it);
    `defaulted`: `names` is the option's default, not given (said so in that message)."""
    from judgeaudit.hubj.run import resolve_factors

    wanted = [n.strip() for n in names.split(",") if n.strip()]
    discovered, theirs = None, []
    if factors_from is not None:
        what = opt("factors_from", cli)
        discovered = _read_doc(factors_from, what, "the results.json of a `discover` run")
        if discovered.get("command") != "discover":
            raise ValueError(f"{what} {factors_from}: not the results.json of `discover`"
                             if cli else f"{what}: not the results of `discover`")
        where = f"{what} {factors_from}" if cli else what
        if (discovered.get("run") or {}).get("status") == "failed" or not isinstance(
                discovered.get("discover"), Mapping):  # its factors are no result (a
            # KeyError 'discover' on a run that had nothing to discover from)
            why = (discovered.get("run") or {}).get("message") or "it found no factors"
            raise ValueError(f"{where}: that discover run failed ({why}), so it has no "
                             "factors to use; run discover again")
        theirs = [str(f["name"]) for f in discovered["discover"].get("factors") or []]
    elif "found" in wanted:
        raise ValueError(f"{opt(option, cli)} found: the factors a discover run found need "
                         f"{opt('factors_from', cli)} (its output folder or results.json)")
    expanded: list[str] = []
    for n in wanted:
        expanded.extend(theirs if n == "found" else [n])
    twice = sorted({n for n in expanded if expanded.count(n) > 1})
    if twice:
        via = " (once through found)" if "found" in wanted else ""
        raise ValueError(f"{opt(option, cli)}: {', '.join(twice)} given twice{via}")
    if discovered is not None and not theirs:
        raise ValueError(f"{where}: that discover run found no factor, so it has none to "
                         f"use; leave out {what} and name shipped factors")
    if discovered is not None and not set(expanded) & set(theirs):
        given = f"{opt(option, cli)} {','.join(wanted)}" + (" (the default)" if defaulted
                                                             else "")
        listed = ", ".join(repr(n) for n in theirs)
        o = opt(option, cli)
        fix = ((f"give {o} {theirs[0]!r}" if len(theirs) == 1 else f"give {o} with one of "
                "them") if option == "factor" else
               f"give {o} found (its factors) or {o} found,{','.join(wanted)} (its factors "
               "and these)")
        raise ValueError(f"{where}: none of its factors ({listed}) is named by {given}, so "
                         f"the file would be ignored; {fix}, or leave out {what}")
    try:
        return resolve_factors(expanded, discovered)
    except ValueError as exc:
        raise ValueError(f"{opt(option, cli)}: {exc}" if cli else str(exc)) from None


# ---- discover ----------------------------------------------------------------------------

def prepare_discover(cfg: DiscoverConfig, *, data: Data | None = None,
                     judges: Sequence[str] | None = None, embedder: Embedder | None = None,
                     on_stage: Callable[[str], None] | None = None,
                     recorded_dir: Path | None = None, cli: bool = False) -> Run:
    """`judgeaudit discover` (HUB-J Algorithm 1). `judges` (a list of SPECs) replaces
    `cfg.judges`; `embedder`: default MiniLM; `on_stage(message)` hears each stage start;
    `recorded_dir`: where recorded verdicts are converted (default: a temporary folder)."""
    from judgeaudit.hubj.discover import DiscoverConfig as Algorithm1
    from judgeaudit.hubj.prompts import G_ASSIGN, G_CONSTRUCT, G_EXTRACT
    from judgeaudit.hubj.run import run_discover

    started = _now()
    items, spec = _human_items(cfg.data if data is None else data, None, cfg.min_agreement)
    folder = _recorded_folder(cfg.recorded, cfg.data if data is None else data, cli)
    specs = list(judges) if judges is not None else split_specs(cfg.judges or "")
    _need_judges(specs, cfg.recorded, cli)
    alg = Algorithm1(clusters=cfg.clusters, max_factors=cfg.factors, iterations=cfg.iterations,
                     tau=cfg.tau, rho=cfg.rho, seed=cfg.seed, rep_fallback=cfg.rep_fallback)

    async def body(s: Session) -> dict[str, Any]:
        g = _made(s, cfg.llm, opt("llm", cli))
        needs(g, opt("llm", cli), G_EXTRACT.needs, G_CONSTRUCT.needs, G_ASSIGN.needs)
        for x in specs:  # every spec checked before any call
            s.judge(x)
        local_roles_ready(s, [*(Role(x, opt("judges", cli)) for x in specs),
                              Role(cfg.llm, opt("llm", cli), _default(cfg, "llm"))])
        emb = embedder
        if emb is None:
            from judgeaudit.hubj.embed import MiniLMEmbedder

            try:
                emb = MiniLMEmbedder()
            except RuntimeError as exc:  # the `hubj` extra is missing
                if cli:
                    raise ValueError(str(exc)) from None
                raise
        winners = await _winners(s, specs, cfg.recorded, folder, items, recorded_dir, cli)
        # The number of G-module calls is known only stage by stage: the total grows with
        # each stage's planned calls and the count advances on every answered call.
        tr = s.tracker("discover (G-module calls)")

        def observe(_req: Any) -> None:
            tr.advance()

        def stage(msg: str, planned: int) -> None:
            tr.add_total(planned)
            if on_stage is not None:
                on_stage(msg)

        g.client.observers.append(observe)
        try:
            res = await run_discover(items, winners, g.client, emb, alg, holdout=cfg.holdout,
                                     limit=cfg.limit, holdout_limit=cfg.holdout_limit,
                                     min_agreement=cfg.min_agreement, on_stage=stage,
                                     judge_clients=[s.judge(x).client for x in specs],
                                     min_valid=cfg.min_valid, max_failed=cfg.max_failed)
        finally:
            g.client.observers.remove(observe)
        res.update(llm=g.public_spec, data=spec)
        return _stamp(res, started)

    return Run("discover", public_spec(cfg.llm), spec, body, lambda: 0, cfg.min_valid,
               cfg.max_failed, unit="G-module answers")


# ---- quantify ----------------------------------------------------------------------------

def prepare_quantify(cfg: QuantifyConfig, *, data: Data | None = None,
                     judges: Sequence[str] | None = None,
                     factors_from: Doc | None = None, cli: bool = False) -> Run:
    """`judgeaudit quantify` (HUB-J Algorithm 2). `judges` (a list of SPECs) replaces
    `cfg.judges`; `factors_from` (a discover result) `cfg.factors_from`."""
    from judgeaudit.hubj.llmjson import JSONStats
    from judgeaudit.hubj.prompts import G_CHECK, G_CRIT, G_INJ, G_INJ_APPEND
    from judgeaudit.hubj.run import live_winners, run_quantify
    from judgeaudit.hubj.validate import criteria_for_factors

    try:
        lv = [int(x) for x in cfg.levels.split(",") if x.strip()]
    except ValueError:
        raise ValueError(f"{opt('levels', cli)} {cfg.levels!r}: expected comma-separated "
                         "numbers 1-5") from None
    if not lv or any(not 1 <= x <= 5 for x in lv):
        raise ValueError(f"{opt('levels', cli)} {cfg.levels!r}: expected numbers 1-5")
    if len(set(lv)) < len(lv):
        raise ValueError(f"{opt('levels', cli)} {cfg.levels!r}: a level is given twice")
    fs, crit = _factors(cfg.factors, cfg.factors_from if factors_from is None
                        else factors_from, cli,
                        defaulted=cfg.factors == type(cfg).model_fields["factors"].default)
    if not fs:  # it judged the pool, then failed with "0 of 0 judge verdicts on rewrites"
        raise ValueError(f"{opt('factors', cli)} found: the discover result found no factor"
                         if cfg.factors.strip() == "found" else
                         f"{opt('factors', cli)} {cfg.factors!r}: give at least one factor "
                         f"(e.g. verbosity,authority, or found with {opt('factors_from', cli)})")
    started = _now()
    specs = list(judges) if judges is not None else split_specs(cfg.judges)
    if not specs:
        raise ValueError(f"{opt('judges', cli)}: give at least one judge SPEC")
    _distinct_judges(specs, cli)
    items, spec = _human_items(cfg.data if data is None else data, cfg.pool,
                               cfg.min_agreement)
    if cfg.limit is not None and cfg.limit < 2:  # one item went to calibration, none to test
        raise ValueError(f"{opt('limit', cli)} {cfg.limit}: quantify needs at least 2 items, "
                         "some to pick the level l* on and the rest to measure on")
    if cfg.n_cal is not None and cfg.limit is not None and cfg.n_cal >= cfg.limit:
        raise ValueError(f"{opt('n_cal', cli)} {cfg.n_cal} leaves none of the "
                         f"{opt('limit', cli)} {cfg.limit} items to test on: give a smaller "
                         f"{opt('n_cal', cli)} (default: 1/6 of the items)")
    if len(items) < 2 or (cfg.n_cal is not None and cfg.n_cal >= len(items)):
        # known before any call: even if every item agreed, none would be left to test on
        # (--pool 4 --n-cal 4 judged, then reported susceptibility n = 0 and exit 0)
        need = 2 if cfg.n_cal is None else cfg.n_cal + 1
        raise ValueError(f"data {spec!r}: {len(items)} usable item"
                         f"{'s' if len(items) != 1 else ''}"
                         + (f" ({opt('pool', cli)} {cfg.pool})" if len(items) >= cfg.pool
                            else "")
                         + f", but quantify needs at least {need}: "
                         + (f"{opt('n_cal', cli)} {cfg.n_cal} to pick the level l* on and "
                            "the rest to test on" if cfg.n_cal is not None else
                            "some to pick the level l* on and the rest to test on")
                         + ("; give more items" + (f" or a smaller {opt('n_cal', cli)}"
                                                   if cfg.n_cal is not None else "")))
    missing = [f for f in fs if f.name not in crit]
    n_rw = (cfg.limit or len(items)) * len(fs) * len(lv)

    async def body(s: Session) -> dict[str, Any]:
        bundles = {s.judge(x).public_spec: s.judge(x) for x in specs}
        gen = (_made(s, cfg.generator, opt("generator", cli)) if cfg.generator
               else s.judge(specs[0]))
        chk = _made(s, cfg.checker, opt("checker", cli)) if cfg.checker else None
        role = (opt("generator", cli) if cfg.generator
                else f"{opt('judges', cli)} (its first, the generator by default)")
        needs(gen, role, (G_INJ if cfg.inject == "rewrite" else G_INJ_APPEND).needs,
              *([G_CRIT.needs] if missing else []))
        needs(chk or gen, opt("checker", cli) if chk else role, G_CHECK.needs)
        local_roles_ready(s, [
            *(Role(x, opt("judges", cli), _default(cfg, "judges") if judges is None
                   else None) for x in specs),
            Role(cfg.generator, opt("generator", cli)) if cfg.generator else
            Role(specs[0], opt("generator", cli), via=f"{opt('judges', cli)}'s first judge "
                 "(the generator by default)"),
            *([Role(cfg.checker, opt("checker", cli))] if cfg.checker else [])])
        if missing:
            got, _src = await criteria_for_factors(gen.client, missing, JSONStats())
            crit.update(got)
        tr = s.tracker("quantify",
                       2 * len(items) * len(bundles) + n_rw * (2 + 2 * len(bundles)))
        agreement = await live_winners(bundles, items, on_done=tr.advance)
        res = await run_quantify(bundles, gen.client, items, fs, crit,
                                 checker=chk.client if chk else None, levels=lv,
                                 n_cal=cfg.n_cal, seed=cfg.seed,
                                 on_violation=cfg.on_violation, limit=cfg.limit,
                                 agreement=agreement, inject=cfg.inject,
                                 max_words=cfg.max_words, on_done=tr.advance,
                                 min_agreement=cfg.min_agreement, min_valid=cfg.min_valid,
                                 max_failed=cfg.max_failed)
        res.update(data=spec, generator=gen.public_spec,
                   checker=chk.public_spec if chk else gen.public_spec)
        return _stamp(res, started)

    return Run("quantify", ", ".join(public_spec(x) for x in specs), spec, body,
               lambda: n_rw * len(specs), cfg.min_valid, cfg.max_failed, info={"levels": lv},
               unit="judge verdicts on rewrites")


# ---- mitigate ----------------------------------------------------------------------------

def _check_fit(saved: Mapping[str, Any], fit: Any, cfg: MitigateConfig,
               specs: Sequence[str], cli: bool) -> None:
    """What `--apply` cannot take, refused before any call: another command's results (it
    judged for 21 s first), a fit that failed, the fit's own settings given again (they were
    ignored silently), more than one judge, or a factor the fit is not for."""
    where = f"{opt('apply', cli)} {fit if isinstance(fit, str | os.PathLike) else ''}".strip()
    if saved.get("command") != "mitigate":
        raise ValueError(f"{where}: needs the results.json of a `mitigate` run (a fit); this "
                         f"is the result of {saved.get('command') or 'an unknown command'!r}")
    if (saved.get("run") or {}).get("status") == "failed":
        why = saved["run"].get("message") or "run failed"
        raise ValueError(f"{where}: that fit's run failed ({why}), so it has nothing to "
                         "apply; fit again")
    fields = type(cfg).model_fields
    fixed = [opt(k, cli) for k in ("candidate", "estimator", "factors_from")
             if getattr(cfg, k) != fields[k].default]
    if fixed:
        raise ValueError(f"{', '.join(fixed)}: the fit in {where} fixes "
                         f"{'it' if len(fixed) == 1 else 'them'} (leave "
                         f"{'it' if len(fixed) == 1 else 'them'} out with {opt('apply', cli)})")
    if len(specs) > 1:
        raise ValueError(f"{opt('apply', cli)} corrects one judge's verdicts; "
                         f"{opt('judges', cli)} gives {len(specs)}")
    fitted = (saved.get("factor") or {}).get("name")
    if cfg.factor is not None and cfg.factor != fitted:
        raise ValueError(f"{opt('factor', cli)} {cfg.factor}, but the fit in "
                         f"{opt('apply', cli)} is for factor {fitted!r}: a fit corrects "
                         f"only its own factor (leave out {opt('factor', cli)}, or fit "
                         f"{cfg.factor} first)")


def prepare_mitigate(cfg: MitigateConfig, *, data: Data | None = None,
                     judges: Sequence[str] | None = None, factors_from: Doc | None = None,
                     apply: Doc | None = None, recorded_dir: Path | None = None,
                     cli: bool = False) -> Run:
    """`judgeaudit mitigate` (HUB-J Algorithm 3), or with `cfg.apply` / `apply` (an earlier
    mitigate result) the correction of one judge's new verdicts ("mitigate-apply").
    `judges`, `factors_from` replace the settings' values; `recorded_dir` as in
    `prepare_discover`."""
    from judgeaudit.hubj.llmjson import JSONStats
    from judgeaudit.hubj.prompts import G_CRIT, G_SCORE
    from judgeaudit.hubj.run import run_apply, run_mitigate
    from judgeaudit.hubj.validate import criteria_for_factors

    started = _now()
    the_data = cfg.data if data is None else data
    items, spec = _human_items(the_data, cfg.limit, cfg.min_agreement)
    fit = cfg.apply if apply is None else apply
    saved = (_read_doc(fit, opt("apply", cli), "the results.json of a `mitigate` run (a fit)")
             if fit is not None else None)
    if saved is not None:  # what a fit cannot take, before any call
        _check_fit(saved, fit, cfg, judges if judges is not None else split_specs(
            cfg.judges or ""), cli)
    fs, crit = ([], {}) if saved is not None else _factors(
        cfg.factor or "verbosity", cfg.factors_from if factors_from is None else factors_from,
        cli, option="factor", defaulted=cfg.factor is None)
    if saved is None and len(fs) != 1:
        raise ValueError(f"{opt('factor', cli)}: give exactly one factor")
    folder = _recorded_folder(cfg.recorded, the_data, cli)
    specs = list(judges) if judges is not None else split_specs(cfg.judges or "")
    _need_judges(specs, cfg.recorded, cli)
    if saved is None and len(items) < 5:  # the fit needs 5 queries: say so before any call
        raise ValueError(f"mitigate: only {len(items)} labelled items; the fit needs at least "
                         f"5 queries (raise {opt('limit', cli)})")
    info: dict[str, Any] = {"apply": saved is not None}

    async def body(s: Session) -> dict[str, Any]:
        sc = _made(s, cfg.scorer, opt("scorer", cli))
        needs(sc, opt("scorer", cli), G_SCORE.needs,
              *([G_CRIT.needs] if saved is None and fs[0].name not in crit else []))
        fitted_with = (saved or {}).get("scorer")
        if fitted_with and sc.public_spec != fitted_with:  # phi is on the fit's score scale
            raise ValueError(f"{opt('scorer', cli)} {sc.public_spec}, but the fit in "
                             f"{opt('apply', cli)} scored the factor with {fitted_with}: its "
                             "phi is on that scorer's scale, so score with the same one "
                             f"({opt('scorer', cli)} {fitted_with})")
        for x in specs:  # every spec checked before any call
            s.judge(x)
        local_roles_ready(s, [*(Role(x, opt("judges", cli)) for x in specs),
                              Role(cfg.scorer, opt("scorer", cli), _default(cfg, "scorer"))])
        fit_doc = saved
        if saved is not None:  # a judge the fit has no parameters for: before judging
            fitted = saved.get("per_judge") or {}
            # the fit's judge however either spec is written (`_judge_key`): a fit made with
            # `simhubj` was refused for `simhubj?seed=0`, the same judge
            by_key: dict[Any, str] = {}
            for name in fitted:  # the first of a judge fitted twice (before one spec was one)
                by_key.setdefault(_judge_key(str(name)), name)
            per_judge = dict(fitted)
            unfitted = []
            for x in specs:
                name = s.judge(x).public_spec
                same = name if name in fitted else by_key.get(_judge_key(name))
                if same is None:
                    unfitted.append(name)
                elif same != name:  # the fit's parameters under the name this run uses
                    per_judge[name] = fitted[same]
            if unfitted:
                raise ValueError(f"no fit for judge {unfitted[0]!r} in {opt('apply', cli)}; "
                                 f"fitted judges: {', '.join(fitted)}")
            fit_doc = {**saved, "per_judge": per_judge}
        winners = await _winners(s, specs, cfg.recorded, folder, items, recorded_dir, cli)
        clients = [s.judge(x).client for x in specs]  # the judges', not the scorer's
        if fit_doc is not None:
            if len(winners) != 1:
                raise ValueError("--apply corrects one judge: give exactly one of "
                                 "--judges/--recorded" if cli else "apply corrects one judge: "
                                 "give exactly one of judges / recorded")
            (info["name"], w), = winners.items()
            res = await run_apply(fit_doc, info["name"], items, w, sc.client,
                                  judge_clients=clients, min_valid=cfg.min_valid,
                                  max_failed=cfg.max_failed, scorer_spec=sc.public_spec)
            res.update(data=spec, scorer=sc.public_spec)
            if isinstance(fit, str | os.PathLike):
                res["fit"] = str(fit)
        else:
            f = fs[0]
            if f.name not in crit:
                got, _src = await criteria_for_factors(sc.client, [f], JSONStats())
                crit.update(got)
            tr = s.tracker("G_score", len(items))
            res = await run_mitigate(items, winners, sc.client, f, crit[f.name],
                                     candidate=cfg.candidate, estimator=cfg.estimator,
                                     on_done=tr.advance, judge_clients=clients,
                                     min_valid=cfg.min_valid, max_failed=cfg.max_failed,
                                     scorer_spec=sc.public_spec)
            res.update(data=spec, scorer=sc.public_spec)
        return _stamp(res, started)

    return Run("mitigate" if saved is None else "mitigate-apply",
               ", ".join(public_spec(x) for x in specs) or str(cfg.recorded), spec, body,
               lambda: len(items) * max(1, len(specs)), cfg.min_valid, cfg.max_failed,
               info=info, unit="judge verdicts")


# ---- rank --------------------------------------------------------------------------------

def prepare_rank(cfg: RankConfig, *, on_batch: ProgressHook | None = None,
                 on_call: Callable[[Verdict], None] | None = None, cli: bool = False) -> Run:
    """`judgeaudit rank`: the pool loaded and the request checked
    (`judgeaudit.rank.run.prepare_rank`; `run.info["inputs"]`); the body runs the active
    loop (`run_rank`), calling `on_batch(done, fit, ctx)` after every judged round and
    `on_call(verdict)` after every comparison."""
    from judgeaudit.rank.run import prepare_rank as check
    from judgeaudit.rank.run import run_rank

    inp = check(cfg, cli=cli)

    async def body(s: Session) -> dict[str, Any]:
        # its one role, before the loop: the provider's own stop named no option
        local_roles_ready(s, [Role(cfg.judge, opt("judge", cli), _default(cfg, "judge"))])
        warn_rounds(s.judge(cfg.judge), -(-cfg.budget // cfg.refit_every), "rank",
                    "a larger --refit-every means fewer, larger batches")
        doc = await run_rank(s, inp, on_batch=on_batch, on_call=on_call)
        doc.setdefault("data_fingerprint", inp.pool.fingerprint)  # which items, with `pool`
        return doc

    # what a failed or unfinished run's document keeps of the settings (its report read
    # "budget of — comparisons", "? acquisition" and --json gave k and budget as null)
    settings = {"k": inp.k, "budget": cfg.budget, "rule": cfg.rule, "model": cfg.model,
                "seed": cfg.seed, "refit_every": cfg.refit_every, "samples": cfg.samples}
    return Run("rank", public_spec(cfg.judge), cfg.items, body, lambda: cfg.budget,
               cfg.min_valid, cfg.max_failed, info={"inputs": inp, "config": settings},
               unit="comparisons")


# ---- rank-eval ---------------------------------------------------------------------------

def prepare_rank_eval(cfg: RankEvalConfig, *, cli: bool = False) -> Run:
    """`judgeaudit rank-eval`: the pools loaded and the request checked
    (`judgeaudit.rank.run_eval.prepare_rank_eval`; `run.info["inputs"]`); the body builds
    the verdict matrices and evaluates the rules (`run_rank_eval`)."""
    from judgeaudit.rank.run_eval import prepare_rank_eval as check
    from judgeaudit.rank.run_eval import run_rank_eval

    inp = check(cfg, cli=cli)

    async def body(s: Session) -> dict[str, Any]:
        # the oracle (one spec per seed for a seedless sim) before the matrices are built:
        # a local one without [local] stopped inside them, naming no option
        local_roles_ready(s, [Role(j, opt("oracle", cli), _default(cfg, "oracle"))
                              for j in inp.judges])
        doc = await run_rank_eval(s, inp)
        # which items each pool held (rank's `pool` record), not only the specs
        doc.setdefault("pools", {spec: {**pool.meta, "data_fingerprint": pool.fingerprint}
                                 for spec, pool in inp.pools.items()})
        return doc

    return Run("rank-eval", public_spec(cfg.oracle), cfg.items, body, lambda: inp.n_calls,
               cfg.min_valid, cfg.max_failed, info={"inputs": inp}, unit="judge calls")
