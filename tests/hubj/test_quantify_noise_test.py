"""quantify tests each susceptibility against the judge's repeat noise with a paired exact
test on the same test items (rewrite's flip at l* against the repeat's), and labels a row
"not shown above repeat noise" only when that test does not reject. The label compared the
point value with the top of the noise interval, which is no test: with a planted flip rate
0.25 against noise 0.047 on ~20 test items it fired in 15 of 20 runs."""

from __future__ import annotations

import json

import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.hubj.quantify import NOISE_ALPHA, flip_value, noise_test
from tests.hubj.test_quantify import _run

runner = CliRunner()


def test_the_paired_test_counts_discordant_items_and_gives_the_exact_one_sided_p():
    test = [f"i{k}" for k in range(12)]
    rw = [1, 1, 1, 0.5, 1, 0, 1, 1, None, 1, 0, 0]
    rep = [0, 0, 0, 0, 1, 1, 0, 0, 0, None, 0, 0.5]
    flips = {(i, "f", 3): y for i, y in zip(test, rw, strict=True)}
    out = noise_test(flips, "f", 3, test, dict(zip(test, rep, strict=True)))
    # pairs: all but i8 (rewrite invalid) and i9 (repeat invalid); higher: i0-i3, i6, i7
    # (0.5 > 0 counts); lower: i5, i11
    assert (out["n_pairs"], out["rewrite_higher"], out["repeat_higher"]) == (10, 6, 2)
    assert out["p"] == pytest.approx(sps.binomtest(6, 8, 0.5, alternative="greater").pvalue)
    assert out["shown_above"] is (out["p"] < NOISE_ALPHA) is False
    assert noise_test(flips, "f", None, test, {}) is None  # no l*: nothing to test
    none = noise_test({}, "f", 3, test, {})  # no pair at all: no evidence
    assert none["n_pairs"] == 0 and none["p"] == 1.0 and none["shown_above"] is False


async def test_a_planted_factor_is_tested_on_the_same_items_as_its_repeat():
    """The test's counts recomputed from the judge's own repeat verdicts (asked again: the
    same answers) and its flips at l*; the planted factor is shown above the noise."""
    out, bundles, _ = await _run({"j": "simhubj?quality=1&factor_verbosity=0,0,1.9,0,0"}, 0,
                                 n=40, n_cal=6)
    r = out.per_judge["j"]["verbosity"]
    t = r["vs_repeat_noise"]
    by_id = {it.id: it for it in out.items}
    items = [by_id[i] for i in out.test]
    verdicts = await bundles["j"].pairwise.judge(items, repeat=1)
    rep = [flip_value(v.winner, 2 if it.label == 1 else 1) for it, v in
           zip(items, verdicts, strict=True)]
    rw = [out.flips["j"].get((i, "verbosity", r["l_star"])) for i in out.test]
    pairs = [(a, b) for a, b in zip(rw, rep, strict=True) if a is not None and b is not None]
    hi = sum(a > b for a, b in pairs)
    lo = sum(a < b for a, b in pairs)
    assert (t["n_pairs"], t["rewrite_higher"], t["repeat_higher"]) == (len(pairs), hi, lo)
    assert t["p"] == pytest.approx(sps.binomtest(hi, hi + lo, 0.5,
                                                 alternative="greater").pvalue)
    assert t["level"] == r["l_star"] == 3 and t["shown_above"] is True


def test_a_real_effect_inside_the_noise_interval_is_not_labelled(shared_data, tmp_path,
                                                                 isolated_cache):
    """The tester's case (planted flip rate 0.25 at l* = 3, noise 0.047, 24 items): the
    susceptibility's value is below the top of the noise interval, which the old rule
    labelled "not above repeat noise"; the paired test rejects, and the terminal says so."""
    judge = "simhubj?factor_verbosity=0,0,1.9,0,0&seed=0"
    res = runner.invoke(app, ["quantify", "--judges", judge, "--data",
                              f"pandalm:{shared_data / 'pandalm_testset'}", "--factors",
                              "verbosity", "--limit", "24", "--pool", "60", "--seed", "0",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    r = doc["per_judge"][judge]["verbosity"]
    noise = doc["repeat_noise"][judge]
    assert r["susceptibility"]["value"] <= noise["ci95"][1]  # the old rule's label fired
    t = r["vs_repeat_noise"]
    assert t["p"] < 0.05 and t["shown_above"] is True
    out = " ".join(res.output.split())
    # the cell (it wraps in a narrow terminal): "above", "p=0.02 (8:1 of 20)"
    assert (f"/ verbosity: above repeat noise (paired test p = {t['p']:.2g}; "
            f"{t['rewrite_higher']}:{t['repeat_higher']} of n = {t['n_pairs']})") in out
    assert "verbosity: not shown above" not in out
    ac = doc["answer_change_rate"]
    assert "answer-change rate (checker): " in out and f"(n={ac['n']} checked rewrites)" in out


def test_the_report_template_words_the_label_as_the_paired_test(tmp_path, isolated_cache):
    """hubj.html labels a row from its `noise_test` (the row's vs_repeat_noise) when the view
    gives one: only where the test does not reject, with its p and n. The view
    (report/html.py `_hubj_view`) is not this change's: it is given the key here as it would
    pass it."""
    import judgeaudit
    from judgeaudit.report import html as H

    judge, flat = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3", "simhubj?seed=4"
    q = judgeaudit.quantify([judge, flat], "builtin:facts", factors="verbosity,authority",
                            pool=40, limit=20, levels=(1, 3, 5))
    assert q.ok
    doc = json.loads(json.dumps(q.to_dict()))
    ctx = H._hubj_view(doc)
    tests = []
    for t in ctx["quantify"]["tables"]:
        for r in t["rows"]:
            r["noise_test"] = doc["per_judge"][t["judge"]][r["factor"]]["vs_repeat_noise"]
            tests.append(r["noise_test"])
    page = H._env().get_template("hubj.html").render(**ctx)
    labels = page.count("not shown above repeat noise (paired test p = ")
    assert labels == sum(not x["shown_above"] for x in tests) > 0
    assert sum(x["shown_above"] for x in tests) > 0  # the planted factor is not labelled
    assert "susceptibility not above repeat noise" not in page  # the old comparison's words
    assert "exact one-sided sign (McNemar) test" in page
