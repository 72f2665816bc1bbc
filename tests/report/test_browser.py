"""report.html in a real browser (headless Chromium, Debian package `chromium`): it renders,
and judged text carrying <script> / onerror= payloads is shown as text and runs nothing.

--dump-dom prints the DOM after the page's scripts and event handlers have run, so a payload
that executed would show up as a changed <title>. A control page with the same payload left
raw proves that this check can see an execution."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from judgeaudit.report import write_report

CHROMIUM = Path("/usr/bin/chromium")
FIXTURES = Path(__file__).parent / "fixtures"
PAYLOAD = "<img src=x onerror=\"document.title='pwned'\">"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless browser test needs /usr/bin/chromium "
           "(Debian: apt-get update && apt-get install -y chromium)",
)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One headless Chromium run: no network services, a throwaway profile, 60 s at most."""
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={profile}", *args]
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env,
                          check=False)


def dump_dom(tmp_path: Path, page: Path) -> str:
    r = chromium(tmp_path, "--dump-dom", page.resolve().as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    assert "<html" in r.stdout, r.stderr[-2000:]
    return r.stdout


def document_title(dom: str) -> str:
    m = re.search(r"<head\b.*?<title>(.*?)</title>", dom, flags=re.S)
    assert m, "no <title> in <head>"
    return m.group(1)


def report(tmp_path: Path, fixture: str = "audit_results.json") -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    shutil.copy(FIXTURES / fixture, run / "results.json")
    return write_report(run)


def test_control_a_raw_payload_does_run_and_is_seen(tmp_path):
    """Without escaping, the same payload changes the title: the check below can fail."""
    page = tmp_path / "control.html"
    page.write_text(f"<!doctype html><html><head><title>before</title></head>"
                    f"<body><p>{PAYLOAD}</p></body></html>", encoding="utf-8")
    assert document_title(dump_dom(tmp_path, page)) == "pwned"


@pytest.mark.parametrize("fixture,title", [
    ("audit_results.json", "judgeaudit audit \u2013 local"),
    ("evaluate_results.json", "judgeaudit evaluate \u2013 local"),
])
def test_report_renders_and_payloads_run_nothing(tmp_path, fixture, title):
    dom = dump_dom(tmp_path, report(tmp_path, fixture))
    assert 'id="summary-table"' in dom
    assert "</table>" in dom and "<svg" in dom
    assert document_title(dom) == title  # not 'pwned'
    assert "pwned" not in re.findall(r"<title>(.*?)</title>", dom)
    # The payload is in the DOM as text, not as elements.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=" in dom
    assert not re.search(r"<(script|img)\b", dom, flags=re.I)


def test_screenshot_is_a_non_empty_png_of_the_requested_size(tmp_path):
    shot = tmp_path / "shot.png"
    r = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000",
                 "--hide-scrollbars", report(tmp_path).resolve().as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # IHDR
    assert (width, height) == (1280, 2000)
    assert len(data) > 50_000  # a blank page of this size is ~12 kB; the report is ~200 kB
