"""`Result`: the results document of any command as a typed, schema-versioned object.

A results document is plain JSON (`judgeaudit.report.write_results`): its `command`, its
`run` outcome (`judgeaudit.outcome.assess`) and everything else the command measured.
`Result` keeps exactly that, so `Result.load(path).to_dict()` is the file's content and
`res.to_json(path)` writes what the CLI writes::

    res = judgeaudit.audit("sim?position=1&seed=0", "builtin:facts", n=30)
    res.ok, res.reason          # did the run judge enough to be trusted?
    res.summary()               # a small JSON-able dict
    res.to_frame()              # pandas: one row per probe (audit) / metric (others)
    res.report("out/report.html")
    res.to_json("out/audit")    # out/audit/results.json
    Result.load("out/audit")    # and back

A failed run's numbers are not results: `summary()` withholds them, and `estimates()` and
`to_frame()` raise `RunFailed` unless asked with `failed_ok=True` (the document keeps them,
for diagnosis).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judgeaudit.files import write_atomic
from judgeaudit.methods import stamp
from judgeaudit.outcome import (
    EXIT_INTERRUPTED,
    EXIT_RUN_FAILED,
    EXIT_TERMINATED,
    biased_small,
    run_failed,
)
from judgeaudit.results_file import SCHEMA_VERSION, plain, usd_value

if TYPE_CHECKING:
    import pandas as pd

    # judgeaudit.stats imports scipy (seconds): loaded when estimates are first asked for
    from judgeaudit.stats.types import Estimate

Table = Literal["probes", "metrics", "verdicts"]
# Document keys that hold per-item records, not measurements: not searched for estimates.
_RECORDS = frozenset({"verdicts", "comparisons", "scores", "invalid_examples", "examples",
                      "rewrite_examples", "item_ids", "discovery_items", "heldout_items",
                      "calibration_items", "test_items", "plot", "heatmap",
                      # HUB-J's per-item inputs of its figures (quantify, mitigate)
                      "item_flips", "per_query"})


# The call counts a summary carries (`Result.summary`): what a script gating on a run needs,
# its spend, retries, the answers the judge could not read (over answers_read: made + cached
# - shared, each distinct answer once) and why calls were not sent included; after an
# interruption, the calls in flight whose answers its grace kept or cut off, and a batch=on
# run's batches still open (billed) at the provider. The tokens the spend is for, as the
# terminal's calls line and results.json say them (--json left them out).
SUMMARY_CALLS = ("made", "cached", "shared", "retries", "failed", "not_sent", "not_sent_why",
                 "cancelled", "unreadable", "answers_read", "cost_usd", "prompt_tokens",
                 "completion_tokens", "usage_estimated", "refused_cached", "kept_in_flight",
                 "given_up_in_flight", "open_batches")


def _flag(value: Any, what: str) -> None:
    """`failed_ok` must be a bool: "no" or [0] is truthy and gave a failed run's numbers."""
    if not isinstance(value, bool):
        raise ValueError(f"{what}: failed_ok: expected True or False, got {value!r}")



def recorded_exit_code(doc: Mapping[str, Any]) -> int:
    """The exit code the command that wrote `doc` gave, read back from the document (the
    summary's `exit_code`, so `report --json` says it too): 3 a failed run (130 or 143 one a
    signal ended, `run.exit_code`), 1 a tripped gate, 3 an audit gate it could not check
    ("unchecked"; compare records a probe it could not gate as tripped), else 0."""
    if run_failed(doc):
        code = (doc.get("run") or {}).get("exit_code")
        return code if code in (EXIT_INTERRUPTED, EXIT_TERMINATED) else EXIT_RUN_FAILED
    gate = doc.get("gate") if isinstance(doc.get("gate"), Mapping) else {}
    if gate.get("outcome") == "tripped":
        return 1
    if gate.get("outcome") == "unchecked":
        return EXIT_RUN_FAILED
    return 0


class RunFailed(Exception):
    """Raised by `Result.raise_for_status` (and the API with `raise_on_failure=True`) for a run
    that judged too little to be trusted; `result` holds the whole document."""

    def __init__(self, result: Result, message: str | None = None):
        super().__init__(message or result.reason or "run failed")
        self.result = result


class RunOutcome(BaseModel):
    """The `run` section of a results document: whether the run judged enough (the one rule
    of `judgeaudit.outcome.assess`). Documents written before the section existed
    count as ok. Fields the rule adds later are kept."""

    model_config = ConfigDict(extra="allow")

    status: Literal["ok", "failed"] = "ok"
    message: str = ""
    n_valid: int | None = None
    n_planned: int | None = None
    min_valid: int | None = None
    calls_asked: int | None = None
    calls_failed: int | None = None
    failed_share: float | None = None
    max_failed: float | None = None
    first_error: str | None = None
    errors: dict[str, int] = Field(default_factory=dict)


def _estimate(d: Mapping[str, Any], n: Any) -> Estimate | None:
    """A {"value", "ci95": [lo, hi], "n"} dict as an Estimate (None = NaN) via
    `Estimate.from_dict`, so "se" and "method" are kept when the file has them; `n` from the
    enclosing dict when the estimate has none (an audit probe's effect)."""
    from judgeaudit.stats.types import Estimate

    ci = d.get("ci95")
    n = d.get("n", n)
    if not isinstance(ci, list | tuple) or len(ci) != 2 or "value" not in d:
        return None
    if isinstance(n, bool) or not isinstance(n, int):
        return None
    se, method = d.get("se"), d.get("method")
    clean: dict[str, Any] = {"value": d["value"], "ci95": list(ci), "n": n}
    if isinstance(se, int | float) and not isinstance(se, bool):
        clean["se"] = se
    if isinstance(method, str):
        clean["method"] = method
    try:
        return Estimate.from_dict(clean)
    except (TypeError, ValueError):
        return None


