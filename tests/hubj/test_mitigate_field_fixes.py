"""Field faults of `judgeaudit mitigate` found by a tester, each on its own recorded data.

The first: `judgeaudit mitigate --judges 'sim?quality=1&length=2&seed=1,sim?quality=1&seed=2,
sim?quality=1&length=-1&seed=3' --data pandalm:/work/shared/data/pandalm_testset --scorer
'simhubj?score_from=length' --factor length --candidate response_1 --limit 400` gave the
unbiased judge psi +12.26, kappa at its floor 0.05 and BC 0.486 [0.480, 0.493] beside a win
interval [0.438, 0.535], marked converged. Its verdicts and score differences are below, as
that run's results.json kept them (`per_query`): y per judge as one character per query
(0, h = 0.5, 1) and the factor score difference + 4 as one digit.
"""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.hubj import mitigate as M

JUDGES = ["sim?quality=1&length=2&seed=1", "sim?quality=1&seed=2",
          "sim?quality=1&length=-1&seed=3"]
Y_TEXT = [
    (
    "h0hhh11hh11100111100000000011h01010011001h0hh0h010110hh011h11h101h10000h"
    "0h1101h110h0h100h0h011hh000h0h0h11101h0101hh00h000100h0h1100110h01hh0100"
    "h11101001h001h110hh01100011h1000hh01111h0hh1000010000hh10hh0hhh1111hh1h0"
    "11hh11001011h00h1h1h00hh00h101100hhh1110h110001hh1100001h11hh000110001h0"
    "000000010000101110110h00101101h000h10hhhhh1101h0hhh11h1h01001000001h0h0h"
    "000h111h1hh11000000hh000h0011h1h11hhh11h"),
    (
    "0101h0hh11011h0h0h01h0001001100h101h00hh00h001hh1h010h1h111hhh1hh111hh0h"
    "0111h10hh00hhhh111hh0h10hh0h011hh11h11h10hh1h101001hh10hhh00hhh0h1h1hhh0"
    "00h1hh00110h110hh01h000h0h1h1010hh0h10hh00h00hh010h0h1100hh00111hhhhh110"
    "h01h1hhh101h0hh1h0h0h00h0h111h1100hh11h0hh1hh01h01h1h0h000h110h011hh0h0h"
    "h01h0h00000h1011h001h00h0011h10h011hh0hh1h01011h01h10111h1010h0h01001h00"
    "11001hh00hhh01hh001h10hh00110111111hhh00"),
    (
    "010100110111h001001110h1h1h11hh11h100h1h00000h101h0h01101h1h01h011hh11hh"
    "010hhhhhh0001hh1h11hh0110hhh01111h101hh000hh11h1hhhh1h0000hh1h0h1h011h10"
    "001h1h110hh01h0h00h0010h011hh0h0hh01hh000hh111h1h1h0h1h00h001h01001h010h"
    "00101111h0h00h011h11h1h0hh101hh100h1h1h0h1h1hhhhh1010h0010h011h0001h1h11"
    "10hhh0101hhhhh1h10h00h1110hh1hhhh11h0hh11h000hhh0h100hh1h1h1hhhhh1011001"
    "hhh0hhhh01h00h111011hh0h0h1101h10h1011hh"),
]
SCORE_DIFF_TEXT = (
    "444455444444335555333333334434433344553344456454535544334455445434444444"
    "444444455444444444444444433433344453644545443343335334435532444444444444"
    "444424216334444444444444444444444444444444444443443444444444444455444444"
    "554444334366643445544444444444444444444444443344444333454544444444443444"
    "334444443333444444444466535545434345444444565543444444444444444444443444"
    "3333554454455434444444444324546356455555")
# The third: LLMBar's recorded verdicts (Natural set, Vanilla strategy; GPT-4, ChatGPT,
# LLaMA2; candidate the rejected response, factor length, scorer simhubj?score_from=length),
# 100 queries, as that run's results.json kept them.
LLMBAR_Y_TEXT = [
    (
    "000000000h00h000000000000000000000000000000001000000000000000000000000h0"
    "000000000h000000h00000000001"),
    (
    "000000h0hhh0hhh00000h000h0hh00000hh00h0000h01hh0h000100h00000h000h000h00"
    "000000h000h00h00hh001000hh01"),
    (
    "h000000h0000h1h0hh00h00h0hh0000001000100000010h00000100100000000h0000h00"
    "00h0000h000hh100h100h000h0h1"),
]
LLMBAR_SCORE_DIFF_TEXT = (
    "343544445434444344534435454444444444454444444454333344344343334444344454"
    "4474444543344433464444444454")
# the middle judge's planted truth: no length effect, BC = its expected win rate, 0.493 by
# the tester's simulation of the same judge
TRUE_BC = 0.493


def _tester_data(y_text: list[str] = Y_TEXT, diff_text: str = SCORE_DIFF_TEXT
                 ) -> tuple[np.ndarray, np.ndarray]:
    """A recorded run's Y (judges x queries) and its bias control tanh(score difference)."""
    value = {"0": 0.0, "h": 0.5, "1": 1.0}
    Y = np.array([[value[c] for c in text] for text in y_text])
    diff = np.array([int(c) - 4 for c in diff_text], dtype=float)
    return Y, np.tanh(diff)


