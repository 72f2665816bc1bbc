"""RetryPolicy given directly is held to the same bounds as the CLI's and the Python API's
`retry=` (at most 20 retries), and its delays are sane: a bad value is refused when the
policy is made, with the field's name, not met as an endless retry loop or a ValueError from
deep inside asyncio.sleep."""

from __future__ import annotations

import math

import pytest

from judgeaudit.llm.client import MAX_RETRIES, RetryPolicy


def test_the_api_bound_is_the_policy_bound():
    from judgeaudit import api

    assert api.MAX_RETRIES == MAX_RETRIES == 20


@pytest.mark.parametrize("kwargs", [
    {}, {"max_retries": 0}, {"max_retries": MAX_RETRIES}, {"base_delay": 0, "max_delay": 0},
    {"max_retries": 2, "base_delay": 0.01}, {"max_retry_after": 0}, {"stop_after": 0},
    {"stop_after": 5}, {"longest_wait": math.inf}, {"base_delay": 1, "max_delay": 1},
])
def test_sane_policies_are_taken(kwargs):
    RetryPolicy(**kwargs)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"max_retries": MAX_RETRIES + 1}, "max_retries"),
    ({"max_retries": 10**6}, "max_retries"),
    ({"max_retries": -1}, "max_retries"),
    ({"max_retries": 2.5}, "max_retries"),
    ({"max_retries": True}, "max_retries"),
    ({"max_retries": "3"}, "max_retries"),
    ({"base_delay": -0.1}, "base_delay"),
    ({"base_delay": math.nan}, "base_delay"),
    ({"max_delay": math.inf}, "max_delay"),
    ({"max_delay": -1}, "max_delay"),
    ({"base_delay": 60.0}, "base_delay"),  # above max_delay (30 s): it never applied
    ({"max_retry_after": math.inf}, "max_retry_after"),
    ({"max_retry_after": -5}, "max_retry_after"),
    ({"longest_wait": -1}, "longest_wait"),
    ({"longest_wait": math.nan}, "longest_wait"),
    ({"stop_after": -1}, "stop_after"),
    ({"stop_after": 1.5}, "stop_after"),
])
def test_bad_policies_are_refused_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"RetryPolicy\.{field}: expected"):
        RetryPolicy(**kwargs)


def test_a_session_given_too_many_retries_says_so():
    from judgeaudit.session import Session

    with pytest.raises(ValueError, match="max_retries"):
        Session(cache=False, retry=MAX_RETRIES + 1)
