"""A field tester's findings against a judge server that misbehaves as real ones do (their
server's scenarios, copied here: the model name picks how it misbehaves):

- a server failing some prompts only (HTTP 500 on 11% of them) was cut off as "stopped
  answering": its failing calls, each retrying ~30 s, gave up in a row after the good calls
  had finished, and the rest of the run was not sent;
- a 200 with an empty `choices` list and `usage` (a content filter) was retried 6-7 times,
  its tokens not counted, so `--max-cost` did not hold;
- a 200 HTML page (a login page) was retried until the breaker stopped it;
- a verdict cut at the token limit read as a plain unparseable answer;
- the spend cap's stop said "run again with a higher max_cost", read as a total.

A real HTTP server on loopback, started by each test."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fakeserver import judge_request

from judgeaudit.llm import CallFailed, Client, RetryPolicy, SpendCap, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = {"base_delay": 0.05, "max_delay": 0.1}
CUT = "The better response is Response"
NO_CHOICES = "no choices in the reply (a content filter?)"
LOGIN = b"<!DOCTYPE html><html><body><h1>Sign in to continue</h1></body></html>"
GATEWAY = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 "
           b"Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


class FieldServer:
    """The tester's server: the model name is the scenario. `bad` holds the items (their
    `question item N` line) the "flaky" scenario fails with HTTP 500, always; "failafter"
    answers `answer_first` requests, then fails every one with 500. Every POST is logged
    (scenario, item, status, usage)."""

    def __init__(self, bad: frozenset[str] = frozenset(), answer_first: int = 20):
        self.bad, self.answer_first = bad, answer_first
        self.log: list[dict[str, Any]] = []
        self.attempts: dict[str, int] = {}
        self.lock = threading.Lock()
        fs = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fs.handle(self, json.loads(raw), raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def count(self, status: Any = None) -> int:
        with self.lock:
            return sum(1 for r in self.log if status is None or r["status"] == status)

    def billed(self, price_in: float, price_out: float) -> float:
        """What the server's answers cost at these prices (USD per million tokens)."""
        with self.lock:
            return sum((r["usage"][0] * price_in + r["usage"][1] * price_out) / 1e6
                       for r in self.log if r.get("usage"))

    @staticmethod
    def send(h: BaseHTTPRequestHandler, status: int, body: bytes,
             ctype: str = "application/json") -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def handle(self, h: BaseHTTPRequestHandler, req: dict[str, Any], raw: bytes) -> None:
        model = req.get("model", "ok")
        prompt = "\n".join(m["content"] if isinstance(m["content"], str)
                           else json.dumps(m["content"]) for m in req.get("messages", []))
        m = re.search(r"question item (\d+)", prompt)
        item = m.group(1) if m else None
        ptok = max(1, len(prompt) // 4)
        with self.lock:
            self.attempts[raw.decode()] = att = self.attempts.get(raw.decode(), 0) + 1
            served = len(self.log)
        rec: dict[str, Any] = {"scenario": model, "item": item, "status": 200}
        fail = ((model == "flaky" and item in self.bad)
                or (model == "failafter" and served >= self.answer_first))
        if fail:
            rec["status"] = 500
            body = json.dumps({"error": {"message": "internal error"}}).encode()
            self.record(rec)
            return self.send(h, 500, body)
        if model == "html200":
            self.record(rec)
            return self.send(h, 200, LOGIN, "text/html; charset=utf-8")
        if model == "gateway200" and att == 1:
            self.record(rec)
            return self.send(h, 200, GATEWAY, "text/html")
        if h.path.endswith("/messages"):  # anthropic: "maxtok" cuts the verdict
            text, stop = (CUT, "max_tokens") if model == "maxtok" else ("A", "end_turn")
            rec["usage"] = (ptok, 20)
            self.record(rec)
            return self.send(h, 200, json.dumps({
                "id": "msg_1", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": stop,
                "usage": {"input_tokens": ptok, "output_tokens": 20}}).encode())
        if model == "empty":
            rec["usage"] = (ptok, 0)
            self.record(rec)
            return self.send(h, 200, json.dumps({
                "id": "x", "object": "chat.completion", "choices": [],
                "usage": {"prompt_tokens": ptok, "completion_tokens": 0,
                          "total_tokens": ptok}}).encode())
        content, finish = (CUT, "length") if model == "cutverdict" else ("A", "stop")
        ctok = 20 if model == "cutverdict" else 1
        rec["usage"] = (ptok, ctok)
        self.record(rec)
        self.send(h, 200, json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": ptok, "completion_tokens": ctok,
                      "total_tokens": ptok + ctok}}).encode())

    def record(self, rec: dict[str, Any]) -> None:
        with self.lock:
            self.log.append(rec)


