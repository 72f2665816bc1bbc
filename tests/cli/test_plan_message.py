"""The plan message says a plan pays for every request even when the judge's answers cannot
be read and suggests a pilot first; a plan path in a directory that does not exist says the
directory was created (it was created silently)."""

from __future__ import annotations

from fakeserver import FakeLLMServer

from tests.cli.test_cli import write_items
from tests.cli.test_plan_ingest import invoke


def test_the_plan_message_suggests_a_pilot_and_names_a_created_directory(
        tmp_path, monkeypatch, no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 3)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan = tmp_path / "new" / "deeper" / "plan.jsonl"
    with FakeLLMServer() as srv:
        res = invoke("--plan-only", plan, "evaluate", "--judge",
                     f"openai:m?base_url={srv.openai_url}", "--data", f"jsonl:{data}",
                     "--limit", "3", "--out", tmp_path / "o")
        assert srv.count() == 0
    text = " ".join(res.output.split())
    assert plan.is_file()
    assert f"created the directory {tmp_path / 'new'} for the plan (it did not exist)" in text
    assert "plan a small pilot (--n 5 or --limit 10), execute and ingest it" in text
