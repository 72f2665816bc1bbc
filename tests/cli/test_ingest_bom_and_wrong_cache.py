"""`judgeaudit ingest` edge cases, with a real loopback server as the executor: an output file
saved with a UTF-8 byte order mark keeps its line 1 (it was 'unreadable', and its request
planned and paid for again); a file given with the wrong --cache exits 2 (input error,
'wrong --cache?') whenever none of its lines is to a request planned in that cache, also when
one of its lines is cut off, malformed or an error line (those made it exit 3, as a run that
failed); an error line to a request planned in the cache still fails the run (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.llm import Cache
from tests.cli.test_cli import write_items
from tests.cli.test_plan_ingest import execute, invoke

pytestmark = pytest.mark.usefixtures("no_keys")


@pytest.fixture
def planned(tmp_path: Path, monkeypatch: Any) -> tuple[Path, Path, Path]:
    """(plan, output executed by the loopback server, the cache it was planned with) of a
    3-item evaluate."""
    data = tmp_path / "items.jsonl"
    write_items(data, 3)
    cache_path = tmp_path / "c.sqlite"
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(cache_path))
    plan, out = tmp_path / "plan.jsonl", tmp_path / "out.jsonl"
    with FakeLLMServer() as srv:
        invoke("--plan-only", plan, "evaluate", "--judge", f"openai:m?base_url={srv.openai_url}",
               "--data", f"jsonl:{data}", "--limit", "3", "--out", tmp_path / "o")
        execute(plan, out, srv.url)
    return plan, out, cache_path


def _text(res: Any) -> str:
    return " ".join(res.output.split())


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path: Path, rows: list[dict[str, Any]], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return path


def test_a_byte_order_mark_keeps_line_1(planned, tmp_path):
    plan, out, cache_path = planned
    rows = _rows(out)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + out.read_bytes())
    text = _text(invoke("ingest", bom, "--plan", plan))
    assert f"ingested {len(rows)} answers of {len(rows)} lines" in text
    assert "unreadable" not in text and "no answer" not in text
    c = Cache(cache_path)
    assert c.get(rows[0]["custom_id"]) is not None
    c.close()


def _error_line(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "custom_id": row["custom_id"],
            "response": {"status_code": 400, "request_id": "x", "body": None},
            "error": {"code": "invalid_request_error", "message": "bad request"}}


@pytest.mark.parametrize("odd", ["cut_off", "malformed", "error_line"])
def test_a_wrong_cache_exits_2_whatever_else_the_file_holds(planned, tmp_path, odd):
    _, out, _ = planned
    rows = _rows(out)
    tail = ""
    if odd == "cut_off":
        tail = json.dumps(rows[-1])[:-30]  # the executor stopped mid-line
        rows = rows[:-1]
    elif odd == "malformed":
        rows[0]["response"]["body"] = {"foo": "bar"}
    else:
        rows[0] = _error_line(rows[0])
    path = _write(tmp_path / f"{odd}.jsonl", rows, tail)
    other = tmp_path / "other.sqlite"
    Cache(other).close()
    res = invoke("ingest", path, "--cache", other, ok=False)
    text = _text(res)
    assert res.exit_code == 2, text
    assert "is to a request planned with the cache" in text and "wrong --cache?" in text
    assert str(other) in text


def test_error_lines_to_planned_requests_still_fail_the_run(planned, tmp_path):
    _, out, _ = planned
    path = _write(tmp_path / "errors.jsonl", [_error_line(r) for r in _rows(out)])
    res = invoke("ingest", path, ok=False)
    assert res.exit_code == 3, _text(res)
    assert "wrong --cache?" not in _text(res)
