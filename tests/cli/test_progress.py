"""Progress when stderr is not a terminal: plain lines at an interval and at the end."""

from __future__ import annotations

from judgeaudit.cli import progress


def test_plain_bar_prints_count_rate_and_eta_at_its_interval(capsys) -> None:
    now = [0.0]
    bar = progress.PlainBar("scoring", 10, every=30, clock=lambda: now[0])
    bar.advance(2)  # 0 s: the first line (the total is known), then the interval
    now[0] = 29.0
    bar.advance(1)  # within the interval: nothing
    now[0] = 31.0
    bar.advance(2)  # 31 s: a line
    now[0] = 40.0
    bar.add_total(5)
    bar.advance()  # within the interval: nothing
    bar.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3
    assert lines[0] == "scoring: 2/10 (-/s, 0 s elapsed, eta -)"
    assert lines[1].startswith("scoring: 5/10 (0.16/s, 31 s elapsed, eta 31 s)")
    # the total grew while work was under way: it may grow again, the ETA is a lower bound
    assert lines[2].startswith("scoring: 6/15 (0.15/s, 40 s elapsed, eta at least 60 s)")


def test_speed_and_eta_count_the_calls_sent_not_the_answers_from_the_cache(capsys) -> None:
    """A re-run whose first 240 answers came from the cache read '240/360 15394.9/s eta
    0:00:01' with minutes of the local judge's calls left: the pace is the calls sent."""
    now = [0.0]
    bar = progress.PlainBar("audit", 360, every=1000, clock=lambda: now[0])
    bar.note_made(0)  # the session's count when the bar began
    bar.advance(240)  # all from the cache, at once
    assert bar.line().endswith("eta -)")  # no call sent yet: no pace to go by
    bar.note_made(1)  # the first call sent...
    now[0] = 10.0
    bar.note_made(5)
    bar.advance(5)  # ...and 4 more in 10 s: 0.4 calls/s
    line = bar.line()
    assert "(0.40/s," in line and "eta 288 s)" in line  # 115 left at 0.4/s
    # with no session count, the bar's own pace as before
    plain = progress.PlainBar("x", 10, every=1000, clock=lambda: now[0])
    plain.advance(5)
    now[0] = 20.0
    assert "eta 10 s" in plain.line()


def test_progress_bar_falls_back_to_plain_lines_off_a_terminal(capsys) -> None:
    assert not progress.console.is_terminal  # pytest captures stderr
    with progress.progress_bar("judging", 3) as adv:
        for _ in range(3):
            adv()
    assert "judging: 3/3" in capsys.readouterr().err


def test_a_failed_run_ends_with_its_error_not_with_a_progress_line(tmp_path, monkeypatch):
    """The bar's last line was printed after the error (the bar closed on the way out), so
    the last line of a failed run's log was "auditing: 0/10 ...", not why it failed. Each
    bar now finishes before an error, an interruption or a plan summary is printed."""
    import sys
    from pathlib import Path

    from typer.testing import CliRunner

    sys.path.insert(0, str(Path(__file__).parents[1] / "llm"))
    from fakeserver import FakeLLMServer

    from judgeaudit.cli.main import app

    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer(api_keys={"right"}) as srv:  # the key given is refused: fatal
        spec = f"openai:m?base_url={srv.openai_url}&api_key=wrong"
        res = CliRunner().invoke(app, ["audit", "--judge", spec, "--n", "5", "--out",
                                       str(tmp_path / "o")])
        planned = CliRunner().invoke(app, ["--plan-only", str(tmp_path / "p.jsonl"), "audit",
                                           "--judge", spec, "--n", "5", "--out",
                                           str(tmp_path / "p")])
    assert res.exit_code == 3
    lines = res.output.strip().splitlines()
    bar = [i for i, ln in enumerate(lines) if ln.startswith("auditing: ")]
    error = [i for i, ln in enumerate(lines) if ln.startswith("error: ")]
    assert bar and error and max(bar) < min(error), res.output
    assert planned.exit_code == 0
    lines = planned.output.strip().splitlines()
    # the bar's first line (as soon as its total is known) and its last, then the plan
    at = next(i for i, ln in enumerate(lines) if ln.startswith("planned "))
    assert at >= 1 and all(ln.startswith("auditing: ") for ln in lines[:at]), planned.output
    assert not any(ln.startswith("auditing: ") for ln in lines[at:]), planned.output
