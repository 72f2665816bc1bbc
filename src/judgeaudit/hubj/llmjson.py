"""Strict JSON from model output, with a bounded repair and retry that is counted.

Reading one answer:
1. strict: `json.loads(prefill + text)` must give an object that the module's validator
   accepts (probability answers are first turned into `prefill + choice + close`);
2. local repair (counted as `repaired`): code fences and prose around the object removed, the
   first balanced {...} taken, the object closed if the model stopped right after the last
   value, trailing commas dropped, raw newlines inside strings allowed;
3. retry (counted as `retried`, at most `max_retries`): the same conversation plus the bad
   answer and a user turn naming the error, asking for the JSON object only (a fresh prompt,
   so deterministic models can answer differently);
4. otherwise the call is counted as `failed` and its raw text is kept for the report; callers
   treat it as missing, never as a default value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from judgeaudit.judges.parse import strip_reasoning
from judgeaudit.llm import CallFailed, Client, Message, Request, Response

Validator = Callable[[dict[str, Any]], Any]
MAX_FAILURE_EXAMPLES = 20


class JSONFormatError(ValueError):
    """The output is not a JSON object the module accepts."""


@dataclass
class JSONStats:
    calls: int = 0
    strict: int = 0       # parsed as given
    repaired: int = 0     # parsed after a local repair
    retried: int = 0      # retry calls made
    recovered: int = 0    # answers that parsed only after a retry
    failed: int = 0       # no usable answer after repair and retries
    call_errors: int = 0  # calls that failed at the provider (after the client's retries)
    examples: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def merge(self, other: JSONStats) -> None:
        for k in ("calls", "strict", "repaired", "retried", "recovered", "failed",
                  "call_errors"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        room = MAX_FAILURE_EXAMPLES - len(self.examples)
        self.examples.extend(other.examples[:max(room, 0)])


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def _first_object(s: str) -> str | None:
    """The first balanced {...} in s (string-aware), or None."""
    start = s.find("{")
    if start < 0:
        return None
    depth, in_str, esc = 0, False, False
    for i in range(start, len(s)):
        c = s[i]
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c == '"':
            in_str = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return s[start:i + 1]
    return None


def _close(s: str) -> str:
    """Close an object the model left open (stopped at max_tokens or before the final
    brace): unterminated string, then brackets in reverse order of opening."""
    stack: list[str] = []
    in_str, esc = False, False
    for c in s:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c == '"':
            in_str = True
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
        elif c in "}]" and stack:
            stack.pop()
    out = s + ('"' if in_str else "")
    out = re.sub(r",\s*$", "", out)
    return out + "".join(reversed(stack))


def parse_object(s: str) -> tuple[dict[str, Any], bool]:
    """(object, repaired?) from model text; raises JSONFormatError."""
    try:
        obj = json.loads(s)
        if isinstance(obj, dict):
            return obj, False
    except json.JSONDecodeError:
        pass
    t = _FENCE.sub("", s.strip()).strip()
    candidates = []
    first = _first_object(t)
    if first is not None:
        candidates.append(first)
    if t.startswith("{"):
        candidates.append(_close(t))
    for c in candidates:
        for variant in (c, _TRAILING_COMMA.sub(r"\1", c)):
            try:
                obj = json.loads(variant, strict=False)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                return obj, True
    raise JSONFormatError(f"not a JSON object: {s[:160]!r}")


def answer_text(request: Request, resp: Response, close: str = "") -> str:
    """The full JSON text of one answer: prefill + the chosen label + close when the provider
    answered by probabilities, else prefill + the generated text."""
    if resp.probs and request.choices:
        best = max(request.choices, key=lambda c: resp.probs.get(c, -1.0))  # type: ignore[union-attr]
        return request.prefill + best + close
    return request.prefill + resp.text


def _retry_request(request: Request, bad: str, error: str, attempt: int) -> Request:
    msgs = (*request.messages, Message("assistant", bad),
            Message("user", f"That reply was not valid: {error}. Reply again with only the "
                            "JSON object in the requested format."))
    meta = {**request.meta, "json_retry": attempt}
    return Request(messages=msgs, max_tokens=request.max_tokens, temperature=request.temperature,
                   prefill=request.prefill, choices=request.choices, meta=meta,
                   repeat=request.repeat)


async def call_json(
    client: Client,
    request: Request,
    validate: Validator,
    stats: JSONStats,
    *,
    close: str = "",
    max_retries: int = 1,
) -> Any | None:
    """Call the model and return `validate(object)`, or None when no valid answer came back
    (counted in `stats`, with the raw text kept as an example, and told to the client's
    verdict watch, `Client.note_verdict`)."""
    stats.calls += 1
    req = request
    last = ""
    for attempt in range(max_retries + 1):
        try:
            resp = await client.call(req)
        except CallFailed as exc:
            if exc.fatal:
                raise
            record_failure(stats, request, str(exc), "call failed", call_error=True)
            return None
        text = answer_text(req, resp, close)
        last = text
        try:
            obj, repaired, value = _read(text, resp, request.prefill, validate)
        except (JSONFormatError, ValueError, KeyError, TypeError) as exc:
            # every unreadable answer goes to the client's watch, retries' too: a model whose
            # first answers are all unreadable is asked no more (discover paid for 252
            # unreadable G-module answers where a judge stops at 16; counting only the
            # retried answer came too late, after every first attempt had been sent)
            # `req` names the answer: one read again in the run (the same request asked
            # twice, `CallStats.shared`) is one unreadable answer, counted once in
            # `CallStats.unreadable` and in the watch, as a judge's verdicts are
            client.note_verdict(resp, f"no usable JSON object: {str(exc)[:120]}",
                                reading=f"{request.meta.get('module') or 'G-module'} JSON "
                                        "objects", request=req)
            if attempt < max_retries:
                stats.retried += 1
                req = _retry_request(request, text[len(request.prefill):] if text.startswith(
                    request.prefill) else text, str(exc)[:200], attempt + 1)
                continue
            record_failure(stats, request, last, str(exc)[:200])
            return None
        client.note_verdict(resp, None, request=req)
        if attempt > 0:
            stats.recovered += 1
        elif repaired:
            stats.repaired += 1
        else:
            stats.strict += 1
        return value
    return None  # pragma: no cover - the loop always returns


def _read(text: str, resp: Response, prefill: str, validate: Validator
          ) -> tuple[dict[str, Any], bool, Any]:
    """Parse and validate prefill + answer; a provider that could not continue the prefilled
    assistant turn (an OpenAI-compatible server in "instruct" mode) answers with the whole
    object instead, often in a code fence or with prose around it, so the answer alone
    (repaired) is tried next. The first reading that validates wins;
    if none does, the first one's error is raised."""
    answer = strip_reasoning(resp.text)  # a reasoning model's thinking is no answer
    if answer is not resp.text and not resp.probs:
        text = prefill + answer
    readings = [text]
    if prefill and not resp.probs:
        # whatever the answer starts with: a chat model that wraps the whole object in a
        # code fence or prose ("```json\n{...}\n```") is read by `parse_object`'s repair
        # of the answer alone; prefill + answer never parses then
        readings.append(answer)
    first: Exception | None = None
    for t in readings:
        try:
            obj, repaired = parse_object(t)
            return obj, repaired, validate(obj)
        except (JSONFormatError, ValueError, KeyError, TypeError) as exc:
            first = first or exc
    assert first is not None
    raise first


def record_failure(stats: JSONStats, request: Request, raw: str, error: str,
                   call_error: bool = False) -> None:
    """Count a module answer that gave nothing usable (a failed call when `call_error`) and
    keep its raw text, up to MAX_FAILURE_EXAMPLES, for the report."""
    stats.failed += 1
    if call_error:
        stats.call_errors += 1
    if len(stats.examples) < MAX_FAILURE_EXAMPLES:
        stats.examples.append({"module": str(request.meta.get("module")),
                               "item_id": str(request.meta.get("item_id", "")),
                               "raw": raw[:500], "error": error})


__all__ = ["JSONFormatError", "JSONStats", "answer_text", "call_json", "parse_object",
           "record_failure"]