def _walk(obj: Any, path: str, parent_n: Any, out: dict[str, Estimate]) -> None:
    if isinstance(obj, Mapping):
        est = _estimate(obj, parent_n)
        if est is not None:
            out[path] = est
            return
        for k, v in obj.items():
            if k in _RECORDS:
                continue
            _walk(v, f"{path}.{k}" if path else str(k), obj.get("n", parent_n), out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            # rows by what they are about: breakdown rows by their value, discover's
            # validation rows by their factor (they were "factors.0", the name lost)
            named = [v.get(k) for k in ("value", "factor") if isinstance(v, Mapping)]
            key = next((x for x in named if isinstance(x, str)), i)
            _walk(v, f"{path}.{key}", parent_n, out)


def _bounds(x: Any, n: Any, method: str) -> Estimate | None:
    """rank's {"estimate", "lo", "hi"[, "se"]} (or a ranking row's "theta", "lo", "hi") as
    an Estimate with the n behind it."""
    from judgeaudit.stats.types import Estimate

    if not isinstance(x, Mapping) or not isinstance(n, int) or isinstance(n, bool):
        return None
    v = x.get("estimate", x.get("theta"))
    if not isinstance(v, int | float) or "lo" not in x or "hi" not in x:
        return None
    return Estimate.from_dict({"value": v, "ci95": [x.get("lo"), x.get("hi")], "n": n,
                               "se": x.get("se"), "method": method})


def _over_seeds(x: Any) -> Estimate | None:
    """rank-eval's {"mean", "se", "n", "ci95"} over seeds: the t interval it recorded
    (`stats.over_seeds`); a document from before it recorded one gets the normal interval it
    was shown with, clipped to [0, 1] (a recall). NaN bounds from one seed or when every seed
    gave the same value."""
    from judgeaudit.stats.types import Z95, Estimate

    if not isinstance(x, Mapping) or not isinstance(x.get("mean"), int | float):
        return None
    m, se = float(x["mean"]), x.get("se")
    known = isinstance(se, int | float) and se == se
    nan = (math.nan, math.nan)
    if "ci95" in x:
        ci = x["ci95"]
        iv = tuple(ci) if isinstance(ci, list) and len(ci) == 2 and None not in ci else nan
    else:  # se 0 (every seed gave the same recall): no interval rather than the point [m, m]
        ok = known and se > 0
        iv = (max(0.0, m - Z95 * se), min(1.0, m + Z95 * se)) if ok else nan
    method = ("exact (Clopper-Pearson) over pooled item hits"
              if x.get("ci_method") == "clopper_pearson" else
              "t over seeds" if "ci95" in x else "normal over seeds")
    return Estimate(m, iv, int(x.get("n") or 0), float(se) if known else None, method)


def _rank_estimates(command: str, d: Mapping[str, Any]) -> dict[str, Estimate]:
    """rank: each item's theta (n: its comparisons) and each model's bias terms (n: all
    comparisons), Laplace intervals; rank-eval: recall per model, rule and budget and on the
    full data (over seeds), and the bias terms (n: verdict matrices)."""
    out: dict[str, Estimate | None] = {}
    if command == "rank":
        n = d.get("n_comparisons")
        for row in d.get("ranking") or []:
            out[f"ranking.{row.get('id')}.theta"] = _bounds(row, row.get("n_compared"),
                                                            "laplace")
        for m, f in (d.get("models") or {}).items():
            for name, c in (f.get("c") or {}).items():
                out[f"models.{m}.c.{name}"] = _bounds(c, n, "laplace")
            out[f"models.{m}.kappa"] = _bounds(f.get("kappa"), n, "laplace")
    else:
        for m, rules in (d.get("recall") or {}).items():
            for rule, cells in rules.items():
                for b, cell in cells.items():
                    out[f"recall.{m}.{rule}.{b}"] = _over_seeds(cell)
        for m, cell in (d.get("full_data") or {}).items():
            out[f"full_data.{m}"] = _over_seeds(cell)
        for name, c in (d.get("c") or {}).items():
            out[f"c.{name}"] = _bounds(c, c.get("n"), "laplace")
        kappa = d.get("kappa") or {}
        out["kappa"] = _bounds(kappa, kappa.get("n"), "laplace")
    return {k: v for k, v in out.items() if v is not None}


def _change_estimates(d: Mapping[str, Any]) -> dict[str, Estimate]:
    """compare: each probe's change B - A, the main number, whose dict has no n: its n is
    the matched items (`items.n_matched`); an unpaired change (two effects' difference) has
    no item count of its own and keeps the n 0 the compare gave it."""
    out: dict[str, Estimate] = {}
    for name, p in (d.get("probes") or {}).items():
        if not isinstance(p, Mapping) or not isinstance(p.get("change"), Mapping):
            continue
        items = p.get("items") if isinstance(p.get("items"), Mapping) else {}
        est = _estimate(p["change"], items.get("n_matched", 0))
        if est is not None:
            out[f"probes.{name}.change"] = est
    return out


def _a(word: str) -> str:
    """`word` with its indefinite article: "an evaluate", "an audit", "a rank"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _est_dict(x: Any) -> dict[str, Any] | None:
    """An estimate dict trimmed to value, ci95, n (None when absent)."""
    if not isinstance(x, Mapping) or "value" not in x:
        return None
    return {k: x.get(k) for k in ("value", "ci95", "n") if k in x}


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("Result.to_frame needs pandas, an optional dependency: "
                          "pip install 'judgeaudit[pandas]' (or pip install pandas)") from None
    return pandas


# What a failed run's summary keeps: who and what ran, the calls, why it failed, counts.
_SUMMARY_KEEP_FAILED = frozenset({
    "command", "ok", "reason", "judge", "data", "version", "calls", "seconds", "verdicts",
    "n", "n_items", "n_invalid", "warnings", "flags_unchecked", "gate",
    # counts of what a run sent and did not send, not results: why a capped rank stopped
    "n_comparisons", "n_not_sent", "not_sent_why",
    # settings, not results: a failed rank gave k and budget as null beside the ones asked
    "k", "budget", "budgets", "rules", "n_seeds", "notes", "estimator",
    # the judges a HUB-J run left out past --max-failed, with their counts: why it failed;
    # mitigate --apply's judge and scorer calls, each checked on its own
    "judges_left_out", "calls_by_role"})


class Result(BaseModel):
    """The results document of one command run (`evaluate`, `audit`, `scoring-bias`,
    `discover`, `quantify`, `mitigate`, `rank`, `rank-eval`, ...).

    Attributes:
        schema_version: the results schema (`judgeaudit.report.SCHEMA_VERSION`).
        command: the command that wrote it.
        run: whether the run judged enough to be trusted (`ok`, `reason`).
        data: the rest of the document as written (the judge and data specs, the numbers,
            the calls, the per-item verdicts). `res["accuracy"]` reads it too.
    """

    model_config = ConfigDict(frozen=True)

    schema_version: int = SCHEMA_VERSION
    command: str
    run: RunOutcome = Field(default_factory=RunOutcome)
    data: dict[str, Any] = Field(default_factory=dict)

    # ---- building and reading ----------------------------------------------------------

    @classmethod
    def from_document(cls, doc: Mapping[str, Any]) -> Result:
        """A Result from a results document (in memory, as a pipeline returns it, or as
        read from results.json). A document of another schema version is refused."""
        if not isinstance(doc, Mapping):
            raise ValueError(f"a results document is a JSON object, got {type(doc).__name__}")
        body = plain(doc)
        if "methods" not in body:  # what made it (`judgeaudit.methods`): today's methods for
            # a document not yet written (no schema_version), else a file from before the stamp
            body = stamp(body) if "schema_version" not in body else {**body, "methods": 0}
        version = body.pop("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise ValueError(_version_message(version, body.get("version")))
        command = body.pop("command", None)
        if command is None:
            command = "audit" if "probes" in body else "unknown"
        _check_legacy_schema(body.get("schema"), str(command), body.get("version"))
        run = body.pop("run", None) or {}
        return cls(schema_version=SCHEMA_VERSION, command=str(command),
                   run=RunOutcome.model_validate(run), data=body)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Result:
        """Read a results.json (or the directory holding it) written by any command
        (`judgeaudit.report.read_results`). A file of another schema version raises
        ValueError saying to re-run the command with this judgeaudit."""
        from judgeaudit.report import read_results

        if not isinstance(path, str | os.PathLike):  # a raw TypeError from opening it
            raise ValueError("Result.load: expected a path to a results.json or its folder, "
                             f"got {type(path).__name__}")
        try:
            doc = read_results(path)
        except ValueError as exc:
            if "schema_version" not in str(exc):
                raise
            raise ValueError(f"{exc}; {_rerun_hint()}") from None
        return cls.from_document(doc)

    def to_dict(self) -> dict[str, Any]:
        """The whole results document (as results.json holds it, with schema_version). The
        `run` section is as the document gave it (absent when it had none)."""
        run = self.run.model_dump(exclude_unset=True)
        return {"schema_version": self.schema_version, "command": self.command, **self.data,
                **({"run": run} if run else {})}

    def to_json(self, path: str | os.PathLike[str] | None = None, *,
                indent: int | None = 2) -> str | Path:
        """Without `path`: the document as JSON text. With `path`: write it there
        atomically (`judgeaudit.report.write_results`; a directory gets results.json inside)
        and return the file's path."""
        if path is None:
            return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False,
                              allow_nan=False)
        from judgeaudit.report import write_results

        p = Path(path)
        if p.is_dir() or (not p.suffix and not p.exists()):
            p = p / "results.json"
        doc = self.to_dict()
        doc.pop("schema_version")  # write_results stamps it
        return write_results(p, doc)

    # ---- the outcome -------------------------------------------------------------------

    @property
    def ok(self) -> bool:
        """True unless the run failed (too few valid verdicts or too many failed calls)."""
        return self.run.status != "failed"

    @property
    def reason(self) -> str | None:
        """Why the run failed (one line, e.g. "run failed: 60 of 60 calls failed (first
        error: ...)"); None for a run that is ok."""
        return None if self.ok else (self.run.message or "run failed")

    def raise_for_status(self) -> Result:
        """Raise `RunFailed` when the run failed; return the result otherwise."""
        if not self.ok:
            raise RunFailed(self)
        return self

    # ---- reading the numbers -----------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        """`res["accuracy"]`: a key of the document (`command` and `run` included)."""
        if key in self.data:
            return self.data[key]
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in self.keys()

    def keys(self) -> list[str]:
        """The document's keys (with `res[key]`, `dict(res)` gives the whole document)."""
        return list(self.to_dict())

    @property
    def judge(self) -> str | None:
        """The judge spec (secrets masked), or how many judges a multi-judge run had."""
        j = self.data.get("judge")
        return None if j is None else str(j)

    @property
    def calls(self) -> dict[str, Any]:
        """Call counts: made, cached, retries, failed, tokens, cost, errors by kind."""
        return dict(self.data.get("calls") or {})

    def estimates(self, *, failed_ok: bool = False) -> dict[str, Estimate]:
        """Every number with its 95% interval and n in the document, as `Estimate`s keyed by
        their dotted path ("accuracy", "correlation.item.spearman", "probes.position.effect",
        "probes.position.rates.first_slot_rate", "perturbations.order_desc.fp", ...).
        A missing value or bound is NaN. Per-item records (verdicts, examples) are skipped.

        A failed run's numbers are not results (`summary()` withholds them): for a run that
        is not `ok` this raises `RunFailed` unless `failed_ok=True` asks for them anyway (the
        document keeps them for diagnosis)."""
        _flag(failed_ok, "estimates")
        self._check_numbers(failed_ok, "estimates")
        out: dict[str, Estimate] = {}
        _walk(self.data, "", None, out)
        if self.command in ("rank", "rank-eval"):
            out.update(_rank_estimates(self.command, self.data))
        if self.command == "compare":
            out.update(_change_estimates(self.data))
        return out

    def _check_numbers(self, failed_ok: bool, what: str) -> None:
        """RunFailed for a failed run's numbers not asked for with `failed_ok=True`."""
        if not self.ok and not failed_ok:
            raise RunFailed(self, f"{self.reason}; its numbers are not results (summary() "
                                  f"withholds them): pass {what}(..., failed_ok=True) to "
                                  "read them anyway, for diagnosis")

    def summary(self) -> dict[str, Any]:
        """A small JSON-able overview: command, ok, reason, judge, data, version, calls, time,
        and the command's headline numbers (audit: verdicts by probe, each probe's effect with
        its interval, n and q, and the flags exceeded;
        evaluate: accuracy / consistency / kappa or the correlations; scoring-bias: the
        recommended template with its caveats, the reference pull and each template's MAD,
        shift and Spearman with gold; quantify: susceptibility profile;
        mitigate: win and bias-controlled win per judge; discover: the factors found; rank:
        the top-k, the judge's biases with intervals, the gate and recall; rank-eval: mean
        recall per model, rule and budget and the judge's biases; compare: the verdicts by
        probe and the improved / worse / no-change / underpowered lists)."""
        d = self.data
        c = self.calls
        out: dict[str, Any] = {
            "command": self.command, "ok": self.ok, "reason": self.reason,
            # always, 0 too: a script reading d["exit_code"] of a passing run got a KeyError
            "exit_code": recorded_exit_code({**d, "run": self.run.model_dump()}),
            "judge": d.get("judge"), "data": d.get("data"), "version": d.get("version"),
            # every key, null when unknown (a script reading calls["cost_usd"] got a KeyError)
            # (a cost rounded: `usd_value`; a document written before carries float residue)
            "calls": {k: usd_value(c.get(k)) if k == "cost_usd" else c.get(k)
                      for k in SUMMARY_CALLS},
            "seconds": d.get("seconds"),
        }
        # earlier runs' answers: `cached` counts the requests shared within this run too (a
        # first run read "cached 160" to a script where the terminal said "0 from cache")
        if isinstance(c.get("cached"), int):
            out["calls"]["from_cache"] = c["cached"] - int(c.get("shared") or 0)
        if isinstance(c.get("simulated"), int):  # HUB-J: of `made`, answered by a simulated
            # provider, no request sent, free ("114 made" where the server got 54)
            out["calls"]["simulated"] = c["simulated"]
            if c.get("simulated_by"):
                out["calls"]["simulated_by"] = c["simulated_by"]
        cmd = self.command
        if cmd == "audit":
            s = d.get("summary") or {}
            out["n_items"] = d.get("n_items")
            out["verdicts"] = {name: p.get("verdict")
                               for name, p in (d.get("probes") or {}).items()}
            # The headline numbers: each probe's effect with its interval, n and q.
            # n_invalid: the probe's unreadable or failed answers, which its n leaves out (a
            # run passed with beauty's n = 3 and 17 of 20 unreadable, and --json hid it)
            out["effects"] = {name: {**(_est_dict({**(p.get("effect") or {}),
                                                   "n": p.get("n")}) or {}), "q": p.get("q"),
                                     "n_invalid": p.get("n_invalid"),
                                     # "biased, small": biased, but its whole interval
                                     # inside the no-bias range (the page and terminal said
                                     # so; --json did not tell it from a large bias)
                                     "no_bias_range": p.get("no_bias_range"),
                                     "small": biased_small(
                                         p.get("verdict"), (p.get("effect") or {}).get("ci95"),
                                         p.get("no_bias_range")),
                                     # the items its n left out, by why (not_sent,
                                     # call_failed, unparseable, single_order, ...)
                                     "left_out": dict(p.get("dropped") or {}),
                                     # an adaptive probe's stop: why, its e-value, its
                                     # rounds, and whether the budget stopped it undecided
                                     **_adaptive_stop(p)}
                              for name, p in (d.get("probes") or {}).items()}
            out["left_out"] = dict(d.get("dropped") or {})
            # what the run warned of (a user template dropping the items' rubric or reference)
            out["warnings"] = list(d.get("warnings") or [])
            ad = d.get("adaptive")
            if isinstance(ad, Mapping):  # the adaptive run's own stop (results.json only)
                out["adaptive"] = {k: ad.get(k) for k in ("rounds", "stopped_by", "stop",
                                                          "max_calls", "max_cost", "calls")}
            base = d.get("baseline") if isinstance(d.get("baseline"), dict) else {}
            if base:  # the unperturbed verdicts: how many were read, and their accuracy
                out["baseline"] = {
                    "n_labelled": base.get("n_labelled"), "n_verdicts": base.get("n_verdicts"),
                    "n_invalid": base.get("n_invalid"),
                    "accuracy": _est_dict(base.get("accuracy")),
                    "accuracy_valid": _est_dict(base.get("accuracy_valid"))}
            beyond = {name: _est_dict(lc.get("beyond_length"))
                      for name, p in (d.get("probes") or {}).items()
                      if (lc := (p.get("rates") or {}).get("length_control"))}
            if beyond:  # --length-control: each cue's effect beyond its length
                out["beyond_length"] = beyond
            out["biased"] = list(s.get("biased") or [])
            from judgeaudit.audit.probe import flagged, unchecked_flags

            out["flagged"] = flagged(d.get("probes") or {})
            if d.get("gate"):  # --fail-on: its outcome (the exit code said it alone)
                out["gate"] = g = d["gate"]
                why = g.get("why") if isinstance(g.get("why"), dict) else {}
                if g.get("outcome") == "unchecked" and why:  # a named probe measured nothing
                    out["ok"] = False
                    out["reason"] = (f"fail-on {g.get('fail_on')}: " + "; ".join(
                        f"{k} measured nothing ({v})" for k, v in why.items())
                        + ", so the gate cannot pass")
                elif g.get("outcome") == "unchecked":  # exit 3 beside ok: true before
                    out["ok"] = False
                    out["reason"] = (f"fail-on {g.get('fail_on')}: the threshold check of "
                                     f"{', '.join(g.get('by') or [])} could not be made (no "
                                     "valid verdict for its rate), so the gate cannot pass")
            unchecked = unchecked_flags(d.get("probes") or {})
            if unchecked:  # a threshold with no data: no --fail-on flag gate passes it
                out["flags_unchecked"] = unchecked
        elif cmd == "evaluate":
            out["n"] = d.get("n")
            out["n_invalid"] = d.get("n_invalid")
            if d.get("task") == "pointwise":
                item = (d.get("correlation") or {}).get("item") or {}
                for k in ("pearson", "spearman", "kendall"):
                    out[k] = _est_dict(item.get(k))
                out["mae"] = _est_dict(d.get("mae"))
            else:
                for k in ("accuracy", "position_consistency", "position_consistency_valid",
                          "cohen_kappa"):
                    out[k] = _est_dict(d.get(k))
            out["warnings"] = list(d.get("warnings") or [])
        elif cmd == "scoring-bias":
            out["n_items"] = d.get("n_items")
            rec = d.get("recommended") or {}
            out["recommended"] = rec.get("template")
            out["recommended_notes"] = list(rec.get("notes") or [])  # e.g. not clearly better
            out["recommended_best_by_spearman"] = rec.get("best_by_spearman")
            out["reference_pull"] = _est_dict(d.get("reference_pull"))
            out["reference_pull_note"] = d.get("reference_pull_note")
            out["n_gold"] = d.get("n_gold")
            # every column the terminal's table shows, with each test's Holm-adjusted p
            out["templates"] = {
                name: {**{k: _est_dict(t.get(k)) for k in ("fp", "mad", "shift", "spearman",
                                                          "pearson")},
                       "spearman_diff": _est_dict((t.get("vs_baseline") or {})
                                                  .get("spearman_diff")),
                       "n": t.get("n"), "n_gold": (t.get("spearman") or {}).get("n"),
                       "n_invalid": t.get("n_invalid"), "n_missing": t.get("n_missing"),
                       "n_decimal": t.get("n_decimal"), "distribution": t.get("distribution"),
                       "tests": t.get("tests")}
                for name, t in (d.get("perturbations") or {}).items()}
            out["multiplicity"] = d.get("multiplicity")  # Holm over the run's templates
            # repeats scored per item (1 for a deterministic judge), those asked for, and
            # the paid calls the repeats added (None in older results)
            out["repeats"] = {k: d.get(k) for k in ("repeats", "repeats_asked", "repeat_calls")}
            out["warnings"] = list(d.get("warnings") or [])
        elif cmd == "quantify":
            out["n_items"] = d.get("n_items")
            out["profile"] = d.get("profile")
            # the profile's numbers with their interval, n and level (they were bare)
            # with the paired test against the repeat noise (None in older results): the
            # interval beside the noise's is no test
            out["susceptibility"] = {
                j: {f: {**(_est_dict(r.get("susceptibility")) or {}), "l_star": r.get("l_star"),
                        "vs_repeat_noise": _noise_test(r.get("vs_repeat_noise"))}
                    for f, r in per.items()}
                for j, per in (d.get("per_judge") or {}).items()}
            if d.get("repeat_noise"):  # each judge's flips on a repeat: the reference a
                # susceptibility is read against (absent in older results)
                out["repeat_noise"] = {j: {**(_est_dict(e) or {}),
                                           "n_invalid": (e or {}).get("n_invalid")}
                                       for j, e in d["repeat_noise"].items()}
            rw = d.get("rewrites") or {}
            out["rewrites"] = {k: rw.get(k) for k in ("total", "kept", "string_check_flags")}
            out["splits"] = d.get("splits")  # the agree / disagree split per judge
            out["human_filter"] = d.get("human_filter")  # items left out, by reason
            out["multiplicity"] = d.get("multiplicity")  # Holm over judge x factor rows
        elif cmd == "mitigate":
            counts = d.get("counts") or {}
            # bias share, phi and each judge's unreadable verdicts, as the terminal shows
            out["per_judge"] = {j: {"win": _est_dict(r.get("win")), "bc": _est_dict(r.get("bc")),
                                    "bias_share": _est_dict(r.get("bias_share")),
                                    "phi": r.get("phi"),
                                    "n_invalid": counts.get(f"invalid:{j}")}
                                for j, r in (d.get("per_judge") or {}).items()}
            out["human_filter"] = d.get("human_filter")
            out["estimator"] = d.get("estimator")  # whose BC it is (marginal / two_stage)
            # what limits the correction (a coarse scorer), as the terminal says it
            out["control_resolution"] = d.get("control_resolution")
            out["notes"] = list(d.get("notes") or [])
            if d.get("not_fitted"):  # judges left out of the fit, with why
                out["not_fitted"] = {j: {"win": _est_dict(r.get("win")),
                                         "reason": r.get("reason")}
                                     for j, r in d["not_fitted"].items()}
        elif cmd == "mitigate-apply":
            a = d.get("applied") or {}
            out["per_judge"] = {a["judge"]: {k: _est_dict(a.get(k))
                                             for k in ("win", "bc", "bias_share")}} if a else {}
            out["estimator"] = d.get("estimator")  # the applied fit's (None: not recorded)
            out["control_resolution"] = a.get("control_resolution") if a else None
            out["notes"] = list(d.get("notes") or [])
        elif cmd == "discover":
            out["factors"] = [f.get("name") for f in
                              ((d.get("discover") or {}).get("factors") or [])]
            # each found factor's held-out mean Delta with its interval, n and p (names only
            # before)
            rows = (((d.get("validation") or {}).get("sets") or {}).get("found") or {}).get(
                "factors") or []
            # with its q (Benjamini-Hochberg over every factor the run tested) and whether
            # it is significant on it: a raw p < 0.05 among ~11 factors flagged a null
            # factor in a third of runs. None both in results written before discover
            # recorded them (not decided, rather than "not significant")
            out["validation"] = {r.get("factor"): {**(_est_dict(r) or {}),
                                                   "p_wilcoxon": r.get("p_wilcoxon"),
                                                   "q_wilcoxon": r.get("q_wilcoxon"),
                                                   "significant": r.get("significant")}
                                 for r in rows if isinstance(r, Mapping)}
            mult = (d.get("validation") or {}).get("multiplicity")
            if isinstance(mult, Mapping):  # what "significant" means, over which factors
                out["multiplicity"] = {k: mult.get(k) for k in ("method", "alpha", "m",
                                                                "significant")}
                if mult.get("attainable"):  # the smallest p its held-out items allow
                    out["multiplicity"]["attainable"] = mult["attainable"]
            out["human_filter"] = d.get("human_filter")
        elif cmd == "rank":  # a failed run's document names them as the others do
            out["data"] = d.get("items", d.get("data"))
            out.update(_rank_summary(d))
        elif cmd == "rank-eval":
            out["judge"] = d.get("oracle", d.get("judge"))
            out["data"] = d.get("items", d.get("data"))
            out.update(_rank_eval_summary(d))
        elif cmd == "compare":
            s = d.get("summary") or {}
            out["n_items"] = d.get("n_items")
            out["verdicts"] = {k: p.get("verdict") for k, p in (d.get("probes") or {}).items()}
            # each probe's change B - A with its interval, n (matched items), p and q
            # (and the items each left out: valid in one audit only)
            out["changes"] = {k: {**(_est_dict(p.get("change")) or {}),
                                  "n": (p.get("items") or {}).get("n_matched"),
                                  **{f: (p.get("items") or {})[f] for f in (
                                      "n_only_a", "n_only_b") if f in (p.get("items") or {})},
                                  "p": p.get("p"), "q": p.get("q")}
                              for k, p in (d.get("probes") or {}).items()}
            out.update({k: d[k] for k in ("items", "only_in_a", "only_in_b",
                                          "versions_differ", "methods_differ", "warnings")
                        if k in d})
            out.update({k: s[k] for k in ("improved", "worse", "no_change", "underpowered",
                                          "paired", "unpaired") if k in s})
            if d.get("gate"):
                out["gate"] = d["gate"]
        left = (self.run.model_dump(exclude_unset=True) or {}).get("judges_left_out")
        if left and isinstance(left, Mapping) and cmd in ("discover", "quantify", "mitigate"):
            # each judge left out of the numbers past --max-failed, with its own counts
            out["judges_left_out"] = {
                j: {k: (x or {}).get(k) for k in ("calls_asked", "calls_failed", "answers",
                                                  "unreadable", "reason")}
                for j, x in left.items()}
        run_doc = self.run.model_dump(exclude_unset=True) or {}
        if cmd in ("mitigate", "mitigate-apply") and run_doc.get("scorer_calls"):
            # --apply checks its judge and its scorer each on its own calls: both shares
            out["calls_by_role"] = {"judges": run_doc.get("calls_by_judge"),
                                    "scorer": run_doc.get("scorer_calls")}
        if not self.ok:  # numbers from a run that failed are not results: a failed rank
            # named the first four items its top-k, a failed evaluate an accuracy of 0
            for k in out:
                if k not in _SUMMARY_KEEP_FAILED:
                    out[k] = None
            out["numbers"] = ("withheld: the run failed (its results.json keeps what it got, "
                              "for diagnosis)")
        return plain(out)

    # ---- tables and the report ---------------------------------------------------------

    def to_frame(self, table: Table | None = None, *, failed_ok: bool = False
                 ) -> pd.DataFrame:
        """A pandas DataFrame (pandas is optional: `pip install 'judgeaudit[pandas]'`).

        Args:
            table: "probes" (audit only): one row per probe: probe, title, verdict, effect,
                ci_lo, ci_hi, n, p, q, mde, flag_exceeds, n_invalid, method. "metrics": one
                row per number with an interval (`estimates()`): metric (its dotted path),
                value, ci_lo, ci_hi, n, method. `method` names how the interval was made, or
                why there is none (a NaN interval: "none: every item's Delta is the same
                ..."); empty where the document does not say. "verdicts": one row per
                verdict: evaluate's per-order verdicts (pairwise: item_id, order, winner,
                choice, p_first, valid, error, raw; pointwise: item_id, score, gold, raw,
                error), scoring-bias' scores (template, repeat, item_id, score) and rank's
                comparisons (step, first_id, second_id, order, y, choice, p_first, valid,
                error, raw). Default: "probes" for audit, "metrics" for every other command.
            failed_ok: a failed run's "probes" and "metrics" are not results (`summary()`
                withholds them): without this they raise `RunFailed`; with it the table
                holds them, for diagnosis. Its "verdicts" (records, not numbers) are given
                either way.

        Returns:
            The table as a DataFrame.
        """
        _flag(failed_ok, "to_frame")
        pd = _pandas()
        table = table or ("probes" if self.command == "audit" else "metrics")
        if table == "metrics" or (table == "probes" and self.command == "audit"):
            self._check_numbers(failed_ok, "to_frame")
        if table == "probes":
            return pd.DataFrame(self._probe_rows(), columns=[
                "probe", "title", "verdict", "effect", "ci_lo", "ci_hi", "n", "p", "q", "mde",
                "flag_exceeds", "n_invalid", "method"])
        if table == "metrics":
            rows = [{"metric": k, "value": e.value, "ci_lo": e.ci95[0], "ci_hi": e.ci95[1],
                     "n": e.n, "method": e.method}
                    for k, e in self.estimates(failed_ok=True).items()]
            return pd.DataFrame(rows, columns=["metric", "value", "ci_lo", "ci_hi", "n",
                                               "method"])
        if table == "verdicts":
            return pd.DataFrame(self._verdict_rows())
        raise ValueError(f"table {table!r}: expected 'probes', 'metrics' or 'verdicts'")

    def _probe_rows(self) -> list[dict[str, Any]]:
        if self.command != "audit":
            raise ValueError(f"{_a(self.command)} result has no probes (audit results do); "
                             "use to_frame('metrics')")
        rows = []
        for name, p in (self.data.get("probes") or {}).items():
            eff = p.get("effect") or {}
            lo, hi = (eff.get("ci95") or [None, None])[:2]
            rows.append({"probe": name, "title": p.get("title"), "verdict": p.get("verdict"),
                         "effect": eff.get("value"), "ci_lo": lo, "ci_hi": hi,
                         "n": p.get("n"), "p": p.get("p"), "q": p.get("q"),
                         "mde": p.get("mde"),
                         "flag_exceeds": (p.get("flag") or {}).get("exceeds"),
                         "n_invalid": p.get("n_invalid"), "method": eff.get("method")})
        return rows

    def _verdict_rows(self) -> list[dict[str, Any]]:
        d = self.data
        if self.command == "evaluate":
            rows: list[dict[str, Any]] = []
            for v in d.get("verdicts") or []:
                if "orders" in v:
                    for o in v["orders"]:
                        rows.append({"item_id": v.get("item_id"), "order": o.get("order"),
                                     "winner": o.get("winner"), "choice": o.get("choice"),
                                     "p_first": o.get("p_first"),
                                     "valid": o.get("winner") is not None,
                                     "error": o.get("error"), "raw": o.get("raw")})
                else:
                    rows.append({k: v.get(k) for k in ("item_id", "score", "gold", "raw",
                                                       "error")})
            return rows
        if self.command == "scoring-bias":
            ids = d.get("item_ids") or []
            return [{"template": name, "repeat": int(rep), "item_id": ids[i] if i < len(ids)
                     else i, "score": s}
                    for name, reps in (d.get("scores") or {}).items()
                    for rep, scores in reps.items() for i, s in enumerate(scores)]
        if self.command == "rank":
            return [{"step": c.get("step"), "first_id": c.get("first_id"),
                     "second_id": c.get("second_id"), "order": c.get("order"), "y": c.get("y"),
                     "choice": c.get("choice"), "p_first": c.get("p_first"),
                     "valid": not c.get("invalid"), "error": c.get("error"), "raw": c.get("raw")}
                    for c in d.get("comparisons") or []]
        raise ValueError(f"{_a(self.command)} result keeps no per-verdict records; use "
                         "to_frame('metrics')")

    def html(self) -> str:
        """The HTML report as text (`judgeaudit.report.render_report`)."""
        from judgeaudit.report import render_report

        return render_report(self.to_dict())

    def report(self, path: str | os.PathLike[str]) -> Path:
        """Write the HTML report (the page `judgeaudit report` builds; a failed run's says
        why instead of verdicts) to `path` (a directory gets report.html inside), atomically.
        Returns the file's path."""
        p = Path(path)
        if p.is_dir() or (not p.suffix and not p.exists()):
            p = p / "report.html"
        write_atomic(p, self.html())
        return p

    def __repr_args__(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        """A short repr: the whole document would fill a notebook cell."""
        args: list[tuple[str, Any]] = [("command", self.command),
                                       ("status", self.run.status)]
        if not self.ok:
            args.append(("reason", self.reason))
        for k in ("judge", "data"):
            if self.data.get(k) is not None:
                args.append((k, self.data[k]))
        return args


# Rank documents written before rank results followed the `schema_version`/`command`
# convention also carried a schema name of their own; these have today's keys and load as
# they are. Any other rank schema name is refused with the re-run hint.
LEGACY_RANK_SCHEMAS = {"rank": "judgeaudit.rank/1", "rank-eval": "judgeaudit.rank_eval/2"}


def _check_legacy_schema(schema: Any, command: str, written_by: Any) -> None:
    if schema is None or command not in LEGACY_RANK_SCHEMAS:
        return
    if schema != LEGACY_RANK_SCHEMAS[command]:
        by = f" (written by judgeaudit {written_by})" if written_by else ""
        raise ValueError(f"{command} results schema {schema!r}{by} is not supported: this "
                         f"judgeaudit reads {command} results of schema_version "
                         f"{SCHEMA_VERSION} (and the older {LEGACY_RANK_SCHEMAS[command]!r}); "
                         f"{_rerun_hint()}")


def _iv_est(d: Any, n: Any) -> dict[str, Any] | None:
    """A rank interval as {value, ci95, n} (n: the comparisons behind it), with planted and
    covered when known."""
    est = _bounds(d, n, "laplace") if isinstance(d, Mapping) else None
    if est is None:
        return None
    return {**(_est_dict(est.as_dict()) or {}),
            **{k: d[k] for k in ("planted", "covered", "from_prior", "from_prior_in")
               if k in d}}


RECALL_CI_NOTE = ("recall's 95% interval is Wilson's for hits of n, the true top items of "
                  "this pool (known only where the pool gives each item's quality: "
                  "builtin:controlled, or a pool file with a quality field), read as "
                  "independent trials: it says how far one pool's recall can be from the "
                  "method's on pools like it")


def recall_interval(hits: Any, n: Any) -> dict[str, Any]:
    """A recall's 95% interval from its hits of n true top items: {"ci95", "method"}
    (Wilson), or {} when the counts are missing. `rank` gave recall 0.8 (4 of 5) with none;
    every number a user sees carries its uncertainty."""
    ok = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (hits, n))
    if not ok or n <= 0 or not 0 <= hits <= n:
        return {}
    from judgeaudit.stats.intervals import wilson

    lo, hi = wilson(hits, n)
    return {"ci95": [float(lo), float(hi)], "method": "wilson"}


