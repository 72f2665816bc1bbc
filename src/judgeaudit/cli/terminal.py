"""Untrusted text on the terminal: shown as written, never acted on.

Text from data files, judges' answers, servers' error bodies and results files reaches the
terminal through rich, logging, `typer.echo` and the --json line. Two things went wrong:
rich read it as markup (a Llama template's `[/INST]` as a category value crashed a finished
evaluate with MarkupError, exit 3; `[link=http://evil]x[/link]` printed as a hidden
hyperlink) and raw control characters reached the terminal (a server's 500 body cleared the
screen and planted OSC 8 links on every -v "retrying" line). Here, in one place:

- `shown(text)`: acting characters written as escapes, as `repr` does (`\\x1b`, `\\r`,
  `\\u202e`); newline and tab stay.
- `SafeConsole`: the console every command prints with. Markup is off unless a call asks
  for it (`markup=True`, whose data must then be `markup_escape`d); every string and every
  segment of text is passed through `shown` before it is written.
- `SafeLogFilter`: the same for every log record (message, args, traceback).
- `json_line(obj)`: --json's object, valid JSON with no acting character left raw.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.markup import escape as _markup_escape
from rich.segment import Segment
from rich.text import Text

from judgeaudit.textfile import visible

# What `visible` leaves raw but a terminal acts on: carriage return (it rewinds the line, so
# what follows overwrites what came before).
_CR = re.compile("\r")


def shown(text: Any) -> str:
    """`text` (str() of it) with every character a terminal would act on written as an
    escape: C0/C1 controls but newline and tab, DEL, carriage return, bidi overrides and
    isolates, lone surrogates."""
    return _CR.sub(r"\\r", visible(str(text)))


def markup_escape(text: Any) -> str:
    """`text` for a string printed with `markup=True`: acting characters shown, and rich
    markup escaped so it prints as written."""
    return _markup_escape(shown(text))


def styled(label: str, style: str, text: Any = "") -> Text:
    """'LABEL text' with LABEL in `style` ("[bold yellow]warning:[/] ..." without markup):
    the text prints as written, brackets and all."""
    return Text.assemble((label, style), " " + shown(text) if text != "" else "")


def _shown_segments(segments: Iterable[Segment]) -> Iterable[Segment]:
    for seg in segments:
        if seg.control or not seg.text or seg.text.isprintable():
            yield seg
        else:
            yield Segment(shown(seg.text), seg.style, seg.control)


class SafeConsole(Console):
    """A rich Console for untrusted text: markup is off by default (data is never read as
    markup unless a call passes `markup=True`), and no acting character of the text it
    renders reaches the terminal (`shown`). Strings are escaped before they are laid out,
    so tables measure what is written; any other renderable's text is escaped as it is
    rendered (its control segments, rich's own cursor moves, are left alone).

    Off a terminal (a log file, a pipe, CI) a line of text is printed whole: rich wrapped
    it at the console's width, mid-value ("...; 8.2 " then "s" on the next line), and a
    `grep calls:` got a cut line. Tables and other renderables keep the console's width."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(**kwargs)

    def print(self, *objects: Any, markup: bool | None = None,
              soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if soft_wrap is None and not self.is_terminal and all(
                isinstance(o, str | Text) for o in objects):
            soft_wrap = True
        super().print(*objects, markup=markup, soft_wrap=soft_wrap, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        # markup tags hold no acting character, so escaping first changes none of them
        return super().render_str(shown(text), **kwargs)

    def render(self, renderable: RenderableType,
               options: ConsoleOptions | None = None) -> Iterable[Segment]:
        return _shown_segments(super().render(renderable, options))


class SafeLogFilter(logging.Filter):
    """Every log record's message, formatted with its args, and its traceback with acting
    characters shown (`shown`): a server's error body is quoted in the client's "retrying"
    and "stopped answering" lines. The record keeps the escaped message and no args, as the
    redacting filter leaves it (`llm.redact.RedactingFilter`), so no handler formats the
    raw text back in."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler's error path
            return True
        record.msg, record.args = shown(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = shown(record.exc_text)
        if record.stack_info:
            record.stack_info = shown(record.stack_info)
        return True


_LOG_FILTER = SafeLogFilter()


def install_log_escaping() -> None:
    """Put `SafeLogFilter` on the root logger's handlers, after any filter already there
    (the redaction's: it reads the raw text). Idempotent."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, SafeLogFilter) for f in handler.filters):
            handler.addFilter(_LOG_FILTER)


# What json.dumps(ensure_ascii=False) writes raw but a terminal acts on or cannot encode:
# DEL, C1 controls, bidi overrides and isolates, lone surrogates. C0 controls it escapes.
_JSON_ACTING = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def json_line(obj: Any) -> str:
    """`obj` as one line of JSON (non-ASCII text as written) with every acting character
    escaped as \\uXXXX: json.loads reads back the same object."""
    text = json.dumps(obj, ensure_ascii=False)
    return _JSON_ACTING.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


__all__ = ["SafeConsole", "SafeLogFilter", "install_log_escaping", "json_line",
           "markup_escape", "shown", "styled"]
