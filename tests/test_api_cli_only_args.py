"""An API function given a CLI option it does not take says what the API does instead:
`audit(out="x")` was met with "did you mean 'timeout'?" (difflib's nearest name), and
`fail_on=` with the list of every argument. A misspelt argument still gets the nearest."""

from __future__ import annotations

import pytest

import judgeaudit


@pytest.mark.parametrize(("fn", "kw", "says"), [
    ("audit", "out", "res.to_json(DIR)"),
    ("evaluate", "out", "res.report(PATH)"),
    ("audit", "fail_on", "gate on it in the script (res.ok, res.summary())"),
    ("rank", "json", "res.to_dict()"),
    ("evaluate", "config", "give the settings as arguments"),
    ("evaluate", "plan_only", "judgeaudit --plan-only PLAN.jsonl"),
    ("audit", "verbose", "logging.basicConfig"),
])
def test_a_cli_option_is_named_as_the_cli_s_with_the_api_s_way(fn, kw, says):
    with pytest.raises(TypeError) as err:
        getattr(judgeaudit, fn)("sim", **{kw: "x"})
    msg = str(err.value)
    assert msg.startswith(f"{fn}(): got an unexpected keyword argument {kw!r}; ")
    assert "is the CLI's" in msg and says in msg
    assert "did you mean" not in msg


def test_a_misspelt_argument_still_gets_the_nearest_name():
    with pytest.raises(TypeError, match=r"'timout'; did you mean 'timeout'\?$"):
        judgeaudit.audit("sim", timout=3)
