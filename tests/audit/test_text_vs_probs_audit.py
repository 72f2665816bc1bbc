"""An audit and the evaluate report show the verdicts whose probabilities went against the
answer's own text (counted by evaluate's summary only, before): the audit's baseline
verdicts carry `text_vs_probs` with its n, and the evaluate page says "k of n". The server
is a real loopback OpenAI-compatible one whose logprobs outweigh the sampled letter."""

from fakeserver import FakeLLMServer

import judgeaudit
from judgeaudit.report import render_report


def _spec(srv: FakeLLMServer) -> str:
    return f"openai:m?base_url={srv.openai_url}&api_key=k"


def test_audit_baseline_counts_probabilities_against_the_text():
    with FakeLLMServer(confidence=0.3) as srv:
        res = judgeaudit.audit(_spec(srv), "builtin:facts", n=6, probes="position",
                               cache=False)
    tvp = res.to_dict()["baseline"]["text_vs_probs"]
    assert tvp["n"] == 12 and tvp["n_disagree"] == 12  # 6 items x 2 orders, all against
    # the report says it too (README promised it; only results.json had it: t-regress)
    assert "12 of 12 verdicts read from probabilities went against" in render_report(
        res.to_dict())


def test_audit_terminal_says_how_many_verdicts_went_against_the_text(tmp_path):
    from typer.testing import CliRunner

    from judgeaudit.cli.main import app

    with FakeLLMServer(confidence=0.3) as srv:
        res = CliRunner().invoke(app, ["audit", "--judge", _spec(srv), "--data",
                                       "builtin:facts", "--n", "6", "--probes", "position",
                                       "--no-cache", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "text vs probabilities (unperturbed verdicts): 12 of 12 verdicts" in res.output


def test_evaluate_page_says_how_many_verdicts_went_against_the_text():
    with FakeLLMServer(confidence=0.3) as srv:
        res = judgeaudit.evaluate(_spec(srv), "builtin:facts", limit=5, cache=False)
    html = render_report(res.to_dict())
    assert "Probabilities against the text" in html and "10 of 10 verdicts" in html
    with FakeLLMServer(confidence=0.9) as srv:
        agree = judgeaudit.evaluate(_spec(srv), "builtin:facts", limit=5, cache=False)
    assert "Probabilities against the text" not in render_report(agree.to_dict())


def test_evaluate_terminal_says_how_many_verdicts_went_against_the_text(tmp_path):
    from typer.testing import CliRunner

    from judgeaudit.cli.main import app

    with FakeLLMServer(confidence=0.3) as srv:
        res = CliRunner().invoke(app, ["evaluate", "--judge", _spec(srv), "--data",
                                       "builtin:facts", "--limit", "5", "--no-cache",
                                       "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "text vs probabilities: 10 of 10 verdicts read from probabilities" in res.output
