"""Right-to-left text in report.html: every element showing judged text, an item id or a
prompt carries dir="auto", so an Arabic sentence is right-aligned with its full stop on its
left, and an id in a list is isolated from the text around it (the reports had no dir
anywhere: Arabic was left-aligned and its full stop landed on the wrong side). Escaping is
unchanged: a <script> in the judged text is shown as text.

The rendered reports come from real runs (audit, evaluate, rank) against an OpenAI-shaped
server on loopback answering some calls in Arabic with no verdict, and from a quantify
results document; the template check covers the elements those runs do not reach (the
panel's disagreements, scoring-bias's unreadable answers)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer, default_answer
from typer.testing import CliRunner

from judgeaudit.report import render_report
from tests.report.test_hubj_report import quantify_doc

TEMPLATES = Path(__file__).parents[2] / "src" / "judgeaudit" / "report" / "templates"
EVIL = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
ARABIC = re.compile(r"[\u0600-\u06ff]")
VOID = {"area", "base", "br", "col", "hr", "img", "input", "link", "meta", "source", "wbr"}
# a template expression showing judged text, an item id or a prompt
SHOWN = re.compile(r"\{\{-?\s*(?:\w+\.(?:raw|prompt|response_1|response_2|item_id|first_id|"
                   r"second_id)\b|x\.id\b|segments\()")
NO_VERDICT = "لا أستطيع أن أقرر. " + EVIL  # "I cannot decide."


class _Arabic(HTMLParser):
    """Each text node holding Arabic letters outside an <svg> (its labels are drawn by
    report.svg) and outside a message (a warning or note: an English sentence quoting an id
    takes the sentence's direction), with whether an element around it has dir="auto"."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, dict[str, str | None]]] = []
        self.nodes: list[tuple[bool, list[str], str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.stack.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        tags = [t for t, _ in self.stack]
        message = any(c in (a.get("class") or "").split() for _, a in self.stack
                      for c in ("warn", "notes"))
        if ARABIC.search(data) and "svg" not in tags and not message:
            self.nodes.append((any(a.get("dir") == "auto" for _, a in self.stack), tags[-3:],
                               data.strip()[:60]))


def _arabic_nodes(html: str) -> list[tuple[bool, list[str], str]]:
    p = _Arabic()
    p.feed(html)
    return p.nodes


def _answer(text: str) -> str:
    """No verdict, in Arabic with a <script>, for items 1 and 2 and for the rank pool's
    comparisons of item 0; else A or B by a hash of the prompt."""
    m = re.search(r"سؤال رقم (\d+)", text)
    if (m and int(m.group(1)) in (1, 2)) or "الأولى" in text:
        return NO_VERDICT
    return default_answer(text)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, str]:
    from judgeaudit.cli.main import app

    tmp = tmp_path_factory.mktemp("rtl")
    with open(tmp / "pairs.jsonl", "w", encoding="utf-8") as f:
        for i in range(12):
            f.write(json.dumps({
                "id": f"عنصر-{i}", "prompt": f"سؤال رقم {i}: ما هي عاصمة مصر؟",
                "response_1": "عاصمة مصر هي القاهرة." + (EVIL if i == 0 else ""),
                "response_2": "عاصمة مصر هي الإسكندرية.", "label": 1},
                ensure_ascii=False) + "\n")
    with open(tmp / "pool.jsonl", "w", encoding="utf-8") as f:
        for i in range(6):
            f.write(json.dumps({
                "id": f"إجابة-{i}", "prompt": "ما هي عاصمة مصر؟",
                "response": ("الأولى " if i == 0 else "") + "القاهرة " * (i + 1) + EVIL,
                "quality": float(i)}, ensure_ascii=False) + "\n")
    out = {}
    with pytest.MonkeyPatch.context() as mp, FakeLLMServer(answer=_answer) as srv:
        for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            mp.delenv(var, raising=False)
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        for cmd, extra in (
                ("audit", ["--data", f"jsonl:{tmp / 'pairs.jsonl'}", "--probes",
                           "position,authority"]),
                ("evaluate", ["--data", f"jsonl:{tmp / 'pairs.jsonl'}"]),
                ("rank", ["--items", str(tmp / "pool.jsonl"), "--k", "2", "--budget", "12"])):
            res = CliRunner().invoke(app, [cmd, "--judge", spec, *extra, "--max-failed", "1",
                                           "--concurrency", "1", "--out", str(tmp / cmd),
                                           "--cache", str(tmp / "cache.sqlite")])
            assert res.exit_code == 0, res.output
            out[cmd] = render_report(json.loads((tmp / cmd / "results.json").read_text()))
    doc = quantify_doc()
    doc["rewrite_examples"][0].update(item_id="عنصر-0", original="عاصمة مصر هي القاهرة.",
                                      rewritten="عاصمة مصر هي القاهرة، بالتأكيد. " + EVIL)
    out["quantify"] = render_report(doc)
    return out


@pytest.mark.parametrize(("kind", "shown"), [
    # what each report shows of the Arabic: ids, prompts, responses, unreadable answers
    ("audit", {"عنصر-1", "سؤال رقم", "عاصمة مصر هي القاهرة", NO_VERDICT}),
    ("evaluate", {"عنصر-1", NO_VERDICT}),
    ("rank", {"إجابة-0", NO_VERDICT}),
    ("quantify", {"عنصر-0", "بالتأكيد"}),
])
def test_arabic_judged_text_ids_and_prompts_carry_dir_auto(reports, kind, shown):
    html = reports[kind]
    nodes = _arabic_nodes(html)
    missing = [(tags, text) for ok, tags, text in nodes if not ok]
    assert not missing, f"{kind}: Arabic shown without dir=\"auto\": {missing[:5]}"
    for text in shown:  # the check saw each kind of text, so it is not vacuous
        assert any(text in t or (text == NO_VERDICT and t.startswith("لا أستطيع"))
                   for _, _, t in nodes), (kind, text)
    assert EVIL not in html and "<script>alert" not in html
    assert ESCAPED in html
    # a block of judged text takes each paragraph's direction from its own letters
    assert 'pre[dir="auto"], div[dir="auto"] { unicode-bidi: plaintext; }' in html


def test_every_template_expression_showing_judged_text_sits_in_a_dir_auto_element():
    """Also the elements no run above reaches: the panel's disagreements (prompt and both
    responses), scoring-bias's unreadable answers, hubj's failed answers."""
    checked, bad = 0, []
    for path in sorted(TEMPLATES.glob("*.html")):
        text = path.read_text()
        for m in SHOWN.finditer(text):
            before = text[:m.start()]
            tag = before[before.rfind("<"):]
            if ">" not in tag:  # inside a tag: an attribute (a tooltip's title=), no text
                continue
            checked += 1
            if tag.startswith("</") or 'dir="auto"' not in tag:
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"{path.name}:{line}: {tag[:60]!r} before {m.group(0)!r}")
    assert not bad, "\n".join(bad)
    assert checked >= 24, checked
