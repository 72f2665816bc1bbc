"""An audit's calls split (`cached` and of those `shared`) is the same fresh and re-run.

Probes run at once and ask some of one another's verdicts (a perturbed pair two probes
judge). Such an ask was counted shared only when it reached the client (the first ask still
in flight, or answered and cached); one that found the verdict in the audit's memo was not
counted at all, so the count followed timing: an audit read shared 12 fresh and 16 on its
re-run from the cache, 8 to 16 over fresh runs. Now every probe's ask of a verdict another
probe asked counts shared, however timed; the calls made (the cost) do not change. A real
OpenAI-shaped server on loopback with a latency, then a re-run of the same cache."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _calls(tmp_path, spec: str, tag: str) -> dict:
    out = tmp_path / tag
    res = runner.invoke(app, ["audit", "--judge", spec, "--data",
                              f"jsonl:{tmp_path / 'pairs.jsonl'}", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return json.loads((out / "results.json").read_text())["calls"]


def _slow_verbose(rec, attempt: int) -> float:
    """The verbosity probe's lengthened pairs answer late, so the other probes have asked
    and memoised the repeat verdicts every shift probe asks before verbosity asks them."""
    return 0.5 if "worth" in rec.prompt_text else 0.0


def test_fresh_and_rerun_report_the_same_shared_count(tmp_path):
    write_pairs(tmp_path / "pairs.jsonl", 4)
    with FakeLLMServer(delay_rule=_slow_verbose) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        fresh = _calls(tmp_path, spec, "fresh")
        sent = srv.count()
        again = _calls(tmp_path, spec, "again")
        assert srv.count() == sent  # the re-run sent nothing
    assert fresh["made"] == sent and fresh["cached"] == fresh["shared"] > 0
    assert again["made"] == 0
    assert again["shared"] == fresh["shared"]
    assert again["cached"] - again["shared"] == fresh["made"]  # from cache: the first run's