def _rank_summary(d: Mapping[str, Any]) -> dict[str, Any]:
    """rank: the reported model, its top-k (best first), the judge's biases with intervals,
    the gate's decision and recall when true quality is known."""
    cfg = d.get("config") or {}
    ba = (d.get("models") or {}).get("bias_aware") or {}
    gate = d.get("gate") or {}
    # recall with its n, the true top items (older documents: the true top-k's size)
    hits = d.get("recall_hits") or {
        m: {"hits": round(v * len(d["true_topk"])), "n": len(d["true_topk"])}
        for m, v in (d.get("recall") or {}).items()
        if isinstance(v, int | float) and d.get("true_topk")}
    return {
        "n_items": d.get("n_items"), "k": cfg.get("k"), "budget": cfg.get("budget"),
        "n_comparisons": d.get("n_comparisons"), "n_invalid": d.get("n_invalid"),
        # picks of the budget never sent (a spend cap, a server that stopped) and why
        **{k: d[k] for k in ("n_not_sent", "not_sent_why") if k in d},
        "reported_model": d.get("reported_model"),
        "topk": [r.get("id") for r in d.get("ranking") or [] if r.get("in_topk")],
        # items whose place is the prior's (no usable comparison), and calls over the judge's
        # context, as fields a script can read (they were only in the notes' text)
        **{key: d[key] for key in ("n_uncompared", "uncompared", "too_long") if key in d},
        # {value, ci95, n} as every other command gives them (they were estimate/lo/hi)
        "biases": {**{f"c[{n}]": _iv_est(v, d.get("n_comparisons"))
                      for n, v in (ba.get("c") or {}).items()},
                   **({"kappa": _iv_est(ba.get("kappa"), d.get("n_comparisons"))}
                      if ba.get("kappa") else {})},
        "gate": gate.get("decision"),
        "recall": {m: {"value": v, **{k: hits.get(m, {}).get(k) for k in ("hits", "n")},
                       **recall_interval(hits.get(m, {}).get("hits"), hits.get(m, {}).get("n"))}
                   for m, v in d["recall"].items()} if d.get("recall") else d.get("recall"),
        **({"recall_note": RECALL_CI_NOTE} if d.get("recall") else {}),
        **({"true_topk_tied": True} if d.get("true_topk_ambiguous") else {}),
        # whether the fit converged (its optimiser and its CG solves; the warnings lead the
        # notes), as rank-eval's summary gives it; None in a document written before
        "converged": d.get("converged"),
        # what the bias terms can say (mostly the prior, the identifying assumption): a
        # script gating on c saw no warning
        "notes": list(d.get("notes") or []),
    }


