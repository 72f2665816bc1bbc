"""`judgeaudit schema COMMAND`: the JSON Schema of a command's settings (the keys a `--config`
file may give) or, with `--result`, of its results document; `--out DIR` writes them all.
The schemas are generated from the installed package's models (`judgeaudit.config`,
`judgeaudit.result.Result`), so they always match the code that reads the files.
`register(app)` adds the command to a typer app (the main CLI calls it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from judgeaudit.cli.progress import console, fail

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# fail_on must name something: an empty, blank or commas-only value turned the gate off
# before the CLI refused it, so the schema refuses it too (a pattern is searched, not anchored).
NOT_EMPTY_GATE = "[^\\s,]"


def config_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of command `kind`'s Config model (pydantic's, with the dialect)."""
    from judgeaudit.config import config_model, text_forms

    model = config_model(kind)
    schema = model.model_json_schema()
    for name, info in model.model_fields.items():
        prop = (schema.get("properties") or {}).get(name)
        if prop is not None and "str" in str(info.annotation):
            _toml_forms(prop, list(text_forms(model, name).values()))
    gate = (schema.get("properties") or {}).get("fail_on")
    for alt in (gate or {}).get("anyOf", []):
        if alt.get("type") == "string":
            alt["pattern"] = NOT_EMPTY_GATE
    return {"$schema": SCHEMA_DIALECT, **schema}


def _toml_forms(prop: dict[str, Any], forms: list[dict[str, Any]]) -> None:
    """A text option's string form replaced by the forms a config file may give it in
    (`config.text_forms`, what the file is held to): a number only where the option holds
    numbers (`lam = 2.0`; `note = 5` is refused), a list for a comma-separated option
    (`probes = ["position", "verbosity"]`), text that names something. The schema took a
    number for every text option, and number elements in name lists."""
    if "anyOf" in prop:
        prop["anyOf"] = [a for a in prop["anyOf"] if a.get("type") != "string"] + forms
    elif prop.get("type") == "string":
        del prop["type"]
        prop.pop("pattern", None)
        prop["anyOf"] = forms


def result_schema(kind: str | None = None) -> dict[str, Any]:
    """The JSON Schema of a results document as results.json holds it: the fields of
    `judgeaudit.result.Result` (schema_version, command, run) at the top level beside the
    command's own keys (what `Result.data` holds in memory). With `kind`, `command` is fixed
    to that command."""
    from judgeaudit.result import Result

    base = Result.model_json_schema()
    props = {k: v for k, v in (base.get("properties") or {}).items() if k != "data"}
    if kind is not None:
        props["command"] = {**props.get("command", {}), "const": kind}
    return {
        "$schema": SCHEMA_DIALECT, **({"$defs": base["$defs"]} if "$defs" in base else {}),
        "title": f"results.json ({kind})" if kind else "results.json",
        "description": "A judgeaudit results document: schema_version, command and run, and "
                       "the command's numbers, calls and per-item records beside them.",
        "type": "object", "properties": props, "required": ["command"],
        "additionalProperties": True,
    }


def _dump(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas(out: Path) -> list[Path]:
    """Write every command's settings schema (`config-KIND.schema.json`) and the results
    schema (`result.schema.json`) into `out`; returns the files."""
    from judgeaudit.config import CONFIGS

    out.mkdir(parents=True, exist_ok=True)
    files = []
    for kind in CONFIGS:
        path = out / f"config-{kind}.schema.json"
        path.write_text(_dump(config_schema(kind)), encoding="utf-8")
        files.append(path)
    path = out / "result.schema.json"
    path.write_text(_dump(result_schema()), encoding="utf-8")
    return [*files, path]


def schema(
    kind: Annotated[str | None, typer.Argument(
        metavar="COMMAND", help="The command whose settings schema to print: evaluate, "
        "audit, scoring-bias, discover, quantify, mitigate, rank, rank-eval or compare.")
    ] = None,
    result: Annotated[bool, typer.Option(
        "--result", help="Print the schema of the command's results document instead.")
    ] = False,
    out: Annotated[Path | None, typer.Option(
        help="Write every schema (config-KIND.schema.json, result.schema.json) into this "
             "directory instead of printing one.")] = None,
) -> None:
    """Print the JSON Schema of a command's settings: the keys a `--config FILE.toml` may
    give, with their types, ranges, defaults and meaning. Editors and CI can validate a
    checked-in config with it.

    Example: judgeaudit schema audit"""
    from judgeaudit.config import CONFIGS

    if out is not None:
        if kind is not None or result:
            raise fail("--out writes every schema; give no COMMAND and no --result with it")
        try:
            files = write_schemas(out)
        except OSError as exc:
            raise fail(f"--out {out}: cannot write there ({exc.strerror or exc})") from None
        console.print(f"{len(files)} schemas written to {out}", highlight=False)
        return
    if kind is None:
        raise fail(f"give a COMMAND: one of {', '.join(CONFIGS)} (or --out DIR for all)")
    if kind not in CONFIGS:
        raise fail(f"unknown COMMAND {kind!r}; known: {', '.join(CONFIGS)}")
    typer.echo(_dump(result_schema(kind) if result else config_schema(kind)), nl=False)


def register(app: typer.Typer) -> None:
    """Add `schema` to ``app``."""
    app.command("schema")(schema)


__all__ = ["config_schema", "register", "result_schema", "schema", "write_schemas"]
