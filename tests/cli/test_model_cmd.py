"""`judgeaudit model path|export` on a tiny fake preset: a real (header-only) GGUF split into
two part packages written to tmp_path, so the same import + get_part_path() route and sha256
checks as the PyPI parts are exercised, without the real model."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli import model_cmd
from judgeaudit.llm import local_model as lm
from judgeaudit.llm.gguf_meta import read_metadata, write_gguf

runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    a = typer.Typer()
    model_cmd.register(a)

    @a.command()
    def other() -> None:  # a second command, so `model` stays a group as in the real CLI
        pass

    return a


@pytest.fixture
def tiny(tmp_path, monkeypatch) -> lm.Preset:
    """Preset 'tiny': a header-only GGUF cut into two part packages."""
    whole = write_gguf(tmp_path / "whole.gguf", {"general.architecture": "qwen2",
                                                 "general.name": "tiny"}, b"\0" * 1000)
    blob = whole.read_bytes()
    prefix = f"tinygguf_{os.getpid()}_{abs(hash(str(tmp_path))) % 10**8}_part"
    for i, part in enumerate((blob[:300], blob[300:]), start=1):
        pkg = tmp_path / "site" / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / "p.bin").write_bytes(part)
        (pkg / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            "    return os.path.join(os.path.dirname(__file__), 'data', 'p.bin')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    preset = lm.Preset(name="tiny", description="test", modules=(f"{prefix}1", f"{prefix}2"),
                       distributions=("tiny-part1==1", "tiny-part2==1"),
                       sha256=hashlib.sha256(blob).hexdigest(), size=len(blob),
                       gguf_name="tiny-q4.gguf")
    monkeypatch.setitem(lm.PRESETS, "tiny", preset)
    monkeypatch.setenv("JUDGEAUDIT_MODEL_CACHE", str(tmp_path / "models"))
    yield preset
    for m in preset.modules:
        sys.modules.pop(m, None)


def test_path_assembles_verifies_and_prints_only_the_path_on_stdout(app, tiny, tmp_path):
    res = runner.invoke(app, ["model", "path", "tiny"])
    assert res.exit_code == 0, res.output
    path = Path(res.stdout.strip())
    assert path == tmp_path / "models" / "tiny-q4.gguf"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == tiny.sha256
    assert read_metadata(path)["general.name"] == "tiny"  # a GGUF, whole and in order
    assert tiny.sha256 in res.stderr and "backend=auto runs it here with" in res.stderr
    again = runner.invoke(app, ["model", "path", "tiny", "--verify"])
    assert again.exit_code == 0 and again.stdout.strip() == str(path)
    assert "verified now" in again.stderr


def test_path_verify_rebuilds_a_changed_file_and_reports_a_broken_part(app, tiny, tmp_path):
    path = Path(runner.invoke(app, ["model", "path", "tiny"]).stdout.strip())
    path.write_bytes(b"GGUF" + b"\1" * (tiny.size - 4))  # tampered after verification
    res = runner.invoke(app, ["model", "path", "tiny"])
    assert res.exit_code == 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == tiny.sha256  # rebuilt
    part = tmp_path / "site" / tiny.modules[1] / "data" / "p.bin"
    part.write_bytes(part.read_bytes()[:-1] + b"\7")
    path.unlink()
    bad = runner.invoke(app, ["model", "path", "tiny"])
    assert bad.exit_code == 3 and "sha256" in bad.output and not path.exists()


def test_export_copies_the_verified_bytes_to_a_directory_or_a_file(app, tiny, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    res = runner.invoke(app, ["model", "export", "tiny", str(out)])
    assert res.exit_code == 0, res.output
    dest = out / "tiny-q4.gguf"
    assert res.stdout.strip() == str(dest)
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == tiny.sha256
    assert "prefill=assistant" in res.stderr and tiny.sha256 in res.stderr
    kept = tmp_path / "models" / "tiny-q4.gguf"
    assert kept.stat().st_mode & 0o044 == 0o044  # readable by another server's user
    # exists: refused without --force, overwritten with it
    again = runner.invoke(app, ["model", "export", "tiny", str(out)])
    assert again.exit_code == 2 and "--force" in again.output
    assert runner.invoke(app, ["model", "export", "tiny", str(out), "--force"]).exit_code == 0
    named = tmp_path / "judge.gguf"
    assert runner.invoke(app, ["model", "export", "tiny", str(named)]).exit_code == 0
    assert named.read_bytes() == dest.read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["tiny-q4.gguf"]  # no .part left


def test_export_usage_errors(app, tiny, tmp_path):
    assert runner.invoke(app, ["model", "export"]).exit_code == 2
    res = runner.invoke(app, ["model", "export", "tiny", str(tmp_path / "x.bin")])
    assert res.exit_code == 2 and "neither a directory nor a .gguf" in res.output
    res = runner.invoke(app, ["model", "export", "tiny", str(tmp_path / "nodir" / "x.gguf")])
    assert res.exit_code == 2 and "no such directory" in res.output
    res = runner.invoke(app, ["model", "export", "nosuchpreset", str(tmp_path)])
    assert res.exit_code == 2 and "unknown local model" in res.output
    res = runner.invoke(app, ["model", "export", "a", "b", "c"])
    assert res.exit_code == 2


def test_export_of_a_users_gguf_and_the_default_preset_name(app, tmp_path, monkeypatch):
    mine = write_gguf(tmp_path / "mine.gguf", {"general.name": "mine"})
    out = tmp_path / "o"
    out.mkdir()
    res = runner.invoke(app, ["model", "export", str(mine), str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "mine.gguf").read_bytes() == mine.read_bytes()
    assert hashlib.sha256(mine.read_bytes()).hexdigest() in res.stderr
    # one argument = DEST, the default judge's preset (absent parts fail with exit 3 here)
    seen: list[str] = []
    monkeypatch.setattr(model_cmd, "_gguf", lambda preset, verify: seen.append(preset)
                        or (mine, None))
    assert runner.invoke(app, ["model", "export", str(out / "d.gguf")]).exit_code == 0
    assert seen == ["qwen-1.5b"]