def _noise_test(t: Any) -> dict[str, Any] | None:
    """quantify's paired test of a susceptibility against the repeat noise, for a summary."""
    if not isinstance(t, Mapping):
        return None
    return {k: t.get(k) for k in ("p", "p_adjusted", "n_pairs", "rewrite_higher",
                                  "repeat_higher", "shown_above")}


def _seeds_dict(cell: Any) -> dict[str, Any] | None:
    """A recall cell over seeds as {value, ci95, n} (`_over_seeds`; n counts seeds), with
    `method` and, for the exact interval of the hits pooled over seeds, `hits` of `n_items`
    (a script could not tell "exact 9/9" from a t interval over 3 seeds)."""
    est = _over_seeds(cell) if isinstance(cell, Mapping) else None
    if est is None:
        return None
    out = {**(_est_dict(est.as_dict()) or {}), "method": est.method}
    return out | {k: cell[k] for k in ("hits", "n_items") if k in cell}


def _adaptive_stop(p: Mapping[str, Any]) -> dict[str, Any]:
    """{"adaptive": {stop_reason, stop_reason_text, evalue, rounds, budget_stop}} for a probe
    of an adaptive audit (results.json's `probes.*.adaptive`), else {}: its --json summary
    gave only value, ci95, n and q (null), so a script could not tell a probe the budget
    stopped undecided from one that cleared."""
    ad = p.get("adaptive")
    if not isinstance(ad, Mapping):
        return {}
    return {"adaptive": {"stop_reason": ad.get("stop_reason"),
                         "stop_reason_text": ad.get("stop_reason_text"),
                         "evalue": ad.get("evalue"), "rounds": ad.get("rounds"),
                         "budget_stop": ad.get("stop_reason") == "budget"}}


