"""quantify's repeat-noise reference: the judge asked the same unrewritten test items again
flips to r- by chance alone; with `simhubj` its rate is known in closed form (no factor
marker, r+ of quality 1 and a position effect, a fresh noise draw per repeat):
(sigmoid(-quality - position) + sigmoid(-quality + position)) / 2."""

from __future__ import annotations

import json
import math
from typing import ClassVar

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.hubj.quantify import repeat_noise
from judgeaudit.judges.factory import make_judge
from judgeaudit.llm.providers.sim import SimProvider
from judgeaudit.llm.registry import register
from tests.hubj.test_quantify import POSITION, QUALITY, SPEC, _items, _run

runner = CliRunner()


def _sig(x: float) -> float:
    return 1 / (1 + math.exp(-x))


async def test_repeat_noise_recovers_the_planted_flip_rate_of_a_repeat():
    truth = (_sig(-QUALITY - POSITION) + _sig(-QUALITY + POSITION)) / 2  # ~0.26
    covered = 0
    for seed in range(3):
        out, _, _ = await _run({"biased": SPEC, "flat": SPEC.split("&factor")[0]}, seed,
                               n=700, n_cal=100)
        for name in ("biased", "flat"):  # no rewrite: the factor plays no part
            e = out.repeat_noise[name]
            assert e["n"] == len(out.test) and e["n_invalid"] == 0
            covered += e["ci95"][0] <= truth <= e["ci95"][1]
            # beside a factor's effect: the planted l* = 3 flips far above it
        sus = out.per_judge["biased"]["verbosity"]["susceptibility"]
        assert sus["ci95"][0] > out.repeat_noise["biased"]["ci95"][1]
    assert covered >= 5, covered  # 6 nominal-95% intervals


@register
class _SameEveryTime(SimProvider):
    """The sim judge marked deterministic: a repeat is answered as the first call was."""

    name: ClassVar[str] = "test-sim-deterministic"
    deterministic: ClassVar[bool] = True


async def test_a_deterministic_judge_has_no_repeat_noise_and_is_not_asked_again():
    judge = make_judge("test-sim-deterministic:default?quality=1")
    items = _items(10)
    e = await repeat_noise(judge, items)
    assert e["value"] == 0.0 and e["n"] == 10 and e["deterministic"] is True
    assert judge.client.stats.made == 0


def test_quantify_shows_repeat_noise_beside_each_factor(shared_data, tmp_path, isolated_cache):
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"
    res = runner.invoke(app, ["quantify", "--judges", judge, "--data",
                              f"pandalm:{shared_data / 'pandalm_testset'}", "--factors",
                              "verbosity", "--pool", "60", "--limit", "12", "--out",
                              str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    e = doc["repeat_noise"][judge]
    assert e["n"] == len(doc["test_items"]) and e["method"] == "wilson"
    out = " ".join(res.output.split())
    assert "repeat noise" in out and f"n={e['n']}" in out
    assert "a susceptibility inside its interval is no evidence" in out
