"""The local judge without the [local] extra: said before any call, as a usage error.

A tester's `pip install judgeaudit` (no extras) then `judgeaudit audit --judge local` printed
a 40-frame traceback ending "No module named 'torch'" and "a bug in judgeaudit; please report
it" (exit 3), and the API raised a bare ModuleNotFoundError. Each test that hides modules
runs a fresh interpreter in which they are not installed as far as it can tell: every finder
on sys.meta_path finds nothing for them, as with a missing install (`import torch` raises
ModuleNotFoundError, `importlib.util.find_spec` gives None). No model is loaded.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from judgeaudit.llm import local_model as lm

ROOT = Path(__file__).resolve().parents[2]
WANTED = "the local judge needs the [local] extra: pip install 'judgeaudit[local]'"
# Everything the [local] extra brings that the local judge imports.
EXTRA = ("torch", "transformers", "gguf", "accelerate", "tokenizers", "ik_llama_cpp",
         "xllamacpp", *lm.PRESETS["qwen-1.5b"].modules, *lm.PRESETS["qwen-0.5b"].modules)
_HIDE = """import sys
class _Hiding:
    hidden = set({hidden!r})
    def __init__(self, inner):
        self.inner = inner
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in self.hidden:
            return None
        return self.inner.find_spec(name, path, target)
    def invalidate_caches(self):
        getattr(self.inner, 'invalidate_caches', lambda: None)()
