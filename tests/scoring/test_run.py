"""scoring-bias on simulated rubric judges with planted sensitivities: the metrics recover the
planted values, and an untouched judge moves only as much as its own repeat noise."""

from __future__ import annotations

import asyncio
import math
from statistics import NormalDist

import numpy as np
import pytest

from judgeaudit.data import load
from judgeaudit.judges.pointwise import RubricJudge
from judgeaudit.llm import Cache, Client, make_provider
from judgeaudit.report.html import render_report
from judgeaudit.report.results import read_results, write_results
from judgeaudit.scoring.perturbations import resolve
from judgeaudit.scoring.references import sibling_references
from judgeaudit.scoring.run import plan, run_scoring_bias

ITEMS = load("builtin:graded")
REFS = sibling_references(ITEMS)


def _run(params: dict[str, str], repeats: int = 3, names=None, cache: Cache | None = None,
         items=ITEMS) -> tuple[dict, RubricJudge]:
    judge = RubricJudge(Client(make_provider("sim", "default", params), cache),
                        "pointwise_scoring_v1")
    res = asyncio.run(run_scoring_bias(judge, items, resolve(names), references=REFS,
                                       repeats=repeats, judge_spec="sim", data_spec="graded",
                                       n_boot=400))
    return res, judge


def _expected_score(mean: float, sd: float) -> float:
    """E[clip(floor(mean + sd * z + 0.5), 1, 5)], z ~ N(0, 1): the sim's exact score law."""
    cdf = NormalDist().cdf
    p_le = [cdf((j + 0.5 - mean) / sd) for j in range(1, 5)] + [1.0]
    probs = [p_le[0]] + [p_le[j] - p_le[j - 1] for j in range(1, 5)]
    return sum(k * p for k, p in zip(range(1, 6), probs, strict=True))


def _exact_shift(judge: RubricJudge, name: str) -> float:
    """Expected mean (perturbed - baseline) score under the sim's own model."""
    prov = judge.client.provider
    pert = {p.name: p for p in resolve(None)}
    diffs = []
    for it in ITEMS:
        base = judge.request(it, 0, pert["baseline"].variant_for(it, REFS)).meta
        var = judge.request(it, 0, pert[name].variant_for(it, REFS)).meta
        sd = prov.values["score_noise"]
        diffs.append(_expected_score(prov.score_mean(var), sd)
                     - _expected_score(prov.score_mean(base), sd))
    return float(np.mean(diffs))


def test_results_carry_every_metric_per_perturbation() -> None:
    res, _ = _run({"quality": "6"})
    assert res["command"] == "scoring-bias"
    assert list(res["perturbations"])[0] == "baseline"
    for name, e in res["perturbations"].items():
        for key in ("fp", "mad", "spearman", "pearson"):
            assert set(e[key]) >= {"value", "ci95"}, (name, key)
            lo, hi = e[key]["ci95"]
            assert lo <= e[key]["value"] <= hi, (name, key)
        assert sum(e["distribution"].values()) == e["n"] + e["n_invalid"] == len(ITEMS)
        assert e["n_missing"] == 0
    assert res["calls"]["made"] == res["n_calls_planned"] == len(ITEMS) * (10 + 2)


def test_untouched_judge_flips_as_often_as_it_repeats_itself() -> None:
    for seed in range(3):
        res, _ = _run({"quality": "6", "seed": str(seed)}, repeats=4)
        scores = res["scores"]["baseline"]
        reps = [np.array(scores[str(r)]) for r in range(4)]
        repeat_fp = np.mean([(reps[i] != reps[j]).mean() for i in range(4)
                             for j in range(i + 1, 4)])
        fps = [e["fp"]["value"] for n, e in res["perturbations"].items() if n != "baseline"]
        assert abs(np.mean(fps) - repeat_fp) < 0.04, (seed, fps, repeat_fp)
        # No template moves the scores on average.
        covered = [e["shift"]["ci95"][0] <= 0 <= e["shift"]["ci95"][1]
                   for n, e in res["perturbations"].items() if n != "baseline"]
        assert sum(covered) >= 8
        lo, hi = res["reference_pull"]["ci95"]
        assert lo <= 0 <= hi, res["reference_pull"]


