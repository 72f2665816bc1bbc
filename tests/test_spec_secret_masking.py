"""A spec that does not parse was quoted whole in its error: `openai:m?api_key=KEY?x=1` raised
"bad spec 'openai:m?api_key=KEY?x=1': a second '?'", and the session's "judge '...'" prefix
too (the key in a traceback, a notebook cell, a CI log). A duplicated api_key and an empty
parameter name did the same. Each error now quotes the spec with every secret-looking value
masked (and keeps the rest, so the message still shows what is wrong); a `Spec`'s repr and
`Session.judges` are masked as `Spec.public` is."""

from __future__ import annotations

import pytest

import judgeaudit
from judgeaudit.spec import Spec, parse_spec, public_spec

KEY = "sk-EXCKEY-0123456789abcdefgh"
KEY2 = "sk-OTHER-0123456789abcdefgh"


@pytest.mark.parametrize(("spec", "shown", "why"), [
    (f"openai:m?api_key={KEY}?x=1", "'openai:m?api_key=***?x=1'", "a second '?'"),
    (f"openai:m?api_key={KEY}&api_key={KEY2}", "'openai:m?api_key=***&api_key=***'",
     "parameter 'api_key' given twice"),
    (f"openai:m?=1&api_key={KEY}", "'openai:m?=1&api_key=***'", "empty parameter name"),
    (f"op+en:m?token={KEY}", "'op+en:m?token=***'", "kind must be a word"),
    (f"openai:m?authorization=Bearer%20{KEY}&password={KEY2}&a=1&a=2",
     "'openai:m?authorization=***&password=***&a=1&a=2'", "parameter 'a' given twice"),
    (f"openai:m?base_url=http://user:{KEY}@h/v1&x=1&x=2", "'openai:m?base_url=http://user:***@h/v1"
     "&x=1&x=2'", "parameter 'x' given twice"),
    (f"openai:m?x-api-key={KEY}?y=1", "'openai:m?x-api-key=***?y=1'", "a second '?'"),
])
def test_a_spec_error_masks_the_secrets_and_keeps_the_rest(spec, shown, why):
    with pytest.raises(ValueError) as err:
        parse_spec(spec)
    msg = str(err.value)
    assert KEY not in msg and KEY2 not in msg
    assert msg.startswith(f"bad spec {shown}: ") and why in msg
    assert public_spec(spec) == shown.strip("'")


def test_the_api_error_of_a_bad_spec_never_quotes_the_key():
    with pytest.raises(ValueError, match=r"a second '\?'") as err:
        judgeaudit.evaluate(f"openai:m?api_key={KEY}?x=1", "builtin:facts", limit=2,
                            cache=False)
    assert KEY not in str(err.value) and "api_key=***?x=1" in str(err.value)


def test_a_spec_repr_masks_as_public_does():
    sp = parse_spec(f"openai:m?api_key={KEY}&base_url=http://u:{KEY2}@h/v1&temperature=0")
    shown = repr(sp)
    assert KEY not in shown and KEY2 not in shown
    assert shown == ("Spec(kind='openai', name='m', params={'api_key': '***', "
                     "'base_url': 'http://u:***@h/v1', 'temperature': '0'})")
    assert sp.params["api_key"] == KEY  # the value itself is kept: the provider sends it
    assert Spec("sim") == parse_spec("sim")


async def test_session_judges_show_no_key(isolated_cache):
    spec = f"openai:m?api_key={KEY}&base_url=http://127.0.0.1:9/v1"
    async with judgeaudit.Session(cache=False) as s:
        bundle = s.judge(spec)
        judges = s.judges
        assert judges[spec] is bundle  # keyed by the spec as given
        for text in (repr(judges), str(judges), repr(bundle), repr(s)):
            assert KEY not in text, text
        assert "'openai:m?api_key=***&base_url=http://127.0.0.1:9/v1': JudgeBundle(" in repr(
            judges)