def test_the_tie_judge_s_bc_keeps_an_honest_interval_or_the_fit_says_it_failed():
    """kappa of the judge without a length effect drifted down step by step while its psi
    grew, until psi outgrew the quadrature nodes and kappa fell to its floor: psi 12.26, BC
    0.486 [0.480, 0.493] (0.14 of the win interval's width, missing the truth 0.493),
    converged. Now the fit stops at the last step its nodes integrate and says it did not
    converge, or converges to a kappa off the floor; either way BC's interval is about as
    wide as the win's and covers the truth."""
    Y, delta = _tester_data()
    assert Y.shape == (3, 400) and int((Y[1] == 0.5).sum()) == 149
    fit = M.fit(Y, delta, JUDGES, [f"q{i}" for i in range(400)])
    f = fit.per_judge[JUDGES[1]]
    k = f.extra["kappa"]
    assert not k["at_floor"] and k["value"] > 0.2, k
    assert abs(f.psi) < 5, f.psi
    width = f.bc.ci95[1] - f.bc.ci95[0]
    raw = f.win.ci95[1] - f.win.ci95[0]
    assert width > 0.75 * raw, (f.bc, f.win)
    assert f.bc.ci95[0] <= TRUE_BC <= f.bc.ci95[1], f.bc
    if not f.converged:  # a fit that did not converge says so beside the numbers
        assert not k["converged"] and k["stopped"] in ("quadrature", "steps")
        assert "NOT CONVERGED" in (fit.kappa_note() or "")
    else:
        assert k["converged"] and f.extra["quadrature_ok"]


def test_converged_means_the_fixed_point_settled_not_that_a_step_was_small():
    """A drift of 0.0009 a step (each below the old tolerance 1e-3) went on for 30 steps
    on the tester's data; a step below the tolerance is settled only when the change still
    to come, from the ratio of the last changes, is small against kappa's se."""
    se = np.array([0.02])
    drift = [np.array([0.0009])] * 3
    assert not M._settled(drift, se)
    shrinking = [np.array([0.004]), np.array([0.0016]), np.array([0.0006])]
    assert M._settled(shrinking, se)
    assert not M._settled(shrinking[:2], se)  # too few steps to tell
    assert not M._settled([np.array([0.01])] * 2 + [np.array([0.002])], se)  # change too big


def test_a_fit_whose_integral_the_nodes_miss_is_not_converged():
    """The old fit's parameters (psi 12.3 for the tie judge, kappa 0.05) integrate to a log
    likelihood that 43 nodes put 77 units away from 21 nodes' value; at kappa 0.5 the two
    agree to 1e-4. The check `_quadrature_error` is what marks such a fit not converged."""
    Y, delta = _tester_data()
    mask = np.isfinite(Y)
    old = np.array([-0.1446, -4.52e-05, 0.0811, 2.7216, 1.38e-4, -0.8581, 0.5869, 12.263,
                    0.6298])
    kw_old = 1.0 / np.array([0.642, 0.05, 0.580])
    assert M._quadrature_error(old, Y, mask, delta, kw_old) > 10 * M.QUAD_TOL
    sane = np.array([-0.17, -0.07, 0.07, 2.84, 0.2, -0.85, 0.68, 1.45, 0.75])
    assert M._quadrature_error(sane, Y, mask, delta, 1.0 / np.array([0.64, 0.5, 0.58])) \
        < M.QUAD_TOL


def test_planted_two_order_ties_still_converge_to_kappa_one_half():
    """Where the model holds (normal query effects, each verdict the mean of two draws) the
    fixed point contracts and is settled within a few steps, near the planted 1/2."""
    p = M.simulate(400, [-0.1, 0.0, 0.1], [2.5, 0.0, -0.9], seed=5, orders=2)
    fit = M.fit(p.Y, p.delta, ["a", "b", "c"], [f"q{i}" for i in range(400)])
    for f in fit.per_judge.values():
        k = f.extra["kappa"]
        assert f.converged and k["converged"] and k["steps"] < 15, k
        assert abs(k["value"] - 0.5) < 0.05


@pytest.mark.parametrize("estimator", M.ESTIMATORS)
def test_a_bias_share_excludes_zero_only_when_phi_s_interval_does(estimator):
    """LLMBar's GPT-4 had phi +0.40 [-1.62, 2.42] beside a bias share -0.0015 [-0.0023,
    -0.0006]: the shown share (win - BC) sits off the model's (0 at phi = 0) by the prior on
    theta's pull, so it excluded 0 with the opposite sign to phi. Now a share's interval
    reaches 0 whenever phi's does, and says how it was widened; one whose phi excludes 0
    keeps the delta method's."""
    Y, delta = _tester_data(LLMBAR_Y_TEXT, LLMBAR_SCORE_DIFF_TEXT)
    fit = M.fit(Y, delta, ["GPT-4", "ChatGPT", "LLaMA2"], [f"q{i}" for i in range(100)],
                estimator=estimator)
    seen_widened = False
    for name, f in fit.per_judge.items():
        d = f.as_dict()
        lo_phi, hi_phi = d["phi"]["ci95"]
        lo, hi = f.bias_share.ci95
        if lo_phi <= 0.0 <= hi_phi:
            assert lo <= 0.0 <= hi, (name, d["phi"], f.bias_share)
        else:
            assert f.bias_share.method == "delta", name
        if f.bias_share.method != "delta":
            seen_widened = True
            assert f.bias_share.method.startswith("delta, widened to 0")
            assert (lo == 0.0) or (hi == 0.0)
    gpt4 = fit.per_judge["GPT-4"]
    assert gpt4.win.value == 0.045 and gpt4.as_dict()["phi"]["ci95"][0] < 0.0
    if estimator == "marginal":
        assert seen_widened  # the recorded fault: without the widening it excluded 0
