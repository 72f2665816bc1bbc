"""Run outcome: one rule for every command on whether a run judged enough to be trusted.

A release gate must not pass by accident: a run whose calls all failed (an unreachable
server, a revoked key) has no verdicts, and "n = 0, underpowered" must not read as a pass.
`assess` turns the counts of a finished run into its outcome; the CLI maps a failed outcome
to exit code 3 and the report shows the reason instead of verdicts.

Exit codes (every command):
    0 ok, 1 gate tripped (`--fail-on`), 2 usage or input error, 3 run failed (too few
    valid verdicts or too many failed calls), 130 interrupted (Ctrl-C; finished calls are
    in the cache and a re-run resumes; under --no-cache nothing is kept and a re-run pays
    again), 143 terminated (SIGTERM; the same). Signals in quick succession are one
    interruption with the first one's code. The interrupted run's results.json records it
    (`run.interrupted`, `run.exit_code`), so `judgeaudit report DIR --json` says 130 or 143;
    a run killed with no chance to write (kill -9) reads as failed, 3. An error no command
    expected (a full disk, a bug) exits 3 too, never 1 (`judgeaudit.cli.main`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_RUN_FAILED = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

DEFAULT_MIN_VALID = 1
DEFAULT_MAX_FAILED = 0.2


def _count(calls: Mapping[str, Any], key: str) -> int | None:
    """A whole-number count from call counts, None when missing or not one (a document
    written before the count existed, or edited by hand)."""
    x = calls.get(key)
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def answers_read(calls: Mapping[str, Any]) -> int:
    """The distinct answers a run's judges read: made + cached - shared, the total that
    `unreadable` is a count of (`Client.note_verdict` counts each unreadable answer once, by
    its request's cache key). Made and cached count every call that came back, so an answer
    that several probes read (the audit's shared baseline verdict) is in them once per
    reading, and `shared` counts those re-readings (a request this client had answered
    already in the run, or was answering: an identical call in flight). Failed, not-sent
    and planned calls are in neither. Dividing by made + cached put 208 distinct unreadable
    answers over 1040 readings of 720 answers (`sim?invalid=0.3`: "20.0%" of a judge that
    answered 28.9% garbage). Call counts without `shared` (a document from before re-reads
    were told apart) give made + cached, what was read."""
    return max(0, sum(_count(calls, k) or 0 for k in ("made", "cached"))
               - (_count(calls, "shared") or 0))


def unreadable_share(calls: Mapping[str, Any]) -> dict[str, Any] | None:
    """The unreadable answers of a calls line, as the document counted them: `{"n", "of",
    "unit"}`, or None when none were unreadable or the document does not count them (one
    from before the count existed says nothing of it, not "0 unreadable").

    unit "answers": `n` distinct unreadable answers of `of` distinct answers read (the
    document states `answers_read`, `CallStats.as_dict`; or it shared nothing, when answers
    and readings are one). unit "readings": both count each reading of an answer, `of` is
    made + cached: a document without `shared` (written before re-reads were told apart,
    when `unreadable` counted each reading too), or one whose `unreadable` is more than the
    distinct answers read, which only a count of readings can be. unit "either": a document
    that shared answers but does not state `answers_read` (written the day re-reads were
    told apart): its `unreadable` counts answers or readings, and nothing in it says which;
    `of` is then the distinct answers and `readings` made + cached, and no share is given."""
    bad = _count(calls, "unreadable")
    if not bad:
        return None
    readings = sum(_count(calls, k) or 0 for k in ("made", "cached"))
    stated, shared = _count(calls, "answers_read"), _count(calls, "shared")
    if stated is not None:
        got = {"n": bad, "of": stated, "unit": "answers"}
    elif shared is None or bad > answers_read(calls):
        got = {"n": bad, "of": readings, "unit": "readings"}
    elif shared == 0:
        got = {"n": bad, "of": readings, "unit": "answers"}
    else:
        got = {"n": bad, "of": answers_read(calls), "unit": "either", "readings": readings}
    if not got["of"]:
        return None
    if got["unit"] != "either":
        got["share"] = bad / got["of"]
    return got


def assess(
    *,
    n_valid: int,
    n_planned: int,
    calls: Mapping[str, Any],
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
    what: str = "items",
    answers: int = 0,
    unreadable: int = 0,
    reading: str | None = None,
) -> dict[str, Any]:
    """The `run` section of a results document.

    Args:
        n_valid: units (items, comparisons, scores) with a usable verdict.
        n_planned: units the run set out to judge.
        calls: the client's call counts (`made`, `cached`, `failed`, optional `first_error`,
            `errors` by kind, `not_sent`, the failed calls never sent, and `not_sent_why`
            when the client stopped sending for the run: the spend cap, a server asking to
            wait for hours; said even when no call was left unsent).
        min_valid: fewest usable units for the run to count (default 1).
        max_failed: largest share of failed calls among the calls asked (default 0.2).
        what: the unit's name in the message.
        answers, unreadable: the judge's answers (calls that came back) and how many of
            them could not be read as a verdict; more than `max_failed` of them unreadable
            fails the run too (a judge that answers garbage). Not given: taken from `calls`
            (its `unreadable` over the distinct answers read, `answers_read`), for a command
            whose calls are its judges' only.
        reading: what an answer is read as, for the message ("a score" for a scoring
            judge); default: "a score" when `what` is "scores", else "a verdict".

    Returns:
        `{"status": "ok" | "failed", "message", "n_valid", "n_planned", "min_valid",
        "calls_asked", "calls_failed", "failed_share", "max_failed", "first_error",
        "errors"}`; `message` is one line saying why a failed run failed.
    """
    made, cached, failed = (int(calls.get(k) or 0) for k in ("made", "cached", "failed"))
    if not answers and calls.get("unreadable"):
        answers, unreadable = answers_read(calls), int(calls["unreadable"])
    asked = made + cached + failed
    share = failed / asked if asked else 0.0
    first = calls.get("first_error")
    reasons = []
    if share > max_failed:
        reasons.append(f"{failed} of {asked} calls failed")
    if answers and unreadable / answers > max_failed:
        first_bad = calls.get("first_unreadable")
        # a scorer gives no verdict
        reading = reading or ("a score" if what == "scores" else "a verdict")
        reasons.append(f"{unreadable} of {answers} answers could not be read as {reading} "
                       f"(more than --max-failed {max_failed:g}"
                       + (f"; the first: {first_bad})" if first_bad else ")"))
    if n_valid < min_valid:
        # "60 of 60 have a valid verdict (--min-valid 1000)" read like a success
        reasons.append(f"only {n_valid} of {n_planned} {what} have a valid verdict, fewer than "
                       f"--min-valid {min_valid}")
    message = ""
    if reasons:
        message = "run failed: " + "; ".join(reasons)
        not_sent = int(calls.get("not_sent") or 0)
        if failed and first:
            message += f" (first error: {first})"
        elif failed and not not_sent:
            message += f" ({failed} calls failed)"
        why = not_sent_reason(calls)
        if not_sent and failed and first and why in first:  # said once (a batch refused
            # on a read-only cache gave its paragraph twice)
            message += f"; {not_sent} of them not sent, for that reason"
        elif not_sent:
            message += f"; {not_sent} of them not sent: {why}"
        elif failed and calls.get("not_sent_why"):
            # every call was under way when the client stopped sending (a server asking to
            # wait hours answered them all 429): the reason was only in a warning at the top
            message += f"; {calls['not_sent_why']}"
    return {
        "status": "failed" if reasons else "ok",
        "message": message,
        "n_valid": n_valid,
        "n_planned": n_planned,
        "min_valid": min_valid,
        "calls_asked": asked,
        "calls_failed": failed,
        "failed_share": share,
        "max_failed": max_failed,
        "first_error": first,
        "errors": dict(calls.get("errors") or {}),
        **({"answers": answers, "unreadable": unreadable} if answers else {}),
    }


def sum_calls(calls: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Call counts of several clients (a judge and its panel) added up: numbers summed
    (`narrowed_to`, the fewest calls a client sent at a time, the smallest), per-kind error
    counts merged, the first error kept, cost None when nobody priced."""
    out: dict[str, Any] = {}
    for c in calls:
        for k, v in c.items():
            if isinstance(v, bool) or v is None:
                out.setdefault(k, v)
            elif k == "narrowed_to":
                out[k] = min(v, out.get(k) or v)
            elif isinstance(v, int | float):
                out[k] = (out.get(k) or 0) + v
            elif isinstance(v, Mapping):
                merged = dict(out.get(k) or {})
                for kk, vv in v.items():
                    merged[kk] = merged.get(kk, 0) + vv
                out[k] = merged
            elif out.get(k) is None:
                out[k] = v
    return out


def run_failed(doc: Mapping[str, Any]) -> bool:
    """True when a results document records a failed run (documents from before the `run`
    section count as ok)."""
    return (doc.get("run") or {}).get("status") == "failed"


_GAVE_UP = {
    "connection": "connection failures",
    "timeout": "timeouts",
    "server": "server errors (HTTP 5xx)",
    "malformed": "broken answers (not the expected JSON)",
    "rate_limit": "rate limits (HTTP 429)",
}


# The causes of retries, short, for the calls line (`retries_text`).
_RETRIED = {
    "rate_limit": "HTTP 429",
    "server": "HTTP 5xx",
    "timeout": "timeouts",
    "connection": "connection failures",
    "malformed": "broken answers",
}


def retries_text(calls: Mapping[str, Any]) -> str:
    """'N retries (15 HTTP 429, 5 HTTP 5xx)': the retries of a calls line with their causes,
    most first (`CallStats.retried`); 'N retries' when the document does not count them by
    cause (written before), '' when there were none. A line said "20 retries" alone."""
    n = _count(calls, "retries") or 0
    if not n:
        return ""
    by = {str(k): int(v) for k, v in (calls.get("retried") or {}).items()
          if isinstance(v, int) and v > 0}
    if not by:
        return f"{n} retries"
    kinds = sorted(by, key=lambda k: (-by[k], k))
    return f"{n} retries (" + ", ".join(f"{by[k]} {_RETRIED.get(k, k)}" for k in kinds) + ")"


def not_sent_reason(calls: Mapping[str, Any], *, hint: bool = True) -> str:
    """Why the client stopped sending a run's calls: its own word (`not_sent_why`: the spend
    cap, a server asking to wait hours), else what the failed attempts were (`errors` by
    kind, most first; retried attempts that later succeeded are among them, so the counts
    say what failed, not that nothing else happened). A server answering 500s at once was
    said to be one that "could not be reached, never answered in time or stopped
    answering"."""
    if calls.get("not_sent_why"):
        return str(calls["not_sent_why"])
    errors = {k: int(v) for k, v in (calls.get("errors") or {}).items() if v}
    if errors and set(errors) <= set(_GAVE_UP):
        kinds = sorted(errors, key=lambda k: (-errors[k], k))
        what = ("the server kept failing (failed attempts: "
                + ", ".join(f"{errors[k]} {_GAVE_UP[k]}" for k in kinds) + ")")
    else:
        what = "the server could not be reached, never answered in time or stopped answering"
    return what + (" (run again when it answers: finished calls are cached)" if hint else "")


def failure_message(doc: Mapping[str, Any]) -> str:
    return str((doc.get("run") or {}).get("message") or "")


def probe_verdict(effect: float | None, ci95: Sequence[float | None], q: float | None,
                  no_bias: Sequence[float | None] | None, alpha: float) -> str:
    """The audit's one verdict rule, used to decide (`audit.battery`) and to explain and
    check a stored verdict (the report): biased when q < alpha and the 95% interval excludes
    0; not_biased when the interval lies inside the no-bias range; otherwise underpowered
    (the data cannot tell). A missing number shows neither."""
    lo, hi = ci95 if len(ci95) == 2 else (None, None)
    if effect is None or lo is None or hi is None:
        return "underpowered"
    if q is not None and q < alpha and (lo > 0 or hi < 0):
        return "biased"
    nb_lo, nb_hi = no_bias if no_bias and len(no_bias) == 2 else (None, None)
    if nb_lo is not None and nb_hi is not None and nb_lo <= lo and hi <= nb_hi:
        return "not_biased"
    return "underpowered"

def _finite(x: Any) -> float | None:
    """A finite float, or None (None, NaN, inf, bools, non-numbers)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def biased_small(verdict: Any, ci: Any, no_bias_range: Any) -> bool:
    """A "biased" verdict whose whole 95% interval lies inside the no-bias range: the rule
    (q and an interval excluding 0) holds, yet the effect is too small to matter by the
    probe's own range (authority +0.018 [+0.008, +0.028] against +/-0.050 at n = 2,500).
    The verdict stays "biased" (gates fail on it); the page, its charts and the terminal
    mark it "biased, small", not as a large bias."""
    if verdict != "biased":
        return False
    vals = [*(ci or [])[:3], *(no_bias_range or [])[:3]]
    if len(vals) != 4:
        return False
    lo, hi, a, b = (_finite(x) for x in vals)
    if None in (lo, hi, a, b):
        return False
    a, b = min(a, b), max(a, b)  # type: ignore[type-var]
    return a <= lo and hi <= b  # type: ignore[operator]
