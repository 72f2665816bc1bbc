"""A fixed-n audit in batch mode sends each pipeline stage as one batch: every request of the
default battery (baseline, perturbed, repeats, equal-substance twins) depends on the items
only, so all go in the first batch, and lines that failed transiently ride in the next one.
Before, each stage awaited the one before it, and the tester's loopback Batch API saw batches
of 80, 400, 80 and 160 requests, one after another (8 batches with 500s injected)."""

from __future__ import annotations

import json

import pytest
from fakebatch import FakeBatchServer
from typer.testing import CliRunner

pytestmark = pytest.mark.usefixtures("no_key_env")


def _audit(tmp_path, monkeypatch, srv: FakeBatchServer, name: str) -> dict:
    from judgeaudit.cli.main import app
    from tests.cli.test_cli import write_items

    data = tmp_path / "items.jsonl"
    write_items(data, 12)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / f"{name}.sqlite"))
    spec = (f"openai:fake?base_url={srv.openai_url}&api_key=k&batch=on&poll=0.02"
            "&batch_wait=0.1")
    res = CliRunner().invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                   "--n", "12", "--out", str(tmp_path / name)])
    assert res.exit_code == 0, res.output
    return json.loads((tmp_path / name / "results.json").read_text())


def test_a_fixed_n_audit_is_one_batch(tmp_path, monkeypatch):
    with FakeBatchServer() as srv:
        doc = _audit(tmp_path, monkeypatch, srv, "one")
        assert srv.count() == 0
        assert srv.batch_count() == 1, f"{srv.batch_count()} batches (one per stage?)"
        assert sum(srv.submitted.values()) == doc["calls"]["made"] > 100


def test_failed_lines_ride_in_one_more_batch(tmp_path, monkeypatch):
    failed: set[str] = set()

    def rule(cid: str, body: dict, attempt: int) -> str | None:
        if attempt == 0 and len(failed) < 9 and int(cid[:6], 16) % 7 == 0:
            failed.add(cid)
            return "500"
        return None

    with FakeBatchServer(line_rule=rule) as srv:
        doc = _audit(tmp_path, monkeypatch, srv, "retry")
        assert failed and doc["calls"]["failed"] == 0
        assert doc["calls"]["retries"] == len(failed)
        assert srv.batch_count() == 2, f"{srv.batch_count()} batches"
