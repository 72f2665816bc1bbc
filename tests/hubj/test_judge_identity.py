"""Two judge specs that the judge reads the same are one judge, whatever their text: a
parameter given at its default (`simhubj?seed=0` is `simhubj`), a number in another form
(`seed=0.0`), a preset's own value, the default model (`sim:default`). The HUB-J commands took
`--judges simhubj,simhubj?seed=0` as two judges whose verdicts are one judge's, counted twice
in discover's consensus, quantify's profile and mitigate's several-judge fit. Only what the
judge provably reads the same is merged: `sim:positional?position=0` is not
`sim:positional` (its preset plants position 1). Real commands on sim judges, as
`test_hubj_inputs` refuses a judge given twice by its text."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from judgeaudit.commands import _judge_key
from judgeaudit.judges import make_judge
from judgeaudit.llm.registry import make_provider, provider_class
from tests.hubj.test_discover_stages import _pairs, _StageScript  # noqa: F401 (registers it)

runner = CliRunner()


@pytest.fixture(autouse=True)
def _stub(stub_embedder, isolated_cache):
    pass


def _said(output: str) -> str:
    return " ".join(output.split())


@pytest.mark.parametrize(("cmd", "judges", "said"), [
    ("discover", "sim,sim?seed=0",
     "--judges: sim and sim?seed=0 are the same judge (given twice); give each judge once"),
    ("quantify", "simhubj,simhubj:default?seed=0.0",
     "--judges: simhubj and simhubj:default?seed=0.0 are the same judge (given twice)"),
    # a judge-level parameter at its declared default, and a preset's own value
    ("mitigate", "sim:verbose?template=pairwise_v1&orders=both,sim:verbose?position=0",
     "--judges: sim:verbose?template=pairwise_v1&orders=both and sim:verbose?position=0 are "
     "the same judge (given twice)"),
])
def test_a_judge_given_again_at_its_defaults_is_refused_naming_both(cmd, judges, said,
                                                                    tmp_path):
    extra = {"discover": ["--llm", "test-hubj-stages:ok"], "quantify": [],
             "mitigate": ["--scorer", "simhubj?score_from=length"]}[cmd]
    res = runner.invoke(app, [cmd, "--judges", judges, *extra, "--data",
                              _pairs(tmp_path / "p.jsonl", 8, 8), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert said in _said(res.output), res.output
    assert not (tmp_path / "o" / "results.json").exists()  # refused before any work


def test_the_api_refuses_it_too(tmp_path):
    with pytest.raises(ValueError, match=r"^judges: simhubj and simhubj\?seed=0 are the same "
                                         r"judge \(given twice\); give each judge once$"):
        judgeaudit.discover(["simhubj", "simhubj?seed=0"], _pairs(tmp_path / "p.jsonl", 8),
                            llm="test-hubj-stages:ok")


def test_a_value_that_is_no_default_of_this_preset_keeps_two_judges(tmp_path):
    """The declared default (sim: "position ... (default 0)") is the plain sim's; the
    positional preset plants 1, so position=0 there is another judge, and both are studied."""
    judges = "sim:positional?length=5&noise=0,sim:positional?length=5&noise=0&position=0"
    res = runner.invoke(app, ["discover", "--judges", judges, "--llm", "test-hubj-stages:ok",
                              "--data", _pairs(tmp_path / "p.jsonl", 8), "--iterations", "1",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["judges"] == judges.split(",")


# ---- what the key merges, and the readings it rests on ----------------------------------------

@pytest.mark.parametrize(("a", "b"), [
    ("simhubj", "simhubj?seed=0"),
    ("sim", "sim:default?seed=0.0&noise=1&probs=noisy"),
    ("simhubj?factor_x=1", "simhubj?factor_x=1,2,3,4,5"),  # c means c * level
    ("sim?orders=both&score_template=pointwise_v1", "sim"),
    # one order's answers are the judge's own first-order answers: the same rater
    ("sim?position=0.5", "sim?position=0.5&orders=one"),
    ("openai:m?temperature=0", "openai:m?temperature=0.0"),
    ("openai:m?logprobs=auto&prefill=instruct", "openai:m"),
    ("openai:m?max_tokens=016", "openai:m?max_tokens=16"),
    # operational parameters and secrets change how a call is sent or who pays, not the
    # verdict: the cache answers both with one answer
    ("openai:m?timeout=5&api_key=a", "openai:m?api_key=b"),
    ("local", "local:qwen-1.5b?backend=auto"),
    ("local?backend=transformers&decode=lookup&lookup_k=10", "local?backend=transformers"),
])
def test_specs_read_the_same_are_one_judge(a, b):
    assert _judge_key(a) == _judge_key(b)


@pytest.mark.parametrize(("a", "b"), [
    ("sim:positional", "sim:positional?position=0"),
    ("sim?seed=1", "sim?seed=2"),
    ("openai:m", "openai:m?temperature=0"),  # the request's temperature, not 0
    ("openai:m", "openai:m?batch_wait=2"),  # refused without batch=on: not merged away
    ("local?backend=ik", "local?backend=transformers"),
    ("replay:/no/such.csv", "replay:/no/such.csv?model=x"),  # a column filter: another judge
])
def test_specs_read_differently_are_two_judges(a, b):
    assert _judge_key(a) != _judge_key(b)


def test_explicit_decode_lookup_is_the_default_only_where_it_keeps_the_backend():
    """local's help says "decode ... (default lookup)", but decode= given is a transformers
    setting: it picks transformers where auto may pick an integer backend, another judge."""
    same = (make_provider("local", "qwen-1.5b", {"decode": "lookup"}).backend
            == make_provider("local", "qwen-1.5b", {}).backend)
    assert (_judge_key("local?decode=lookup") == _judge_key("local")) is same


def test_openai_reads_both_number_forms_and_its_declared_defaults_alike():
    """What `_READ_AS_NUMBER` and the declared-default rule rest on for the providers whose
    cache identity holds the parameters as given: the values the provider sends."""
    def made(params: dict[str, str]):
        return make_provider("openai", "m", params)

    assert made({"temperature": "0"}).temperature == made({"temperature": "0.0"}).temperature
    assert made({"max_tokens": "016"}).max_tokens == made({"max_tokens": "16"}).max_tokens
    assert (made({"logprobs": "auto", "prefill": "instruct"}).logprobs_mode,
            made({"logprobs": "auto", "prefill": "instruct"}).prefill_mode) == (
        made({}).logprobs_mode, made({}).prefill_mode)
    a = make_provider("anthropic", "m", {"temperature": "0"})
    assert a.temperature == make_provider("anthropic", "m", {"temperature": "0.0"}).temperature


def test_the_declared_defaults_merged_for_raw_identities_are_these():
    """Every default the openai and anthropic help declares outside their operational and
    secret parameters, as `_judge_key` fills it in: a new one here must be checked against the
    provider's code (read with `params.get(name, default)`?) before it is trusted."""
    from judgeaudit.commands import _declared_default

    found = {}
    for name in ("openai", "anthropic"):
        cls = provider_class(name)
        found[name] = {k: d for k, v in (cls.known_params or {}).items()
                       if k not in cls.operational_params | cls.secret_params
                       and (d := _declared_default(v)) is not None}
    assert found == {"openai": {"logprobs": "auto", "prefill": "instruct"}, "anthropic": {}}


def test_the_judge_level_defaults_are_what_make_judge_uses():
    plain = make_judge("sim")
    given = make_judge("sim?template=pairwise_v1&orders=both&score_template=pointwise_v1")
    assert given.pairwise.template.sha256 == plain.pairwise.template.sha256
    assert given.rubric.template.sha256 == plain.rubric.template.sha256
    assert given.pairwise.both_orders is plain.pairwise.both_orders is True
