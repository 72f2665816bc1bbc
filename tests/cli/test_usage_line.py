"""The calls line says what the run's own calls used: tokens, and the cost where the
provider's list price is known. It said made / cached / failed only, so a paying user had to
open results.json to see the bill; the report page showed it already."""

from __future__ import annotations

from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.format import calls_text, usage_text
from judgeaudit.cli.main import app


def test_usage_text_shows_tokens_and_the_cost_when_known():
    calls = {"made": 3, "cached": 1, "failed": 0, "prompt_tokens": 12345,
             "completion_tokens": 67, "cost_usd": 0.0123456}
    assert usage_text(calls) == "; 12,345 prompt + 67 completion tokens, $0.0123 at list prices"
    assert usage_text({**calls, "cost_usd": None}) == "; 12,345 prompt + 67 completion tokens"
    # the embedded judge: tokens counted, nothing paid
    assert usage_text({**calls, "cost_usd": 0.0}) == "; 12,345 prompt + 67 completion tokens"
    assert usage_text({"made": 0, "cached": 5, "prompt_tokens": 0}) == ""  # all from cache
    line = calls_text({"calls": calls, "seconds": 2.0})
    assert line == ("calls: 3 made, 1 from cache, 0 failed; 12,345 prompt + 67 completion "
                    "tokens, $0.0123 at list prices; 2.0 s")


def test_evaluate_prints_the_tokens_its_calls_used(tmp_path, isolated_cache):
    with FakeLLMServer() as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        args = ["evaluate", "--judge", spec, "--data", "builtin:facts", "--limit", "5",
                "--out", str(tmp_path / "out")]
        first = CliRunner().invoke(app, args)
        again = CliRunner().invoke(app, args)  # all from the cache: nothing used
    assert first.exit_code == 0 and again.exit_code == 0
    text = " ".join(first.output.split())
    assert " prompt + 10 completion tokens; 0 invalid verdicts of 10" in text
    assert "completion tokens" not in again.output
