"""A local judge's cached verdicts replay on a machine without its backend.

ac3d160 checked the [local] extra when the judge was made, so a run whose every answer was
in the call cache (planned with --plan-only, answered elsewhere, ingested) was refused with
exit 2 where it had replayed ("0 made, 6 from cache"). The check is now made at the first
call the cache does not answer: still before that call computes anything, still a usage
error (exit 2) with the same message. Where pyproject.toml's markers leave a backend's
package out of the [local] extra, the message says so and names what works instead of
advising an install that cannot bring it.

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
import tomllib
from pathlib import Path

import pytest
from test_local_missing_extra import EXTRA, WANTED, _cli, _run_without

from judgeaudit.llm import Cache, Client
from judgeaudit.llm import local_model as lm
from judgeaudit.llm.base import Message, Request, Response
from judgeaudit.llm.local_model import MissingExtraError
from judgeaudit.llm.providers.local import LocalProvider

ROOT = Path(__file__).resolve().parents[2]
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


def test_a_missing_extra_found_at_a_miss_leaves_the_run_folder_as_it_was(cached_run):
    """The run had begun (its folder said "did not finish; run the same command again to
    resume", which cannot help): the folder's earlier results are put back, byte for byte,
    and a folder that had none has none."""
    judge, d = cached_run
    (d / "kept").mkdir(exist_ok=True)
    (d / "kept" / "results.json").write_text('{"earlier": true}\n', encoding="utf-8")
    for out in ("kept", "fresh"):
        proc = _run_without(EXTRA, _cli([*AUDIT, "--judge", judge, "--n", "4", "--out", out]),
                            d)
        assert proc.returncode == 2, proc.stderr
    assert (d / "kept" / "results.json").read_text(encoding="utf-8") == '{"earlier": true}\n'
    assert sorted(p.name for p in (d / "kept").iterdir()) == ["results.json"]
    assert not (d / "fresh" / "results.json").exists()


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


@pytest.mark.parametrize(("env", "instead"), [
    (("linux", "aarch64", (3, 12)), "backend=llamacpp or backend=transformers"),
    (("linux", "x86_64", (3, 14)), "backend=llamacpp or backend=transformers"),
    (("darwin", "arm64", (3, 12)), "backend=transformers"),
])
def test_a_backend_the_extra_leaves_out_here_is_named_with_what_works(monkeypatch, env,
                                                                      instead):
    """`pip install 'judgeaudit[local]'` cannot bring ik-llama-cpp-python to ARM or to
    Python 3.14, nor xllamacpp to macOS: the message says the backend cannot be installed
    on this platform and what works instead, not the install advice."""
    monkeypatch.setattr(lm, "marker_env", lambda: env)
    monkeypatch.setattr(lm, "cpu_flags", lambda: {"asimd"} if env[1] != "x86_64" else {
        "avx2", "fma", "f16c", "bmi2"})
    monkeypatch.setattr(lm.platform, "machine", lambda: env[1])
    backend = "llamacpp" if env[0] == "darwin" else "ik"
    msg = str(lm.missing_extra([lm._INTEGER_PACKAGES[backend][0], "tokenizers"], backend,
                               "requested"))
    plat = {"linux": "Linux", "darwin": "macOS"}[env[0]]
    assert msg.startswith(f"the local judge's backend={backend} cannot be installed on this "
                          f"platform ({plat} {env[1]}, Python {env[2][0]}.{env[2][1]}): "), msg
    assert f"use {instead} with the [local] extra: {lm.INSTALL_HINT}" in msg, msg
    assert WANTED not in msg
    where = {"ik": "ik-llama-cpp-python only on Linux x86_64 with Python < 3.14",
             "llamacpp": "xllamacpp only on Linux x86_64 or aarch64"}[backend]
    assert f"the [local] extra installs {where}" in msg
    # where the extra does install it, the advice stands
    monkeypatch.setattr(lm, "marker_env", lambda: ("linux", "x86_64", (3, 12)))
    assert str(lm.missing_extra(["ik_llama_cpp"], "ik")).startswith(WANTED)


def test_where_the_extra_installs_each_backend_is_what_pyproject_says():
    """`extra_installs` against the environment markers of pyproject.toml's [local] extra,
    evaluated by pip's own marker logic (packaging) over platforms, machines and Pythons;
    and no other package of the extra has a marker."""
    markers = pytest.importorskip("packaging.markers")
    requirements = pytest.importorskip("packaging.requirements")
    local = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]["local"]
    reqs = {r.name: r for r in map(requirements.Requirement, local)}
    by_package = {pkg: b for b, (_, pkg, _) in lm._INTEGER_PACKAGES.items()}
    assert {n for n, r in reqs.items() if r.marker is not None} == set(by_package)
    for name, backend in by_package.items():
        marker: markers.Marker = reqs[name].marker
        for plat in ("linux", "darwin", "win32"):
            for machine in ("x86_64", "aarch64", "arm64", "AMD64"):
                for minor in range(10, 16):
                    env = {"sys_platform": plat, "platform_machine": machine,
                           "python_version": f"3.{minor}", "extra": "local"}
                    assert lm.extra_installs(backend, (plat, machine, (3, minor))) == \
                        marker.evaluate(env), (name, env)