def test_planted_order_and_id_effects_are_recovered_exactly() -> None:
    res, judge = _run({"quality": "6", "crn": "1", "order_bias": "0.8", "id_bias": "-0.6"})
    p = res["perturbations"]
    for name in ("order_desc", "ids_letters", "ids_roman"):
        truth = _exact_shift(judge, name)
        lo, hi = p[name]["shift"]["ci95"]
        assert lo <= truth <= hi, (name, truth, p[name]["shift"])
        assert abs(p[name]["shift"]["value"] - truth) < 0.06
    assert p["order_desc"]["shift"]["ci95"][0] > 0.4
    assert p["ids_letters"]["shift"]["ci95"][1] < -0.3
    # A random order is not "descending": the planted order effect does not touch it, and
    # with common random numbers nothing else moves it either.
    assert p["order_random"]["fp"]["value"] == 0.0
    assert p["baseline"]["fp"]["value"] > 0.2  # the repeat noise is still there


def test_planted_reference_pull_is_recovered() -> None:
    res, judge = _run({"quality": "6", "crn": "1", "ref_pull": "0.5"})
    pull = res["reference_pull"]
    assert abs(pull["value"] - 0.5) < 0.05 and pull["ci95"][0] > 0.4
    p = res["perturbations"]
    for k in range(1, 6):
        truth = _exact_shift(judge, f"ref_{k}")
        lo, hi = p[f"ref_{k}"]["shift"]["ci95"]
        assert lo <= truth <= hi, (k, truth, p[f"ref_{k}"]["shift"])
    # Low references pull down, high ones up.
    assert p["ref_1"]["shift"]["value"] < -0.5 < 0.5 < p["ref_5"]["shift"]["value"]
    res0, _ = _run({"quality": "6", "crn": "1"})
    assert res0["reference_pull"]["value"] == 0.0


def test_a_strong_pull_costs_accuracy_and_the_recommendation_avoids_it() -> None:
    res, _ = _run({"quality": "6", "ref_pull": "0.9", "crn": "1"})
    p = res["perturbations"]
    for k in range(1, 6):
        assert p[f"ref_{k}"]["vs_baseline"]["spearman_diff"]["ci95"][1] < 0
    assert not res["recommended"]["template"].startswith("ref_")
    # The order and id templates are identical here: no clear winner, and it says so.
    assert not res["recommended"]["clearly_better"]
    assert any("not clearly better" in n for n in res["recommended"]["notes"])


def test_invalid_answers_are_counted_not_coerced() -> None:
    res, _ = _run({"quality": "6", "invalid": "0.2"}, repeats=2)
    for e in res["perturbations"].values():
        assert 30 < e["n_invalid"] < 90
        assert e["distribution"]["invalid"] == e["n_invalid"]
        assert e["spearman"]["n"] == e["n"]
    assert res["invalid_examples"][0]["raw"] == "I cannot decide"


def test_averaging_noisy_repeats_reduces_mad_against_a_held_out_repeat() -> None:
    res, _ = _run({"quality": "3", "score_noise": "1.5"}, repeats=6,
                  names=["order_desc", "ids_letters", "ids_roman", "order_random"])
    opts = res["mitigation"]["options"]
    assert opts["repeat_mean"]["reduces_mad"] == "yes"
    assert opts["template_mean"]["reduces_mad"] == "yes"
    assert opts["repeat_mean"]["mad_vs_heldout"]["value"] < opts["single"]["mad_vs_heldout"][
        "value"]
    res1, _ = _run({"quality": "3"}, repeats=1, names=["order_desc"])
    assert res1["mitigation"]["available"] is False
    assert res1["perturbations"]["baseline"]["fp"]["value"] is None


def test_calls_are_item_major_so_prefixes_are_shared() -> None:
    jobs, where, _ = plan(ITEMS[:3], resolve(None), REFS, 2)
    idx = [i for _, _, i in where]
    assert idx == sorted(idx)
    assert len(jobs) == 3 * 11


def test_second_run_comes_from_the_cache(tmp_path) -> None:
    cache = Cache(tmp_path / "c.sqlite")
    items = ITEMS[:40]
    first, _ = _run({"quality": "6"}, cache=cache, items=items)
    second, _ = _run({"quality": "6"}, cache=cache, items=items)
    assert first["calls"]["made"] == first["n_calls_planned"] > 0
    assert second["calls"]["made"] == 0
    assert second["calls"]["cached"] == first["n_calls_planned"]
    assert second["perturbations"] == first["perturbations"]


