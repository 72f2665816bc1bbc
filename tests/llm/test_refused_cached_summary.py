"""`--json`'s calls give `refused_cached`: the too-long refusals a re-run took from the cache
and did not send again (results.json had the count, the summary did not, so a script saw
2 failed calls and 0 made with no reason)."""

from __future__ import annotations

import json

from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from tests.llm.test_live_refusals_kept import _no_keys, _rule  # noqa: F401 (autouse fixture)
from tests.llm.test_refusal_kept_only_when_stable import via_proxy  # noqa: F401 - a fixture

runner = CliRunner()


def test_the_summary_counts_refusals_taken_from_the_cache(tmp_path, isolated_cache,
                                                         via_proxy):  # noqa: F811
    write_pairs(tmp_path / "pairs.jsonl", 6)
    with FakeLLMServer(rule=_rule) as srv:
        via_proxy(srv)  # kept only from a hosted API (review7 finding 6)
        spec = "openai:m?base_url=http://api.openai.com/v1&api_key=k"
        args = ["evaluate", "--judge", spec, "--data", f"jsonl:{tmp_path / 'pairs.jsonl'}",
                "--max-failed", "0.5", "--json"]
        first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
        again = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert first.exit_code == 0 and again.exit_code == 0, first.output + again.output
    calls = [json.loads(r.stdout[r.stdout.index("{"):])["calls"] for r in (first, again)]
    assert calls[0]["refused_cached"] == 0 and calls[0]["failed"] == 2
    assert (calls[1]["refused_cached"], calls[1]["failed"], calls[1]["made"]) == (2, 2, 0)
