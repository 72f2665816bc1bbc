"""scoring-bias against a live loopback judge (tests/llm/fakeserver.py) answering in real
judges' formats: MT-Bench's "Rating: [[k]]" is read (it was 20/20 unreadable, exit 3) and a
score off the scale is named as such, not "unparseable"."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from typer.testing import CliRunner

from tests.scoring.test_scoring_field_fixes import _app


def test_a_live_judge_answering_mt_benchs_format_is_read(fake_server, tmp_path: Path) -> None:
    """A loopback judge answering "Rating: [[k]]" (k from the prompt's hash): every score is
    read (it was 20/20 unreadable, exit 3)."""
    def judge(prompt: str) -> str:
        return f"Rating: [[{int(hashlib.sha256(prompt.encode()).hexdigest(), 16) % 5 + 1}]]"

    srv = fake_server(answer=judge, logprobs=False)
    out = tmp_path / "o"
    r = CliRunner().invoke(_app(), [
        "scoring-bias", "--judge", f"openai:m?base_url={srv.openai_url}&api_key=k",
        "--data", "builtin:graded", "--limit", "10", "--repeats", "1",
        "--perturbations", "order_desc", "--out", str(out), "--no-cache"],
        catch_exceptions=False)
    assert r.exit_code == 0, r.output
    res = json.loads((out / "results.json").read_text())
    assert all(e["n_invalid"] == 0 and e["n"] == 10 for e in res["perturbations"].values())


def test_a_live_judge_off_the_scale_is_named_as_such(fake_server, tmp_path: Path) -> None:
    srv = fake_server(answer="Score: 8.5", logprobs=False)
    out = tmp_path / "o"
    r = CliRunner().invoke(_app(), [
        "scoring-bias", "--judge", f"openai:m?base_url={srv.openai_url}&api_key=k",
        "--data", "builtin:graded", "--limit", "10", "--repeats", "1",
        "--perturbations", "order_desc", "--out", str(out), "--no-cache"],
        catch_exceptions=False)
    assert r.exit_code == 3
    text = " ".join(r.output.split())
    assert "score 8.5 is not on the scale 1..5" in text and "unparseable answer" not in text
