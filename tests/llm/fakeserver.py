"""A real, scriptable HTTP server on loopback that speaks the OpenAI chat-completions and the
Anthropic messages shapes, for testing and benchmarking the clients end to end.

Why a real server and not a mocked transport: retries, timeouts, dropped connections,
connection pools and concurrency limits only show up on real sockets.

Use::

    with FakeLLMServer(latency=0.05, faults=["429", "500"]) as srv:
        provider = make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k"})
        ...
        assert srv.count() == ...

Faults are taken from, in order of precedence: `rule(request, attempt)` (per request, e.g.
"always 500 for prompts containing X"), the scripted `faults` queue (consumed one per
request in arrival order, so a test knows exactly how many attempts fail), then `fault_rate`
(seeded random draw among `rate_faults`). A fault is one of:

- "429": rate limited, with `Retry-After: <retry_after>` (seconds, or an HTTP-date string;
  "" sends none) and the message `rate_limit_message`
- "500", "503": server error
- "hang": sleep `hang_seconds` before answering (longer than the client's timeout)
- "drop": close the connection without any response
- "non_json": 200 with a body that is not JSON
- "no_choices": 200 with JSON lacking `choices` (OpenAI) / `content` (Anthropic)
- "401": authentication error whose message echoes the sent key (as some servers do)
- "400": bad request; "403", "404", "422": forbidden, not found, unprocessable;
  "408": request timeout (retryable)
- "truncated": 200 whose JSON body is cut half-way (Content-Length matches what is sent)
- "huge": 200 whose content is `huge_chars` characters (default 5 MB), ignoring max_tokens
- "surrogate": 200 whose content holds the JSON escape "\\ud800" (a lone surrogate)
- "null_content": 200 whose message content is null (OpenAI) / a text block with null text
- "too_long": 400 saying the prompt is over the model's context (`too_long_message`; by
  default vLLM's / OpenAI's words, Anthropic's on /v1/messages)
- "413": Request Entity Too Large, an HTML page (as a proxy in front of a server sends it)
- "content_filter": 400 from a content filter refusing the prompt (Azure OpenAI's body, code
  content_filter); "invalid_prompt": the same in OpenAI's words (code invalid_prompt)
- "refusal": 200 whose answer is a refusal (OpenAI: content null, `message.refusal` set;
  Anthropic: stop_reason "refusal", no content); "filtered": 200 with finish_reason
  "content_filter" and null content (Azure withholding the answer)
- "content_parts": 200 whose content is a list of parts, a thinking part (which names the
  other response) then the answer as a text part (Mistral's reasoning models)
- "error_200_502", "error_200_402", "error_200_400": 200 whose body is an error object
  naming that status (OpenRouter's way when the model's provider fails): an upstream error,
  no credits left, a prompt over the context
- "quota": the account is out of credit (OpenAI: 429 insufficient_quota; Anthropic: 400
  "credit balance is too low")

`delay_rule(request, attempt)` gives the seconds one request waits before its answer or fault
(a slow drop, a 429 that comes while another call's attempt is under way).

`reject_logprobs` answers 400 to OpenAI requests asking for logprobs, `reject_prefill` 400 to
Anthropic requests ending in an assistant turn (as models without those features do).
`models=[...]` serves only those model names, as vLLM does: another name gets its 404 "The
model `x` does not exist.", and GET /v1/models lists them. `redirect_to=URL` answers every
POST with a 301 to URL + the path (a plain-HTTP port redirecting to HTTPS).
`tgi=True` sends errors as text-generation-inference does: `{"error": "...", "error_type":
...}`, a request it refuses as 422 (not 400).
`forbid_params={...}` answers a request carrying any of those fields with the 422 Mistral's
API sends for fields it does not take ("extra_forbidden", "Extra inputs are not permitted").
`positive_temperature=True` refuses temperature 0 ("`temperature` must be strictly
positive", as text-generation-inference before 2.0.1 did).
`max_top_logprobs=N` answers a request asking for more top logprobs with the 422 that
text-generation-inference sends (its `--max-top-n-tokens`, 5 unless set).
`echo_prefill=True` answers a request ending in an assistant turn with that turn and its
continuation ("The better response is Response" + " A."), as llama.cpp's server does.
`loading_for=SECONDS` answers every request 503 "Loading model" for that long after the
start, as llama.cpp's server does while it loads the weights; `gets` counts GET requests.
`tls=(certfile, keyfile)` serves HTTPS with that certificate (a self-signed one: the
client must be told to trust it).
`reasoning=True` answers as OpenAI's reasoning models (o-series, gpt-5) do: 400 to a request
with `max_tokens` (they take `max_completion_tokens`) or a temperature other than 1, and
`think_tokens` tokens spent thinking before the answer: a budget that leaves none gives an
empty answer with finish_reason "length".

Answers: by default "A" if the text shown as Response A contains `GOOD` (the marker), "B" if
Response B does, else A/B from a hash of the prompt. `answer=` may be a fixed string or a
callable(prompt_text) -> str to return wrong labels ("C", "Both", "", prose).

Run standalone (used by the benchmark, to keep the server off the client's GIL)::

    python tests/llm/fakeserver.py --latency 0.05   # prints "PORT <n>" then serves
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import random
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GOOD = "<<GOOD>>"
FAULTS = frozenset({"429", "500", "503", "hang", "drop", "non_json", "no_choices", "401", "400",
                    "403", "404", "422", "408", "truncated", "huge", "surrogate",
                    "null_content", "too_long", "413", "content_filter", "invalid_prompt",
                    "refusal", "filtered", "quota", "content_parts", "error_200_502",
                    "error_200_402", "error_200_400"})


@dataclass
class Recorded:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any] | None
    raw: bytes
    t_start: float           # time.monotonic() at arrival
    t_end: float = 0.0       # when the server finished with it
    fault: str | None = None
    status: int | None = None  # status sent (None for a dropped connection)
    answer: str | None = None
    attempt: int = 0         # how many times the same body came before

    @property
    def prompt_text(self) -> str:
        return prompt_text(self.body or {})

    def body_key(self) -> str:
        """Canonical JSON of the body: equal keys = the same request sent again."""
        return json.dumps(self.body, sort_keys=True)


def prompt_text(body: dict[str, Any]) -> str:
    """All message text of an OpenAI or Anthropic request body, in order."""
    parts: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        parts.append(system)
    for m in body.get("messages") or []:
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(b.get("text", "") for b in c if isinstance(b, dict))
    return "\n".join(parts)


def sent_key(headers: dict[str, str]) -> str | None:
    """The API key a request carried: `x-api-key` (Anthropic's header) or a Bearer token
    (OpenAI; also what anthropic SDK 2.x sends)."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    auth = headers.get("authorization")
    return auth.removeprefix("Bearer ").strip() if auth else None


def default_answer(text: str) -> str:
    """A if the Response A section holds the GOOD marker, B if Response B does, else a hash."""
    m = re.search(r"Response A:(.*?)Response B:(.*)", text, re.S)
    if m:
        a, b = m.group(1), m.group(2)
        if GOOD in a and GOOD not in b:
            return "A"
        if GOOD in b and GOOD not in a:
            return "B"
    return "AB"[hashlib.sha256(text.encode()).digest()[0] % 2]


def judge_request(i: int, good: str = "A", *, choices: tuple[str, ...] = ("A", "B"),
                  prefill: str = "The better response is Response", **kw: Any) -> Any:
    """A pairwise judge request for item `i` whose GOOD marker sits in response `good`, so the
    default answer policy answers `good`. (Imports judgeaudit lazily: the server itself does
    not need it.)"""
    from judgeaudit.llm import Message, Request

    a, b = f"answer {i}", f"answer {i}"
    if good == "A":
        a += " " + GOOD
    elif good == "B":
        b += " " + GOOD
    user = (f"Instruction:\nquestion item {i}\n\nResponse A:\n{a}\n\nResponse B:\n{b}\n\n"
            f"Which response is better? Answer with a single letter: A or B.")
    return Request(
        messages=(Message("system", "You are a careful, impartial judge."),
                  Message("user", user)),
        prefill=prefill, choices=choices, max_tokens=8, temperature=0.0, **kw,
    )


def write_pairs(path: Any, n: int) -> None:
    """A JSONL data file of `n` pairwise items whose first response carries the GOOD marker
    (label 1), prompts "question item N" (as `judge_request` writes them)."""
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"t:{i}", "prompt": f"question item {i}",
                                "response_1": f"answer {i} {GOOD}",
                                "response_2": f"answer {i}", "label": 1}) + "\n")