sys.meta_path[:] = [_Hiding(f) for f in sys.meta_path]
"""


def _run_without(hidden: tuple[str, ...], code: str,
                 tmp_path: Path) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter where the `hidden` modules are not installed, with an
    empty model cache and call cache."""
    env = {**os.environ, "JUDGEAUDIT_MODEL_CACHE": str(tmp_path / "models"),
           "JUDGEAUDIT_CACHE": str(tmp_path / "calls.sqlite"), "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT),
                                          str(ROOT / "tests" / "llm")])}
    return subprocess.run([sys.executable, "-c", _HIDE.format(hidden=list(hidden)) + code],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def _cli(args: list[str]) -> str:
    return ("from judgeaudit.cli.main import main\n"
            f"sys.argv = ['judgeaudit', *{args!r}]\nmain()\n")


@pytest.mark.parametrize("judge", ["local", "local:qwen-0.5b"])
def test_the_cli_says_the_missing_extra_with_exit_2_before_any_call(tmp_path, judge):
    out = tmp_path / "run"
    proc = _run_without(EXTRA, _cli(["audit", "--judge", judge, "--data", "builtin:facts",
                                     "--n", "30", "--out", str(out)]), tmp_path)
    err = proc.stderr
    assert proc.returncode == 2, err
    assert f"{WANTED} (not installed: torch, transformers" in err, err
    assert "Traceback" not in err and "a bug in judgeaudit" not in err, err
    assert "backend=transformers" in err  # what needs them (auto: no integer backend)
    # before any call: no run began (no results written), the call cache holds nothing
    assert not (out / "results.json").exists()
    with contextlib.closing(sqlite3.connect(tmp_path / "calls.sqlite")) as con:
        assert con.execute("SELECT COUNT(*) FROM calls").fetchone() == (0,)


def test_an_explicit_integer_backend_names_its_own_missing_package(tmp_path):
    proc = _run_without(EXTRA, _cli(["audit", "--judge", "local?backend=ik", "--data",
                                     "builtin:facts", "--n", "30", "--out",
                                     str(tmp_path / "run")]), tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"{WANTED} (not installed: ik_llama_cpp, tokenizers" in proc.stderr
    assert "(all 22 part packages of model qwen-1.5b)" in proc.stderr  # no GGUF kept yet


def test_the_api_raises_a_clean_error_with_the_same_text(tmp_path):
    """judgeaudit.audit: a ValueError with the CLI's text; the provider itself raises a
    MissingExtraError, an ImportError naming the module and a ValueError, before its first
    call the cache does not answer (`prepare`: it is made without the backend, so cached
    verdicts replay, tests/llm/test_local_replay.py); set_threads (the transformers
    backend's first torch import) the same, not a bare ModuleNotFoundError."""
    code = """
import asyncio, json, judgeaudit
from judgeaudit.llm.local_model import MissingExtraError, set_threads
from judgeaudit.llm.providers.local import LocalProvider
out = {}
try:
    judgeaudit.audit(judge="local", data="builtin:facts", n=30)
except Exception as exc:
    out["api"] = [isinstance(exc, ValueError), str(exc)]
for name, make in (("ik", lambda: asyncio.run(
                        LocalProvider("qwen-1.5b", {"backend": "ik"}).prepare())),
                   ("threads", lambda: set_threads(1))):
    try:
        make()
    except MissingExtraError as exc:
        out[name] = [isinstance(exc, ImportError), isinstance(exc, ValueError), exc.name,
                     str(exc)]
print(json.dumps(out))
"""
    proc = _run_without(EXTRA, code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    is_value_error, text = got["api"]
    assert is_value_error and f"{WANTED} (not installed: torch, transformers" in text
    assert got["ik"][:3] == [True, True, "ik_llama_cpp"] and got["ik"][3].startswith(WANTED)
    assert got["threads"] == [True, True, "torch", f"{WANTED} (not installed: torch; needed "
                                                   "by backend=transformers)"]


def test_what_the_model_cache_holds_is_not_required_again(monkeypatch, tmp_path):
    """An assembled GGUF in the model cache needs no part packages (a cache copied from
    another machine); the transformers backend still needs gguf to convert it."""
    monkeypatch.setenv("JUDGEAUDIT_MODEL_CACHE", str(tmp_path))
    src = lm.resolve("qwen-0.5b")
    parts = list(lm.PRESETS["qwen-0.5b"].modules)
    assert lm.required_modules("ik", src) == ["ik_llama_cpp", "tokenizers", *parts]
    assert lm.required_modules("transformers", src) == ["torch", "transformers", "gguf", *parts]
    lm.gguf_path(src.preset).write_bytes(b"GGUF")  # type: ignore[arg-type]
    assert lm.required_modules("ik", src) == ["ik_llama_cpp", "tokenizers"]
    assert lm.required_modules("llamacpp", src) == ["xllamacpp", "tokenizers"]
    assert lm.required_modules("transformers", src) == ["torch", "transformers", "gguf"]
    monkeypatch.setitem(sys.modules, parts[2], None)  # find_spec: not there
    assert lm.missing_modules("ik", src) == []
    lm.gguf_path(src.preset).unlink()  # type: ignore[arg-type]
    msg = str(lm.missing_extra(lm.missing_modules("ik", src), "ik"))
    assert f"not installed: {parts[2]} (1 of the 6 part packages of model qwen-0.5b)" in msg


def test_the_integer_backend_path_runs_without_torch_or_transformers(tmp_path):
    """auto picks ik on most x86 CPUs, and the README says it needs no torch: the provider,
    the GGUF tokenizer and chat template, and a verdict through the ik engine (its C library
    stood in by tests/llm/test_ik_backend.FakeLib) all run with torch and transformers
    absent."""
    code = (
        "from tests.llm.test_ik_backend import FakeLib, "
        "test_choice_probabilities_are_the_softmax_over_the_choice_logits as t\n"
        "from judgeaudit.llm.providers.local import LocalProvider\n"
        "import judgeaudit.llm.llamacpp_backend, judgeaudit.llm.ik_backend, json\n"
        "p = LocalProvider('qwen-1.5b', {'backend': 'ik'})\n"
        "t(FakeLib())\n"
        "print(json.dumps({'backend': p.backend, 'torch': 'torch' in sys.modules, "
        "'transformers': 'transformers' in sys.modules}))\n")
    proc = _run_without(("torch", "transformers"), code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"backend": "ik", "torch": False,
                                                         "transformers": False}