def test_results_round_trip_and_render(tmp_path) -> None:
    res, _ = _run({"quality": "6", "order_bias": "0.5"}, names=["order_desc", "ref_1", "ref_5"])
    path = write_results(tmp_path / "results.json", res)
    html = render_report(read_results(path))
    assert "Scoring bias" in html and "<svg" in html
    assert "order_desc" in html and "Reference pull" in html
    assert html.count("<tr>") >= 3


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_repeats_refused(bad: int) -> None:
    judge = RubricJudge(Client(make_provider("sim", "default", {})), "pointwise_scoring_v1")
    with pytest.raises(ValueError, match="repeats"):
        asyncio.run(run_scoring_bias(judge, ITEMS[:5], resolve(None), repeats=bad, n_boot=100))


def test_expected_score_formula_matches_simulation() -> None:
    rng = np.random.default_rng(0)
    for mean in (1.2, 2.7, 4.6):
        draws = np.clip(np.floor(mean + 0.5 * rng.standard_normal(200_000) + 0.5), 1, 5)
        assert math.isclose(draws.mean(), _expected_score(mean, 0.5), abs_tol=0.01)


def test_probability_weighted_scores_where_the_judge_gives_probabilities() -> None:
    from judgeaudit.judges.pointwise import ScoreVerdict
    from judgeaudit.scoring.run import ScoreTable, build_results

    items = ITEMS[:20]
    perts = resolve(["order_desc"])
    table = ScoreTable(list(items))
    for name, shift in (("baseline", 0.0), ("order_desc", 0.3)):
        vs = []
        for it in items:
            q = it.score / 5
            probs = {"1": 0.1, "2": 0.1, "3": 0.1, "4": 0.7 - shift - 0.1 * q,
                     "5": 0.0 + shift + 0.1 * q}
            vs.append(ScoreVerdict(it.id, "4", 4, probs))
        table.verdicts[name] = {0: vs}
        table.scores[name] = {0: [4.0] * len(items) if name == "baseline" else
                              [it.score for it in items]}
    judge = RubricJudge(None, "pointwise_scoring_v1")  # type: ignore[arg-type]
    res = build_results(table, perts, repeats=1, seed=0, judge=judge, n_boot=200)
    p = res["perturbations"]
    # The argmax is constant: no correlation; the expected score still ranks the items.
    assert p["baseline"]["spearman"]["value"] is None
    assert p["baseline"]["expected"]["spearman"]["value"] == pytest.approx(1.0)
    assert p["order_desc"]["expected"]["shift_vs_baseline"]["value"] == pytest.approx(0.3)
    rec = res["recommended"]
    assert rec["best_by_spearman"] == "order_desc" and not rec["clearly_better"]
    assert rec["template"] == "baseline"  # no interval above the baseline: keep it
    assert any("undefined" in n for n in rec["notes"])


def test_a_runner_up_that_is_the_baseline_is_compared_once():
    """The note 'not clearly better than the runner-up baseline' was followed by the same
    comparison again as 'the baseline 'baseline''."""
    from judgeaudit.data.schema import PointwiseItem
    from judgeaudit.scoring.run import BASELINE, ScoreTable, recommend

    rng = np.random.default_rng(0)
    gold = [float(g) for g in rng.integers(1, 6, size=30)]
    items = [PointwiseItem(id=f"i{i}", prompt="q", response="r", score=g)
             for i, g in enumerate(gold)]
    noisy = lambda s: [min(5.0, max(1.0, g + float(rng.normal(0, s)))) for g in gold]  # noqa: E731
    table = ScoreTable(items, scores={"order_desc": {0: noisy(0.8)}, BASELINE: {0: noisy(0.9)},
                                      "ids_letters": {0: noisy(2.5)}})
    perts = {n: {"spearman": {"value": v}, "pearson": {"value": v}, "n_missing": 0}
             for n, v in (("order_desc", 0.80), (BASELINE, 0.78), ("ids_letters", 0.30))}
    rec = recommend(table, list(perts), gold, perts, seed=0, nb=400)
    assert rec["best_by_spearman"] == "order_desc"
    assert rec["vs_runner_up"]["template"] == BASELINE
    assert "vs_baseline" not in rec
    assert sum("baseline" in n for n in rec["notes"] if "clearly better than the" in n) <= 1
