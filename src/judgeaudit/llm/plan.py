"""Plan, execute anywhere, ingest (DESIGN.md, "Where the calls run").

A `Planner` on a client (`Client.planner`, set by `judgeaudit --plan-only PLAN.jsonl`) takes
each cache miss instead of sending it: the request becomes one line of the plan, in the
OpenAI batch input format, keyed by its cache key::

    {"custom_id": "<cache key>", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model", "messages", "max_tokens", "temperature", ["logprobs", "top_logprobs"]}}

The body is what the openai provider sends live for the request (its prefill handling and
logprobs setting); for any other provider the same OpenAI-shaped body (prefill as an
answer-format line), so `vllm run-batch` or any OpenAI-compatible batch runner can execute
it. The call fails as a non-fatal `CallFailed` of kind "planned", so the pipeline runs
through. No secret is in a plan: keys and URLs are not part of a body.

`ingest` reads the executor's output (the OpenAI batch output format, which `vllm run-batch`
also writes) into the cache under each custom_id, parsing each body exactly as the openai
provider parses a live reply; the requests' choices (needed for the probabilities read off
logprobs), provider and model come from the cache's `planned` table, written with the plan.
Error lines are counted and reported, never cached as answers; a too-long refusal (kind
too_long: the prompt is over the model's context) of a planned request is kept in the cache's
`refusals` table, so the re-run fails that call as a live run's call failed (the ranking
leaves the pair out) instead of planning it again each cycle. Other error kinds are planned
again. The command then runs from the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgeaudit.files import atomic_file
from judgeaudit.llm.base import CHARS_PER_TOKEN, Provider, Request, Usage
from judgeaudit.llm.cache import Cache, CacheError
from judgeaudit.llm.redact import redact

PLANNED = "planned"


class PlannedStop(Exception):
    """`--plan-only`: a stage's requests were planned, not answered, and the next stage's
    requests depend on those answers (the next round of an active ranking or of an adaptive
    audit), so the pipeline stops here. The message says the stage reached and what to run
    next; `note`, when given, what the plan may hold that a live run would not send (a
    ranking's requests with an item that may be too long for the judge), said on a line of
    its own."""

    def __init__(self, message: str, *, stage: str, n_planned: int, round: int | None = None,
                 note: str | None = None):
        super().__init__(message)
        self.stage, self.n_planned, self.round = stage, n_planned, round
        self.note = note


def is_planned(exc: BaseException) -> bool:
    """True for the CallFailed of a request that was planned, not sent (`--plan-only`)."""
    return getattr(exc, "kind", None) == PLANNED


def plan_body(request: Request, provider: Provider) -> dict[str, Any]:
    """The chat-completions body a plan line carries for `request`: the openai provider's own
    (`request_body`), else the generic OpenAI-shaped one for the provider's model."""
    own = getattr(provider, "request_body", None)
    if own is not None:
        return own(request)
    from judgeaudit.llm.providers.openai import chat_body

    temperature = getattr(provider, "temperature", None)
    body = chat_body(request, provider.model,
                     temperature=temperature if isinstance(temperature, float) else None)
    # a spec's max_tokens overrides the request's (anthropic): the plan line, its estimate
    # and the spend cap's hold must count what the model may write (it held 8 tokens where
    # the spec allowed 4096, and a capped run spent $4.80 of a $0.05 cap)
    own_max = getattr(provider, "max_tokens", None)
    if isinstance(own_max, int) and not isinstance(own_max, bool) and own_max > 0:
        body["max_tokens"] = own_max
    return body


def body_ceiling(body: dict[str, Any], price: tuple[float, float] | None
                 ) -> tuple[int, int, float | None]:
    """(prompt characters, most completion tokens, cost at `price` with the prompt at
    characters / `CHARS_PER_TOKEN` and the completion at its max_tokens) of a chat body: what
    a plan estimates, and what a call holds on the spend cap while it is under way."""
    chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
    out = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
    cost = (None if price is None
            else (chars / CHARS_PER_TOKEN * price[0] + out * price[1]) / 1e6)
    return chars, out, cost


def estimated_usage(request: Request, provider: Provider, text: str) -> Usage:
    """The tokens of a call whose server did not count them: the characters of the body it
    was sent as (`body_ceiling`, as its hold on the spend cap) and of its answer, over
    `CHARS_PER_TOKEN`, rounded up (so a cost cap errs towards stopping early)."""
    chars = body_ceiling(plan_body(request, provider), None)[0]
    return Usage(-(-chars // CHARS_PER_TOKEN), -(-len(text) // CHARS_PER_TOKEN))


# Which price a provider's `price_per_mtok` is, said wherever a plan or ingest prices requests,
# by the keys of `CallStats.price_rate` (`client.price_rate`) and in the calls line's words
# (`cli.format.RATE_SAID`): the plan route is meant for batch executors (a provider's batch
# API bills half the list price; vllm run-batch on a server of one's own bills nothing), so
# "the provider's bill" at list prices would overstate a batch API's bill twofold. A plan
# priced at a spec's price_in/price_out said "at list prices" while the calls line named them.
RATE_WORDS = {
    "spec": "the judge spec's prices",  # price_in/price_out
    "spec_batch": ("the judge spec's prices, as given (batch=on halves only a built-in price: "
                   "price_in/price_out are the rate billed)"),
    "batch": "the batch rate (half the list price: the judge spec says batch=on)",
    "list": "list prices",
    "mixed": "the judges' prices (list, batch or the spec's)",
}


# A judge that costs nothing (the embedded model: price (0, 0), no price_in) is at no rate
# of `RATE_WORDS`: its calls were named "at list prices", and beside a judge at its spec's
# prices made the run's rate "mixed" ("list, batch or the spec's"). `combine_rates` lets
# any priced judge's rate stand for the sum; alone, it is said as `FREE_WORDS`.
FREE = "free"
FREE_WORDS = "no charge (the judge costs nothing)"


def combine_rates(a: str | None, b: str | None) -> str | None:
    """The rate of a cost summed from costs at rates `a` and `b` (`CallStats.price_rate`):
    None (unpriced) and `FREE` (costs nothing) yield to the other, equal rates stay, and
    two different priced rates are "mixed"."""
    if a in (None, FREE):
        return b if b not in (None, FREE) else (a or b)
    if b in (None, FREE) or a == b:
        return a
    return "mixed"


def cost_at(total: float, by_rate: dict[str, float], usd: Callable[[float], str]) -> str:
    """'$X at <rate>' for a cost at one rate, '$X ($a at <rate>, $b at <rate>)' for costs at
    several (a judge at list prices and one at its spec's): the words of `RATE_WORDS`, a rate
    not kept (a cache planned before it was: "") said as the spec's prices. A judge that costs
    nothing (`FREE`) is not named beside a priced one."""
    if len(by_rate) > 1:
        by_rate = {r: c for r, c in by_rate.items() if r != FREE}
    words = {r: FREE_WORDS if r == FREE else RATE_WORDS.get(r, RATE_WORDS["spec"])
             for r in by_rate}
    if len(by_rate) == 1:
        return f"{usd(total)} at {words[next(iter(by_rate))]}"
    return f"{usd(total)} (" + ", ".join(
        f"{usd(c)} at {words[r]}" for r, c in sorted(by_rate.items())) + ")"


def price_basis(provider: Provider) -> str | None:
    """'spec' (price_in/price_out given), 'batch' (the built-in list price halved for
    batch=on: openai, anthropic) or 'list' (the built-in list price); None with no price."""
    if provider.price_per_mtok is None:
        return None
    if "price_in" in provider.params:
        return "spec"
    return "batch" if getattr(provider, "batch", None) is not None else "list"


def parse_info(request: Request, body: dict[str, Any],
               price: tuple[float, float] | None = None, rate: str | None = None) -> str:
    """What `ingest` needs to parse the answer to a planned request, as the JSON the cache's
    `planned` table keeps: the choices, and the assistant turn the body ends with when the
    prefill was sent as one (llama.cpp's server repeats it before its continuation); and the
    judge spec's price per million tokens (in, out) when known, so ingest can say what the
    answers cost as a live run prices its calls, with which price it is (`price_basis`)."""
    msgs = body.get("messages") or []
    info: dict[str, Any] = {"choices": list(request.choices)}
    if request.prefill and msgs and msgs[-1].get("role") == "assistant":
        info["prefill"] = msgs[-1]["content"]
    if price is not None:
        info["price"] = [float(price[0]), float(price[1])]
        if rate is not None:
            info["rate"] = rate
    if len(info) == 1:
        return json.dumps(list(request.choices))
    return json.dumps(info)


def read_parse_info(info: str) -> tuple[tuple[str, ...], str]:
    """(choices, prefill sent as an assistant turn) from `parse_info`'s JSON; caches planned
    before the prefill was kept hold a bare list of choices."""
    data = json.loads(info)
    if isinstance(data, dict):
        return tuple(data["choices"]), str(data.get("prefill") or "")
    return tuple(data), ""


def read_price(info: str) -> tuple[float, float] | None:
    """The price per million tokens (in, out) `parse_info` kept, or None (not known, or
    planned before prices were kept)."""
    try:
        data = json.loads(info)
        if isinstance(data, dict) and data.get("price") is not None:
            a, b = data["price"]
            return float(a), float(b)
    except (ValueError, TypeError, KeyError):
        pass
    return None


def read_rate(info: str) -> str | None:
    """Which price `parse_info` kept (a `RATE_WORDS` key), or None (planned before the rate
    was kept, or no price)."""
    try:
        data = json.loads(info)
    except ValueError:
        return None
    rate = data.get("rate") if isinstance(data, dict) else None
    return rate if rate in RATE_WORDS or rate == FREE else None


def simulated(provider: str) -> bool:
    """True for a provider judgeaudit answers itself from the request's meta (sim, simhubj,
    replay: `Provider.uses_meta`), which a plan's body does not carry: its requests are
    planned only so a plan counts the whole run, and an answer ingested for one replaces
    the simulation's verdict."""
    from judgeaudit.llm.registry import provider_class

    try:
        return bool(provider_class(provider).uses_meta)
    except (KeyError, ValueError):
        return False


class Planner:
    """Collects the distinct requests a command would send (one per cache key, in the order
    first asked) and the cache keys it found answered already."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        # The outermost directory of the plan's path that does not exist yet: writing the
        # plan creates it, and the plan message says so (it was created silently).
        missing = [d for d in self.path.absolute().parents if not d.exists()]
        self.creates_dir: Path | None = missing[-1] if missing else None
        self.lines: dict[str, dict[str, Any]] = {}
        self.meta: dict[str, tuple[str, str, str]] = {}
        self.cached: set[str] = set()
        self.caches: list[Cache] = []
        # What the planned requests would use and cost (`estimate`).
        self.prompt_chars = 0
        self.max_completion = 0
        self.cost_usd = 0.0
        self.unpriced: set[str] = set()  # models that may bill at a price not known here
        # `cost_usd` by the price it is at (`client.price_rate`: the calls line's rates)
        self.cost_by_rate: dict[str, float] = {}
        self.max_cost: float | None = None  # the command's --max-cost, to compare with
        # provider -> planned requests of a simulated judge (`simulated`)
        self.simulated: Counter[str] = Counter()

    @property
    def n(self) -> int:
        return len(self.lines)

    def bind(self, cache: Cache) -> None:
        """A cache the planned requests' meta is written to (`judgeaudit ingest` reads it)."""
        if all(c is not cache for c in self.caches):
            self.caches.append(cache)

    def add(self, key: str, request: Request, provider: Provider) -> None:
        if key in self.lines:
            return
        from judgeaudit.llm.batch_openai import plan_entry

        body = plan_body(request, provider)
        self.lines[key] = plan_entry(key, body)
        from judgeaudit.llm.client import price_rate

        rate = price_rate(provider)  # "spec_batch" too, as a live run's calls line names it
        self.meta[key] = (provider.name, provider.model,
                          parse_info(request, body, provider.price_per_mtok, rate))
        if simulated(provider.name):
            self.simulated[provider.name] += 1
        chars, out, cost = body_ceiling(body, provider.price_per_mtok)
        self.prompt_chars += chars
        self.max_completion += out
        if cost is not None:
            self.cost_usd += cost
            r = rate or "list"
            self.cost_by_rate[r] = self.cost_by_rate.get(r, 0.0) + cost
        elif provider.billed:
            self.unpriced.add(f"{provider.name}:{provider.model}")

    def estimate(self) -> str:
        """What the planned requests would use, and cost where the price is known, at which
        price named as a live run's calls line names it (`cost_at`: list prices, the batch
        rate, the judge spec's prices): prompt
        tokens estimated from their characters (`CHARS_PER_TOKEN`), completion tokens at
        most each request's max_tokens, so the cost is an estimate with its completions at
        their ceiling, not a bound: a tokenizer may count more prompt tokens than characters
        / 4 (code, other languages, the chat format's tokens per message), and the bill can
        pass it when that outweighs completions shorter than max_tokens. A default audit
        through a server counting characters / 3.5 + 7 per message was planned at $146.56
        (123,518 prompt tokens estimated, 5,760 completion at most) and billed $157.30
        (151,542 prompt, 1,440 completion). A bound (a token per UTF-8 byte) would be about
        4 times the bill of English prompts: no use for a budget."""
        text = (f"about {round(self.prompt_chars / CHARS_PER_TOKEN):,} prompt tokens "
                f"(characters / {CHARS_PER_TOKEN}) and at most {self.max_completion:,} "
                "completion tokens")
        if self.cost_usd > 0:
            at = cost_at(self.cost_usd, self.cost_by_rate, lambda x: f"${x:.4f}")
            text += (f"; about {at} (completions at max_tokens; an "
                     "estimate, not a bound: a tokenizer may count more prompt tokens than "
                     "characters / 4, in code, other languages and the chat format)")
            if self.max_cost is not None and self.cost_usd > self.max_cost:
                text += (f", above --max-cost ${self.max_cost:g}: a run with it would stop "
                         f"after about {self.max_cost / self.cost_usd:.0%} of these requests")
        if self.unpriced:
            text += (f"; the price of {', '.join(sorted(self.unpriced))} is not known (give "
                     "price_in and price_out in the judge spec)")
        return text

    def note_cached(self, key: str) -> None:
        self.cached.add(key)

    def write(self) -> Path:
        """Write the plan file atomically (a temp file renamed into place) and the planned
        requests' meta into every bound cache."""
        rows = [(k, *m) for k, m in self.meta.items()]
        for cache in self.caches:
            for i in range(0, len(rows), 5000):
                cache.put_planned(rows[i:i + 5000])
        write_jsonl(self.path, self.lines.values())
        return self.path


def write_jsonl(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """JSON Lines written whole or not at all (`judgeaudit.files.atomic_file`)."""
    with atomic_file(path) as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


@dataclass
class IngestReport:
    """What `ingest` did: answers stored, error lines by kind (with the first one's message and
    1-based line), lines whose custom_id was not planned with this cache (the first one's line
    and id), unreadable lines, lines that are requests (a plan's lines, not answers), repeated
    custom_ids (the first line kept; the first few repeats' lines, and how many of them carry
    a different answer than the line kept), and with a plan file, its requests with no answer
    in the cache."""

    lines: int = 0
    ingested: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    first_error: str | None = None
    first_error_line: int | None = None
    unknown: int = 0
    first_unknown: tuple[int, str] | None = None  # (line, custom_id)
    unreadable: int = 0
    unreadable_lines: list[int] = field(default_factory=list)  # the first few, 1-based
    requests: int = 0  # lines that are requests (method, url, body; no response or error)
    request_lines: list[int] = field(default_factory=list)  # the first few, 1-based
    duplicates: int = 0
    duplicates_differing: int = 0  # of `duplicates`, repeats whose answer differs from the kept
    # The first few repeats: (custom_id, line kept, line of the repeat, answers differ).
    duplicate_lines: list[tuple[str, int, int, bool]] = field(default_factory=list)
    replaced: int = 0  # of `ingested`, answers that replaced one already cached
    # Error lines a later line of the same custom_id answered (the answer kept: an output
    # file joined with a rerun's lost the rerun's answer to the first run's error), and the
    # first one's (custom_id, error line, answer line).
    errors_answered: int = 0
    first_answered: tuple[str, int, int] | None = None
    plan_lines: int | None = None
    # provider -> answers stored for a simulated judge's requests (`simulated`)
    simulated: dict[str, int] = field(default_factory=dict)
    unanswered: int | None = None
    not_in_plan: int | None = None
    # Error lines of kind too_long kept as refusals (`Cache.put_refusals`): not planned again
    refusals_kept: int = 0
    # What the stored answers say they used (their `usage`), and cost at the judge spec's
    # price where the plan knew it (`parse_info`): the provider's bill for those answers, not
    # an estimate. `unpriced`: stored answers of requests planned with no known price.
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    unpriced: int = 0
    # Of `ingested`, answers whose `usage` is null or missing: their tokens are not known, so
    # neither the sums nor the cost count them (said, not silently left out).
    no_usage: int = 0
    # The cost of the priced answers by which price the plan kept (`RATE_WORDS` key, "" for
    # a cache planned before the rate was kept).
    cost_by_rate: dict[str, float] = field(default_factory=dict)
    # Stored answers the judge can hardly read, told without its parser: empty, or cut at
    # max_tokens (finish_reason "length").
    empty: int = 0
    cut: int = 0
    # The file's last line, when it is cut off (no newline and not JSON: an executor stopped
    # while writing); not counted in `unreadable`.
    cut_last_line: int | None = None
    # When nothing was stored: the custom_ids the file's lines name (answers and error lines)
    # and how many of them were planned with this cache; none (a wrong --cache) is an input
    # error whatever else the file holds (a cut-off, malformed or error line made it exit 3).
    ids: int = 0
    ids_planned: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


class PlanGivenAsAnswers(ValueError):
    """The file given to `ingest` holds requests (a plan), not the executor's answers."""


# Keys of a batch *request* line (OpenAI: method, url, body; Anthropic: params), which an
# output line never carries without a response or an error.
_REQUEST_KEYS = ("method", "url", "body", "params")
_MAX_LISTED = 10


def is_request_line(d: Any) -> bool:
    """True for a line of a plan (a batch input file) rather than of a batch's output."""
    return (isinstance(d, dict) and "response" not in d and "error" not in d
            and any(k in d for k in _REQUEST_KEYS))


def _answer_digest(line: Any) -> bytes:
    """What two lines of one custom_id are compared by: the answer's choices (ids, timestamps
    and usage may differ between two runs of one request), or an error line's kind and
    message."""
    what: Any = (["choices", line.body.get("choices")] if line.body is not None
                 else ["error", line.kind, line.message])
    raw = json.dumps(what, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(raw.encode(), digest_size=8).digest()


def read_plan_keys(path: str | Path) -> list[str]:
    keys = []
    with open(path, encoding="utf-8-sig") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                keys.append(json.loads(raw)["custom_id"])
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}:{n}: not a plan line (no custom_id)") from None
    return keys


def ingest(results: str | Path, cache: Cache, *, plan: str | Path | None = None,
           max_response_chars: int | None = None, chunk: int = 5000,
           on_lines: Callable[[int], None] | None = None) -> IngestReport:
    """Store the answers of an OpenAI-batch-format output file (`vllm run-batch`, a batch
    API's output and error files, any executor writing that format) in `cache`.

    Of lines repeating a custom_id the first is kept (the report says which lines, and
    whether their answers differ), except that an answer replaces an error line or a line
    whose body is no chat completion (malformed). A file whose every line is a request (the
    plan itself) raises `PlanGivenAsAnswers` and stores nothing. `on_lines(n)`: n more lines
    read (a progress bar)."""
    from judgeaudit.llm.batch_openai import read_output_line
    from judgeaudit.llm.client import clean_response, default_max_response_chars
    from judgeaudit.llm.providers.openai import parse_chat_completion

    cap = max_response_chars or default_max_response_chars()
    rep = IngestReport()
    errors: Counter[str] = Counter()
    answered: set[str] = set()
    # custom_id -> (line kept, its answer's digest, its error kind: None for an answer)
    seen: dict[str, tuple[int, bytes, str | None]] = {}

    erred: list[tuple[int, str, str]] = []  # (line, message, custom_id) of each error

    def error_at(n: int, message: str, key: str) -> None:
        # masked as a live call's error is (`redact`): an executor's error line quoting
        # the key the server refused ("Incorrect API key provided: sk-...")
        erred.append((n, redact(message), key))

    def flush(batch: list[tuple[str, dict[str, Any], int]]) -> None:
        meta = cache.planned([k for k, _, _ in batch])
        rows = []
        for key, body, n in batch:
            m = meta.get(key)
            if m is None:
                rep.unknown += 1
                rep.first_unknown = rep.first_unknown or (n, key)
                continue
            provider, model, info = m
            try:
                choices, prefill = read_parse_info(info)
                resp = parse_chat_completion(body, choices, prefill)
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                errors["malformed"] += 1
                error_at(n, f"{key[:12]}: not a chat completion", key)
                continue
            rows.append((key, provider, model, clean_response(resp, cap)))
            _count_usage(rep, resp, read_price(info), read_rate(info) or "",
                         _has_usage(body))
            if simulated(provider):
                rep.simulated[provider] = rep.simulated.get(provider, 0) + 1
            answered.add(key)
        rep.replaced += len(cache.has([r[0] for r in rows]))
        cache.put_many(rows)
        if cache.write_error is not None:  # the cache is this command's output
            stored = rep.ingested
            raise CacheError(f"{cache.write_error}; {stored} answer"
                             f"{'' if stored == 1 else 's'} "
                             f"{'was' if stored == 1 else 'were'} stored before")
        rep.ingested += len(rows)

    pending: list[tuple[str, dict[str, Any], int]] = []
    told = n = 0
    # utf-8-sig: a byte order mark (a Windows editor's save) is no part of line 1, which read
    # as unreadable and its request was planned, and paid for, again
    with open(results, encoding="utf-8-sig") as f:
        for n, raw in enumerate(f, 1):
            if on_lines is not None and n - told >= 1000:
                on_lines(n - told)
                told = n
            if not raw.strip():
                continue
            rep.lines += 1
            try:
                d = json.loads(raw)
                if is_request_line(d):
                    rep.requests += 1
                    if len(rep.request_lines) < _MAX_LISTED:
                        rep.request_lines.append(n)
                    continue
                line = read_output_line(d)
            except ValueError:
                if not raw.endswith("\n") and raw.strip().startswith("{"):
                    # the last line, with no newline and cut mid-object: named on its own
                    # (an executor stopped while writing), not lumped with unreadable lines
                    rep.cut_last_line = n
                    continue
                rep.unreadable += 1
                if len(rep.unreadable_lines) < _MAX_LISTED:
                    rep.unreadable_lines.append(n)
                continue
            if line.body is not None and not _is_completion(line.body):
                # no chat completion ({"foo": "bar"}): an error line, so that a later
                # answer to the same custom_id replaces it instead of being dropped as a
                # repeat (the request was planned, and paid for, again)
                line = type(line)(line.key, kind="malformed", message="not a chat completion")
            digest = _answer_digest(line)
            kind = None if line.body is not None else line.kind or "other"
            if line.key in seen and seen[line.key][2] is not None and kind is None:
                kept, _, kept_kind = seen[line.key]  # an answer to what erred before
                errors[kept_kind] -= 1
                rep.errors_answered += 1
                rep.first_answered = rep.first_answered or (line.key, kept, n)
                erred[:] = [e for e in erred if e[0] != kept]
                del seen[line.key]
            if line.key in seen:
                kept, kept_digest, _ = seen[line.key]
                rep.duplicates += 1
                differ = digest != kept_digest
                rep.duplicates_differing += differ
                if len(rep.duplicate_lines) < _MAX_LISTED:
                    rep.duplicate_lines.append((line.key, kept, n, differ))
                continue
            seen[line.key] = (n, digest, kind)
            if kind is not None:
                errors[kind] += 1
                error_at(n, f"{line.key[:12]}: {line.message}", line.key)
                continue
            pending.append((line.key, line.body, n))
            if len(pending) >= chunk:
                flush(pending)
                pending = []
    if on_lines is not None and n > told:
        on_lines(n - told)
    if rep.requests and rep.requests == rep.lines:  # nothing was stored: no line is an answer
        raise PlanGivenAsAnswers(
            f"{results} is a plan of requests, not answers (its lines have "
            f"{', '.join(k for k in _REQUEST_KEYS if k != 'params')} and no response); give "
            "the provider's output file (what vllm run-batch or the batch API wrote)")
    if pending:
        flush(pending)
    rep.errors = {k: v for k, v in sorted(errors.items()) if v}
    keep_refusals(rep, cache, seen, erred)
    if erred:  # the first in the file (answers are parsed a chunk at a time, later)
        rep.first_error_line, rep.first_error, _ = min(erred)
    rep.ids = len(seen)
    if rep.ingested == 0:  # was any of it for this cache? (a stored answer says so)
        rep.ids_planned = len(cache.planned(list(seen)))
    if plan is not None:
        keys = read_plan_keys(plan)
        planned = set(keys)
        rep.plan_lines = len(planned)
        missing = list(planned - answered)  # those answered by an earlier ingest count
        rep.unanswered = (len(missing) - len(cache.has(missing))
                          - sum(cache.refusal(k) is not None for k in missing))
        rep.not_in_plan = len(seen.keys() - planned)
    return rep


def _is_completion(body: Any) -> bool:
    """Whether an answer line's body reads as a chat completion (`parse_chat_completion`,
    with no choices to read probabilities of: those come with the planned request)."""
    from judgeaudit.llm.providers.openai import parse_chat_completion

    try:
        parse_chat_completion(body, ())
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return False
    return True


def _has_usage(body: Any) -> bool:
    """Whether an answer's body says its tokens (`usage` with prompt_tokens or
    completion_tokens): a null or missing usage reads as 0 tokens, which is not what it
    used."""
    usage = body.get("usage") if isinstance(body, dict) else None
    return isinstance(usage, dict) and any(
        isinstance(usage.get(k), int) for k in ("prompt_tokens", "completion_tokens"))


def _count_usage(rep: IngestReport, resp: Any, price: tuple[float, float] | None, rate: str,
                 has_usage: bool) -> None:
    """Add a stored answer's tokens (and cost at `price`, by `rate`) and whether it is empty
    or cut at max_tokens to `rep`; an answer with no usage is counted apart (`no_usage`)."""
    pt, ct = resp.usage.prompt_tokens, resp.usage.completion_tokens
    if not has_usage:
        rep.no_usage += 1
    elif price is None:
        rep.unpriced += 1
    else:
        cost = (pt * price[0] + ct * price[1]) / 1e6
        rep.cost_usd = (rep.cost_usd or 0.0) + cost
        rep.cost_by_rate[rate] = rep.cost_by_rate.get(rate, 0.0) + cost
    if has_usage:
        rep.prompt_tokens += pt
        rep.completion_tokens += ct
    raw = resp.raw if isinstance(resp.raw, dict) else {}
    if raw.get("finish_reason") == "length":
        rep.cut += 1
    elif not (resp.text or "").strip():
        rep.empty += 1


# Error kinds ingest keeps as the request's outcome: the server refused this request for
# itself (its prompt is over the model's context), so asking again cannot help.
KEPT_REFUSALS = frozenset({"too_long"})


def keep_refusals(rep: IngestReport, cache: Cache,
                  seen: dict[str, tuple[int, bytes, str | None]],
                  erred: list[tuple[int, str, str]]) -> None:
    """Store the too-long refusals among the error lines (`KEPT_REFUSALS`) of requests planned
    with this cache and not answered, so the next run fails them as a live call failed
    (`Client._call`) and plans them no more: 17 pairs over the judge's context were planned
    again every cycle, and the ranking never left round 1."""
    kept = {key: (n, kind) for key, (n, _, kind) in seen.items() if kind in KEPT_REFUSALS}
    if not kept:
        return
    message = {key: msg.removeprefix(f"{key[:12]}: ") for _, msg, key in erred}
    keys = list(kept)
    planned = cache.planned(keys)
    answered = cache.has(keys)
    rows = [(k, str(kept[k][1]), message.get(k, "too long for the model's context"))
            for k in keys if k in planned and k not in answered]
    cache.put_refusals(rows)
    if cache.write_error is None:
        rep.refusals_kept = len(rows)


__all__ = ["FREE", "FREE_WORDS", "PLANNED", "RATE_WORDS", "IngestReport", "PlanGivenAsAnswers",
           "PlannedStop", "Planner", "combine_rates", "cost_at", "ingest", "is_planned",
           "is_request_line", "plan_body", "price_basis", "read_plan_keys", "read_rate",
           "simulated", "write_jsonl"]
