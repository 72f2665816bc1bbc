"""Progress when stderr is not a terminal: plain lines at an interval and at the end."""

from __future__ import annotations

from judgeaudit.cli import progress


def test_plain_bar_prints_count_rate_and_eta_at_its_interval(capsys) -> None:
    now = [0.0]
    bar = progress.PlainBar("scoring", 10, every=30, clock=lambda: now[0])
    bar.advance(2)  # 0 s: nothing yet
    now[0] = 31.0
    bar.advance(3)  # 31 s: a line
    now[0] = 40.0
    bar.add_total(5)
    bar.advance()  # within the interval: nothing
    bar.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("scoring: 5/10 (0.16/s, 31 s elapsed, eta 31 s)")
    assert lines[1].startswith("scoring: 6/15 (0.15/s, 40 s elapsed, eta 60 s)")


def test_progress_bar_falls_back_to_plain_lines_off_a_terminal(capsys) -> None:
    assert not progress.console.is_terminal  # pytest captures stderr
    with progress.progress_bar("judging", 3) as adv:
        for _ in range(3):
            adv()
    assert "judging: 3/3" in capsys.readouterr().err
