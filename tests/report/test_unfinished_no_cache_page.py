"""The report page of a run that did not finish says what a re-run costs: with a cache,
finished calls come from it; without one (--no-cache), the answers were not kept and a
re-run pays for every call again (the page promised the cache either way)."""

from __future__ import annotations

import re

from judgeaudit.commands import Run
from judgeaudit.report.html import render_report
from judgeaudit.session import Session


def _page(sess: Session) -> str:
    async def body(_sess: Session) -> dict:
        return {}

    run = Run(command="evaluate", judge="sim", data="builtin:facts", body=body,
              n_planned=lambda: 10, min_valid=1, max_failed=0.2)
    html = render_report(run.unfinished_document(sess))
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_an_unfinished_run_without_a_cache_promises_no_resume():
    page = _page(Session(cache=False))
    assert "its answers were not kept: running it again pays for every call again" in page
    assert "finished calls come from the cache" not in page


def test_an_unfinished_run_with_a_cache_says_the_cache_holds_its_calls(tmp_path):
    page = _page(Session(cache=tmp_path / "c.sqlite"))
    assert "Run the same command again: finished calls come from the cache" in page