@pytest.fixture
def field_server() -> Iterator[Any]:
    """Factory: `field_server(bad=..., answer_first=...)` starts a FieldServer, stopped at
    teardown."""
    started: list[FieldServer] = []

    def start(**kw: Any) -> FieldServer:
        srv = FieldServer(**kw)
        srv.thread.start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.httpd.shutdown()
        srv.httpd.server_close()


def openai(url: str, model: str, **params: str) -> Any:
    return make_provider("openai", model, {"base_url": url, "api_key": "k", **params})


def requests(n: int, start: int = 0) -> list[Any]:
    return [judge_request(i, "AB"[i % 2]) for i in range(start, start + n)]


# -- 1. a server failing some prompts is not cut off ------------------------------------------

async def test_a_server_failing_some_prompts_only_is_not_cut_off(field_server):
    """The failing calls give up after the good ones are answered, several in a row: no call
    was answered after them only because none was left, so they are no sign of a server
    that stopped answering; the rest of the run (its next stage) is still sent."""
    bad = frozenset(str(i) for i in range(6))
    srv = field_server(bad=bad)
    client = Client(openai(srv.url, "flaky"), concurrency=4,
                    retry=RetryPolicy(max_retries=3, stop_after=3, **FAST))
    outs = await client.map(requests(40))
    failed = {str(i) for i, o in enumerate(outs) if isinstance(o, CallFailed)}
    assert failed == bad and client.stats.made == 34
    assert client.stopped is None and client.stats.not_sent == 0
    assert all("gave up after 4 attempts" in str(outs[int(i)]) for i in bad)
    # the next stage is sent and answered
    outs = await client.map(requests(10, start=100))
    assert not any(isinstance(o, CallFailed) for o in outs) and client.stats.made == 44
    await client.aclose()


async def test_a_server_that_stops_answering_mid_run_still_stops(field_server):
    """A server that answers 20 calls and then fails every one is still cut off: the calls
    sent after its last answer give up with nothing answered since, and count."""
    srv = field_server(answer_first=20)
    client = Client(openai(srv.url, "failafter"), concurrency=4,
                    retry=RetryPolicy(max_retries=2, stop_after=8, **FAST))
    outs = await client.map(requests(300))
    assert client.stopped is not None and "stopped answering" in client.stopped
    assert client.stats.made == 20
    assert sum(isinstance(o, CallFailed) for o in outs) == 280
    # the calls waiting to retry stopped waiting: fewer than every attempt of every call
    assert srv.count(500) < 280 * 3 and client.stats.retries < 280 * 2
    await client.aclose()


# -- 2. an empty choices list with usage is a paid answer, not a retry -------------------------

async def test_an_empty_choices_list_is_a_paid_answer_with_no_verdict(field_server):
    srv = field_server()
    client = Client(openai(srv.url, "empty", price_in="100", price_out="400"),
                    concurrency=2, retry=RetryPolicy(max_retries=6, stop_after=0, **FAST))
    outs = await client.map(requests(10))
    assert srv.count() == 10 and client.stats.retries == 0 and client.stats.made == 10
    assert all(not isinstance(o, CallFailed) and o.text == "" and o.invalid == NO_CHOICES
               for o in outs)
    # its tokens are counted, and so is its cost
    assert client.stats.prompt_tokens == sum(o.usage.prompt_tokens for o in outs) > 0
    assert client.stats.cost_usd == pytest.approx(srv.billed(100, 400))
    # counted unreadable with its reason
    for req, out in zip(requests(10), outs, strict=True):
        client.note_verdict(out, out.invalid, request=req)
    assert client.stats.unreadable == 10
    assert client.stats.first_unreadable == NO_CHOICES
    await client.aclose()


async def test_max_cost_holds_against_a_server_answering_empty_choices(field_server):
    srv = field_server()
    client = Client(openai(srv.url, "empty", price_in="100", price_out="400"),
                    concurrency=4, retry=RetryPolicy(max_retries=6, stop_after=0, **FAST))
    client.spend_cap = SpendCap(0.05)
    outs = await client.map(requests(40))
    assert srv.billed(100, 400) <= 0.05
    assert client.spend_cap.spent == pytest.approx(srv.billed(100, 400))
    assert client.stats.not_sent > 0 and client.stats.retries == 0
    assert srv.count() == client.stats.made == sum(not isinstance(o, CallFailed) for o in outs)
    await client.aclose()


# -- 3. a 200 HTML page fails at once ---------------------------------------------------------

@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_200_login_page_fails_at_once_and_names_the_page(field_server, kind):
    srv = field_server()
    if kind == "openai":
        p, api = openai(srv.url, "html200"), "an OpenAI-compatible API"
    else:
        p = make_provider("anthropic", "html200", {"base_url": srv.anthropic_url,
                                                   "api_key": "k"})
        api = "an Anthropic Messages API"
    client = Client(p, concurrency=1, retry=RetryPolicy(max_retries=6, **FAST))
    with pytest.raises(CallFailed) as ei:
        await client.map(requests(20))
    assert ei.value.fatal
    assert f"returns HTML (not {api}): 'Sign in to continue'" in str(ei.value)
    assert srv.count() == 1 and client.stats.retries == 0
    await client.aclose()


