"""A local judge's cached verdicts replay on a machine without its backend.

ac3d160 checked the [local] extra when the judge was made, so a run whose every answer was
in the call cache (planned with --plan-only, answered elsewhere, ingested) was refused with
exit 2 where it had replayed ("0 made, 6 from cache"). The check is now made at the first
call the cache does not answer: still before that call computes anything, still a usage
error (exit 2) with the same message.

The CLI runs in a fresh interpreter where the whole [local] extra is not installed as far as
it can tell (`test_local_missing_extra._run_without`), so nothing can be computed. No model
is loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from test_local_missing_extra import EXTRA, WANTED, _cli, _run_without

from judgeaudit.llm import Cache, Client
from judgeaudit.llm.base import Message, Request, Response
from judgeaudit.llm.local_model import MissingExtraError
from judgeaudit.llm.providers.local import LocalProvider

AUDIT = ["audit", "--probes", "position", "--data", "builtin:facts"]


def _answer_all(plan: Path, out: Path) -> int:
    """A batch output answering "A" to every request of `plan`, as vllm run-batch writes it
    (what the reviewer's repro ingested); the number of requests."""
    lines = plan.read_text(encoding="utf-8").splitlines()
    with out.open("w", encoding="utf-8") as f:
        for i, line in enumerate(lines):
            body = {"id": f"c{i}", "object": "chat.completion", "model": "m",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 1,
                              "total_tokens": 101}}
            f.write(json.dumps({"id": f"b{i}", "custom_id": json.loads(line)["custom_id"],
                                "response": {"status_code": 200, "body": body},
                                "error": None}) + "\n")
    return len(lines)


def _rows(cache: Path) -> int:
    with contextlib.closing(sqlite3.connect(cache)) as con:
        return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]


@pytest.fixture(scope="module", params=["local?backend=ik", "local"])
def cached_run(request, tmp_path_factory) -> tuple[str, Path]:
    """(judge, folder): a position audit of 3 items planned, answered and ingested, all on
    a machine without the [local] extra (its default call cache, calls.sqlite, holds the
    6 answers)."""
    judge, d = request.param, tmp_path_factory.mktemp("replay")
    plan = _run_without(EXTRA, "from judgeaudit.cli.main import main\nsys.argv = ["
                        f"'judgeaudit', '--plan-only', 'plan.jsonl', *{AUDIT!r}, '--judge', "
                        f"{judge!r}, '--n', '3', '--out', 'planned']\nmain()\n", d)
    assert plan.returncode == 0, plan.stderr  # planning needs no backend either
    assert _answer_all(d / "plan.jsonl", d / "answers.jsonl") == 6
    ingest = _run_without(EXTRA, _cli(["ingest", "answers.jsonl", "--plan", "plan.jsonl"]), d)
    assert ingest.returncode == 0, ingest.stderr
    assert _rows(d / "calls.sqlite") == 6
    return judge, d


def test_a_fully_cached_local_run_replays_without_the_backend(cached_run):
    judge, d = cached_run
    proc = _run_without(EXTRA, _cli([*AUDIT, "--judge", judge, "--n", "3", "--out", "run"]), d)
    assert proc.returncode == 0, proc.stderr
    assert WANTED not in proc.stderr and "Traceback" not in proc.stderr
    doc = json.loads((d / "run" / "results.json").read_text(encoding="utf-8"))
    assert (doc["calls"]["made"], doc["calls"]["cached"], doc["calls"]["failed"]) == (0, 6, 0)
    assert doc["probes"]["position"]["n"] == 3
    assert _rows(d / "calls.sqlite") == 6


def test_the_first_uncached_call_says_the_missing_extra_before_anything_is_computed(
        cached_run):
    """One more item than was answered: its calls are the first the cache cannot answer,
    and there the run stops with the usage error (exit 2), the model never loaded (it
    could not be: nothing of the extra is importable) and nothing stored."""
    judge, d = cached_run
    proc = _run_without(EXTRA, _cli([*AUDIT, "--judge", judge, "--n", "4", "--out", "more"]), d)
    assert proc.returncode == 2, proc.stderr
    first = "ik_llama_cpp, tokenizers" if "backend=ik" in judge else "torch, transformers"
    assert f"{WANTED} (not installed: {first}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "a bug in judgeaudit" not in proc.stderr
    assert _rows(d / "calls.sqlite") == 6


def test_the_provider_answers_from_the_cache_and_refuses_at_a_miss(monkeypatch, tmp_path):
    """In process, through a real Client and a real SQLite cache: a local judge without
    its backend is made; a cached request is answered; the first uncached one raises the
    MissingExtraError (ImportError naming the module, ValueError) before the model loads."""
    monkeypatch.setenv("JUDGEAUDIT_MODEL_CACHE", str(tmp_path / "models"))
    monkeypatch.setitem(sys.modules, "ik_llama_cpp", None)
    provider = LocalProvider("qwen-1.5b", {"backend": "ik"})  # raised here before
    cache = Cache(tmp_path / "calls.sqlite")
    client = Client(provider, cache)
    cached, missed = (Request(messages=(Message("user", q),), choices=("A", "B"))
                      for q in ("Which is better?", "And this one?"))
    cache.put(client.key(cached), provider.name, provider.model, Response(text="A"))

    async def ask(req: Request) -> Response:
        return await client.call(req)

    assert asyncio.run(ask(cached)).text == "A"
    with pytest.raises(MissingExtraError) as err:
        asyncio.run(ask(missed))
    assert isinstance(err.value, ValueError) and err.value.name == "ik_llama_cpp"
    assert str(err.value).startswith(f"{WANTED} (not installed: ik_llama_cpp")
    assert provider._lm is None  # nothing loaded, nothing computed
    assert (client.stats.made, client.stats.cached) == (0, 1)
    assert cache.stats().entries == 1
    cache.close()
