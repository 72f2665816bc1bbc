"""scoring-bias --repeats N: what the baseline's repeats cost and what they measure.

A deterministic judge (the embedded local judge reads logits: the same prompt, the same
score) was asked every repeat, each a fresh call (the repeat is part of the cache key), and
its repeat noise came out as a measured 0 with a Wilson interval [0, 0.28] on 10 items, its
mitigation table comparing options against a copy of repeat 0. An API judge at temperature 0
is asked every repeat on purpose (hosted APIs are not guaranteed to answer alike)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import typer
from typer.testing import CliRunner

from judgeaudit.cli.scoring_cmd import register
from judgeaudit.llm.providers.sim import SimProvider
from judgeaudit.llm.registry import register as register_provider

app = typer.Typer()


@app.callback()
def _root() -> None:
    """Group, so the command keeps its name."""


register(app)
RUN = CliRunner()
N = 12  # items; perturbations: baseline + order_desc


@register_provider
class _Deterministic(SimProvider):
    """The sim judge without score noise, marked deterministic as the local provider is: it
    answers a repeated prompt exactly as it answered first (a stand-in for the embedded
    model, which the tests do not load)."""

    name: ClassVar[str] = "test-scoring-deterministic"
    deterministic: ClassVar[bool] = True


def _invoke(*args: str):
    return RUN.invoke(app, ["scoring-bias", "--data", "builtin:graded", "--limit", str(N),
                            "--perturbations", "order_desc", *args], catch_exceptions=False)


def _row_cells(output: str, name: str, next_name: str) -> list[str]:
    """The cells of the table row of template `name` (up to the row of `next_name`), each
    cell's wrapped lines joined: a narrow terminal wraps "0 (by construction)"."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"│ {name}"))
    parts: list[list[str]] = []
    for line in lines[start:]:
        if not line.startswith("│") or (parts and line.startswith(f"│ {next_name}")):
            break
        parts.append([c.strip() for c in line.strip("│").split("│")])
    return [" ".join(c for c in col if c) for col in zip(*parts, strict=True)]


def test_a_deterministic_judge_is_scored_once_and_its_repeat_noise_is_zero_by_construction(
        tmp_path: Path) -> None:
    out = tmp_path / "o"
    r = _invoke("--judge", "test-scoring-deterministic:default?score_noise=0&quality=6",
                "--repeats", "3", "--out", str(out), "--no-cache")
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    # one baseline scoring and one order_desc scoring per item: no repeat computed
    assert res["calls"]["made"] == 2 * N and res["n_calls_planned"] == 2 * N
    assert res["repeats"] == 1 and res["repeats_asked"] == 3
    assert list(res["scores"]["baseline"]) == ["0"]
    noise = res["repeat_noise"]
    assert noise["by_construction"] is True and "0 by construction" in noise["note"]
    for k in ("fp", "mad"):  # no interval pretending data
        assert noise[k] == {"value": 0.0, "ci95": None, "n": N, "method": "by construction"}
    base = res["perturbations"]["baseline"]
    assert base["shift"]["method"] == "by construction"
    assert "0 by construction" in base["compared_with"]
    mit = res["mitigation"]
    assert mit["available"] is False and "deterministic" in mit["note"]
    cells = _row_cells(r.output, "baseline", "order_desc")
    assert cells[1:4] == ["0 (by construction)"] * 3, cells  # FP, MAD, shift: not "0.000"
    text = " ".join(r.output.split())
    assert "repeat noise 0 by construction" in text and "(--repeats 3 asked)" in text
    # the other template is still measured against the one baseline scoring
    assert res["perturbations"]["order_desc"]["fp"]["ci95"] is not None


def test_a_non_deterministic_sim_judge_is_still_asked_every_repeat(tmp_path: Path) -> None:
    """The sim judge draws fresh noise per repeat: its repeats measure something."""
    out = tmp_path / "o"
    r = _invoke("--judge", "sim?quality=6", "--repeats", "3", "--out", str(out), "--no-cache")
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert res["calls"]["made"] == 4 * N and res["repeats"] == 3
    assert res["repeat_noise"]["fp"]["ci95"] is not None
    assert "by_construction" not in res["repeat_noise"] and res["mitigation"]["available"]