async def test_a_200_gateway_error_page_is_still_retried(field_server):
    srv = field_server()
    client = Client(openai(srv.url, "gateway200"), concurrency=1,
                    retry=RetryPolicy(max_retries=6, **FAST))
    out = await client.call(judge_request(1))
    assert out.text == "A" and client.stats.retries == 1 and srv.count() == 2
    assert client.stats.errors == {"malformed": 1}
    assert "502 Bad Gateway" in (client.stats.first_error or "")
    await client.aclose()


# -- 4. an unparseable answer cut at the token limit says so -----------------------------------

@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_an_unparseable_answer_cut_at_the_token_limit_says_so(field_server, kind):
    srv = field_server()
    if kind == "openai":
        p, field = openai(srv.url, "cutverdict"), "finish_reason length"
    else:
        p = make_provider("anthropic", "maxtok", {"base_url": srv.anthropic_url,
                                                  "api_key": "k"})
        field = "stop_reason max_tokens"
    client = Client(p, concurrency=1)
    req = judge_request(1)
    out = await client.call(req)
    assert out.text == CUT and out.invalid is None  # a cut answer may still hold a verdict
    client.note_verdict(out, f"unparseable answer: {CUT!r}", request=req)
    why = client.stats.first_unreadable or ""
    assert why.startswith(f"unparseable answer: {CUT!r}")
    assert "cut at the token limit" in why and field in why
    assert f"of max_tokens={req.max_tokens}" in why and "max_tokens=64 in the judge spec" in why
    assert client.stats.unreadable == 1
    await client.aclose()


async def test_an_answer_that_ended_on_its_own_says_nothing_of_a_cut(field_server):
    srv = field_server()
    client = Client(openai(srv.url, "ok"), concurrency=1)
    req = judge_request(1)
    out = await client.call(req)
    client.note_verdict(out, "unparseable answer: 'A'", request=req)
    assert client.stats.first_unreadable == "unparseable answer: 'A'"
    await client.aclose()


# -- 5. the spend cap's stop says it counts this run's calls only ------------------------------

async def test_the_spend_cap_stop_says_a_re_run_spends_up_to_the_cap_more(field_server):
    srv = field_server()
    client = Client(openai(srv.url, "ok", price_in="100", price_out="400"), concurrency=1)
    client.spend_cap = SpendCap(0.05)
    outs = await client.map(requests(40))
    stop = next(str(o) for o in outs if isinstance(o, CallFailed))
    assert "spend cap is reached" in stop
    assert "the cap counts this run's calls only" in stop
    # on purpose: a re-run without a cache pays for every call, and the API's name is max_cost
    assert "pays again only for the calls its cache does not hold" in stop
    assert "re-run with max_cost (--max-cost) X to spend up to X more" in stop
    assert "higher max_cost" not in stop
    assert client.stats.not_sent_why and "up to X more" in client.stats.not_sent_why
    await client.aclose()


def test_the_cut_answer_hint_works_for_anthropic_too():
    """The hint says "give it room with max_tokens=64 in the judge spec", but anthropic
    refused the parameter ("unknown parameter 'max_tokens'"): it now takes it, as openai
    does, and sends it in place of the request's."""
    p = make_provider("anthropic", "m", {"base_url": "http://127.0.0.1:9/v1",
                                          "api_key": "k", "max_tokens": "64"})
    req = judge_request(1)
    assert p.batch_params(req)["max_tokens"] == 64 and req.max_tokens != 64
    plain = make_provider("anthropic", "m", {"base_url": "http://127.0.0.1:9/v1",
                                              "api_key": "k"})
    assert plain.batch_params(req)["max_tokens"] == req.max_tokens


def test_the_spend_cap_holds_anthropic_s_spec_max_tokens():
    """The hold (and a plan line) took the request's 8 tokens where the spec's max_tokens
    allowed 4096: a $0.05 cap let 16 calls spend $4.80 on a long answer."""
    from judgeaudit.llm.plan import plan_body

    p = make_provider("anthropic", "m", {"base_url": "http://127.0.0.1:9/v1", "api_key": "k",
                                          "max_tokens": "4096"})
    assert plan_body(judge_request(1), p)["max_tokens"] == 4096
    plain = make_provider("anthropic", "m", {"base_url": "http://127.0.0.1:9/v1",
                                              "api_key": "k"})
    assert plan_body(judge_request(1), plain)["max_tokens"] == judge_request(1).max_tokens
