"""scoring-bias --repeats N: what the baseline's repeats cost and what they measure.

A deterministic judge (the embedded local judge reads logits: the same prompt, the same
score) was asked every repeat, each a fresh call (the repeat is part of the cache key), and
its repeat noise came out as a measured 0 with a Wilson interval [0, 0.28] on 10 items, its
mitigation table comparing options against a copy of repeat 0. An API judge at temperature 0
is asked every repeat on purpose (hosted APIs are not guaranteed to answer alike), but
nothing said what the repeats add to the bill before they were sent."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path
from typing import ClassVar

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli.scoring_cmd import register
from judgeaudit.llm.providers.sim import SimProvider
from judgeaudit.llm.registry import register as register_provider

app = typer.Typer()


@app.callback()
def _root() -> None:
    """Group, so the command keeps its name."""


register(app)
RUN = CliRunner()
N = 12  # items; perturbations: baseline + order_desc


@register_provider
class _Deterministic(SimProvider):
    """The sim judge without score noise, marked deterministic as the local provider is: it
    answers a repeated prompt exactly as it answered first (a stand-in for the embedded
    model, which the tests do not load)."""

    name: ClassVar[str] = "test-scoring-deterministic"
    deterministic: ClassVar[bool] = True


def _invoke(*args: str):
    return RUN.invoke(app, ["scoring-bias", "--data", "builtin:graded", "--limit", str(N),
                            "--perturbations", "order_desc", *args], catch_exceptions=False)


def _row_cells(output: str, name: str, next_name: str) -> list[str]:
    """The cells of the table row of template `name` (up to the row of `next_name`), each
    cell's wrapped lines joined: a narrow terminal wraps "0 (by construction)"."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"│ {name}"))
    parts: list[list[str]] = []
    for line in lines[start:]:
        if not line.startswith("│") or (parts and line.startswith(f"│ {next_name}")):
            break
        parts.append([c.strip() for c in line.strip("│").split("│")])
    return [" ".join(c for c in col if c) for col in zip(*parts, strict=True)]


