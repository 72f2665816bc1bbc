"""A fixed-n audit counts its calls the same in batch mode and live. Live, probes asked at
once (after the baseline) ask some verdicts of one another while in flight: the client shares
them and counts them shared. In batch mode (every stage at once) the audit shares them before
the client (`AuditContext.judge`), which then never saw them: builtin:facts --n 30 read calls
asked 540, shared 0 in batch mode and 780, shared 240 live, for the same 540 requests made
and the same results. The audit now counts them on the client as it would have."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakebatch import FakeBatchServer
from typer.testing import CliRunner

pytestmark = pytest.mark.usefixtures("no_key_env")

COUNTS = ("made", "cached", "shared", "failed", "planned", "answers_read")


def _audit(tmp_path: Path, monkeypatch: Any, srv: FakeBatchServer, name: str,
           batch: bool) -> dict[str, Any]:
    from judgeaudit.cli.main import app

    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / f"{name}.sqlite"))
    spec = f"openai:fake?base_url={srv.openai_url}&api_key=k" + (
        "&batch=on&poll=0.02&batch_wait=0.1" if batch else "")
    res = CliRunner().invoke(app, ["audit", "--judge", spec, "--data", "builtin:facts",
                                   "--n", "30", "--out", str(tmp_path / name)])
    assert res.exit_code == 0, res.output
    return json.loads((tmp_path / name / "results.json").read_text())


def test_batch_and_live_audits_count_the_same_calls(tmp_path, monkeypatch):
    with FakeBatchServer() as srv:
        live = _audit(tmp_path, monkeypatch, srv, "live", batch=False)
        sent_live = srv.count()
        batch = _audit(tmp_path, monkeypatch, srv, "batch", batch=True)
        assert srv.batch_count() == 1
        assert sum(srv.submitted.values()) == sent_live == live["calls"]["made"]
    assert {k: live["calls"][k] for k in COUNTS} == {k: batch["calls"][k] for k in COUNTS}
    # probes' asks of one another's verdicts in flight, shared (answered once)
    assert live["calls"]["shared"] == live["calls"]["cached"] > 0
    assert live["calls"]["answers_read"] == live["calls"]["made"]
    assert {p: d["effect"]["value"] for p, d in live["probes"].items()} == {
        p: d["effect"]["value"] for p, d in batch["probes"].items()}
