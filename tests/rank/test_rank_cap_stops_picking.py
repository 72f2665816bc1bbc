"""A ranking stopped by the spend cap stops picking: the loop went on picking and refitting to
the end of `--budget` after the client had stopped sending, every pick refused unsent (CPU
for nothing: 6.7 s against 2.6 s at 200 items, budget 2,000, a cap at 49 calls). What the
run reports stays that of a loop that picked them all: the picks made, the budget not sent,
the client's failed and not-sent calls and the run's --max-failed outcome. Through a real
loopback OpenAI-shaped server (`fakeserver`), and the loop itself on a replayed oracle."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.rank.loop import run_active
from tests.rank import test_rank_not_sent as _not_sent

BUDGET = 90  # every ordered pair of 10 items
REFIT = 8


# the rank CLI and the cleared key variables are test_rank_not_sent's fixtures
app, _no_keys = _not_sent.app, _not_sent._no_keys


def _pool(path: Path, n: int = 10) -> str:
    path.write_text("\n".join(json.dumps(
        {"id": f"it-{i:02d}", "prompt": "Which answer is better?",
         "response": "word " * (3 + i % 4) + f"answer {i}", "quality": float(i)})
        for i in range(n)) + "\n")
    return f"jsonl:{path}"


def test_a_capped_ranking_stops_picking_and_counts_the_rest_as_not_sent(app, tmp_path):
    items = _pool(tmp_path / "pool.jsonl")
    with FakeLLMServer(answer="A") as srv:
        spec = (f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
                "&price_in=10000&price_out=10")  # about $1 a call: a cap of 5 sends ~5
        r = CliRunner().invoke(app, [
            "rank", "--judge", spec, "--items", items, "--budget", str(BUDGET), "--k", "3",
            "--samples", "200", "--covariates", "none", "--max-cost", "5",
            "--refit-every", str(REFIT), "--no-cache", "--out", str(tmp_path / "out"),
            "--json"])
        made = srv.count()
    assert r.exit_code == 3, r.output  # most of the budget failed unsent: as before
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    comps = doc["comparisons"]
    refused = sum(c["not_sent"] for c in comps)
    # the loop stopped picking after the round in which the cap refused a call: the old
    # loop picked all 90 (85 of them refused unsent)
    assert 0 < made < REFIT and 0 < refused <= REFIT, (made, refused)
    assert len(comps) == made + refused < BUDGET
    # ... and reports the budget as a loop that picked them all did
    assert doc["n_comparisons"] == made
    assert doc["n_not_sent"] == BUDGET - made
    calls = doc["calls"]
    assert calls["made"] == made
    assert calls["failed"] == calls["not_sent"] == BUDGET - made
    assert doc["run"]["status"] == "failed"
    assert doc["run"]["calls_asked"] == doc["run"]["n_planned"] == BUDGET
    assert doc["run"]["message"].startswith(f"run failed: {BUDGET - made} of {BUDGET} calls "
                                            "failed")
    warn = next(w for w in doc["warnings"] if "were not sent" in w)
    assert (f"{BUDGET - made - refused} of them were never picked (each would have been "
            f"refused the same way), so comparisons holds the {made + refused} picks made, "
            f"{refused} of them marked not_sent") in warn, warn
    assert json.loads(r.stdout)["n_not_sent"] == BUDGET - made


def _oracle(sent: int):
    """A batch oracle that answers `sent` calls (first shown preferred), then refuses."""
    log: list[tuple[int, int]] = []

    def oracle(pairs: list[tuple[int, int]]) -> list[float]:
        out = [1.0 if len(log) + q < sent else math.nan for q in range(len(pairs))]
        log.extend(pairs)
        return out

    return oracle, log


def test_the_loop_stops_when_told_and_keeps_the_fit_of_the_verdicts_it_had():
    n, budget = 12, 120
    oracle, log = _oracle(20)
    stopped = run_active(None, n, budget, 3, batch_oracle=oracle, refit_every=REFIT,
                         n_samples=200, seed=3, X=np.arange(n, dtype=float)[:, None],
                         stop=lambda: len(log) >= 20)
    assert len(log) == 24  # three rounds of 8: the third answered 4, then the stop
    assert len(stopped.steps) == 24 and stopped.unpicked == budget - 24
    assert len(stopped.refits) == 2  # none after the stop
    # without the stop the loop picks on to the budget, every later pick unanswered; the
    # fit has the same 20 verdicts
    oracle2, log2 = _oracle(20)
    full = run_active(None, n, budget, 3, batch_oracle=oracle2, refit_every=REFIT,
                      n_samples=200, seed=3, X=np.arange(n, dtype=float)[:, None])
    assert len(log2) == budget and full.unpicked == 0
    assert log2[:24] == log
    np.testing.assert_array_equal(full.comparisons, stopped.comparisons)
    np.testing.assert_allclose(full.bias_aware.theta, stopped.bias_aware.theta, atol=1e-6)
