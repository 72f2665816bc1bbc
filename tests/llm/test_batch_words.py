"""Batch mode's words: an error line with no code says no "(None)" ("failed in batch (None):
CUDA out of memory"); a batch of one request is "(1 request)", not "(1 requests)"."""

from __future__ import annotations

import logging

import pytest
from fakebatch import FakeBatchServer
from fakeserver import judge_request

from judgeaudit.llm import Cache, Client, make_provider
from judgeaudit.llm.batch_openai import read_output_line


def test_an_error_line_without_a_code_says_no_none():
    line = read_output_line({"custom_id": "k", "response": None,
                             "error": {"code": None, "message": "CUDA out of memory"}})
    assert line.message == "failed in batch: CUDA out of memory"
    line = read_output_line({"custom_id": "k", "response": None,
                             "error": {"code": "oom", "message": "CUDA out of memory"}})
    assert line.message == "failed in batch (oom): CUDA out of memory"


@pytest.mark.usefixtures("no_key_env")
async def test_a_batch_of_one_request_is_said_in_the_singular(tmp_path, caplog):
    with FakeBatchServer() as srv:
        p = make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k",
                                             "batch": "on", "poll": "0.02",
                                             "batch_wait": "0.05"})
        client = Client(p, Cache(tmp_path / "c.sqlite"))
        with caplog.at_level(logging.WARNING, logger="judgeaudit.llm"):
            await client.map([judge_request(1)])
        await client.aclose()
    said = [r.getMessage() for r in caplog.records if "submitted batch" in r.getMessage()]
    assert len(said) == 1 and "(1 request);" in said[0]
