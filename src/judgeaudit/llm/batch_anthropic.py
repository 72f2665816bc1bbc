"""Anthropic's Message Batches API for the Batcher (`anthropic:MODEL?batch=on`), through the
official SDK: `client.messages.batches.create(requests=[{"custom_id", "params"}])` with
custom_id = cache key (64 hex characters, within the API's 1-64 of [a-zA-Z0-9_-]) and params
= what a live call sends, `retrieve` polls `processing_status` (in_progress, canceling,
ended), `results` streams the answers as JSON Lines (`succeeded`, `errored`, `canceled`,
`expired`), `cancel` stops it.
"""

from __future__ import annotations

from typing import Any

from judgeaudit.llm.base import Request, Response, http_error_kind
from judgeaudit.llm.batch import (
    CANCELLED,
    DONE,
    BatchState,
    LineResult,
    described_status,
    unknown_state,
)

# The API takes batches up to 256 MB; stay clear of it.
MAX_BYTES = 240_000_000

# Every processing_status a message batch has.
STATUSES = frozenset({"in_progress", "canceling", "ended"})

# An errored request's error type -> (kind, retryable), as a live call's HTTP status would be.
_ERROR_TYPES = {
    "invalid_request_error": ("bad_request", False),
    "not_found_error": ("bad_request", False),
    "request_too_large": ("bad_request", False),
    "authentication_error": ("auth", False),
    "permission_error": ("auth", False),
    "billing_error": ("auth", False),
    "rate_limit_error": ("rate_limit", True),
    "api_error": ("server", True),
    "overloaded_error": ("server", True),
    "timeout_error": ("timeout", True),
}


def read_result(d: dict[str, Any]) -> LineResult:
    """One Message Batches result `{"custom_id", "result": {"type", ...}}` as a LineResult."""
    key = d["custom_id"]
    result = d.get("result") or {}
    kind = result.get("type")
    if kind == "succeeded":
        return LineResult(key, body=result.get("message"))
    if kind == "expired":
        return LineResult(key, kind="timeout", retryable=True,
                          message="expired in its batch before it ran")
    if kind == "canceled":
        return LineResult(key, kind="other", message="cancelled in its batch before it ran")
    if kind == "errored":
        err = (result.get("error") or {}).get("error") or result.get("error") or {}
        etype = err.get("type") if isinstance(err, dict) else None
        msg = err.get("message") if isinstance(err, dict) else str(err)
        k, retry = _ERROR_TYPES.get(etype or "", ("other", False))
        if etype == "invalid_request_error":  # too long, refused: as a live call's 400
            k, retry = http_error_kind(400, str(msg))
        return LineResult(key, kind=k, retryable=retry,
                          message=f"{etype or 'error'} in batch: {msg}"[:300])
    return LineResult(key, kind="malformed", retryable=True,
                      message=f"batch result of unknown type {kind!r}")


class AnthropicBatchBackend:
    """The Message Batches API behind one `anthropic` provider."""

    max_bytes = MAX_BYTES

    def __init__(self, provider: Any):
        self.p = provider

    def entry(self, key: str, request: Request) -> dict[str, Any]:
        return {"custom_id": key, "params": self.p.batch_params(request)}

    def parse(self, body: dict[str, Any], choices: tuple[str, ...]) -> Response:
        from judgeaudit.llm.providers.anthropic import parse_message

        return parse_message(body)

    def line_error(self, r: LineResult, request: Request | None) -> LineResult:
        """A model refusing an assistant prefill: ask again with an answer-format line (as a
        live call does)."""
        if (r.kind == "bad_request" and "prefill" in r.message.lower() and request is not None
                and request.prefill.strip()):
            self.p._prefill_ok = False  # the next batch's requests go without it
            return LineResult(r.key, kind=r.kind, retryable=True, message=r.message)
        return r

    async def _call(self, fn: Any, *args: Any, **kw: Any) -> Any:
        import anthropic

        try:
            return await fn(*args, **kw)
        except anthropic.AnthropicError as exc:
            secrets = [self.p.params.get("api_key")]
            raise self.p._mapped(exc, anthropic, secrets) from None

    async def submit(self, entries: list[dict[str, Any]]) -> str:
        client = self.p._client()
        b = await self._call(client.messages.batches.create, requests=entries)
        return b.id

    @staticmethod
    def _state(b: Any) -> BatchState:
        from judgeaudit.llm.batch_openai import _as_dict

        status = getattr(b, "processing_status", None)
        said = described_status(status, STATUSES)
        if said is not None:
            return unknown_state(status, said, _as_dict(b))
        counts = b.request_counts.model_dump() if getattr(b, "request_counts", None) else {}
        ended = b.processing_status == "ended"
        final = (CANCELLED if getattr(b, "cancel_initiated_at", None) else DONE) if ended else None
        return BatchState(status=b.processing_status, ended=ended, final=final, counts=counts)

    async def state(self, batch_id: str) -> BatchState:
        client = self.p._client()
        return self._state(await self._call(client.messages.batches.retrieve, batch_id))

    async def results(self, batch_id: str, state: BatchState) -> list[LineResult]:
        import anthropic

        client = self.p._client()
        out: list[LineResult] = []
        try:
            decoder = await client.messages.batches.results(batch_id)
            async for item in decoder:
                out.append(read_result(item.model_dump(mode="json")))
        except anthropic.AnthropicError as exc:
            raise self.p._mapped(exc, anthropic, [self.p.params.get("api_key")]) from None
        return out

    async def cancel(self, batch_id: str) -> BatchState:
        client = self.p._client()
        return self._state(await self._call(client.messages.batches.cancel, batch_id))

    async def aclose(self) -> None:
        return None
