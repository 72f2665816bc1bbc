"""Every command's `--help` gives one example, and the example runs: each is taken from the
rendered help and run with the sim judge in a fresh working directory (its `out/...` paths land
there; `../shared/data` is pointed at the shared data). Help paragraphs are reflowed: a
docstring paragraph is one line in a wide terminal, never broken mid-sentence."""

from __future__ import annotations

import re
import shlex

import pytest
import typer
import typer.rich_utils
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
EXAMPLE = re.compile(r"Example(?: \([^)]*\))?: (judgeaudit .+)")

# Examples that cannot run here, and why.
SKIP = {
    "discover": "needs the embedded judge (--llm local) and the sentence-embedding model",
    "ingest": "needs the output of an executor run on a plan",
    "replay-check": "needs a file of recorded verdicts",
    "model path": "assembles the embedded model's GGUF (the local_model files)",
    "model export": "copies the embedded model's GGUF",
    "batch cancel": "asks the provider (network) when a batch is open",
}
NEEDS_SHARED_DATA = {"quantify", "mitigate"}
# run first: compare reads two audits, report rebuilds one
ORDER = ["audit", "compare", "report"]


def _commands(group=None, prefix=()) -> dict[str, object]:
    """Every leaf command by its full name ("cache stats")."""
    group = group or typer.main.get_command(app)
    out = {}
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        if hasattr(cmd, "commands"):
            out.update(_commands(cmd, (*prefix, name)))
        else:
            out[" ".join((*prefix, name))] = cmd
    return out


COMMANDS = sorted(_commands())


def _help(name: str, columns: int) -> str:
    """`judgeaudit NAME --help` rendered `columns` wide (typer's rich console width)."""
    old = typer.rich_utils.MAX_WIDTH
    typer.rich_utils.MAX_WIDTH = columns
    try:
        res = runner.invoke(app, [*name.split(), "--help"])
    finally:
        typer.rich_utils.MAX_WIDTH = old
    assert res.exit_code == 0, res.output
    return res.output


def example(name: str) -> str:
    """The example command line of `name`, as its help shows it in a wide terminal."""
    text = " ".join(_help(name, 1000).split())
    found = EXAMPLE.findall(text)
    assert found, f"`judgeaudit {name} --help` shows no example"
    line = found[0]
    # the help ends the example at the next panel or at the end
    return re.split(r" [╭│╰]", line)[0].strip()


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_one_example(name):
    text = " ".join(_help(name, 1000).split())
    assert len(EXAMPLE.findall(text)) == 1, name
    assert example(name).startswith(f"judgeaudit {name}")


def _docstring_paragraphs(cmd) -> list[str]:
    doc = (getattr(cmd, "help", None) or "").strip()
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", doc) if p.strip()]


@pytest.mark.parametrize("name", COMMANDS)
def test_help_paragraphs_are_reflowed(name):
    """A docstring paragraph renders as one line when the terminal is wide enough: no hard
    break in the middle of a sentence. At 80 and 120 columns no line overflows."""
    cmd = _commands()[name]
    wide = [" ".join(line.split()) for line in _help(name, 1000).splitlines()]
    for para in _docstring_paragraphs(cmd):
        plain = para.replace("`", "")
        assert plain in wide, f"{name}: paragraph broken or missing in --help: {plain[:60]}"
    for columns in (80, 120):
        assert all(len(line) <= columns for line in _help(name, columns).splitlines())


def _run_example(name: str, shared: str | None):
    line = example(name)
    if shared is not None:
        line = line.replace("../shared/data", shared)
    return runner.invoke(app, shlex.split(line)[1:])


RUNNABLE = [n for n in COMMANDS if n not in SKIP]
RUN_ORDER = ORDER + [n for n in RUNNABLE if n not in ORDER]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("examples")


@pytest.mark.parametrize("name", RUN_ORDER)
def test_example_runs(name, workdir, monkeypatch):
    from tests.conftest import shared_data_dir

    monkeypatch.chdir(workdir)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(workdir / "cache.sqlite"))
    shared = shared_data_dir()
    if name in NEEDS_SHARED_DATA and not (shared / "README.md").exists():
        pytest.skip(f"shared data absent at {shared}")
    if name == "compare":  # audit B: the same items and judge, so nothing gets worse
        a = _run_example("audit", None)
        assert a.exit_code == 0, a.output
        (workdir / "out" / "audit-new").mkdir(parents=True, exist_ok=True)
        b = runner.invoke(app, ["audit", "--judge", "sim:biased?seed=0", "--data",
                                "builtin:facts", "--n", "30", "--out", "out/audit-new"])
        assert b.exit_code == 0, b.output
    res = _run_example(name, str(shared))
    assert res.exit_code == 0, f"{example(name)}\n{res.output}"


def test_skipped_examples_are_real_commands():
    assert set(SKIP) <= set(COMMANDS)