@contextlib.contextmanager
def dropping_port() -> Any:
    """A loopback port whose connection requests go unanswered, as behind a firewall that
    drops them: a listening socket with a backlog of 0, filled by connections never
    accepted. Yields the port."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    fill = []
    for _ in range(3):
        c = socket.socket()
        c.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            c.connect(srv.getsockname())
        fill.append(c)
    try:
        yield srv.getsockname()[1]
    finally:
        for c in [*fill, srv]:
            c.close()


def _ntokens(text: str) -> int:
    return len(text.split())


class FakeLLMServer:
    """ThreadingHTTPServer on 127.0.0.1:<free port> in a daemon thread. Thread-safe records."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        faults: Iterable[str] = (),
        fault_rate: float = 0.0,
        rate_faults: Iterable[str] = ("429", "500", "503", "drop", "non_json"),
        rule: Callable[[Recorded, int], str | None] | None = None,
        delay_rule: Callable[[Recorded, int], float] | None = None,
        retry_after: str = "1",
        rate_limit_message: str = "Rate limit reached, slow down",
        hang_seconds: float = 30.0,
        huge_chars: int = 5_000_000,
        answer: str | Callable[[str], str] | None = None,
        confidence: float = 0.9,
        logprobs: bool = True,
        reject_logprobs: bool = False,
        reject_prefill: bool = False,
        api_keys: Iterable[str] | None = None,
        too_long_message: str | None = None,
        reasoning: bool = False,
        think_tokens: int = 100,
        models: Iterable[str] | None = None,
        redirect_to: str | None = None,
        tls: tuple[str, str] | None = None,
        loading_for: float = 0.0,
        echo_prefill: bool = False,
        usage: bool = True,
        max_top_logprobs: int | None = None,
        tgi: bool = False,
        positive_temperature: bool = False,
        forbid_params: Iterable[str] = (),
        seed: int = 0,
        port: int = 0,
    ):
        self.latency = latency
        self._faults = list(faults)
        bad = [f for f in [*self._faults, *rate_faults] if f not in FAULTS]
        if bad:
            raise ValueError(f"unknown faults {bad}; known: {sorted(FAULTS)}")
        self.fault_rate = fault_rate
        self.rate_faults = list(rate_faults)
        self.rule = rule
        self.delay_rule = delay_rule
        self.retry_after = retry_after
        self.rate_limit_message = rate_limit_message
        self.hang_seconds = hang_seconds
        self.huge_chars = huge_chars
        self.answer = answer
        self.confidence = confidence
        self.logprobs = logprobs
        self.reject_logprobs = reject_logprobs
        self.reject_prefill = reject_prefill
        self.api_keys = set(api_keys) if api_keys is not None else None
        self.too_long_message = too_long_message
        self.reasoning = reasoning
        self.think_tokens = think_tokens
        self.models = list(models) if models is not None else None
        self.redirect_to = redirect_to
        self.loading_for = loading_for
        self.echo_prefill = echo_prefill
        self.usage = usage  # False: answers carry no token counts (some proxies omit them)
        self.max_top_logprobs = max_top_logprobs
        self.tgi = tgi
        self.positive_temperature = positive_temperature
        self.forbid_params = set(forbid_params)
        self._ready_at = 0.0  # set by start()
        self.gets = 0  # GET requests (readiness checks, model lists)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.requests: list[Recorded] = []
        self.inflight = 0
        self.max_inflight = 0
        self._attempts: dict[str, int] = {}
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.fake = self
        self.scheme = "http"
        if tls is not None:
            import ssl

            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self._httpd.socket = ctx.wrap_socket(self._httpd.socket, server_side=True)
            self.scheme = "https"
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """base_url for the openai SDK (it appends /chat/completions)."""
        return self.url + "/v1"

    @property
    def anthropic_url(self) -> str:
        """base_url for the anthropic SDK (it appends /v1/messages)."""
        return self.url

    def start(self) -> FakeLLMServer:
        self._ready_at = time.monotonic() + self.loading_for
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # wake hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting and inspection ------------------------------------------------------------
    def push_faults(self, *faults: str) -> None:
        """Append faults to the scripted queue (consumed one per request, arrival order)."""
        with self._lock:
            self._faults.extend(faults)

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if path is None or r.path == path)

    def served(self) -> int:
        """Requests answered with a 200 and a well-formed body."""
        with self._lock:
            return sum(1 for r in self.requests if r.status == 200 and r.fault is None)

    def snapshot(self) -> list[Recorded]:
        with self._lock:
            return list(self.requests)

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._attempts.clear()
            self.max_inflight = 0

    # -- request handling (called from handler threads) ------------------------------------
    def _begin(self, rec: Recorded) -> str | None:
        with self._lock:
            self.requests.append(rec)
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
            key = rec.body_key()
            attempt = self._attempts.get(key, 0)
            self._attempts[key] = attempt + 1
            rec.attempt = attempt
            fault = self.rule(rec, attempt) if self.rule is not None else None
            if fault is None and self._faults:
                fault = self._faults.pop(0)
            if fault is None and self.fault_rate and self._rng.random() < self.fault_rate:
                fault = self._rng.choice(self.rate_faults)
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"rule returned unknown fault {fault!r}")
        rec.fault = fault
        return fault

    def _end(self, rec: Recorded) -> None:
        with self._lock:
            self.inflight -= 1
            rec.t_end = time.monotonic()

    def _answer_for(self, body: dict[str, Any]) -> str:
        text = prompt_text(body)
        if callable(self.answer):
            return self.answer(text)
        if self.answer is not None:
            return self.answer
        return default_answer(text)

    def openai_body(self, body: dict[str, Any], answer: str) -> dict[str, Any]:
        prompt = prompt_text(body)
        msgs = body.get("messages") or []
        if self.echo_prefill and msgs and msgs[-1].get("role") == "assistant":
            answer = f"{msgs[-1].get('content', '')} {answer}."  # llama.cpp's server does
        n_prompt, n_answer = _ntokens(prompt), max(1, _ntokens(answer))
        out: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": answer},
                "finish_reason": "stop",
                "logprobs": None,
            }],
            "usage": {
                "prompt_tokens": n_prompt,
                "completion_tokens": n_answer,
                "total_tokens": n_prompt + n_answer,
            },
        }
        if not self.usage:
            del out["usage"]
        if self.logprobs and body.get("logprobs"):
            out["choices"][0]["logprobs"] = {"content": self._logprob_content(body, answer)}
        return out

    def _logprob_content(self, body: dict[str, Any], answer: str) -> list[dict[str, Any]]:
        """First token = the answer's first word; its top_logprobs put `confidence` on it and
        split the rest between the other label (with a leading space, as tokenisers do) and
        filler tokens."""
        first = (answer.split(maxsplit=1) or [""])[0]
        other = "B" if first == "A" else "A"
        c = self.confidence
        top = [(first, c), (" " + other, (1 - c) * 0.8), ("The", (1 - c) * 0.15),
               ("Response", (1 - c) * 0.05)]
        n = int(body.get("top_logprobs") or 0)
        entries = [{"token": t, "logprob": math.log(p), "bytes": None}
                   for t, p in top[: max(n, 1)] if p > 0]
        content = [{"token": first, "logprob": math.log(c), "bytes": None,
                    "top_logprobs": entries}]
        for w in answer.split(maxsplit=256)[1:256]:  # (a huge answer: its first words)
            content.append({"token": " " + w, "logprob": -0.01, "bytes": None,
                            "top_logprobs": []})
        return content

    def anthropic_body(self, body: dict[str, Any], answer: str) -> dict[str, Any]:
        prompt = prompt_text(body)
        msgs = body.get("messages") or []
        prefilled = bool(msgs) and msgs[-1].get("role") == "assistant"
        # A prefilled turn is continued ("...Response" -> " A"), as the real API does.
        text = (" " + answer) if prefilled and answer else answer
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": _ntokens(prompt), "output_tokens": max(1, _ntokens(answer))},
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # bursts of 64+ concurrent connects must not overflow backlog
    fake: FakeLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing or resetting a keep-alive connection (timeouts, cancelled calls,
        # client shutdown) is normal here, as is one refusing our certificate (TLS); anything
        # else is a bug worth the traceback.
        if isinstance(sys.exc_info()[1], ConnectionError | OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real API servers
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; with Nagle on, the body waits for the
        # client's delayed ACK (~40 ms per call). Real servers (uvicorn, vLLM) set this too.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet

    def _send(self, status: int, payload: bytes, ctype: str = "application/json",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, status: int, message: str, anthropic: bool,
               headers: dict[str, str] | None = None) -> None:
        if anthropic:
            kind = {401: "authentication_error", 429: "rate_limit_error", 400:
                    "invalid_request_error"}.get(status, "api_error")
            body = {"type": "error", "error": {"type": kind, "message": message}}
        elif self.server.fake.tgi:  # its errors: a string, and 422 for a request it refuses
            body = {"error": message, "error_type": "validation" if status == 400 else "fake"}
            status = 422 if status == 400 else status
        else:
            body = {"error": {"message": message, "type": "fake_error", "code": status}}
        self._send(status, json.dumps(body).encode(), headers=headers)

    def _refuse(self, fault: str, anthropic: bool, rec: Recorded) -> None:
        """Send the refusal of the "content_filter", "invalid_prompt" or "quota" fault, in the
        body the real service sends. Its status is recorded before it is sent: a test may
        read it as soon as the client has the answer."""
        if fault == "quota":
            if anthropic:
                rec.status = 400
                self._error(400, "Your credit balance is too low to access the Anthropic API. "
                            "Please go to Plans & Billing to upgrade or purchase credits.", True)
                return
            err = {"message": "You exceeded your current quota, please check your plan and "
                   "billing details.", "type": "insufficient_quota", "param": None,
                   "code": "insufficient_quota"}
            status = 429
        elif fault == "content_filter":
            err = {"message": "The response was filtered due to the prompt triggering Azure "
                   "OpenAI's content management policy. Please modify your prompt and retry.",
                   "type": None, "param": "prompt", "code": "content_filter", "status": 400}
            status = 400
        else:
            err = {"message": "Invalid prompt: your prompt was flagged as potentially "
                   "violating our usage policy. Please try again with a different prompt.",
                   "type": "invalid_request_error", "param": None, "code": "invalid_prompt"}
            status = 400
        rec.status = status
        self._send(status, json.dumps({"error": err}).encode())

    def _loading(self, fake: FakeLLMServer) -> bool:
        """Within `loading_for` s of the start: 503 "Loading model", as llama.cpp's server
        answers every request while it loads the weights."""
        if time.monotonic() >= fake._ready_at:
            return False
        self._send(503, json.dumps({"error": {"code": 503, "message": "Loading model",
                                              "type": "unavailable_error"}}).encode())
        return True

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        fake = self.server.fake
        with fake._lock:
            fake.gets += 1
        if self._loading(fake):
            return
        if self.path.split("?")[0] == "/v1/models" and fake.models is not None:
            data = [{"id": m, "object": "model", "owned_by": "vllm"} for m in fake.models]
            self._send(200, json.dumps({"object": "list", "data": data}).encode())
        else:
            self._send(404, b'{"error": {"message": "no such route"}}')

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        fake = self.server.fake
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?")[0]
        rec = Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body, raw,
                       time.monotonic())
        anthropic = path.endswith("/messages")
        if self._loading(fake):
            return
        if fake.redirect_to:
            self._send(301, b"<html>301 Moved Permanently</html>", ctype="text/html",
                       headers={"Location": fake.redirect_to + self.path})
            return
        if path not in ("/v1/chat/completions", "/chat/completions", "/v1/messages"):
            self._send(404, b'{"error": {"message": "no such route"}}')
            return
        if not anthropic and fake.models is not None and (body or {}).get("model") not in (
                fake.models):
            self._send(404, json.dumps({"object": "error", "type": "NotFoundError", "code": 404,
                                        "message": f"The model `{(body or {}).get('model')}` "
                                                   "does not exist."}).encode())
            return
        fault = fake._begin(rec)
        try:
            self._handle(fake, rec, fault, anthropic)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout) before we answered
        finally:
            fake._end(rec)

    def _handle(self, fake: FakeLLMServer, rec: Recorded, fault: str | None,
                anthropic: bool) -> None:
        body = rec.body or {}
        if fake.latency:
            fake._stop.wait(fake.latency)
        if fake.delay_rule is not None:
            fake._stop.wait(fake.delay_rule(rec, rec.attempt))
        key = sent_key(rec.headers)
        if fault == "401" or (fake.api_keys is not None and key not in fake.api_keys):
            rec.status = 401
            # Real servers echo (part of) the key they rejected; the client must not.
            self._error(401, f"Incorrect API key provided: {key}", anthropic)
            return
        if fault == "hang":
            fake._stop.wait(fake.hang_seconds)
            if fake._stop.is_set():
                return
        if fault == "drop":
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "429":
            rec.status = 429
            self._error(429, fake.rate_limit_message, anthropic,
                        {"Retry-After": fake.retry_after} if fake.retry_after else {})
            return
        if fault in ("500", "503"):
            rec.status = int(fault)
            self._error(int(fault), "The server had an error", anthropic)
            return
        if fault in ("400", "403", "404", "422", "408"):
            rec.status = int(fault)
            self._error(int(fault), {"400": "Invalid request", "403": "Forbidden for this key",
                                     "404": "The model does not exist",
                                     "422": "Unprocessable request",
                                     "408": "Request timed out"}[fault], anthropic)
            return
        if fault == "too_long":
            rec.status = 400
            self._error(400, fake.too_long_message or (
                "prompt is too long: 210000 tokens > 200000 maximum" if anthropic else
                "This model's maximum context length is 4096 tokens. However, you requested "
                "5120 tokens (5112 in the messages, 8 in the completion). Please reduce the "
                "length of the messages or completion."), anthropic)
            return
        if fault == "413":
            rec.status = 413
            self._send(413, b"<html><body><h1>413 Request Entity Too Large</h1></body></html>",
                       ctype="text/html")
            return
        if fault in ("content_filter", "invalid_prompt", "quota"):
            self._refuse(fault, anthropic, rec)
            return
        top_n = int(body.get("top_logprobs") or 0)
        if not anthropic and fake.max_top_logprobs is not None and top_n > fake.max_top_logprobs:
            rec.status = 422  # text-generation-inference's own body (its --max-top-n-tokens)
            self._send(422, json.dumps({
                "error": "Input validation error: `top_n_tokens` must be >= 0 and <= "
                         f"{fake.max_top_logprobs}. Given: {top_n}",
                "error_type": "validation"}).encode())
            return
        extra = sorted(fake.forbid_params & set(body)) if not anthropic else []
        if extra:
            rec.status = 422  # Mistral's API: pydantic's extra_forbidden, per field
            self._send(422, json.dumps({"object": "error", "message": {"detail": [
                {"type": "extra_forbidden", "loc": ["body", k], "msg": "Extra inputs are not "
                 "permitted", "input": body[k]} for k in extra]},
                "type": "invalid_request_error", "param": None, "code": None}).encode())
            return
        if not anthropic and fake.positive_temperature and body.get("temperature", 1) <= 0:
            rec.status = 422 if fake.tgi else 400
            self._error(400, "`temperature` must be strictly positive", anthropic)
            return
        if not anthropic and fake.reject_logprobs and body.get("logprobs"):
            rec.status = 400
            self._error(400, "logprobs is not supported by this model", anthropic)
            return
        if not anthropic and fake.reasoning:
            refused = ("Unsupported parameter: 'max_tokens' is not supported with this model. "
                       "Use 'max_completion_tokens' instead." if "max_tokens" in body else
                       "Unsupported value: 'temperature' does not support "
                       f"{body.get('temperature')} with this model. Only the default (1) "
                       "value is supported." if body.get("temperature", 1) != 1 else None)
            if refused:
                rec.status = 400
                self._error(400, refused, anthropic)
                return
            if int(body.get("max_completion_tokens") or 0) <= fake.think_tokens:
                rec.status = 200
                payload = fake.openai_body(body, "")
                payload["choices"][0]["finish_reason"] = "length"
                self._send(200, json.dumps(payload).encode())
                return
        msgs = body.get("messages") or []
        if (anthropic and fake.reject_prefill and msgs
                and msgs[-1].get("role") == "assistant"):
            rec.status = 400
            self._error(400, "Prefill is not supported for this model", anthropic)
            return
        if fault == "non_json":
            rec.status = 200
            self._send(200, b"<html>502 Bad Gateway</html>", ctype="text/html")
            return
        if fault is not None and fault.startswith("error_200_"):
            rec.status = 200  # OpenRouter: the model's provider failed; the HTTP status is 200
            code = int(fault.rsplit("_", 1)[1])
            message = {502: "Upstream provider returned an error",
                       402: "Insufficient credits. Add more using https://example.com/credits",
                       400: "This endpoint's maximum context length is 4096 tokens. However, "
                            "you requested about 9000 tokens."}[code]
            self._send(200, json.dumps({"error": {"message": message, "code": code}}).encode())
            return
        if fault == "no_choices":
            rec.status = 200
            self._send(200, json.dumps({"id": "x", "object": "chat.completion"}).encode())
            return
        answer = fake._answer_for(body)
        if fault == "huge":
            answer = ("All work and no play. " * (fake.huge_chars // 22 + 1))[:fake.huge_chars]
        elif fault == "surrogate":
            answer = "A \ud800 broken"  # json.dumps writes it as the escape "\ud800"
        rec.answer = answer
        payload = fake.anthropic_body(body, answer) if anthropic else fake.openai_body(body, answer)
        if fault == "content_parts" and not anthropic:
            other = "B" if answer.strip().startswith("A") else "A"
            payload["choices"][0]["message"]["content"] = [
                {"type": "thinking", "thinking": [{"type": "text", "text": f"Maybe {other}."}]},
                {"type": "text", "text": answer}]
        if fault == "refusal" and anthropic:
            payload.update(content=[], stop_reason="refusal")
        elif fault in ("refusal", "filtered"):
            choice = payload["choices"][0]
            choice["message"]["content"], choice["logprobs"] = None, None
            if fault == "refusal":
                choice["message"]["refusal"] = "I'm sorry, I can't help with that."
            else:
                choice["finish_reason"] = "content_filter"
        if fault == "null_content":
            if anthropic:
                payload["content"] = [{"type": "text", "text": None}]
            else:
                payload["choices"][0]["message"]["content"] = None
                payload["choices"][0]["logprobs"] = None
        rec.status = 200
        data = json.dumps(payload).encode()
        if fault == "truncated":
            data = data[: len(data) // 2]
        self._send(200, data)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    srv = FakeLLMServer(latency=args.latency, port=args.port).start()
    print(f"PORT {srv.port}", flush=True)
    try:
        sys.stdin.read()  # serve until the parent closes our stdin
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