def _rank_eval_summary(d: Mapping[str, Any]) -> dict[str, Any]:
    """rank-eval: mean recall per model and rule at each budget, full-data recall, the
    judge's biases (mean estimate and interval across matrices, coverage when planted) and
    whether every fit converged (`_not_converged`: the cells where some did not)."""
    return {
        "k": d.get("k"), "budgets": d.get("budgets"), "rules": d.get("rules"),
        "n_seeds": len(d.get("seeds") or []),
        # over seeds, with the interval and n (they were bare means)
        "recall": {m: {r: {str(b): _seeds_dict(c) for b, c in cells.items()}
                       for r, cells in rules.items()}
                   for m, rules in (d.get("recall") or {}).items()},
        "full_data": {m: _seeds_dict(v) for m, v in (d.get("full_data") or {}).items()},
        "biases": {**{f"c[{n}]": {**(_iv_est(v, v.get("n")) or {}),
                                  "coverage": v.get("coverage")}
                      for n, v in (d.get("c") or {}).items()},
                   **({"kappa": {**(_iv_est(d["kappa"], d["kappa"].get("n")) or {}),
                                 "coverage": d["kappa"].get("coverage")}}
                      if d.get("kappa") else {})},
        # the c the ranking's own fit corrects by (beside c from the evidence refit, as
        # rank's c_ranking), with its prior sd; absent when c is the ranking's fit's
        **({"c_ranking": {f"c[{n}]": {**(_iv_est(v, v.get("n")) or {}),
                                      "prior_sd": v.get("prior_sd")}
                          for n, v in d["c_ranking"].items()}}
           if isinstance(d.get("c_ranking"), Mapping) and d["c_ranking"] else {}),
        # fits that did not converge (their warnings also lead the notes): a script gating
        # on recall saw nothing; None in a document written before they were counted
        "converged": d.get("converged"),
        "not_converged": _not_converged(d.get("convergence")),
        "notes": list(d.get("notes") or []),
    }


