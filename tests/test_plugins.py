"""Plugins through entry points: a tiny package, installed for real with pip into a target
directory, adds a provider, a probe, a data loader and an acquisition rule that the CLI and
the registries find by name; a broken plugin is named (distribution, entry point, error)
and the built-ins keep working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PLUGIN = '''\
"""A judgeaudit plugin for the tests: one of each kind."""
from typing import ClassVar

import numpy as np

from judgeaudit.audit.probe import Probe
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.llm.base import Provider, Request, Response


class FirstWins(Provider):
    """Always prefers the response shown first."""

    name: ClassVar[str] = "myplugin"
    deterministic: ClassVar[bool] = True
    known_params: ClassVar[dict[str, str] | None] = {
        "answer": "the letter always answered (default A)"}

    async def generate(self, request: Request) -> Response:
        return Response(text=self.params.get("answer", "A"))


class NothingProbe(Probe):
    name = "myprobe"
    title = "Nothing"
    description = "a plugin probe"
    metric = "none"
    direction = "none"
    default = False

    async def run(self, ctx):
        raise NotImplementedError


def load(name, params):
    n = int(params.get("n", 4))
    return [PairwiseItem(id=f"p{i}", prompt=f"q{i}?", response_1=f"right {i}",
                         response_2=f"wrong {i}", label=1 + i % 2) for i in range(n)]


def myrule(ctx, a, b):
    return np.zeros(len(a))
'''

PYPROJECT = '''\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1"

[tool.setuptools]
py-modules = [{modules}]

{entry_points}
'''

GOOD_EPS = '''\
[project.entry-points."judgeaudit.providers"]
myplugin = "ja_test_plugin:FirstWins"
[project.entry-points."judgeaudit.probes"]
myprobe = "ja_test_plugin:NothingProbe"
[project.entry-points."judgeaudit.data"]
mydata = "ja_test_plugin:load"
[project.entry-points."judgeaudit.acquisition"]
myrule = "ja_test_plugin:myrule"
'''

BROKEN_EPS = '''\
[project.entry-points."judgeaudit.providers"]
brokenjudge = "ja_no_such_module:Judge"
notaprovider = "ja_broken_plugin:NOT_A_CLASS"
openai = "ja_broken_plugin:Shadow"
[project.entry-points."judgeaudit.data"]
brokendata = "ja_broken_plugin:missing_name"
'''

BROKEN = '''\
from judgeaudit.llm.base import Provider

NOT_A_CLASS = 42


class Shadow(Provider):
    name = "openai"

    async def generate(self, request):
        raise NotImplementedError
'''


CRASHY = '''\
"""Plugins that load fine and fail at run time."""
from typing import ClassVar

from judgeaudit.audit.probe import Probe
from judgeaudit.llm.base import Provider, Request, Response


class Crashy(Provider):
    name: ClassVar[str] = "crashy"
    deterministic: ClassVar[bool] = True

    async def generate(self, request: Request) -> Response:
        return {}["missing"]


class CrashProbe(Probe):
    name = "crashprobe"
    title = "Crash"
    description = "a plugin probe that raises"
    metric = "none"
    direction = "none"
    default = False

    async def run(self, ctx):
        raise RuntimeError("probe exploded")


def raises(name, params):
    raise RuntimeError("loader exploded")


def dicts(name, params):
    return [{"id": "a", "prompt": "q", "response_1": "x", "response_2": "y", "label": 1}]


def rule(ctx, a, b):
    return None
'''

CRASHY_EPS = '''\
[project.entry-points."judgeaudit.providers"]
crashy = "ja_crashy_plugin:Crashy"
[project.entry-points."judgeaudit.probes"]
crashprobe = "ja_crashy_plugin:CrashProbe"
[project.entry-points."judgeaudit.data"]
raises = "ja_crashy_plugin:raises"
dicts = "ja_crashy_plugin:dicts"
[project.entry-points."judgeaudit.acquisition"]
topk = "ja_crashy_plugin:rule"
missingattr = "ja_crashy_plugin:no_such_rule"
'''


def _install(tmp: Path, dist: str, modules: dict[str, str], eps: str) -> Path:
    pkg, site = tmp / f"{dist}-src", tmp / f"{dist}-site"
    pkg.mkdir()
    for mod, text in modules.items():
        (pkg / f"{mod}.py").write_text(text)
    names = ", ".join(f'"{m}"' for m in modules)
    (pkg / "pyproject.toml").write_text(PYPROJECT.format(dist=dist, modules=names,
                                                         entry_points=eps))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-index", "--no-build-isolation", "--target", str(site), str(pkg)],
                   check=True, capture_output=True, text=True, timeout=300)
    return site


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("plugins")
    good = _install(tmp, "ja-test-plugin", {"ja_test_plugin": PLUGIN}, GOOD_EPS)
    broken = _install(tmp, "ja-broken-plugin", {"ja_broken_plugin": BROKEN}, BROKEN_EPS)
    crashy = _install(tmp, "ja-crashy-plugin", {"ja_crashy_plugin": CRASHY}, CRASHY_EPS)
    return {"good": good, "broken": broken, "crashy": crashy, "tmp": tmp}


def _run(args: list[str], *paths: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    env["JUDGEAUDIT_CACHE"] = str(cwd / "cache.sqlite")
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _cli(*args: str) -> list[str]:
    return ["-m", "judgeaudit.cli.main", *args]


def test_judges_lists_the_plugin_provider_and_its_parameters(sites):
    r = _run(_cli("judges"), sites["good"], cwd=sites["tmp"])
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    providers = next(line for line in out.splitlines() if line.startswith("providers:"))
    assert "myplugin" in providers and "sim" in providers
    assert "answer: the letter always answered (default A)" in out


def test_evaluate_runs_with_the_plugin_judge_on_the_plugin_data(sites, tmp_path):
    r = _run(_cli("evaluate", "--judge", "myplugin:m", "--data", "mydata:x?n=6", "--no-cache",
                  "--out", str(tmp_path / "ev")), sites["good"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert (doc["judge"], doc["data"], doc["n"]) == ("myplugin:m", "mydata:x?n=6", 6)
    assert doc["calls"]["made"] == 12  # both orders of 6 pairs, by the plugin provider
    assert doc["first_position_rate"]["value"] == 1.0  # it always answers "A"


def test_probe_loader_and_rule_are_found_by_name(sites):
    code = textwrap.dedent('''
        from judgeaudit.audit.probe import get_probe, probe_names
        from judgeaudit.data.registry import available, load
        from judgeaudit.rank.acquisition import get_rule, rule_names
        import numpy as np
        assert get_probe("myprobe").name == "myprobe"
        assert "myprobe" in probe_names() and "myprobe" not in probe_names(default_only=True)
        assert [it.id for it in load("mydata:x?n=3")] == ["p0", "p1", "p2"]
        assert "mydata" in available() and "builtin" in available()
        assert get_rule("myrule")(None, np.arange(3), np.arange(3)).tolist() == [0, 0, 0]
        assert "myrule" in rule_names() and "topk" in rule_names()
        from judgeaudit.rank.acquisition import RULES
        assert "myrule" in RULES  # membership, as the rank commands check a rule
        try:
            get_rule("nope")
        except ValueError as exc:
            assert "myrule" in str(exc) and "topk" in str(exc), exc
        else:
            raise AssertionError("no error")
        print("ok")
    ''')
    r = _run(["-c", code], sites["good"], cwd=sites["tmp"])
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_unknown_provider_lists_the_plugins_too(sites, tmp_path):
    r = _run(_cli("evaluate", "--judge", "simm", "--no-cache", "--out", str(tmp_path / "x")),
             sites["good"], cwd=tmp_path)
    assert r.returncode == 2
    assert "unknown provider 'simm'" in r.stderr
    assert "myplugin" in r.stderr and "openai" in r.stderr


def test_a_broken_plugin_is_named_and_the_built_ins_keep_working(sites, tmp_path):
    r = _run(_cli("judges"), sites["good"], sites["broken"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    err = " ".join(r.stderr.split())  # the console may wrap long lines
    # which distribution, which entry point, which error
    assert "entry point 'brokenjudge' = 'ja_no_such_module:Judge'" in err
    assert "from ja-broken-plugin 0.1" in err or "from ja_broken_plugin 0.1" in err
    assert "ModuleNotFoundError" in err and "ja_no_such_module" in err
    assert "'notaprovider'" in err and "expected a subclass of" in err
    assert "'openai'" in err and "cannot replace it" in err
    providers = next(line for line in r.stdout.splitlines() + r.stderr.splitlines()
                     if line.startswith("providers:"))
    assert "myplugin" in providers and "openai" in providers
    assert "brokenjudge" not in providers

    # the built-in openai provider is still the real one
    code = ("from judgeaudit.llm.registry import provider_class;"
            "print(provider_class('openai').__module__)")
    r = _run(["-c", code], sites["broken"], cwd=tmp_path)
    assert r.stdout.strip() == "judgeaudit.llm.providers.openai", r.stderr

    # asking for the broken one says why it is missing
    r = _run(_cli("evaluate", "--judge", "brokenjudge:m", "--no-cache", "--out",
                  str(tmp_path / "b")), sites["good"], sites["broken"], cwd=tmp_path)
    assert r.returncode == 2
    err = " ".join(r.stderr.split())
    assert "unknown provider 'brokenjudge'" in err and "myplugin" in err
    assert "failed to load: ModuleNotFoundError" in err

    # the simulated judge on built-in data still runs beside the broken plugin
    r = _run(_cli("evaluate", "--judge", "sim", "--data", "builtin:facts?limit=4",
                  "--no-cache", "--out", str(tmp_path / "s")), sites["broken"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_rank_commands_accept_a_plugin_rule_by_membership(sites):
    """`name in RULES` (how the rank commands check --rule) loads the plugins on a miss."""
    code = ("from judgeaudit.rank.acquisition import RULES;"
            "assert 'myrule' in RULES and RULES['myrule'].__module__ == 'ja_test_plugin';"
            "assert 'nope' not in RULES; print(sorted(RULES))")
    r = _run(["-c", code], sites["good"], cwd=sites["tmp"])
    assert r.returncode == 0 and "myrule" in r.stdout, r.stderr


def _said(r: subprocess.CompletedProcess[str]) -> str:
    return " ".join(r.stderr.split())  # the console may wrap long lines


def _named(err: str, group: str, name: str) -> bool:
    return (f"plugin ja-crashy-plugin 0.1 ({group} entry point {name!r}" in err
            or f"plugin ja_crashy_plugin 0.1 ({group} entry point {name!r}" in err)


def test_a_loader_plugin_that_raises_is_named_not_called_a_bug_in_judgeaudit(sites, tmp_path):
    r = _run(_cli("evaluate", "--judge", "sim", "--data", "raises:x", "--no-cache", "--out",
                  str(tmp_path / "e")), sites["crashy"], cwd=tmp_path)
    assert r.returncode == 3
    err = _said(r)
    assert _named(err, "judgeaudit.data", "raises"), err
    assert "failed: RuntimeError: loader exploded" in err
    assert "Traceback" in r.stderr and "bug in judgeaudit" not in err


def test_a_loader_plugin_returning_dicts_exits_2_naming_it_and_what_was_expected(sites,
                                                                                 tmp_path):
    r = _run(_cli("evaluate", "--judge", "sim", "--data", "dicts:x", "--no-cache", "--out",
                  str(tmp_path / "e")), sites["crashy"], cwd=tmp_path)
    assert r.returncode == 2
    err = _said(r)
    assert _named(err, "judgeaudit.data", "dicts"), err
    assert "item 1 is a dict" in err and "must return a list of judgeaudit items" in err
    assert "Traceback" not in r.stderr and "bug in judgeaudit" not in err


def test_a_provider_plugin_that_raises_is_named_and_its_run_recorded_failed(sites, tmp_path):
    out = tmp_path / "e"
    r = _run(_cli("evaluate", "--judge", "crashy:m", "--data", "builtin:facts?limit=4",
                  "--no-cache", "--out", str(out)), sites["crashy"], cwd=tmp_path)
    assert r.returncode == 3
    err = _said(r)
    assert _named(err, "judgeaudit.providers", "crashy"), err
    assert "failed: KeyError: 'missing'" in err and "bug in judgeaudit" not in err
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["status"] == "failed" and not doc["run"].get("unfinished")
    assert "KeyError: 'missing'" in doc["run"]["message"]


def test_a_probe_plugin_that_raises_records_the_failure_not_did_not_finish(sites, tmp_path):
    out = tmp_path / "a"
    args = _cli("audit", "--judge", "sim", "--n", "5", "--probes", "position,crashprobe",
                "--json", "--out", str(out))
    r = _run(args, sites["crashy"], cwd=tmp_path)
    assert r.returncode == 3
    err = _said(r)
    assert _named(err, "judgeaudit.probes", "crashprobe"), err
    assert "failed: RuntimeError: probe exploded" in err and "bug in judgeaudit" not in err
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["status"] == "failed" and not doc["run"].get("unfinished")
    assert "probe exploded" in doc["run"]["message"]
    assert "did not finish" not in json.dumps(doc)
    summary = json.loads(r.stdout)  # --json: one object, this failure
    assert summary["ok"] is False and summary["exit_code"] == 3
    assert "probe exploded" in summary["reason"]
    # the report rebuilt from it says the same
    r = _run(_cli("report", str(out)), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    html = (out / "report.html").read_text()
    assert "probe exploded" in html and "did not finish" not in html


def test_a_rule_plugin_clashing_with_a_built_in_says_an_acquisition_plugin(sites, tmp_path):
    code = ("from judgeaudit.rank.acquisition import RULES, get_rule, rule_names;"
            "import judgeaudit.rank.acquisition.topk as t;"
            "assert RULES['topk'] is t.score and 'missingattr' not in rule_names();"
            "from judgeaudit import plugins;"
            "print(plugins.unknown_suffixes('acquisition', ['missingattr', 'nope']))")
    r = _run(["-c", code], sites["crashy"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    err = _said(r)
    assert "an acquisition plugin cannot replace it" in err and "a acquisition" not in err
    assert "'missingattr'" in r.stdout and "AttributeError" in r.stdout


def test_rank_with_a_broken_rule_plugin_says_why_the_rule_is_missing(sites, tmp_path):
    """`rank --rule missingattr` said only "unknown rule(s) missingattr; expected one of ...",
    where providers, probes and data loaders say why their broken plugin is missing."""
    r = _run(_cli("rank", "--judge", "sim", "--rule", "missingattr", "--no-cache", "--out",
                  str(tmp_path / "r")), sites["crashy"], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    err = _said(r)
    assert "unknown rule(s) missingattr; expected one of" in err
    assert "missingattr" in err.split("expected one of", 1)[1] and "AttributeError" in err
