"""A replica list (`base_url=URL1|URL2`) is written back with its `|` as the user typed it:
results.json showed `...18011/v1%7Chttp://...`. It still round-trips."""

from __future__ import annotations

from judgeaudit.spec import parse_spec


def test_a_replica_list_keeps_its_bar_and_round_trips() -> None:
    text = "openai:M?base_url=http://127.0.0.1:18011/v1|http://127.0.0.1:18012/v1"
    spec = parse_spec(text)
    assert str(spec) == text
    assert parse_spec(str(spec)) == spec