def _not_converged(conv: Any) -> list[dict[str, Any]] | None:
    """rank-eval's fits that did not converge, one row per cell with any ("fits": "recall"
    with its model, rule and budget; "acquisition", the runs whose pair-choosing refits
    did not, with model and rule; "matrices", the full-matrix fits, with model): its
    ``not_converged`` of ``n``. Empty when all converged; None when not recorded."""
    if not isinstance(conv, Mapping):
        return None
    rows: list[dict[str, Any]] = []
    for m, rules in (conv.get("recall") or {}).items():
        for r, by_b in rules.items():
            rows += [{"fits": "recall", "model": m, "rule": r, "budget": int(b),
                      "not_converged": t["not_converged"], "n": t["n"]}
                     for b, t in by_b.items() if t.get("not_converged")]
    for m, rules in (conv.get("acquisition") or {}).items():
        rows += [{"fits": "acquisition", "model": m, "rule": r,
                  "not_converged": t["not_converged"], "n": t["n"]}
                 for r, t in rules.items() if t.get("not_converged")]
    rows += [{"fits": "matrices", "model": m, "not_converged": t["not_converged"], "n": t["n"]}
             for m, t in (conv.get("matrices") or {}).items() if t.get("not_converged")]
    return rows


def _rerun_hint() -> str:
    import judgeaudit

    return (f"re-run the command with this judgeaudit (version {judgeaudit.__version__}, "
            f"schema_version {SCHEMA_VERSION}), or read the file with the judgeaudit version "
            "that wrote it")


def _version_message(version: Any, written_by: Any) -> str:
    by = f" (written by judgeaudit {written_by})" if written_by else ""
    return (f"results schema_version {version!r}{by} is not supported: this judgeaudit reads "
            f"schema_version {SCHEMA_VERSION}; {_rerun_hint()}")


__all__ = ["Result", "RunFailed", "RunOutcome", "plain"]
