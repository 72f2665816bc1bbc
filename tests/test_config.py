"""The Config models state every command's settings: the same names and defaults as the CLI's
options (rank and rank-eval included), the same ranges (a value the CLI refuses, the model
refuses too), a description per field, and a JSON Schema that a real config satisfies."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import typer
from pydantic import ValidationError
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.cli.runner import field_name
from judgeaudit.cli.schema_cmd import config_schema
from judgeaudit.config import (
    CONFIGS,
    AuditConfig,
    ConfigError,
    check_fields,
    load_config_file,
)

# CLI-only options: actions and output formats, not settings of a run.
NOT_SETTINGS = {"config", "json", "list", "help"}
runner = CliRunner()


def _params(command: str) -> dict[str, object]:
    cmd = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return {field_name(p): p for p in cmd.params if field_name(p) not in NOT_SETTINGS}


@pytest.mark.parametrize("command", sorted(CONFIGS))
def test_config_fields_and_defaults_are_the_cli_options(command):
    model = CONFIGS[command]
    params = _params(command)
    fields = {k: v for k, v in model.model_fields.items() if k != "config_version"}
    assert set(fields) == set(params), command
    for name, info in fields.items():
        p = params[name]
        if p.required:  # compare's RUN_A / RUN_B
            assert info.is_required(), name
            continue
        default = p.default if not p.multiple else (p.default or None)
        assert info.default == default, f"{command}.{name}: {info.default!r} != {default!r}"
        assert info.description, f"{command}.{name} has no description"


# (command, option, a value the CLI refuses): the model refuses it too.
REFUSED = [
    ("evaluate", "limit", 0), ("evaluate", "sample", 0), ("evaluate", "concurrency", 0),
    ("evaluate", "timeout", 0), ("evaluate", "min_valid", 0), ("evaluate", "max_failed", 1.5),
    ("evaluate", "pair_rule", "median"), ("evaluate", "ties", "maybe"),
    ("audit", "n", 0), ("audit", "alpha", 1.0), ("audit", "max_n", 0), ("audit", "round_size", 0),
    ("audit", "max_calls", 0),
    ("scoring-bias", "repeats", 0), ("scoring-bias", "ref_tolerance", 5),
    ("scoring-bias", "ref_attempts", 0), ("scoring-bias", "ref_max_tokens", 0),
    ("discover", "holdout", 1.0), ("discover", "tau", 1.5), ("discover", "clusters", 0),
    ("discover", "min_agreement", -0.1),
    ("quantify", "pool", 0), ("quantify", "n_cal", 0), ("quantify", "on_violation", "keep"),
    ("quantify", "inject", "paste"),
    ("mitigate", "limit", 0), ("mitigate", "candidate", "longest"),
    ("mitigate", "estimator", "one_stage"),
    ("rank", "budget", 0), ("rank", "tau", 0), ("rank", "refit_every", 0),
    ("rank", "rule", "best"), ("rank", "model", "fancy"),
    ("rank-eval", "samples", 0), ("rank-eval", "k", 0),
    ("compare", "alpha", 0.0), ("compare", "margin", -0.1),
]


@pytest.mark.parametrize(("command", "name", "bad"), REFUSED)
def test_the_model_refuses_what_the_cli_refuses(command, name, bad, tmp_path):
    with pytest.raises(ConfigError, match=f"key '{name}'"):
        check_fields(CONFIGS[command], {name: bad})
    option = "--" + name.replace("_", "-")
    args = [command, option, str(bad), "--out", str(tmp_path / "o")]
    if command == "compare":
        args[1:1] = [str(tmp_path / "a"), str(tmp_path / "b")]
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (args, res.output)
    assert not (tmp_path / "o" / "results.json").exists()


def test_defaults_validate_and_round_trip():
    for command, model in CONFIGS.items():
        cfg = model(run_a=Path("a"), run_b=Path("b")) if command == "compare" else model()
        assert cfg.config_version == 1
        assert model.model_validate_json(cfg.model_dump_json()) == cfg
    with pytest.raises(ValidationError):
        AuditConfig(nn=3)  # type: ignore[call-arg]


AUDIT_TOML = """\
config_version = 1
judge = "sim:biased?seed=0"
data = "builtin:facts"
probes = "position,verbosity"
n = 30
alpha = 0.1
full = false
out = "out/audit"
fail_on = "biased"
"""


def test_a_real_config_satisfies_its_schema(tmp_path):
    path = tmp_path / "audit.toml"
    path.write_text(AUDIT_TOML, encoding="utf-8")
    raw = tomllib.loads(AUDIT_TOML)
    schema = config_schema("audit")
    # the schema's own rules, checked by hand: known keys, types, bounds
    assert schema["additionalProperties"] is False
    types = {"string": str, "integer": int, "number": (int, float), "boolean": bool}
    for key, value in raw.items():
        prop = schema["properties"][key]
        alts = prop.get("anyOf", [prop])
        assert any(isinstance(value, types.get(a.get("type"), object))
                   and value >= a.get("minimum", value) for a in alts
                   if a.get("type") != "null"), key
    # and through pydantic: the file's values build the model, which dumps them back
    values = load_config_file(path, "audit")
    cfg = AuditConfig(**values)
    assert cfg.model_dump(mode="json", include=set(raw)) == raw
    try:
        import jsonschema
    except ImportError:
        return
    jsonschema.validate(cfg.model_dump(mode="json"), schema)


def test_an_unknown_key_names_the_known_ones(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("judge = 'sim'\nbugdet = 10\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_config_file(path, "rank")
    msg = str(exc.value)
    assert str(path) in msg and "'bugdet'" in msg and "budget" in msg


def test_the_schema_takes_the_toml_forms_the_config_file_takes():
    """probes = ["position", "verbosity"] (the README's audit.toml) and seeds = 2 load, but
    the schema said text only, so validating a checked-in config with it failed."""

    def kinds(prop):
        return {a.get("type") for a in prop.get("anyOf", [prop])}

    audit = config_schema("audit")["properties"]
    assert "array" in kinds(audit["probes"]) and "array" in kinds(audit["fail_on"])
    # a number only where the option holds numbers (the loader refuses judge = 5, note = 5)
    assert "array" not in kinds(audit["judge"]) and "number" not in kinds(audit["judge"])
    assert "number" not in kinds(audit["note"])
    assert kinds(config_schema("rank-eval")["properties"]["seeds"]) & {"number", "integer"}
    # a name list's elements are names (text), not numbers
    assert audit["probes"]["anyOf"][-1]["items"]["type"] == "string"
    assert "number" in kinds(audit["n"]) or "integer" in kinds(audit["n"])


def _given(model, name):
    """A value other than the field's default (what makes a setting "given")."""
    info = model.model_fields[name]
    if info.annotation is bool:
        return not info.default
    return {"n": 10, "sample": 20, "limit": 5, "panel": "sim", "apply": Path("fit.json"),
            "candidate": "response_1", "estimator": "two_stage",
            "factors_from": Path("d.json"), "generator": "sim", "reviewer": "sim",
            "max_n": 60, "round_size": 5, "max_calls": 100, "cache": Path("c.sqlite")}[name]


RULES = [(c, rule) for c, m in sorted(CONFIGS.items()) for rule in m.all_conflicts()]


@pytest.mark.parametrize(("command", "rule"), RULES)
def test_each_conflict_lets_the_command_line_win_over_the_file(command, rule):
    """Every exclusive pair and flag-bound setting (`conflicts`, the one statement of them):
    the file's side is set aside for the flag typed; within the file it is an error naming
    the file."""
    from judgeaudit.cli.runner import settle_config_file
    from judgeaudit.config import Exclusive

    model = CONFIGS[command]
    base = {k: model.default(k) for k in model.model_fields if not model.model_fields[
        k].is_required()}
    if isinstance(rule, Exclusive):
        typed, filed = rule.first[0], rule.second[0]
        values = {**base, typed: _given(model, typed), filed: _given(model, filed)}
    else:
        typed, filed = rule.flag, rule.keys[0]
        values = {**base, typed: False, filed: _given(model, filed)}
    kept = settle_config_file(model, values, "x.toml",
                              lambda k: {typed: "cli", filed: "file"}.get(k, "default"))
    assert values[filed] == model.default(filed) and filed not in kept
    if isinstance(rule, Exclusive):
        assert values[typed] == _given(model, typed)
        both = {**base, typed: _given(model, typed), filed: _given(model, filed)}
        with pytest.raises(typer.Exit):
            settle_config_file(model, both, "x.toml",
                               lambda k: "file" if k in (typed, filed) else "default")


def test_the_schema_and_the_file_agree_on_text_forms():
    """A comma-separated option's text must name something (probes = "" ran the default
    battery in the schema's eyes, the tool refused it); a number is a text option's value
    only where the option holds numbers (note = 5 was accepted)."""
    import re

    from judgeaudit.config import text_forms

    audit = config_schema("audit")["properties"]
    text = next(a for a in audit["probes"]["anyOf"] if a.get("type") == "string")
    assert not re.search(text["pattern"], "") and not re.search(text["pattern"], " , ")
    assert re.search(text["pattern"], "position")
    for bad in ({"probes": ""}, {"probes": []}, {"probes": ["position", 3]}, {"note": 5}):
        with pytest.raises(ConfigError):
            check_fields(AuditConfig, bad)
    assert "number" not in text_forms(AuditConfig, "note")
    assert "array" not in text_forms(AuditConfig, "note")
    rank_eval = CONFIGS["rank-eval"]
    assert check_fields(rank_eval, {"budgets": [30, 60], "seeds": 3, "lam": 2.0}) == {
        "budgets": "30,60", "seeds": "3", "lam": "2.0"}
    assert text_forms(rank_eval, "budgets")["array"]["items"]["minimum"] == 1
    with pytest.raises(ConfigError, match="'x' is not an integer >= 1"):
        check_fields(rank_eval, {"budgets": [30, "x"]})
