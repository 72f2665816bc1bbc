"""`judgeaudit cache`: inspect, clear, or forget the invalid answers of the SQLite cache of
model calls. `register(app)` adds the sub-app to the main typer app.

A read-only cache (`Cache.read_only`: a shared, checked-in or mounted file) can be inspected;
`clear` and `forget` on it fail with exit 2 before anything is asked or done, as for any
cache file this command cannot use, and exit 3 if the disk refuses the write midway (the
exit code of an error no command expected, such as a full disk): nothing was deleted."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from judgeaudit.cli.progress import console, fail

if TYPE_CHECKING:
    from judgeaudit.llm import Cache

CacheOpt = Annotated[Path | None, typer.Option(
    "--cache", help="SQLite cache file (default: $JUDGEAUDIT_CACHE or the user cache dir).")]
ProviderOpt = Annotated[str | None, typer.Option(help="Only this provider's entries.")]
ModelOpt = Annotated[str | None, typer.Option(help="Only this model's (with --provider).")]

cache_app = typer.Typer(help="Inspect, clear, or forget invalid answers in the SQLite cache of "
                             "model calls.", no_args_is_help=True)


def _say(text: str) -> None:
    """Print plain text: names such as "openai:b:" must not turn into markup or emoji."""
    console.print(text, markup=False, emoji=False, highlight=False)


def _open(path: Path | None, reading: bool = False) -> Cache:
    """The cache to inspect or prune; a --cache file that does not exist is not created (a
    typo would otherwise report an empty cache). `reading`: opened read-only (`mode=ro`), for
    a command that only reads it: an older cache is not given new tables or marked (`cache
    stats` grew an older file from 1.41 to 1.43 MB and set its application_id)."""
    from judgeaudit.llm import Cache, CacheError
    from judgeaudit.llm.cache import default_cache_path

    if path is not None and not path.exists():
        raise fail(f"--cache {path}: no such cache file (a command that calls a judge "
                   "creates it)")
    if path is None and not default_cache_path().exists():  # it was created, empty
        raise fail(f"no cache yet at {default_cache_path()} ($JUDGEAUDIT_CACHE or the user "
                   "cache dir; a command that calls a judge creates it)")
    try:
        return Cache(path, reading=reading)
    except CacheError as exc:
        raise fail(str(exc)) from None


def _refuse_read_only(c: Cache, command: str) -> None:
    """Fail (exit 2) before `command` deletes anything from a cache opened read-only."""
    if c.read_only:
        c.close()
        raise fail(f"{command}: {c.write_error}; nothing was deleted")


def _check_written(c: Cache, command: str) -> None:
    """Fail (exit 3) when the disk refused `command`'s deletes (rolled back: none done)."""
    if c.write_error is not None:
        raise fail(f"{command}: {c.write_error}; nothing was deleted", code=3)


def _what(provider: str | None, model: str | None) -> str:
    if model and not provider:
        raise fail("--model needs --provider (a model name alone may belong to several)")
    return f"{provider}:{model}" if model else (provider or "all")


@cache_app.command("stats")
def cache_stats(cache: CacheOpt = None) -> None:
    """Entries per provider:model, answers marked invalid, and the file's size. The embedded
    judge's entries (local:MODEL) are counted per backend too (transformers, ik, llamacpp):
    each backend keys its own answers, so a run on another backend asks again.

    Example: judgeaudit cache stats"""
    c = _open(cache, reading=True)
    try:
        s = c.stats()
    finally:
        c.close()
    _say(f"{s.path}: {s.entries} entries, {s.bytes / 1e6:.2f} MB")
    if c.write_error and "cannot be written" in c.write_error:  # not only opened to read
        _say(f"{c.write_error}: runs read its answers and store no new ones")
    for k, v in s.by_model.items():
        backends = s.by_backend.get(k, {})
        _say(f"  {k}: {v}" + (f" ({_backends_text(backends)})" if backends else ""))
    _say(f"{s.invalid} invalid answer{'s' if s.invalid != 1 else ''} marked"
                  + (" (judgeaudit cache forget --invalid asks them again)" if s.invalid else ""))
    if s.refusals:
        _say(f"{s.refusals} too-long refusal{'s' if s.refusals != 1 else ''} kept from runs "
             "or ingest (not sent again; judgeaudit cache forget --invalid asks them again)")


def _backends_text(counts: dict[str, int]) -> str:
    """"backend ik 380, transformers 20": an embedded judge's entries per backend
    (`Cache.local_backends`: "ingested" answers came from a plan run elsewhere)."""
    return "backend " + ", ".join(f"{b} {n}" for b, n in counts.items())


@cache_app.command("clear")
def cache_clear(
    cache: CacheOpt = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete cached calls (all, or one provider's / model's).

    Example: judgeaudit cache clear --provider sim --yes"""
    what = _what(provider, model)
    c = _open(cache)
    _refuse_read_only(c, "cache clear")
    try:
        if not yes and not sys.stdin.isatty():  # a script cannot answer: it must say --yes
            raise fail(f"cache clear deletes {what} entries of {c.path} (paid-for answers): "
                       "nobody can confirm it here (stdin is not a terminal); add --yes")
        if not yes and not typer.confirm(f"Delete {what} entries in {c.path}?"):
            raise typer.Exit(1)
        n = c.clear(provider, model)
        _check_written(c, "cache clear")
    finally:
        c.close()
    _say(f"deleted {n} entries ({what})")


@cache_app.command("forget")
def cache_forget(
    invalid: Annotated[bool, typer.Option(
        "--invalid", help="Forget the answers judges marked invalid (unparseable, empty, "
                          "over the size cap), so the next run asks them again.")] = False,
    cache: CacheOpt = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
) -> None:
    """Forget cached answers so the next run asks them again (today: --invalid ones).

    Example: judgeaudit cache forget --invalid"""
    if not invalid:
        raise fail("say what to forget: --invalid (the answers judges could not use)")
    what = _what(provider, model)
    c = _open(cache)
    _refuse_read_only(c, "cache forget --invalid")
    try:
        n = c.forget_invalid(provider, model)
        _check_written(c, "cache forget --invalid")
    finally:
        c.close()
    _say(f"forgot {n} invalid answer{'s' if n != 1 else ''} or too-long refusal"
         f"{'s' if n != 1 else ''} ({what}); the next run asks them again")


def register(app: typer.Typer) -> None:
    """Add the `cache` sub-app (stats, clear, forget) to `app`."""
    app.add_typer(cache_app, name="cache")


__all__ = ["cache_app", "register"]
