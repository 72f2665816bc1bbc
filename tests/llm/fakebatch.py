"""A loopback server that speaks the batch APIs faithfully enough to test batch mode end to
end through the official SDKs: OpenAI's Files + Batch API and Anthropic's Message Batches,
on top of `FakeLLMServer` (whose live chat routes and answer policy it keeps).

OpenAI:
- POST /v1/files (multipart: purpose, file)            -> a file object
- GET  /v1/files/{id}/content                          -> the file's bytes
- POST /v1/batches {input_file_id, endpoint, completion_window, metadata} -> a batch
- GET  /v1/batches/{id}                                -> the batch, moving on per poll
- POST /v1/batches/{id}/cancel                         -> cancelling, then cancelled
Statuses: validating -> in_progress -> finalizing -> completed (output and error files), or
expired (the first `expire_batches` batches: half their lines answered, the rest in the error
file as `batch_expired`), failed (validation errors, `fail_batches`), cancelling -> cancelled.

Anthropic:
- POST /v1/messages/batches {requests: [{custom_id, params}]}  -> a message_batch
- GET  /v1/messages/batches/{id}                       -> in_progress -> ended (results_url)
- GET  /v1/messages/batches/{id}/results               -> JSON Lines
- POST /v1/messages/batches/{id}/cancel                -> canceling -> ended
Results: succeeded, errored, expired (the first `expire_batches` batches: the second half of
their requests), canceled.

A batch finishes after `polls_to_finish` status checks and no sooner than `finish_after`
seconds after it was created. `line_rule(custom_id, body, attempt)` may fail single lines:
"400", "429", "500" (an HTTP error in the line / an errored result), "expired". Every line
ever submitted is counted in `submitted` (custom_id -> times), every batch-API call in
`api_log`; live chat calls are counted by `count()` as in FakeLLMServer.
`batch_object(obj)` may rewrite the batch object a status check returns (drop its status, name
one no API has) as a server that half implements the API does.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from fakeserver import FakeLLMServer, _Handler, sent_key


class FakeBatchServer(FakeLLMServer):
    def __init__(self, *, polls_to_finish: int = 2, finish_after: float = 0.0,
                 expire_batches: int = 0, fail_batches: int = 0,
                 line_rule: Callable[[str, dict[str, Any], int], str | None] | None = None,
                 batch_object: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                 **kw: Any):
        super().__init__(**kw)
        self._httpd.RequestHandlerClass = _BatchHandler
        self.polls_to_finish = polls_to_finish
        self.finish_after = finish_after
        self.expire_batches = expire_batches
        self.fail_batches = fail_batches
        self.line_rule = line_rule
        self.batch_object = batch_object or (lambda obj: obj)
        self.block = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted: Counter[str] = Counter()
        self.api_log: list[tuple[str, str]] = []
        self._ids = itertools.count(1)
        self._n_batches = 0

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def batch_count(self) -> int:
        with self.block:
            return len(self.batches)

    def polls(self) -> int:
        with self.block:
            return sum(1 for m, p in self.api_log if m == "GET" and "/batches/" in p
                       and not p.endswith("/results"))

    # ---- the shared state machine ------------------------------------------------------------

    def _new_batch(self, kind: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
        self._n_batches += 1
        n = self._n_batches
        b = {"kind": kind, "lines": lines, "polls": 0, "created": time.time(), "phase": "new",
             "expire": n <= self.expire_batches,
             "fail": n > self.expire_batches and n <= self.expire_batches + self.fail_batches,
             "cancel": False, "out": [], "err": [], "done_at": None}
        for line in lines:
            self.submitted[line["custom_id"]] += 1
        return b

    def _advance(self, b: dict[str, Any]) -> None:
        """One status check: move the batch on; process its lines when it finishes."""
        if b["phase"] in ("ended",):
            return
        b["polls"] += 1
        if b["cancel"]:
            self._process(b, upto=len(b["lines"]) // 2, rest="cancelled")
            return
        if b["fail"]:
            b["phase"] = "ended"
            b["final"] = "failed"
            return
        ready = (b["polls"] >= self.polls_to_finish
                 and time.time() - b["created"] >= self.finish_after)
        if not ready:
            b["phase"] = "running"
            return
        if b["expire"]:
            self._process(b, upto=len(b["lines"]) // 2, rest="expired")
        else:
            self._process(b, upto=len(b["lines"]), rest=None)

    def _process(self, b: dict[str, Any], upto: int, rest: str | None) -> None:
        for i, line in enumerate(b["lines"]):
            cid = line["custom_id"]
            if i >= upto:
                b["err"].append((cid, rest, None))
                continue
            body = line["body"] if b["kind"] == "openai" else line["params"]
            attempt = self.submitted[cid] - 1
            fault = self.line_rule(cid, body, attempt) if self.line_rule else None
            if fault is None and b["kind"] == "anthropic" and self.reject_prefill:
                msgs = body.get("messages") or []
                if msgs and msgs[-1].get("role") == "assistant":
                    fault = "prefill"
            if fault is None and b["kind"] == "openai" and self.reject_logprobs \
                    and body.get("logprobs"):
                fault = "logprobs"
            if (fault is None and b["kind"] == "openai" and self.max_top_logprobs is not None
                    and int(body.get("top_logprobs") or 0) > self.max_top_logprobs):
                fault = "top_logprobs"
            if fault is not None:
                b["err"].append((cid, fault, body))
                continue
            answer = self._answer_for(body)
            payload = (self.openai_body(body, answer) if b["kind"] == "openai"
                       else self.anthropic_body(body, answer))
            b["out"].append((cid, payload))
        b["phase"] = "ended"
        b["final"] = rest or "completed"
        b["done_at"] = time.time()

    # ---- OpenAI objects ------------------------------------------------------------------------

    def openai_batch(self, bid: str) -> dict[str, Any]:
        b = self.batches[bid]
        final = b.get("final")
        status = {"new": "validating", "running": "in_progress"}.get(b["phase"])
        if b["cancel"] and b["phase"] != "ended":
            status = "cancelling"
        if b["phase"] == "ended":
            status = {"completed": "completed", "expired": "expired", "failed": "failed",
                      "cancelled": "cancelled"}[final]
            if not b.get("files") and final != "failed":
                b["files"] = self._openai_files(b)
        out_id, err_id = b.get("files") or (None, None)
        n = len(b["lines"])
        done = len(b["out"])
        failed = len(b["err"])
        return {
            "id": bid, "object": "batch", "endpoint": "/v1/chat/completions",
            "errors": ({"object": "list", "data": [{"code": "invalid_request",
                        "message": "the model does not exist", "param": None,
                        "line": 1}]} if final == "failed" else None),
            "input_file_id": b["input_file_id"], "completion_window": "24h",
            "status": status, "output_file_id": out_id, "error_file_id": err_id,
            "created_at": int(b["created"]), "in_progress_at": None,
            "expires_at": int(b["created"]) + 86400, "finalizing_at": None,
            "completed_at": None, "failed_at": None, "expired_at": None,
            "cancelling_at": None, "cancelled_at": None,
            "request_counts": {"total": n, "completed": done, "failed": failed},
            "metadata": b.get("metadata"),
        }

    def _openai_files(self, b: dict[str, Any]) -> tuple[str | None, str | None]:
        out, err = [], []
        for cid, payload in b["out"]:
            out.append({"id": self.new_id("batch_req_"), "custom_id": cid,
                        "response": {"status_code": 200, "request_id": self.new_id("req_"),
                                     "body": payload}, "error": None})
        for cid, fault, _ in b["err"]:
            rid = self.new_id("batch_req_")
            if fault in ("expired", "cancelled"):
                code = "batch_expired" if fault == "expired" else "batch_cancelled"
                err.append({"id": rid, "custom_id": cid, "response": None,
                            "error": {"code": code, "message": f"request {fault}"}})
            else:
                status = {"400": 400, "429": 429, "500": 500, "logprobs": 400,
                          "top_logprobs": 400}[fault]
                msg = {"logprobs": "logprobs is not supported by this model",
                       "top_logprobs": "Invalid value for 'top_logprobs': must be less than or "
                                       f"equal to {self.max_top_logprobs}.",  # Azure's words
                       }.get(fault, f"fake line error {fault}")
                err.append({"id": rid, "custom_id": cid,
                            "response": {"status_code": status, "request_id": "req_x",
                                         "body": {"error": {"message": msg,
                                                            "type": "fake_error"}}},
                            "error": None})
        ids: list[str | None] = []
        for rows in (out, err):
            if rows:
                fid = self.new_id("file-")
                self.files[fid] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                ids.append(fid)
            else:
                ids.append(None)
        return ids[0], ids[1]

    # ---- Anthropic objects ---------------------------------------------------------------------

    def anthropic_batch(self, bid: str) -> dict[str, Any]:
        b = self.batches[bid]
        ended = b["phase"] == "ended"
        counts = {"processing": 0 if ended else len(b["lines"]), "succeeded": 0, "errored": 0,
                  "canceled": 0, "expired": 0}
        if ended:
            counts["succeeded"] = len(b["out"])
            for _, fault, _ in b["err"]:
                key = {"expired": "expired", "cancelled": "canceled"}.get(fault, "errored")
                counts[key] += 1
        status = "ended" if ended else ("canceling" if b["cancel"] else "in_progress")
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(b["created"]))
        return {
            "id": bid, "type": "message_batch", "processing_status": status,
            "request_counts": counts, "created_at": iso,
            "expires_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                        time.gmtime(b["created"] + 86400)),
            "ended_at": iso if ended else None, "archived_at": None,
            "cancel_initiated_at": iso if b["cancel"] else None,
            "results_url": f"{self.url}/v1/messages/batches/{bid}/results" if ended else None,
        }

    def anthropic_results(self, bid: str) -> bytes:
        b = self.batches[bid]
        rows = [{"custom_id": cid, "result": {"type": "succeeded", "message": payload}}
                for cid, payload in b["out"]]
        for cid, fault, _ in b["err"]:
            if fault == "expired":
                result: dict[str, Any] = {"type": "expired"}
            elif fault == "cancelled":
                result = {"type": "canceled"}
            else:
                etype, msg = {
                    "400": ("invalid_request_error", "fake line error 400"),
                    "429": ("rate_limit_error", "fake line error 429"),
                    "500": ("api_error", "fake line error 500"),
                    "prefill": ("invalid_request_error", "Prefill is not supported for this "
                                "model"),
                }[fault]
                result = {"type": "errored",
                          "error": {"type": "error", "error": {"type": etype, "message": msg}}}
            rows.append({"custom_id": cid, "result": result})
        return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _multipart(ctype: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """name -> (filename, bytes) of a multipart/form-data body."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
    out = {}
    for part in msg.iter_parts():
        name = part.get_param("name", header="content-disposition")
        out[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return out


class _BatchHandler(_Handler):
    server: Any

    def _fake(self) -> FakeBatchServer:
        return self.server.fake

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode())

    def _authorised(self, anthropic: bool) -> bool:
        fake = self._fake()
        key = sent_key({k.lower(): v for k, v in self.headers.items()})
        if fake.api_keys is not None and key not in fake.api_keys:
            self._error(401, f"Incorrect API key provided: {key}", anthropic)
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        fake = self._fake()
        path = self.path.split("?")[0]
        parts = path.strip("/").split("/")
        anthropic = path.startswith("/v1/messages/")
        with fake.block:
            fake.api_log.append(("GET", path))
        if not self._authorised(anthropic):
            return
        with fake.block:
            # /v1/files/{id}/content
            if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
                data = fake.files.get(parts[2])
                if data is None:
                    return self._error(404, "no such file", False)
                return self._send(200, data, ctype="application/octet-stream")
            # /v1/batches/{id}
            if parts[:2] == ["v1", "batches"] and len(parts) == 3:
                b = fake.batches.get(parts[2])
                if b is None or b["kind"] != "openai":
                    return self._error(404, "no such batch", False)
                fake._advance(b)
                return self._json(200, fake.batch_object(fake.openai_batch(parts[2])))
            # /v1/messages/batches/{id}[/results]
            if parts[:3] == ["v1", "messages", "batches"] and len(parts) in (4, 5):
                b = fake.batches.get(parts[3])
                if b is None or b["kind"] != "anthropic":
                    return self._error(404, "no such batch", True)
                if len(parts) == 5 and parts[4] == "results":
                    if b["phase"] != "ended":
                        return self._error(400, "batch still processing", True)
                    return self._send(200, fake.anthropic_results(parts[3]),
                                      ctype="application/binary")
                fake._advance(b)
                return self._json(200, fake.batch_object(fake.anthropic_batch(parts[3])))
        self._send(404, b'{"error": {"message": "no such route"}}')

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        fake = self._fake()
        path = self.path.split("?")[0]
        parts = path.strip("/").split("/")
        batch_route = (parts[:2] in (["v1", "files"], ["v1", "batches"])
                       or parts[:3] == ["v1", "messages", "batches"])
        if not batch_route:
            return super().do_POST()  # live chat calls, counted as before
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        anthropic = parts[:2] == ["v1", "messages"]
        with fake.block:
            fake.api_log.append(("POST", path))
        if not self._authorised(anthropic):
            return
        with fake.block:
            if parts == ["v1", "files"]:
                form = _multipart(self.headers.get("Content-Type", ""), raw)
                purpose = form.get("purpose", (None, b""))[1].decode()
                filename, data = form.get("file", (None, b""))
                if purpose != "batch" or not data:
                    return self._error(400, f"bad upload (purpose={purpose!r})", False)
                fid = fake.new_id("file-")
                fake.files[fid] = data
                return self._json(200, {"id": fid, "object": "file", "bytes": len(data),
                                        "created_at": int(time.time()), "filename": filename,
                                        "purpose": "batch", "status": "processed"})
            body = json.loads(raw or b"{}")
            if parts == ["v1", "batches"]:
                data = fake.files.get(body.get("input_file_id", ""))
                if data is None:
                    return self._error(400, "no such input file", False)
                if body.get("endpoint") != "/v1/chat/completions" \
                        or body.get("completion_window") != "24h":
                    return self._error(400, "bad endpoint or completion_window", False)
                lines = [json.loads(x) for x in data.splitlines() if x.strip()]
                for x in lines:
                    if x.get("method") != "POST" or x.get("url") != "/v1/chat/completions":
                        return self._error(400, "bad batch input line", False)
                bid = fake.new_id("batch_")
                fake.batches[bid] = fake._new_batch("openai", lines) | {
                    "input_file_id": body["input_file_id"], "metadata": body.get("metadata")}
                return self._json(200, fake.openai_batch(bid))
            if len(parts) == 4 and parts[:2] == ["v1", "batches"] and parts[3] == "cancel":
                b = fake.batches.get(parts[2])
                if b is None:
                    return self._error(404, "no such batch", False)
                if b["phase"] != "ended":
                    b["cancel"] = True
                return self._json(200, fake.openai_batch(parts[2]))
            if parts == ["v1", "messages", "batches"]:
                reqs = body.get("requests") or []
                for r in reqs:
                    cid = r.get("custom_id", "")
                    if not (1 <= len(cid) <= 64) or not all(
                            c.isalnum() or c in "-_" for c in cid):
                        return self._error(400, f"bad custom_id {cid!r}", True)
                bid = fake.new_id("msgbatch_")
                fake.batches[bid] = fake._new_batch("anthropic", reqs)
                return self._json(200, fake.anthropic_batch(bid))
            if len(parts) == 5 and parts[:3] == ["v1", "messages", "batches"] \
                    and parts[4] == "cancel":
                b = fake.batches.get(parts[3])
                if b is None:
                    return self._error(404, "no such batch", True)
                if b["phase"] != "ended":
                    b["cancel"] = True
                return self._json(200, fake.anthropic_batch(parts[3]))
        self._send(404, b'{"error": {"message": "no such route"}}')
