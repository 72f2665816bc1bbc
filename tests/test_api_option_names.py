"""An API call's messages name the API's arguments (max_n), the CLI's its options (--max-n):
audit(adaptive=True, n=10) said "--adaptive chooses the items itself (--max-n)"."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app


def test_adaptive_with_n_names_the_arguments_of_the_caller():
    with pytest.raises(ValueError) as err:
        judgeaudit.audit("sim", "builtin:facts", adaptive=True, n=10, cache=False)
    assert str(err.value) == ("adaptive chooses the items itself (max_n); not with n, sample "
                              "or panel")
    res = CliRunner().invoke(app, ["audit", "--judge", "sim", "--adaptive", "--n", "10"])
    assert res.exit_code == 2
    assert "--adaptive chooses the items itself (--max-n); not with --n" in res.output
