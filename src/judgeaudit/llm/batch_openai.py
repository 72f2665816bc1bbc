"""OpenAI's Batch API for the Batcher (`openai:MODEL?batch=on`), through the official SDK:
`client.files.create(purpose="batch")` uploads the JSONL input (one line per request,
`custom_id` = cache key, the body the provider would send live), `client.batches.create`
starts it on /v1/chat/completions with a 24h window, `client.batches.retrieve` polls it,
`client.files.content` reads its output and error files, `client.batches.cancel` stops it.

`read_output_line` reads one line of a batch output or error file; `judgeaudit ingest` reads
`vllm run-batch` output with it too (the same format).
"""

from __future__ import annotations

import json
from typing import Any

from judgeaudit.llm.base import Request, Response
from judgeaudit.llm.batch import (
    CANCELLED,
    DONE,
    EXPIRED,
    FAILED,
    BatchState,
    LineResult,
    described_status,
    http_line_error,
    unknown_state,
)

ENDPOINT = "/v1/chat/completions"
# The Batch API takes input files up to 200 MB; stay clear of it.
MAX_BYTES = 190_000_000
_ENDED = {"completed": DONE, "failed": FAILED, "expired": EXPIRED, "cancelled": CANCELLED}
# Every status a batch object has (the others: under way).
STATUSES = frozenset({*_ENDED, "validating", "in_progress", "finalizing", "cancelling"})


def plan_entry(key: str, body: dict[str, Any]) -> dict[str, Any]:
    """One line of a batch input file (and of a plan file)."""
    return {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}


def read_output_line(d: Any) -> LineResult:
    """One line of an OpenAI batch output or error file (or `vllm run-batch` output):
    `{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}`. A 200
    with a body is an answer; an HTTP error status is classified as a live call's would be;
    `error` (an object with code and message, or vLLM's string) is expired (retryable),
    cancelled, or another failure."""
    if not isinstance(d, dict) or not isinstance(d.get("custom_id"), str):
        raise ValueError("not a batch output line (no custom_id)")
    key = d["custom_id"]
    resp = d.get("response")
    err = d.get("error")
    status = resp.get("status_code", 200) if isinstance(resp, dict) else None
    if err and (status is None or status == 200):
        code = err.get("code") if isinstance(err, dict) else None
        msg = (err.get("message") if isinstance(err, dict) else str(err)) or str(code)
        if code == "batch_expired":
            return LineResult(key, kind="timeout", retryable=True,
                              message=f"expired in its batch: {msg}"[:300])
        if code == "batch_cancelled":
            return LineResult(key, kind="other", message=f"cancelled: {msg}"[:300])
        said = f" ({code})" if code else ""  # "(None)" said nothing
        return LineResult(key, kind="other", message=f"failed in batch{said}: {msg}"[:300])
    if not isinstance(resp, dict):
        return LineResult(key, kind="malformed", retryable=True,
                          message="batch line with neither response nor error")
    body = resp.get("body", resp if "choices" in resp else None)
    if status != 200:
        msg = ""
        if isinstance(body, dict):
            e = body.get("error", body)
            msg = e.get("message", "") if isinstance(e, dict) else str(e)
        if not msg and err:
            msg = err.get("message", "") if isinstance(err, dict) else str(err)
        try:
            code = int(status)
        except (TypeError, ValueError):
            code = 500
        return http_line_error(key, code, msg or "no message")
    if not isinstance(body, dict):
        return LineResult(key, kind="malformed", retryable=True,
                          message="batch line whose 200 response has no body")
    return LineResult(key, body=body)


# The body fields the provider changes after a refusal names one (`OpenAIProvider._adapt`).
ADAPTED_FIELDS = ("logprobs", "top_logprobs", "max_tokens", "max_completion_tokens",
                  "temperature")


class OpenAIBatchBackend:
    """The Batch API behind one `openai` provider (its SDK client, key and error mapping)."""

    max_bytes = MAX_BYTES

    def __init__(self, provider: Any):
        self.p = provider
        # Per line, the parameters a refusal may name (`line_error`) as they were sent: by the
        # time a line's error comes back, later lines may go out without them.
        self._sent: dict[str, dict[str, Any]] = {}

    def entry(self, key: str, request: Request) -> dict[str, Any]:
        body = self.p.request_body(request)
        self._sent[key] = {k: body[k] for k in ADAPTED_FIELDS if k in body}
        return plan_entry(key, body)

    def parse(self, body: dict[str, Any], choices: tuple[str, ...]) -> Response:
        from judgeaudit.llm.providers.openai import parse_chat_completion

        return parse_chat_completion(body, choices)

    def line_error(self, r: LineResult, request: Request | None) -> LineResult:
        """A line refused for a parameter the provider can change (logprobs, or fewer of
        them; the token field; the temperature): ask again in the next batch with the change,
        as a live call does (`OpenAIProvider._adapt`)."""
        sent = self._sent.pop(r.key, None)
        if request is None or r.kind != "bad_request":
            return r
        if self.p._adapt(r.message.lower(), sent or self.p.request_body(request)):
            return LineResult(r.key, kind=r.kind, retryable=True, message=r.message)
        return r

    async def _call(self, fn: Any, *args: Any, **kw: Any) -> Any:
        import openai

        try:
            return await fn(*args, **kw)
        except openai.OpenAIError as exc:
            secrets = [self.p.params.get("api_key")]
            raise self.p._mapped(exc, openai, secrets) from None

    async def submit(self, entries: list[dict[str, Any]]) -> str:
        client = self.p._client()
        data = "".join(json.dumps(e) + "\n" for e in entries).encode()
        f = await self._call(client.files.create,
                             file=("judgeaudit-batch.jsonl", data, "application/jsonl"),
                             purpose="batch")
        b = await self._call(client.batches.create, input_file_id=f.id, endpoint=ENDPOINT,
                             completion_window="24h", metadata={"created_by": "judgeaudit"})
        return b.id

    @staticmethod
    def _state(b: Any) -> BatchState:
        status = getattr(b, "status", None)
        said = described_status(status, STATUSES)
        if said is not None:
            return unknown_state(status, said, _as_dict(b))
        counts = b.request_counts.model_dump() if getattr(b, "request_counts", None) else {}
        errors = getattr(getattr(b, "errors", None), "data", None) or []
        message = "; ".join(f"{e.code}: {e.message}" for e in errors) or None
        return BatchState(status=b.status, ended=b.status in _ENDED, final=_ENDED.get(b.status),
                          counts=counts, message=message,
                          handle=(b.output_file_id, b.error_file_id))

    async def state(self, batch_id: str) -> BatchState:
        client = self.p._client()
        return self._state(await self._call(client.batches.retrieve, batch_id))

    async def results(self, batch_id: str, state: BatchState) -> list[LineResult]:
        client = self.p._client()
        out: list[LineResult] = []
        for file_id in state.handle or ():
            if not file_id:
                continue
            content = await self._call(client.files.content, file_id)
            for raw in content.content.splitlines():
                if not raw.strip():
                    continue
                try:
                    out.append(read_output_line(json.loads(raw)))
                except ValueError:
                    continue  # not a line of ours: its request shows up as missing
        return out

    async def cancel(self, batch_id: str) -> BatchState:
        client = self.p._client()
        return self._state(await self._call(client.batches.cancel, batch_id))

    async def aclose(self) -> None:
        return None


def _as_dict(obj: Any) -> Any:
    """An SDK object as the server sent it (its fields that were set), for a message."""
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        return obj
    try:
        return dump(exclude_unset=True, mode="json")
    except Exception:  # noqa: BLE001 - only for a message: whatever it holds
        return repr(obj)
