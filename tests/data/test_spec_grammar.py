import pytest

from judgeaudit.data.spec import parse_spec, split_specs


def test_kind_name_params():
    s = parse_spec("replay:/x/y.csv?judge=GPT-4&strategy=Vanilla")
    assert (s.kind, s.name, s.params) == ("replay", "/x/y.csv", {"judge": "GPT-4",
                                                                 "strategy": "Vanilla"})


def test_name_may_contain_colons_and_values_are_url_decoded():
    s = parse_spec("openai:org:model?base_url=http%3A%2F%2F127.0.0.1%3A8000%2Fv1")
    assert s.name == "org:model" and s.params["base_url"] == "http://127.0.0.1:8000/v1"


def test_kind_only_and_params_without_name():
    assert parse_spec("local").kind == "local"
    s = parse_spec("sim?position=0.8&length=1.0")
    assert s.name == "" and s.params == {"position": "0.8", "length": "1.0"}


def test_public_masks_secrets():
    s = parse_spec("openai:gpt?api_key=sk-secret&base_url=u")
    assert "sk-secret" not in s.public() and "***" in s.public()


@pytest.mark.parametrize("bad", ["", "  ", ":name", "bad kind:x", "a?=1"])
def test_bad_specs_are_refused(bad):
    with pytest.raises(ValueError):
        parse_spec(bad)


@pytest.mark.parametrize(("text", "expected"), [
    ("local,local:qwen-0.5b", ["local", "local:qwen-0.5b"]),
    ("simhubj?factor_verbosity=0,0.5,2,1,0,local", ["simhubj?factor_verbosity=0,0.5,2,1,0",
                                                    "local"]),
    ("sim?length=1&seed=2, openai:gpt-4o?base_url=http://h:1/v1",
     ["sim?length=1&seed=2", "openai:gpt-4o?base_url=http://h:1/v1"]),
    (" , local ,", ["local"]),
    ("", []),
])
def test_split_specs_keeps_commas_inside_parameter_values(text, expected):
    assert split_specs(text) == expected
