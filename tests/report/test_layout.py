"""The reports' CSS: a probe nav that wraps, tables whose name column stays in view and whose
long headers wrap, and print CSS that lets every column reach paper. How a browser lays these
out is measured in test_layout_browser.py."""

from __future__ import annotations

import re

from judgeaudit.report.html import render_report
from tests.report.test_hubj_report import mitigate_doc


def _css(html: str) -> str:
    return re.search(r"<style>(.*?)</style>", html, flags=re.S).group(1)


def _media_block(css: str, query: str) -> str:
    """The bodies of every @media block for `query` (braces balanced), joined."""
    bodies = []
    for m in re.finditer(re.escape("@media " + query), css):
        i, depth = css.index("{", m.start()), 0
        for j in range(i, len(css)):
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            if depth == 0:
                bodies.append(css[i + 1:j])
                break
    assert bodies, f"no @media {query} block"
    return "\n".join(bodies)


def test_print_css_lets_every_column_reach_paper():
    """Paper cannot scroll: a table in a scroll box printed only what fit (mitigate lost LC,
    theta, phi, psi and n). Print CSS turns the clip off and lets cells wrap."""
    css = _css(render_report(mitigate_doc()))
    pr = _media_block(css, "print")
    rule = re.search(r"\.scroll, figure \{([^}]*)\}", pr)
    assert rule and "overflow: visible !important" in rule.group(1), pr
    assert re.search(r"td\.num[^{]*\{[^}]*white-space: normal !important", pr), pr
    assert "nowrap" not in pr and "overflow: auto" not in pr and "hidden" not in pr


def test_probe_nav_and_table_names_have_room_to_wrap_and_stay_in_view():
    css = _css(render_report(mitigate_doc()))
    nav = re.search(r"nav\.toc \{([^}]*)\}", css).group(1)
    assert "flex-wrap: wrap" in nav, nav  # items wrap even with no space between the <a>s
    assert not re.search(r"nav\.toc a \{[^}]*nowrap", css)
    first = re.search(r"\.scroll > table > \* > tr > :first-child \{([^}]*)\}", css).group(1)
    assert "position: sticky" in first, first
    name = re.search(r"> :first-child:not\(\.num\) \{([^}]*)\}", css).group(1)
    assert "min-width: 11em" in name, name  # a name column, not a rank number
    phone = _media_block(css, "(max-width: 800px)")
    assert re.search(r"#summary-table > \* > tr > :last-child \{[^}]*position: sticky", phone)
    assert re.search(r"^th \{[^}]*\}", css, flags=re.M) and not re.search(
        r"^th \{[^}]*nowrap", css, flags=re.M)  # long headers wrap at their spaces


def test_printed_cells_keep_their_small_text_small_and_their_badges_whole():
    """.small is sized in rem, so on paper an interval printed larger than its 7.5 pt value;
    a badge allowed to break anywhere printed 'underpow / ered'."""
    pr = _media_block(_css(render_report(mitigate_doc())), "print")
    assert re.search(r"table \.small \{[^}]*font-size: [0-9.]+em", pr), pr
    assert not re.search(r"\.badge[^{]*\{[^}]*overflow-wrap: anywhere", pr), pr