def test_a_deterministic_judge_is_scored_once_and_its_repeat_noise_is_zero_by_construction(
        tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = _invoke("--judge", "test-scoring-deterministic:default?score_noise=0&quality=6",
                "--repeats", "3", "--out", str(out), "--no-cache")
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    # one baseline scoring and one order_desc scoring per item: no repeat computed
    assert res["calls"]["made"] == 2 * N and res["n_calls_planned"] == 2 * N
    assert res["repeats"] == 1 and res["repeats_asked"] == 3
    assert list(res["scores"]["baseline"]) == ["0"]
    noise = res["repeat_noise"]
    assert noise["by_construction"] is True and "0 by construction" in noise["note"]
    for k in ("fp", "mad"):  # no interval pretending data
        assert noise[k] == {"value": 0.0, "ci95": None, "n": N, "method": "by construction"}
    base = res["perturbations"]["baseline"]
    assert base["shift"]["method"] == "by construction"
    assert "0 by construction" in base["compared_with"]
    mit = res["mitigation"]
    assert mit["available"] is False and "deterministic" in mit["note"]
    assert res["repeat_calls"] is None  # free: nothing to announce
    cells = _row_cells(r.output, "baseline", "order_desc")
    assert cells[1:4] == ["0 (by construction)"] * 3, cells  # FP, MAD, shift: not "0.000"
    text = " ".join(r.output.split())
    assert "repeat noise 0 by construction" in text and "(--repeats 3 asked)" in text
    # the other template is still measured against the one baseline scoring
    assert res["perturbations"]["order_desc"]["fp"]["ci95"] is not None


def test_a_non_deterministic_sim_judge_is_still_asked_every_repeat(tmp_path: Path) -> None:
    """The sim judge draws fresh noise per repeat: its repeats measure something."""
    out = tmp_path / "o"
    r = _invoke("--judge", "sim?quality=6", "--repeats", "3", "--out", str(out), "--no-cache")
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert res["calls"]["made"] == 4 * N and res["repeats"] == 3
    assert res["repeat_noise"]["fp"]["ci95"] is not None
    assert "by_construction" not in res["repeat_noise"] and res["mitigation"]["available"]
    assert res["repeat_calls"] is None  # sim calls cost nothing


class _AtEmit(logging.Handler):
    """Records each warning with how many requests the server had seen when it was logged."""

    def __init__(self, server) -> None:
        super().__init__(logging.WARNING)
        self.server = server
        self.seen: list[tuple[str, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.getMessage(), len(self.server.requests)))


@pytest.fixture
def at_emit():
    handlers: list[_AtEmit] = []
    logger = logging.getLogger("judgeaudit.scoring")

    def attach(server) -> _AtEmit:
        h = _AtEmit(server)
        logger.addHandler(h)
        handlers.append(h)
        return h

    yield attach
    for h in handlers:
        logger.removeHandler(h)


PRICE_IN, PRICE_OUT = 2.5, 10.0


def test_an_api_judge_at_temperature_0_is_asked_every_repeat_after_saying_what_they_cost(
        tmp_path: Path, fake_server, at_emit) -> None:
    """A loopback server counting requests: every repeat is sent (the same body again), and
    before the first one the run says how many paid calls the repeats add and their
    estimated cost, which matches the bodies the server then received."""
    srv = fake_server(answer=lambda p: "3", logprobs=False)
    log = at_emit(srv)
    spec = (f"openai:m?base_url={srv.openai_url}&api_key=k&temperature=0"
            f"&price_in={PRICE_IN}&price_out={PRICE_OUT}")
    cache = tmp_path / "c.sqlite"
    r = _invoke("--judge", spec, "--repeats", "3", "--out", str(tmp_path / "a"),
                "--cache", str(cache))
    assert r.exit_code == 0, r.output
    bodies = [q.body for q in srv.requests]
    assert len(bodies) == 4 * N  # 3 baseline scorings + order_desc, each sent
    assert {b["temperature"] for b in bodies} == {0.0}
    assert len({json.dumps(b, sort_keys=True) for b in bodies}) == 2 * N  # repeats: same body
    res = json.loads((tmp_path / "a" / "results.json").read_text())
    rc = res["repeat_calls"]
    assert rc["extra_calls"] == 2 * N and rc["cached"] == 0 and rc["of_planned"] == 4 * N
    # the estimate, recomputed from what the server received for the repeats: prompt
    # characters / 4 at price_in, max_tokens at price_out
    sent = Counter(json.dumps(b, sort_keys=True) for b in bodies)
    per = [k for k, c in sent.items() if c == 3]  # each baseline body: sent 3 times
    assert len(per) == N
    want = 2 * sum((sum(len(m["content"]) for m in json.loads(k)["messages"]) / 4 * PRICE_IN
                    + json.loads(k)["max_tokens"] * PRICE_OUT) / 1e6 for k in per)
    assert rc["cost_usd_estimate"] == pytest.approx(want)
    assert rc["price"] == "the judge spec's prices"
    (msg, sent_before), = [(m, n) for m, n in log.seen if "--repeats 3" in m]
    assert sent_before == 0  # said before any call was sent
    assert f"adds {2 * N} paid calls" in msg and f"${want:,.4f}" in msg
    assert "api_key=***" in msg  # the public spec: no key
    # again from the cache: the repeats add nothing to pay, and nothing is said
    r = _invoke("--judge", spec, "--repeats", "3", "--out", str(tmp_path / "b"),
                "--cache", str(cache))
    assert r.exit_code == 0 and len(srv.requests) == 4 * N
    assert json.loads((tmp_path / "b" / "results.json").read_text())["repeat_calls"][
        "extra_calls"] == 0
    assert len([m for m, _ in log.seen if "--repeats 3" in m]) == 1


def test_a_free_loopback_server_gets_no_cost_message(tmp_path: Path, fake_server,
                                                      at_emit) -> None:
    """Not billed (this machine's server) and no price: the repeats are sent, unannounced."""
    srv = fake_server(answer=lambda p: "3", logprobs=False)
    log = at_emit(srv)
    r = _invoke("--judge", f"openai:m?base_url={srv.openai_url}&api_key=k", "--repeats", "2",
                "--out", str(tmp_path / "a"), "--no-cache")
    assert r.exit_code == 0, r.output
    assert len(srv.requests) == 3 * N and log.seen == []
    assert json.loads((tmp_path / "a" / "results.json").read_text())["repeat_calls"] is None
