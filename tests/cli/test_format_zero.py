"""Numbers that round to 0 print as 0: a bias share read "-0.0015 [-0.00, -0.00]"."""

from judgeaudit.cli.format import est_ci


def test_values_that_round_to_zero_print_without_a_sign():
    e = {"value": -0.0004, "ci95": [-0.0023, -0.0006], "n": 10}
    assert est_ci(e) == "0.000 [0.00, 0.00]"
    assert est_ci({"value": -0.25, "ci95": [-0.5, 0.001]}) == "-0.250 [-0.50, 0.00]"
