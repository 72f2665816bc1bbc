"""The judge factory's judge-level parameters (template, orders, score_template): a typo is
matched against them as well as against the provider's own, and `judgeaudit judges` lists
them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.judges import make_judge
from judgeaudit.judges.factory import JUDGE_PARAMS


def test_a_typo_of_a_judge_level_parameter_suggests_it():
    """'order' was matched to sim's 'order_bias' only, and 'orders' was not in the list."""
    with pytest.raises(ValueError, match=r"did you mean 'orders'\?.*known: .*orders"):
        make_judge("sim?order=one")
    assert make_judge("sim?orders=one").pairwise.both_orders is False
    # a provider's open-ended names (simhubj's factor_NAME) stay its own to check
    make_judge("simhubj?factor_tone=1&orders=one")
    with pytest.raises(ValueError, match="factor_tone"):
        make_judge("simhubj?factor_tone=x")


def test_judges_lists_the_parameters_every_judge_takes():
    res = CliRunner().invoke(app, ["judges"])
    assert res.exit_code == 0
    text = " ".join(res.output.split())
    assert "every judge parameters:" in text
    for name in JUDGE_PARAMS:
        assert f" {name}: " in text


def test_judges_listing_goes_to_stdout_for_a_pipe():
    """`judgeaudit judges | grep sim` printed nothing: the listing went to stderr."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "judgeaudit.cli.main", "judges"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "sim parameters:" in done.stdout
    assert "template pairwise_v1" in done.stdout and "providers" not in done.stderr
